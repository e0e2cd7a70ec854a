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
                include_bytes!("../assets/DejaVuSans.ttf"),
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
