//! The order of a coarser node's classes: the finer class keys mapped one level up in one QI,
//! sorted only where the mapping leaves them out of order.

use super::KeyLayout;

/// A block of finer classes (equal fields above QI `d` and equal new group) in ascending order of
/// their coarser keys; equal keys are adjacent.
pub(crate) enum Block<'a> {
    /// Already in order: finer classes `first..first + keys.len()` with these coarser keys.
    Sorted { keys: &'a [u64], first: usize },
    /// Sorted entries `(low key bits << 32) | finer class`; the coarser key is `high | low bits`.
    Packed { high: u64, order: &'a [u64] },
    /// Sorted entries `(coarser key << 64) | finer class`, for keys too wide to pack.
    Wide(&'a [u128]),
}

/// Per-thread buffers.
#[derive(Default)]
struct Scratch {
    mapped: Vec<u64>,
    order: Vec<u64>,
    wide: Vec<u128>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Maps the ascending finer class `keys` one level up in QI `d` (`up`: finer group → coarser
/// group) and hands the finer classes to `visit` block by block in ascending coarser order.
///
/// `up` is monotone (hierarchies number their groups so), hence the mapped keys stay sorted
/// except inside each block sharing the fields above QI `d` and the new group, where they form
/// one sorted run per merged finer group: only such blocks are sorted.
pub(crate) fn coarser_order(
    keys: impl Iterator<Item = u64>,
    layout: &KeyLayout,
    d: usize,
    up: &[u32],
    mut visit: impl FnMut(Block<'_>),
) {
    SCRATCH.with_borrow_mut(
        |Scratch {
             mapped,
             order,
             wide,
         }| {
            let shift = layout.shift(d);
            let field = layout.mask(d) << shift;
            mapped.clear();
            mapped.extend(
                keys.map(|k| {
                    (k & !field) | ((up[((k & field) >> shift) as usize] as u64) << shift)
                }),
            );
            let n = mapped.len();
            let block_of = |p: usize| mapped[p] >> shift;
            // Sorted stretches, however many blocks they span, go out as one; only a block
            // holding a descent is sorted.
            let mut i = 0;
            while i < n {
                let mut j = i + 1;
                while j < n && mapped[j] >= mapped[j - 1] {
                    j += 1;
                }
                if j == n {
                    visit(Block::Sorted {
                        keys: &mapped[i..n],
                        first: i,
                    });
                    break;
                }
                // Blocks ascend, so the descent at j lies inside the block of j - 1 and j.
                let block = block_of(j);
                let mut start = j - 1;
                while start > i && block_of(start - 1) == block {
                    start -= 1;
                }
                let mut end = j + 1;
                while end < n && block_of(end) == block {
                    end += 1;
                }
                if start > i {
                    visit(Block::Sorted {
                        keys: &mapped[i..start],
                        first: i,
                    });
                }
                if shift <= 32 {
                    // The fields below QI d and the class index fit one u64: sort those.
                    let low = (1u64 << shift) - 1;
                    order.clear();
                    order.extend((start..end).map(|p| ((mapped[p] & low) << 32) | p as u64));
                    order.sort_unstable();
                    visit(Block::Packed {
                        high: block << shift,
                        order,
                    });
                } else {
                    wide.clear();
                    wide.extend((start..end).map(|p| ((mapped[p] as u128) << 64) | p as u128));
                    wide.sort_unstable();
                    visit(Block::Wide(wide));
                }
                i = end;
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// The finer classes in the order `coarser_order` hands them out.
    fn handed_out(keys: &[u64], layout: &KeyLayout, d: usize, up: &[u32]) -> Vec<(u64, usize)> {
        let mut out = Vec::new();
        coarser_order(keys.iter().copied(), layout, d, up, |block| match block {
            Block::Sorted { keys, first } => {
                out.extend(keys.iter().enumerate().map(|(q, &k)| (k, first + q)))
            }
            Block::Packed { high, order } => out.extend(
                order
                    .iter()
                    .map(|&o| (high | (o >> 32), (o & 0xffff_ffff) as usize)),
            ),
            Block::Wide(order) => {
                out.extend(order.iter().map(|&o| ((o >> 64) as u64, o as u64 as usize)))
            }
        });
        out
    }

    /// Equal to mapping every key and sorting by (coarser key, finer class), for narrow and wide
    /// low fields (packed and u128 sorts) and every QI.
    #[test]
    fn coarser_order_is_mapped_keys_sorted() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // Leaf counts per QI: the last layout puts 40 bits below QI 0.
        for leaves in [vec![6, 5, 9], vec![3, 1 << 20, 1 << 20]] {
            let names = vec!["a"; leaves.len()];
            let layout = KeyLayout::new(&names, &leaves, &[1]).unwrap();
            for d in 0..leaves.len() {
                // A monotone map of QI d's codes onto fewer groups.
                let up: Vec<u32> = (0..leaves[d] as u32).map(|c| c / 3).collect();
                for _ in 0..50 {
                    let mut keys: Vec<u64> = (0..rng.random_range(1..60))
                        .map(|_| {
                            (0..leaves.len()).fold(0u64, |k, e| {
                                let c = rng.random_range(0..leaves[e]) as u64;
                                k | (c << layout.shift(e))
                            })
                        })
                        .collect();
                    keys.sort_unstable();
                    keys.dedup();
                    let shift = layout.shift(d);
                    let field = layout.mask(d) << shift;
                    let mut want: Vec<(u64, usize)> = keys
                        .iter()
                        .enumerate()
                        .map(|(p, &k)| {
                            let g = up[((k & field) >> shift) as usize] as u64;
                            ((k & !field) | (g << shift), p)
                        })
                        .collect();
                    want.sort_unstable();
                    assert_eq!(handed_out(&keys, &layout, d, &up), want);
                }
            }
        }
    }
}
