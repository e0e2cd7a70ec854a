//! `pbg verify <profile> --release FILE [--require k>=5,l>=3]`: checks an existing release against
//! its input and a policy. The release's node is inferred from its labels; its classes, k, l, GLM
//! and row accounting are recomputed from the file and must be those of that node's release of the
//! input; then every requirement must hold. Exit status 1, saying why, when anything fails.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use pbg::Evaluator;
use pbg::input::block_on;
use pbg::policy::Requirement;
use pbg::release::verify_release_under;
use pbg::suppression::{RuleName, SuppressionRule};

use super::anonymize::PolicyArgs;
use super::profile_args::ProfileArgs;

/// Arguments of `pbg verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// The release to check: a file or a directory of files (.csv with a comma delimiter, or .parquet).
    #[arg(long, value_name = "FILE")]
    release: PathBuf,
    #[command(flatten)]
    policy: PolicyArgs,
    /// The suppression rule the release was made with (as `anonymize --suppression-rule`;
    /// default `requirements` with --require, else `dbsec`).
    #[arg(long, value_name = "RULE")]
    suppression_rule: Option<String>,
    /// Without a profile or input: check the release on its own over these QI columns (with
    /// --sensitive NAME), as a data receiver can: k, distinct, entropy and probabilistic l.
    #[arg(long, value_name = "A,B,..", value_delimiter = ',')]
    qis: Vec<String>,
    /// The release's node, one level per QI in profile order (default: inferred from its
    /// labels; give it when labels that several levels share leave too many nodes to try).
    #[arg(long, value_name = "L1,L2,...", conflicts_with = "qis")]
    node: Option<String>,
}

/// Runs `pbg verify`: prints a JSON report; fails when the release or the policy does not hold.
pub fn run(a: VerifyArgs) -> anyhow::Result<()> {
    let require = match &a.policy.require {
        Some(r) => Requirement::parse_list(r)?,
        None => Vec::new(),
    };
    if !a.qis.is_empty() {
        return run_alone(&a, &require);
    }
    let dataset = a.profile.statistics()?;
    let stages = super::progress::Stages::new("verify");
    let present = pbg::indices::Present::of(&dataset);
    for r in &require {
        r.measure.check_defined(present)?;
    }
    // The rule the release was made with: the one given, else the profile's, the requirement
    // rule (when there are requirements) and the DBSEC rule — the release must be exactly one.
    let flag = a
        .suppression_rule
        .as_deref()
        .map(RuleName::parse)
        .transpose()
        .map_err(|m| pbg::PbgError::argument("--suppression-rule", m))?;
    let rules = SuppressionRule::candidates(flag, dataset.profile.rule_name, &require);
    stages.stage(&format!("re-reading {}", a.release.display()));
    let ctx = a.profile.session()?;
    let engine = Evaluator::new(Arc::new(dataset))?;
    let node = a
        .node
        .as_deref()
        .map(|n| engine.parse_node(n))
        .transpose()?;
    let (check, expected, ev) = block_on(verify_release_under(
        &ctx,
        &engine,
        &a.release,
        node.as_deref(),
        &rules,
    ))??;
    let rule = ev.suppression_rule();
    let (results, failed) = requirements(&require, &check, Some(&expected))?;
    let report = serde_json::json!({
        "release": a.release,
        "node": check.node,
        "rows_in": ev.dataset().num_tuples(),
        "rows_released": check.rows,
        "suppressed": check.suppressed,
        "check": check,
        "suppression_rule": rule.describe(),
        "requirements": results,
        "ok": failed.is_empty(),
    });
    print_report(&report, &a.release, &failed)
}

/// `pbg verify --release PATH --qis a,b --sensitive s`: the release on its own.
fn run_alone(a: &VerifyArgs, require: &[Requirement]) -> anyhow::Result<()> {
    if a.profile.given() {
        anyhow::bail!(
            "--qis checks a release without its input: give no profile or --input (with a profile, the release is checked against the input)"
        );
    }
    let Some(sensitive) = a.profile.sensitive() else {
        anyhow::bail!("--qis needs --sensitive NAME");
    };
    for (i, q) in a.qis.iter().enumerate() {
        if a.qis[..i].contains(q) || q == sensitive {
            anyhow::bail!(
                "--qis: `{q}` is named twice (QIs and the sensitive attribute must be distinct columns)"
            );
        }
    }
    let ctx = a.profile.session()?;
    let check = block_on(pbg::release::check_release_alone(
        &ctx, &a.release, &a.qis, sensitive,
    ))??;
    let (results, failed) = requirements(require, &check, None)?;
    let report = serde_json::json!({
        "release": a.release,
        "input": null,
        "rows_released": check.rows,
        "classes": check.classes,
        "k": check.k,
        "l_distinct": check.l_distinct,
        "l_entropy": check.l_entropy,
        "l_probabilistic": check.l_probabilistic,
        "requirements": results,
        "ok": failed.is_empty(),
    });
    print_report(&report, &a.release, &failed)
}

/// Prints the JSON report, then fails naming the requirements the release does not meet.
fn print_report(
    report: &serde_json::Value,
    release: &std::path::Path,
    failed: &[String],
) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(report)?);
    if !failed.is_empty() {
        anyhow::bail!(
            "{}: the release does not meet {}",
            release.display(),
            failed.join(", ")
        );
    }
    Ok(())
}

/// Each requirement's value and whether it holds (JSON rows, [`pbg::policy::judge`]), and the
/// failed ones as text.
fn requirements(
    require: &[Requirement],
    check: &pbg::release::ReleaseCheck,
    engine: Option<&pbg::NodeIndices>,
) -> anyhow::Result<(Vec<serde_json::Value>, Vec<String>)> {
    let judged = pbg::policy::judge(require, check, engine)?;
    let failed = judged
        .iter()
        .zip(require)
        .filter(|(j, _)| !j.holds)
        .map(|(j, r)| format!("{} ({} = {})", j.requirement, r.measure.name(), j.value))
        .collect();
    let results = judged
        .iter()
        .map(|j| serde_json::json!({"requirement": j.requirement, "value": j.value, "holds": j.holds}))
        .collect();
    Ok((results, failed))
}
