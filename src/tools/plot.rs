//! SVG scatter plots of fronts and archives (plotters), like the DBSEC paper's Figs. 1–3.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::error::{PbgError, Result};
use crate::io::AtomicFile;
use crate::objective::Objective;
use crate::search::Point;

/// The embedded font (DejaVu Sans, see assets/DejaVuSans-LICENSE.txt), registered once.
fn font() -> std::result::Result<(), String> {
    static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(
                "sans-serif",
                FontStyle::Normal,
                include_bytes!("../../assets/DejaVuSans.ttf"),
            )
            .map_err(|_| "the embedded font could not be loaded".to_string())
        })
        .clone()
}

fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else {
        lo.abs().max(1.0) * 0.05
    };
    (lo - pad)..(hi + pad)
}

/// Draws each series of points: x = the first objective, y = the last one. Written atomically.
pub fn front_svg(
    path: &Path,
    title: &str,
    objectives: &[Objective],
    series: &[(&str, &[Point])],
) -> Result<()> {
    let fail = |e: String| PbgError::Format {
        path: path.to_path_buf(),
        message: format!("while drawing: {e}"),
    };
    font().map_err(fail)?;
    let (xi, yi) = (0, objectives.len() - 1);
    let all = || series.iter().flat_map(|(_, ps)| ps.iter());
    let xr = range(all().map(|p| p.values[xi]));
    let yr = range(all().map(|p| p.values[yi]));
    let file = AtomicFile::new(path)?;
    {
        let root = SVGBackend::new(file.temp_path(), (800, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(xr, yr)
            .map_err(|e| fail(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc(objectives[xi].name())
            .y_desc(objectives[yi].name())
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        let styles = [BLUE.stroke_width(1), RED.filled(), GREEN.filled()];
        for (i, (name, points)) in series.iter().enumerate() {
            let style = styles[i % styles.len()];
            let size = if i == 0 { 5 } else { 3 };
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|p| Circle::new((p.values[xi], p.values[yi]), size, style)),
                )
                .map_err(|e| fail(e.to_string()))?
                .label(*name)
                .legend(move |(x, y)| Circle::new((x, y), size, style));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    file.commit()
}

/// Grouped bars: one group per label, one bar per series (missing values leave a gap). y in
/// [0, y_max]. Written atomically.
pub fn bars_svg(
    path: &Path,
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[(String, Vec<Option<f64>>)],
    y_max: f64,
) -> Result<()> {
    let fail = |e: String| PbgError::Format {
        path: path.to_path_buf(),
        message: format!("while drawing: {e}"),
    };
    font().map_err(fail)?;
    let file = AtomicFile::new(path)?;
    {
        let root = SVGBackend::new(file.temp_path(), (900, 550)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let n = groups.len().max(1) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..n, 0.0..y_max)
            .map_err(|e| fail(e.to_string()))?;
        let labels = groups.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len().max(1) * 2 + 1)
            .x_label_formatter(&move |x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 1e-6 {
                    labels.get(i).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_desc)
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        let palette = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
        let width = 0.8 / series.len().max(1) as f64;
        for (s, (name, values)) in series.iter().enumerate() {
            let color = palette[s % palette.len()];
            let x0 = 0.1 + s as f64 * width;
            chart
                .draw_series(values.iter().enumerate().filter_map(|(g, v)| {
                    v.map(|v| {
                        Rectangle::new(
                            [(g as f64 + x0, 0.0), (g as f64 + x0 + width * 0.9, v)],
                            color.filled(),
                        )
                    })
                }))
                .map_err(|e| fail(e.to_string()))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    file.commit()
}
