//! The rows of a text input (CSV), kept by pass 1 as text columns (each batch's keys into its
//! distinct values), so that the release of the chosen node is written without parsing the input
//! a second time. Kept within a byte budget shared by the partitions; past it, nothing is kept
//! and the release re-reads the input through its DataFusion plan. The release of a kept batch
//! applies the same generalization kernel and the same suppressed-class filter as that plan, and
//! is encoded as CSV in parallel and written in input order.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use arrow::array::{Array, ArrayRef, AsArray, DictionaryArray, UInt32Array};
use arrow::compute::filter;
use arrow::datatypes::{DataType, Schema, UInt32Type};
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;

use super::fingerprint::Fingerprint;
use super::plan::suppression;
use super::udf::SuppressedClasses;
use crate::encode::TextColumn;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::hierarchy::generalize_with;
use crate::io::CsvQuoting;
use crate::statistics::Companion;

/// Bytes of kept rows pass 1 may hold (keys and distinct values; about 40 bytes per row of a
/// nine-column table): past it the release reads the input again.
pub const KEEP_LIMIT: usize = 256 << 20;

/// Batches the release encodes in parallel before writing them (bounds the encoded bytes held).
const WINDOW: usize = 16;

/// The budget the partitions of one pass share.
#[derive(Debug)]
struct Budget {
    limit: usize,
    used: AtomicUsize,
    exceeded: AtomicBool,
}

/// One kept batch: every column of the input as text.
#[derive(Debug, Clone)]
pub struct KeptBatch {
    rows: usize,
    columns: Vec<TextColumn>,
}

/// The rows pass 1 keeps for the release (a [`Companion`] of the statistics scan).
#[derive(Debug, Clone)]
pub struct KeptRows {
    budget: Arc<Budget>,
    batches: Vec<KeptBatch>,
}

impl KeptRows {
    /// Keeps rows up to `limit` bytes (0: keeps nothing and reads only the counted columns).
    pub fn new(limit: usize) -> Self {
        KeptRows {
            budget: Arc::new(Budget {
                limit,
                used: AtomicUsize::new(0),
                exceeded: AtomicBool::new(limit == 0),
            }),
            batches: Vec::new(),
        }
    }

    /// The kept batches in input order (partitions in order, each in file order), or `None`
    /// when the input was not all text or did not fit the budget.
    pub fn batches(&self) -> Option<&[KeptBatch]> {
        (!self.budget.exceeded.load(Ordering::Relaxed)).then_some(self.batches.as_slice())
    }

    fn give_up(&mut self) {
        self.budget.exceeded.store(true, Ordering::Relaxed);
        self.batches = Vec::new();
    }
}

/// Only text columns are kept: their text is what a CSV release writes, byte for byte.
fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

impl Companion for KeptRows {
    fn all_columns(&self, schema: &Schema) -> bool {
        let text = schema.fields().iter().all(|f| is_text(f.data_type()));
        if !text {
            self.budget.exceeded.store(true, Ordering::Relaxed);
        }
        text && !self.budget.exceeded.load(Ordering::Relaxed)
    }

    fn add(&mut self, batch: &RecordBatch, texts: &[TextColumn]) -> Result<()> {
        if self.budget.exceeded.load(Ordering::Relaxed) {
            self.batches = Vec::new();
            return Ok(());
        }
        let bytes: usize = texts
            .iter()
            .map(|t| t.keys.get_array_memory_size() + t.values.get_array_memory_size())
            .sum();
        let used = self.budget.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if used > self.budget.limit {
            self.give_up();
            return Ok(());
        }
        self.batches.push(KeptBatch {
            rows: batch.num_rows(),
            columns: texts.to_vec(),
        });
        Ok(())
    }

    fn merge(&mut self, other: Self) {
        if self.budget.exceeded.load(Ordering::Relaxed) {
            self.batches = Vec::new();
        } else {
            self.batches.extend(other.batches);
        }
    }
}

/// What the release of one batch needs to know, fixed for the node.
struct Release<'a> {
    ev: &'a Evaluator,
    node: &'a [u8],
    /// Per output column: the input column and, for a QI, its index.
    columns: Vec<(usize, Option<usize>)>,
    names: Vec<&'a str>,
    suppressed: Option<SuppressedClasses>,
    quoting: CsvQuoting,
}

impl Release<'_> {
    /// The batch's release as CSV text, its fingerprint and its row count.
    fn batch(&self, batch: &KeptBatch) -> Result<(Vec<u8>, Fingerprint, u64)> {
        let ds = self.ev.dataset();
        let mut out: Vec<TextColumn> = Vec::with_capacity(self.columns.len());
        let mut groups: Vec<(usize, UInt32Array)> = Vec::with_capacity(ds.qis.len());
        for &(c, qi) in &self.columns {
            let text = &batch.columns[c];
            let Some(d) = qi else {
                out.push(text.clone());
                continue;
            };
            // The plan's kernel, over the batch's dictionary.
            let dict: ArrayRef = Arc::new(DictionaryArray::<UInt32Type>::try_new(
                text.keys.clone(),
                Arc::new(text.values.clone()),
            )?);
            let q = &ds.qis[d];
            let label = generalize_with(
                &q.hierarchy,
                self.node[d],
                &dict,
                ds.profile.qis[d].null_as.as_deref(),
            )?;
            let label = label.as_dictionary::<UInt32Type>();
            if label.keys().null_count() > 0 {
                return Err(PbgError::Format {
                    path: ds.input().as_path(),
                    message: format!(
                        "column `{}` holds a null and its profile declares no `null_as`",
                        q.name
                    ),
                });
            }
            groups.push((d, label.keys().clone()));
            out.push(TextColumn {
                keys: label.keys().clone(),
                values: label.values().as_string::<i32>().clone(),
            });
        }
        let mut rows = batch.rows;
        if let Some(suppressed) = &self.suppressed {
            groups.sort_by_key(|(d, _)| *d);
            let codes: Vec<&[u32]> = groups.iter().map(|(_, g)| g.values().as_ref()).collect();
            let keep = suppressed.keep(&codes, rows);
            rows = keep.true_count();
            if rows < batch.rows {
                for column in &mut out {
                    column.keys = filter(&column.keys, &keep)?.as_primitive().clone();
                }
            }
        }
        let mut fingerprint = Fingerprint::default();
        fingerprint.add_texts(&self.names, &out, rows);
        let mut bytes = Vec::new();
        self.quoting.rows(&out, rows, &mut bytes);
        Ok((bytes, fingerprint, rows as u64))
    }
}

/// Writes the CSV release of `node` from the kept rows to `path` and syncs it to disk: the same
/// columns, labels and rows as the release plan, in input order. Returns the rows written and the
/// fingerprint of every row written.
pub fn write_kept_csv(
    ev: &Evaluator,
    node: &[u8],
    kept: &[KeptBatch],
    path: &Path,
) -> Result<(u64, Fingerprint)> {
    let ds = ev.dataset();
    let indices = ev.evaluate(node)?;
    let mut columns = Vec::new();
    let mut names = Vec::new();
    for (c, field) in ds.schema.fields().iter().enumerate() {
        if ds.identifiers.contains(&c) {
            continue;
        }
        columns.push((c, ds.qis.iter().position(|q| q.name == *field.name())));
        names.push(field.name().as_str());
    }
    let release = Release {
        ev,
        node,
        columns,
        names,
        suppressed: suppression(ev, node, indices.threshold)?,
        quoting: CsvQuoting::default(),
    };
    let io = |e: std::io::Error| PbgError::io(path, e);
    let file = std::fs::File::create(path).map_err(io)?;
    let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
    writer
        .write_all(&release.quoting.header(&release.names))
        .map_err(io)?;
    let mut rows = 0u64;
    let mut fingerprint = Fingerprint::default();
    for window in kept.chunks(WINDOW) {
        let parts: Vec<Result<(Vec<u8>, Fingerprint, u64)>> =
            window.par_iter().map(|b| release.batch(b)).collect();
        for part in parts {
            let (bytes, f, n) = part?;
            writer.write_all(&bytes).map_err(io)?;
            fingerprint.merge(&f);
            rows += n;
        }
    }
    let file = writer.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    Ok((rows, fingerprint))
}
