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
                    visit(Block::Sorted {
                        keys: &mapped[i..end],
                        first: i,
                    });
                } else if shift <= 32 {
                    // The fields below QI d and the class index fit one u64: sort those.
                    let low = (1u64 << shift) - 1;
                    order.clear();
                    order.extend((i..end).map(|p| ((mapped[p] & low) << 32) | p as u64));
                    order.sort_unstable();
                    visit(Block::Packed {
                        high: block << shift,
                        order,
                    });
                } else {
                    wide.clear();
                    wide.extend((i..end).map(|p| ((mapped[p] as u128) << 64) | p as u128));
                    wide.sort_unstable();
                    visit(Block::Wide(wide));
                }
                i = end;
            }
        },
    )
}
