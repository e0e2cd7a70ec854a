//! Probes of a node's class keys before its tables are built. The keys of one hash part of the
//! classes are counted exactly (each class whole or not at all), which is far cheaper than the
//! whole group-by and can settle a node on its own (the singletons are counted a few sub-parts
//! at a time, stopping once they show it or their pace says the part will not):
//! - more than η tuples alone in their class: the rule suppresses nothing there or below, and the
//!   indices a search wants may follow ([`Evaluator::singleton_indices`]);
//! - more than η tuples in classes of fewer than K tuples: the node fails `k >= K` whatever is
//!   suppressed (the limit cannot remove them all, so a class smaller than K is released), and so
//!   does every finer node (a tuple's class there is no larger).

use rayon::prelude::*;

use super::{Evaluator, NodeTables};
use crate::classes::{
    CHUNK_ROWS, KeyLayout, NodeGather, NodeKeys, PartCounts, PartKeys, RowKeys, SUB_PARTS,
    row_class_keys,
};
use crate::encode::Dataset;
use crate::error::Result;

/// A probe counts the classes in hash parts of this many, one part at a time: an eighth of the
/// rows, enough to show more than η singleton tuples where most tuples are alone.
const PROBE_PARTS: u64 = 8;

/// Rows up to which a probe keeps every row's class key (8 bytes each, per node evaluated in
/// parallel) or row parts (4 bytes each per part QI); larger datasets are not probed, so that
/// memory stays bounded by the blocks of a direct evaluation (their nodes are still found
/// singleton-rich by full evaluations).
const PROBE_MAX_ROWS: usize = 1 << 22;

/// What a probe of a node's class keys settled ([`Evaluator::tables_unless_decided`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Probed {
    /// More than η singleton tuples, shown by one part of the classes.
    SingletonRich,
    /// More than η tuples in classes smaller than the k asked for: the node fails `k >= K`.
    FailsK,
    /// Nothing shown: the node's tables, built from the same keys.
    Tables(NodeTables),
}

/// Groups a level needs for its rows to split into [`PROBE_PARTS`] parts (unequal parts cost
/// time, never a result).
const PART_MIN_GROUPS: usize = 16;

/// QIs whose row parts are kept (4 bytes per row each).
const PART_QIS: usize = 2;

/// The rows split into [`PROBE_PARTS`] parts by the hash of one QI's group at one level. At a
/// node no higher than that level in that QI, all rows of a class share the group (they share
/// the finer one), so every class lies whole in one part: a probe counts a part's classes from
/// that part's rows alone, gathering an eighth of the keys.
pub(crate) struct RowParts {
    qi: usize,
    level: u8,
    /// The rows of each part, ascending.
    rows: Vec<Vec<u32>>,
}

impl std::fmt::Debug for RowParts {
    // The sizes, not the millions of row ids.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sizes: Vec<usize> = self.rows.iter().map(Vec::len).collect();
        f.debug_struct("RowParts")
            .field("qi", &self.qi)
            .field("level", &self.level)
            .field("part_rows", &sizes)
            .finish()
    }
}

impl RowParts {
    /// Parts for the [`PART_QIS`] QIs whose highest level of at least [`PART_MIN_GROUPS`] groups
    /// is highest (serving the most nodes), ties to the QI with more groups there.
    pub(crate) fn build(ds: &Dataset) -> Vec<RowParts> {
        let mut choices: Vec<(usize, u8, usize)> = ds
            .qis
            .iter()
            .enumerate()
            .filter_map(|(d, q)| {
                let levels = q.hierarchy.levels();
                (0..levels.len())
                    .rev()
                    .find(|&l| levels[l].labels.len() >= PART_MIN_GROUPS)
                    .map(|l| (d, l as u8, levels[l].labels.len()))
            })
            .collect();
        choices.sort_by_key(|&(d, l, groups)| (std::cmp::Reverse((l, groups)), d));
        choices
            .into_iter()
            .take(PART_QIS)
            .map(|(d, level, _)| {
                let q = &ds.qis[d];
                let group = &q.hierarchy.level(level).group_of_leaf;
                let mut rows: Vec<Vec<u32>> = (0..PROBE_PARTS).map(|_| Vec::new()).collect();
                for (r, &leaf) in q.codes.values().iter().enumerate() {
                    rows[part_of(group[leaf as usize])].push(r as u32);
                }
                RowParts { qi: d, level, rows }
            })
            .collect()
    }

    /// Whether every class of `node` lies whole in one part.
    fn serves(&self, node: &[u8]) -> bool {
        node[self.qi] <= self.level
    }
}

/// The part of a group code (a multiplicative hash's top bits).
fn part_of(group: u32) -> usize {
    (group.wrapping_mul(0x9E37_79B9) >> (32 - PROBE_PARTS.trailing_zeros())) as usize
}

/// Where a probe counts a part's classes from.
enum Counts<'a> {
    /// The rows of one [`RowParts`]' parts, their keys gathered part by part.
    Rows(&'a RowParts, KeyLayout),
    /// Every row's key, the classes split by the hash of their key.
    Keys(Vec<u64>),
}

impl Evaluator {
    /// How `node` can be probed: from row parts that serve it, else from every row's key; None
    /// for first-row keys and datasets of more than [`PROBE_MAX_ROWS`] rows. Checks the node.
    fn counts_for(&self, node: &[u8]) -> Result<Option<Counts<'_>>> {
        self.check_node(node)?;
        let NodeKeys::Packed(layout) = self.keys.at(node) else {
            return Ok(None);
        };
        let ds = &self.dataset;
        if ds.num_rows() > PROBE_MAX_ROWS {
            return Ok(None);
        }
        let parts = self.row_parts.get_or_init(|| RowParts::build(ds));
        Ok(Some(match parts.iter().find(|p| p.serves(node)) {
            Some(p) => Counts::Rows(p, layout),
            None => Counts::Keys(row_class_keys(&ds.qis, node, &layout, ds.num_rows())),
        }))
    }

    /// The class keys of part `part`'s classes at `node`, with the rows the part holds.
    fn part_keys(&self, node: &[u8], counts: &Counts<'_>, part: u64) -> (PartKeys, u64) {
        let ds = &self.dataset;
        let weights = ds.weights.as_deref();
        match counts {
            Counts::Keys(keys) => (
                PartKeys::pick(keys, weights, PROBE_PARTS, part),
                ds.num_rows() as u64 / PROBE_PARTS,
            ),
            Counts::Rows(parts, layout) => {
                let rows = &parts.rows[part as usize];
                let gather = NodeGather::new(&ds.qis, node);
                let mut keys = vec![0u64; rows.len()];
                keys.par_chunks_mut(CHUNK_ROWS)
                    .zip(rows.par_chunks(CHUNK_ROWS))
                    .for_each(|(out, rows)| gather.fill_rows(&ds.qis, layout, rows, out));
                let part_weights: Option<Vec<u64>> =
                    weights.map(|w| rows.iter().map(|&r| w[r as usize]).collect());
                (
                    PartKeys::pick(&keys, part_weights.as_deref(), 1, 0),
                    rows.len() as u64,
                )
            }
        }
    }

    /// The counts of part `part`'s classes at `node` (classes below `below` tuples), with the
    /// rows the part holds.
    fn count_part(
        &self,
        node: &[u8],
        counts: &Counts<'_>,
        part: u64,
        below: u64,
    ) -> (PartCounts, u64) {
        let (keys, rows) = self.part_keys(node, counts, part);
        (keys.count(0..SUB_PARTS, below), rows)
    }

    /// Whether more than η tuples lie in classes of fewer than `k` tuples, given part 0's count
    /// `first` over `seen` rows. The parts are counted one after another until they show it, or
    /// until their pace says the whole will not: that guess costs time, never a result.
    fn proves_failing_k(
        &self,
        node: &[u8],
        counts: &Counts<'_>,
        k: u64,
        first: (u64, u64),
    ) -> bool {
        let eta = self.eta;
        let n = self.dataset.num_rows() as u64;
        let (mut small, mut seen) = first;
        for part in 1..=PROBE_PARTS {
            if small > eta {
                return true;
            }
            // At least a part's share of the rows is seen before the pace is trusted.
            let paced = seen.saturating_mul(PROBE_PARTS) >= n
                && (small as u128) * (n as u128) <= (eta as u128) * (seen as u128);
            if part == PROBE_PARTS || paced {
                return false;
            }
            let (c, rows) = self.count_part(node, counts, part, k);
            small += c.small;
            seen += rows;
        }
        false
    }

    /// Whether `node` provably has more than η singleton tuples (so that it and every node below
    /// it have their [`crate::indices::SingletonIndices`]), judged on sub-parts of one part of
    /// its classes, paced (`PartKeys::shows_singletons`): false means not shown, and so does a node
    /// that cannot be probed (first-row keys, more than 2^22 rows). Costs one pass of key gathers
    /// at most.
    pub fn singleton_rich(&self, node: &[u8]) -> Result<bool> {
        let Some(counts) = self.counts_for(node)? else {
            return Ok(false);
        };
        Ok(self.singletons_suppress_nothing()
            && self
                .part_keys(node, &counts, 0)
                .0
                .shows_singletons(self.eta))
    }

    /// A direct evaluation that stops once the rows' class keys show more than η singleton tuples
    /// (None: see [`Self::singleton_rich`]); otherwise the node's tables.
    pub fn tables_unless_singleton_rich(&self, node: &[u8]) -> Result<Option<NodeTables>> {
        Ok(match self.tables_unless_decided(node, true, None)? {
            Probed::Tables(t) => Some(t),
            Probed::SingletonRich | Probed::FailsK => None,
        })
    }

    /// A direct evaluation that stops once a probe of the node's classes settles it: more than η
    /// singleton tuples (looked for when `singletons`), or more than η tuples in classes of fewer
    /// than `fails_below` tuples (when given). Otherwise, and for a node that cannot be probed,
    /// the node's tables.
    pub fn tables_unless_decided(
        &self,
        node: &[u8],
        singletons: bool,
        fails_below: Option<u64>,
    ) -> Result<Probed> {
        let Some(counts) = self.counts_for(node)? else {
            return self.tables(node).map(Probed::Tables);
        };
        let fails_below = fails_below.filter(|&k| k > 1);
        let singletons = singletons && self.singletons_suppress_nothing();
        let eta = self.eta;
        if singletons || fails_below.is_some() {
            let (part, seen) = self.part_keys(node, &counts, 0);
            match fails_below {
                // One count of part 0 serves both the singletons and the small classes.
                Some(k) => {
                    let first = part.count(0..SUB_PARTS, k);
                    if singletons && first.alone > eta {
                        return Ok(Probed::SingletonRich);
                    }
                    if self.proves_failing_k(node, &counts, k, (first.small, seen)) {
                        return Ok(Probed::FailsK);
                    }
                }
                None if part.shows_singletons(eta) => return Ok(Probed::SingletonRich),
                None => {}
            }
        }
        match &counts {
            Counts::Keys(keys) => self.tables_keyed(node, &RowKeys::Classes(keys)),
            Counts::Rows(..) => self.tables(node),
        }
        .map(Probed::Tables)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::Profile;

    /// On adult, as rows and as weighted class statistics: row parts exist; at nodes they serve,
    /// a probe counts from them, and the eight parts' small-class tuples add up to the table's (a
    /// class split across parts would count its pieces as smaller classes); at nodes they do not
    /// serve, every row's key is used, with the same totals.
    #[test]
    fn row_parts_hold_whole_classes() {
        let profile = Profile::from_toml_file(std::path::Path::new("datasets/adult/adult.toml"))
            .expect("profile");
        for ds in [Dataset::load(&profile), Dataset::load_statistics(&profile)] {
            let ev = Evaluator::new(Arc::new(ds.expect("dataset"))).expect("evaluator");
            let parts = RowParts::build(&ev.dataset);
            assert_eq!(parts.len(), PART_QIS, "{parts:?}");
            let (mut served, mut drawn) = (0, 0);
            for i in (0..ev.lattice.size()).step_by(97) {
                drawn += 1;
                let node = ev.lattice.node(i);
                let tables = ev.tables(&node).expect("tables");
                let counts = ev.counts_for(&node).expect("node").expect("packed keys");
                served += usize::from(matches!(counts, Counts::Rows(..)));
                assert_eq!(
                    matches!(counts, Counts::Rows(..)),
                    parts.iter().any(|p| p.serves(&node)),
                    "{node:?}"
                );
                for k in [2, 5] {
                    let small: u64 = tables.sens.sizes().map(|(s, _)| s).filter(|&s| s < k).sum();
                    let (parts_small, rows) = (0..PROBE_PARTS)
                        .map(|p| ev.count_part(&node, &counts, p, k))
                        .fold((0, 0), |(s, r), (c, n)| (s + c.small, r + n));
                    assert_eq!(parts_small, small, "{node:?} below {k}");
                    if matches!(counts, Counts::Rows(..)) {
                        assert_eq!(rows, ev.dataset.num_rows() as u64);
                    }
                }
            }
            assert!(served > 10 && served < drawn, "{served} of {drawn} served");
        }
    }
}
