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

/// A number as people read it: 1.2k, 3.4M, 2.5e-3, integers as they are below 10,000.
pub fn readable(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if x.fract() == 0.0 && a < 1e4 {
        return format!("{x}");
    }
    if a >= 1e9 {
        format!("{:.1}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 0.01 {
        format!("{x:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{x:.1e}")
    }
}

/// An objective's axis title in words.
pub fn axis_title(o: &Objective) -> String {
    let words = match o.name() {
        "k" => "k (smallest class size)",
        "l" | "l_distinct" => "l (distinct sensitive values per class)",
        "l_entropy" => "entropy l-diversity",
        "l_probabilistic" => "probabilistic l-diversity",
        "glm" => "information loss (GLM)",
        "cm" => "classification metric (CM)",
        "suppressed" => "suppressed rows",
        "classes" => "equivalence classes",
        "t_equal" => "t-closeness (equal distance)",
        "t_ordered" => "t-closeness (ordered distance)",
        "t_hierarchical" => "t-closeness (hierarchical distance)",
        "beta" => "β-likeness",
        "delta_disclosure" => "δ-disclosure",
        "risk_prosecutor" => "re-identification risk (prosecutor)",
        "risk_average" => "average re-identification risk",
        "uniques" => "unique records",
        "discernibility" => "discernibility",
        "precision" => "precision loss",
        "s_k" => "S_k (Σ class size², k property)",
        "s_l" => "S_l (l property sum)",
        other => other,
    };
    words.to_string()
}

/// Whether values spanning this range read better on a log axis (all positive, over two decades).
fn wants_log(lo: f64, hi: f64) -> bool {
    lo > 0.0 && hi / lo >= 100.0
}

/// Draws each series of points: for two objectives one panel (x the first, y the second), for
/// three or more a scatter matrix of the pairs of the first three. Axes spanning over two decades
/// of positive values are logarithmic; ticks are readable (1k, 2.5M, 3e-3); axis titles are in
/// words; the legend takes the panel corner with the fewest points. Written atomically.
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
    let pairs: Vec<(usize, usize)> = if objectives.len() >= 3 {
        vec![(0, 1), (0, 2), (1, 2)]
    } else {
        vec![(0, objectives.len() - 1)]
    };
    let size = if pairs.len() == 1 {
        (800, 600)
    } else {
        (1500, 520)
    };
    let file = AtomicFile::new(path)?;
    {
        let root = SVGBackend::new(file.temp_path(), size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let root = root
            .titled(title, ("sans-serif", 20))
            .map_err(|e| fail(e.to_string()))?;
        let panels = root.split_evenly((1, pairs.len()));
        for (area, &(xi, yi)) in panels.iter().zip(&pairs) {
            panel(area, objectives, (xi, yi), series).map_err(fail)?;
        }
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    file.commit()
}

/// One scatter panel of objectives `xi` (x) and `yi` (y).
fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    objectives: &[Objective],
    (xi, yi): (usize, usize),
    series: &[(&str, &[Point])],
) -> std::result::Result<(), String> {
    let all = || series.iter().flat_map(|(_, ps)| ps.iter());
    let bounds = |i: usize| {
        all()
            .map(|p| p.values[i])
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            })
    };
    let ((xlo, xhi), (ylo, yhi)) = (bounds(xi), bounds(yi));
    let (xlog, ylog) = (wants_log(xlo, xhi), wants_log(ylo, yhi));
    // Log axes plot log10 of the values; their ticks are labelled at whole decades.
    let t = |v: f64, log: bool| if log { v.log10() } else { v };
    let xr = range(all().map(|p| t(p.values[xi], xlog)));
    let yr = range(all().map(|p| t(p.values[yi], ylog)));
    let tick = move |v: &f64, log: bool| {
        if !log {
            readable(*v)
        } else if (v - v.round()).abs() < 1e-9 {
            readable(10f64.powf(v.round()))
        } else {
            String::new()
        }
    };
    // The legend goes to the corner holding the fewest points.
    let (xm, ym) = ((xr.start + xr.end) / 2.0, (yr.start + yr.end) / 2.0);
    let mut corners = [0usize; 4];
    for p in all() {
        let (x, y) = (t(p.values[xi], xlog), t(p.values[yi], ylog));
        corners[usize::from(x >= xm) + 2 * usize::from(y < ym)] += 1;
    }
    let corner = (0..4).min_by_key(|&c| corners[c]).unwrap_or(0);
    let position = [
        SeriesLabelPosition::UpperLeft,
        SeriesLabelPosition::UpperRight,
        SeriesLabelPosition::LowerLeft,
        SeriesLabelPosition::LowerRight,
    ][corner]
        .clone();
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(xr, yr)
        .map_err(|e| e.to_string())?;
    let log_note = |o: &Objective, log: bool| {
        if log {
            format!("{}, log scale", axis_title(o))
        } else {
            axis_title(o)
        }
    };
    chart
        .configure_mesh()
        .x_labels(12)
        .y_labels(12)
        .x_label_formatter(&|v| tick(v, xlog))
        .y_label_formatter(&|v| tick(v, ylog))
        .x_desc(log_note(&objectives[xi], xlog))
        .y_desc(log_note(&objectives[yi], ylog))
        .draw()
        .map_err(|e| e.to_string())?;
    let styles = [BLUE.stroke_width(1), RED.filled(), GREEN.filled()];
    for (i, (name, points)) in series.iter().enumerate() {
        let style = styles[i % styles.len()];
        let size = if i == 0 { 5 } else { 3 };
        chart
            .draw_series(
                points.iter().map(|p| {
                    Circle::new((t(p.values[xi], xlog), t(p.values[yi], ylog)), size, style)
                }),
            )
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| Circle::new((x, y), size, style));
    }
    // One series needs no legend (the title names it); several get one in the emptiest corner.
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .position(position)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
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
