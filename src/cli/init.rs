//! `pbg init --input PATH [--sensitive NAME] [--qi a,b,..] [--identifier NAME] --output DIR` and
//! `pbg hierarchy build --input PATH --column NAME [--kind auto|..] --output FILE.csv`: a profile
//! and hierarchies drafted from the data (see `pbg::encode::draft`).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use pbg::encode::draft::{DraftKind, arx_text, build_hierarchy, column_values, draft, write_draft};
use pbg::input::{Input, block_on};
use pbg::profile::parse_delimiter;
use serde_json::json;

/// Arguments of `pbg init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// The table: a CSV or Parquet file, a directory of them or a glob.
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// CSV delimiter (one character, or `tab`).
    #[arg(long, value_name = "C", default_value = ",")]
    delimiter: String,
    /// The sensitive attribute (else the last column that is not an identifier, marked as a guess).
    #[arg(long, value_name = "NAME")]
    sensitive: Option<String>,
    /// The quasi-identifiers (else every other column a hierarchy can be drafted for).
    #[arg(long, value_name = "A,B,..", value_delimiter = ',')]
    qi: Vec<String>,
    /// An identifier column (repeatable); nearly unique columns are proposed as identifiers too.
    #[arg(long = "identifier", value_name = "NAME")]
    identifiers: Vec<String>,
    /// Directory for `profile.toml` and `hierarchies/` (created if needed).
    #[arg(long, value_name = "DIR")]
    output: PathBuf,
}

/// Runs `pbg init`.
pub fn run(a: InitArgs) -> anyhow::Result<()> {
    let delimiter = parse_delimiter(&a.delimiter)?;
    let input = Input::Path(a.input.clone());
    let stages = super::progress::Stages::new("init");
    stages.stage(&format!("reading {}", a.input.display()));
    let ctx = pbg::input::new_context();
    let d = block_on(draft(
        &ctx,
        &input,
        delimiter,
        a.sensitive.as_deref(),
        &a.qi,
        &a.identifiers,
    ))??;
    let profile = write_draft(&d, &a.output)?;
    drop(stages);
    if d.sensitive.1 {
        eprintln!(
            "pbg: note: the sensitive attribute `{}` is a guess: edit {} (or give --sensitive)",
            d.sensitive.0,
            profile.display()
        );
    }
    println!(
        "{}",
        json!({
            "profile": profile,
            "rows": d.rows,
            "identifiers": d.identifiers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            "sensitive": d.sensitive.0,
            "sensitive_guessed": d.sensitive.1,
            "qis": d.qis.iter().map(|(n, k, h)| json!({
                "name": n, "kind": k.name(), "values": h.leaves().len(), "levels": h.height(),
            })).collect::<Vec<_>>(),
            "skipped": d.skipped.iter().map(|(n, why)| json!({"column": n, "why": why})).collect::<Vec<_>>(),
        })
    );
    Ok(())
}

/// `pbg hierarchy ...`.
#[derive(Subcommand, Debug)]
pub enum HierarchyCommand {
    /// Draft the hierarchy of one column from its values, as an ARX file.
    Build(BuildArgs),
}

/// Arguments of `pbg hierarchy build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The table: a CSV or Parquet file, a directory of them or a glob.
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// CSV delimiter (one character, or `tab`).
    #[arg(long, value_name = "C", default_value = ",")]
    delimiter: String,
    /// The column.
    #[arg(long, value_name = "NAME")]
    column: String,
    /// auto, interval, mask, date or categorical.
    #[arg(long, default_value = "auto")]
    kind: String,
    /// The ARX file to write (`leaf;level1;...;*`).
    #[arg(long, value_name = "FILE.csv")]
    output: PathBuf,
}

/// Runs `pbg hierarchy`.
pub fn run_hierarchy(c: HierarchyCommand) -> anyhow::Result<()> {
    let HierarchyCommand::Build(a) = c;
    let delimiter = parse_delimiter(&a.delimiter)?;
    let kind = DraftKind::parse(&a.kind)?;
    let input = Input::Path(a.input.clone());
    // Not the input, nor inside its directory or under its glob (the next read took the
    // hierarchy file for a part of the table).
    pbg::io::refuse_overwrite(&a.output, &input)?;
    let ctx = pbg::input::new_context();
    let values = block_on(column_values(&ctx, &input, delimiter, &a.column))??;
    if values.is_empty() {
        anyhow::bail!(
            "column `{}` of {} holds no values",
            a.column,
            a.input.display()
        );
    }
    let kind = kind.unwrap_or_else(|| DraftKind::of(&values));
    let h = build_hierarchy(&a.column, &values, kind)?;
    pbg::io::write_text_atomic(&a.output, &arx_text(&h))?;
    println!(
        "{}",
        json!({"output": a.output, "column": a.column, "kind": kind.name(), "values": h.leaves().len(), "levels": h.height()})
    );
    Ok(())
}
