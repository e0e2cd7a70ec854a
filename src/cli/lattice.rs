//! `pbg lattice <profile> [--format csv|parquet|json] [--out FILE]`

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::bail;
use arrow::array::{ArrayRef, Float64Array, UInt8Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use clap::{Args, ValueEnum};
use pbg::io::{AtomicFile, OutputFormat, write_batches};
use pbg::{Evaluator, NodeIndices};

use super::output::indices_json;
use super::profile_args::ProfileArgs;
use super::progress::progress_bar;

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

/// A named column of the lattice table and how to read it from a node's indices.
type Column<T> = (&'static str, fn(&NodeIndices) -> T);

/// The lattice as one record batch: a level column per QI, then the evaluate fields.
fn lattice_batch(ev: &Evaluator, all: &[NodeIndices]) -> anyhow::Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (d, name) in ev.qi_names().iter().enumerate() {
        fields.push(Field::new(*name, DataType::UInt8, false));
        cols.push(Arc::new(UInt8Array::from_iter_values(
            all.iter().map(|x| x.node[d]),
        )));
    }
    let u64s: [Column<u64>; 7] = [
        ("classes", |x| x.classes),
        ("k", |x| x.k),
        ("max_class", |x| x.max_class),
        ("l_distinct", |x| x.l_distinct),
        ("suppressed", |x| x.suppressed),
        ("s_k", |x| x.s_k),
        ("s_l", |x| x.s_l),
    ];
    let f64s: [Column<f64>; 3] = [
        ("l_entropy", |x| x.l_entropy),
        ("l_probabilistic", |x| x.l_probabilistic),
        ("glm", |x| x.glm),
    ];
    for (name, get) in u64s {
        fields.push(Field::new(name, DataType::UInt64, false));
        cols.push(Arc::new(UInt64Array::from_iter_values(all.iter().map(get))));
    }
    for (name, get) in f64s {
        fields.push(Field::new(name, DataType::Float64, false));
        cols.push(Arc::new(Float64Array::from_iter_values(
            all.iter().map(get),
        )));
    }
    if ev.dataset().class.is_some() {
        fields.push(Field::new("cm", DataType::Float64, true));
        cols.push(Arc::new(all.iter().map(|x| x.cm).collect::<Float64Array>()));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// Runs `pbg lattice`.
pub fn run(a: LatticeArgs) -> anyhow::Result<()> {
    let ev = a.profile.evaluator()?;
    let bar = progress_bar(ev.lattice().size() as u64, "nodes");
    let all = ev.evaluate_lattice(&|| bar.inc(1))?;
    bar.finish_and_clear();
    match a.format {
        Format::Json => {
            let size = ev.lattice().size();
            let with_cm = ev.dataset().class.is_some();
            let rows: Vec<serde_json::Value> = all
                .iter()
                .map(|x| serde_json::Value::Object(indices_json(x, size, with_cm)))
                .collect();
            let text = serde_json::to_string(&rows)?;
            match &a.out {
                Some(path) => {
                    let file = AtomicFile::new(path)?;
                    std::fs::write(file.temp_path(), text + "\n")?;
                    file.commit()?;
                }
                None => println!("{text}"),
            }
        }
        Format::Csv | Format::Parquet => {
            let batch = lattice_batch(&ev, &all)?;
            let format = if matches!(a.format, Format::Csv) {
                OutputFormat::Csv
            } else {
                OutputFormat::Parquet
            };
            match &a.out {
                Some(path) => {
                    let file = AtomicFile::new(path)?;
                    write_batches(file.temp_path(), format, batch.schema(), &[batch])?;
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
