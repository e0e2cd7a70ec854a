//! Values by their text: a batch column as keys into its distinct text forms, formatted once
//! per distinct value. Every pass matches values this way, whatever type the reader chose.

use std::collections::HashMap;
use std::fmt::Write as _;

use arrow::array::{
    Array, ArrayAccessor, ArrayRef, ArrowPrimitiveType, AsArray, DictionaryArray, PrimitiveArray,
    StringArray, UInt32Array, downcast_primitive_array,
};

use arrow::compute::cast;
use arrow::datatypes::{DataType, ToByteSlice, UInt32Type};

use super::words::{EXACT_BYTES, TextWords, WordTable, buffer_words, inline_words, long_words};
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

/// `keys` into `values` as a dictionary array, its keys checked as arrow's `try_new` checks them
/// (every key below the number of values) in one pass the compiler vectorizes: arrow's check
/// stops at the first bad key and tests each row's validity, 0.6 ns a key, 4 % of the CPU of a
/// verified 30 M-row CSV release (every column of the input and the release goes through it).
/// Keys of null rows are checked too, so a key out of range under a null falls back to arrow's
/// check, which gives the error or accepts it.
pub fn dictionary(
    keys: UInt32Array,
    values: ArrayRef,
) -> std::result::Result<DictionaryArray<UInt32Type>, arrow::error::ArrowError> {
    // A key at or past `n` is out of range (with more values than keys can number, none is);
    // an or of compares, which SSE2 vectorizes (an unsigned max it has not).
    let n = u32::try_from(values.len()).ok();
    let out_of_range = |n: u32| {
        keys.values()
            .iter()
            .fold(0u32, |bad, &k| bad | (k >= n) as u32)
    };
    if n.is_none_or(|n| out_of_range(n) == 0) {
        // SAFETY: `try_new` fails only for a key of a valid row at or past the number of
        // values, and no key is.
        return Ok(unsafe { DictionaryArray::new_unchecked(keys, values) });
    }
    DictionaryArray::try_new(keys, values)
}

/// Dictionary-encodes a column by its text form without formatting every row: dictionary
/// columns keep their dictionary, numbers are packed by value first and only the distinct
/// values are formatted.
pub fn text_column(column: &ArrayRef) -> Result<TextColumn> {
    let dict_type =
        |v: &DataType| DataType::Dictionary(Box::new(DataType::UInt32), Box::new(v.clone()));
    // Text (every column of a CSV input) is the hot case: encoded directly, see `strings`.
    match column.data_type() {
        DataType::Utf8 => return Ok(keyed_texts(column.as_string::<i32>(), 0)?),
        DataType::LargeUtf8 => return Ok(keyed_texts(column.as_string::<i64>(), 0)?),
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
        // Types arrow cannot pack into a dictionary (durations, intervals): by their text.
        t if t.is_primitive() => match cast(column, &dict_type(t)) {
            Ok(dict) => dict,
            Err(_) => cast(&utf8_of(column)?, &dict_type(&DataType::Utf8))?,
        },
        t if t.is_nested() => cast(
            &super::nested_text::nested_text(column)?,
            &dict_type(&DataType::Utf8),
        )?,
        _ => cast(&utf8_of(column)?, &dict_type(&DataType::Utf8))?,
    };
    let dict = dict.as_dictionary::<UInt32Type>();
    let values = utf8_of(dict.values())?;
    // A key to a null value is a null row (arrow's logical nulls): read by its key alone, it was
    // the text "" (past `null_as`, and refused as "value ``" with no row).
    let keys = match dict.values().null_count() {
        0 => dict.keys().clone(),
        _ => arrow::array::UInt32Array::new(dict.keys().values().clone(), dict.logical_nulls()),
    };
    Ok(TextColumn {
        keys,
        values: values.as_string::<i32>().clone(),
    })
}

/// [`text_column`] of the column named `name`: its errors name the column.
pub fn text_column_named(column: &ArrayRef, name: &str) -> Result<TextColumn> {
    use arrow::error::ArrowError;
    text_column(column).map_err(|e| match e {
        crate::error::PbgError::Arrow(ArrowError::CastError(m)) => {
            ArrowError::CastError(format!("column `{name}`: {m}")).into()
        }
        e => e,
    })
}

/// `column` as Utf8, binary values as their bytes in lowercase hex (`ff00`): any bytes have a
/// text, and distinct bytes distinct texts. Arrow's cast made bytes that are not UTF-8 null,
/// so every such value had one text and a release whose blobs were changed passed the
/// verifier's comparison of texts. (A binary column is never a QI, the sensitive or the class
/// attribute, nor written to a CSV release: its text serves only to compare values.)
fn utf8_of(column: &ArrayRef) -> Result<ArrayRef> {
    let binary = match column.data_type() {
        DataType::Binary => column.clone(),
        DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            cast(column, &DataType::Binary)?
        }
        DataType::Timestamp(_, Some(_)) => return exact_offsets(column),
        _ => return Ok(cast(column, &DataType::Utf8)?),
    };
    let bytes = binary.as_binary::<i32>();
    let mut out = arrow::array::StringBuilder::with_capacity(bytes.len(), 2 * bytes.values().len());
    let mut hex = String::new();
    for value in bytes.iter() {
        match value {
            Some(v) => {
                hex.clear();
                for b in v {
                    let _ = write!(hex, "{b:02x}");
                }
                out.append_value(&hex);
            }
            None => out.append_null(),
        }
    }
    Ok(std::sync::Arc::new(out.finish()))
}

/// Timestamps with a time zone as arrow writes them (RFC 3339, the zone's offset in hours and
/// minutes), except where the offset has seconds (local mean time, as zones give it before about
/// 1900: Africa/Monrovia's -00:44:30): there arrow rounds the offset to minutes, and the text
/// named another instant (30 s off), so such a value is written with the offset's seconds.
fn exact_offsets(column: &ArrayRef) -> Result<ArrayRef> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let usual = cast(column, &DataType::Utf8)?;
    let usual = usual.as_string::<i32>();
    let options = FormatOptions::default()
        .with_timestamp_tz_format(Some("%Y-%m-%dT%H:%M:%S%.f%::z"))
        .with_null("");
    let exact = ArrayFormatter::try_new(column.as_ref(), &options)?;
    let mut out = arrow::array::StringBuilder::with_capacity(usual.len(), usual.value_data().len());
    let mut text = String::new();
    for row in 0..usual.len() {
        if usual.is_null(row) {
            out.append_null();
            continue;
        }
        text.clear();
        let _ = write!(text, "{}", exact.value(row));
        // `+HH:MM:SS` ends the exact text: seconds other than 00 are kept.
        match text.ends_with(":00") {
            true => out.append_value(usual.value(row)),
            false => out.append_value(&text),
        }
    }
    Ok(std::sync::Arc::new(out.finish()))
}

/// Offset-encoded text (Utf8, LargeUtf8: every column a CSV scan yields) as keys into its
/// distinct values, numbered in order of first appearance like [`first_appearance`], through a
/// [`ShortTextTable`]: a value of up to 24 bytes is hashed and compared as three words read
/// straight from the array's buffer, so the common short values cost no byte loop and no
/// `memcmp` call. On adult's columns as decoded from CSV: 9.2 ns a value against 12.0 ns for
/// [`first_appearance`] (arrow's decode of the same values: 28 ns). The table is made with room
/// for `texts` distinct texts: a caller that expects many (the CSV decoder, for a column that
/// held many in its last batch) saves its growth from 64 slots, in every batch, to thousands.
pub(crate) fn keyed_texts<O: arrow::array::OffsetSizeTrait>(
    column: &arrow::array::GenericStringArray<O>,
    texts: usize,
) -> std::result::Result<TextColumn, arrow::error::ArrowError> {
    let data = column.value_data();
    let offsets = column.value_offsets();
    ShortTextTable::with_room(column, texts.min(column.len()))
        .encode(|row| buffer_words(data, offsets[row].as_usize(), offsets[row + 1].as_usize()))
}

/// View-encoded text (Utf8View) as keys into its distinct values, like [`keyed_texts`]: a
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

/// The texts of one string array as keys numbered in order of first appearance, through a
/// [`WordTable`]; texts over 24 bytes are confirmed byte for byte against the row that first
/// held them.
struct ShortTextTable<A> {
    column: A,
    table: WordTable,
    /// The row where each distinct text first appears, by key.
    firsts: Vec<usize>,
}

impl<'a, A: ArrayAccessor<Item = &'a str>> ShortTextTable<A> {
    /// An empty table over `column`, with fresh random seeds.
    fn new(column: A) -> Self {
        Self::with_room(column, 0)
    }

    /// An empty table over `column`, with fresh random seeds and room for `texts` distinct texts.
    fn with_room(column: A, texts: usize) -> Self {
        ShortTextTable {
            column,
            table: WordTable::with_room(texts),
            firsts: Vec::with_capacity(texts),
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
            let (column, firsts) = (&self.column, &self.firsts);
            let mut words = words(row);
            if words.len > EXACT_BYTES {
                words.mid = self.table.long_mid(column.value(row).as_bytes());
            }
            let (k, new) = self.table.key(words, |k| {
                column.value(firsts[k as usize]) == column.value(row)
            })?;
            if new {
                self.firsts.push(row);
            }
            *key = k;
        }
        Ok(TextColumn {
            keys: UInt32Array::new(keys.into(), nulls),
            values: self.into_values()?,
        })
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
    let text = utf8_of(&(std::sync::Arc::new(distinct) as ArrayRef))?;
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
    /// A zone offset with seconds is written whole (arrow rounded -00:44:30 to -00:45, naming
    /// an instant 30 s later); other offsets keep arrow's text, `Z` for UTC included.
    #[test]
    fn a_zone_offset_with_seconds_keeps_them() {
        use arrow::array::TimestampMillisecondArray;
        let texts = |zone: &str| {
            let column: super::ArrayRef = std::sync::Arc::new(
                TimestampMillisecondArray::from(vec![Some(44_625_600_000), None])
                    .with_timezone(zone),
            );
            let text = super::text_column(&column).unwrap();
            let key = text.keys.value(0) as usize;
            assert!(text.keys.is_null(1));
            text.values.value(key).to_string()
        };
        assert_eq!(texts("Africa/Monrovia"), "1971-06-01T11:15:30-00:44:30");
        assert_eq!(texts("+02:00"), "1971-06-01T14:00:00+02:00");
        assert_eq!(texts("UTC"), "1971-06-01T12:00:00Z");
    }

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

    /// A dictionary whose values hold a null has null rows where its keys point at it (the rows
    /// were read as the text "", past `null_as`, refused with no row named).
    #[test]
    fn a_key_to_a_null_value_is_a_null_row() {
        use arrow::array::{DictionaryArray, Int32Array};
        let values = StringArray::from(vec![Some("13053"), None]);
        let keys = Int32Array::from(vec![Some(0), Some(1), None, Some(1)]);
        let column: ArrayRef = Arc::new(DictionaryArray::try_new(keys, Arc::new(values)).unwrap());
        let text = text_column(&column).unwrap();
        assert_eq!(
            texts(&text),
            vec![Some("13053".to_string()), None, None, None]
        );
    }

    /// A table made with room for any number of texts keys a column as one grown from 64 slots:
    /// the same keys, distinct texts and nulls.
    #[test]
    fn room_made_for_texts_keys_alike() {
        let column: StringArray = (0..5000)
            .map(|i| (i % 7 != 3).then(|| format!("value {} of a text over 24 bytes", i % 1500)))
            .collect();
        let grown = keyed_texts(&column, 0).unwrap();
        for room in [1, 1024, 1500, 5000, 1 << 20] {
            let made = keyed_texts(&column, room).unwrap();
            assert_eq!(made.keys, grown.keys, "room {room}");
            assert_eq!(made.values, grown.values, "room {room}");
        }
        assert_eq!(grown.values.len(), 1500);
        assert_eq!(
            texts(&grown),
            column
                .iter()
                .map(|t| t.map(String::from))
                .collect::<Vec<_>>()
        );
    }

    proptest! {
        /// The one-pass key check accepts exactly the dictionaries arrow's `try_new` accepts
        /// (keys past the values, under null rows or not, none at all), with the same arrays.
        #[test]
        fn dictionary_checks_keys_as_arrow_does(
            keys in proptest::collection::vec(proptest::option::weighted(0.8, 0u32..6), 0..40),
            values in 0usize..5,
        ) {
            let keys = UInt32Array::from(keys);
            let values: ArrayRef =
                Arc::new(StringArray::from_iter_values((0..values).map(|v| v.to_string())));
            let ours = dictionary(keys.clone(), Arc::clone(&values));
            let arrows = DictionaryArray::<UInt32Type>::try_new(keys, values);
            prop_assert_eq!(ours.is_ok(), arrows.is_ok());
            if let (Ok(ours), Ok(arrows)) = (ours, arrows) {
                prop_assert_eq!(ours, arrows);
            }
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
