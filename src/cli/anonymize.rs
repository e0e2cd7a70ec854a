//! `pbg anonymize <profile> (--node L1,.. | --pick [lex|goal|wtd] ...) --output FILE.csv|FILE.parquet`
//!
//! Two streaming passes over the input (class statistics, then the release), so the input may be
//! larger than memory; the release is checked from the written file before it is renamed.

use std::path::PathBuf;

use clap::Args;
use pbg::policy::{Policy, PolicyText, pick};
use pbg::release::anonymize_in;

use super::profile_args::ProfileArgs;

/// How a node is chosen (shared by `anonymize` and `verify`).
#[derive(Args, Debug, Default)]
pub struct PolicyArgs {
    /// Requirements on the node's indices, e.g. `k>=5,l>=3,suppressed<=300`.
    #[arg(long, value_name = "INDEX>=V,..")]
    pub require: Option<String>,
}

/// Arguments of `pbg anonymize`.
#[derive(Args, Debug)]
pub struct AnonymizeArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// The node to apply: one level per QI, in profile order.
    #[arg(long, value_name = "L1,L2,...", conflicts_with = "pick")]
    node: Option<String>,
    /// Choose the node automatically among those meeting --require: by --minimize/--maximize
    /// (default: minimize glm), or with a comparator over the front: lex, goal or wtd.
    #[arg(long, value_name = "RULE", num_args = 0..=1, default_missing_value = "measure")]
    pick: Option<String>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// With --pick: the index to minimize (k, l, l_entropy, suppressed, glm, cm, ...).
    #[arg(long, value_name = "INDEX", requires = "pick")]
    minimize: Option<String>,
    /// With --pick: the index to maximize.
    #[arg(long, value_name = "INDEX", requires = "pick")]
    maximize: Option<String>,
    /// With --pick lex|goal|wtd: the objectives, e.g. k,l,glm (LEX: most important first).
    #[arg(long, value_name = "O1,O2,..", requires = "pick")]
    objectives: Option<String>,
    /// With --pick lex: significance per objective (differences up to it do not count).
    #[arg(long, value_name = "E1,E2,..", requires = "pick")]
    significance: Option<String>,
    /// With --pick goal: the goal vector, in the objectives' units.
    #[arg(long, value_name = "G1,G2,..", requires = "pick")]
    goal: Option<String>,
    /// With --pick wtd: weights per objective (default all 1).
    #[arg(long, value_name = "W1,W2,..", requires = "pick")]
    weights: Option<String>,
    /// Which classes the suppression limit removes: `requirements` (default with --require: only
    /// the classes smaller than the required k) or `dbsec` (the papers' rule: the smallest
    /// classes, as many as the limit allows).
    #[arg(long, value_name = "RULE")]
    suppression_rule: Option<String>,
    /// The release file (.csv or .parquet); written to a temporary file, verified, then renamed.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Also write a self-contained HTML report of the release (for a privacy officer).
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
}

/// The suppression rule of a run: `--suppression-rule`, by default `requirements` when there are
/// requirements and `dbsec` otherwise; the requirement rule's k is the required one.
pub fn suppression_rule(
    flag: Option<&str>,
    require: Option<&str>,
) -> anyhow::Result<pbg::suppression::SuppressionRule> {
    use pbg::suppression::SuppressionRule;
    let requirements = match require {
        Some(r) => pbg::policy::Requirement::parse_list(r)?,
        None => Vec::new(),
    };
    let k = requirements
        .iter()
        // Lower bounds on k decide what to suppress; an upper bound does not.
        .filter(|r| {
            r.measure == pbg::policy::Measure::K
                && matches!(
                    r.op,
                    pbg::policy::Op::Ge | pbg::policy::Op::Gt | pbg::policy::Op::Eq
                )
        })
        .map(|r| match r.op {
            pbg::policy::Op::Gt => r.value.floor() as u64 + 1,
            _ => r.value.ceil().max(1.0) as u64,
        })
        .max()
        .unwrap_or(1);
    match flag {
        Some("dbsec") => Ok(SuppressionRule::Dbsec),
        Some("requirements") => Ok(SuppressionRule::Requirements { k }),
        Some(other) => {
            anyhow::bail!("--suppression-rule: unknown rule `{other}` (use requirements or dbsec)")
        }
        None if require.is_some() => Ok(SuppressionRule::Requirements { k }),
        None => Ok(SuppressionRule::Dbsec),
    }
}

/// Runs `pbg anonymize` and prints its JSON report.
pub fn run(a: AnonymizeArgs) -> anyhow::Result<()> {
    run_mode(a, true)
}

/// Runs `pbg report`: the same choice of node, no release; `--output` is the HTML page.
pub fn run_report(mut a: AnonymizeArgs) -> anyhow::Result<()> {
    if a.report.is_some() {
        anyhow::bail!("pbg report writes the page to --output; --report belongs to pbg anonymize");
    }
    a.report = Some(a.output.clone());
    run_mode(a, false)
}

fn run_mode(a: AnonymizeArgs, release: bool) -> anyhow::Result<()> {
    let mut profile = a.profile.profile()?;
    profile.suppression_rule =
        suppression_rule(a.suppression_rule.as_deref(), a.policy.require.as_deref())?;
    if a.node.is_none() && a.pick.is_none() {
        anyhow::bail!("give --node L1,L2,... or --pick (with --require ... and a rule)");
    }
    let policy = match &a.pick {
        Some(rule) => Some(Policy::parse(
            &PolicyText {
                comparator: Some(rule.clone()),
                require: a.policy.require.clone(),
                minimize: a.minimize.clone(),
                maximize: a.maximize.clone(),
                objectives: a.objectives.clone(),
                significance: a.significance.clone(),
                goal: a.goal.clone(),
                weights: a.weights.clone(),
            },
            pbg::indices::Present::of_profile(&profile),
        )?),
        None => None,
    };
    let picked = std::sync::Mutex::new(None);
    let node_text = a.node.clone();
    let require = match (&policy, &a.policy.require) {
        (None, Some(r)) => pbg::policy::Requirement::parse_list(r)?,
        _ => Vec::new(),
    };
    if let Some(r) = &a.report {
        profile.protect_as(r, if release { "report" } else { "output" })?;
        if release && r == &a.output {
            anyhow::bail!("--report {} is the release itself", r.display());
        }
    }
    let facts = std::sync::Mutex::new(None);
    let stages = super::progress::Stages::new("anonymize");
    let choose_node = |ev: &pbg::Evaluator| match (&policy, &node_text) {
        (Some(p), _) => {
            let chosen = pick(ev, p)?;
            let node = chosen.node.clone();
            *picked.lock().unwrap_or_else(|e| e.into_inner()) = Some(chosen);
            Ok(node)
        }
        (None, Some(text)) => {
            let node = ev.parse_node(text)?;
            // With an explicit node, --require is checked before anything is written.
            let present = pbg::indices::Present::of(ev.dataset());
            for r in &require {
                r.measure.check_defined(present)?;
            }
            let ix = ev.evaluate(&node)?;
            for r in &require {
                if !r.holds(r.measure.of(&ix)) {
                    return Err(pbg::PbgError::argument(
                        "--require",
                        format!(
                            "node {text} does not meet {} ({} = {})",
                            r.text(),
                            r.measure.name(),
                            r.measure.of(&ix)
                        ),
                    ));
                }
            }
            Ok(node)
        }
        (None, None) => Err(pbg::PbgError::argument(
            "--node",
            "give --node L1,L2,... or --pick".to_string(),
        )),
    };
    let gather = |ev: &pbg::Evaluator| {
        let node = choose_node(ev)?;
        if a.report.is_some() {
            // What the page needs from the engine, while it holds the statistics.
            *facts.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(super::report::facts(ev, &node)?);
        }
        Ok(node)
    };
    let (indices, mut report) = if release {
        let ctx = a.profile.session()?;
        let summary = anonymize_in(&ctx, &profile, &gather, &a.output, &|name| {
            stages.stage(name)
        })?;
        (summary.indices.clone(), serde_json::to_value(&summary)?)
    } else {
        // The page alone: the node chosen on the statistics, nothing written but the page.
        stages.stage("pass 1: class statistics");
        let ev = pbg::Evaluator::new(std::sync::Arc::new(a.profile.statistics()?))?;
        stages.stage("choosing the node");
        let node = gather(&ev)?;
        let ix = ev.evaluate(&node)?;
        let rows = ev.dataset().num_tuples();
        let report = serde_json::json!({
            "output": null,
            "node": node,
            "rows_in": rows,
            "rows_released": rows - ix.suppressed,
            "suppressed": ix.suppressed,
            "threshold": ix.threshold,
            "verified": false,
        });
        (ix, report)
    };
    drop(stages);
    // Every index, as `evaluate` prints them (computed ones such as risk_prosecutor included).
    let present = pbg::indices::Present::of_profile(&profile);
    report["indices"] = serde_json::Value::Object(super::output::index_fields(&indices, present));
    report["suppression_rule"] = serde_json::Value::String(profile.suppression_rule.describe());
    if let Some(p) = picked.into_inner().unwrap_or_else(|e| e.into_inner()) {
        report["pick"] = serde_json::to_value(p)?;
    }
    if let (Some(path), Some(facts)) = (
        &a.report,
        facts.into_inner().unwrap_or_else(|e| e.into_inner()),
    ) {
        let requirements: Vec<(String, f64, bool)> = match &a.policy.require {
            Some(r) => pbg::policy::Requirement::parse_list(r)?
                .iter()
                .map(|r| {
                    let v = r.measure.of(&indices);
                    (r.text(), v, r.holds(v))
                })
                .collect(),
            None => Vec::new(),
        };
        let profile_text = match a.profile.file() {
            Some(f) => std::fs::read_to_string(f).unwrap_or_default(),
            None => format!("{profile:#?}"),
        };
        let html = super::report::render(&report, &facts, &requirements, &profile_text);
        pbg::io::write_text_atomic(path, &html)?;
        report["report"] = serde_json::json!(path);
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
