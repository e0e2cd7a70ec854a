//! The release of a node: QIs replaced by their generalized labels, identifiers dropped,
//! suppressed rows removed, other columns kept; written atomically and verified from the file.

mod check;
mod stream;

pub use check::{ReleaseCheck, check_release, confirm};
pub use stream::{StreamSummary, StreamedRows, Timings, anonymize_stream, write_release_stream};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, DictionaryArray, StringArray, UInt32Array,
};
use arrow::compute::{cast, filter, take};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type};
use arrow::record_batch::RecordBatch;
use serde::Serialize;

use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::indices::NodeIndices;
use crate::io::{AtomicFile, OutputFormat, read_table, write_batches};
use crate::lattice::Node;

/// What `anonymize` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ReleaseSummary {
    /// The file written.
    pub output: PathBuf,
    /// The node applied.
    pub node: Node,
    /// Input rows.
    pub rows_in: u64,
    /// Rows in the release.
    pub rows_released: u64,
    /// Rows suppressed.
    pub suppressed: u64,
    /// The node's indices (recomputed from the written file where marked verified).
    pub indices: NodeIndices,
    /// k, l and the class count recomputed from the written file agreed with the engine.
    pub verified: bool,
}

/// The schema of a release: the input's columns minus identifiers, QIs as generalized text labels.
pub fn release_schema(ev: &Evaluator) -> SchemaRef {
    let ds = ev.dataset();
    let fields: Vec<Field> = ds
        .table
        .schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, _)| !ds.identifiers.contains(i))
        .map(|(i, f)| match ds.qis.iter().any(|q| q.column == i) {
            true => Field::new(f.name(), DataType::Utf8, false),
            false => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Produces the release of `node` in chunks of at most `chunk_rows` input rows, passing each
/// non-empty chunk to `emit` (which returns false to stop early). Returns the node's indices.
pub fn release_chunks(
    ev: &Evaluator,
    node: &[u8],
    chunk_rows: usize,
    emit: &mut dyn FnMut(RecordBatch) -> Result<bool>,
) -> Result<NodeIndices> {
    let rows = ev.evaluate_rows(node)?;
    let ds = ev.dataset();
    let n = ds.num_rows();
    let schema = release_schema(ev);
    // Per output column: either a QI (its position in node order) or a pass-through column.
    let mut sources: Vec<(Option<usize>, ArrayRef)> = Vec::new();
    for i in 0..ds.table.schema.fields().len() {
        if ds.identifiers.contains(&i) {
            continue;
        }
        match ds.qis.iter().position(|q| q.column == i) {
            Some(d) => sources.push((Some(d), Arc::new(ds.qis[d].codes.clone()))),
            None => sources.push((None, ds.table.column(i)?)),
        }
    }
    let groups: Vec<UInt32Array> = ds
        .qis
        .iter()
        .enumerate()
        .map(|(d, q)| UInt32Array::from(q.hierarchy.level(node[d]).group_of_leaf.clone()))
        .collect();
    let labels: Vec<ArrayRef> = ds
        .qis
        .iter()
        .enumerate()
        .map(|(d, q)| {
            Arc::new(StringArray::from_iter_values(
                q.hierarchy.level(node[d]).labels.iter(),
            )) as ArrayRef
        })
        .collect();
    let mut start = 0;
    while start < n {
        let len = chunk_rows.max(1).min(n - start);
        let keep = BooleanArray::from_iter(
            (start..start + len).map(|r| Some(!rows.suppressed.contains(r as u32))),
        );
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(sources.len());
        for (qi, array) in &sources {
            let part = filter(&array.slice(start, len), &keep)?;
            columns.push(match qi {
                Some(d) => {
                    let keys = take(&groups[*d], &part, None)?;
                    let dict = DictionaryArray::<UInt32Type>::try_new(
                        keys.as_primitive::<UInt32Type>().clone(),
                        labels[*d].clone(),
                    )?;
                    cast(&dict, &DataType::Utf8)?
                }
                None => part,
            });
        }
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        if batch.num_rows() > 0 && !emit(batch)? {
            break;
        }
        start += len;
    }
    Ok(rows.indices)
}

/// Builds the release of `node` as one record batch.
pub fn release_batch(ev: &Evaluator, node: &[u8]) -> Result<(RecordBatch, NodeIndices)> {
    let mut batches = Vec::new();
    let indices = release_chunks(ev, node, usize::MAX, &mut |b| {
        batches.push(b);
        Ok(true)
    })?;
    let batch = match batches.pop() {
        Some(b) => b,
        None => RecordBatch::new_empty(release_schema(ev)),
    };
    Ok((batch, indices))
}

/// Writes the release of `node` to `output` (CSV or Parquet by extension): to a temporary file,
/// re-read and verified, then renamed into place.
pub fn anonymize(ev: &Evaluator, node: &[u8], output: &Path) -> Result<ReleaseSummary> {
    let (batch, indices) = release_batch(ev, node)?;
    let file = AtomicFile::new(output)?;
    write_batches(
        file.temp_path(),
        OutputFormat::from_path(output),
        batch.schema(),
        &[batch],
    )?;
    verify_release(ev, node, &indices, file.temp_path())?;
    file.commit()?;
    let rows_in = ev.dataset().num_rows() as u64;
    Ok(ReleaseSummary {
        output: output.to_path_buf(),
        node: node.to_vec(),
        rows_in,
        rows_released: rows_in - indices.suppressed,
        suppressed: indices.suppressed,
        indices,
        verified: true,
    })
}

/// Re-reads a written release and recomputes its classes, k and distinct l from the text labels
/// alone (not the engine's codes); checks row accounting and that every QI label belongs to the
/// node's level.
pub fn verify_release(
    ev: &Evaluator,
    node: &[u8],
    expected: &NodeIndices,
    path: &Path,
) -> Result<()> {
    let fail = |message: String| PbgError::Verification {
        path: path.to_path_buf(),
        message,
    };
    let ds = ev.dataset();
    let table = match read_table(path, b',') {
        Ok(t) => t,
        Err(PbgError::EmptyTable { .. }) => return Err(fail("the release has no rows".into())),
        Err(e) => return Err(e),
    };
    let rows = table.num_rows() as u64;
    if rows + expected.suppressed != ds.num_rows() as u64 {
        return Err(fail(format!(
            "row accounting: {rows} released + {} suppressed != {} input rows",
            expected.suppressed,
            ds.num_rows()
        )));
    }
    // Class = tuple of QI label codes (dictionary-encoded from the file's text).
    let mut tuple_keys: Vec<Vec<u32>> = vec![Vec::with_capacity(ds.qis.len()); rows as usize];
    for (d, q) in ds.qis.iter().enumerate() {
        let col = cast(
            &table.column(table.column_index(&q.name)?)?,
            &DataType::Utf8,
        )?;
        let allowed: std::collections::HashSet<&str> = q
            .hierarchy
            .level(node[d])
            .labels
            .iter()
            .map(String::as_str)
            .collect();
        let text = col.as_string::<i32>();
        let mut codes: HashMap<&str, u32> = HashMap::new();
        for (r, key) in tuple_keys.iter_mut().enumerate() {
            let v = if text.is_null(r) { "" } else { text.value(r) };
            if !allowed.contains(v) {
                return Err(fail(format!(
                    "column `{}` row {}: `{v}` is not a label of level {} of its hierarchy",
                    q.name,
                    r + 1,
                    node[d]
                )));
            }
            let next = codes.len() as u32;
            key.push(*codes.entry(v).or_insert(next));
        }
    }
    let sens = cast(
        &table.column(table.column_index(&ds.sensitive.name)?)?,
        &DataType::Utf8,
    )?;
    let sens = sens.as_string::<i32>();
    let mut classes: HashMap<&[u32], HashMap<&str, u64>> = HashMap::new();
    for (r, key) in tuple_keys.iter().enumerate() {
        *classes
            .entry(key.as_slice())
            .or_default()
            .entry(sens.value(r))
            .or_default() += 1;
    }
    let k = classes
        .values()
        .map(|h| h.values().sum::<u64>())
        .min()
        .unwrap_or(0);
    let l = classes.values().map(|h| h.len() as u64).min().unwrap_or(0);
    if classes.len() as u64 != expected.classes || k != expected.k || l != expected.l_distinct {
        return Err(fail(format!(
            "recomputed from the file: {} classes, k = {k}, l = {l}; the engine said {} classes, k = {}, l = {}",
            classes.len(),
            expected.classes,
            expected.k,
            expected.l_distinct
        )));
    }
    Ok(())
}
