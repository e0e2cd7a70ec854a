//! `pbg slice <profile> --l 5 [--mode slicing|overlapping|bucketization] [--partition chi|pam|pam:K|a+b,c+d]
//! [--generalize L1,..] [--seed N] --output FILE`

use std::path::PathBuf;

use clap::Args;
use pbg::slicing::table::SliceMode;
use pbg::slicing::{PartitionChoice, SliceOptions, slice};

use super::profile_args::ProfileArgs;

/// Arguments of `pbg slice`.
#[derive(Args, Debug)]
pub struct SliceArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// The diversity parameter: p(t,s) ≤ 1/l for every tuple and sensitive value.
    #[arg(long)]
    l: u64,
    /// slicing, overlapping (the sensitive attribute in every column) or bucketization.
    #[arg(long, default_value = "slicing")]
    mode: String,
    /// Attribute partition: chi (the paper's chi_matrix pairs), pam or pam:K (k-medoids on 1 − φ²),
    /// or columns written as a+b,c+d (every QI and the sensitive attribute once).
    #[arg(long, default_value = "chi")]
    partition: String,
    /// Column generalization: replace QI values by their labels at this node of the profile's
    /// hierarchies first.
    #[arg(long, value_name = "L1,L2,...")]
    generalize: Option<String>,
    /// tuple: p(t,s) ≤ 1/l for every tuple (SPEC §6, the guarantee); distinct: every bucket holds
    /// at least l distinct sensitive values (weaker; the p(t,s) it leaves is reported).
    #[arg(long, default_value = "tuple")]
    diversity: String,
    /// Seed of the per-bucket permutations.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The release (.csv or .parquet): a `bucket` column, then `c{i}.{attribute}` columns.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
}

/// Runs `pbg slice` and prints its JSON summary.
pub fn run(a: SliceArgs) -> anyhow::Result<()> {
    a.profile.local_only("slice")?;
    let profile = a.profile.profile()?;
    let generalize = match &a.generalize {
        Some(text) => Some(pbg::lattice::parse_levels(text)?),
        None => None,
    };
    let options = SliceOptions {
        l: a.l,
        mode: SliceMode::parse(&a.mode)?,
        partition: PartitionChoice::parse(&a.partition)?,
        seed: a.seed,
        generalize,
        diversity: pbg::slicing::diversity::Diversity::parse(&a.diversity)?,
    };
    let stages = super::progress::Stages::new("slice");
    stages.stage(&format!("{} into {}", profile.input, a.output.display()));
    let summary = slice(&profile, &options, &a.output)?;
    drop(stages);
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}
