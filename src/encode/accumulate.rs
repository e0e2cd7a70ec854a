//! The class-statistics aggregate pbg runs over a table's DataFusion partitions: each partition's
//! batches are counted into distinct combinations of the profile's columns — every value gets an id
//! by its text the first time it is seen, ids are packed into one integer key (widened, and the
//! counts repacked, only when a column's dictionary outgrows its bits) and counted in an
//! open-addressing table — and the partitions' counts are concatenated, to be merged by the
//! normalizing sort of [`super::Combinations`]. It computes what `GROUP BY cols,
//! count(*)` computes ([`super::statistics::statistics_plan`], the form a cluster distributes) on
//! packed integer keys, and keeps its memory inside the session's pool.

use std::borrow::Cow;

use rayon::prelude::*;

use arrow::array::Array;
use arrow::record_batch::RecordBatch;

use super::packed::{Counter, bits_for};
use super::{ColumnValues, CountColumn};
use crate::error::{PbgError, Result};
use crate::input::text::{TextColumn, text_column};

/// Distinct combinations unpacked: per column its values and every combination's id, then every
/// combination's count.
pub(crate) type Unpacked = (Vec<ColumnValues>, Vec<Vec<u32>>, Vec<u64>);

/// Counting state of one partition.
pub(crate) struct Accumulator {
    pub(crate) columns: Vec<ColumnValues>,
    bits: Vec<u32>,
    shifts: Vec<u32>,
    packed: Counter,
    /// Used instead of `packed` once the ids no longer fit 63 bits.
    wide: Option<WideCounter>,
}

impl Accumulator {
    pub(crate) fn new(n: usize) -> Self {
        let mut a = Accumulator {
            columns: vec![ColumnValues::default(); n],
            bits: vec![0; n],
            shifts: vec![0; n],
            packed: Counter::with_capacity(1024),
            wide: None,
        };
        a.layout();
        a
    }

    fn layout(&mut self) {
        let mut shift = 0;
        for (s, &b) in self.shifts.iter_mut().zip(&self.bits) {
            *s = shift;
            shift += b;
        }
    }

    fn unpack(&self, key: u64) -> Vec<u32> {
        self.bits
            .iter()
            .zip(&self.shifts)
            .map(|(&b, &s)| ((key >> s) & ((1u64 << b) - 1)) as u32)
            .collect()
    }

    fn pack(&self, ids: &[u32]) -> u64 {
        ids.iter()
            .zip(&self.shifts)
            .fold(0u64, |k, (&id, &s)| k | ((id as u64) << s))
    }

    /// Distinct combinations counted.
    pub(crate) fn combinations(&self) -> usize {
        match &self.wide {
            Some(m) => m.len(),
            None => self.packed.len(),
        }
    }

    /// Bytes held (for the memory pool).
    pub(crate) fn size(&self) -> usize {
        let values: usize = self
            .columns
            .iter()
            .map(|c| c.values.iter().map(|v| v.len() * 2 + 64).sum::<usize>())
            .sum();
        let combos = match &self.wide {
            Some(m) => m.len() * (self.columns.len() * 4 + 24),
            None => self.packed.len() * 32,
        };
        values + combos
    }

    /// Widens the key layout so that every current id fits, repacking the counts (or moving them
    /// to the wide map when 63 bits no longer suffice).
    fn fit(&mut self) {
        if self.wide.is_some() {
            return;
        }
        let need: Vec<u32> = self
            .columns
            .iter()
            .map(|c| bits_for(c.values.len()))
            .collect();
        if need.iter().zip(&self.bits).all(|(n, b)| n <= b) {
            return;
        }
        // Grow by a margin so that repacking stays rare.
        let bits: Vec<u32> = need
            .iter()
            .zip(&self.bits)
            .map(|(&n, &b)| if n <= b { b } else { n + 1 })
            .collect();
        let old = std::mem::replace(&mut self.packed, Counter::with_capacity(8)).into_pairs();
        let old_combos: Vec<(Vec<u32>, u64)> =
            old.iter().map(|&(k, c)| (self.unpack(k), c)).collect();
        if bits.iter().sum::<u32>() > 63 {
            let mut wide = WideCounter::new(self.columns.len());
            for (ids, count) in &old_combos {
                wide.add(ids, *count);
            }
            self.wide = Some(wide);
            return;
        }
        self.bits = bits;
        self.layout();
        self.packed = Counter::with_capacity(old_combos.len().max(1024));
        for (ids, count) in old_combos {
            let key = self.pack(&ids);
            self.packed.add(key, count);
        }
    }

    /// Counts one record batch whose columns are `spec`'s, in order.
    pub(crate) fn add_batch(&mut self, spec: &[CountColumn], batch: &RecordBatch) -> Result<()> {
        let mut texts = Vec::with_capacity(spec.len());
        for i in 0..spec.len() {
            texts.push(text_column(batch.column(i))?);
        }
        let texts: Vec<&TextColumn> = texts.iter().collect();
        self.add_texts(spec, &texts, batch.num_rows())
    }

    /// Counts `n` rows given as the text columns of `spec`'s columns, in order.
    pub(crate) fn add_texts(
        &mut self,
        spec: &[CountColumn],
        texts: &[&TextColumn],
        n: usize,
    ) -> Result<()> {
        let mut keys: Vec<Cow<'_, [u32]>> = Vec::with_capacity(spec.len());
        let mut local_ids: Vec<Vec<u32>> = Vec::with_capacity(spec.len());
        for ((c, text), values) in spec.iter().zip(texts).zip(self.columns.iter_mut()) {
            // A null inside the dictionary counts as a null row.
            let fill = c.null_as.as_deref().map(|f| values.id(f));
            let mut ids: Vec<u32> = (0..text.values.len())
                .map(|i| {
                    if text.values.is_null(i) {
                        fill.unwrap_or(u32::MAX)
                    } else {
                        values.id(text.values.value(i))
                    }
                })
                .collect();
            let null = || PbgError::NullValue {
                column: c.name.clone(),
                row: 0,
                hint: c.null_hint.clone(),
            };
            let column_keys: Cow<'_, [u32]> = if text.keys.null_count() == 0 {
                Cow::Borrowed(text.keys.values())
            } else {
                match fill {
                    Some(fill) => {
                        let null_key = ids.len() as u32;
                        ids.push(fill);
                        Cow::Owned(text.keys.iter().map(|k| k.unwrap_or(null_key)).collect())
                    }
                    None => return Err(null()),
                }
            };
            if ids.contains(&u32::MAX) && column_keys.iter().any(|&k| ids[k as usize] == u32::MAX) {
                return Err(null());
            }
            keys.push(column_keys);
            local_ids.push(ids);
        }
        self.fit();
        if let Some(wide) = &mut self.wide {
            // Column by column into a row-major buffer (no allocation per row), then counted.
            let w = keys.len();
            let mut ids = vec![0u32; n * w];
            for (c, (k, m)) in keys.iter().zip(&local_ids).enumerate() {
                for (r, &key) in k.iter().enumerate() {
                    ids[r * w + c] = m[key as usize];
                }
            }
            for row in ids.chunks_exact(w.max(1)) {
                wide.add(row, 1);
            }
            return Ok(());
        }
        // Packed keys, one column at a time over the batch (vectorizable), then counted.
        let mut packed = vec![0u64; n];
        for ((k, m), &s) in keys.iter().zip(&local_ids).zip(&self.shifts) {
            for (p, &key) in packed.iter_mut().zip(k.iter()) {
                *p |= (m[key as usize] as u64) << s;
            }
        }
        self.packed.add_ones(&packed);
        Ok(())
    }

    /// The distinct combinations of several partitions' accumulators as one list (a combination
    /// seen by several partitions appears once per partition; [`super::Combinations`]'s
    /// normalization merges them): each column's ids are translated into the first partition's
    /// values, columns in parallel, instead of re-counting every combination into one table.
    pub(crate) fn concat(parts: Vec<Accumulator>) -> Unpacked {
        let n = parts.first().map_or(0, |p| p.columns.len());
        let unpacked: Vec<Unpacked> = parts
            .into_par_iter()
            .map(|mut p| {
                let columns = std::mem::take(&mut p.columns);
                let (ids, counts) = p.into_columns();
                (columns, ids, counts)
            })
            .collect();
        // Per column, every partition's values and ids.
        let mut by_column: Vec<Vec<(ColumnValues, Vec<u32>)>> =
            (0..n).map(|_| Vec::new()).collect();
        let mut weights: Vec<u64> = Vec::new();
        for (columns, ids, counts) in unpacked {
            for (column, part) in by_column.iter_mut().zip(columns.into_iter().zip(ids)) {
                column.push(part);
            }
            weights.extend(counts);
        }
        let (columns, ids): (Vec<ColumnValues>, Vec<Vec<u32>>) = by_column
            .into_par_iter()
            .map(|parts| {
                let mut parts = parts.into_iter();
                let (mut mine, mut all) = parts.next().unwrap_or_default();
                for (theirs, their_ids) in parts {
                    let map: Vec<u32> = theirs.values.iter().map(|v| mine.id(v)).collect();
                    all.extend(their_ids.iter().map(|&i| map[i as usize]));
                }
                (mine, all)
            })
            .unzip();
        (columns, ids, weights)
    }

    /// The distinct combinations column by column (`ids[c][i]` is column `c`'s id in combination
    /// `i`), with their counts: flat, not one allocation per combination.
    pub(crate) fn into_columns(self) -> (Vec<Vec<u32>>, Vec<u64>) {
        match self.wide {
            Some(map) => map.into_columns(),
            None => {
                let cells = self.packed.into_pairs();
                let ids = self
                    .bits
                    .iter()
                    .zip(&self.shifts)
                    .map(|(&b, &s)| {
                        let mask = (1u64 << b) - 1;
                        cells
                            .iter()
                            .map(|&(k, _)| ((k >> s) & mask) as u32)
                            .collect()
                    })
                    .collect::<Vec<Vec<u32>>>();
                (ids, cells.into_iter().map(|(_, c)| c).collect())
            }
        }
    }
}

/// Counts of id combinations too wide to pack: combinations stored flat (no allocation per row),
/// found through an open-addressing table of their hashes, equal hashes confirmed id by id.
pub(crate) struct WideCounter {
    width: usize,
    /// Combination `i` is `ids[i * width..(i + 1) * width]`.
    ids: Vec<u32>,
    counts: Vec<u64>,
    /// Per slot, combination index + 1 (0 = empty).
    slots: Vec<u32>,
    hashes: Vec<u64>,
}

impl WideCounter {
    fn new(width: usize) -> Self {
        WideCounter {
            width,
            ids: Vec::new(),
            counts: Vec::new(),
            slots: vec![0; 1024],
            hashes: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.counts.len()
    }

    fn hash(ids: &[u32]) -> u64 {
        let mut h = 0x243F_6A88_85A3_08D3u64;
        for &id in ids {
            h = (h.rotate_left(26) ^ id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        h ^ (h >> 31)
    }

    fn add(&mut self, ids: &[u32], count: u64) {
        if (self.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let h = Self::hash(ids);
        let mask = self.slots.len() - 1;
        let mut s = (h as usize) & mask;
        loop {
            let t = self.slots[s];
            if t == 0 {
                self.slots[s] = self.counts.len() as u32 + 1;
                self.ids.extend_from_slice(ids);
                self.counts.push(count);
                self.hashes.push(h);
                return;
            }
            let i = (t - 1) as usize;
            if self.hashes[i] == h && &self.ids[i * self.width..(i + 1) * self.width] == ids {
                self.counts[i] += count;
                return;
            }
            s = (s + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let cap = self.slots.len() * 2;
        self.slots = vec![0; cap];
        let mask = cap - 1;
        for (i, &h) in self.hashes.iter().enumerate() {
            let mut s = (h as usize) & mask;
            while self.slots[s] != 0 {
                s = (s + 1) & mask;
            }
            self.slots[s] = i as u32 + 1;
        }
    }

    fn into_columns(self) -> (Vec<Vec<u32>>, Vec<u64>) {
        let w = self.width;
        let ids = (0..w)
            .into_par_iter()
            .map(|c| self.ids.chunks_exact(w).map(|row| row[c]).collect())
            .collect();
        (ids, self.counts)
    }
}
