//! `pbg compare <profile> --node A --node B --property equiv|sens|glm|cm [--format json]`

use clap::{Args, ValueEnum};
use pbg::compare::{Property, compare};
use serde_json::Value;

use super::output::key_value_table;
use super::profile_args::ProfileArgs;

/// Output formats of `compare`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// One JSON object.
    Json,
    /// A key/value table.
    Table,
}

/// Arguments of `pbg compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Node A, then node B (give --node twice).
    #[arg(long, value_name = "L1,L2,...", num_args = 1, required = true)]
    node: Vec<String>,
    /// The property vector compared.
    #[arg(long, value_name = "equiv|sens|glm|cm")]
    property: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
}

/// Runs `pbg compare`.
pub fn run(a: CompareArgs) -> anyhow::Result<()> {
    if a.node.len() != 2 {
        anyhow::bail!(
            "--node: give exactly two nodes (--node A --node B), got {}",
            a.node.len()
        );
    }
    let property = Property::parse(&a.property)?;
    let ev = a.profile.evaluator()?;
    let na = ev.parse_node(&a.node[0])?;
    let nb = ev.parse_node(&a.node[1])?;
    let c = compare(&ev, &na, &nb, property)?;
    let v = serde_json::to_value(&c)?;
    match (a.format, v) {
        (Format::Table, Value::Object(m)) => print!("{}", key_value_table(&m)),
        (_, v) => println!("{v}"),
    }
    Ok(())
}
