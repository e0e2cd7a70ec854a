//! Writes record batches as CSV or Parquet.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::error::{PbgError, Result};

/// File formats a release or report can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Comma separated, header row.
    Csv,
    /// Parquet, zstd compressed.
    Parquet,
}

impl OutputFormat {
    /// The format named by an output path's extension (`.csv`, `.parquet`, `.parq`); any other
    /// extension is an error rather than a silent CSV.
    pub fn of(path: &Path) -> Result<Self> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .as_deref()
        {
            Some("parquet" | "parq") => Ok(OutputFormat::Parquet),
            Some("csv") => Ok(OutputFormat::Csv),
            other => Err(PbgError::argument(
                "output",
                format!(
                    "{}: unknown output format{}; name the file .csv or .parquet",
                    path.display(),
                    other.map(|e| format!(" `.{e}`")).unwrap_or_default()
                ),
            )),
        }
    }
}

fn fail(path: &Path, e: impl std::fmt::Display) -> PbgError {
    PbgError::Format {
        path: path.to_path_buf(),
        message: format!("while writing: {e}"),
    }
}

/// Writes `batches` to `path` in `format` (an [`crate::io::AtomicFile`]'s temporary file: its
/// commit syncs it).
pub fn write_batches(
    path: &Path,
    format: OutputFormat,
    schema: SchemaRef,
    batches: &[RecordBatch],
) -> Result<()> {
    let mut w = BatchWriter::create(path, format, schema)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

/// A file of batches written one at a time in `format` (CSV with a header row, or Parquet),
/// for outputs too large to hold whole; CSV may go to any writer (standard output).
pub struct BatchWriter {
    /// The file written, or what the writer is called, for errors.
    path: std::path::PathBuf,
    writer: Writer,
}

enum Writer {
    Csv(Box<arrow::csv::Writer<Box<dyn Write + Send>>>),
    Parquet(Box<ArrowWriter<File>>),
}

impl BatchWriter {
    /// Creates `path` (an [`crate::io::AtomicFile`]'s temporary file) for batches of `schema`.
    pub fn create(path: &Path, format: OutputFormat, schema: SchemaRef) -> Result<Self> {
        let file = File::create(path).map_err(|e| PbgError::io(path, e))?;
        match format {
            OutputFormat::Csv => Ok(Self::csv(Box::new(BufWriter::new(file)), path)),
            OutputFormat::Parquet => {
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .build();
                let w =
                    ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| fail(path, e))?;
                Ok(BatchWriter {
                    path: path.to_path_buf(),
                    writer: Writer::Parquet(Box::new(w)),
                })
            }
        }
    }

    /// CSV with a header row to `out`, called `name` in errors.
    pub fn csv(out: Box<dyn Write + Send>, name: &Path) -> Self {
        let w = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(out);
        BatchWriter {
            path: name.to_path_buf(),
            writer: Writer::Csv(Box::new(w)),
        }
    }

    /// Appends `batch`.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match &mut self.writer {
            Writer::Csv(w) => w.write(batch).map_err(|e| fail(&self.path, e)),
            Writer::Parquet(w) => w.write(batch).map_err(|e| fail(&self.path, e)),
        }
    }

    /// Writes what is buffered and the file's footer (the caller syncs a file).
    pub fn finish(self) -> Result<()> {
        let path = &self.path;
        match self.writer {
            Writer::Csv(w) => w.into_inner().flush().map_err(|e| fail(path, e))?,
            Writer::Parquet(w) => {
                w.into_inner().map_err(|e| fail(path, e))?;
            }
        }
        Ok(())
    }
}
