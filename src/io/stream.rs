//! Streaming input: a CSV or Parquet file read in parts (Parquet row groups, decoded
//! independently and so in parallel; a CSV file is one part) without holding the table, and the
//! dictionary (distinct text forms + keys) of a batch column, which is how streamed values are
//! matched to hierarchies.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef, AsArray, StringArray, UInt32Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, SchemaRef, UInt32Type};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::read::{csv_reader, csv_schema, format_err};
use crate::error::{PbgError, Result};

/// Rows per record batch when streaming.
const BATCH_ROWS: usize = 64 * 1024;

/// One independently decodable part of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// Position of the part in the file (row group index; 0 for CSV).
    pub index: usize,
    /// 0-based data row of the part's first row.
    pub first_row: u64,
    /// Rows in the part (unknown, 0, for CSV).
    pub rows: u64,
}

/// An input file opened for streaming.
#[derive(Debug, Clone)]
pub struct StreamInput {
    /// The file (named in every error).
    pub path: PathBuf,
    /// The schema the reader chose.
    pub schema: SchemaRef,
    /// The parts, in file order.
    pub parts: Vec<Part>,
    parquet: bool,
    delimiter: u8,
}

/// Whether a path names a Parquet file (by its extension).
pub fn is_parquet(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .as_deref(),
        Some("parquet" | "parq")
    )
}

impl StreamInput {
    /// Opens `path` (Parquet by extension, else CSV with `delimiter`) and lists its parts.
    pub fn open(path: &Path, delimiter: u8) -> Result<Self> {
        if is_parquet(path) {
            let file = File::open(path).map_err(|e| PbgError::io(path, e))?;
            let builder =
                ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| format_err(path, e))?;
            let mut first_row = 0u64;
            let parts = builder
                .metadata()
                .row_groups()
                .iter()
                .enumerate()
                .map(|(index, rg)| {
                    let rows = rg.num_rows() as u64;
                    let part = Part {
                        index,
                        first_row,
                        rows,
                    };
                    first_row += rows;
                    part
                })
                .collect();
            return Ok(StreamInput {
                path: path.to_path_buf(),
                schema: builder.schema().clone(),
                parts,
                parquet: true,
                delimiter,
            });
        }
        Ok(StreamInput {
            path: path.to_path_buf(),
            schema: csv_schema(path, delimiter)?,
            parts: vec![Part {
                index: 0,
                first_row: 0,
                rows: 0,
            }],
            parquet: false,
            delimiter,
        })
    }

    /// Index of a column, or an error naming the file and listing its columns.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        super::read::column_index(&self.path, &self.schema, name)
    }

    /// Reads one part, passing each record batch with the 0-based data row of its first row.
    pub fn read_part(
        &self,
        part: &Part,
        f: &mut dyn FnMut(u64, RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let path = &self.path;
        let mut row = part.first_row;
        let mut emit = |batch: std::result::Result<RecordBatch, arrow::error::ArrowError>| {
            let batch = batch.map_err(|e| format_err(path, e))?;
            let n = batch.num_rows() as u64;
            f(row, batch)?;
            row += n;
            Ok::<(), PbgError>(())
        };
        if self.parquet {
            let file = File::open(path).map_err(|e| PbgError::io(path, e))?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| format_err(path, e))?
                .with_row_groups(vec![part.index])
                .with_batch_size(BATCH_ROWS)
                .build()
                .map_err(|e| format_err(path, e))?;
            for batch in reader {
                emit(batch)?;
            }
        } else {
            let reader = csv_reader(path, self.schema.clone(), self.delimiter, BATCH_ROWS)?;
            for batch in reader {
                emit(batch)?;
            }
        }
        Ok(())
    }
}

/// A batch column as dictionary keys into its distinct text forms (the same text as a cast of
/// each value to Utf8). Nulls stay null in `keys`.
#[derive(Debug)]
pub struct TextColumn {
    /// Key of every row.
    pub keys: UInt32Array,
    /// Distinct text forms (may include values no key points to).
    pub values: StringArray,
}

/// Dictionary-encodes a column by its text form without formatting every row: dictionary
/// columns keep their dictionary, numbers are packed by value first and only the distinct
/// values are formatted.
pub fn text_column(column: &ArrayRef) -> Result<TextColumn> {
    let dict_type =
        |v: &DataType| DataType::Dictionary(Box::new(DataType::UInt32), Box::new(v.clone()));
    let dict = match column.data_type() {
        DataType::Dictionary(_, v) => cast(column, &dict_type(v))?,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            cast(column, &dict_type(&DataType::Utf8))?
        }
        t if t.is_primitive() => cast(column, &dict_type(t))?,
        _ => cast(&cast(column, &DataType::Utf8)?, &dict_type(&DataType::Utf8))?,
    };
    let dict = dict.as_dictionary::<UInt32Type>();
    let values = cast(dict.values(), &DataType::Utf8)?;
    Ok(TextColumn {
        keys: dict.keys().clone(),
        values: values.as_string::<i32>().clone(),
    })
}
