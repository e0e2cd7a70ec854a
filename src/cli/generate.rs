//! `pbg generate adult-like --rows N --seed S --output FILE.parquet` and
//! `pbg generate wide --qis N --rows R --seed S --output DIR`

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Generators of scale data.
#[derive(Subcommand, Debug)]
pub enum Generate {
    /// Rows drawn from the joint distribution of the shipped adult data (seeded bootstrap), with an `id` column.
    AdultLike(AdultLikeArgs),
    /// A table of many integer QIs (10-100 values, every fourth 10^3-10^6) with generated interval hierarchies of 3-6 levels, a sensitive `s` and an `id`: writes DIR/wide.parquet and the profile DIR/wide.toml.
    Wide(WideArgs),
}

/// Arguments of `pbg generate wide`.
#[derive(Args, Debug)]
pub struct WideArgs {
    /// Number of quasi-identifiers.
    #[arg(long)]
    qis: usize,
    /// Rows to write.
    #[arg(long)]
    rows: u64,
    /// Seed of the domains, hierarchies and draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory (wide.parquet and wide.toml are written there).
    #[arg(long, value_name = "DIR")]
    output: PathBuf,
}

/// Arguments of `pbg generate adult-like`.
#[derive(Args, Debug)]
pub struct AdultLikeArgs {
    /// Rows to write.
    #[arg(long)]
    rows: u64,
    /// Seed of the random draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file (.parquet, or .csv).
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
}

/// Runs a generator and prints a one-line JSON summary.
pub fn run(g: Generate) -> anyhow::Result<()> {
    let stages = super::progress::Stages::new("generate");
    stages.stage("writing rows");
    match g {
        Generate::AdultLike(a) => {
            let start = std::time::Instant::now();
            let rows = pbg::generate::adult_like(a.rows, a.seed, &a.output)?;
            drop(stages);
            println!(
                "{}",
                serde_json::json!({"output": a.output, "rows": rows, "seed": a.seed, "seconds": start.elapsed().as_secs_f64()})
            );
            Ok(())
        }
        Generate::Wide(a) => {
            let start = std::time::Instant::now();
            let (data, profile) = pbg::generate::wide(a.qis, a.rows, a.seed, &a.output)?;
            drop(stages);
            println!(
                "{}",
                serde_json::json!({"data": data, "profile": profile, "qis": a.qis, "rows": a.rows, "seed": a.seed, "seconds": start.elapsed().as_secs_f64()})
            );
            Ok(())
        }
    }
}
