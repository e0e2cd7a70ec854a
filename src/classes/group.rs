//! Group-by of cell keys in cache-sized pieces: the keys are split into key *ranges* chosen from a
//! sample, each range is counted in its own small hash table (which stays in cache, where one
//! table for a million classes would miss on almost every row), and the ranges' sorted counts,
//! concatenated in range order, are in key order as a whole. Rows are taken in blocks, so the
//! extra memory is bounded by the block, not the dataset.

use rayon::prelude::*;

use crate::encode::packed::Counter;
use crate::error::Result;

/// Rows per parallel chunk of a direct evaluation (a key-filling closure's call).
pub(crate) const CHUNK_ROWS: usize = 1 << 16;
/// Rows per block partitioned at once (bounds the buffered `(key, weight)` pairs: 16 MB).
const BLOCK: usize = 1 << 20;
/// Rows a range aims to hold: its table then fits a core's L2 cache.
const RANGE_ROWS: usize = 1 << 13;
/// Most ranges.
const MAX_RANGES: usize = 1 << 10;
/// Below this many rows one table is cheaper than partitioning.
const PARTITION_MIN_ROWS: usize = 1 << 17;
/// Sampled runs of consecutive rows, and their length.
const SAMPLE_RUNS: usize = 256;
const SAMPLE_RUN: usize = 64;

/// Counts the cell keys of rows `0..n` (weight `weights[r]`, or 1), which `fill(start, out)` writes
/// for rows `start..start + out.len()`: the (key, Σ weight) pairs in ascending key order.
pub(crate) fn count_keys<F>(n: usize, weights: Option<&[u64]>, fill: F) -> Result<Vec<(u64, u64)>>
where
    F: Fn(usize, &mut [u64]) -> Result<()> + Sync,
{
    if n < PARTITION_MIN_ROWS {
        return count_in_chunks(n, weights, &fill);
    }
    let sample = sample_keys(n, &fill)?;
    let distinct = distinct_keys(&sample);
    if distinct <= FEW_SAMPLE_KEYS {
        return count_in_chunks(n, weights, &fill);
    }
    let ranges = Ranges::from_sample(n, &sample);
    let count = ranges.count();
    let mut counters: Vec<Option<Counter>> = (0..count).map(|_| None).collect();
    let mut sorted: Vec<Vec<(u64, u64)>> = vec![Vec::new(); count];
    for block in (0..n).step_by(BLOCK) {
        let end = (block + BLOCK).min(n);
        // Each chunk's pairs, grouped by range in one buffer (range order within each chunk).
        let parts: Vec<RangedPairs> = (block..end)
            .step_by(CHUNK_ROWS)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|start| -> Result<_> {
                let len = CHUNK_ROWS.min(end - start);
                let mut keys = vec![0u64; len];
                fill(start, &mut keys)?;
                Ok(RangedPairs::split(
                    &keys,
                    weights.map(|w| &w[start..start + len]),
                    &ranges,
                ))
            })
            .collect::<Result<_>>()?;
        // The last block sorts each range's table as soon as it is counted, while it is in cache.
        let last = end == n;
        counters
            .par_iter_mut()
            .zip(sorted.par_iter_mut())
            .enumerate()
            .for_each(|(p, (counter, sorted))| {
                let rows: usize = parts.iter().map(|c| c.range(p).len()).sum();
                if rows > 0 {
                    // Sized for the sample's share of distinct keys (most tables then never
                    // grow); a range with fewer classes wastes some cache, never a result.
                    let counter = counter.get_or_insert_with(|| {
                        Counter::with_capacity((rows * distinct / sample.len()).max(1 << 10))
                    });
                    for chunk in &parts {
                        for &(k, w) in chunk.range(p) {
                            counter.add(k, w);
                        }
                    }
                }
                if last {
                    *sorted = counter
                        .take()
                        .map_or_else(Vec::new, Counter::into_sorted_pairs);
                }
            });
    }
    Ok(sorted.concat())
}

/// One chunk's (key, weight) pairs grouped by key range: a counting sort into one buffer.
struct RangedPairs {
    pairs: Vec<(u64, u64)>,
    /// Where each range's pairs start (one more entry than ranges).
    starts: Vec<usize>,
}

impl RangedPairs {
    /// The pairs of `keys` (weights `weights`, or 1) grouped by their range in `ranges`.
    fn split(keys: &[u64], weights: Option<&[u64]>, ranges: &Ranges) -> Self {
        let count = ranges.count();
        let range: Vec<u32> = keys.iter().map(|&k| ranges.of(k)).collect();
        let mut starts = vec![0usize; count + 1];
        for &r in &range {
            starts[r as usize + 1] += 1;
        }
        for i in 0..count {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut pairs = vec![(0u64, 0u64); keys.len()];
        for (i, (&k, &r)) in keys.iter().zip(&range).enumerate() {
            let at = &mut next[r as usize];
            pairs[*at] = (k, weights.map_or(1, |w| w[i]));
            *at += 1;
        }
        RangedPairs { pairs, starts }
    }

    /// The pairs of range `r`.
    fn range(&self, r: usize) -> &[(u64, u64)] {
        &self.pairs[self.starts[r]..self.starts[r + 1]]
    }
}

/// Tuples in small classes among those of one hash part of the classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartCounts {
    /// Tuples alone in their class.
    pub alone: u64,
    /// Tuples in classes of fewer than the `below` asked for.
    pub small: u64,
}

/// Sub-parts a part's classes are split into by further bits of the same hash: a probe counts
/// them a few at a time, in parallel, each in a table that stays in a core's cache, and can stop
/// once they settle a node or show they will not.
pub(crate) const SUB_PARTS: usize = 8;

/// The (key, weight) pairs of the classes whose key hashes into one part of the classes, split
/// into [`SUB_PARTS`] sub-parts: every class lies whole in one sub-part.
pub(crate) struct PartKeys {
    /// Per chunk of the keys, the pairs of each sub-part.
    chunks: Vec<Vec<Vec<(u64, u64)>>>,
}

impl PartKeys {
    /// The pairs of `keys` (weight `weights[i]`, or 1) in part `part` of `parts` (a power of
    /// two), picked out and split in parallel: one pass over every key. Each class is counted
    /// whole or not at all, so the parts' counts add up to the table's and any one of them is a
    /// lower bound of it.
    pub(crate) fn pick(keys: &[u64], weights: Option<&[u64]>, parts: u64, part: u64) -> Self {
        let part_bits = parts.max(1).trailing_zeros();
        let sub_bits = SUB_PARTS.trailing_zeros();
        // The hash's top bits pick the part, the bits after them the sub-part.
        let split = |k: u64| -> Option<usize> {
            let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
            let in_part = part_bits == 0 || h >> (64 - part_bits) == part;
            in_part.then(|| ((h << part_bits) >> (64 - sub_bits)) as usize)
        };
        let chunks = keys
            .par_chunks(CHUNK_ROWS)
            .enumerate()
            .map(|(c, chunk)| {
                let start = c * CHUNK_ROWS;
                let expected = chunk.len() / (parts.max(1) as usize * SUB_PARTS);
                let mut out: Vec<Vec<(u64, u64)>> = (0..SUB_PARTS)
                    .map(|_| Vec::with_capacity(expected + expected / 4))
                    .collect();
                for (i, &k) in chunk.iter().enumerate() {
                    if let Some(s) = split(k) {
                        out[s].push((k, weights.map_or(1, |w| w[start + i])));
                    }
                }
                out
            })
            .collect();
        PartKeys { chunks }
    }

    /// Exact counts of the tuples alone in their class and in classes of fewer than `below`
    /// tuples, among the classes of sub-parts `subs` (counted in parallel).
    pub(crate) fn count(&self, subs: std::ops::Range<usize>, below: u64) -> PartCounts {
        subs.into_par_iter()
            .map(|s| {
                let rows: usize = self.chunks.iter().map(|c| c[s].len()).sum();
                let mut counter = Counter::with_capacity(rows);
                for chunk in &self.chunks {
                    for &(k, w) in &chunk[s] {
                        counter.add(k, w);
                    }
                }
                let mut counts = PartCounts { alone: 0, small: 0 };
                for w in counter.counts() {
                    counts.alone += u64::from(w == 1);
                    if w < below {
                        counts.small += w;
                    }
                }
                counts
            })
            .reduce(
                || PartCounts { alone: 0, small: 0 },
                |a, b| PartCounts {
                    alone: a.alone + b.alone,
                    small: a.small + b.small,
                },
            )
    }

    /// Whether the part's classes hold more than `eta` tuples alone in their class, counted two
    /// sub-parts at a time: true only when the counted ones show it; false as soon as their pace
    /// says the whole part would not (a missed proof costs time, never a result).
    pub(crate) fn shows_singletons(&self, eta: u64) -> bool {
        let mut alone = 0u64;
        for from in (0..SUB_PARTS).step_by(2) {
            alone += self.count(from..from + 2, 2).alone;
            if alone > eta {
                return true;
            }
            let seen = (from + 2) as u64;
            if (alone as u128) * (SUB_PARTS as u128) <= (eta as u128) * (seen as u128) {
                return false;
            }
        }
        false
    }
}

/// Sampled keys at most that are distinct for the input to count as having few classes.
const FEW_SAMPLE_KEYS: usize = 2048;

/// Keys of runs of consecutive rows spread over the input (rows `0..n`, n ≥ [`SAMPLE_RUN`]).
fn sample_keys<F>(n: usize, fill: &F) -> Result<Vec<u64>>
where
    F: Fn(usize, &mut [u64]) -> Result<()> + Sync,
{
    let step = n / SAMPLE_RUNS;
    let mut sample = vec![0u64; SAMPLE_RUNS * SAMPLE_RUN];
    for (i, run) in sample.chunks_mut(SAMPLE_RUN).enumerate() {
        fill((i * step).min(n - SAMPLE_RUN), run)?;
    }
    Ok(sample)
}

/// Distinct keys of the sample. At most [`FEW_SAMPLE_KEYS`] suggests few classes: then one small
/// table per chunk stays in cache and partitioning into ranges would only move the rows. A wrong
/// guess costs time, never results.
fn distinct_keys(sample: &[u64]) -> usize {
    let mut keys = sample.to_vec();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// [`count_keys`] with one table per parallel task, the tables' sorted pairs merged.
fn count_in_chunks<F>(n: usize, weights: Option<&[u64]>, fill: &F) -> Result<Vec<(u64, u64)>>
where
    F: Fn(usize, &mut [u64]) -> Result<()> + Sync,
{
    (0..n)
        .step_by(CHUNK_ROWS)
        .collect::<Vec<_>>()
        .into_par_iter()
        .try_fold(
            || (Counter::with_capacity(1 << 10), Vec::new()),
            |(mut counter, mut keys), start| -> Result<_> {
                let len = CHUNK_ROWS.min(n - start);
                keys.resize(len, 0);
                fill(start, &mut keys)?;
                for (i, &k) in keys.iter().enumerate() {
                    counter.add(k, weights.map_or(1, |w| w[start + i]));
                }
                Ok((counter, keys))
            },
        )
        .map(|r| r.map(|(counter, _)| counter.into_sorted_pairs()))
        .try_reduce(Vec::new, |a, b| Ok(merge_sorted(a, b)))
}

/// Two key-sorted (key, count) lists as one, counts of equal keys added.
fn merge_sorted(a: Vec<(u64, u64)>, b: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1 + b[j].1));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Bits of the key prefix that picks a range.
const PREFIX_BITS: u32 = 12;

/// Key ranges: unions of consecutive key prefixes (the top [`PREFIX_BITS`] bits below the
/// sampled maximum), so that a key's range is one table lookup and ranges ascend with keys.
struct Ranges {
    shift: u32,
    /// Range of every prefix.
    of_prefix: Vec<u32>,
}

impl Ranges {
    /// Ranges of about [`RANGE_ROWS`] rows each, judged from the keys of [`sample_keys`] (a
    /// prefix holding many rows makes a range larger; never wrong).
    fn from_sample(n: usize, sample: &[u64]) -> Self {
        let max = sample.iter().copied().max().unwrap_or(0);
        let shift = (u64::BITS - max.leading_zeros()).saturating_sub(PREFIX_BITS);
        let prefixes = 1usize << PREFIX_BITS;
        let mut hist = vec![0usize; prefixes];
        for &k in sample {
            hist[((k >> shift) as usize).min(prefixes - 1)] += 1;
        }
        let ranges = (n / RANGE_ROWS).clamp(2, MAX_RANGES);
        let per_range = sample.len().div_ceil(ranges);
        let mut of_prefix = Vec::with_capacity(prefixes);
        let (mut range, mut filled) = (0u32, 0usize);
        for &h in &hist {
            if filled >= per_range {
                range += 1;
                filled = 0;
            }
            of_prefix.push(range);
            filled += h;
        }
        Ranges { shift, of_prefix }
    }

    /// Number of ranges.
    fn count(&self) -> usize {
        self.of_prefix.last().map_or(1, |&r| r as usize + 1)
    }

    /// The range of key `k` (keys above the sampled maximum fall in the last range).
    #[inline]
    fn of(&self, k: u64) -> u32 {
        let p = ((k >> self.shift) as usize).min(self.of_prefix.len() - 1);
        self.of_prefix[p]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranged count equals one hash table's, on skewed and uniform keys, with and without
    /// weights, across block and range boundaries.
    #[test]
    fn ranged_count_matches_one_table() {
        use rand::rngs::ChaCha8Rng;
        use rand::{RngExt, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for (n, domain) in [(300_000usize, 1_000u64), (200_000, 1 << 40), (150_000, 3)] {
            let keys: Vec<u64> = (0..n)
                .map(|_| {
                    // Half the rows on one key: a range can be much larger than the target.
                    if rng.random_bool(0.5) {
                        7.min(domain - 1)
                    } else {
                        rng.random_range(0..domain)
                    }
                })
                .collect();
            let weights: Vec<u64> = (0..n).map(|_| rng.random_range(1..5)).collect();
            // Few distinct keys take the per-chunk tables, many the key ranges.
            let sample = sample_keys(n, &|start, out: &mut [u64]| {
                out.copy_from_slice(&keys[start..start + out.len()]);
                Ok(())
            })
            .unwrap();
            assert_eq!(
                distinct_keys(&sample) <= FEW_SAMPLE_KEYS,
                domain <= 1_000,
                "domain {domain}"
            );
            for w in [None, Some(weights.as_slice())] {
                let got = count_keys(n, w, |start, out: &mut [u64]| {
                    out.copy_from_slice(&keys[start..start + out.len()]);
                    Ok(())
                })
                .unwrap();
                let mut want = std::collections::BTreeMap::new();
                for (r, &k) in keys.iter().enumerate() {
                    *want.entry(k).or_insert(0u64) += w.map_or(1, |w| w[r]);
                }
                assert_eq!(got, want.into_iter().collect::<Vec<_>>());
            }
        }
    }

    fn small_tuples_in_part(
        keys: &[u64],
        weights: Option<&[u64]>,
        parts: u64,
        part: u64,
        below: u64,
    ) -> PartCounts {
        PartKeys::pick(keys, weights, parts, part).count(0..SUB_PARTS, below)
    }

    /// The singletons and small-class tuples of one hash part are exactly those of a map
    /// restricted to the part's keys; all parts together (or one part of one) are all of them;
    /// the sub-parts add up to the part; the paced singleton check claims only what it counted.
    #[test]
    fn small_tuples_in_part_are_exact() {
        use rand::rngs::ChaCha8Rng;
        use rand::{RngExt, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let n = 200_000;
        let keys: Vec<u64> = (0..n).map(|_| rng.random_range(0..150_000u64)).collect();
        let weights: Vec<u64> = (0..n).map(|_| rng.random_range(1..3)).collect();
        for w in [None, Some(weights.as_slice())] {
            let mut totals = std::collections::HashMap::new();
            for (r, &k) in keys.iter().enumerate() {
                *totals.entry(k).or_insert(0u64) += w.map_or(1, |w| w[r]);
            }
            let all = totals.values().filter(|&&t| t == 1).count() as u64;
            let singletons = |parts| small_tuples_in_part(&keys, w, parts, 0, 2).alone;
            assert_eq!(singletons(1), all);
            let part = singletons(8);
            assert!(part > 0 && part < all, "{part} of {all}");
            // Tuples in classes below 3 (or 4): the eight parts add up to the whole table's.
            for below in [3, 4] {
                let small: u64 = totals.values().filter(|&&t| t < below).sum();
                let parts: u64 = (0..8)
                    .map(|p| small_tuples_in_part(&keys, w, 8, p, below).small)
                    .sum();
                assert_eq!(parts, small, "below {below}");
                assert_eq!(small_tuples_in_part(&keys, w, 1, 0, below).small, small);
            }
            // The part's share is about an eighth.
            assert!(
                (part as f64 / all as f64 - 0.125).abs() < 0.02,
                "{part} of {all}"
            );
            // Sub-parts counted one by one add up to the part.
            let keys0 = PartKeys::pick(&keys, w, 8, 0);
            let by_sub: u64 = (0..SUB_PARTS).map(|s| keys0.count(s..s + 1, 2).alone).sum();
            assert_eq!(by_sub, part);
            // More than η singletons shown only when the part has them (the pace may give up
            // near the limit, never claim past it), and shown where they are plenty.
            for eta in [part / 4, part / 2, part - 1, part, part + 1, 2 * part] {
                assert!(
                    !keys0.shows_singletons(eta) || part > eta,
                    "η {eta}, {part}"
                );
            }
            assert!(keys0.shows_singletons(part / 4));
        }
    }
}
