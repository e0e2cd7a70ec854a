//! Texts as words for hashing, and the open-addressing table that numbers distinct texts by them:
//! written once, for the keying of a text column ([`super::text`]) and for the CSV decoder that
//! keys its fields as it finds them ([`super::csv_scan`]).
//!
//! A text of up to 24 bytes is hashed and compared as three words read straight from its buffer,
//! so the common short values cost no byte loop and no `memcmp` call; a longer one is confirmed
//! byte for byte by the table's user.

use arrow::error::ArrowError;

/// A text's identity for hashing: its length, its first 8 bytes (zero-filled below 8 bytes),
/// above 16 bytes its next 8 (else 0) and above 8 bytes its last 8 (else 0). Two texts of at
/// most [`EXACT_BYTES`] are equal exactly when their words are. A longer text's middle word is
/// replaced by a seeded hash of all its bytes ([`WordTable::long_mid`]), so that texts which
/// differ only inside (URLs, paths) do not share a slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TextWords {
    pub(crate) head: u64,
    pub(crate) mid: u64,
    pub(crate) tail: u64,
    pub(crate) len: usize,
}

/// The longest text the words identify whole (longer ones are confirmed byte for byte).
pub(crate) const EXACT_BYTES: usize = 24;

impl TextWords {
    /// The words of `text`, byte by byte (the reference the buffer reads must equal).
    pub(crate) fn of(text: &[u8]) -> Self {
        let mut head = [0u8; 8];
        let n = text.len().min(8);
        head[..n].copy_from_slice(&text[..n]);
        let mut mid = [0u8; 8];
        if text.len() > 16 {
            mid.copy_from_slice(&text[8..16]);
        }
        let mut tail = [0u8; 8];
        if text.len() > 8 {
            tail.copy_from_slice(&text[text.len() - 8..]);
        }
        TextWords {
            head: u64::from_le_bytes(head),
            mid: u64::from_le_bytes(mid),
            tail: u64::from_le_bytes(tail),
            len: text.len(),
        }
    }
}

/// The 8 bytes of `text` from `at` as a little-endian word (`at + 8 <= text.len()`).
#[inline(always)]
fn word(text: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(text[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// The mask keeping the first `len` bytes of a word (all of it from 8 bytes on).
#[inline(always)]
fn head_mask(len: usize) -> u64 {
    if len >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * (len & 7))) - 1
    }
}

/// The words of `data[start..end]`, read as three whole words of the buffer and masked (no
/// branch on the length) unless a read would cross one of the buffer's ends.
#[inline(always)]
pub(crate) fn buffer_words(data: &[u8], start: usize, end: usize) -> TextWords {
    let len = end - start;
    if start + 16 > data.len() || end < 8 {
        return TextWords::of(&data[start..end]);
    }
    TextWords {
        head: word(data, start) & head_mask(len),
        mid: word(data, start + 8) & if len > 16 { u64::MAX } else { 0 },
        tail: word(data, end - 8) & if len > 8 { u64::MAX } else { 0 },
        len,
    }
}

/// The words of a text of `len` <= 12 bytes held inline in its Utf8View `view` (length in the
/// low 4 bytes, the text in the next 12). Arrow's validation refuses non-zero padding, but an
/// array imported unchecked (FFI) need not have been validated: the padding is masked out.
#[inline(always)]
pub(crate) fn inline_words(view: u128, len: usize) -> TextWords {
    let text = view >> 32;
    TextWords {
        head: text as u64 & head_mask(len),
        mid: 0,
        // Bytes len-8..len, for a text over 8 bytes.
        tail: if len > 8 {
            (text >> (8 * (len.saturating_sub(8) & 7))) as u64
        } else {
            0
        },
        len,
    }
}

/// The words of a text of more than 8 bytes, read as whole words.
#[inline(always)]
pub(crate) fn long_words(text: &[u8]) -> TextWords {
    let len = text.len();
    if len <= 8 {
        return TextWords::of(text);
    }
    TextWords {
        head: word(text, 0),
        mid: if len > 16 { word(text, 8) } else { 0 },
        tail: word(text, len - 8),
        len,
    }
}

/// An open-addressing table from texts (by their words) to keys numbered in order of first
/// appearance. Slots hold the words and the key; the user confirms texts over [`EXACT_BYTES`]
/// byte for byte against the text first numbered. The hash folds each pair of words through a
/// multiply with its own random seeds (drawn per table), so that no input can choose collisions:
/// with the words merely combined by xor, crafted texts sharing one combination made every
/// lookup walk the whole batch; and a text over [`EXACT_BYTES`] has all its bytes in its words
/// (see [`WordTable::long_mid`]): with only its first 16 and last 8, URLs differing inside
/// shared one slot and a batch of them took a quadratic number of comparisons.
#[derive(Debug, Clone)]
pub(crate) struct WordTable {
    /// (words, key + 1); key 0 marks an empty slot.
    slots: Vec<(TextWords, u32)>,
    /// Texts numbered so far.
    len: usize,
    seed: [u64; 4],
}

impl WordTable {
    /// An empty table with fresh random seeds.
    pub(crate) fn new() -> Self {
        let state = ahash::RandomState::new();
        Self::with_seed([1u64, 2, 3, 4].map(|i| state.hash_one(i)))
    }

    /// An empty table hashing with `seed`.
    pub(crate) fn with_seed(seed: [u64; 4]) -> Self {
        WordTable {
            slots: vec![(TextWords::default(), 0); 64],
            len: 0,
            seed,
        }
    }

    /// An empty table with fresh random seeds and room for `texts` texts without growing.
    pub(crate) fn with_room(texts: usize) -> Self {
        let mut table = Self::new();
        let slots = texts.saturating_mul(4).checked_next_power_of_two();
        if let Some(slots) = slots.filter(|&n| n > table.slots.len()) {
            table.slots = vec![(TextWords::default(), 0); slots];
        }
        table
    }

    /// Forgets every text, keeping the seeds and the room.
    pub(crate) fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill((TextWords::default(), 0));
            self.len = 0;
        }
    }

    /// The middle word a text over [`EXACT_BYTES`] is hashed by: a seeded hash of all its
    /// bytes. Callers set it on the text's words (set field by field, the words stay in
    /// registers: passing them through a function made a store-to-load stall on every field).
    #[cold]
    #[inline(never)]
    pub(crate) fn long_mid(&self, text: &[u8]) -> u64 {
        let s = self.seed;
        let fold = |a: u64, b: u64| {
            let p = a as u128 * b as u128;
            ((p >> 64) as u64) ^ (p as u64)
        };
        let mut h = s[1];
        let mut chunks = text.chunks_exact(8);
        for c in &mut chunks {
            h = fold(h ^ u64::from_le_bytes(c.try_into().unwrap_or([0; 8])), s[2]);
        }
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        fold(h ^ u64::from_le_bytes(last), s[3])
    }

    /// The slot hash of a text's words.
    #[inline]
    pub(crate) fn hash(&self, w: TextWords) -> u64 {
        let fold = |a: u64, b: u64| {
            let p = a as u128 * b as u128;
            ((p >> 64) as u64) ^ (p as u64)
        };
        let s = self.seed;
        // Each pair of words through its own seeded multiply, the two multiplies side by side
        // (a third one folding them together put a second multiply on every lookup's path
        // to its slot: 8 % of a CSV scan).
        fold(w.head ^ s[0], w.tail ^ s[1]) ^ fold(w.mid ^ s[2], w.len as u64 ^ s[3])
    }

    /// The key of the text whose words are `words`, numbering it next if it is new; `same(key)`
    /// tells whether a text over [`EXACT_BYTES`] is the one numbered `key`. Returns the key and
    /// whether the text is new (its user then keeps it as the text of that key).
    #[inline(always)]
    pub(crate) fn key(
        &mut self,
        words: TextWords,
        same: impl Fn(u32) -> bool,
    ) -> Result<(u32, bool), ArrowError> {
        let mask = self.slots.len() - 1;
        let mut i = self.hash(words) as usize & mask;
        loop {
            let (w, k) = self.slots[i];
            // One test for the three words (an empty slot's words are the empty text's).
            let equal = (w.head ^ words.head)
                | (w.mid ^ words.mid)
                | (w.tail ^ words.tail)
                | (w.len ^ words.len) as u64;
            if equal == 0 && k != 0 && (words.len <= EXACT_BYTES || same(k - 1)) {
                return Ok((k - 1, false));
            }
            if k == 0 {
                return self.insert(i, words).map(|k| (k, true));
            }
            i = (i + 1) & mask;
        }
    }

    /// Numbers the text of `words` next, in the empty slot `i` its probe ended on.
    #[inline(never)]
    fn insert(&mut self, i: usize, words: TextWords) -> Result<u32, ArrowError> {
        let key = u32::try_from(self.len)
            .ok()
            .filter(|&k| k < u32::MAX)
            .ok_or(ArrowError::DictionaryKeyOverflowError)?;
        self.slots[i] = (words, key + 1);
        self.len += 1;
        // A quarter full at most: few probes go past their first slot.
        if self.len * 4 > self.slots.len() {
            self.grow();
        }
        Ok(key)
    }

    /// Doubles the slots, placing every text again.
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = vec![(TextWords::default(), 0); old.len() * 2];
        let mask = self.slots.len() - 1;
        for (w, k) in old.into_iter().filter(|s| s.1 != 0) {
            let mut i = self.hash(w) as usize & mask;
            while self.slots[i].1 != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = (w, k);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A table made with room for n texts numbers n texts without growing, and a quarter full
    /// at most.
    #[test]
    fn room_made_holds_its_texts_without_growing() {
        for n in [0usize, 1, 16, 17, 1000, 8192] {
            let mut table = WordTable::with_room(n);
            let slots = table.slots.len();
            assert!(slots >= 64 && slots >= 4 * n, "{n}: {slots}");
            for i in 0..n {
                let text = format!("t{i}");
                let (key, new) = table.key(TextWords::of(text.as_bytes()), |_| true).unwrap();
                assert_eq!((key, new), (i as u32, true));
            }
            assert_eq!(table.slots.len(), slots, "{n} texts grew the table");
        }
    }

    proptest! {
        /// Texts crafted to collide under an xor of their words (one length, one last word, one
        /// `head ^ mid`) spread over the table like any others, whatever the seeds.
        #[test]
        fn crafted_texts_do_not_collide(seed in proptest::array::uniform4(any::<u64>()), base in any::<u64>()) {
            let table = WordTable::with_seed(seed);
            let slots = 4096u64;
            for rotation in [0, 29] {
                let mut used = std::collections::HashMap::new();
                for m in 0..1024u64 {
                    let mid = m.wrapping_mul(0x0101_0101_0101_0101) ^ base;
                    let head = base ^ mid.rotate_left(rotation);
                    let w = TextWords { head, mid, tail: 7, len: 24 };
                    *used.entry(table.hash(w) % slots).or_insert(0u32) += 1;
                }
                // 1024 random keys in 4096 slots: about 900 distinct slots, none hit by many.
                prop_assert!(used.len() > 800, "{} slots", used.len());
                prop_assert!(used.values().all(|&n| n <= 8));
            }
        }

        /// Texts over 24 bytes that differ only between their first 16 and last 8 bytes (URLs,
        /// paths: the attack found a batch of them quadratic) spread over the table like any
        /// others, whatever the seeds; their bare words would all share one slot.
        #[test]
        fn long_texts_differing_inside_do_not_collide(seed in proptest::array::uniform4(any::<u64>())) {
            let table = WordTable::with_seed(seed);
            let slots = 4096u64;
            let mut used = std::collections::HashMap::new();
            let mut bare = std::collections::HashSet::new();
            for m in 0..1024u64 {
                let text = format!("https://example.org/patients/{m:07}/record.html");
                let mut words = TextWords::of(text.as_bytes());
                bare.insert(table.hash(words));
                words.mid = table.long_mid(text.as_bytes());
                *used.entry(table.hash(words) % slots).or_insert(0u32) += 1;
            }
            prop_assert_eq!(bare.len(), 1);
            prop_assert!(used.len() > 800, "{} slots", used.len());
            prop_assert!(used.values().all(|&n| n <= 8));
        }
    }
}
