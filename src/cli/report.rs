//! `anonymize --report FILE.html`: one self-contained page for a privacy officer (inline CSS and
//! SVG, nothing fetched): the data set, the requirements and whether they hold, the chosen node
//! with each QI's level and example labels, the indices, suppression, the class-size
//! distribution, the {k, GLM} front with the chosen node marked, and the verification result.

use std::fmt::Write as _;

use pbg::Evaluator;
use pbg::Objective;
use pbg::plot::{esc, readable};
use serde_json::Value;

/// What the page needs from the engine, gathered while the node is chosen.
#[derive(Debug)]
pub struct ReportFacts {
    /// Per QI: name, level, height, example labels at the level.
    pub qis: Vec<(String, u8, u8, Vec<String>)>,
    /// Released class sizes in powers of two: (from, to, classes, rows).
    pub sizes: Vec<(u64, u64, u64, u64)>,
    /// Suppressed classes and their rows.
    pub suppressed: (u64, u64),
    /// Whether classes were suppressed because they failed a requirement (not by size alone).
    pub by_requirements: bool,
    /// The exact {k, GLM} front: (node, k, glm); `None` with why when the lattice is too large.
    pub front: Result<Vec<(Vec<u8>, f64, f64)>, String>,
    /// Lattice nodes.
    pub lattice_size: u128,
    /// The node's indices.
    pub indices: pbg::NodeIndices,
}

/// Lattices up to this size get their {k, GLM} front computed for the page.
const FRONT_LIMIT: u128 = 200_000;

/// Gathers the facts of `node`.
pub fn facts(ev: &Evaluator, node: &[u8]) -> pbg::error::Result<ReportFacts> {
    let ds = ev.dataset();
    let qis = ds
        .qis
        .iter()
        .enumerate()
        .map(|(d, q)| {
            let level = q.hierarchy.level(node[d]);
            let examples = level.labels.iter().take(4).cloned().collect();
            (q.name.clone(), node[d], q.hierarchy.height(), examples)
        })
        .collect();
    let tables = ev.tables(node)?;
    let indices = ev.evaluate(node)?;
    let removal = ev.suppression_of(&tables.sens, indices.threshold);
    let mut sizes: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut suppressed = (0, 0);
    for (i, class) in tables.sens.classes().enumerate() {
        if removal.removes(i, class.size) {
            suppressed.0 += 1;
            suppressed.1 += class.size;
            continue;
        }
        let b = 63 - class.size.max(1).leading_zeros() as usize;
        if sizes.len() <= b {
            sizes.resize(b + 1, (0, 0, 0, 0));
        }
        sizes[b].2 += 1;
        sizes[b].3 += class.size;
    }
    for (b, s) in sizes.iter_mut().enumerate() {
        s.0 = 1 << b;
        s.1 = (1u64 << (b + 1)) - 1;
    }
    let lattice_size = ev.lattice().size_exact();
    let front = if lattice_size <= FRONT_LIMIT {
        let objectives = [
            Objective::parse_objective("k")?,
            Objective::parse_objective("glm")?,
        ];
        let result = pbg::search::exhaustive(ev, &objectives)?;
        Ok(result
            .front
            .iter()
            .map(|p| (p.node.clone(), p.values[0], p.values[1]))
            .collect())
    } else {
        Err(format!(
            "the lattice has {lattice_size} nodes: the front is drawn for lattices of up to {FRONT_LIMIT}"
        ))
    };
    Ok(ReportFacts {
        qis,
        sizes,
        suppressed,
        by_requirements: removal.by_requirements(),
        front,
        lattice_size,
        indices,
    })
}

/// Bars of the released class sizes (x: sizes in powers of two, y: classes).
fn histogram_svg(sizes: &[(u64, u64, u64, u64)]) -> String {
    use pbg::plot::{Axis, bars, document};
    let shown: Vec<&(u64, u64, u64, u64)> = sizes.iter().skip_while(|s| s.2 == 0).collect();
    let groups: Vec<String> = shown
        .iter()
        .map(|&&(from, to, _, _)| {
            if from == to {
                readable(from as f64)
            } else {
                format!("{}–{}", readable(from as f64), readable(to as f64))
            }
        })
        .collect();
    let classes: Vec<Option<f64>> = shown
        .iter()
        .map(|s| (s.2 > 0).then_some(s.2 as f64))
        .collect();
    let max = classes.iter().flatten().fold(1.0f64, |a, &b| a.max(b));
    let mut body = String::new();
    bars(
        &mut body,
        (80.0, 15.0, 540.0, 220.0),
        &Axis::counts(max, "classes"),
        "class size (rows per equivalence class)",
        &groups,
        &[("classes".to_string(), classes)],
    );
    document(640.0, 330.0, "", &body)
}

/// The {k, GLM} front: x = k, y = information loss (GLM); the chosen node circled.
fn front_svg(front: &[(Vec<u8>, f64, f64)], chosen: &[u8], chosen_kg: (f64, f64)) -> String {
    use pbg::plot::{Axis, Marker, Series, document, scatter};
    let ks = front.iter().map(|p| p.1).chain([chosen_kg.0]);
    let gs = front.iter().map(|p| p.2).chain([chosen_kg.1]);
    let x = Axis::over(ks, "k (smallest class size)", true);
    let y = Axis::over(gs, "information loss (GLM)", false);
    let series = [
        Series {
            name: "minimal node (front)".into(),
            points: front
                .iter()
                .map(|p| {
                    (
                        p.1,
                        p.2,
                        format!(
                            "node {:?}: k = {}, GLM = {}",
                            p.0,
                            readable(p.1),
                            readable(p.2)
                        ),
                    )
                })
                .collect(),
            marker: Marker::Dot(3.5),
            line: true,
        },
        Series {
            name: "chosen node".into(),
            points: vec![(chosen_kg.0, chosen_kg.1, format!("chosen node {chosen:?}"))],
            marker: Marker::Chosen,
            line: false,
        },
    ];
    let mut body = String::new();
    scatter(&mut body, (80.0, 15.0, 540.0, 250.0), &x, &y, &series);
    document(640.0, 320.0, "", &body)
}

/// The page, from the JSON report of `anonymize` and the facts gathered with the node.
/// `requirements` are (text, value, holds).
pub fn render(
    report: &Value,
    facts: &ReportFacts,
    requirements: &[(String, f64, bool)],
    profile_text: &str,
) -> String {
    let num = |v: &Value| v.as_f64().map_or_else(|| v.to_string(), readable);
    let ix = &report["indices"];
    let node: Vec<u8> = report["node"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_u64())
                .map(|v| v as u8)
                .collect()
        })
        .unwrap_or_default();
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>pbg release report</title><style>
body{{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}}
h1{{font-size:1.6em}}h2{{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}}
table{{border-collapse:collapse;margin:.5em 0}}td,th{{border:1px solid #ddd;padding:.3em .6em;text-align:left}}
td.n{{text-align:right;font-variant-numeric:tabular-nums}}.ok{{color:#1e7d32;font-weight:600}}.no{{color:#c0392b;font-weight:600}}
code{{background:#f4f4f4;padding:0 .2em}}.note{{color:#666;font-size:.9em}}</style></head><body>
<h1>Release report</h1><p class="note">Written by pbg {} with the release; every figure below is from the same run as the JSON report.</p>"#,
        env!("CARGO_PKG_VERSION")
    );
    let verified = report["verified"].as_bool() == Some(true);
    if report["output"].is_null() {
        h.push_str(r#"<h2>Verification</h2><p id="verified">No release was written: this page describes the chosen node on the input's statistics. <code>pbg anonymize ... --report</code> writes the release, verifies it and reports it.</p>"#);
    } else {
        let _ = write!(
            h,
            r#"<h2>Verification</h2><p id="verified" class="{}">{}</p><p>The file was read back and its classes, k, l, GLM, every class's sensitive values, every label and every row (by fingerprint) were checked against the input before it was renamed into place.</p>"#,
            if verified { "ok" } else { "no" },
            if verified {
                "verified: the release is exactly the chosen node's release"
            } else {
                "NOT verified"
            }
        );
    }
    let _ = write!(
        h,
        r#"<h2>Data set</h2><table><tr><th>release</th><td><code>{}</code></td></tr><tr><th>input rows</th><td class="n" id="rows_in">{}</td></tr><tr><th>released rows</th><td class="n" id="rows_released">{}</td></tr><tr><th>suppressed rows</th><td class="n" id="suppressed">{}</td></tr><tr><th>suppression rule</th><td>{} (threshold: classes of ≤ {} rows{})</td></tr><tr><th>lattice</th><td class="n">{} nodes</td></tr></table>"#,
        esc(report["output"].as_str().unwrap_or("none (report only)")),
        report["rows_in"],
        report["rows_released"],
        report["suppressed"],
        esc(report["suppression_rule"].as_str().unwrap_or("")),
        report["threshold"],
        if facts.by_requirements {
            ", and the classes that fail a requirement"
        } else {
            ""
        },
        facts.lattice_size
    );
    h.push_str("<h2>Requirements</h2>");
    if requirements.is_empty() {
        h.push_str("<p>No requirement was given: the node was given by hand.</p>");
    } else {
        h.push_str("<table><tr><th>requirement</th><th>value</th><th>holds</th></tr>");
        for (text, value, holds) in requirements {
            let _ = write!(
                h,
                r#"<tr><td><code>{}</code></td><td class="n">{}</td><td class="{}">{}</td></tr>"#,
                esc(text),
                readable(*value),
                if *holds { "ok" } else { "no" },
                if *holds { "yes" } else { "NO" }
            );
        }
        h.push_str("</table>");
    }
    let _ = write!(
        h,
        r#"<h2>Chosen node</h2><p>Node <code id="node">{node:?}</code>: the level of each quasi-identifier's hierarchy (0 = the values as they are).</p><table><tr><th>quasi-identifier</th><th>level</th><th>example labels at that level</th></tr>"#
    );
    for (name, level, height, examples) in &facts.qis {
        let _ = write!(
            h,
            r#"<tr><td>{}</td><td class="n">{level} of {height}</td><td>{}</td></tr>"#,
            esc(name),
            examples
                .iter()
                .map(|e| format!("<code>{}</code>", esc(e)))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    h.push_str("</table><h2>Privacy and utility</h2><table><tr><th>index</th><th>value</th></tr>");
    if let Some(m) = ix.as_object() {
        for (k, v) in m {
            let _ = write!(
                h,
                r#"<tr><td>{}</td><td class="n" id="ix-{}">{}</td></tr>"#,
                esc(k),
                esc(k),
                num(v)
            );
        }
    }
    h.push_str("</table><p class=\"note\">k: smallest class; l: fewest distinct sensitive values in a class; risks are re-identification probabilities of a prosecutor; GLM is the information loss (0 = none).</p>");
    let _ = write!(
        h,
        r#"<h2>Class sizes</h2><p>The released equivalence classes by size; {} classes ({} rows) were suppressed.</p><figure id="fig-sizes">{}</figure>"#,
        facts.suppressed.0,
        facts.suppressed.1,
        histogram_svg(&facts.sizes)
    );
    h.push_str("<h2>The {k, GLM} front</h2>");
    match &facts.front {
        Ok(front) => {
            let chosen = (
                ix["k"].as_f64().unwrap_or(1.0),
                ix["glm"].as_f64().unwrap_or(0.0),
            );
            let _ = write!(
                h,
                r#"<p>Every node no other node beats on both protection (k, higher is better) and loss (GLM, lower is better): {} of {} nodes. The chosen node is circled (it may lie off the front when other requirements or suppression decided).</p><figure id="fig-front">{}</figure>"#,
                front.len(),
                facts.lattice_size,
                front_svg(front, &node, chosen)
            );
        }
        Err(why) => {
            let _ = write!(h, "<p>Not drawn: {}.</p>", esc(why));
        }
    }
    let _ = write!(
        h,
        r#"<h2>Profile</h2><pre>{}</pre></body></html>"#,
        esc(profile_text)
    );
    h
}
