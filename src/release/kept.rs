//! The rows of a text input (CSV), kept by pass 1 as text columns (each batch's keys into its
//! distinct values, in the narrowest width that holds them), so that the release of the chosen
//! node is written without parsing the input a second time. Kept within a byte budget shared by
//! the partitions and reserved in the session's memory pool; past either, nothing is kept and
//! the release reads the input again ([`super::stream`]). Kept batches are released as text
//! ([`super::text`]) in parallel and written in input order.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::{cast, take};
use arrow::datatypes::{Schema, SchemaRef, UInt8Type, UInt16Type, UInt32Type};
use arrow::record_batch::RecordBatch;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use rayon::prelude::*;

use super::fingerprint::Fingerprint;
use super::text::{CsvRelease, ReleasedText, TextRelease, is_text};
use crate::encode::TextColumn;
use crate::error::Result;
use crate::evaluate::Evaluator;
use crate::statistics::Companion;

/// Bytes of kept rows pass 1 may hold (keys and distinct values; about 10 bytes per row of a
/// nine-column table of person data, whose columns have at most 256 distinct values per batch):
/// past it the release reads the input again. 30 M such rows fit.
pub const KEEP_LIMIT: usize = 512 << 20;

/// Batches the release encodes in parallel before writing them (bounds the encoded bytes held).
const WINDOW: usize = 16;

/// The budget the partitions of one pass share.
#[derive(Debug)]
struct Budget {
    limit: usize,
    used: AtomicUsize,
    exceeded: AtomicBool,
    /// The bytes held, reserved in the session's memory pool (when given one).
    reservation: Option<MemoryReservation>,
}

impl Budget {
    /// Takes `bytes` more from the budget and the pool; false (and nothing taken) past either.
    fn take(&self, bytes: usize) -> bool {
        if self.exceeded.load(Ordering::Relaxed) {
            return false;
        }
        let used = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        used <= self.limit
            && self
                .reservation
                .as_ref()
                .is_none_or(|r| r.try_grow(bytes).is_ok())
    }

    /// Gives up keeping: every partition drops what it holds, and the pool gets it back.
    fn exceed(&self) {
        self.exceeded.store(true, Ordering::Relaxed);
        if let Some(r) = &self.reservation {
            r.free();
        }
    }
}

/// One kept column: the keys of its rows in the narrowest unsigned width that holds its distinct
/// values (one byte per row for most columns of person data, a quarter of the text form's keys).
#[derive(Debug, Clone)]
struct KeptColumn {
    keys: ArrayRef,
    values: arrow::array::StringArray,
}

impl KeptColumn {
    fn narrow(text: &TextColumn) -> Self {
        let keys: ArrayRef = match text.values.len() {
            0..=256 => Arc::new(text.keys.unary::<_, UInt8Type>(|k| k as u8)),
            257..=65536 => Arc::new(text.keys.unary::<_, UInt16Type>(|k| k as u16)),
            _ => Arc::new(text.keys.clone()),
        };
        KeptColumn {
            keys,
            values: text.values.clone(),
        }
    }

    fn bytes(&self) -> usize {
        self.keys.get_array_memory_size() + self.values.get_array_memory_size()
    }

    /// The column's text form again (keys widened back, nulls kept).
    fn text(&self) -> TextColumn {
        let keys: UInt32Array = match self.keys.data_type() {
            arrow::datatypes::DataType::UInt8 => self
                .keys
                .as_primitive::<UInt8Type>()
                .unary::<_, UInt32Type>(u32::from),
            arrow::datatypes::DataType::UInt16 => self
                .keys
                .as_primitive::<UInt16Type>()
                .unary::<_, UInt32Type>(u32::from),
            _ => self.keys.as_primitive::<UInt32Type>().clone(),
        };
        TextColumn {
            keys,
            values: self.values.clone(),
        }
    }
}

/// One kept batch: every column of the input as text.
#[derive(Debug, Clone)]
pub struct KeptBatch {
    rows: usize,
    columns: Vec<KeptColumn>,
}

impl KeptBatch {
    /// The batch as read again: each column's text in the type `schema` gives it.
    pub fn record_batch(&self, schema: &SchemaRef) -> Result<RecordBatch> {
        let columns = self
            .columns
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| {
                let text = take(&c.values, c.keys.as_ref(), None)?;
                Ok(if f.data_type() == text.data_type() {
                    text
                } else {
                    cast(&text, f.data_type())?
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    }
}

/// The rows pass 1 keeps for the release (a [`Companion`] of the statistics scan).
#[derive(Debug, Clone)]
pub struct KeptRows {
    budget: Arc<Budget>,
    batches: Vec<KeptBatch>,
}

impl KeptRows {
    /// Keeps rows up to `limit` bytes (0: keeps nothing and reads only the counted columns),
    /// reserving them in `pool` when given one (a pool that refuses also stops the keeping).
    pub fn new(limit: usize, pool: Option<&Arc<dyn MemoryPool>>) -> Self {
        KeptRows {
            budget: Arc::new(Budget {
                limit,
                used: AtomicUsize::new(0),
                exceeded: AtomicBool::new(limit == 0),
                reservation: pool.map(|p| MemoryConsumer::new("pbg kept rows").register(p)),
            }),
            batches: Vec::new(),
        }
    }

    /// The bytes the kept rows hold (0 once given up).
    pub fn bytes(&self) -> usize {
        if self.budget.exceeded.load(Ordering::Relaxed) {
            0
        } else {
            self.budget.used.load(Ordering::Relaxed)
        }
    }

    /// The kept batches in input order (partitions in order, each in file order), or `None`
    /// when the input was not all text or did not fit the budget.
    pub fn batches(&self) -> Option<&[KeptBatch]> {
        (!self.budget.exceeded.load(Ordering::Relaxed)).then_some(self.batches.as_slice())
    }

    /// The kept batches, moved out (see [`Self::batches`]).
    pub fn into_batches(self) -> Option<Arc<[KeptBatch]>> {
        (!self.budget.exceeded.load(Ordering::Relaxed)).then(|| self.batches.into())
    }

    fn give_up(&mut self) {
        self.budget.exceed();
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
        let columns: Vec<KeptColumn> = texts.iter().map(KeptColumn::narrow).collect();
        if !self
            .budget
            .take(columns.iter().map(KeptColumn::bytes).sum())
        {
            self.give_up();
            return Ok(());
        }
        self.batches.push(KeptBatch {
            rows: batch.num_rows(),
            columns,
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

/// Writes the CSV release of `node` from the kept rows to `path` (syncing it is the job of the
/// [`crate::io::AtomicFile`] it belongs to): the same columns, labels and rows as the release
/// plan, in input order. Returns the rows written and the fingerprint of every row written.
pub fn write_kept_csv(
    ev: &Evaluator,
    node: &[u8],
    kept: &[KeptBatch],
    path: &Path,
) -> Result<(u64, Fingerprint)> {
    let release = TextRelease::new(ev, node)?;
    let mut file = CsvRelease::create(path, &release)?;
    // A writer thread appends one window while the next is released in parallel: the kernel's
    // copy into the file is about as long as the release itself.
    let (send, receive) = std::sync::mpsc::sync_channel::<ReleasedText>(WINDOW);
    std::thread::scope(|s| {
        let writer = std::thread::Builder::new()
            .name("pbg-writer".into())
            .spawn_scoped(s, move || -> Result<(u64, Fingerprint)> {
                for part in receive {
                    file.append(part)?;
                }
                file.finish()
            })
            .map_err(|e| crate::input::thread_refused("the release's writer thread", e))?;
        let released = (|| -> Result<()> {
            for window in kept.chunks(WINDOW) {
                let parts = window
                    .par_iter()
                    .map(|b| {
                        let columns: Vec<TextColumn> =
                            b.columns.iter().map(KeptColumn::text).collect();
                        release.batch(b.rows, &columns)
                    })
                    .collect::<Result<Vec<_>>>()?;
                for part in parts {
                    if send.send(part).is_err() {
                        // The writer stopped on an error, which it returns.
                        return Ok(());
                    }
                }
            }
            Ok(())
        })();
        drop(send);
        let written = match writer.join() {
            Ok(written) => written,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        released?;
        written
    })
}
