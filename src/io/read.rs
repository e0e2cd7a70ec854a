//! Whole tables in memory (slicing, correlation, experiments), read through the DataFusion plane
//! ([`crate::input`]) in file order: the same reader, the same text fidelity as every other pass.

use std::path::{Path, PathBuf};

use arrow::array::ArrayRef;
use arrow::compute::concat;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;

use crate::error::{PbgError, Result};
use crate::input::{self, Input, block_on, df_error};

/// An input table: its source, schema and record batches.
#[derive(Debug, Clone)]
pub struct Table {
    /// The input it was read from (named in every error).
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

/// Index of column `name` in `schema` of the input `path`, or an error naming it and listing
/// the columns it has.
pub fn column_index(path: &Path, schema: &SchemaRef, name: &str) -> Result<usize> {
    input::column_index(&Input::Path(path.to_path_buf()), schema, name)
}

/// Reads a whole input (a path or, in `ctx`, a registered table) in file order.
pub async fn read_table_in(ctx: &SessionContext, source: &Input, delimiter: u8) -> Result<Table> {
    let ordered = input::ordered_context(ctx);
    let df = input::open(&ordered, source, delimiter).await?;
    let schema = df.schema().inner().clone();
    let batches = df.collect().await.map_err(|e| df_error(source, e))?;
    let table = Table {
        path: source.as_path(),
        schema,
        batches,
    };
    if table.num_rows() == 0 {
        return Err(PbgError::EmptyTable {
            path: source.as_path(),
        });
    }
    Ok(table)
}

/// Reads a whole input on a default session (see [`read_table_in`]).
pub fn read_table(source: &Input, delimiter: u8) -> Result<Table> {
    let ctx = input::new_context();
    block_on(read_table_in(&ctx, source, delimiter))?
}
