//! `pbg experiment dbsec2010 [--runs 20] [--out DIR] [--data DIR]`

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use pbg::experiment::dbsec2010;
use pbg::{Dataset, Evaluator, Profile};

use super::progress::progress_bar;

/// The experiments.
#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// DBSEC 2010 Tables 1(b), 2(a), 2(b) and Figs. 1–3 on adult.
    Dbsec2010(Dbsec2010Args),
}

/// Arguments of `pbg experiment dbsec2010`.
#[derive(Args, Debug)]
pub struct Dbsec2010Args {
    /// PBG-EA runs per setting.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// PBG-EA iterations per run (the paper: 100).
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// Output directory for the Markdown, CSV and SVG files.
    #[arg(long, value_name = "DIR", default_value = "out/dbsec2010")]
    out: PathBuf,
    /// Directory holding adult.toml and adult-cm.toml.
    #[arg(long, value_name = "DIR", default_value = "datasets/adult")]
    data: PathBuf,
}

fn evaluator(path: PathBuf) -> anyhow::Result<Evaluator> {
    let profile = Profile::from_toml_file(&path)?;
    Ok(Evaluator::new(Arc::new(Dataset::load(&profile)?))?)
}

/// Runs an experiment and prints its Markdown report.
pub fn run(e: Experiment) -> anyhow::Result<()> {
    match e {
        Experiment::Dbsec2010(a) => {
            let adult = evaluator(a.data.join("adult.toml"))?;
            let adult_cm = evaluator(a.data.join("adult-cm.toml"))?;
            let bar = progress_bar((a.runs * dbsec2010::settings().len()) as u64, "runs");
            let outcomes = dbsec2010::run(&adult, &adult_cm, a.runs, a.iterations, &|| bar.inc(1))?;
            bar.finish_and_clear();
            let files = dbsec2010::write_reports(&outcomes, a.runs, a.iterations, &a.out)?;
            print!("{}", dbsec2010::markdown(&outcomes, a.runs, a.iterations));
            eprintln!(
                "wrote {}",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Ok(())
        }
    }
}
