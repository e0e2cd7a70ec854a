//! Class membership: the rows of each equivalence class as a roaring bitmap.

use rayon::prelude::*;
use roaring::RoaringBitmap;

use super::cells::NodeGather;
use super::group::CHUNK_ROWS;
use super::{NodeKeys, first_rows_of_all};
use crate::encode::EncodedQi;
use crate::encode::packed::Counter;
use crate::error::Result;

/// The class key of every row at `node`, computed in parallel chunks.
fn class_keys_of_rows(
    qis: &[EncodedQi],
    node: &[u8],
    class_keys: &NodeKeys,
    rows: usize,
) -> Vec<u64> {
    let layout = match class_keys {
        NodeKeys::Packed(layout) => layout,
        NodeKeys::FirstRow => {
            return first_rows_of_all(qis, node, rows)
                .into_iter()
                .map(u64::from)
                .collect();
        }
    };
    let gather = NodeGather::new(qis, node);
    let mut keys = vec![0u64; rows];
    keys.par_chunks_mut(CHUNK_ROWS)
        .enumerate()
        .for_each(|(i, chunk)| gather.fill(qis, layout, i * CHUNK_ROWS, chunk));
    keys
}

/// The equivalence classes of a node with their members.
#[derive(Debug, Clone)]
pub struct EquivalenceClasses {
    keys: Vec<u64>,
    members: Vec<RoaringBitmap>,
    row_class: Vec<u32>,
}

impl EquivalenceClasses {
    /// Groups the rows of `qis` at `node`.
    pub fn build(
        qis: &[EncodedQi],
        node: &[u8],
        class_keys: &NodeKeys,
        rows: usize,
    ) -> Result<Self> {
        let row_keys = class_keys_of_rows(qis, node, class_keys, rows);
        let mut distinct = Counter::with_capacity(1024);
        for &k in &row_keys {
            distinct.add(k, 1);
        }
        let keys: Vec<u64> = distinct
            .into_sorted_pairs()
            .into_iter()
            .map(|(key, _)| key)
            .collect();
        let mut index = Counter::with_capacity(keys.len());
        for (i, &k) in keys.iter().enumerate() {
            index.add(k, i as u64);
        }
        let mut members = vec![RoaringBitmap::new(); keys.len()];
        let mut row_class = Vec::with_capacity(rows);
        for (r, k) in row_keys.iter().enumerate() {
            let c = index.get(*k).unwrap_or(0) as u32;
            row_class.push(c);
            // Rows arrive in increasing order, so this appends in O(1) and cannot be refused.
            let _ = members[c as usize].try_push(r as u32);
        }
        Ok(EquivalenceClasses {
            keys,
            members,
            row_class,
        })
    }

    /// Number of classes.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are no classes.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Sorted class keys.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// Members of class `i`.
    pub fn members(&self, i: usize) -> &RoaringBitmap {
        &self.members[i]
    }

    /// Class index of every row.
    pub fn row_class(&self) -> &[u32] {
        &self.row_class
    }
}
