//! The wide path of class keys: when the QIs' codes do not fit one packed 64-bit key (many QIs,
//! large domains), a class is named by its *first row* — the smallest index among the encoded
//! rows it holds — found by a hash group-by on the generalized codes. Any number of QIs and any
//! domain sizes fit, and keys stay below 2^32 (an encoded dataset has fewer rows), so a value code
//! still packs below a class key into one `u64` cell key.

use rayon::prelude::*;

use crate::encode::EncodedQi;

/// Hash partitions grouped in parallel (every member of a group lands in the same one).
const PARTS: usize = 64;

/// At most this many items are grouped in one part on the calling thread.
const SEQUENTIAL_ITEMS: usize = 4096;

/// One QI's generalization at a node: leaf codes of the rows and, above the leaves, the group of
/// every leaf (`None` at level 0; QIs at a single top group are left out).
struct Field<'a> {
    codes: &'a [u32],
    groups: Option<&'a [u32]>,
    /// Bits the field's codes take.
    bits: u32,
}

impl Field<'_> {
    #[inline(always)]
    fn code(&self, row: u32) -> u32 {
        let leaf = self.codes[row as usize];
        match self.groups {
            None => leaf,
            Some(g) => g[leaf as usize],
        }
    }
}

/// The QIs that distinguish classes at `node` (single-group levels name no class apart).
fn fields<'a>(qis: &'a [EncodedQi], node: &[u8]) -> Vec<Field<'a>> {
    qis.iter()
        .zip(node)
        .filter_map(|(q, &l)| {
            let level = q.hierarchy.level(l);
            (level.labels.len() > 1).then(|| Field {
                codes: q.codes.values(),
                groups: (l > 0).then_some(level.group_of_leaf.as_slice()),
                bits: crate::encode::packed::bits_for(level.labels.len()),
            })
        })
        .collect()
}

/// Whether rows `a` and `b` have the same generalized codes.
#[inline]
fn same_class(fields: &[Field<'_>], a: u32, b: u32) -> bool {
    fields.iter().all(|f| f.code(a) == f.code(b))
}

/// The hash of every item's generalized codes (row chunks in parallel).
fn hashes(fields: &[Field<'_>], items: &[u32]) -> Vec<u64> {
    let mut out = vec![0u64; items.len()];
    out.par_chunks_mut(1 << 14)
        .zip(items.par_chunks(1 << 14))
        .for_each(|(h, rows)| {
            for f in fields {
                for (h, &r) in h.iter_mut().zip(rows) {
                    *h = (h.rotate_left(26) ^ f.code(r) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                }
            }
            for h in h.iter_mut() {
                *h = mix(*h);
            }
        });
    out
}

/// Every item's generalized codes packed into one 128-bit key (fields that fit 128 bits), and
/// its hash: equal keys are equal classes, so no code needs confirming.
fn packed_keys(fields: &[Field<'_>], items: &[u32]) -> (Vec<u128>, Vec<u64>) {
    let mut keys = vec![0u128; items.len()];
    let mut hashes = vec![0u64; items.len()];
    keys.par_chunks_mut(1 << 14)
        .zip(hashes.par_chunks_mut(1 << 14))
        .zip(items.par_chunks(1 << 14))
        .for_each(|((k, h), rows)| {
            let mut shift = 0;
            for f in fields {
                for (k, &r) in k.iter_mut().zip(rows) {
                    *k |= (f.code(r) as u128) << shift;
                }
                shift += f.bits;
            }
            for (h, &k) in h.iter_mut().zip(k.iter()) {
                *h = mix((k as u64) ^ ((k >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            }
        });
    (keys, hashes)
}

/// A 64-bit finalizer, so that the top bits (partition) and low bits (slot) both vary.
#[inline]
fn mix(mut h: u64) -> u64 {
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 32)
}

/// Groups `items` (row indices in ascending order) by their generalized codes at `node`: the
/// first item of each item's group. Exact: codes that fit 128 bits are compared as one packed
/// key, wider ones by hash with equal hashes confirmed code by code.
pub(crate) fn first_rows(qis: &[EncodedQi], node: &[u8], items: &[u32]) -> Vec<u32> {
    group_first(&fields(qis, node), items)
}

/// [`first_rows`] over prepared fields.
fn group_first(fields: &[Field<'_>], items: &[u32]) -> Vec<u32> {
    if fields.is_empty() {
        // One class: every item belongs to the first one's.
        return vec![items.first().copied().unwrap_or(0); items.len()];
    }
    if fields.iter().map(|f| f.bits).sum::<u32>() <= u128::BITS {
        // Equal keys are equal classes: nothing to confirm.
        let (keys, hashes) = packed_keys(fields, items);
        return group_by_hash(items, &hashes, |i| keys[i], |_, _| true);
    }
    let hashes = hashes(fields, items);
    group_by_hash(
        items,
        &hashes,
        |i| hashes[i],
        |a, b| same_class(fields, items[a], items[b]),
    )
}

/// The first item of each item's group, where items `i` and `j` (indices into `items`) are in one
/// group when `key(i) == key(j)` and `same(i, j)`, and equal groups have equal `hashes`. Each hash
/// partition copies its items' keys, so probes compare within the partition (in cache).
fn group_by_hash<K: Copy + PartialEq>(
    items: &[u32],
    hashes: &[u64],
    key: impl Fn(usize) -> K + Sync,
    same: impl Fn(usize, usize) -> bool + Sync,
) -> Vec<u32> {
    // One part for few items (a node of a wide table with few rows: 64 parts and a parallel
    // pass cost more than the grouping); else a stable partition by the top hash bits, each
    // part keeping ascending item order.
    let parts: Vec<Vec<u32>> = if items.len() <= SEQUENTIAL_ITEMS {
        vec![(0..items.len() as u32).collect()]
    } else {
        let mut parts = vec![Vec::new(); PARTS];
        for (i, h) in hashes.iter().enumerate() {
            parts[(h >> 58) as usize].push(i as u32);
        }
        parts
    };
    let group = |part: &Vec<u32>| {
        let cap = (part.len() * 2).next_power_of_two().max(2);
        let mask = cap - 1;
        // Slot: index into `part` + 1 of the group's first item (0 = empty).
        let mut table = vec![0u32; cap];
        let mut out = Vec::with_capacity(part.len());
        let mut keys: Vec<K> = Vec::with_capacity(part.len());
        let mut rows: Vec<u32> = Vec::with_capacity(part.len());
        for (pos, &i) in part.iter().enumerate() {
            let h = hashes[i as usize];
            let row = items[i as usize];
            let k = key(i as usize);
            keys.push(k);
            rows.push(row);
            let mut s = (h as usize) & mask;
            let first = loop {
                let t = table[s];
                if t == 0 {
                    table[s] = pos as u32 + 1;
                    break row;
                }
                let p = (t - 1) as usize;
                if keys[p] == k && same(part[p] as usize, i as usize) {
                    break rows[p];
                }
                s = (s + 1) & mask;
            };
            out.push((i, first));
        }
        out
    };
    let firsts: Vec<Vec<(u32, u32)>> = match parts.len() {
        1 => parts.iter().map(group).collect(),
        _ => parts.par_iter().map(group).collect(),
    };
    let mut out = vec![0u32; items.len()];
    for part in firsts {
        for (i, first) in part {
            out[i as usize] = first;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same as grouping by the code tuples with a map, over every row.
    #[test]
    fn first_rows_match_a_map() {
        use rand::rngs::ChaCha8Rng;
        use rand::{RngExt, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let rows = 5000u32;
        let a: Vec<u32> = (0..rows).map(|_| rng.random_range(0..7)).collect();
        let b: Vec<u32> = (0..rows).map(|_| rng.random_range(0..300)).collect();
        // Few items are grouped in one part, more in hash partitions in parallel.
        for items in [
            (0..rows).step_by(3).collect::<Vec<u32>>(),
            (0..rows).collect(),
        ] {
            assert_eq!(items.len() > SEQUENTIAL_ITEMS, items.len() == rows as usize);
            // Fields within 128 bits group by packed keys, wider ones by hashes confirmed code by
            // code (the declared widths only choose the path).
            for bits in [(3, 9), (100, 100)] {
                let fields = [
                    Field {
                        codes: &a,
                        groups: None,
                        bits: bits.0,
                    },
                    Field {
                        codes: &b,
                        groups: None,
                        bits: bits.1,
                    },
                ];
                let got = group_first(&fields, &items);
                let mut seen = std::collections::HashMap::new();
                for &r in &items {
                    seen.entry((a[r as usize], b[r as usize])).or_insert(r);
                }
                let want: Vec<u32> = items
                    .iter()
                    .map(|&r| seen[&(a[r as usize], b[r as usize])])
                    .collect();
                assert_eq!(got, want);
            }
        }
    }
}
