//! `pbg lattice <profile> [--format csv|parquet|json] [--out FILE]`

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, ValueEnum};
use pbg::indices::NodeIndices;
use pbg::io::{AtomicFile, BatchWriter, OutputFormat};

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
    if matches!(a.format, Format::Parquet) && a.out.is_none() {
        bail!("--format parquet needs --out FILE");
    }
    let bar = progress_bar(ev.lattice().size() as u64, "nodes");
    let file = a.out.as_deref().map(AtomicFile::new).transpose()?;
    let mut sink = Sink::open(a.format, file.as_ref(), &ev)?;
    // Written block by block in index order: the whole lattice is never held.
    let named = |e: pbg::PbgError| match &file {
        Some(f) => f.named(e),
        None => e,
    };
    ev.sweep_lattice(BLOCK_NODES, &|| bar.inc(1), &mut |block| {
        sink.write(&ev, &block).map(|()| true)
    })
    .map_err(named)?;
    bar.finish_and_clear();
    sink.finish().map_err(named)?;
    if let Some(f) = file {
        f.commit()?;
    }
    Ok(())
}

/// Nodes evaluated and written at a time.
const BLOCK_NODES: usize = 1 << 18;

/// Where `lattice` writes its rows: a table (a file, or CSV on standard output), or a JSON array
/// (to a file or standard output).
enum Sink {
    Table(BatchWriter),
    Json {
        out: Box<dyn std::io::Write>,
        /// The file written (the temporary one), or `standard output`.
        path: PathBuf,
        first: bool,
    },
}

impl Sink {
    fn open(format: Format, file: Option<&AtomicFile>, ev: &pbg::Evaluator) -> pbg::Result<Self> {
        let stdout = || Box::new(std::io::BufWriter::new(std::io::stdout()));
        let table = match format {
            Format::Csv => OutputFormat::Csv,
            Format::Parquet => OutputFormat::Parquet,
            Format::Json => {
                let (out, path): (Box<dyn std::io::Write>, PathBuf) = match file {
                    Some(f) => {
                        let path = f.temp_path();
                        let w =
                            std::fs::File::create(path).map_err(|e| pbg::PbgError::io(path, e))?;
                        (Box::new(std::io::BufWriter::new(w)), path.to_path_buf())
                    }
                    None => (stdout(), PathBuf::from("standard output")),
                };
                return Ok(Sink::Json {
                    out,
                    path,
                    first: true,
                });
            }
        };
        let schema =
            pbg::indices::indices_schema(&ev.qi_names(), pbg::indices::Present::of(ev.dataset()));
        Ok(Sink::Table(match file {
            Some(f) => BatchWriter::create(f.temp_path(), table, schema)?,
            // Parquet without --out is refused before the sweep.
            None => BatchWriter::csv(stdout(), std::path::Path::new("standard output")),
        }))
    }

    fn write(&mut self, ev: &pbg::Evaluator, block: &[NodeIndices]) -> pbg::Result<()> {
        let present = pbg::indices::Present::of(ev.dataset());
        match self {
            Sink::Json { out, path, first } => {
                let path: &std::path::Path = path;
                let io = |e: std::io::Error| pbg::PbgError::io(path, e);
                for x in block {
                    out.write_all(if *first { b"[" } else { b"," })
                        .map_err(io)?;
                    *first = false;
                    let object = serde_json::Value::Object(node_json(x, ev.lattice(), present));
                    serde_json::to_writer(&mut *out, &object).map_err(|e| io(e.into()))?;
                }
                Ok(())
            }
            Sink::Table(w) => w.write(&pbg::indices::indices_batch(
                &ev.qi_names(),
                block,
                present,
            )?),
        }
    }

    fn finish(self) -> pbg::Result<()> {
        match self {
            Sink::Json {
                mut out,
                path,
                first,
            } => {
                let io = |e: std::io::Error| pbg::PbgError::io(&path, e);
                out.write_all(if first { b"[]\n" } else { b"]\n" })
                    .map_err(io)?;
                out.flush().map_err(io)
            }
            Sink::Table(w) => w.finish(),
        }
    }
}
