//! `pbg anonymize <profile> --node L1,.. --output FILE.csv|FILE.parquet`

use std::path::PathBuf;

use clap::Args;
use pbg::release::anonymize;

use super::profile_args::ProfileArgs;

/// Arguments of `pbg anonymize`.
#[derive(Args, Debug)]
pub struct AnonymizeArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// The node to apply: one level per QI, in profile order.
    #[arg(long, value_name = "L1,L2,...")]
    node: String,
    /// The release file (.csv or .parquet); written to a temporary file, verified, then renamed.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
}

/// Runs `pbg anonymize` and prints its JSON summary.
pub fn run(a: AnonymizeArgs) -> anyhow::Result<()> {
    let ev = a.profile.evaluator()?;
    let node = ev.parse_node(&a.node)?;
    let summary = anonymize(&ev, &node, &a.output)?;
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}
