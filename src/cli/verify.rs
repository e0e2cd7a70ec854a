//! `pbg verify <profile> --release FILE [--require k>=5,l>=3]`: checks an existing release against
//! its input and a policy. The release's node is inferred from its labels; its classes, k, l, GLM
//! and row accounting are recomputed from the file and must be those of that node's release of the
//! input; then every requirement must hold. Exit status 1, saying why, when anything fails.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use pbg::input::block_on;
use pbg::policy::Requirement;
use pbg::release::verify_release;
use pbg::{Dataset, Evaluator};

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
}

/// Runs `pbg verify`: prints a JSON report; fails when the release or the policy does not hold.
pub fn run(a: VerifyArgs) -> anyhow::Result<()> {
    let profile = a.profile.profile()?;
    let require = match &a.policy.require {
        Some(r) => Requirement::parse_list(r)?,
        None => Vec::new(),
    };
    let dataset = Dataset::load_statistics(&profile)?;
    let ev = Evaluator::new(Arc::new(dataset))?;
    let ctx = pbg::input::new_context();
    let (check, _) = block_on(verify_release(&ctx, &ev, &a.release, None, None))??;
    let mut results = Vec::new();
    let mut failed = Vec::new();
    for r in &require {
        let value = r.measure.of_check(&check).ok_or_else(|| {
            anyhow::anyhow!(
                "--require: `{}` cannot be recomputed from a release (use k, l, l_entropy, l_probabilistic, suppressed, classes, glm)",
                r.measure.name()
            )
        })?;
        let holds = r.holds(value);
        if !holds {
            failed.push(format!("{} ({} = {value})", r.text(), r.measure.name()));
        }
        results.push(serde_json::json!({"requirement": r.text(), "value": value, "holds": holds}));
    }
    let report = serde_json::json!({
        "release": a.release,
        "node": check.node,
        "rows_in": ev.dataset().num_tuples(),
        "rows_released": check.rows,
        "suppressed": check.suppressed,
        "check": check,
        "requirements": results,
        "ok": failed.is_empty(),
    });
    println!("{}", serde_json::to_string(&report)?);
    if !failed.is_empty() {
        anyhow::bail!(
            "{}: the release does not meet {}",
            a.release.display(),
            failed.join(", ")
        );
    }
    Ok(())
}
