//! Reads a CSV (header row, any delimiter) or Parquet file into Arrow record batches.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::compute::concat;
use arrow::csv::ReaderBuilder;
use arrow::csv::reader::Format;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{PbgError, Result};

/// Rows per record batch when reading CSV.
const BATCH_ROWS: usize = 64 * 1024;

/// An input table: its file, schema and record batches.
#[derive(Debug, Clone)]
pub struct Table {
    /// The file it was read from (named in every error).
    pub path: PathBuf,
    /// The schema the reader chose.
    pub schema: SchemaRef,
    /// The data, in file order.
    pub batches: Vec<RecordBatch>,
}

impl Table {
    /// Number of data rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// Index of a column, or an error naming the file and listing the columns it has.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        column_index(&self.path, &self.schema, name)
    }

    /// One column as a single array (batches concatenated).
    pub fn column(&self, index: usize) -> Result<ArrayRef> {
        let parts: Vec<&dyn arrow::array::Array> = self
            .batches
            .iter()
            .map(|b| b.column(index).as_ref())
            .collect();
        if parts.is_empty() {
            return Ok(arrow::array::new_empty_array(
                self.schema.field(index).data_type(),
            ));
        }
        Ok(concat(&parts)?)
    }
}

/// Index of column `name` in `schema` of the file `path`, or an error naming the file and listing
/// the columns it has.
pub fn column_index(path: &Path, schema: &SchemaRef, name: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| PbgError::UnknownColumn {
        path: path.to_path_buf(),
        column: name.to_string(),
        available: schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// Reads `path` as Parquet (by the `.parquet`/`.parq` extension) or CSV with the given delimiter.
///
/// CSV types are inferred from the whole file so that a late odd value cannot break the read.
pub fn read_table(path: &Path, delimiter: u8) -> Result<Table> {
    let table = if super::is_parquet(path) {
        read_parquet(path)?
    } else {
        read_csv(path, delimiter)?
    };
    if table.num_rows() == 0 {
        return Err(PbgError::EmptyTable {
            path: path.to_path_buf(),
        });
    }
    Ok(table)
}

pub(super) fn format_err(path: &Path, e: impl std::fmt::Display) -> PbgError {
    PbgError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// The schema of a CSV file (types inferred from the whole file, header row, `delimiter`).
pub(super) fn csv_schema(path: &Path, delimiter: u8) -> Result<SchemaRef> {
    let mut file = File::open(path).map_err(|e| PbgError::io(path, e))?;
    let (schema, _) = csv_format(delimiter)
        .infer_schema(&mut file, None)
        .map_err(|e| format_err(path, e))?;
    if schema.fields().is_empty() {
        return Err(PbgError::EmptyTable {
            path: path.to_path_buf(),
        });
    }
    Ok(Arc::new(schema))
}

fn csv_format(delimiter: u8) -> Format {
    Format::default()
        .with_header(true)
        .with_delimiter(delimiter)
}

/// A reader of the CSV file's record batches, from its start, with a known schema.
pub(super) fn csv_reader(
    path: &Path,
    schema: SchemaRef,
    delimiter: u8,
    batch_rows: usize,
) -> Result<arrow::csv::Reader<File>> {
    let file = File::open(path).map_err(|e| PbgError::io(path, e))?;
    ReaderBuilder::new(schema)
        .with_format(csv_format(delimiter))
        .with_batch_size(batch_rows)
        .build(file)
        .map_err(|e| format_err(path, e))
}

fn read_csv(path: &Path, delimiter: u8) -> Result<Table> {
    let schema = csv_schema(path, delimiter)?;
    let reader = csv_reader(path, schema.clone(), delimiter, BATCH_ROWS)?;
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| format_err(path, e))?;
    Ok(Table {
        path: path.to_path_buf(),
        schema,
        batches,
    })
}

fn read_parquet(path: &Path) -> Result<Table> {
    let file = File::open(path).map_err(|e| PbgError::io(path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| format_err(path, e))?;
    let schema = builder.schema().clone();
    let reader = builder
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| format_err(path, e))?;
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| format_err(path, e))?;
    Ok(Table {
        path: path.to_path_buf(),
        schema,
        batches,
    })
}
