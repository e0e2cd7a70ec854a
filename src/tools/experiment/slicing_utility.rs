//! The IJERT 2013 utility experiment (after Li et al.): how well classifiers learned from an
//! anonymized adult table predict a target on real tuples. For each of 10 cross-validation folds,
//! the training part is anonymized (generalization to an l-diverse node of the engine,
//! bucketization, slicing, overlapping slicing), tuples are rebuilt by linking the i-th entries of
//! the permuted columns of each bucket (5 seeds), naive Bayes and a decision tree are trained on
//! them and tested on the fold's original tuples. Targets occupation (the sensitive attribute) and
//! education (a QI); l ∈ {5, 8, 10}; both diversities (SPEC §6 per-tuple, and distinct values per
//! bucket, the weaker notion the paper's figures correspond to).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::UInt32Array;
use arrow::compute::take;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use serde::Serialize;

use super::classifiers::{
    Classifier, DecisionTree, Domains, Examples, NaiveBayes, accuracy, folds,
};
use crate::encode::Dataset;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::indices::NodeIndices;
use crate::io::{AtomicFile, Table, read_table};
use crate::profile::Profile;
use crate::slicing::diversity::{Diversity, partition_tuples_with};
use crate::slicing::release::permutations;
use crate::slicing::table::{SliceAttribute, SliceLayout, SliceMode};
use crate::slicing::{PartitionChoice, SliceOptions, slice_attributes, slice_layout};

/// The anonymization methods compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Method {
    /// The original training tuples.
    Original,
    /// Full-domain generalization to the engine's l-diverse node with the least GLM.
    Generalization,
    /// Bucketization.
    Bucketization,
    /// Slicing (chi_matrix pairs of QIs, the sensitive attribute alone).
    Slicing,
    /// Overlapping slicing (the sensitive attribute in every column).
    Overlapping,
}

impl Method {
    /// Display name.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Original => "original",
            Method::Generalization => "generalization",
            Method::Bucketization => "bucketization",
            Method::Slicing => "slicing",
            Method::Overlapping => "overlapping slicing",
        }
    }
}

/// Settings of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct UtilityConfig {
    /// The l values.
    pub ls: Vec<u64>,
    /// Cross-validation folds.
    pub folds: usize,
    /// Random linkings per fold.
    pub repetitions: u64,
    /// Seed of the folds.
    pub seed: u64,
    /// Diversities to run.
    pub diversities: Vec<Diversity>,
    /// Targets (attribute names).
    pub targets: Vec<String>,
}

impl Default for UtilityConfig {
    fn default() -> Self {
        UtilityConfig {
            ls: vec![5, 8, 10],
            folds: 10,
            repetitions: 5,
            seed: 1,
            diversities: vec![Diversity::Tuple, Diversity::Distinct],
            targets: vec!["occupation".into(), "education".into()],
        }
    }
}

/// One cell of the result table.
#[derive(Debug, Clone, Serialize)]
pub struct UtilityCell {
    /// Target attribute.
    pub target: String,
    /// Method.
    pub method: &'static str,
    /// `tuple`, `distinct`, or `-` for the original data.
    pub diversity: &'static str,
    /// l (0 for the original data).
    pub l: u64,
    /// Mean accuracy of naive Bayes over folds and linkings (None: infeasible).
    pub naive_bayes: Option<f64>,
    /// Mean accuracy of the decision tree.
    pub decision_tree: Option<f64>,
    /// Largest p(t,s) of the releases (mean over folds), for the sliced methods.
    pub max_p: Option<f64>,
    /// Why there is no release, when infeasible.
    pub infeasible: Option<String>,
}

/// Accuracies of one (method, diversity, l) in one fold, or the reason it is infeasible.
type FoldOutcome = std::result::Result<(f64, f64, Option<f64>), String>;

/// Trains both classifiers and tests them.
fn score(train: &Examples, test: &Examples, d: &Domains) -> (f64, f64) {
    let nb = NaiveBayes::train(train, d);
    let dt = DecisionTree::train(train, d);
    (accuracy(&nb as &dyn Classifier, test), accuracy(&dt, test))
}

/// Rows `rows` of a table as a new table.
fn subset(table: &Table, rows: &[u32]) -> Result<Table> {
    let batch = arrow::compute::concat_batches(&table.schema, &table.batches)?;
    let idx = UInt32Array::from(rows.to_vec());
    let columns = batch
        .columns()
        .iter()
        .map(|c| take(c, &idx, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Table {
        path: table.path.clone(),
        schema: table.schema.clone(),
        batches: vec![RecordBatch::try_new(table.schema.clone(), columns)?],
    })
}

/// Examples from attribute codes of `rows`: features = every attribute but the target.
fn examples(attrs: &[SliceAttribute], target: usize, rows: &[u32]) -> Examples {
    Examples {
        features: (0..attrs.len())
            .filter(|&a| a != target)
            .map(|a| rows.iter().map(|&r| attrs[a].codes[r as usize]).collect())
            .collect(),
        target: rows
            .iter()
            .map(|&r| attrs[target].codes[r as usize])
            .collect(),
    }
}

/// The tuples rebuilt from a sliced release (`perms[c][i]`: source row of entry i of column c):
/// each attribute from its column; the sensitive attribute from `s_column`.
fn linked(layout: &SliceLayout, perms: &[Vec<u32>], target: usize, s_column: usize) -> Examples {
    let n = perms[0].len();
    let column_of = |a: usize| -> usize {
        if a == layout.sensitive {
            return s_column;
        }
        layout
            .columns
            .iter()
            .position(|c| c.contains(&a))
            .unwrap_or(0)
    };
    let value = |a: usize, i: usize| layout.attributes[a].codes[perms[column_of(a)][i] as usize];
    Examples {
        features: (0..layout.attributes.len())
            .filter(|&a| a != target)
            .map(|a| (0..n).map(|i| value(a, i)).collect())
            .collect(),
        target: (0..n).map(|i| value(target, i)).collect(),
    }
}

fn append(into: &mut Examples, more: Examples) {
    if into.features.is_empty() {
        *into = more;
        return;
    }
    for (f, m) in into.features.iter_mut().zip(more.features) {
        f.extend(m);
    }
    into.target.extend(more.target);
}

/// One sliced method in one fold: tuple partition of the training rows, then each linking.
#[allow(clippy::too_many_arguments)]
fn sliced_fold(
    train_attrs: Vec<SliceAttribute>,
    mode: SliceMode,
    diversity: Diversity,
    l: u64,
    target: usize,
    test: &Examples,
    domains: &Domains,
    repetitions: u64,
) -> FoldOutcome {
    let options = SliceOptions {
        l,
        mode,
        partition: PartitionChoice::Chi,
        seed: 0,
        generalize: None,
        diversity,
    };
    let layout = slice_layout(train_attrs, &options).map_err(|e| e.to_string())?;
    let tp = partition_tuples_with(&layout, l, diversity).map_err(|e| e.to_string())?;
    let (mut nb, mut dt) = (0.0, 0.0);
    for rep in 0..repetitions {
        let perms = permutations(&layout, &tp.buckets, rep);
        // The target's exact pairing with the sensitive value is in the column holding the
        // target; when the target is the sensitive attribute, every column holding it gives
        // examples (overlapping slicing: one per column).
        let s_columns: Vec<usize> = if target == layout.sensitive {
            layout.sensitive_columns.clone()
        } else {
            let c = layout
                .columns
                .iter()
                .position(|c| c.contains(&target))
                .unwrap_or(0);
            vec![if layout.columns[c].contains(&layout.sensitive) {
                c
            } else {
                layout.sensitive_columns[0]
            }]
        };
        let mut train = Examples::default();
        for &c in &s_columns {
            append(&mut train, linked(&layout, &perms, target, c));
        }
        let (a, b) = score(&train, test, domains);
        nb += a;
        dt += b;
    }
    let r = repetitions as f64;
    Ok((nb / r, dt / r, Some(tp.disclosure.max_p)))
}

/// Generalization in one fold: the engine's lattice over the training rows; the node with the
/// least GLM among those meeting the diversity; suppressed rows dropped; QIs as group codes (the
/// test tuples generalized the same way).
#[allow(clippy::too_many_arguments)]
fn generalized_fold(
    ev: &Evaluator,
    lattice: &[NodeIndices],
    full: &Dataset,
    attrs: &[SliceAttribute],
    train_rows: &[u32],
    test_rows: &[u32],
    diversity: Diversity,
    l: u64,
    target: usize,
) -> FoldOutcome {
    let meets = |ix: &NodeIndices| match diversity {
        Diversity::Tuple => ix.l_probabilistic >= l as f64 - 1e-9,
        Diversity::Distinct => ix.l_distinct >= l,
    };
    let best = lattice
        .iter()
        .filter(|ix| meets(ix))
        .min_by(|a, b| {
            a.glm.total_cmp(&b.glm).then_with(|| {
                let h = |n: &[u8]| n.iter().map(|&x| x as u32).sum::<u32>();
                (h(&a.node), &a.node).cmp(&(h(&b.node), &b.node))
            })
        })
        .ok_or_else(|| {
            format!(
                "no node of the lattice is {l}-diverse ({})",
                match diversity {
                    Diversity::Tuple => "probabilistic: every class's most frequent value ≤ 1/l",
                    Diversity::Distinct => "distinct",
                }
            )
        })?;
    let node = best.node.clone();
    let suppressed = ev
        .evaluate_rows(&node)
        .map_err(|e| e.to_string())?
        .suppressed;
    let q = full.qis.len();
    // Group code of every row of the full table at the node, per QI.
    let group = |d: usize, r: u32| {
        let leaf = full.qis[d].codes.value(r as usize);
        full.qis[d].hierarchy.level(node[d]).group_of_leaf[leaf as usize]
    };
    let build = |rows: &[u32]| -> Examples {
        // Predictors at the node's levels; the target keeps its original values so that every
        // method predicts the same classes.
        let value = |a: usize, r: u32| {
            if a < q && a != target {
                group(a, r)
            } else {
                attrs[a].codes[r as usize]
            }
        };
        Examples {
            features: (0..attrs.len())
                .filter(|&a| a != target)
                .map(|a| rows.iter().map(|&r| value(a, r)).collect())
                .collect(),
            target: rows.iter().map(|&r| value(target, r)).collect(),
        }
    };
    let kept: Vec<u32> = train_rows
        .iter()
        .enumerate()
        .filter(|(i, _)| !suppressed.contains(*i as u32))
        .map(|(_, &r)| r)
        .collect();
    let domains = Domains {
        features: (0..attrs.len())
            .filter(|&a| a != target)
            .map(|a| {
                if a < q {
                    full.qis[a].hierarchy.level(node[a]).labels.len()
                } else {
                    attrs[a].domain()
                }
            })
            .collect(),
        classes: attrs[target].domain(),
    };
    let (nb, dt) = score(&build(&kept), &build(test_rows), &domains);
    Ok((nb, dt, None))
}

/// Runs the experiment on the profile's data (adult: 8 QIs, sensitive occupation).
pub fn run(
    profile: &Profile,
    cfg: &UtilityConfig,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<UtilityCell>> {
    let table = read_table(&profile.input, profile.delimiter)?;
    let attrs = slice_attributes(profile, &table, None)?;
    let full = Dataset::from_table(profile, table.clone())?;
    let n = table.num_rows();
    let targets: Vec<usize> = cfg
        .targets
        .iter()
        .map(|t| {
            attrs.iter().position(|a| &a.name == t).ok_or_else(|| {
                PbgError::argument(
                    "targets",
                    format!("`{t}` is not a QI or the sensitive attribute"),
                )
            })
        })
        .collect::<Result<_>>()?;
    let parts = folds(n, cfg.folds, cfg.seed);
    let methods = [
        Method::Generalization,
        Method::Bucketization,
        Method::Slicing,
        Method::Overlapping,
    ];
    // Per fold: every (target, method, diversity, l) outcome, plus the original data per target.
    type Key = (usize, Method, Option<Diversity>, u64);
    let per_fold: Vec<Vec<(Key, FoldOutcome)>> = parts
        .par_iter()
        .map(|test_rows| -> Result<Vec<(Key, FoldOutcome)>> {
            let mut is_test = vec![false; n];
            for &r in test_rows {
                is_test[r as usize] = true;
            }
            let train_rows: Vec<u32> = (0..n as u32).filter(|&r| !is_test[r as usize]).collect();
            let train_table = subset(&table, &train_rows)?;
            let ev = Evaluator::new(Arc::new(Dataset::from_table(profile, train_table)?))?;
            let lattice = ev.evaluate_lattice(&|| {})?;
            let train_attrs: Vec<SliceAttribute> = attrs
                .iter()
                .map(|a| SliceAttribute {
                    name: a.name.clone(),
                    codes: train_rows.iter().map(|&r| a.codes[r as usize]).collect(),
                    labels: a.labels.clone(),
                })
                .collect();
            let mut out = Vec::new();
            for &t in &targets {
                let domains = Domains {
                    features: (0..attrs.len())
                        .filter(|&a| a != t)
                        .map(|a| attrs[a].domain())
                        .collect(),
                    classes: attrs[t].domain(),
                };
                let test = examples(&attrs, t, test_rows);
                let (nb, dt) = score(&examples(&attrs, t, &train_rows), &test, &domains);
                out.push(((t, Method::Original, None, 0), Ok((nb, dt, None))));
                for &d in &cfg.diversities {
                    for &l in &cfg.ls {
                        for m in methods {
                            let o = match m {
                                Method::Generalization => generalized_fold(
                                    &ev,
                                    &lattice,
                                    &full,
                                    &attrs,
                                    &train_rows,
                                    test_rows,
                                    d,
                                    l,
                                    t,
                                ),
                                Method::Bucketization | Method::Slicing | Method::Overlapping => {
                                    let mode = match m {
                                        Method::Bucketization => SliceMode::Bucketization,
                                        Method::Slicing => SliceMode::Slicing,
                                        _ => SliceMode::Overlapping,
                                    };
                                    // Attribute codes are local to the training rows.
                                    sliced_fold(
                                        train_attrs.clone(),
                                        mode,
                                        d,
                                        l,
                                        t,
                                        &test,
                                        &domains,
                                        cfg.repetitions,
                                    )
                                }
                                Method::Original => continue,
                            };
                            out.push(((t, m, Some(d), l), o));
                        }
                    }
                }
            }
            progress();
            Ok(out)
        })
        .collect::<Result<_>>()?;
    // Average over folds; a setting infeasible in any fold is reported as infeasible.
    let mut cells = Vec::new();
    let keys: Vec<Key> = per_fold[0].iter().map(|(k, _)| *k).collect();
    for (i, key) in keys.iter().enumerate() {
        let outcomes: Vec<&FoldOutcome> = per_fold.iter().map(|f| &f[i].1).collect();
        let (t, m, d, l) = *key;
        let mut cell = UtilityCell {
            target: attrs[t].name.clone(),
            method: m.name(),
            diversity: d.map_or("-", |d| d.name()),
            l,
            naive_bayes: None,
            decision_tree: None,
            max_p: None,
            infeasible: None,
        };
        match outcomes.iter().find_map(|o| o.as_ref().err()) {
            Some(reason) => cell.infeasible = Some(reason.clone()),
            None => {
                let k = outcomes.len() as f64;
                let ok: Vec<&(f64, f64, Option<f64>)> =
                    outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
                cell.naive_bayes = Some(ok.iter().map(|o| o.0).sum::<f64>() / k);
                cell.decision_tree = Some(ok.iter().map(|o| o.1).sum::<f64>() / k);
                let ps: Vec<f64> = ok.iter().filter_map(|o| o.2).collect();
                if !ps.is_empty() {
                    cell.max_p = Some(ps.iter().sum::<f64>() / ps.len() as f64);
                }
            }
        }
        cells.push(cell);
    }
    Ok(cells)
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |x| format!("{:.1}", 100.0 * x))
}

/// The results as Markdown: one table per target and diversity.
pub fn markdown(cells: &[UtilityCell], cfg: &UtilityConfig) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Slicing utility (IJERT 2013 / Li et al.), adult, {} folds × {} linkings\n\nAccuracy (%) of naive Bayes / decision tree trained on the anonymized training part and tested on the original test tuples; max p = the largest p(t,s) the sliced releases leave (mean over folds). – : no release (see the notes).\n",
        cfg.folds, cfg.repetitions
    );
    for t in &cfg.targets {
        let original = cells
            .iter()
            .find(|c| &c.target == t && c.method == "original");
        for d in &cfg.diversities {
            let _ = writeln!(
                s,
                "## Target {t}, diversity `{}`{}\n",
                d.name(),
                original.map_or(String::new(), |o| format!(
                    " (original data: NB {} / DT {})",
                    pct(o.naive_bayes),
                    pct(o.decision_tree)
                ))
            );
            let mut header = "| method |".to_string();
            let mut rule = "|---|".to_string();
            for l in &cfg.ls {
                let _ = write!(header, " l = {l}: NB / DT (max p) |");
                rule.push_str("---|");
            }
            let _ = writeln!(s, "{header}\n{rule}");
            for m in [
                "generalization",
                "bucketization",
                "slicing",
                "overlapping slicing",
            ] {
                let mut row = format!("| {m} |");
                for &l in &cfg.ls {
                    let c = cells.iter().find(|c| {
                        &c.target == t && c.method == m && c.diversity == d.name() && c.l == l
                    });
                    let text = match c {
                        Some(c) if c.infeasible.is_none() => format!(
                            " {} / {}{} |",
                            pct(c.naive_bayes),
                            pct(c.decision_tree),
                            c.max_p.map_or(String::new(), |p| format!(" ({p:.2})"))
                        ),
                        _ => " – |".to_string(),
                    };
                    row.push_str(&text);
                }
                let _ = writeln!(s, "{row}");
            }
            let _ = writeln!(s);
        }
    }
    let notes: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            c.infeasible.as_ref().map(|r| {
                format!(
                    "- {} / {} / `{}` / l = {}: {r}",
                    c.target, c.method, c.diversity, c.l
                )
            })
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(s, "## Notes\n\n{}", notes.join("\n"));
    }
    s
}

/// The reports' names.
const REPORTS: [&str; 3] = [
    "slicing-utility.md",
    "slicing-utility.csv",
    "slicing-utility.svg",
];

/// Refuses a report directory where any of the reports' names is a named pipe or a device. Run
/// before the experiment's work (the CLI does) and again by [`write_reports`] before its first
/// file (no partial set).
pub fn refuse_special_targets(dir: &Path) -> Result<()> {
    for name in REPORTS {
        crate::io::refuse_special_target(&dir.join(name))?;
    }
    Ok(())
}

/// Writes `slicing-utility.md`, `slicing-utility.csv` and `slicing-utility.svg` (accuracy on the
/// first target at the first l, per method and classifier) into `dir`.
pub fn write_reports(
    cells: &[UtilityCell],
    cfg: &UtilityConfig,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| PbgError::io(dir, e))?;
    refuse_special_targets(dir)?;
    let [md, csv, svg] = REPORTS.map(|name| dir.join(name));
    let write = |path: &Path, text: &str| -> Result<()> {
        let f = AtomicFile::new(path)?;
        std::fs::write(f.temp_path(), text).map_err(|e| PbgError::io(path, e))?;
        f.commit()
    };
    write(&md, &markdown(cells, cfg))?;
    let mut c =
        "target,method,diversity,l,naive_bayes,decision_tree,max_p,infeasible\n".to_string();
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
    for x in cells {
        let _ = writeln!(
            c,
            "{},{},{},{},{},{},{},\"{}\"",
            x.target,
            x.method,
            x.diversity,
            x.l,
            opt(x.naive_bayes),
            opt(x.decision_tree),
            opt(x.max_p),
            x.infeasible.clone().unwrap_or_default().replace('"', "'")
        );
    }
    write(&csv, &c)?;
    let t = cfg.targets.first().cloned().unwrap_or_default();
    let l = cfg.ls.first().copied().unwrap_or(0);
    let methods = [
        "original",
        "generalization",
        "bucketization",
        "slicing",
        "overlapping slicing",
    ];
    let mut series = Vec::new();
    for d in &cfg.diversities {
        for (name, pick) in [("NB", 0), ("DT", 1)] {
            let values: Vec<Option<f64>> = methods
                .iter()
                .map(|m| {
                    cells
                        .iter()
                        .find(|c| {
                            c.target == t
                                && &c.method == m
                                && (c.method == "original" || (c.diversity == d.name() && c.l == l))
                        })
                        .and_then(|c| {
                            if pick == 0 {
                                c.naive_bayes
                            } else {
                                c.decision_tree
                            }
                        })
                        .map(|v| 100.0 * v)
                })
                .collect();
            series.push((format!("{name}, {}", d.name()), values));
        }
    }
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    let y_max = ((top / 10.0).ceil() * 10.0 + 10.0).min(100.0);
    crate::plot::bars_svg(
        &svg,
        &format!("Accuracy on {t}, l = {l} (adult, {}-fold CV)", cfg.folds),
        "accuracy (%)",
        &methods.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
        &series,
        y_max,
    )?;
    Ok(vec![md, csv, svg])
}
