//! `pbg experiment dbsec2010 [--runs 20] [--out DIR] [--data DIR]`

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use pbg::experiment::{dbsec2010, slicing_utility};
use pbg::{Dataset, Evaluator, Profile};

use super::progress::progress_bar;

/// The experiments.
#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// DBSEC 2010 Tables 1(b), 2(a), 2(b) and Figs. 1–3 on adult.
    Dbsec2010(Dbsec2010Args),
    /// IJERT 2013 Chart 1: classification accuracy on anonymized adult (generalization,
    /// bucketization, slicing, overlapping slicing), naive Bayes and a decision tree.
    SlicingUtility(SlicingUtilityArgs),
}

/// Arguments of `pbg experiment slicing-utility`.
#[derive(Args, Debug)]
pub struct SlicingUtilityArgs {
    /// Output directory for the Markdown, CSV and SVG files.
    #[arg(long, value_name = "DIR", default_value = "out/slicing-utility")]
    out: PathBuf,
    /// The profile (QIs, sensitive attribute, hierarchies for generalization).
    #[arg(long, value_name = "FILE", default_value = "datasets/adult/adult.toml")]
    profile: PathBuf,
    /// Cross-validation folds.
    #[arg(long, default_value_t = 10)]
    folds: usize,
    /// Random linkings of the permuted columns per fold.
    #[arg(long, default_value_t = 5)]
    repetitions: u64,
    /// The l values.
    #[arg(long, value_delimiter = ',', default_value = "5,8,10")]
    l: Vec<u64>,
    /// Targets to predict.
    #[arg(long, value_delimiter = ',', default_value = "occupation,education")]
    targets: Vec<String>,
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

/// Names the files an experiment wrote, on stderr.
fn report_files(files: &[PathBuf]) {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    eprintln!("wrote {}", names.join(", "));
}

/// Runs an experiment and prints its Markdown report.
pub fn run(e: Experiment) -> anyhow::Result<()> {
    match e {
        Experiment::Dbsec2010(a) => {
            // A report name that is a named pipe or a device is refused before the work.
            dbsec2010::refuse_special_targets(&a.out)?;
            let adult = evaluator(a.data.join("adult.toml"))?;
            let adult_cm = evaluator(a.data.join("adult-cm.toml"))?;
            let bar = progress_bar((a.runs * dbsec2010::settings().len()) as u64, "runs");
            let outcomes = dbsec2010::run(&adult, &adult_cm, a.runs, a.iterations, &|| bar.inc(1))?;
            bar.finish_and_clear();
            let files = dbsec2010::write_reports(&outcomes, a.runs, a.iterations, &a.out)?;
            print!("{}", dbsec2010::markdown(&outcomes, a.runs, a.iterations));
            report_files(&files);
            Ok(())
        }
        Experiment::SlicingUtility(a) => {
            if a.folds < 2 {
                anyhow::bail!("--folds: cross-validation needs at least 2 folds");
            }
            if a.repetitions == 0 || a.l.is_empty() || a.targets.is_empty() {
                anyhow::bail!("--repetitions, --l and --targets need at least one value each");
            }
            slicing_utility::refuse_special_targets(&a.out)?;
            let profile = Profile::from_toml_file(&a.profile)?;
            let cfg = slicing_utility::UtilityConfig {
                ls: a.l,
                folds: a.folds,
                repetitions: a.repetitions,
                targets: a.targets,
                ..Default::default()
            };
            let bar = progress_bar(cfg.folds as u64, "folds");
            let cells = slicing_utility::run(&profile, &cfg, &|| bar.inc(1))?;
            bar.finish_and_clear();
            let files = slicing_utility::write_reports(&cells, &cfg, &a.out)?;
            print!("{}", slicing_utility::markdown(&cells, &cfg));
            report_files(&files);
            Ok(())
        }
    }
}
