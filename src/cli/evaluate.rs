//! `pbg evaluate <profile> --node L1,L2,... [--vectors] [--format json|table]`

use clap::{Args, ValueEnum};
use serde_json::json;

use super::output::key_value_table;
use super::profile_args::ProfileArgs;
use pbg::evaluate::json::node_json;

/// Output formats of `evaluate`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// One JSON object.
    Json,
    /// A key/value table.
    Table,
}

/// Arguments of `pbg evaluate`.
#[derive(Args, Debug)]
pub struct EvaluateArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// The node: one level per QI, in profile order, e.g. 1,0,2.
    #[arg(long, value_name = "L1,L2,...")]
    node: String,
    /// Also print the per-tuple property vectors p_equiv, p_sens, p_glm, p_risk (and p_cm).
    #[arg(long)]
    vectors: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
}

/// Runs `pbg evaluate`.
pub fn run(a: EvaluateArgs) -> anyhow::Result<()> {
    // Vectors need the rows; the indices alone come from streamed class statistics.
    let ev = if a.vectors {
        a.profile.evaluator()?
    } else {
        a.profile.statistics_evaluator()?
    };
    let node = ev.parse_node(&a.node)?;
    let present = pbg::indices::Present::of(ev.dataset());
    let mut m = if a.vectors {
        let (ix, v) = ev.property_vectors(&node)?;
        let mut m = node_json(&ix, ev.lattice(), present);
        m.insert("p_equiv".into(), json!(v.p_equiv));
        m.insert("p_sens".into(), json!(v.p_sens));
        m.insert("p_glm".into(), json!(v.p_glm));
        m.insert("p_risk".into(), json!(v.p_risk));
        if let Some(cm) = v.p_cm {
            m.insert("p_cm".into(), json!(cm));
        }
        m
    } else {
        node_json(&ev.evaluate(&node)?, ev.lattice(), present)
    };
    m.insert("qis".into(), json!(ev.qi_names()));
    match a.format {
        Format::Json => println!("{}", serde_json::Value::Object(m)),
        Format::Table => print!("{}", key_value_table(&m)),
    }
    Ok(())
}
