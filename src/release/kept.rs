//! The rows of a text input (CSV), kept by pass 1 as text columns (each batch's keys into its
//! distinct values), so that the release of the chosen node is written without parsing the input
//! a second time. Kept within a byte budget shared by the partitions; past it, nothing is kept
//! and the release reads the input again ([`super::stream`]). Kept batches are released as text
//! ([`super::text`]) in parallel and written in input order.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use arrow::array::Array;
use arrow::datatypes::Schema;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;

use super::fingerprint::Fingerprint;
use super::text::{CsvRelease, ReleasedText, TextRelease, is_text};
use crate::encode::TextColumn;
use crate::error::Result;
use crate::evaluate::Evaluator;
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

impl Companion for KeptRows {
    fn all_columns(&self, schema: &Schema) -> bool {
        let text = schema.fields().iter().all(|f| is_text(f.data_type()));
        if !text {
            self.budget.exceeded.store(true, Ordering::Relaxed);
        }
        text && !self.budget.exceeded.load(Ordering::Relaxed)
    }

    fn wants_more(&mut self) -> bool {
        if self.budget.exceeded.load(Ordering::Relaxed) {
            self.batches = Vec::new();
            return false;
        }
        true
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

/// Writes the CSV release of `node` from the kept rows to `path` and syncs it to disk: the same
/// columns, labels and rows as the release plan, in input order. Returns the rows written and the
/// fingerprint of every row written.
pub fn write_kept_csv(
    ev: &Evaluator,
    node: &[u8],
    kept: &[KeptBatch],
    path: &Path,
) -> Result<(u64, Fingerprint)> {
    let release = TextRelease::new(ev, node)?;
    let mut file = CsvRelease::create(path, &release)?;
    for window in kept.chunks(WINDOW) {
        let parts: Vec<Result<ReleasedText>> = window
            .par_iter()
            .map(|b| release.batch(b.rows, &b.columns))
            .collect();
        for part in parts {
            file.append(part?)?;
        }
    }
    file.finish()
}
