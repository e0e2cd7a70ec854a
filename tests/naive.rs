//! A deliberately naive, separately written evaluator: strings and hash maps, row by row, with the
//! suppression rule transcribed literally from the DBSEC paper. The engine is checked against it.

use std::collections::HashMap;

/// A small random-able table: QI values, sensitive values, class labels as text.
#[derive(Debug, Clone)]
pub struct NaiveTable {
    /// rows[r][d] = value of QI d.
    pub rows: Vec<Vec<String>>,
    /// Sensitive value per row.
    pub sens: Vec<String>,
    /// Class label per row.
    pub labels: Vec<String>,
    /// Per QI, ARX-style hierarchy rows `[leaf, l1, ..., top]`.
    pub hierarchies: Vec<Vec<Vec<String>>>,
    /// A hierarchy of the sensitive values, in the same form.
    pub sens_hierarchy: Option<Vec<Vec<String>>>,
}

/// What the naive evaluator computes for a node.
#[derive(Debug, Clone, PartialEq)]
pub struct NaiveResult {
    pub classes: u64,
    pub k: u64,
    pub max_class: u64,
    pub l_distinct: u64,
    pub l_entropy: f64,
    pub suppressed: u64,
    pub glm: f64,
    pub s_k: u64,
    pub s_l: u64,
    pub cm: f64,
    pub t_equal: f64,
    pub t_ordered: f64,
    pub t_hierarchical: Option<f64>,
    pub beta: f64,
    pub delta_disclosure: f64,
    pub risk_average: f64,
    pub uniques: f64,
    pub aecs: f64,
    pub precision: f64,
    pub nu_entropy: f64,
    pub p_equiv: Vec<u64>,
    pub p_sens: Vec<u64>,
    pub p_glm: Vec<f64>,
    pub p_risk: Vec<f64>,
}

/// The distances of one class's sensitive histogram `class` from the whole table's `all`,
/// straight from SPEC §7: every sum over the whole domain, the hierarchy's tree walked level by
/// level.
pub fn distances(
    class: &HashMap<&str, u64>,
    all: &HashMap<&str, u64>,
    hierarchy: Option<&[Vec<String>]>,
) -> (f64, f64, Option<f64>, f64, f64) {
    let freq = |h: &HashMap<&str, u64>, v: &str| {
        h.get(v).copied().unwrap_or(0) as f64 / h.values().sum::<u64>() as f64
    };
    let mut domain: Vec<&str> = all.keys().copied().collect();
    domain.sort();
    let t_equal = 0.5
        * domain
            .iter()
            .map(|v| (freq(class, v) - freq(all, v)).abs())
            .sum::<f64>();
    // Order: the hierarchy's rows, else numeric when every value is a number, else text.
    let mut ordered = domain.clone();
    match hierarchy {
        Some(h) => ordered.sort_by_key(|v| h.iter().position(|r| r[0] == *v).unwrap()),
        None if domain.iter().all(|v| v.parse::<f64>().is_ok()) => ordered.sort_by(|a, b| {
            a.parse::<f64>()
                .unwrap()
                .total_cmp(&b.parse::<f64>().unwrap())
                .then(a.cmp(b))
        }),
        None => {}
    }
    let m = ordered.len();
    let mut t_ordered = 0.0;
    for i in 0..m {
        let cum: f64 = ordered[..=i]
            .iter()
            .map(|v| freq(class, v) - freq(all, v))
            .sum();
        t_ordered += cum.abs();
    }
    let t_ordered = if m > 1 {
        t_ordered / (m - 1) as f64
    } else {
        0.0
    };
    let t_hierarchical = hierarchy.map(|h| {
        let height = h[0].len() - 1;
        // extra of (level, label): leaves directly, groups from their children.
        let mut extra: HashMap<(usize, String), f64> = HashMap::new();
        for r in h {
            let v = r[0].as_str();
            extra.insert((0, r[0].clone()), freq(class, v) - freq(all, v));
        }
        let mut cost = 0.0;
        for level in 1..=height {
            let mut labels: Vec<&String> = h.iter().map(|r| &r[level]).collect();
            labels.sort();
            labels.dedup();
            for g in labels {
                let mut children: Vec<&String> = h
                    .iter()
                    .filter(|r| &r[level] == g)
                    .map(|r| &r[level - 1])
                    .collect();
                children.sort();
                children.dedup();
                let (mut pos, mut neg) = (0.0, 0.0);
                for c in children {
                    let e = extra[&(level - 1, c.clone())];
                    if e > 0.0 {
                        pos += e;
                    } else {
                        neg -= e;
                    }
                }
                cost += level as f64 / height as f64 * f64::min(pos, neg);
                extra.insert((level, g.clone()), pos - neg);
            }
        }
        cost
    });
    let mut beta = 0.0f64;
    let mut delta = 0.0f64;
    for v in &domain {
        let (q, p) = (freq(class, v), freq(all, v));
        if q > p {
            beta = beta.max((q - p) / p);
        }
        if q > 0.0 {
            delta = delta.max((q / p).ln().abs());
        }
    }
    (t_equal, t_ordered, t_hierarchical, beta, delta)
}

fn label<'a>(h: &'a [Vec<String>], value: &str, level: usize) -> &'a str {
    &h.iter().find(|r| r[0] == value).expect("leaf")[level]
}

fn loss(h: &[Vec<String>], value: &str, level: usize) -> f64 {
    let g = label(h, value, level);
    let m = h.iter().filter(|r| r[level] == g).count() as f64;
    let a = h.len() as f64;
    if a > 1.0 { (m - 1.0) / (a - 1.0) } else { 0.0 }
}

/// Which classes the naive evaluator suppresses.
#[derive(Debug, Clone, PartialEq)]
pub enum NaiveRule {
    /// DBSEC: every class of size ≤ j, j as large as η allows.
    Dbsec,
    /// ARX's: the classes smaller than `k`, with fewer than `l` distinct values, a `t_equal`
    /// above `t` or a prosecutor risk 1 / size above `risk`, when together they fit η and leave
    /// a class; else the DBSEC rule never suppressing a class of `k` or more tuples.
    Requirements {
        k: u64,
        l: u64,
        t: Option<f64>,
        risk: Option<f64>,
    },
}

/// Evaluates `node` with suppression limit `eta` under the DBSEC rule.
pub fn evaluate(t: &NaiveTable, node: &[u8], eta: u64) -> NaiveResult {
    evaluate_under(t, node, eta, &NaiveRule::Dbsec)
}

/// Evaluates `node` with suppression limit `eta` under `rule`.
pub fn evaluate_under(t: &NaiveTable, node: &[u8], eta: u64, rule: &NaiveRule) -> NaiveResult {
    let n = t.rows.len();
    let generalized: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(d, v)| label(&t.hierarchies[d], v, node[d] as usize).to_string())
                .collect()
        })
        .collect();
    let mut classes: HashMap<&Vec<String>, Vec<usize>> = HashMap::new();
    for (r, g) in generalized.iter().enumerate() {
        classes.entry(g).or_default().push(r);
    }
    let max_size = classes.values().map(|c| c.len()).max().unwrap() as u64;
    // |E_i| = tuples in classes of size exactly i; j = smallest with |E_1|+..+|E_{j+1}| > η.
    let e = |i: u64| -> u64 {
        classes
            .values()
            .filter(|c| c.len() as u64 == i)
            .map(|c| c.len() as u64)
            .sum()
    };
    let mut j = 0;
    loop {
        let total: u64 = (1..=j + 1).map(e).sum();
        if total > eta || j + 1 > n as u64 {
            break;
        }
        j += 1;
    }
    let mut j = j.min(max_size - 1);
    let mut sens_total: HashMap<&str, u64> = HashMap::new();
    for s in &t.sens {
        *sens_total.entry(s).or_default() += 1;
    }
    // The classes the requirement rule finds failing, when they fit; else none (size rule).
    let mut failing: Vec<&Vec<String>> = Vec::new();
    if let NaiveRule::Requirements {
        k,
        l,
        t: t_max,
        risk,
    } = rule
    {
        j = j.min(k - 1);
        for (g, members) in &classes {
            let mut hist: HashMap<&str, u64> = HashMap::new();
            for &r in members {
                *hist.entry(&t.sens[r]).or_default() += 1;
            }
            let (te, ..) = distances(&hist, &sens_total, t.sens_hierarchy.as_deref());
            if (members.len() as u64) < *k
                || (hist.len() as u64) < *l
                || t_max.is_some_and(|x| te > x)
                || risk.is_some_and(|r| 1.0 / members.len() as f64 > r)
            {
                failing.push(g);
            }
        }
        let total: usize = failing.iter().map(|g| classes[g].len()).sum();
        if total as u64 > eta || total == n {
            failing.clear();
        }
    }
    let mut res = NaiveResult {
        classes: 0,
        k: u64::MAX,
        max_class: 0,
        l_distinct: u64::MAX,
        l_entropy: f64::INFINITY,
        suppressed: 0,
        glm: 0.0,
        s_k: 0,
        s_l: 0,
        cm: 0.0,
        t_equal: 0.0,
        t_ordered: 0.0,
        t_hierarchical: t.sens_hierarchy.as_ref().map(|_| 0.0),
        beta: 0.0,
        delta_disclosure: 0.0,
        risk_average: 0.0,
        uniques: 0.0,
        aecs: 0.0,
        precision: 0.0,
        nu_entropy: 0.0,
        p_equiv: vec![0; n],
        p_sens: vec![0; n],
        p_glm: vec![0.0; n],
        p_risk: vec![0.0; n],
    };
    let heights: Vec<usize> = t.hierarchies.iter().map(|h| h[0].len() - 1).collect();
    // c_q(v): input rows with value v of QI q; c_q(g): rows whose value lies in group g.
    let mut counts: HashMap<(usize, usize, &str), f64> = HashMap::new();
    for r in &t.rows {
        for (d, h) in t.hierarchies.iter().enumerate() {
            for level in 0..=heights[d] {
                *counts
                    .entry((d, level, label(h, &r[d], level)))
                    .or_default() += 1.0;
            }
        }
    }
    let count_of = |d: usize, level: usize, label: &str| counts[&(d, level, label)];
    let mut min_h = f64::INFINITY;
    let mut penalties = 0u64;
    for (g, members) in &classes {
        let size = members.len() as u64;
        let mut hist: HashMap<&str, u64> = HashMap::new();
        let mut lab: HashMap<&str, u64> = HashMap::new();
        for &r in members {
            *hist.entry(&t.sens[r]).or_default() += 1;
            *lab.entry(&t.labels[r]).or_default() += 1;
        }
        let suppressed = size <= j || failing.contains(g);
        if suppressed {
            res.suppressed += size;
        } else {
            res.classes += 1;
            res.k = res.k.min(size);
            res.max_class = res.max_class.max(size);
            res.l_distinct = res.l_distinct.min(hist.len() as u64);
            let h: f64 = hist
                .values()
                .map(|&c| {
                    let p = c as f64 / size as f64;
                    -p * p.ln()
                })
                .sum();
            min_h = min_h.min(h);
            let (te, to, th, b, dd) = distances(&hist, &sens_total, t.sens_hierarchy.as_deref());
            res.t_equal = res.t_equal.max(te);
            res.t_ordered = res.t_ordered.max(to);
            res.t_hierarchical = th.map(|x| x.max(res.t_hierarchical.unwrap()));
            res.beta = res.beta.max(b);
            res.delta_disclosure = res.delta_disclosure.max(dd);
        }
        let most = *lab.values().max().unwrap();
        for &r in members {
            for d in 0..node.len() {
                let v = &t.rows[r][d];
                let c_v = count_of(d, 0, v);
                let c_g = if suppressed {
                    n as f64
                } else {
                    count_of(
                        d,
                        node[d] as usize,
                        label(&t.hierarchies[d], v, node[d] as usize),
                    )
                };
                res.nu_entropy += -(c_v / c_g).log2();
                res.precision += if suppressed {
                    1.0
                } else {
                    node[d] as f64 / heights[d] as f64
                };
            }
            if suppressed {
                res.p_equiv[r] = n as u64;
                res.p_sens[r] = sens_total[t.sens[r].as_str()];
                res.p_glm[r] = t.hierarchies.len() as f64;
                penalties += 1;
            } else {
                res.p_equiv[r] = size;
                res.p_sens[r] = hist[t.sens[r].as_str()];
                res.p_risk[r] = 1.0 / size as f64;
                res.p_glm[r] = (0..node.len())
                    .map(|d| loss(&t.hierarchies[d], &t.rows[r][d], node[d] as usize))
                    .sum();
                if lab[t.labels[r].as_str()] < most {
                    penalties += 1;
                }
            }
        }
    }
    res.l_entropy = min_h.exp();
    res.s_k = res.p_equiv.iter().sum();
    res.s_l = res.p_sens.iter().sum();
    res.glm = res.p_glm.iter().sum();
    res.cm = penalties as f64 / n as f64;
    let released = n as u64 - res.suppressed;
    res.risk_average = if released == 0 {
        0.0
    } else {
        res.classes as f64 / released as f64
    };
    res.uniques = classes
        .iter()
        .filter(|(g, c)| c.len() == 1 && c.len() as u64 > j && !failing.contains(g))
        .count() as f64
        / n as f64;
    res.aecs = if res.classes == 0 {
        n as f64
    } else {
        released as f64 / res.classes as f64
    };
    res.precision /= (n * node.len()) as f64;
    res
}

/// A naive release, row by row: `rows` are every column's text (`names` the header), `qis` the
/// QI columns with their hierarchy rows, `identifiers` the columns to drop; classes of size ≤ the
/// DBSEC threshold j for `eta` are removed. Returns the header and the released rows.
pub fn release(
    names: &[String],
    rows: &[Vec<String>],
    qis: &[(usize, Vec<Vec<String>>)],
    sensitive: usize,
    identifiers: &[usize],
    node: &[u8],
    eta: u64,
) -> (Vec<String>, Vec<Vec<String>>) {
    let table = NaiveTable {
        rows: rows
            .iter()
            .map(|r| qis.iter().map(|(c, _)| r[*c].clone()).collect())
            .collect(),
        sens: rows.iter().map(|r| r[sensitive].clone()).collect(),
        labels: rows.iter().map(|_| String::new()).collect(),
        hierarchies: qis.iter().map(|(_, h)| h.clone()).collect(),
        sens_hierarchy: None,
    };
    let result = evaluate(&table, node, eta);
    let n = rows.len() as u64;
    let keep: Vec<usize> = (0..names.len())
        .filter(|c| !identifiers.contains(c))
        .collect();
    let header = keep.iter().map(|&c| names[c].clone()).collect();
    let mut out = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        // A suppressed tuple has p_equiv = N (SPEC §2).
        if result.suppressed > 0 && result.p_equiv[r] == n {
            continue;
        }
        out.push(
            keep.iter()
                .map(|&c| match qis.iter().position(|(q, _)| *q == c) {
                    Some(d) => label(&qis[d].1, &row[c], node[d] as usize).to_string(),
                    None => row[c].clone(),
                })
                .collect(),
        );
    }
    (header, out)
}

/// The integer indices the engine must give exactly as the naive evaluator: classes, k,
/// max_class, distinct l, suppressed, S_k, S_l.
pub type Counts = (u64, u64, u64, u64, u64, u64, u64);

impl NaiveResult {
    /// This result's [`Counts`].
    pub fn counts(&self) -> Counts {
        (
            self.classes,
            self.k,
            self.max_class,
            self.l_distinct,
            self.suppressed,
            self.s_k,
            self.s_l,
        )
    }
}

/// The engine's [`Counts`] of a node.
pub fn engine_counts(x: &pbg::NodeIndices) -> Counts {
    (
        x.classes,
        x.k,
        x.max_class,
        x.l_distinct,
        x.suppressed,
        x.s_k,
        x.s_l,
    )
}

/// Equal up to rounding (relative 1e-9).
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// Whether the engine's indices `direct` and property vectors of `node` equal the naive
/// evaluator's `want`: integers exactly, floats to rounding (CM when the profile has a class
/// attribute). The first difference otherwise.
pub fn agrees(
    ev: &pbg::Evaluator,
    node: &[u8],
    direct: &pbg::NodeIndices,
    want: &NaiveResult,
) -> Result<(), String> {
    let (engine, naive) = (engine_counts(direct), want.counts());
    if engine != naive {
        return Err(format!("node {node:?}: engine {engine:?}, naive {naive:?}"));
    }
    let mut floats = vec![
        ("glm", direct.glm, want.glm),
        ("l_entropy", direct.l_entropy, want.l_entropy),
        ("t_equal", direct.t_equal, want.t_equal),
        ("t_ordered", direct.t_ordered, want.t_ordered),
        ("beta", direct.beta, want.beta),
        (
            "delta_disclosure",
            direct.delta_disclosure,
            want.delta_disclosure,
        ),
        ("risk_average", direct.risk_average, want.risk_average),
        ("uniques", direct.uniques, want.uniques),
        ("aecs", direct.aecs, want.aecs),
        ("precision", direct.precision, want.precision),
        ("nu_entropy", direct.nu_entropy, want.nu_entropy),
    ];
    if let Some(cm) = direct.cm {
        floats.push(("cm", cm, want.cm));
    }
    match (direct.t_hierarchical, want.t_hierarchical) {
        (Some(a), Some(b)) => floats.push(("t_hierarchical", a, b)),
        (None, None) => {}
        (a, b) => return Err(format!("t_hierarchical at {node:?}: {a:?} vs {b:?}")),
    }
    for (name, got, want) in floats {
        if !close(got, want) {
            return Err(format!("{name} at {node:?}: engine {got}, naive {want}"));
        }
    }
    let (_, v) = ev.property_vectors(node).map_err(|e| e.to_string())?;
    let vectors_close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| close(*x, *y));
    if v.p_equiv != want.p_equiv
        || v.p_sens != want.p_sens
        || !vectors_close(&v.p_glm, &want.p_glm)
        || !vectors_close(&v.p_risk, &want.p_risk)
    {
        return Err(format!(
            "property vectors at {node:?} differ from the naive ones"
        ));
    }
    if v.p_equiv.iter().sum::<u64>() != direct.s_k {
        return Err(format!("S_k at {node:?} is not the sum of P_equiv"));
    }
    Ok(())
}
