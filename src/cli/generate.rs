//! `pbg generate adult-like --rows N --seed S --output FILE.parquet`

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Generators of scale data.
#[derive(Subcommand, Debug)]
pub enum Generate {
    /// Rows drawn from the joint distribution of the shipped adult data (seeded bootstrap), with an `id` column.
    AdultLike(AdultLikeArgs),
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
    match g {
        Generate::AdultLike(a) => {
            let start = std::time::Instant::now();
            let rows = pbg::generate::adult_like(a.rows, a.seed, &a.output)?;
            println!(
                "{}",
                serde_json::json!({"output": a.output, "rows": rows, "seed": a.seed, "seconds": start.elapsed().as_secs_f64()})
            );
            Ok(())
        }
    }
}
