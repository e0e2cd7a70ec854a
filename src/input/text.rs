//! Values by their text: a batch column as keys into its distinct text forms, formatted once
//! per distinct value. Every pass matches values this way, whatever type the reader chose.

use std::collections::HashMap;

use arrow::array::{
    Array, ArrayAccessor, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray, StringArray,
    UInt32Array, downcast_primitive_array,
};

use arrow::compute::cast;
use arrow::datatypes::{DataType, ToByteSlice, UInt32Type};

use crate::error::Result;

/// A batch column as dictionary keys into its distinct text forms (the same text as a cast of
/// each value to Utf8). Nulls stay null in `keys`.
#[derive(Debug, Clone)]
pub struct TextColumn {
    /// Key of every row.
    pub keys: UInt32Array,
    /// Distinct text forms (may include values no key points to).
    pub values: StringArray,
}

/// Dictionary-encodes a column by its text form without formatting every row: dictionary
/// columns keep their dictionary, numbers are packed by value first and only the distinct
/// values are formatted.
pub fn text_column(column: &ArrayRef) -> Result<TextColumn> {
    let dict_type =
        |v: &DataType| DataType::Dictionary(Box::new(DataType::UInt32), Box::new(v.clone()));
    // Text (every column of a CSV input) is the hot case: encoded directly, see `strings`.
    match column.data_type() {
        DataType::Utf8 => return Ok(offset_strings(column.as_string::<i32>())?),
        DataType::LargeUtf8 => return Ok(offset_strings(column.as_string::<i64>())?),
        DataType::Utf8View => return Ok(view_strings(column.as_string_view())?),
        _ => {}
    }
    // Numbers, dates and times of up to 8 bytes (every typed Parquet column pbg meets on wide
    // data): keyed by their bits, only the distinct values cast to text.
    if let Some(text) = downcast_primitive_array!(
        column => primitive(column)?,
        _ => None
    ) {
        return Ok(text);
    }
    let dict = match column.data_type() {
        DataType::Dictionary(_, v) if matches!(v.as_ref(), DataType::Utf8View) => {
            cast(&cast(column, &DataType::Utf8)?, &dict_type(&DataType::Utf8))?
        }
        DataType::Dictionary(_, v) => cast(column, &dict_type(v))?,
        DataType::Utf8 | DataType::LargeUtf8 => cast(column, &dict_type(&DataType::Utf8))?,
        t if t.is_primitive() => cast(column, &dict_type(t))?,
        t if t.is_nested() => cast(
            &super::nested_text::nested_text(column)?,
            &dict_type(&DataType::Utf8),
        )?,
        _ => cast(&cast(column, &DataType::Utf8)?, &dict_type(&DataType::Utf8))?,
    };
    let dict = dict.as_dictionary::<UInt32Type>();
    let values = cast(dict.values(), &DataType::Utf8)?;
    Ok(TextColumn {
        keys: dict.keys().clone(),
        values: values.as_string::<i32>().clone(),
    })
}

/// Offset-encoded text (Utf8, LargeUtf8: every column a CSV scan yields) as keys into its
/// distinct values, numbered in order of first appearance like [`first_appearance`], through a
/// [`ShortTextTable`]: a value of up to 24 bytes is hashed and compared as three words read
/// straight from the array's buffer, so the common short values cost no byte loop and no
/// `memcmp` call. On adult's columns as decoded from CSV: 9.2 ns a value against 12.0 ns for
/// [`first_appearance`] (arrow's decode of the same values: 28 ns).
fn offset_strings<O: arrow::array::OffsetSizeTrait>(
    column: &arrow::array::GenericStringArray<O>,
) -> std::result::Result<TextColumn, arrow::error::ArrowError> {
    let data = column.value_data();
    let offsets = column.value_offsets();
    ShortTextTable::new(column)
        .encode(|row| buffer_words(data, offsets[row].as_usize(), offsets[row + 1].as_usize()))
}

/// View-encoded text (Utf8View) as keys into its distinct values, like [`offset_strings`]: a
/// value of up to 12 bytes is read from its view alone (where arrow keeps it inline), a longer
/// one from its buffer.
fn view_strings(
    column: &arrow::array::StringViewArray,
) -> std::result::Result<TextColumn, arrow::error::ArrowError> {
    let views = column.views();
    ShortTextTable::new(column).encode(|row| {
        let view = views[row];
        let len = view as u32 as usize;
        if len <= 12 {
            inline_words(view, len)
        } else {
            long_words(column.value(row).as_bytes())
        }
    })
}

/// A text's identity for hashing: its length, its first 8 bytes (zero-filled below 8 bytes),
/// above 16 bytes its next 8 (else 0) and above 8 bytes its last 8 (else 0). Two texts of at
/// most [`EXACT_BYTES`] are equal exactly when their words are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct TextWords {
    head: u64,
    mid: u64,
    tail: u64,
    len: usize,
}

/// The longest text the words identify whole (longer ones are confirmed byte for byte).
const EXACT_BYTES: usize = 24;

impl TextWords {
    /// The words of `text`, byte by byte (the reference the buffer reads must equal).
    fn of(text: &[u8]) -> Self {
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
fn buffer_words(data: &[u8], start: usize, end: usize) -> TextWords {
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
fn inline_words(view: u128, len: usize) -> TextWords {
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
fn long_words(text: &[u8]) -> TextWords {
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

/// An open-addressing table from the texts of one string array to keys numbered in order of
/// first appearance. Slots hold the words and the key; texts over 24 bytes are confirmed byte
/// for byte against the row that first held them. The hash folds each pair of words through a
/// multiply with its own random seeds (drawn per table), so that no input can choose
/// collisions: with the words merely combined by xor, crafted texts sharing one combination
/// made every lookup walk the whole batch.
struct ShortTextTable<A> {
    column: A,
    /// (words, key + 1); key 0 marks an empty slot.
    slots: Vec<(TextWords, u32)>,
    /// The row where each distinct text first appears, by key.
    firsts: Vec<usize>,
    seed: [u64; 4],
}

impl<'a, A: ArrayAccessor<Item = &'a str>> ShortTextTable<A> {
    /// An empty table over `column`, with fresh random seeds.
    fn new(column: A) -> Self {
        let state = ahash::RandomState::new();
        Self::with_seed(column, [1u64, 2, 3, 4].map(|i| state.hash_one(i)))
    }

    /// An empty table over `column` hashing with `seed`.
    fn with_seed(column: A, seed: [u64; 4]) -> Self {
        ShortTextTable {
            column,
            slots: vec![(TextWords::default(), 0); 64],
            firsts: Vec::new(),
            seed,
        }
    }

    /// Every row's key (nulls stay null), given the words of a row's text, and the distinct
    /// texts. No shortcut for a run of equal values, and no per-row null test when there are no
    /// nulls: on shuffled rows such branches mispredict and cost more than the lookup they save.
    #[inline(always)]
    fn encode(
        mut self,
        words: impl Fn(usize) -> TextWords,
    ) -> std::result::Result<TextColumn, arrow::error::ArrowError> {
        let mut keys = vec![0u32; self.column.len()];
        let nulls = self.column.logical_nulls().filter(|n| n.null_count() > 0);
        for (row, key) in keys.iter_mut().enumerate() {
            if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                continue;
            }
            *key = self.key(words(row), row)?;
        }
        Ok(TextColumn {
            keys: UInt32Array::new(keys.into(), nulls),
            values: self.into_values()?,
        })
    }

    /// The slot hash of a text's words.
    #[inline]
    fn hash(&self, w: TextWords) -> u64 {
        let fold = |a: u64, b: u64| {
            let p = a as u128 * b as u128;
            ((p >> 64) as u64) ^ (p as u64)
        };
        let s = self.seed;
        // Each pair of words through its own seeded multiply, then the two through a third.
        let a = fold(w.head ^ s[0], w.mid ^ s[1]);
        let b = fold(w.tail ^ s[2], w.len as u64 ^ s[3]);
        fold(a ^ s[3], b ^ s[0])
    }

    /// The key of the text of `row`, whose words are `words`, numbering it next if it is new.
    #[inline(always)]
    fn key(
        &mut self,
        words: TextWords,
        row: usize,
    ) -> std::result::Result<u32, arrow::error::ArrowError> {
        let mask = self.slots.len() - 1;
        let mut i = self.hash(words) as usize & mask;
        loop {
            let (w, k) = self.slots[i];
            // One test for the three words (an empty slot's words are the empty text's).
            let same = (w.head ^ words.head)
                | (w.mid ^ words.mid)
                | (w.tail ^ words.tail)
                | (w.len ^ words.len) as u64;
            if same == 0 && k != 0 && (words.len <= EXACT_BYTES || self.same_text(k - 1, row)) {
                return Ok(k - 1);
            }
            if k == 0 {
                return self.insert(i, words, row);
            }
            i = (i + 1) & mask;
        }
    }

    /// Whether `row` holds the text numbered `key`, byte for byte.
    #[inline(never)]
    fn same_text(&self, key: u32, row: usize) -> bool {
        self.column.value(self.firsts[key as usize]) == self.column.value(row)
    }

    /// Numbers the text of `row` next, in the empty slot `i` its probe ended on.
    #[inline(never)]
    fn insert(
        &mut self,
        i: usize,
        words: TextWords,
        row: usize,
    ) -> std::result::Result<u32, arrow::error::ArrowError> {
        let key = u32::try_from(self.firsts.len())
            .ok()
            .filter(|&k| k < u32::MAX)
            .ok_or(arrow::error::ArrowError::DictionaryKeyOverflowError)?;
        self.slots[i] = (words, key + 1);
        self.firsts.push(row);
        // A quarter full at most: few probes go past their first slot.
        if self.firsts.len() * 4 > self.slots.len() {
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

    /// The distinct texts in key order.
    fn into_values(self) -> std::result::Result<StringArray, arrow::error::ArrowError> {
        let texts = self.firsts.iter().map(|&r| self.column.value(r));
        let bytes: usize = texts.clone().map(str::len).sum();
        let mut builder = arrow::array::StringBuilder::with_capacity(self.firsts.len(), bytes);
        texts.for_each(|t| builder.append_value(t));
        Ok(builder.finish())
    }
}

/// Primitive values as keys into their distinct values ([`first_appearance`] on the values'
/// bits); the distinct values are cast to text as a dictionary cast's values would be, so their
/// text is arrow's. Replaces arrow's dictionary cast, which hashes every row with SipHash and returns a
/// `Result` per row: most of the read of a wide table of numbers. `None` for values wider than
/// 8 bytes (decimals of 128 and 256 bits) and for durations and intervals, which the dictionary
/// cast refuses: they keep its path (and its error).
fn primitive<T: ArrowPrimitiveType>(column: &PrimitiveArray<T>) -> Result<Option<TextColumn>> {
    let width = std::mem::size_of::<T::Native>();
    if width > 8
        || matches!(
            column.data_type(),
            DataType::Duration(_) | DataType::Interval(_)
        )
    {
        return Ok(None);
    }
    let bits = |v: T::Native| {
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(v.to_byte_slice());
        u64::from_le_bytes(b)
    };
    let values = column.values();
    let (keys, distinct) = first_appearance(
        column.len(),
        |r| column.is_null(r),
        |r| (bits(values[r]), values[r]),
    )?;
    let distinct =
        PrimitiveArray::<T>::new(distinct.into(), None).with_data_type(column.data_type().clone());
    let text = cast(&distinct, &DataType::Utf8)?;
    Ok(Some(TextColumn {
        keys: UInt32Array::new(keys.into(), column.logical_nulls()),
        values: text.as_string::<i32>().clone(),
    }))
}

/// Every row's key into the distinct values, numbered in order of first appearance (as arrow's
/// dictionary cast numbers them), and those values: `value(row)` gives a row's map key and the
/// value kept for it. One map probe per row; a row whose key equals the row before's reuses its
/// number without hashing (runs are common in low-cardinality columns). Null rows get 0.
fn first_appearance<K, V>(
    n: usize,
    is_null: impl Fn(usize) -> bool,
    value: impl Fn(usize) -> (K, V),
) -> Result<(Vec<u32>, Vec<V>)>
where
    K: Copy + Eq + std::hash::Hash,
{
    let mut index: HashMap<K, u32, ahash::RandomState> =
        HashMap::with_capacity_and_hasher(64, ahash::RandomState::new());
    let mut distinct: Vec<V> = Vec::new();
    let mut keys: Vec<u32> = Vec::with_capacity(n);
    let mut last: Option<(K, u32)> = None;
    for row in 0..n {
        if is_null(row) {
            keys.push(0);
            continue;
        }
        let (k, v) = value(row);
        let key = match last {
            Some((l, key)) if l == k => key,
            _ => {
                let key = match index.get(&k) {
                    Some(&key) => key,
                    None => {
                        let key = u32::try_from(distinct.len())
                            .map_err(|_| arrow::error::ArrowError::DictionaryKeyOverflowError)?;
                        index.insert(k, key);
                        distinct.push(v);
                        key
                    }
                };
                last = Some((k, key));
                key
            }
        };
        keys.push(key);
    }
    Ok((keys, distinct))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{LargeStringArray, StringViewArray};
    use proptest::prelude::*;

    use super::*;

    /// Every row's text through `text_column`, None for nulls.
    fn texts(t: &TextColumn) -> Vec<Option<String>> {
        (0..t.keys.len())
            .map(|r| {
                t.keys
                    .is_valid(r)
                    .then(|| t.values.value(t.keys.value(r) as usize).to_string())
            })
            .collect()
    }

    /// The text column through arrow's dictionary cast (the path the direct encoders replace).
    fn via_cast(column: &ArrayRef) -> TextColumn {
        let t = column.data_type();
        let dict = cast(
            column,
            &DataType::Dictionary(Box::new(DataType::UInt32), Box::new(t.clone())),
        )
        .unwrap();
        let dict = dict.as_dictionary::<UInt32Type>();
        let values = cast(dict.values(), &DataType::Utf8).unwrap();
        TextColumn {
            keys: dict.keys().clone(),
            values: values.as_string::<i32>().clone(),
        }
    }

    proptest! {
        /// Numbers, dates and timestamps get the texts and distinct values (in order) of arrow's
        /// dictionary cast, nulls included; floats with signed zeros, NaN and infinities.
        #[test]
        fn primitives_match_the_dictionary_cast(
            rows in proptest::collection::vec(proptest::option::weighted(0.9, -40i64..40), 0..200),
            scale in prop_oneof![Just(1.0f64), Just(0.5), Just(-0.0), Just(f64::NAN), Just(f64::INFINITY)],
        ) {
            use arrow::array::{
                Date32Array, Float32Array, Float64Array, Int8Array, Int64Array,
                TimestampMillisecondArray, UInt16Array,
            };
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(rows.clone())),
                Arc::new(Int8Array::from(rows.iter().map(|v| v.map(|v| v as i8)).collect::<Vec<_>>())),
                Arc::new(UInt16Array::from(rows.iter().map(|v| v.map(|v| (v + 40) as u16)).collect::<Vec<_>>())),
                Arc::new(Float64Array::from(rows.iter().map(|v| v.map(|v| v as f64 * scale)).collect::<Vec<_>>())),
                Arc::new(Float32Array::from(rows.iter().map(|v| v.map(|v| v as f32 / 3.0)).collect::<Vec<_>>())),
                Arc::new(Date32Array::from(rows.iter().map(|v| v.map(|v| v as i32 * 400)).collect::<Vec<_>>())),
                Arc::new(TimestampMillisecondArray::from(rows.iter().map(|v| v.map(|v| v * 86_399_999)).collect::<Vec<_>>()).with_timezone("+02:00")),
            ];
            for c in &columns {
                let direct = text_column(c).unwrap();
                let cast = via_cast(c);
                prop_assert_eq!(texts(&direct), texts(&cast), "{}", c.data_type());
                prop_assert_eq!(&direct.values, &cast.values, "{}", c.data_type());
            }
        }

        /// The direct text encoder gives every row its own text (nulls null), with the distinct
        /// values in the order arrow's dictionary cast gives them, for all three text types.
        #[test]
        fn strings_match_the_dictionary_cast(
            rows in proptest::collection::vec(
                proptest::option::weighted(0.9, "[a-c]{0,2}|\\PC{0,3}"), 0..200),
        ) {
            let want: Vec<Option<String>> = rows.clone();
            let columns: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(rows.clone())),
                Arc::new(LargeStringArray::from(rows.clone())),
                Arc::new(StringViewArray::from(rows.clone())),
            ];
            let utf8 = Arc::new(StringArray::from(rows)) as ArrayRef;
            let dict_type = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
            let cast_dict = cast(&utf8, &dict_type).unwrap();
            let cast_values = cast_dict.as_dictionary::<UInt32Type>().values().as_string::<i32>().clone();
            for c in &columns {
                let t = text_column(c).unwrap();
                prop_assert_eq!(texts(&t), want.clone());
                prop_assert_eq!(&t.values, &cast_values);
            }
        }

        /// Texts crafted to collide under an xor of their words (one length, one last word, one
        /// `head ^ mid`) spread over the table like any others, whatever the seeds.
        #[test]
        fn crafted_texts_do_not_collide(seed in proptest::array::uniform4(any::<u64>()), base in any::<u64>()) {
            let empty = StringArray::from(Vec::<&str>::new());
            let table = ShortTextTable::with_seed(&empty, seed);
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

        /// Texts on both sides of the 8- and 16-byte word boundaries, many sharing their first
        /// and last 8 bytes, in arrays sliced from a larger one (so values start anywhere in the
        /// buffer, near both of its ends): every row keeps its own text and the distinct values
        /// come in arrow's order.
        #[test]
        fn long_and_sliced_texts_match_the_dictionary_cast(
            rows in proptest::collection::vec(
                proptest::option::weighted(0.95, "[ab]{0,3}|a{6,9}[ab]{0,2}|[ab]{15,18}|aaaaaaaa[ab]{1,20}bbbbbbbb"), 0..300),
            from in 0usize..20,
            to in 0usize..20,
        ) {
            let from = from.min(rows.len());
            let to = (from + to).min(rows.len()).max(from);
            let full = StringArray::from(rows.clone());
            let large = LargeStringArray::from(rows.clone());
            let view = StringViewArray::from(rows.clone());
            let sliced: Vec<ArrayRef> = vec![
                Arc::new(full.slice(from, rows.len() - from)),
                Arc::new(full.slice(0, to)),
                Arc::new(large.slice(from, to - from)),
                Arc::new(view.slice(from, to - from)),
            ];
            for c in &sliced {
                let t = text_column(c).unwrap();
                let want = via_cast(c);
                prop_assert_eq!(texts(&t), texts(&want));
                prop_assert_eq!(&t.values, &want.values);
            }
        }
    }
}
