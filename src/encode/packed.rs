//! Packed integer keys, shared by pass 1's accumulator and the class group-by: the bits a code
//! domain needs, and an open-addressing hash counter from u64 keys to u64 counts (keys < 2^63)
//! with no per-key allocation, linear probing and Fibonacci hashing.

/// Bits needed to hold codes `0..n`.
pub fn bits_for(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

const EMPTY: u64 = u64::MAX;

/// Counts per key.
pub(crate) struct Counter {
    /// (key, count) slots, side by side so that a probe touches one cache line.
    slots: Vec<(u64, u64)>,
    len: usize,
    shift: u32,
}

#[inline]
fn slot(key: u64, shift: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

impl Counter {
    /// A counter sized for about `n` distinct keys.
    pub(crate) fn with_capacity(n: usize) -> Self {
        let cap = (n.max(8) * 2).next_power_of_two();
        Counter {
            slots: vec![(EMPTY, 0); cap],
            len: 0,
            shift: 64 - cap.trailing_zeros(),
        }
    }

    /// Number of distinct keys.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds `count` to `key`.
    #[inline]
    pub(crate) fn add(&mut self, key: u64, count: u64) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = slot(key, self.shift);
        loop {
            let s = &mut self.slots[i];
            if s.0 == key {
                s.1 += count;
                return;
            }
            if s.0 == EMPTY {
                *s = (key, count);
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds 1 to each of `keys`. The slot of the key a few places ahead is fetched into the
    /// cache while this one is counted: a table of tens of thousands of combinations outgrows
    /// the core's cache, and each add otherwise waited on its slot's load (nearly all of the
    /// adds' time in a profile of pass 1 and the verifier).
    pub(crate) fn add_ones(&mut self, keys: &[u64]) {
        const AHEAD: usize = 16;
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&next) = keys.get(i + AHEAD) {
                self.prefetch(next);
            }
            self.add(key, 1);
        }
    }

    /// Asks for the cache line of `key`'s first slot (a hint: a slot index made stale by a
    /// growth of the table only wastes the fetch).
    #[inline]
    fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: prefetching is a hint that never faults, and the index is within the
            // slots (`slot` is below their power-of-two length).
            let at = self.slots.as_ptr().wrapping_add(slot(key, self.shift));
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// The count of `key`, if present.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        let mask = self.slots.len() - 1;
        let mut i = slot(key, self.shift);
        loop {
            let (k, c) = self.slots[i];
            if k == key {
                return Some(c);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let cap = old.len() * 2;
        self.slots = vec![(EMPTY, 0); cap];
        self.shift = 64 - cap.trailing_zeros();
        self.len = 0;
        for (k, c) in old {
            if k != EMPTY {
                self.add(k, c);
            }
        }
    }

    /// The counts of the keys, in no particular order.
    pub(crate) fn counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots
            .iter()
            .filter(|(k, _)| *k != EMPTY)
            .map(|&(_, c)| c)
    }

    /// The (key, count) pairs, in no particular order (counts at full width).
    pub(crate) fn into_pairs(self) -> Vec<(u64, u64)> {
        // Compacted in place without a branch per slot (about half the slots are empty, at
        // random: a branch on each would be mispredicted half the time).
        let mut slots = self.slots;
        let mut kept = 0;
        for i in 0..slots.len() {
            let s = slots[i];
            slots[kept] = s;
            kept += usize::from(s.0 != EMPTY);
        }
        slots.truncate(kept);
        slots
    }

    /// The (key, count) pairs sorted by key.
    pub(crate) fn into_sorted_pairs(self) -> Vec<(u64, u64)> {
        let mut pairs = self.into_pairs();
        pairs.sort_unstable_by_key(|p| p.0);
        pairs
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Counting a batch with the slots ahead prefetched gives a naive count's pairs, also
        /// when the table grows inside the batch (the prefetched slots then stale).
        #[test]
        fn adds_of_a_batch_count_like_a_map(
            keys in proptest::collection::vec(0u64..5000, 0..4000),
            wide in any::<bool>(),
        ) {
            // High bits too: the slot comes from the key's top bits.
            let keys: Vec<u64> = keys.iter().map(|&k| if wide { k << 50 | k } else { k }).collect();
            let mut counter = Counter::with_capacity(8);
            counter.add_ones(&keys);
            let mut naive: HashMap<u64, u64> = HashMap::new();
            for &k in &keys {
                *naive.entry(k).or_default() += 1;
            }
            let mut want: Vec<(u64, u64)> = naive.into_iter().collect();
            want.sort_unstable();
            prop_assert_eq!(counter.len(), want.len());
            prop_assert_eq!(counter.into_sorted_pairs(), want);
        }
    }
}
