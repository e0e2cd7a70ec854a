//! `pbg lattice <profile> [--format csv|parquet|json] [--out FILE]`

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, ValueEnum};
use pbg::io::{AtomicFile, OutputFormat, write_batches};

use super::profile_args::ProfileArgs;
use super::progress::progress_bar;
use pbg::evaluate::json::node_json;

/// Output formats of `lattice`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// CSV with a header row.
    Csv,
    /// Parquet (needs --out).
    Parquet,
    /// A JSON array of node objects.
    Json,
}

/// Arguments of `pbg lattice`.
#[derive(Args, Debug)]
pub struct LatticeArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "csv")]
    format: Format,
    /// Output file (written atomically); standard output when absent.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs `pbg lattice`.
pub fn run(a: LatticeArgs) -> anyhow::Result<()> {
    if let Some(out) = &a.out {
        // A table of another format under a known extension (CSV into `lat.parquet`) would
        // replace a file of that format with one its readers cannot read.
        let named = out
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        let wanted: &[&str] = match a.format {
            Format::Csv => &["csv"],
            Format::Parquet => &["parquet", "parq"],
            Format::Json => &["json"],
        };
        // A compressed name (`l.csv.gz`) would hold plain text.
        if let Some(ext) = named
            .as_deref()
            .filter(|e| ["gz", "bz2", "xz", "zst", "zip", "lz4", "snappy"].contains(e))
        {
            bail!(
                "--out {} is named .{ext}, but pbg writes lattices uncompressed: name it .{}",
                out.display(),
                wanted[0]
            );
        }
        // Formats a reader would take the file for that pbg does not write.
        if let Some(ext) = named.as_deref().filter(|e| {
            [
                "jsonl", "ndjson", "tsv", "arrow", "feather", "ipc", "avro", "orc",
            ]
            .contains(e)
        }) {
            bail!(
                "--out {} is named .{ext}, a format pbg does not write: name it .{} (--format csv, parquet or json)",
                out.display(),
                wanted[0]
            );
        }
        if let Some(ext) = named.filter(|e| {
            ["csv", "parquet", "parq", "json", "html", "htm"].contains(&e.as_str())
                && !wanted.contains(&e.as_str())
        }) {
            bail!(
                "--out {} is named .{ext} but --format is {}: name it .{} or give the format of its name",
                out.display(),
                wanted[0],
                wanted[0]
            );
        }
        a.profile.profile()?.protect_as(out, "out")?;
    }
    let ev = a.profile.statistics_evaluator()?;
    let bar = progress_bar(ev.lattice().size() as u64, "nodes");
    let all = ev.evaluate_lattice(&|| bar.inc(1))?;
    bar.finish_and_clear();
    match a.format {
        Format::Json => {
            let present = pbg::indices::Present::of(ev.dataset());
            let rows: Vec<serde_json::Value> = all
                .iter()
                .map(|x| serde_json::Value::Object(node_json(x, ev.lattice(), present)))
                .collect();
            let text = serde_json::to_string(&rows)?;
            match &a.out {
                Some(path) => {
                    let file = AtomicFile::new(path)?;
                    std::fs::write(file.temp_path(), text + "\n")
                        .map_err(|e| pbg::PbgError::io(path, e))?;
                    file.commit()?;
                }
                None => println!("{text}"),
            }
        }
        Format::Csv | Format::Parquet => {
            let batch = pbg::indices::indices_batch(
                &ev.qi_names(),
                &all,
                pbg::indices::Present::of(ev.dataset()),
            )?;
            let format = if matches!(a.format, Format::Csv) {
                OutputFormat::Csv
            } else {
                OutputFormat::Parquet
            };
            match &a.out {
                Some(path) => {
                    let file = AtomicFile::new(path)?;
                    write_batches(file.temp_path(), format, batch.schema(), &[batch])
                        .map_err(|e| file.named(e))?;
                    file.commit()?;
                }
                None if format == OutputFormat::Parquet => {
                    bail!("--format parquet needs --out FILE")
                }
                None => {
                    let mut w = arrow::csv::WriterBuilder::new()
                        .with_header(true)
                        .build(std::io::stdout().lock());
                    w.write(&batch)?;
                }
            }
        }
    }
    Ok(())
}
