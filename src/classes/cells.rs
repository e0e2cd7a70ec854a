//! Cell tables: the equivalence classes of one node with the counts of one attribute's values in
//! each, built from rows (direct evaluation) or from a finer node's table (roll-up).

use arrow::array::UInt32Array;
use rayon::prelude::*;

use super::dense::{DenseSizes, DenseTable, Histogram};
use super::group;
use super::sparse::{Cell, SparseSizes, SparseTable};
use super::{KeyLayout, NodeKeys, wide};
use crate::encode::EncodedQi;
use crate::encode::narrow::NarrowCodes;
use crate::error::Result;

/// One equivalence class of a cell table.
#[derive(Debug, Clone, Copy)]
pub struct ClassCells<'a> {
    /// The packed class key.
    pub key: u64,
    /// Tuples in the class.
    pub size: u64,
    counts: ClassCounts<'a>,
}

#[derive(Debug, Clone, Copy)]
enum ClassCounts<'a> {
    Sparse(&'a [Cell]),
    Dense(Histogram<'a>),
}

impl<'a> ClassCells<'a> {
    /// The class's histogram indexed by value code (trailing lanes zero), when the table is dense.
    pub fn histogram(&self) -> Option<Histogram<'a>> {
        match self.counts {
            ClassCounts::Dense(h) => Some(h),
            ClassCounts::Sparse(_) => None,
        }
    }

    /// The class's cells (values present, with their counts) in ascending value order.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + 'a {
        let (sparse, dense): (&'a [Cell], Histogram<'a>) = match self.counts {
            ClassCounts::Sparse(c) => (c, Histogram::Wide(&[])),
            ClassCounts::Dense(h) => (&[], h),
        };
        sparse
            .iter()
            .copied()
            .chain(
                dense
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| *c > 0)
                    .map(|(v, count)| Cell {
                        value: v as u32,
                        count,
                    }),
            )
    }

    /// Tuples of the class with value code `value`.
    pub fn count_of(&self, value: u32) -> u32 {
        match self.counts {
            ClassCounts::Sparse(c) => c
                .binary_search_by_key(&value, |cell| cell.value)
                .map(|i| c[i].count)
                .unwrap_or(0),
            ClassCounts::Dense(h) => h.get(value as usize),
        }
    }
}

/// (size, distinct values) of the classes of a cell table, in key order.
pub struct ClassSizes<'a>(SizesRepr<'a>);

enum SizesRepr<'a> {
    Sparse(SparseSizes<'a>),
    Dense(DenseSizes<'a>),
}

impl Iterator for ClassSizes<'_> {
    type Item = (u64, u64);

    #[inline(always)]
    fn next(&mut self) -> Option<(u64, u64)> {
        match &mut self.0 {
            SizesRepr::Sparse(s) => s.next(),
            SizesRepr::Dense(s) => s.next(),
        }
    }
}

/// The equivalence classes of a node with the counts of one attribute's values (sensitive or
/// class label) in each, in ascending key order: dense histograms for small value domains,
/// cells of the values present otherwise (and for value masks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellTable(Repr);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    Sparse(SparseTable),
    Dense(DenseTable),
}

/// A node's class keys for a direct evaluation: the packed layout, or every row's first row.
#[derive(Debug, Clone, Copy)]
pub enum RowKeys<'a> {
    /// Group codes packed with this layout.
    Packed(&'a KeyLayout),
    /// The first row of every row's class.
    FirstRow(&'a [u32]),
    /// Every row's class key, packed and gathered beforehand ([`row_class_keys`]).
    Classes(&'a [u64]),
}

/// Every row's packed class key at `node` (rows `0..rows`), in parallel over row chunks.
pub fn row_class_keys(qis: &[EncodedQi], node: &[u8], layout: &KeyLayout, rows: usize) -> Vec<u64> {
    let gather = NodeGather::new(qis, node);
    let mut keys = vec![0u64; rows];
    keys.par_chunks_mut(group::CHUNK_ROWS)
        .enumerate()
        .for_each(|(i, out)| gather.fill(qis, layout, i * group::CHUNK_ROWS, out));
    keys
}

/// The first row of every row's class at `node` (rows `0..rows`).
pub fn first_rows_of_all(qis: &[EncodedQi], node: &[u8], rows: usize) -> Vec<u32> {
    let all: Vec<u32> = (0..rows as u32).collect();
    wide::first_rows(qis, node, &all)
}

/// Per-node gather tables: the group code of every leaf code for each QI at its level, borrowed
/// from the hierarchies (`None` where the level is the identity or the single top group).
pub(crate) struct NodeGather<'a> {
    groups: Vec<Option<&'a [u32]>>,
    top: Vec<bool>,
}

impl<'a> NodeGather<'a> {
    pub(crate) fn new(qis: &'a [EncodedQi], node: &[u8]) -> Self {
        let mut groups = Vec::with_capacity(qis.len());
        let mut top = Vec::with_capacity(qis.len());
        for (q, &l) in qis.iter().zip(node) {
            let level = q.hierarchy.level(l);
            top.push(level.labels.len() == 1);
            groups.push((l > 0).then_some(level.group_of_leaf.as_slice()));
        }
        NodeGather { groups, top }
    }

    /// Writes the class key of rows `start..start + out.len()` into `out`: per QI, one pass that
    /// gathers each row's group code and shift-ors it into the key (no intermediate array), over
    /// sub-blocks of rows small enough that the keys stay in L1 across the QIs' passes. One-byte
    /// leaf codes go through a table of their shifted group codes.
    pub(crate) fn fill(
        &self,
        qis: &[EncodedQi],
        layout: &KeyLayout,
        start: usize,
        out: &mut [u64],
    ) {
        const SUB: usize = 2048;
        out.fill(0);
        let bytes: Vec<Option<Box<[u64; 256]>>> = qis
            .iter()
            .enumerate()
            .map(|(d, q)| match &q.narrow {
                NarrowCodes::U8(_) if !self.top[d] => Some(self.shifted(d, layout.shift(d))),
                _ => None,
            })
            .collect();
        for (b, out) in out.chunks_mut(SUB).enumerate() {
            let from = start + b * SUB;
            let rows = from..from + out.len();
            for (d, q) in qis.iter().enumerate() {
                if self.top[d] {
                    continue; // one group: code 0 everywhere
                }
                let shift = layout.shift(d);
                match (&q.narrow, &bytes[d]) {
                    (NarrowCodes::U8(leaf), Some(table)) => {
                        for (k, &c) in out.iter_mut().zip(&leaf[rows.clone()]) {
                            *k |= table[c as usize];
                        }
                    }
                    (NarrowCodes::U16(leaf), _) => {
                        or_groups(out, &leaf[rows.clone()], self.groups[d], shift)
                    }
                    _ => or_groups(out, &q.codes.values()[rows.clone()], self.groups[d], shift),
                }
            }
        }
    }

    /// QI `d`'s group code of every one-byte leaf code, shifted into its key position (codes
    /// past its leaves map to 0 and never occur).
    fn shifted(&self, d: usize, shift: u32) -> Box<[u64; 256]> {
        let mut table = Box::new([0u64; 256]);
        for (c, t) in table.iter_mut().enumerate() {
            let g = match self.groups[d] {
                None => c as u64,
                Some(groups) => groups.get(c).map_or(0, |&g| g as u64),
            };
            *t = g << shift;
        }
        table
    }
}

/// A leaf code of any width, as an index.
trait LeafCode: Copy {
    fn index(self) -> usize;
}

impl LeafCode for u16 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

impl LeafCode for u32 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

/// Shift-ors each row's group code (`groups[leaf]`, or the leaf code itself at level 0) into its
/// key.
#[inline(always)]
fn or_groups<C: LeafCode>(out: &mut [u64], leaf: &[C], groups: Option<&[u32]>, shift: u32) {
    match groups {
        None => {
            for (k, &c) in out.iter_mut().zip(leaf) {
                *k |= (c.index() as u64) << shift;
            }
        }
        Some(groups) => {
            for (k, &c) in out.iter_mut().zip(leaf) {
                // Leaf codes index their hierarchy's leaves by construction.
                *k |= (groups[c.index()] as u64) << shift;
            }
        }
    }
}

impl NodeGather<'_> {
    /// Writes the class key of each of `rows` into `out` (same length), QI by QI like
    /// [`Self::fill`], for a probe of some rows only.
    pub(crate) fn fill_rows(
        &self,
        qis: &[EncodedQi],
        layout: &KeyLayout,
        rows: &[u32],
        out: &mut [u64],
    ) {
        out.fill(0);
        for (d, q) in qis.iter().enumerate() {
            if self.top[d] {
                continue;
            }
            let shift = layout.shift(d);
            match &q.narrow {
                NarrowCodes::U8(leaf) => {
                    let table = self.shifted(d, shift);
                    for (k, &r) in out.iter_mut().zip(rows) {
                        *k |= table[leaf[r as usize] as usize];
                    }
                }
                NarrowCodes::U16(leaf) => or_rows(out, leaf, rows, self.groups[d], shift),
                NarrowCodes::Wide => or_rows(out, q.codes.values(), rows, self.groups[d], shift),
            }
        }
    }
}

/// [`or_groups`] for the rows `rows` of `leaf`.
#[inline(always)]
fn or_rows<C: LeafCode>(
    out: &mut [u64],
    leaf: &[C],
    rows: &[u32],
    groups: Option<&[u32]>,
    shift: u32,
) {
    match groups {
        None => {
            for (k, &r) in out.iter_mut().zip(rows) {
                *k |= (leaf[r as usize].index() as u64) << shift;
            }
        }
        Some(groups) => {
            for (k, &r) in out.iter_mut().zip(rows) {
                *k |= (groups[leaf[r as usize].index()] as u64) << shift;
            }
        }
    }
}

impl CellTable {
    /// Direct evaluation: groups the rows of `qis` at `node` with their `values` (sensitive or
    /// class codes), in parallel over row chunks. `class_keys` are the node's keys, with every
    /// row's first row ([`first_rows_of_all`]) when they are first rows.
    pub fn from_rows(
        qis: &[EncodedQi],
        node: &[u8],
        class_keys: &RowKeys<'_>,
        values: &UInt32Array,
        value_bits: u32,
        weights: Option<&[u64]>,
        mask: bool,
    ) -> Result<Self> {
        let gather = NodeGather::new(qis, node);
        let n = values.len();
        let firsts: &[u32] = match class_keys {
            RowKeys::Packed(_) | RowKeys::Classes(_) => &[],
            RowKeys::FirstRow(f) => f,
        };
        if let (RowKeys::FirstRow(_), Some(lanes), false) =
            (class_keys, DenseTable::lanes_for(value_bits), mask)
        {
            // Dense histograms without hashing: iterating rows in order meets each class first
            // at its first row, so classes get indices in key order; counts go to class × lane.
            let mut class_of = vec![u32::MAX; n];
            let mut keys: Vec<u32> = Vec::new();
            for (r, &f) in firsts.iter().enumerate() {
                if f as usize == r {
                    class_of[r] = keys.len() as u32;
                    keys.push(f);
                }
            }
            let mut counts = vec![0u64; keys.len() * lanes];
            for (r, (&f, &v)) in firsts.iter().zip(values.values()).enumerate() {
                let c = class_of[f as usize] as usize;
                counts[c * lanes + v as usize] += weights.map_or(1, |w| w[r]);
            }
            let pairs: Vec<(u64, u64)> = counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, &c)| {
                    (
                        ((keys[i / lanes] as u64) << value_bits) | (i % lanes) as u64,
                        c,
                    )
                })
                .collect();
            return Ok(CellTable(Repr::Dense(DenseTable::from_sorted_pairs(
                &pairs, value_bits,
            ))));
        }
        let vals = values.values();
        let pairs = group::count_keys(n, weights, |start, keys: &mut [u64]| {
            match class_keys {
                RowKeys::Packed(layout) => gather.fill(qis, layout, start, keys),
                RowKeys::Classes(classes) => {
                    keys.copy_from_slice(&classes[start..start + keys.len()])
                }
                RowKeys::FirstRow(_) => {
                    for (k, &f) in keys.iter_mut().zip(&firsts[start..]) {
                        *k = f as u64;
                    }
                }
            }
            let vals = &vals[start..start + keys.len()];
            if mask {
                for (k, &v) in keys.iter_mut().zip(vals) {
                    *k = (*k << value_bits) | (1u64 << v);
                }
            } else {
                for (k, &v) in keys.iter_mut().zip(vals) {
                    *k = (*k << value_bits) | v as u64;
                }
            }
            Ok(())
        })?;
        Ok(CellTable(match DenseTable::lanes_for(value_bits) {
            Some(_) if !mask => Repr::Dense(DenseTable::from_sorted_pairs(&pairs, value_bits)),
            _ => Repr::Sparse(SparseTable::from_sorted_pairs(&pairs, value_bits, mask)),
        }))
    }

    /// Roll-up: the table of `node`, one level coarser in QI `d` than this table's node (whose
    /// keys are `from`; `node`'s are `to`), where `up` maps QI `d`'s group codes at the finer
    /// level to the coarser level. Only classes are touched, never rows (first-row keys read the
    /// codes of each finer class's first row).
    pub fn rollup(
        &self,
        from: &NodeKeys,
        to: &NodeKeys,
        qis: &[EncodedQi],
        node: &[u8],
        d: usize,
        up: &[u32],
    ) -> Self {
        let keys = || self.classes().map(|c| c.key);
        match (from, to) {
            (NodeKeys::Packed(a), NodeKeys::Packed(b)) if a == b => CellTable(match &self.0 {
                Repr::Sparse(t) => Repr::Sparse(t.rollup(a, d, up)),
                Repr::Dense(t) => Repr::Dense(t.rollup(a, d, up)),
            }),
            (NodeKeys::Packed(a), NodeKeys::Packed(b)) => {
                // QI d's field narrows: every key is repacked.
                self.regroup_by(keys().map(|k| {
                    (0..qis.len()).fold(0u64, |out, e| {
                        let c = a.code(k, e);
                        let c = if e == d { up[c as usize] } else { c };
                        out | ((c as u64) << b.shift(e))
                    })
                }))
            }
            (NodeKeys::FirstRow, NodeKeys::Packed(b)) => {
                // Coarse enough to pack: each class's codes at `node` from its first row.
                self.regroup_by(keys().map(|k| {
                    (0..qis.len()).fold(0u64, |out, e| {
                        let c = NodeKeys::FirstRow.code(qis, node, k, e);
                        out | ((c as u64) << b.shift(e))
                    })
                }))
            }
            (NodeKeys::FirstRow, NodeKeys::FirstRow) => {
                let items: Vec<u32> = keys().map(|k| k as u32).collect();
                let firsts = wide::first_rows(qis, node, &items);
                self.regroup_by(firsts.into_iter().map(u64::from))
            }
            (NodeKeys::Packed(_), NodeKeys::FirstRow) => {
                unreachable!(
                    "a node coarser than a packed one packs too (group counts shrink upwards)"
                )
            }
        }
    }

    /// The table regrouped by each class's coarser key (`new_keys`, in class order): classes with
    /// equal keys merged, in ascending key order.
    fn regroup_by(&self, new_keys: impl Iterator<Item = u64>) -> Self {
        let mut order: Vec<u128> = new_keys
            .enumerate()
            .map(|(p, k)| ((k as u128) << 64) | p as u128)
            .collect();
        order.par_sort_unstable();
        CellTable(match &self.0 {
            Repr::Sparse(t) => Repr::Sparse(t.regroup(&order)),
            Repr::Dense(t) => Repr::Dense(t.regroup(&order)),
        })
    }

    /// Whether the cells hold each class's set of values as a bit mask (one cell per class).
    pub fn is_mask(&self) -> bool {
        matches!(&self.0, Repr::Sparse(t) if t.is_mask())
    }

    /// Number of stored counts (cells, or classes × the dense histogram width): the table's size.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Sparse(t) => t.len(),
            Repr::Dense(t) => t.len(),
        }
    }

    /// Whether there are no classes.
    pub fn is_empty(&self) -> bool {
        self.num_classes() == 0
    }

    /// Number of equivalence classes.
    pub fn num_classes(&self) -> usize {
        match &self.0 {
            Repr::Sparse(t) => t.num_classes(),
            Repr::Dense(t) => t.num_classes(),
        }
    }

    /// (size, distinct values) of every class in key order (distinct values of a mask table: the
    /// bits set in its mask).
    pub fn sizes(&self) -> ClassSizes<'_> {
        ClassSizes(match &self.0 {
            Repr::Sparse(t) => SizesRepr::Sparse(t.sizes()),
            Repr::Dense(t) => SizesRepr::Dense(t.sizes()),
        })
    }

    /// Σ count² over every cell (S_l when nothing is suppressed).
    pub fn sum_sq(&self) -> u64 {
        match &self.0 {
            Repr::Sparse(t) => t.sum_sq(),
            Repr::Dense(t) => t.sum_sq(),
        }
    }

    /// Tuples in class `i`.
    #[inline]
    pub fn class_size(&self, i: usize) -> u64 {
        match &self.0 {
            Repr::Sparse(t) => t.class_size(i),
            Repr::Dense(t) => t.class_size(i),
        }
    }

    /// (size, value bit set) of class `i` of a dense table (see [`Self::value_sets`]).
    #[inline]
    pub fn value_set(&self, i: usize) -> Option<(u64, u32)> {
        match &self.0 {
            Repr::Sparse(_) => None,
            Repr::Dense(t) => Some(t.value_set(i)),
        }
    }

    /// (size, value bit set) of every class in key order, for dense tables (at most 16 values).
    pub fn value_sets(&self) -> Option<impl Iterator<Item = (u64, u32)> + '_> {
        match &self.0 {
            Repr::Sparse(_) => None,
            Repr::Dense(t) => Some(t.value_sets()),
        }
    }

    /// The only value code of class `i`, if it holds one value (tables with per-value counts).
    #[inline]
    pub fn single_value(&self, i: usize) -> Option<u32> {
        match &self.0 {
            Repr::Sparse(t) => match t.class(i).2 {
                [only] => Some(only.value),
                _ => None,
            },
            Repr::Dense(t) => t.single_value(i),
        }
    }

    /// Class `i`.
    #[inline]
    pub fn class(&self, i: usize) -> ClassCells<'_> {
        let (key, size, counts) = match &self.0 {
            Repr::Sparse(t) => {
                let (key, size, cells) = t.class(i);
                (key, size, ClassCounts::Sparse(cells))
            }
            Repr::Dense(t) => {
                let (key, size, h) = t.class(i);
                (key, size, ClassCounts::Dense(h))
            }
        };
        ClassCells { key, size, counts }
    }

    /// The equivalence classes in key order.
    pub fn classes(&self) -> impl Iterator<Item = ClassCells<'_>> {
        (0..self.num_classes()).map(|i| self.class(i))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::hierarchy::Hierarchy;

    /// A QI of `leaves` leaves (groups of ten, then the top) with random leaf codes on `rows`.
    fn qi(name: &str, leaves: usize, rows: usize, rng: &mut ChaCha8Rng) -> EncodedQi {
        let table: Vec<Vec<String>> = (0..leaves)
            .map(|i| vec![format!("v{i}"), format!("g{}", i / 10), "*".into()])
            .collect();
        let hierarchy = Arc::new(Hierarchy::from_rows(name, "test", &table).expect("hierarchy"));
        let codes: Vec<u32> = (0..rows)
            .map(|_| rng.random_range(0..leaves as u32))
            .collect();
        EncodedQi {
            name: name.into(),
            column: 0,
            narrow: NarrowCodes::of(&codes, hierarchy.leaf_count()),
            codes: UInt32Array::from(codes),
            leaf_rows: vec![0; leaves],
            hierarchy,
        }
    }

    /// The gathers over one-byte, two-byte and four-byte leaf codes write, at every node, the
    /// keys packed by hand from the `u32` codes and the hierarchies' groups: for a run of rows
    /// (not starting at 0, crossing sub-blocks) and for scattered rows.
    #[test]
    fn gathers_of_every_code_width_equal_hand_packed_keys() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let rows = 9000;
        let qis = vec![
            qi("a", 200, rows, &mut rng),
            qi("b", 3000, rows, &mut rng),
            qi("c", 70_000, rows, &mut rng),
        ];
        assert!(matches!(qis[0].narrow, NarrowCodes::U8(_)));
        assert!(matches!(qis[1].narrow, NarrowCodes::U16(_)));
        assert!(matches!(qis[2].narrow, NarrowCodes::Wide));
        let layout = KeyLayout::new(&["a", "b", "c"], &[200, 3000, 70_000], &[2]).expect("fits");
        let scattered: Vec<u32> = (0..rows as u32).filter(|r| r % 7 == 3).collect();
        for node in (0..27u8).map(|i| [i % 3, i / 3 % 3, i / 9]) {
            let want = |r: usize| -> u64 {
                qis.iter()
                    .enumerate()
                    .map(|(d, q)| {
                        let leaf = q.codes.value(r) as usize;
                        let group = q.hierarchy.level(node[d]).group_of_leaf[leaf] as u64;
                        group << layout.shift(d)
                    })
                    .sum()
            };
            let gather = NodeGather::new(&qis, &node);
            let (start, len) = (1234, 5000);
            let mut out = vec![u64::MAX; len];
            gather.fill(&qis, &layout, start, &mut out);
            for (i, &k) in out.iter().enumerate() {
                assert_eq!(k, want(start + i), "node {node:?}, row {}", start + i);
            }
            let mut out = vec![u64::MAX; scattered.len()];
            gather.fill_rows(&qis, &layout, &scattered, &mut out);
            for (&r, &k) in scattered.iter().zip(&out) {
                assert_eq!(k, want(r as usize), "node {node:?}, row {r}");
            }
        }
    }
}
