//! Cell tables: sorted counts of (class key, value) pairs of one node.

use arrow::array::{AsArray, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::UInt32Type;
use rayon::prelude::*;

use super::KeyLayout;
use super::counter::Counter;
use crate::encode::EncodedQi;
use crate::error::Result;

/// Rows per parallel chunk of a direct evaluation.
pub(crate) const CHUNK_ROWS: usize = 1 << 16;

/// Zero cells kept after the last cell of a table, so that short classes are copied with one
/// fixed-size copy (no loop, no mispredicted exit) that may spill into the next class's slots.
const PAD: usize = 4;

/// One cell of a class: a value code (in a mask table, the class's set of values as a bit mask)
/// and its number of tuples in the class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cell {
    /// Value code, or the class's values as a bit mask.
    pub value: u32,
    /// Tuples of the class with that value (a dataset has fewer than 2^32 tuples:
    /// `Evaluator::new` checks).
    pub count: u32,
}

/// One equivalence class of a cell table.
#[derive(Debug, Clone, Copy)]
pub struct ClassCells<'a> {
    /// The packed class key.
    pub key: u64,
    /// Tuples in the class.
    pub size: u64,
    /// Its cells in ascending value order.
    pub cells: &'a [Cell],
}

/// One equivalence class's record in a cell table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClassRecord {
    /// The packed class key.
    key: u64,
    /// Σ count² over its cells.
    sum_sq: u64,
    /// Tuples in the class.
    size: u32,
    /// Its first cell.
    start: u32,
}

/// The equivalence classes of a node with the counts of one attribute's values (sensitive or
/// class label) in each: one fixed-size record per class (key, size, Σ count²) in ascending key
/// order, and the cells of each class in ascending value order. Keeping classes apart from their
/// cells makes roll-ups work on classes (a third of the cells on adult) and the index pass a loop
/// over fixed-size records.
#[derive(Debug, Clone)]
pub struct CellTable {
    classes: Vec<ClassRecord>,
    /// The cells, then [`PAD`] padding cells.
    cells: Vec<Cell>,
    /// One cell per class holding the set of the class's values as a bit mask.
    mask: bool,
    /// Value codes are below 2^value_bits.
    value_bits: u32,
}

/// Per-node gather tables: the group code of every leaf code for each QI at its level, as Arrow
/// arrays for the `take` kernel (`None` where the level is the identity or the single top group).
pub(crate) struct NodeGather {
    groups: Vec<Option<UInt32Array>>,
    top: Vec<bool>,
}

impl NodeGather {
    pub(crate) fn new(qis: &[EncodedQi], node: &[u8]) -> Self {
        let mut groups = Vec::with_capacity(qis.len());
        let mut top = Vec::with_capacity(qis.len());
        for (q, &l) in qis.iter().zip(node) {
            let level = q.hierarchy.level(l);
            top.push(level.labels.len() == 1);
            groups.push((l > 0).then(|| UInt32Array::from(level.group_of_leaf.clone())));
        }
        NodeGather { groups, top }
    }

    /// Writes the class key of rows `start..start + out.len()` into `out`: one vectorized gather per
    /// QI, then a shift-or into the key.
    pub(crate) fn fill(
        &self,
        qis: &[EncodedQi],
        layout: &KeyLayout,
        start: usize,
        out: &mut [u64],
    ) -> Result<()> {
        out.fill(0);
        for (d, q) in qis.iter().enumerate() {
            if self.top[d] {
                continue; // one group: code 0 everywhere
            }
            let shift = layout.shift(d);
            let leaf = q.codes.slice(start, out.len());
            match &self.groups[d] {
                None => {
                    for (k, &c) in out.iter_mut().zip(leaf.values()) {
                        *k |= (c as u64) << shift;
                    }
                }
                Some(groups) => {
                    let g = take(groups, &leaf, None)?;
                    for (k, &c) in out.iter_mut().zip(g.as_primitive::<UInt32Type>().values()) {
                        *k |= (c as u64) << shift;
                    }
                }
            }
        }
        Ok(())
    }
}

impl CellTable {
    /// Direct evaluation: groups the rows of `qis` at `node` with their `values` (sensitive or
    /// class codes), in parallel over row chunks.
    pub fn from_rows(
        qis: &[EncodedQi],
        node: &[u8],
        layout: &KeyLayout,
        values: &UInt32Array,
        value_bits: u32,
        weights: Option<&[u64]>,
        mask: bool,
    ) -> Result<Self> {
        let gather = NodeGather::new(qis, node);
        let n = values.len();
        let starts: Vec<usize> = (0..n).step_by(CHUNK_ROWS).collect();
        let counter = starts
            .par_iter()
            .try_fold(
                || Counter::with_capacity(1024),
                |mut counter, &start| -> Result<Counter> {
                    let len = CHUNK_ROWS.min(n - start);
                    let mut keys = vec![0u64; len];
                    gather.fill(qis, layout, start, &mut keys)?;
                    let vals = &values.values()[start..start + len];
                    match weights {
                        None if mask => {
                            for (k, &v) in keys.iter().zip(vals) {
                                counter.add((k << value_bits) | (1u64 << v), 1);
                            }
                        }
                        Some(w) if mask => {
                            for ((k, &v), &w) in keys.iter().zip(vals).zip(&w[start..start + len]) {
                                counter.add((k << value_bits) | (1u64 << v), w);
                            }
                        }
                        None => {
                            for (k, &v) in keys.iter().zip(vals) {
                                counter.add((k << value_bits) | v as u64, 1);
                            }
                        }
                        Some(w) => {
                            for ((k, &v), &w) in keys.iter().zip(vals).zip(&w[start..start + len]) {
                                counter.add((k << value_bits) | v as u64, w);
                            }
                        }
                    }
                    Ok(counter)
                },
            )
            .try_reduce(
                || Counter::with_capacity(8),
                |a, b| {
                    let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
                    big.merge(&small);
                    Ok(big)
                },
            )?;
        let pairs = counter.into_sorted_pairs();
        let value_mask = (1u64 << value_bits) - 1;
        let mut table = CellTable {
            classes: Vec::new(),
            cells: Vec::with_capacity(pairs.len()),
            mask,
            value_bits,
        };
        for (key, count) in pairs {
            let class = key >> value_bits;
            let value = (key & value_mask) as u32;
            let count = count as u32;
            if table.classes.last().is_none_or(|c| c.key != class) {
                table.classes.push(ClassRecord {
                    key: class,
                    sum_sq: 0,
                    size: 0,
                    start: table.cells.len() as u32,
                });
            }
            let Some(rec) = table.classes.last_mut() else {
                continue;
            };
            rec.size += count;
            // A mask table keeps one cell per class: OR the value bits into it.
            let has_cell = table.cells.len() > rec.start as usize;
            match table.cells.last_mut() {
                Some(c) if mask && has_cell => {
                    c.value |= value;
                    c.count += count;
                }
                _ => table.cells.push(Cell { value, count }),
            }
        }
        table.cells.extend([Cell::default(); PAD]);
        for i in 0..table.classes.len() {
            let sum_sq = table
                .class(i)
                .cells
                .iter()
                .map(|c| c.count as u64 * c.count as u64)
                .sum();
            table.classes[i].sum_sq = sum_sq;
        }
        Ok(table)
    }

    /// Roll-up: the table of the node one level coarser in QI `d`, where `up` maps QI `d`'s group
    /// codes at the finer level to the coarser level. Only classes are touched, never rows.
    ///
    /// `up` is monotone (hierarchies number their groups so), hence after replacing QI `d`'s field
    /// the class keys stay sorted except inside each block sharing the higher fields and the new
    /// group: there they form one sorted run per merged finer group, and only such blocks are
    /// sorted. A class of the coarser node that comes from one finer class is copied with its
    /// size and Σ count²; the cells of merged classes are summed value by value.
    pub fn rollup(&self, layout: &KeyLayout, d: usize, up: &[u32]) -> Self {
        ROLLUP_SCRATCH.with_borrow_mut(|scratch| self.rollup_with(layout, d, up, scratch))
    }

    fn rollup_with(
        &self,
        layout: &KeyLayout,
        d: usize,
        up: &[u32],
        scratch: &mut RollupScratch,
    ) -> Self {
        let shift = layout.shift(d);
        let field = layout.mask(d) << shift;
        let n = self.classes.len();
        let RollupScratch {
            mapped,
            order,
            wide,
            dense,
            seen,
        } = scratch;
        mapped.clear();
        mapped.extend(self.classes.iter().map(|c| {
            (c.key & !field) | ((up[((c.key & field) >> shift) as usize] as u64) << shift)
        }));
        let mut out = Merger::new(self, dense, seen);
        let mut i = 0;
        while i < n {
            let block = mapped[i] >> shift;
            let mut end = i + 1;
            let mut sorted = true;
            while end < n && mapped[end] >> shift == block {
                sorted &= mapped[end] >= mapped[end - 1];
                end += 1;
            }
            if sorted {
                out.groups(&mapped[i..end], |k| k, |q| i + q);
            } else if shift <= 32 {
                // The fields below QI d and the class index fit one u64: sort those.
                let low = (1u64 << shift) - 1;
                let high = block << shift;
                order.clear();
                order.extend((i..end).map(|p| ((mapped[p] & low) << 32) | p as u64));
                order.sort_unstable();
                out.groups(
                    order,
                    |o| high | (o >> 32),
                    |q| (order[q] & 0xffff_ffff) as usize,
                );
            } else {
                wide.clear();
                wide.extend((i..end).map(|p| (mapped[p] as u128) << 64 | p as u128));
                wide.sort_unstable();
                out.groups(wide, |o| (o >> 64) as u64, |q| wide[q] as u64 as usize);
            }
            i = end;
        }
        out.finish()
    }

    /// Whether the cells hold each class's set of values as a bit mask (one cell per class).
    pub fn is_mask(&self) -> bool {
        self.mask
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.cells.len() - PAD
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of equivalence classes.
    pub fn num_classes(&self) -> usize {
        self.classes.len()
    }

    /// Per class in key order: its size, Σ count² and number of distinct values.
    pub fn class_sizes(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.classes.iter().enumerate().map(|(i, c)| {
            let end = self.end(i);
            let distinct = if self.mask {
                self.cells[c.start as usize].value.count_ones() as u64
            } else {
                (end - c.start as usize) as u64
            };
            (c.size as u64, c.sum_sq, distinct)
        })
    }

    /// One past class `i`'s last cell.
    #[inline]
    fn end(&self, i: usize) -> usize {
        match self.classes.get(i + 1) {
            Some(next) => next.start as usize,
            None => self.len(),
        }
    }

    /// Class `i`.
    #[inline]
    pub fn class(&self, i: usize) -> ClassCells<'_> {
        let c = &self.classes[i];
        ClassCells {
            key: c.key,
            size: c.size as u64,
            cells: &self.cells[c.start as usize..self.end(i)],
        }
    }

    /// The equivalence classes in key order.
    pub fn classes(&self) -> impl Iterator<Item = ClassCells<'_>> {
        (0..self.classes.len()).map(|i| self.class(i))
    }
}

/// Per-thread buffers of roll-ups.
#[derive(Default)]
struct RollupScratch {
    mapped: Vec<u64>,
    order: Vec<u64>,
    wide: Vec<u128>,
    dense: Vec<u32>,
    seen: Vec<u32>,
}

thread_local! {
    static ROLLUP_SCRATCH: std::cell::RefCell<RollupScratch> =
        std::cell::RefCell::new(RollupScratch::default());
}

/// Builds a coarser table from finer classes taken in ascending order of their new keys: classes
/// with equal new keys are merged.
struct Merger<'a> {
    from: &'a CellTable,
    out: CellTable,
    /// Cells written to `out.cells` (pre-sized: a coarser table has at most the finer one's cells).
    written: usize,
    /// Values below 64: per-value counts of the class being merged.
    small: [u32; 64],
    /// Larger value domains: per-value counts and the values touched.
    dense: &'a mut Vec<u32>,
    seen: &'a mut Vec<u32>,
}

impl<'a> Merger<'a> {
    fn new(from: &'a CellTable, dense: &'a mut Vec<u32>, seen: &'a mut Vec<u32>) -> Self {
        if !from.mask && from.value_bits > 6 && dense.len() < 1usize << from.value_bits {
            dense.resize(1usize << from.value_bits, 0);
        }
        Merger {
            from,
            out: CellTable {
                classes: Vec::with_capacity(from.classes.len()),
                cells: vec![Cell::default(); from.cells.len()],
                mask: from.mask,
                value_bits: from.value_bits,
            },
            written: 0,
            small: [0; 64],
            dense,
            seen,
        }
    }

    /// Writes the coarser classes of one block: `items` in ascending order of their new key
    /// (`key`), item `q` from finer class `parent(q)`.
    #[inline]
    fn groups<T: Copy>(
        &mut self,
        items: &[T],
        key: impl Fn(T) -> u64,
        parent: impl Fn(usize) -> usize,
    ) {
        let mut q = 0;
        while q < items.len() {
            let k = key(items[q]);
            let mut r = q + 1;
            while r < items.len() && key(items[r]) == k {
                r += 1;
            }
            if r == q + 1 {
                self.copy(k, parent(q));
            } else {
                self.merge(k, (q..r).map(&parent));
            }
            q = r;
        }
    }

    /// A coarser class made of finer class `p` alone.
    #[inline]
    fn copy(&mut self, key: u64, p: usize) {
        let from = self.from;
        let rec = from.classes[p];
        let (start, end) = (rec.start as usize, from.end(p));
        let w = self.written;
        self.out.classes.push(ClassRecord {
            key,
            start: w as u32,
            ..rec
        });
        if end - start <= PAD {
            // Both tables end with PAD spare cells, so this stays in bounds; cells past the
            // class are overwritten by the next class or are padding.
            self.out.cells[w..w + PAD].copy_from_slice(&from.cells[start..start + PAD]);
        } else {
            self.out.cells[w..w + end - start].copy_from_slice(&from.cells[start..end]);
        }
        self.written = w + end - start;
    }

    /// Appends one cell of a merged class.
    #[inline]
    fn emit(&mut self, value: u32, count: u32) {
        self.out.cells[self.written] = Cell { value, count };
        self.written += 1;
    }

    /// A coarser class merging finer classes `parents`: counts summed value by value.
    #[inline(never)]
    fn merge(&mut self, key: u64, parents: impl Iterator<Item = usize>) {
        let from = self.from;
        let start = self.written as u32;
        if from.mask {
            let (mut value, mut count) = (0, 0);
            for p in parents {
                for c in &from.cells[from.classes[p].start as usize..from.end(p)] {
                    value |= c.value;
                    count += c.count;
                }
            }
            self.emit(value, count);
        } else if from.value_bits <= 6 {
            let mut seen = 0u64;
            for p in parents {
                for c in &from.cells[from.classes[p].start as usize..from.end(p)] {
                    self.small[(c.value & 63) as usize] += c.count;
                    seen |= 1u64 << (c.value & 63);
                }
            }
            while seen != 0 {
                let v = seen.trailing_zeros();
                seen &= seen - 1;
                let count = std::mem::take(&mut self.small[v as usize]);
                self.emit(v, count);
            }
        } else {
            for p in parents {
                for c in &from.cells[from.classes[p].start as usize..from.end(p)] {
                    let v = c.value as usize;
                    if self.dense[v] == 0 {
                        self.seen.push(c.value);
                    }
                    self.dense[v] += c.count;
                }
            }
            self.seen.sort_unstable();
            for i in 0..self.seen.len() {
                let v = self.seen[i];
                let count = std::mem::take(&mut self.dense[v as usize]);
                if count > 0 {
                    self.emit(v, count);
                }
            }
            self.seen.clear();
        }
        let cells = &self.out.cells[start as usize..self.written];
        self.out.classes.push(ClassRecord {
            key,
            sum_sq: cells.iter().map(|c| c.count as u64 * c.count as u64).sum(),
            size: cells.iter().map(|c| c.count).sum(),
            start,
        });
    }

    /// The coarser table, its cells followed by padding.
    fn finish(mut self) -> CellTable {
        self.out.cells.truncate(self.written + PAD);
        self.out.cells[self.written..].fill(Cell::default());
        self.out
    }
}

impl PartialEq for CellTable {
    /// Same classes with the same cells (padding aside).
    fn eq(&self, other: &Self) -> bool {
        self.mask == other.mask
            && self.classes == other.classes
            && self.cells[..self.len()] == other.cells[..other.len()]
    }
}

impl Eq for CellTable {}
