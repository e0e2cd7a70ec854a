//! Charts as SVG text, written by hand (no plotting library): scatter panels for fronts and
//! archives (like the DBSEC paper's Figs. 1–3), grouped bars, and the figures of the HTML report.
//! Axes spanning over two decades of positive values are logarithmic, ticks read as people read
//! numbers (1000, 10.0k, 2.5e-3), titles are in words, and a legend takes the emptiest corner.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::Result;
use crate::io::write_text_atomic;
use crate::objective::Objective;
use crate::search::Point;

/// Marker colours, one per series.
const COLOURS: [&str; 6] = [
    "#2c5f9e", "#c0392b", "#2e8b57", "#8e44ad", "#d68910", "#555555",
];

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

/// One axis: its value range (log10 of it when logarithmic) and title.
#[derive(Debug, Clone)]
pub struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    title: String,
}

impl Axis {
    /// An axis over `values` (logarithmic when they span over two positive decades and `log_ok`).
    pub fn over(values: impl Iterator<Item = f64> + Clone, title: &str, log_ok: bool) -> Self {
        let (lo, hi) = values
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let log = log_ok && wants_log(lo, hi);
        let (l, h) = if log {
            (lo.log10(), hi.log10())
        } else {
            (lo, hi)
        };
        let pad = if h > l {
            (h - l) * 0.05
        } else {
            l.abs().max(1.0) * 0.05
        };
        Axis {
            lo: l - pad,
            hi: h + pad,
            log,
            title: if log {
                format!("{title}, log scale")
            } else {
                title.to_string()
            },
        }
    }

    /// An axis from 0 to `hi` (bars).
    pub fn zero_to(hi: f64, title: &str) -> Self {
        Axis {
            lo: 0.0,
            hi: if hi > 0.0 { hi } else { 1.0 },
            log: false,
            title: title.to_string(),
        }
    }

    /// An axis for counts from 1 to `hi`: logarithmic from 1 when `hi` is 100 or more.
    pub fn counts(hi: f64, title: &str) -> Self {
        if hi >= 100.0 {
            Axis {
                lo: 0.0,
                hi: hi.log10() * 1.05,
                log: true,
                title: format!("{title}, log scale"),
            }
        } else {
            Axis::zero_to(hi * 1.05, title)
        }
    }

    /// The fraction (0 at `lo`, 1 at `hi`) of a value along the axis.
    fn frac(&self, v: f64) -> f64 {
        let v = if self.log {
            v.max(f64::MIN_POSITIVE).log10()
        } else {
            v
        };
        (v - self.lo) / (self.hi - self.lo)
    }

    /// Tick values with their labels: whole decades on a log axis, else about five round steps.
    fn ticks(&self) -> Vec<(f64, String)> {
        if self.log {
            return (self.lo.ceil() as i32..=self.hi.floor() as i32)
                .map(|e| {
                    let v = 10f64.powi(e);
                    (v, readable(v))
                })
                .collect();
        }
        let span = self.hi - self.lo;
        let raw = span / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(mag * 10.0);
        let mut out = Vec::new();
        let mut v = (self.lo / step).ceil() * step;
        while v <= self.hi + step * 1e-9 {
            let r = if v.abs() < step * 1e-9 { 0.0 } else { v };
            out.push((r, readable(r)));
            v += step;
        }
        out
    }
}

/// How a series' points are drawn.
#[derive(Debug, Clone, Copy)]
pub enum Marker {
    /// An open circle of this radius.
    Ring(f64),
    /// A filled dot of this radius.
    Dot(f64),
    /// A thick red ring (the chosen point).
    Chosen,
}

/// One series of a scatter panel.
#[derive(Debug, Clone)]
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// (x, y) values, with a tooltip each.
    pub points: Vec<(f64, f64, String)>,
    /// How its points are drawn.
    pub marker: Marker,
    /// Join the points (sorted by x) with a dashed line.
    pub line: bool,
}

/// A rectangle of the drawing: left, top, width, height.
type Rect = (f64, f64, f64, f64);

/// Text escaped for XML and HTML (`&`, `<`, `>`, `"`).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Horizontal grid lines and labels at the ticks of `y`.
fn y_grid(svg: &mut String, r: Rect, y: &Axis) {
    let (x0, y0, w, h) = r;
    for (v, label) in y.ticks() {
        let py = y0 + h - y.frac(v) * h;
        let _ = write!(
            svg,
            r##"<line x1="{x0:.1}" x2="{:.1}" y1="{py:.1}" y2="{py:.1}" stroke="#e3e3e3"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            x0 + w,
            x0 - 6.0,
            py + 4.0,
            esc(&label)
        );
    }
}

/// The frame of plot area `r` and the axis titles (the x title `below` px under the area).
fn border(svg: &mut String, r: Rect, x_title: &str, y_title: &str, below: f64) {
    let (x0, y0, w, h) = r;
    let _ = write!(
        svg,
        r##"<rect x="{x0:.1}" y="{y0:.1}" width="{w:.1}" height="{h:.1}" fill="none" stroke="#555"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{}</text>"##,
        x0 + w / 2.0,
        y0 + h + below,
        esc(x_title),
        x0 - 58.0,
        y0 + h / 2.0,
        x0 - 58.0,
        y0 + h / 2.0,
        esc(y_title)
    );
}

/// The axes, grid and titles of a panel whose plot area is `r`.
fn frame(svg: &mut String, r: Rect, x: &Axis, y: &Axis) {
    let (x0, y0, w, h) = r;
    for (v, label) in x.ticks() {
        let px = x0 + x.frac(v) * w;
        let _ = write!(
            svg,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{y0:.1}" y2="{:.1}" stroke="#e3e3e3"/><text x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            y0 + h,
            y0 + h + 15.0,
            esc(&label)
        );
    }
    y_grid(svg, r, y);
    border(svg, r, &x.title, &y.title, 36.0);
}

/// A scatter panel in plot area `r` (axes drawn around it); with several series, a legend in the
/// corner holding the fewest points.
pub fn scatter(svg: &mut String, r: Rect, x: &Axis, y: &Axis, series: &[Series]) {
    frame(svg, r, x, y);
    let (x0, y0, w, h) = r;
    let at = |px: f64, py: f64| (x0 + x.frac(px) * w, y0 + h - y.frac(py) * h);
    let mut corners = [0usize; 4];
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        if s.line {
            let mut pts: Vec<&(f64, f64, String)> = s.points.iter().collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let path: Vec<String> = pts
                .iter()
                .map(|p| {
                    let (a, b) = at(p.0, p.1);
                    format!("{a:.1},{b:.1}")
                })
                .collect();
            let _ = write!(
                svg,
                r##"<polyline points="{}" fill="none" stroke="#999" stroke-dasharray="3 3"/>"##,
                path.join(" ")
            );
        }
        for (px, py, tip) in &s.points {
            let (a, b) = at(*px, *py);
            corners[usize::from(a >= x0 + w / 2.0) + 2 * usize::from(b >= y0 + h / 2.0)] += 1;
            let shape = match s.marker {
                Marker::Ring(rad) => format!(
                    r#"<circle cx="{a:.1}" cy="{b:.1}" r="{rad}" fill="none" stroke="{colour}" stroke-width="1.3">"#
                ),
                Marker::Dot(rad) => {
                    format!(r#"<circle cx="{a:.1}" cy="{b:.1}" r="{rad}" fill="{colour}">"#)
                }
                Marker::Chosen => format!(
                    r##"<circle cx="{a:.1}" cy="{b:.1}" r="7" fill="none" stroke="#c0392b" stroke-width="2.5">"##
                ),
            };
            let _ = write!(svg, "{shape}<title>{}</title></circle>", esc(tip));
        }
    }
    if series.len() < 2 {
        return;
    }
    let corner = (0..4).min_by_key(|&c| corners[c]).unwrap_or(0);
    let (lw, lh) = (
        series
            .iter()
            .map(|s| s.name.chars().count())
            .max()
            .unwrap_or(4) as f64
            * 6.5
            + 40.0,
        series.len() as f64 * 18.0 + 8.0,
    );
    let lx = if corner % 2 == 0 {
        x0 + 8.0
    } else {
        x0 + w - lw - 8.0
    };
    let ly = if corner < 2 {
        y0 + 8.0
    } else {
        y0 + h - lh - 8.0
    };
    let _ = write!(
        svg,
        r##"<rect x="{lx:.1}" y="{ly:.1}" width="{lw:.1}" height="{lh:.1}" fill="white" stroke="#bbb"/>"##
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let (cx, cy) = (lx + 14.0, ly + 14.0 + i as f64 * 18.0);
        let shape = match s.marker {
            Marker::Ring(_) => format!(
                r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="4" fill="none" stroke="{colour}" stroke-width="1.3"/>"#
            ),
            Marker::Dot(_) => {
                format!(r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3.5" fill="{colour}"/>"#)
            }
            Marker::Chosen => format!(
                r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="6" fill="none" stroke="#c0392b" stroke-width="2.5"/>"##
            ),
        };
        let _ = write!(
            svg,
            r#"{shape}<text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            cx + 12.0,
            cy + 4.0,
            esc(&s.name)
        );
    }
}

/// Grouped bars in plot area `r`: one group per label, one bar per series (`None` leaves a gap);
/// with several series, a legend in the top right corner.
pub fn bars(
    svg: &mut String,
    r: Rect,
    y: &Axis,
    x_title: &str,
    groups: &[String],
    series: &[(String, Vec<Option<f64>>)],
) {
    let (x0, y0, w, h) = r;
    let x = Axis::zero_to(1.0, x_title);
    // Only the y grid: groups label the x axis.
    y_grid(svg, r, y);
    let n = groups.len().max(1) as f64;
    let group_w = w / n;
    let bar_w = group_w * 0.8 / series.len().max(1) as f64;
    for (g, label) in groups.iter().enumerate() {
        let gx = x0 + g as f64 * group_w;
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" transform="rotate(-30 {:.1} {:.1})">{}</text>"#,
            gx + group_w / 2.0,
            y0 + h + 14.0,
            gx + group_w / 2.0,
            y0 + h + 14.0,
            esc(label)
        );
        for (s, (name, values)) in series.iter().enumerate() {
            let Some(v) = values.get(g).copied().flatten() else {
                continue;
            };
            let top = y0 + h - y.frac(v).clamp(0.0, 1.0) * h;
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                gx + group_w * 0.1 + s as f64 * bar_w,
                bar_w * 0.9,
                (y0 + h - top).max(0.5),
                COLOURS[s % COLOURS.len()],
                esc(name),
                readable(v)
            );
        }
    }
    border(svg, r, &x.title, &y.title, 58.0);
    if series.len() > 1 {
        let lw = series
            .iter()
            .map(|s| s.0.chars().count())
            .max()
            .unwrap_or(4) as f64
            * 6.5
            + 40.0;
        let (lx, ly) = (x0 + w - lw - 8.0, y0 + 8.0);
        let _ = write!(
            svg,
            r##"<rect x="{lx:.1}" y="{ly:.1}" width="{lw:.1}" height="{:.1}" fill="white" stroke="#bbb"/>"##,
            series.len() as f64 * 18.0 + 8.0
        );
        for (s, (name, _)) in series.iter().enumerate() {
            let cy = ly + 14.0 + s as f64 * 18.0;
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
                lx + 9.0,
                cy - 5.0,
                COLOURS[s % COLOURS.len()],
                lx + 26.0,
                cy + 4.0,
                esc(name)
            );
        }
    }
}

/// An SVG document of `w` × `h` with a title line above `body`.
pub fn document(w: f64, h: f64, title: &str, body: &str) -> String {
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" role="img"><rect width="{w}" height="{h}" fill="white"/>"#
    );
    if !title.is_empty() {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="22" font-size="16" text-anchor="middle">{}</text>"#,
            w / 2.0,
            esc(title)
        );
    }
    svg.push_str(body);
    svg.push_str("</svg>");
    svg
}

/// Draws each series of points: for two objectives one panel (x the first, y the second), for
/// three or more the pairs of the first three side by side. Written atomically.
pub fn front_svg(
    path: &Path,
    title: &str,
    objectives: &[Objective],
    series: &[(&str, &[Point])],
) -> Result<()> {
    let pairs: Vec<(usize, usize)> = if objectives.len() >= 3 {
        vec![(0, 1), (0, 2), (1, 2)]
    } else {
        vec![(0, objectives.len() - 1)]
    };
    let (pw, ph) = (500.0, 420.0);
    let mut body = String::new();
    for (i, &(xi, yi)) in pairs.iter().enumerate() {
        let all = || series.iter().flat_map(|(_, ps)| ps.iter());
        let x = Axis::over(
            all().map(|p| p.values[xi]),
            &axis_title(&objectives[xi]),
            true,
        );
        let y = Axis::over(
            all().map(|p| p.values[yi]),
            &axis_title(&objectives[yi]),
            true,
        );
        let drawn: Vec<Series> = series
            .iter()
            .enumerate()
            .map(|(s, (name, points))| Series {
                name: name.to_string(),
                points: points
                    .iter()
                    .map(|p| {
                        (
                            p.values[xi],
                            p.values[yi],
                            format!("node {:?}: {:?}", p.node, p.values),
                        )
                    })
                    .collect(),
                marker: if s == 0 {
                    Marker::Ring(5.0)
                } else {
                    Marker::Dot(3.0)
                },
                line: false,
            })
            .collect();
        scatter(
            &mut body,
            (i as f64 * pw + 85.0, 45.0, pw - 110.0, ph - 110.0),
            &x,
            &y,
            &drawn,
        );
    }
    write_text_atomic(path, &document(pw * pairs.len() as f64, ph, title, &body))
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
    let (w, h) = (900.0, 520.0);
    let mut body = String::new();
    bars(
        &mut body,
        (85.0, 45.0, w - 110.0, h - 150.0),
        &Axis::zero_to(y_max, y_desc),
        "",
        groups,
        series,
    );
    write_text_atomic(path, &document(w, h, title, &body))
}
