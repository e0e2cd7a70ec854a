//! Dense cell tables: per equivalence class the count of every value, for value domains of at
//! most [`MAX_LANES`] values. A roll-up then adds fixed-size histograms in coarser-key order with
//! no branch per class: a class that merges nothing and one that merges many cost the same.

use std::mem::MaybeUninit;

use super::KeyLayout;
use super::order::{Block, coarser_order};

/// The largest value domain kept dense.
pub(crate) const MAX_LANES: usize = 16;

/// One class of a dense table: its key, size and the set of values present (lane `v` non-zero).
/// Both are additive under merging (sum, union), so roll-ups keep them without reading lanes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct DenseRecord {
    key: u64,
    size: u32,
    values: u32,
}

/// Classes in ascending key order, each with `lanes` counts (value `v` in lane `v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DenseTable {
    classes: Vec<DenseRecord>,
    counts: Vec<u32>,
    lanes: usize,
}

/// Sums finer classes into coarser ones, in coarser-key order. The class being summed is kept
/// in registers and stored whole after every addition, so the output is only written (never
/// read), and needs no zeroing: slot `o` is written by the first addition that reaches it.
struct Summer<'a, const L: usize> {
    o: usize,
    prev: u64,
    cur: DenseRecord,
    cur_counts: [u32; L],
    classes: &'a mut [MaybeUninit<DenseRecord>],
    counts: &'a mut [MaybeUninit<[u32; L]>],
    from_classes: &'a [DenseRecord],
    from_counts: &'a [[u32; L]],
}

impl<const L: usize> Summer<'_, L> {
    /// Adds finer class `p`, whose coarser key is `k`: a new coarser class when `k` differs
    /// from the previous key, else into the current one (no branch either way).
    #[inline(always)]
    fn add(&mut self, k: u64, p: usize) {
        let new = k != self.prev;
        self.o = self.o.wrapping_add(new as usize);
        self.prev = k;
        // All ones to keep summing into the current class, zero to start a new one.
        let keep = (new as u32).wrapping_sub(1);
        let src = self.from_classes[p];
        self.cur = DenseRecord {
            key: k,
            size: (self.cur.size & keep) + src.size,
            values: (self.cur.values & keep) | src.values,
        };
        self.classes[self.o].write(self.cur);
        let add = self.from_counts[p];
        for (c, a) in self.cur_counts.iter_mut().zip(add) {
            *c = (*c & keep) + a;
        }
        self.counts[self.o].write(self.cur_counts);
    }
}

impl DenseTable {
    /// The lanes for a domain of `2^value_bits` values, if it is small enough to keep dense.
    pub(crate) fn lanes_for(value_bits: u32) -> Option<usize> {
        let lanes = 1usize << value_bits;
        (lanes <= MAX_LANES).then_some(lanes)
    }

    /// A table from `(class key << value_bits | value, count)` pairs in ascending order.
    pub(crate) fn from_sorted_pairs(pairs: &[(u64, u64)], value_bits: u32) -> Self {
        let lanes = 1usize << value_bits;
        let mut classes: Vec<DenseRecord> = Vec::new();
        let mut counts: Vec<u32> = Vec::new();
        for &(key, count) in pairs {
            let class = key >> value_bits;
            let value = (key & (lanes as u64 - 1)) as usize;
            if classes.last().is_none_or(|c| c.key != class) {
                classes.push(DenseRecord {
                    key: class,
                    ..DenseRecord::default()
                });
                counts.resize(counts.len() + lanes, 0);
            }
            let base = counts.len() - lanes;
            counts[base + value] += count as u32;
            if let Some(rec) = classes.last_mut() {
                rec.size += count as u32;
                rec.values |= 1 << value;
            }
        }
        DenseTable {
            classes,
            counts,
            lanes,
        }
    }

    /// Tuples in class `i`.
    #[inline]
    pub(crate) fn class_size(&self, i: usize) -> u64 {
        self.classes[i].size as u64
    }

    /// Number of classes.
    pub(crate) fn num_classes(&self) -> usize {
        self.classes.len()
    }

    /// Number of stored counts.
    pub(crate) fn len(&self) -> usize {
        self.counts.len()
    }

    /// Class `i`: its key, size and counts by value.
    #[inline]
    pub(crate) fn class(&self, i: usize) -> (u64, u64, &[u32]) {
        let c = &self.classes[i];
        (
            c.key,
            c.size as u64,
            &self.counts[i * self.lanes..(i + 1) * self.lanes],
        )
    }

    /// (size, value bit set) of class `i`.
    #[inline]
    pub(crate) fn value_set(&self, i: usize) -> (u64, u32) {
        let c = &self.classes[i];
        (c.size as u64, c.values)
    }

    /// (size, value bit set) of every class in key order.
    pub(crate) fn value_sets(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.classes.iter().map(|c| (c.size as u64, c.values))
    }

    /// The only value of class `i`, if it holds one value.
    #[inline]
    pub(crate) fn single_value(&self, i: usize) -> Option<u32> {
        let set = self.classes[i].values;
        set.is_power_of_two().then(|| set.trailing_zeros())
    }

    /// (size, distinct values) of every class in key order.
    pub(crate) fn sizes(&self) -> DenseSizes<'_> {
        DenseSizes(self.classes.iter())
    }

    /// Σ count² over every cell (one flat pass over the lanes).
    pub(crate) fn sum_sq(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { sum_sq_avx2(&self.counts) };
        }
        sum_sq(&self.counts)
    }

    /// Roll-up one level up in QI `d` (see [`coarser_order`]).
    pub(crate) fn rollup(&self, layout: &KeyLayout, d: usize, up: &[u32]) -> Self {
        let keys = || self.classes.iter().map(|c| c.key);
        match self.lanes {
            1 => self.rebuild::<1>(|v| coarser_order(keys(), layout, d, up, v)),
            2 => self.rebuild::<2>(|v| coarser_order(keys(), layout, d, up, v)),
            4 => self.rebuild::<4>(|v| coarser_order(keys(), layout, d, up, v)),
            8 => self.rebuild::<8>(|v| coarser_order(keys(), layout, d, up, v)),
            _ => self.rebuild::<16>(|v| coarser_order(keys(), layout, d, up, v)),
        }
    }

    /// The classes regrouped by `order`: sorted entries `(coarser key << 64) | finer class`.
    pub(crate) fn regroup(&self, order: &[u128]) -> Self {
        let feed = |v: &mut dyn FnMut(Block<'_>)| v(Block::Wide(order));
        match self.lanes {
            1 => self.rebuild::<1>(feed),
            2 => self.rebuild::<2>(feed),
            4 => self.rebuild::<4>(feed),
            8 => self.rebuild::<8>(feed),
            _ => self.rebuild::<16>(feed),
        }
    }

    /// A coarser table from the blocks `feed` hands out (finer classes in coarser-key order).
    fn rebuild<const L: usize>(&self, feed: impl FnOnce(&mut dyn FnMut(Block<'_>))) -> Self {
        let from = self.counts.as_chunks::<L>().0;
        let n = self.classes.len();
        let mut classes: Vec<DenseRecord> = Vec::with_capacity(n);
        let mut counts: Vec<[u32; L]> = Vec::with_capacity(n);
        // `o` is the coarser class being summed; it advances when the key changes (keys are
        // below 2^63, so the first key always differs from the sentinel).
        let mut o = usize::MAX;
        let mut prev = u64::MAX;
        let mut cur = DenseRecord::default();
        let mut cur_counts = [0u32; L];
        {
            let (out_classes, out_counts) =
                (classes.spare_capacity_mut(), counts.spare_capacity_mut());
            feed(&mut |block| {
                // Locals, so that the loops below keep them in registers.
                let mut sum = Summer {
                    o,
                    prev,
                    cur,
                    cur_counts,
                    classes: &mut *out_classes,
                    counts: &mut *out_counts,
                    from_classes: &self.classes,
                    from_counts: from,
                };
                match block {
                    Block::Sorted { keys, first } => {
                        for (q, &k) in keys.iter().enumerate() {
                            sum.add(k, first + q);
                        }
                    }
                    Block::Packed { high, order } => {
                        for &e in order {
                            sum.add(high | (e >> 32), (e & 0xffff_ffff) as usize);
                        }
                    }
                    Block::Wide(order) => {
                        for &e in order {
                            sum.add((e >> 64) as u64, e as u64 as usize);
                        }
                    }
                }
                (o, prev, cur, cur_counts) = (sum.o, sum.prev, sum.cur, sum.cur_counts);
            });
        }
        let len = o.wrapping_add(1);
        assert!(
            len <= n,
            "a roll-up has at most as many classes as its source"
        );
        // SAFETY: `o` advanced one slot at a time from 0, and every slot up to `o` was written
        // (an addition writes the slot it reaches), so the first `len` elements are initialized.
        unsafe {
            classes.set_len(len);
            counts.set_len(len);
        }
        DenseTable {
            classes,
            counts: counts.into_flattened(),
            lanes: L,
        }
    }
}

/// Σ c² over `counts`.
#[inline(always)]
fn sum_sq(counts: &[u32]) -> u64 {
    counts.iter().map(|&c| c as u64 * c as u64).sum()
}

/// [`sum_sq`] compiled for AVX2 (four products per instruction instead of two).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sum_sq_avx2(counts: &[u32]) -> u64 {
    sum_sq(counts)
}

/// Bits set in each byte value: distinct values of a class from its value set without relying
/// on a POPCNT instruction (not in the x86-64 baseline).
const POP8: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u32).count_ones() as u8;
        i += 1;
    }
    t
};

/// Bits set in a dense class's value set (at most 16 lanes: the set fits two bytes).
#[inline(always)]
pub(crate) fn popcount16(set: u32) -> u8 {
    let v = set as usize;
    POP8[v & 0xff] + POP8[(v >> 8) & 0xff]
}

/// (size, distinct values) of the classes of a dense table.
pub(crate) struct DenseSizes<'a>(std::slice::Iter<'a, DenseRecord>);

impl Iterator for DenseSizes<'_> {
    type Item = (u64, u64);

    #[inline(always)]
    fn next(&mut self) -> Option<(u64, u64)> {
        self.0.next().map(|c| {
            // At most 16 lanes: the value set fits two bytes.
            (c.size as u64, u64::from(popcount16(c.values)))
        })
    }
}
