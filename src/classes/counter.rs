//! An open-addressing hash counter from u64 keys to u64 counts (keys < 2^63), built for group-by
//! on packed keys: no per-key allocation, linear probing, Fibonacci hashing.

const EMPTY: u64 = u64::MAX;

/// Counts per key.
pub(crate) struct Counter {
    keys: Vec<u64>,
    counts: Vec<u64>,
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
            keys: vec![EMPTY; cap],
            counts: vec![0; cap],
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
        if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
        }
        let mask = self.keys.len() - 1;
        let mut i = slot(key, self.shift);
        loop {
            let k = self.keys[i];
            if k == key {
                self.counts[i] += count;
                return;
            }
            if k == EMPTY {
                self.keys[i] = key;
                self.counts[i] = count;
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// The count of `key`, if present.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u64> {
        let mask = self.keys.len() - 1;
        let mut i = slot(key, self.shift);
        loop {
            let k = self.keys[i];
            if k == key {
                return Some(self.counts[i]);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old_keys = std::mem::take(&mut self.keys);
        let old_counts = std::mem::take(&mut self.counts);
        let cap = old_keys.len() * 2;
        self.keys = vec![EMPTY; cap];
        self.counts = vec![0; cap];
        self.shift = 64 - cap.trailing_zeros();
        self.len = 0;
        for (k, c) in old_keys.into_iter().zip(old_counts) {
            if k != EMPTY {
                self.add(k, c);
            }
        }
    }

    /// The counts of the keys, in no particular order.
    pub(crate) fn counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.keys
            .iter()
            .zip(&self.counts)
            .filter(|(k, _)| **k != EMPTY)
            .map(|(_, &c)| c)
    }

    /// The (key, count) pairs, in no particular order (counts at full width).
    pub(crate) fn into_pairs(self) -> Vec<(u64, u64)> {
        self.keys
            .into_iter()
            .zip(self.counts)
            .filter(|(k, _)| *k != EMPTY)
            .collect()
    }

    /// The (key, count) pairs sorted by key.
    pub(crate) fn into_sorted_pairs(self) -> Vec<(u64, u64)> {
        let mut pairs = self.into_pairs();
        pairs.sort_unstable_by_key(|p| p.0);
        pairs
    }
}
