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

/// One cell: a packed `(class key << value_bits) | value` and its number of rows. Packed to 12
/// bytes: the lattice sweep streams tens of millions of cells and is bound by memory traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct Cell {
    /// Packed class key and value code.
    pub key: u64,
    /// Rows in the cell (a dataset has fewer than 2^32 tuples; `Evaluator::new` checks).
    pub count: u32,
}

/// The sorted cells of a node for one attribute (sensitive or class label). Cells of one
/// equivalence class are contiguous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellTable {
    cells: Vec<Cell>,
    value_bits: u32,
    /// The value bits hold the set of values of the class as a bit mask (one cell per class),
    /// instead of one value code per cell.
    mask: bool,
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

/// Merges the cells of each class (contiguous: sorted by key, class bits on top) into one,
/// OR-ing their value masks and summing their counts.
fn merge_masks(cells: &mut Vec<Cell>, value_bits: u32) {
    cells.dedup_by(|next, kept| {
        let same = next.key >> value_bits == kept.key >> value_bits;
        if same {
            kept.key |= next.key;
            kept.count += next.count;
        }
        same
    });
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
        let mut cells = counter.into_sorted_cells();
        if mask {
            merge_masks(&mut cells, value_bits);
        }
        Ok(CellTable {
            cells,
            value_bits,
            mask,
        })
    }

    /// Roll-up: the table of the node one level coarser in QI `d`, where `up` maps QI `d`'s group
    /// codes at the finer level to the coarser level. Only cells are touched, never rows.
    ///
    /// `up` is monotone (hierarchies number their groups so), hence after replacing QI `d`'s field
    /// the cells stay sorted except inside each block sharing the higher fields and the new group:
    /// there they form one sorted run per merged finer group. A run-adaptive stable sort merges
    /// those runs in O(n log runs); equal keys are then summed.
    pub fn rollup(&self, layout: &KeyLayout, d: usize, up: &[u32]) -> Self {
        let shift = layout.shift(d) + self.value_bits;
        let field = layout.mask(d) << shift;
        // Map every cell and note, in the same pass, the blocks (equal bits from the new field up)
        // whose cells are out of order.
        let mut cells: Vec<Cell> = Vec::with_capacity(self.cells.len());
        let mut unsorted: Vec<(usize, usize)> = Vec::new();
        let mut block_start = 0;
        let mut block_sorted = true;
        for (i, c) in self.cells.iter().enumerate() {
            let code = ((c.key & field) >> shift) as usize;
            let key = (c.key & !field) | ((up[code] as u64) << shift);
            if let Some(prev) = cells.last() {
                if prev.key >> shift != key >> shift {
                    if !block_sorted {
                        unsorted.push((block_start, i));
                    }
                    block_start = i;
                    block_sorted = true;
                } else if prev.key > key {
                    block_sorted = false;
                }
            }
            cells.push(Cell {
                key,
                count: c.count,
            });
        }
        if !block_sorted {
            unsorted.push((block_start, cells.len()));
        }
        for (a, b) in unsorted {
            cells[a..b].sort_by_key(|c| c.key);
        }
        if self.mask {
            merge_masks(&mut cells, self.value_bits);
        } else {
            cells.dedup_by(|next, kept| {
                let same = next.key == kept.key;
                if same {
                    kept.count += next.count;
                }
                same
            });
        }
        CellTable {
            cells,
            value_bits: self.value_bits,
            mask: self.mask,
        }
    }

    /// Whether the value bits are a mask of the class's values (one cell per class).
    pub fn is_mask(&self) -> bool {
        self.mask
    }

    /// The value bits of a cell: a value code, or in a mask table the class's set of values.
    #[inline]
    pub fn value_bits_of(&self, cell: &Cell) -> u64 {
        cell.key & ((1u64 << self.value_bits) - 1)
    }

    /// The cells, sorted by key.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Class key of a cell.
    #[inline]
    pub fn class_of(&self, cell: &Cell) -> u64 {
        cell.key >> self.value_bits
    }

    /// Value code of a cell.
    #[inline]
    pub fn value_of(&self, cell: &Cell) -> u32 {
        (cell.key & ((1u64 << self.value_bits) - 1)) as u32
    }

    /// The cells of each equivalence class, class by class in key order.
    pub fn classes(&self) -> impl Iterator<Item = &[Cell]> {
        let vb = self.value_bits;
        self.cells.chunk_by(move |a, b| a.key >> vb == b.key >> vb)
    }
}
