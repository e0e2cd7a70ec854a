//! Node choice without a human: requirements on a node's indices (`k>=5,l>=3`) and a rule that
//! picks one node among those meeting them: minimize or maximize one index, or one of the EDBT
//! comparators (LEX with significances, GOAL with a goal vector, WTD with weights) over the Pareto
//! front of the feasible nodes.

use std::cmp::Ordering;

use serde::Serialize;

use crate::comparators;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::indices::NodeIndices;
use crate::lattice::Node;
use crate::objective::Objective;
use crate::release::ReleaseCheck;
use crate::search::{Point, pareto_front};

/// An index a requirement or a choice can name: any of [`crate::indices::INDICES`].
pub use crate::indices::Index as Measure;
pub use crate::requirement::{Op, Requirement};

impl Measure {
    /// The value recomputed from a release file, when a release determines it: with its input
    /// (the check names a node) every index but S_k, S_l, CM and non-uniform entropy; alone, the
    /// indices of its classes only.
    pub fn of_check(&self, c: &ReleaseCheck) -> Option<f64> {
        let with_input = !c.node.is_empty();
        let d = c.distances.filter(|_| with_input);
        let released = |v: f64| Some(v).filter(|_| c.classes > 0).or(Some(0.0));
        Some(match self {
            Measure::K => c.k as f64,
            Measure::L => c.l_distinct as f64,
            Measure::LEntropy => c.l_entropy,
            Measure::LProbabilistic => c.l_probabilistic,
            Measure::Classes => c.classes as f64,
            Measure::RiskProsecutor => released(1.0 / c.k as f64)?,
            Measure::RiskAverage => released(c.classes as f64 / c.rows as f64)?,
            Measure::Aecs => c.rows as f64 / c.classes as f64,
            Measure::TEqual => d?.t_equal,
            Measure::TOrdered => d?.t_ordered,
            Measure::THierarchical => Some(d?.t_hierarchical).filter(|v| !v.is_nan())?,
            Measure::Beta => d?.beta,
            Measure::DeltaDisclosure => d?.delta,
            Measure::Suppressed if with_input => c.suppressed as f64,
            Measure::Glm if with_input => c.glm,
            Measure::Uniques if with_input => c.unique_rows as f64 / c.tuples as f64,
            Measure::Discernibility if with_input => {
                (c.sum_size_sq + c.suppressed * c.tuples) as f64
            }
            Measure::Precision if with_input => c.precision,
            Measure::Height if with_input => c.node.iter().map(|&l| l as f64).sum(),
            _ => return None,
        })
    }

    /// The names of the indices [`Self::of_check`] recomputes from a release, with its input or
    /// alone (for messages).
    pub fn checkable(with_input: bool) -> String {
        let probe = ReleaseCheck::probe(with_input);
        crate::indices::INDICES
            .iter()
            .filter(|i| i.index.of_check(&probe).is_some())
            .map(|i| i.index.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One requirement judged on a release: the value and whether it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The requirement as text.
    pub requirement: String,
    /// The index's value for the release.
    pub value: f64,
    /// Whether the requirement holds.
    pub holds: bool,
}

/// Judges `require` on a checked release. With its input (`engine`: the engine's indices of the
/// node the release was confirmed to be exactly the release of) the engine's value is used, so
/// that `anonymize` and `verify` decide a bound at the same bits; alone, the values recomputed
/// from the release. Fails naming an index a release does not determine.
pub fn judge(
    require: &[Requirement],
    check: &ReleaseCheck,
    engine: Option<&NodeIndices>,
) -> Result<Vec<Judgement>> {
    let with_input = engine.is_some();
    require
        .iter()
        .map(|r| {
            let value = r
                .measure
                .of_check(check)
                .map(|v| engine.map_or(v, |e| r.measure.of(e)))
                .ok_or_else(|| {
                    let without = if with_input { "" } else { " without its input" };
                    PbgError::argument(
                        "require",
                        format!(
                            "`{}` cannot be recomputed from a release{without} (use {})",
                            r.measure.name(),
                            Measure::checkable(with_input)
                        ),
                    )
                })?;
            Ok(Judgement {
                requirement: r.text(),
                value,
                holds: r.holds(value),
            })
        })
        .collect()
}

/// How one node is chosen among the feasible ones.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// The smallest value of an index.
    Minimize(Measure),
    /// The largest value of an index.
    Maximize(Measure),
    /// LEX over the front: objectives in order of importance, each with a significance.
    Lex {
        /// Objectives, most important first.
        objectives: Vec<Objective>,
        /// Differences up to this (raw units) do not count.
        significance: Vec<f64>,
    },
    /// GOAL over the front: the node closest to a goal vector (objectives min-max normalized).
    Goal {
        /// The objectives.
        objectives: Vec<Objective>,
        /// The goal, in raw units.
        goal: Vec<f64>,
    },
    /// WTD over the front: the largest weighted sum of normalized, oriented objectives.
    Wtd {
        /// The objectives.
        objectives: Vec<Objective>,
        /// One weight per objective.
        weights: Vec<f64>,
    },
}

/// Requirements plus a choice.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Every requirement must hold.
    pub require: Vec<Requirement>,
    /// How to pick among the nodes that meet them.
    pub choice: Choice,
    /// Evaluations the pruned pick may make (None: [`crate::optimal::Budget::for_rows`]).
    pub evaluations: Option<usize>,
}

/// The outcome of a pick.
#[derive(Debug, Clone, Serialize)]
pub struct Picked {
    /// The chosen node.
    pub node: Node,
    /// Nodes evaluated.
    pub evaluated: usize,
    /// Of those, the evaluations of the pick without suppression that a pruned search stopped
    /// under a suppression limit makes, within a budget of its own (0 otherwise).
    pub evaluated_without_suppression: usize,
    /// Nodes meeting every requirement (known after an exhaustive pick only).
    pub feasible: Option<usize>,
    /// Size of the front the comparator chose from (comparator policies).
    pub front: Option<usize>,
    /// `pruned` (the optimal search of [`crate::optimal`]) or `exhaustive` (every node).
    pub search: &'static str,
    /// Whether the node is proven the policy's best (false only when a pruned search hit its
    /// budget; the node then meets the requirements but may not have the least loss).
    pub optimal: bool,
    /// A lower bound of the least GLM meeting the requirements (pruned picks): the pick's GLM
    /// when it is optimal, else how far from optimal it can be.
    pub glm_lower_bound: Option<f64>,
    /// Why the pick searched as it did.
    pub note: String,
}

/// How far above `lower` (> 0) `glm` is, in percent.
fn gap_percent(glm: f64, lower: f64) -> f64 {
    (glm / lower - 1.0) * 100.0
}

/// Fewer levels in total first, then lexicographically: the tie-break between equal nodes.
pub(crate) fn finer(a: &[u8], b: &[u8]) -> Ordering {
    let sa: u32 = a.iter().map(|&x| x as u32).sum();
    let sb: u32 = b.iter().map(|&x| x as u32).sum();
    sa.cmp(&sb).then_with(|| a.cmp(b))
}

/// Min-max normalization of one objective over points, oriented so that 1 is best.
fn normalized(points: &[Point], objectives: &[Objective]) -> Vec<Vec<f64>> {
    let m = objectives.len();
    let mut lo = vec![f64::INFINITY; m];
    let mut hi = vec![f64::NEG_INFINITY; m];
    let oriented: Vec<Vec<f64>> = points.iter().map(|p| p.oriented(objectives)).collect();
    for o in &oriented {
        for i in 0..m {
            lo[i] = lo[i].min(o[i]);
            hi[i] = hi[i].max(o[i]);
        }
    }
    oriented
        .into_iter()
        .map(|o| {
            (0..m)
                .map(|i| {
                    if hi[i] > lo[i] {
                        (o[i] - lo[i]) / (hi[i] - lo[i])
                    } else {
                        1.0
                    }
                })
                .collect()
        })
        .collect()
}

/// Picks the node the policy prefers: for least GLM under monotone requirements by the pruned
/// optimal search ([`crate::optimal`]), otherwise by evaluating the whole lattice (roll-ups).
pub fn pick(ev: &Evaluator, policy: &Policy) -> Result<Picked> {
    // The cheapest tables that still give every index the policy reads exactly.
    let mut measures: Vec<Measure> = policy.require.iter().map(|r| r.measure).collect();
    let mut objectives: Vec<Objective> = Vec::new();
    match &policy.choice {
        Choice::Minimize(m) | Choice::Maximize(m) => measures.push(*m),
        Choice::Lex { objectives: o, .. }
        | Choice::Goal { objectives: o, .. }
        | Choice::Wtd { objectives: o, .. } => objectives.extend(o.iter().copied()),
    }
    let present = crate::indices::Present::of(ev.dataset());
    for m in measures.iter().chain(&objectives) {
        m.check_defined(present)?;
    }
    let needed: Vec<Measure> = measures.iter().chain(&objectives).copied().collect();
    let ds = ev.dataset();
    let rule = ev.suppression_rule();
    let non_monotone: Vec<String> = policy
        .require
        .iter()
        .filter(|r| !r.is_monotone(rule, ev.suppression_limit()))
        .map(Requirement::text)
        .collect();
    let required: Vec<String> = policy.require.iter().map(Requirement::text).collect();
    let lattice = ev.lattice();
    if matches!(policy.choice, Choice::Minimize(Measure::Glm)) && non_monotone.is_empty() {
        let light = ev.lightest(&needed)?;
        let budget = policy.evaluations.map_or_else(
            || crate::optimal::Budget::for_rows(ds.num_rows()),
            crate::optimal::Budget::evaluations,
        );
        return match crate::optimal::pick_min_glm_within(&light, &policy.require, budget)? {
            None => Err(PbgError::argument(
                "require",
                format!(
                    "no node of the {}-node lattice meets {} (not even the top node)",
                    lattice.size_text(),
                    required.join(",")
                ),
            )),
            Some(p) => Ok(Picked {
                node: p.node,
                evaluated: p.evaluated,
                evaluated_without_suppression: p.evaluated_without_suppression,
                feasible: None,
                front: None,
                search: "pruned",
                optimal: p.optimal,
                glm_lower_bound: Some(p.lower_bound),
                note: if p.optimal {
                    format!(
                        "least GLM under monotone requirements: {} of {} nodes evaluated, {} visited",
                        p.evaluated,
                        lattice.size_text(),
                        p.visited
                    )
                } else {
                    let stop = p
                        .stopped_by
                        .map_or_else(String::new, |l| l.describe(budget));
                    let raise = if p.stopped_by == Some(crate::optimal::Limit::QueueBytes) {
                        "its queue of nodes to visit filled the memory it may use"
                    } else {
                        "raise it with --pick-evaluations"
                    };
                    let local = if p.local_optimum {
                        "no predecessor that meets them loses less"
                    } else {
                        "the greedy descent from it ran out of evaluations before a local optimum"
                    };
                    let gap = if p.lower_bound > 0.0 {
                        format!(
                            "its GLM {} is at most {:.2} % above the optimum (no node meeting them has a GLM below {})",
                            p.glm,
                            gap_percent(p.glm, p.lower_bound),
                            p.lower_bound
                        )
                    } else {
                        format!("its GLM is {}; no lower bound above 0 was proven", p.glm)
                    };
                    let without = match p.evaluated_without_suppression {
                        0 => String::new(),
                        n => format!(
                            ", and {n} by the pick without suppression (a candidate within the same budget again)"
                        ),
                    };
                    format!(
                        "the pruned search stopped at its limit of {stop} ({raise}; {} nodes visited, {} evaluated with the greedy descent from its best node{without}): the node meets the requirements and {local}; {gap}",
                        p.visited,
                        p.evaluated - p.evaluated_without_suppression
                    )
                },
            }),
        };
    }
    let note = if !matches!(policy.choice, Choice::Minimize(Measure::Glm)) {
        "every node evaluated: only --minimize glm is searched with pruning".to_string()
    } else {
        format!(
            "every node evaluated: {} not monotone under this suppression rule and limit",
            non_monotone.join(",")
        )
    };
    if policy.evaluations.is_some() {
        return Err(PbgError::argument(
            "pick-evaluations",
            format!("budgets the pruned pick, and this pick cannot prune ({note})"),
        ));
    }
    if lattice.size_exact() > crate::lattice::MAX_ENUMERATED {
        return Err(PbgError::argument(
            "pick",
            format!(
                "the lattice has {} nodes, too many to evaluate each, and the pick cannot prune ({note}); require only k>=, l>= (entropy l without suppression) and minimize glm, or search with PBG-EA (`pbg search --algorithm ea`)",
                lattice.size_text()
            ),
        ));
    }
    let all = ev.lightest(&needed)?.evaluate_lattice(&|| {})?;
    let feasible: Vec<&NodeIndices> = all
        .iter()
        .filter(|ix| policy.require.iter().all(|r| r.holds(r.measure.of(ix))))
        .collect();
    if feasible.is_empty() {
        return Err(PbgError::argument(
            "require",
            format!(
                "no node of the {}-node lattice meets {}",
                all.len(),
                required.join(",")
            ),
        ));
    }
    let by_measure = |m: Measure, max: bool| {
        let best = feasible
            .iter()
            .min_by(|a, b| {
                let (va, vb) = (m.of(a), m.of(b));
                let o = if max {
                    vb.total_cmp(&va)
                } else {
                    va.total_cmp(&vb)
                };
                o.then_with(|| finer(&a.node, &b.node))
            })
            .map(|ix| ix.node.clone());
        best.unwrap_or_default()
    };
    let (node, front) = match &policy.choice {
        Choice::Minimize(m) => (by_measure(*m, false), None),
        Choice::Maximize(m) => (by_measure(*m, true), None),
        Choice::Lex { objectives, .. }
        | Choice::Goal { objectives, .. }
        | Choice::Wtd { objectives, .. } => {
            let points: Vec<Point> = feasible
                .iter()
                .map(|ix| Point {
                    node: ix.node.clone(),
                    values: crate::objective::values(objectives, ix),
                })
                .collect();
            let mut front = pareto_front(points, objectives);
            front.sort_by(|a, b| finer(&a.node, &b.node));
            let best = match &policy.choice {
                Choice::Lex { significance, .. } => {
                    let order: Vec<usize> = (0..objectives.len()).collect();
                    front
                        .iter()
                        .reduce(|best, p| {
                            let o = comparators::lex(
                                &order,
                                significance,
                                &p.oriented(objectives),
                                &best.oriented(objectives),
                            );
                            if o == Ordering::Greater { p } else { best }
                        })
                        .map(|p| p.node.clone())
                }
                Choice::Wtd { weights, .. } => {
                    let norm = normalized(&front, objectives);
                    let mut best: Option<(f64, usize)> = None;
                    for (i, v) in norm.iter().enumerate() {
                        let s = comparators::wtd(weights, v);
                        if best.is_none_or(|(b, _)| s > b) {
                            best = Some((s, i));
                        }
                    }
                    best.map(|(_, i)| front[i].node.clone())
                }
                Choice::Goal { goal, .. } => {
                    // Normalize the goal with the same raw min-max as the front.
                    let m = objectives.len();
                    let mut lo = vec![f64::INFINITY; m];
                    let mut hi = vec![f64::NEG_INFINITY; m];
                    for p in &front {
                        for i in 0..m {
                            lo[i] = lo[i].min(p.values[i]);
                            hi[i] = hi[i].max(p.values[i]);
                        }
                    }
                    let scale = |i: usize, v: f64| {
                        if hi[i] > lo[i] {
                            (v - lo[i]) / (hi[i] - lo[i])
                        } else {
                            0.0
                        }
                    };
                    let g: Vec<f64> = goal.iter().enumerate().map(|(i, &v)| scale(i, v)).collect();
                    let mut best: Option<(f64, usize)> = None;
                    for (j, p) in front.iter().enumerate() {
                        let v: Vec<f64> = p
                            .values
                            .iter()
                            .enumerate()
                            .map(|(i, &x)| scale(i, x))
                            .collect();
                        let e = comparators::goal(&g, &v);
                        if best.is_none_or(|(b, _)| e < b) {
                            best = Some((e, j));
                        }
                    }
                    best.map(|(_, j)| front[j].node.clone())
                }
                _ => None,
            };
            (best.unwrap_or_default(), Some(front.len()))
        }
    };
    Ok(Picked {
        node,
        evaluated: all.len(),
        evaluated_without_suppression: 0,
        feasible: Some(feasible.len()),
        front,
        search: "exhaustive",
        optimal: true,
        glm_lower_bound: None,
        note,
    })
}

/// Parses a comma separated vector of numbers for `arg`, of length `n`.
fn numbers(text: &str, n: usize, arg: &str) -> Result<Vec<f64>> {
    let v = text
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<f64>()
                .map_err(|_| PbgError::argument(arg, format!("`{}` is not a number", s.trim())))
        })
        .collect::<Result<Vec<_>>>()?;
    if v.len() != n {
        return Err(PbgError::argument(
            arg,
            format!("{} values for {n} objectives", v.len()),
        ));
    }
    Ok(v)
}

/// The textual form of a policy, as the command line gives it.
#[derive(Debug, Clone, Default)]
pub struct PolicyText {
    /// `lex`, `goal`, `wtd`, or empty for minimize/maximize.
    pub comparator: Option<String>,
    /// `--require`.
    pub require: Option<String>,
    /// `--minimize`.
    pub minimize: Option<String>,
    /// `--maximize`.
    pub maximize: Option<String>,
    /// `--objectives` (comparators).
    pub objectives: Option<String>,
    /// `--significance` (LEX; default all zero).
    pub significance: Option<String>,
    /// `--goal` (GOAL).
    pub goal: Option<String>,
    /// `--weights` (WTD; default all one).
    pub weights: Option<String>,
    /// `--pick-evaluations`: the pruned pick's budget of evaluations.
    pub evaluations: Option<usize>,
}

impl Policy {
    /// Builds a policy from its textual form, checking that the parts fit together.
    pub fn parse(t: &PolicyText, present: crate::indices::Present) -> Result<Self> {
        let require = match &t.require {
            Some(r) => Requirement::parse_list(r)?,
            None => Vec::new(),
        };
        let need = |v: &Option<String>, arg: &str, what: &str| {
            v.clone()
                .ok_or_else(|| PbgError::argument(arg, format!("is required by {what}")))
        };
        let choice = match t
            .comparator
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("") | Some("measure") => match (&t.minimize, &t.maximize) {
                (Some(m), None) => Choice::Minimize(Measure::parse_as(m, "minimize")?),
                (None, Some(m)) => Choice::Maximize(Measure::parse_as(m, "maximize")?),
                (None, None) => Choice::Minimize(Measure::Glm),
                (Some(_), Some(_)) => {
                    return Err(PbgError::argument(
                        "minimize",
                        "give --minimize or --maximize, not both".to_string(),
                    ));
                }
            },
            Some(c @ ("lex" | "goal" | "wtd")) => {
                let objectives = Objective::parse_list(
                    &need(&t.objectives, "objectives", &format!("the {c} rule"))?,
                    present,
                )?;
                let n = objectives.len();
                match c {
                    "lex" => Choice::Lex {
                        significance: match &t.significance {
                            Some(s) => numbers(s, n, "significance")?,
                            None => vec![0.0; n],
                        },
                        objectives,
                    },
                    "goal" => Choice::Goal {
                        goal: numbers(&need(&t.goal, "goal", "the goal rule")?, n, "goal")?,
                        objectives,
                    },
                    _ => Choice::Wtd {
                        weights: match &t.weights {
                            Some(w) => numbers(w, n, "weights")?,
                            None => vec![1.0; n],
                        },
                        objectives,
                    },
                }
            }
            Some(other) => {
                return Err(PbgError::argument(
                    "pick",
                    format!(
                        "unknown rule `{other}` (use lex, goal or wtd, or none with --minimize/--maximize)"
                    ),
                ));
            }
        };
        // A pick with no privacy requirement (none, or only bounds the data as it is meets, such
        // as `k>=-5`, or that bound no privacy index, such as `suppressed<=300`) may pick the
        // bottom node — the data unchanged, released as if anonymized: the least loss, the most
        // classes, or a comparator's best on loss all do. Refuse rather than do that.
        if !require.iter().any(Requirement::protects) {
            let given: Vec<String> = require.iter().map(Requirement::text).collect();
            let why = if given.is_empty() {
                "without one".to_string()
            } else {
                format!(
                    "`{}` alone bounds no privacy index below what the data as it is may have, so",
                    given.join(",")
                )
            };
            return Err(PbgError::argument(
                "require",
                format!(
                    "a pick needs a privacy requirement some release can fail (k or an l above 1, a t distance, a risk or uniques below 1, or a bound on beta or delta, e.g. k>=10,l>=2): {why} the node picked may be the data as it is"
                ),
            ));
        }
        Ok(Policy {
            require,
            choice,
            evaluations: t.evaluations,
        })
    }
}
