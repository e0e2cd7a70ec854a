//! Command-line parsing and dispatch. Each subcommand lives in its own module.

mod anonymize;
mod cluster;
mod compare;
mod correlate;
mod evaluate;
mod experiment;
mod generate;
mod init;
mod lattice;
mod output;
mod profile_args;
mod progress;
mod prompt;
mod report;
mod search;
mod slice;
mod sql;
mod verify;

use clap::{Parser, Subcommand};

/// Property based generalization: evaluate, search and apply anonymizations of tabular data.
#[derive(Parser)]
#[command(name = "pbg", version, about)]
struct Cli {
    /// No progress display on stderr (it is shown only on a terminal anyway).
    #[arg(long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Draft a profile and hierarchies from a table (roles from distinct counts, a hierarchy per QI).
    Init(init::InitArgs),
    /// Hierarchy tools.
    #[command(subcommand)]
    Hierarchy(init::HierarchyCommand),
    /// Evaluate one lattice node: classes, k, l, suppression, GLM, S_k, S_l, CM.
    Evaluate(evaluate::EvaluateArgs),
    /// Evaluate every node of the lattice (parallel, by roll-ups).
    Lattice(lattice::LatticeArgs),
    /// Write the release of a node (given or picked by a policy): streamed, verified, atomic.
    Anonymize(anonymize::AnonymizeArgs),
    /// The HTML page of a node (given or picked) without writing a release: `--output FILE.html`.
    Report(anonymize::AnonymizeArgs),
    /// Check an existing release against its input and a policy (exit 1 when it fails).
    Verify(verify::VerifyArgs),
    /// Generate scale data for benchmarks.
    #[command(subcommand)]
    Generate(generate::Generate),
    /// Find the minimal PBGs (Pareto front) for a set of objectives.
    Search(search::SearchArgs),
    /// Compare two nodes by one property vector.
    Compare(compare::CompareArgs),
    /// Run SQL with the pbg functions (and the profile's input as a table).
    Sql(sql::SqlArgs),
    /// Chi-square and φ² attribute correlation (for slicing).
    Correlate(correlate::CorrelateArgs),
    /// Slicing, overlapping slicing or bucketization with l-diverse buckets, verified, atomic.
    Slice(slice::SliceArgs),
    /// Reproduce a paper's experiments.
    #[command(subcommand)]
    Experiment(experiment::Experiment),
    /// Ballista cluster roles: a scheduler and executors that run pbg's row passes.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
}

/// Parses the command line and runs the subcommand.
pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    progress::set_quiet(cli.quiet);
    match cli.command {
        Command::Init(a) => init::run(a),
        Command::Hierarchy(c) => init::run_hierarchy(c),
        Command::Evaluate(a) => evaluate::run(a),
        Command::Lattice(a) => lattice::run(a),
        Command::Anonymize(a) => anonymize::run(a),
        Command::Report(a) => anonymize::run_report(a),
        Command::Verify(a) => verify::run(a),
        Command::Generate(g) => generate::run(g),
        Command::Search(a) => search::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Experiment(e) => experiment::run(e),
        Command::Sql(a) => sql::run(a),
        Command::Correlate(a) => correlate::run(a),
        Command::Slice(a) => slice::run(a),
        Command::Cluster(c) => cluster::run(c),
    }
}
