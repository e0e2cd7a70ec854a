//! Nested values (structs, lists, maps) as text, which no cast provides: their JSON, written so
//! that two values have one text only when they are equal. Arrow's display text writes `[A, B]`
//! for both `["A", "B"]` and `["A, B"]`, and an inner null as an empty text; arrow's JSON writes
//! NaN and ±inf as `null` and refuses maps whose keys are not text. The verifier compares values
//! by their text, so each of these would hide a changed value.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::datatypes::{DataType, Field, FieldRef};
use arrow::error::ArrowError;
use arrow::json::writer::{Encoder, EncoderFactory, EncoderOptions, NullableEncoder, make_encoder};

use crate::error::Result;

/// How a null inside a nested value is written by the display fallback of [`nested_text`].
const INNER_NULL: &str = "\u{0}";

/// The text of every value of a nested column: its JSON through [`ExactJson`], or, for a type
/// the JSON encoder lacks, arrow's display text with an inner null written as a NUL byte.
pub fn nested_text(column: &ArrayRef) -> Result<ArrayRef> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let field = Arc::new(Field::new("value", column.data_type().clone(), true));
    let json = EncoderOptions::default()
        .with_explicit_nulls(true)
        .with_encoder_factory(Arc::new(ExactJson));
    let mut out = StringBuilder::with_capacity(column.len(), 0);
    if let Ok(mut encoder) = make_encoder(&field, column.as_ref(), &json) {
        let mut buf = Vec::new();
        for r in 0..column.len() {
            if column.is_null(r) {
                out.append_null();
                continue;
            }
            buf.clear();
            encoder.encode(r, &mut buf);
            out.append_value(String::from_utf8_lossy(&buf));
        }
        return Ok(Arc::new(out.finish()));
    }
    let options = FormatOptions::default().with_null(INNER_NULL);
    let formatter = ArrayFormatter::try_new(column.as_ref(), &options)?;
    for r in 0..column.len() {
        if column.is_null(r) {
            out.append_null();
        } else {
            out.append_value(formatter.value(r).to_string());
        }
    }
    Ok(Arc::new(out.finish()))
}

/// Arrow's JSON encoders, except where they are not one-to-one: floats (NaN and ±inf become the
/// strings `"NaN"`, `"inf"`, `"-inf"`, not `null`) and maps whose keys are not text (a list of
/// `[key, value]` pairs, which arrow refuses to write).
#[derive(Debug)]
struct ExactJson;

impl EncoderFactory for ExactJson {
    fn make_default_encoder<'a>(
        &self,
        _field: &'a FieldRef,
        array: &'a dyn Array,
        options: &'a EncoderOptions,
    ) -> std::result::Result<Option<NullableEncoder<'a>>, ArrowError> {
        let nulls = array.nulls().cloned();
        let encoder: Box<dyn Encoder + 'a> = match array.data_type() {
            DataType::Float16 => {
                let a = array.as_primitive::<arrow::datatypes::Float16Type>();
                Box::new(Floats(move |i| f64::from(a.value(i).to_f32())))
            }
            DataType::Float32 => {
                let a = array.as_primitive::<arrow::datatypes::Float32Type>();
                // As f32 prints (the shortest text of the f32), not as the f64 it widens to.
                Box::new(Floats32(a))
            }
            DataType::Float64 => {
                let a = array.as_primitive::<arrow::datatypes::Float64Type>();
                Box::new(Floats(move |i| a.value(i)))
            }
            DataType::Map(_, _) => {
                let map = array.as_map();
                if matches!(
                    map.keys().data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                ) {
                    return Ok(None); // arrow writes an object, keys quoted
                }
                // The key and value fields, as the map's type holds them (they live as long as
                // the array the encoders borrow).
                let DataType::Map(entries, _) = array.data_type() else {
                    return Ok(None);
                };
                let DataType::Struct(kv) = entries.data_type() else {
                    return Ok(None);
                };
                if kv.len() != 2 {
                    return Ok(None);
                }
                Box::new(Pairs {
                    offsets: map.value_offsets(),
                    keys: make_encoder(&kv[0], map.keys().as_ref(), options)?,
                    values: make_encoder(&kv[1], map.values().as_ref(), options)?,
                })
            }
            _ => return Ok(None),
        };
        Ok(Some(NullableEncoder::new(encoder, nulls)))
    }
}

/// Writes a float, non-finite values as strings.
fn write_float(v: f64, text: String, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"\"inf\"" } else { b"\"-inf\"" });
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

/// Float64 (and Float16) values by Rust's shortest round-trip text.
struct Floats<F>(F);

impl<F: Fn(usize) -> f64> Encoder for Floats<F> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = (self.0)(idx);
        write_float(v, v.to_string(), out);
    }
}

/// Float32 values by the shortest text of the f32.
struct Floats32<'a>(&'a arrow::array::Float32Array);

impl Encoder for Floats32<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = self.0.value(idx);
        write_float(f64::from(v), v.to_string(), out);
    }
}

/// A map as a list of `[key, value]` pairs.
struct Pairs<'a> {
    offsets: &'a [i32],
    keys: NullableEncoder<'a>,
    values: NullableEncoder<'a>,
}

impl Encoder for Pairs<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let (start, end) = (self.offsets[idx] as usize, self.offsets[idx + 1] as usize);
        out.push(b'[');
        for i in start..end {
            if i > start {
                out.push(b',');
            }
            out.push(b'[');
            self.keys.encode(i, out);
            out.push(b',');
            if self.values.is_null(i) {
                out.extend_from_slice(b"null");
            } else {
                self.values.encode(i, out);
            }
            out.push(b']');
        }
        out.push(b']');
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Float32Builder, Float64Builder, Int32Builder, ListBuilder, MapBuilder};

    use super::*;

    /// The texts of a column's values, nulls as None.
    fn texts(column: ArrayRef) -> Vec<Option<String>> {
        let t = nested_text(&column).unwrap();
        t.as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    /// Every pair of values that differ gets two texts: NaN, ±inf, null and ±0 inside lists of
    /// f64 and f32, texts holding the separators of arrow's display text, a null, an empty text
    /// and a NUL text, and maps with integer keys whose value holds what an entry looks like.
    #[test]
    fn different_nested_values_have_different_texts() {
        let mut floats = ListBuilder::new(Float64Builder::new());
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 0.1] {
            floats.values().append_value(v);
            floats.append(true);
        }
        floats.values().append_null();
        floats.append(true);
        let mut singles = ListBuilder::new(Float32Builder::new());
        for v in [f32::NAN, f32::INFINITY, 0.1, -0.0] {
            singles.values().append_value(v);
            singles.append(true);
        }
        singles.values().append_null();
        singles.append(true);
        let mut strings = ListBuilder::new(StringBuilder::new());
        for row in [
            vec![Some("A"), Some("B")],
            vec![Some("A, B")],
            vec![None],
            vec![Some("")],
            vec![Some("\u{0}")],
        ] {
            for v in row {
                strings.values().append_option(v);
            }
            strings.append(true);
        }
        let mut maps = MapBuilder::new(None, Int32Builder::new(), StringBuilder::new());
        for entries in [
            vec![(2, Some("q\"x")), (0, Some("q\"x"))],
            vec![(2, Some("q\"x, 0: q\"x"))],
            vec![(2, None)],
            vec![(2, Some(""))],
        ] {
            for (k, v) in entries {
                maps.keys().append_value(k);
                maps.values().append_option(v);
            }
            maps.append(true).unwrap();
        }
        for (name, column) in [
            ("f64", Arc::new(floats.finish()) as ArrayRef),
            ("f32", Arc::new(singles.finish()) as ArrayRef),
            ("text", Arc::new(strings.finish()) as ArrayRef),
            ("map", Arc::new(maps.finish()) as ArrayRef),
        ] {
            let t = texts(column);
            let mut distinct = t.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), t.len(), "{name}: {t:?}");
        }
        // Floats read as they print: 0.1 as an f32 is 0.1, not its widened f64.
        let mut one = ListBuilder::new(Float32Builder::new());
        one.values().append_value(0.1);
        one.append(true);
        assert_eq!(
            texts(Arc::new(one.finish())),
            vec![Some("[0.1]".to_string())]
        );
    }
}
