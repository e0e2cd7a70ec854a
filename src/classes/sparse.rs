//! Sparse cell tables: per equivalence class only the values present, for value domains too
//! large to keep dense and for value masks.

use super::KeyLayout;
use super::order::{Block, coarser_order};

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

/// Zero cells kept after the last cell of a table, so that short classes are copied with one
/// fixed-size copy (no loop, no mispredicted exit) that may spill into the next class's slots.
const PAD: usize = 4;

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
pub(crate) struct SparseTable {
    classes: Vec<ClassRecord>,
    /// The cells, then [`PAD`] padding cells.
    cells: Vec<Cell>,
    /// One cell per class holding the set of the class's values as a bit mask.
    mask: bool,
    /// Value codes are below 2^value_bits.
    value_bits: u32,
}

impl SparseTable {
    /// A table from `(class key << value_bits | value, count)` pairs in ascending order; with
    /// `mask`, the value bits are a set of values and each class keeps one cell, their union.
    pub(crate) fn from_sorted_pairs(pairs: &[(u64, u64)], value_bits: u32, mask: bool) -> Self {
        let value_mask = (1u64 << value_bits) - 1;
        let mut table = SparseTable {
            classes: Vec::new(),
            cells: Vec::with_capacity(pairs.len() + PAD),
            mask,
            value_bits,
        };
        for &(key, count) in pairs {
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
                .2
                .iter()
                .map(|c| c.count as u64 * c.count as u64)
                .sum();
            table.classes[i].sum_sq = sum_sq;
        }
        table
    }

    /// Roll-up one level up in QI `d` (see [`coarser_order`]): a coarser class that comes from
    /// one finer class is copied with its size and Σ count²; the cells of merged classes are
    /// summed value by value.
    pub(crate) fn rollup(&self, layout: &KeyLayout, d: usize, up: &[u32]) -> Self {
        self.rebuild(|visit| {
            coarser_order(self.classes.iter().map(|c| c.key), layout, d, up, visit)
        })
    }

    /// The classes regrouped by `order`: sorted entries `(coarser key << 64) | finer class`.
    pub(crate) fn regroup(&self, order: &[u128]) -> Self {
        self.rebuild(|visit| visit(Block::Wide(order)))
    }

    /// A coarser table from the blocks `feed` hands out (finer classes in coarser-key order).
    fn rebuild(&self, feed: impl FnOnce(&mut dyn FnMut(Block<'_>))) -> Self {
        MERGE_SCRATCH.with_borrow_mut(|(dense, seen)| {
            let mut out = Merger::new(self, dense, seen);
            feed(&mut |block| match block {
                Block::Sorted { keys, first } => out.groups(keys, |k| k, |q| first + q),
                Block::Packed { high, order } => out.groups(
                    order,
                    |o| high | (o >> 32),
                    |q| (order[q] & 0xffff_ffff) as usize,
                ),
                Block::Wide(order) => {
                    out.groups(order, |o| (o >> 64) as u64, |q| order[q] as u64 as usize)
                }
            });
            out.finish()
        })
    }

    /// Whether cells are value masks.
    pub(crate) fn is_mask(&self) -> bool {
        self.mask
    }

    /// Number of cells.
    pub(crate) fn len(&self) -> usize {
        self.cells.len() - PAD
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

    /// (size, distinct values) of every class in key order.
    pub(crate) fn sizes(&self) -> SparseSizes<'_> {
        SparseSizes { table: self, i: 0 }
    }

    /// Σ count² over every cell.
    pub(crate) fn sum_sq(&self) -> u64 {
        self.classes.iter().map(|c| c.sum_sq).sum()
    }

    /// One past class `i`'s last cell.
    #[inline]
    fn end(&self, i: usize) -> usize {
        match self.classes.get(i + 1) {
            Some(next) => next.start as usize,
            None => self.len(),
        }
    }

    /// Class `i`: key, size and cells.
    #[inline]
    pub(crate) fn class(&self, i: usize) -> (u64, u64, &[Cell]) {
        let c = &self.classes[i];
        (
            c.key,
            c.size as u64,
            &self.cells[c.start as usize..self.end(i)],
        )
    }
}

/// (size, distinct values) of the classes of a sparse table.
pub(crate) struct SparseSizes<'a> {
    table: &'a SparseTable,
    i: usize,
}

impl Iterator for SparseSizes<'_> {
    type Item = (u64, u64);

    #[inline(always)]
    fn next(&mut self) -> Option<(u64, u64)> {
        let t = self.table;
        let c = t.classes.get(self.i)?;
        let distinct = if t.mask {
            t.cells[c.start as usize].value.count_ones() as u64
        } else {
            (t.end(self.i) - c.start as usize) as u64
        };
        self.i += 1;
        Some((c.size as u64, distinct))
    }
}

thread_local! {
    /// Per-value counts and touched values of merges over large value domains.
    static MERGE_SCRATCH: std::cell::RefCell<(Vec<u32>, Vec<u32>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Builds a coarser table from finer classes taken in ascending order of their new keys: classes
/// with equal new keys are merged.
struct Merger<'a> {
    from: &'a SparseTable,
    out: SparseTable,
    /// Cells written to `out.cells` (pre-sized: a coarser table has at most the finer one's cells).
    written: usize,
    /// Values below 64: per-value counts of the class being merged.
    small: [u32; 64],
    /// Larger value domains: per-value counts and the values touched.
    dense: &'a mut Vec<u32>,
    seen: &'a mut Vec<u32>,
}

impl<'a> Merger<'a> {
    fn new(from: &'a SparseTable, dense: &'a mut Vec<u32>, seen: &'a mut Vec<u32>) -> Self {
        if !from.mask && from.value_bits > 6 && dense.len() < 1usize << from.value_bits {
            dense.resize(1usize << from.value_bits, 0);
        }
        Merger {
            from,
            out: SparseTable {
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
    fn finish(mut self) -> SparseTable {
        self.out.cells.truncate(self.written + PAD);
        self.out.cells[self.written..].fill(Cell::default());
        self.out
    }
}

impl PartialEq for SparseTable {
    /// Same classes with the same cells (padding aside).
    fn eq(&self, other: &Self) -> bool {
        self.mask == other.mask
            && self.classes == other.classes
            && self.cells[..self.len()] == other.cells[..other.len()]
    }
}

impl Eq for SparseTable {}
