//! Dense cell tables: per equivalence class the count of every value, for value domains of at
//! most [`MAX_LANES`] values. A roll-up then adds fixed-size histograms in coarser-key order with
//! no branch per class: a class that merges nothing and one that merges many cost the same.
//! Counts are 16-bit lanes when the whole table holds fewer than 2^16 tuples (no class can
//! overflow them, and roll-ups only merge): half the bytes every roll-up reads and writes.

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
    counts: Counts,
    lanes: usize,
}

/// The counts of a dense table, `lanes` per class.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Counts {
    /// For tables of at most `u16::MAX` tuples.
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

/// One dense class's counts indexed by value code (trailing lanes zero).
#[derive(Debug, Clone, Copy)]
pub enum Histogram<'a> {
    /// 16-bit counts (tables of fewer than 2^16 tuples).
    Narrow(&'a [u16]),
    /// 32-bit counts.
    Wide(&'a [u32]),
}

impl<'a> Histogram<'a> {
    /// The count of value `v` (0 past the lanes).
    #[inline]
    pub fn get(&self, v: usize) -> u32 {
        match self {
            Histogram::Narrow(h) => h.get(v).map_or(0, |&c| c.into()),
            Histogram::Wide(h) => h.get(v).copied().unwrap_or(0),
        }
    }

    /// The largest count.
    #[inline]
    pub fn max(&self) -> u32 {
        match self {
            Histogram::Narrow(h) => h.iter().copied().max().map_or(0, u32::from),
            Histogram::Wide(h) => h.iter().copied().max().unwrap_or(0),
        }
    }

    /// The counts in value order.
    pub fn iter(self) -> impl Iterator<Item = u32> + 'a {
        let (narrow, wide): (&'a [u16], &'a [u32]) = match self {
            Histogram::Narrow(h) => (h, &[]),
            Histogram::Wide(h) => (&[], h),
        };
        narrow
            .iter()
            .map(|&c| u32::from(c))
            .chain(wide.iter().copied())
    }
}

/// A count lane: u16 or u32.
pub(crate) trait Lane: Copy + Default + Into<u32> + Into<u64> + Send + Sync {
    /// `(self & keep) + add`, `keep` all ones or zero (no overflow: counts are bounded by the
    /// table's tuples, which the lane holds).
    fn masked_add(self, keep: u32, add: Self) -> Self;
    /// `c`, which the caller checked fits.
    fn narrow(c: u64) -> Self;
}

impl Lane for u16 {
    #[inline(always)]
    fn masked_add(self, keep: u32, add: u16) -> u16 {
        (self & keep as u16).wrapping_add(add)
    }
    #[inline(always)]
    fn narrow(c: u64) -> u16 {
        c as u16
    }
}

impl Lane for u32 {
    #[inline(always)]
    fn masked_add(self, keep: u32, add: u32) -> u32 {
        (self & keep).wrapping_add(add)
    }
    #[inline(always)]
    fn narrow(c: u64) -> u32 {
        c as u32
    }
}

/// Sums finer classes into coarser ones, in coarser-key order. The class being summed is kept
/// in registers and stored whole after every addition, so the output is only written (never
/// read), and needs no zeroing: slot `o` is written by the first addition that reaches it.
struct Summer<'a, T, const L: usize> {
    o: usize,
    prev: u64,
    cur: DenseRecord,
    cur_counts: [T; L],
    classes: &'a mut [MaybeUninit<DenseRecord>],
    counts: &'a mut [MaybeUninit<[T; L]>],
    from_classes: &'a [DenseRecord],
    from_counts: &'a [[T; L]],
}

impl<T: Lane, const L: usize> Summer<'_, T, L> {
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
            *c = c.masked_add(keep, a);
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
        let total: u64 = pairs.iter().map(|p| p.1).sum();
        if total <= u64::from(u16::MAX) {
            let (classes, counts) = Self::records::<u16>(pairs, value_bits);
            DenseTable {
                classes,
                counts: Counts::Narrow(counts),
                lanes: 1 << value_bits,
            }
        } else {
            let (classes, counts) = Self::records::<u32>(pairs, value_bits);
            DenseTable {
                classes,
                counts: Counts::Wide(counts),
                lanes: 1 << value_bits,
            }
        }
    }

    /// The records and counts of [`Self::from_sorted_pairs`] in lanes of `T`.
    fn records<T: Lane>(pairs: &[(u64, u64)], value_bits: u32) -> (Vec<DenseRecord>, Vec<T>) {
        let lanes = 1usize << value_bits;
        let mut classes: Vec<DenseRecord> = Vec::new();
        let mut counts: Vec<T> = Vec::new();
        for &(key, count) in pairs {
            let class = key >> value_bits;
            let value = (key & (lanes as u64 - 1)) as usize;
            if classes.last().is_none_or(|c| c.key != class) {
                classes.push(DenseRecord {
                    key: class,
                    ..DenseRecord::default()
                });
                counts.resize(counts.len() + lanes, T::default());
            }
            let base = counts.len() - lanes;
            let sum: u64 = Into::<u64>::into(counts[base + value]) + count;
            counts[base + value] = T::narrow(sum);
            if let Some(rec) = classes.last_mut() {
                rec.size += count as u32;
                rec.values |= 1 << value;
            }
        }
        (classes, counts)
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
        self.classes.len() * self.lanes
    }

    /// Class `i`: its key, size and counts by value.
    #[inline]
    pub(crate) fn class(&self, i: usize) -> (u64, u64, Histogram<'_>) {
        let c = &self.classes[i];
        let lanes = i * self.lanes..(i + 1) * self.lanes;
        let h = match &self.counts {
            Counts::Narrow(counts) => Histogram::Narrow(&counts[lanes]),
            Counts::Wide(counts) => Histogram::Wide(&counts[lanes]),
        };
        (c.key, c.size as u64, h)
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
        match &self.counts {
            Counts::Narrow(c) => sum_sq_any(c),
            Counts::Wide(c) => sum_sq_any(c),
        }
    }

    /// Roll-up one level up in QI `d` (see [`coarser_order`]).
    pub(crate) fn rollup(&self, layout: &KeyLayout, d: usize, up: &[u32]) -> Self {
        let keys = self.classes.iter().map(|c| c.key);
        self.rebuilt(|v| coarser_order(keys, layout, d, up, v))
    }

    /// The classes regrouped by `order`: sorted entries `(coarser key << 64) | finer class`.
    pub(crate) fn regroup(&self, order: &[u128]) -> Self {
        self.rebuilt(|v| v(Block::Wide(order)))
    }

    /// A coarser table from the blocks `feed` hands out, in this table's lanes.
    fn rebuilt(&self, feed: impl FnOnce(&mut dyn FnMut(Block<'_>))) -> Self {
        let (classes, counts) = match &self.counts {
            Counts::Narrow(c) => {
                let (classes, counts) = self.rebuild_lanes(c, feed);
                (classes, Counts::Narrow(counts))
            }
            Counts::Wide(c) => {
                let (classes, counts) = self.rebuild_lanes(c, feed);
                (classes, Counts::Wide(counts))
            }
        };
        DenseTable {
            classes,
            counts,
            lanes: self.lanes,
        }
    }

    /// [`Self::rebuild`] for this table's number of lanes.
    fn rebuild_lanes<T: Lane>(
        &self,
        counts: &[T],
        feed: impl FnOnce(&mut dyn FnMut(Block<'_>)),
    ) -> (Vec<DenseRecord>, Vec<T>) {
        match self.lanes {
            1 => self.rebuild::<T, 1>(counts, feed),
            2 => self.rebuild::<T, 2>(counts, feed),
            4 => self.rebuild::<T, 4>(counts, feed),
            8 => self.rebuild::<T, 8>(counts, feed),
            _ => self.rebuild::<T, 16>(counts, feed),
        }
    }

    /// A coarser table's records and counts from the blocks `feed` hands out (finer classes in
    /// coarser-key order), summing `counts`, this table's counts.
    fn rebuild<T: Lane, const L: usize>(
        &self,
        counts: &[T],
        feed: impl FnOnce(&mut dyn FnMut(Block<'_>)),
    ) -> (Vec<DenseRecord>, Vec<T>) {
        let from = counts.as_chunks::<L>().0;
        let n = self.classes.len();
        let mut classes: Vec<DenseRecord> = Vec::with_capacity(n);
        let mut counts: Vec<[T; L]> = Vec::with_capacity(n);
        // `o` is the coarser class being summed; it advances when the key changes (keys are
        // below 2^63, so the first key always differs from the sentinel).
        let mut o = usize::MAX;
        let mut prev = u64::MAX;
        let mut cur = DenseRecord::default();
        let mut cur_counts = [T::default(); L];
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
        (classes, counts.into_flattened())
    }
}

/// Σ c² over `counts`, with AVX2 where the CPU has it.
fn sum_sq_any<T: Lane>(counts: &[T]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { sum_sq_avx2(counts) };
    }
    sum_sq(counts)
}

/// Σ c² over `counts`.
#[inline(always)]
fn sum_sq<T: Lane>(counts: &[T]) -> u64 {
    counts
        .iter()
        .map(|&c| {
            let c: u64 = c.into();
            c * c
        })
        .sum()
}

/// [`sum_sq`] compiled for AVX2 (four products per instruction instead of two).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sum_sq_avx2<T: Lane>(counts: &[T]) -> u64 {
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

#[cfg(test)]
mod tests {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// (key, size, values, counts) of every class.
    fn contents(t: &DenseTable) -> Vec<(u64, u64, u32, Vec<u32>)> {
        (0..t.num_classes())
            .map(|i| {
                let (key, size, h) = t.class(i);
                (key, size, t.value_set(i).1, h.iter().collect())
            })
            .collect()
    }

    /// A table of fewer than 2^16 tuples keeps 16-bit lanes, and its roll-ups equal those of the
    /// same classes in 32-bit lanes: a class far above 2^16 tuples (its own key, alone in its
    /// coarser class) switches a copy of the table to 32-bit lanes.
    #[test]
    fn narrow_and_wide_lanes_roll_up_alike() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let layout = KeyLayout::new(&["a", "b"], &[8, 8], &[1]).unwrap();
        // Monotone, with code 7 alone in its group.
        let up: Vec<u32> = vec![0, 0, 0, 1, 1, 1, 2, 3];
        for value_bits in [0, 2, 4] {
            let lanes = 1u64 << value_bits;
            for _ in 0..40 {
                let mut pairs: Vec<(u64, u64)> = (0..rng.random_range(1..50))
                    .map(|_| {
                        let key = rng.random_range(0..7u64) | (rng.random_range(0..8u64) << 3);
                        let value = rng.random_range(0..lanes);
                        ((key << value_bits) | value, rng.random_range(1..400))
                    })
                    .collect();
                pairs.sort_unstable();
                pairs.dedup_by_key(|p| p.0);
                let narrow = DenseTable::from_sorted_pairs(&pairs, value_bits);
                assert!(matches!(narrow.counts, Counts::Narrow(_)));
                // a = 7 (the random classes have a < 7): alone in its coarser class.
                let big = ((7u64 | (7 << 3)) << value_bits, 100_000);
                let mut with_big = pairs.clone();
                with_big.push(big);
                let wide = DenseTable::from_sorted_pairs(&with_big, value_bits);
                assert!(matches!(wide.counts, Counts::Wide(_)));
                for d in 0..2 {
                    let (a, b) = (narrow.rollup(&layout, d, &up), wide.rollup(&layout, d, &up));
                    let mut want = contents(&b);
                    let last = want.pop().unwrap();
                    assert_eq!(last.1, 100_000);
                    assert_eq!(contents(&a), want);
                    assert_eq!(a.sum_sq() + 100_000 * 100_000, b.sum_sq());
                }
            }
        }
    }
}
