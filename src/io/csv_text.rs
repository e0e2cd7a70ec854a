//! CSV text of tables held as text columns (keys into distinct values), encoded in parallel.
//! Each distinct value is quoted once; a row is then its fields' bytes copied one after another.
//! The bytes are those of arrow's CSV writer (DataFusion's `COPY ... STORED AS CSV`): comma,
//! `"` quotes only where needed (csv-core's rule, the one arrow uses), doubled inner quotes, `\n`
//! after every row, nulls as empty fields.

use arrow::array::Array;
use csv_core::{QuoteStyle, Terminator, Writer, WriterBuilder};

use crate::input::text::TextColumn;

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Quotes fields as arrow's CSV writer does with its default options.
#[derive(Debug)]
pub struct CsvQuoting {
    writer: Writer,
}

impl Default for CsvQuoting {
    fn default() -> Self {
        CsvQuoting {
            writer: WriterBuilder::new()
                .delimiter(b',')
                .quote(b'"')
                .double_quote(true)
                .quote_style(QuoteStyle::Necessary)
                .terminator(Terminator::Any(b'\n'))
                .build(),
        }
    }
}

impl CsvQuoting {
    /// Appends `field` to `out`, quoted if it holds a comma, a quote or a newline; returns whether
    /// it was quoted.
    pub fn field(&self, field: &str, out: &mut Vec<u8>) -> bool {
        let bytes = field.as_bytes();
        if !self.writer.should_quote(bytes) {
            out.extend_from_slice(bytes);
            return false;
        }
        out.push(b'"');
        let start = out.len();
        out.resize(start + 2 * bytes.len(), 0);
        let (_, _, written) = csv_core::quote(bytes, &mut out[start..], b'"', b'\\', true);
        out.truncate(start + written);
        out.push(b'"');
        true
    }

    /// The header line of `names`.
    pub fn header(&self, names: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            self.field(name, &mut out);
        }
        if names.len() == 1 && out.is_empty() {
            out.extend_from_slice(b"\"\"");
        }
        // A first name beginning with a byte-order mark, unquoted, would be read back without it
        // (a reader drops a file's leading BOM): a BOM of the file's own goes before it.
        if out.starts_with(BOM) {
            out.splice(0..0, BOM.iter().copied());
        }
        out.push(b'\n');
        out
    }

    /// Appends the CSV lines of `rows` rows given as one text column per field; returns whether
    /// a value of the columns (written or not) holds a line break, which is then written quoted
    /// across lines.
    pub fn rows(&self, columns: &[TextColumn], rows: usize, out: &mut Vec<u8>) -> bool {
        let fields: Vec<Fields> = columns
            .iter()
            .enumerate()
            .map(|(c, column)| self.fields(column, c == 0, c + 1 == columns.len()))
            .collect();
        // Every row's key, a null row's being the null entry's.
        let keys: Vec<std::borrow::Cow<[u32]>> = columns
            .iter()
            .map(|c| {
                let keys = &c.keys.values()[..rows];
                match c.keys.nulls().filter(|n| n.null_count() > 0) {
                    None => std::borrow::Cow::Borrowed(keys),
                    Some(n) => {
                        let null = c.values.len() as u32;
                        let keys = (0..rows).map(|r| if n.is_null(r) { null } else { keys[r] });
                        std::borrow::Cow::Owned(keys.collect())
                    }
                }
            })
            .collect();
        // The exact size (one look-up per field), so the buffer is allocated once and no larger
        // than the lines: reserving for the widest fields cost 20 MiB of peak memory.
        let size: usize = fields
            .iter()
            .zip(&keys)
            .map(|(f, k)| k.iter().map(|&k| f.len(k as usize)).sum::<usize>())
            .sum();
        out.reserve(size + SLOT);
        if fields.iter().all(|f| f.widest() <= SLOT) {
            // Each field one fixed-size copy of its slot, the slot's tail cut off again: no
            // copy of a variable length per field.
            let slots: Vec<Vec<([u8; SLOT], usize)>> = fields
                .iter()
                .map(|f| {
                    (0..f.count())
                        .map(|i| {
                            let b = f.get(i);
                            let mut slot = [0u8; SLOT];
                            slot[..b.len()].copy_from_slice(b);
                            (slot, SLOT - b.len())
                        })
                        .collect()
                })
                .collect();
            for r in 0..rows {
                for (slots, keys) in slots.iter().zip(&keys) {
                    let (slot, cut) = &slots[keys[r] as usize];
                    out.extend_from_slice(slot);
                    out.truncate(out.len() - cut);
                }
            }
        } else {
            for r in 0..rows {
                for (fields, keys) in fields.iter().zip(&keys) {
                    out.extend_from_slice(fields.get(keys[r] as usize));
                }
            }
        }
        if columns.is_empty() {
            out.extend(std::iter::repeat_n(b'\n', rows));
        }
        fields.iter().any(|f| f.line_breaks)
    }

    /// Every distinct value of `column` quoted once, as the whole field: its separator (`,`
    /// before every column but the `first`, `\n` after the `last`) included; the null entry
    /// (empty) last. One buffer for all of them: a column of unique values (IDs, amounts) made
    /// an allocation per row.
    fn fields(&self, column: &TextColumn, first: bool, last: bool) -> Fields {
        let n = column.values.len();
        // The values' own bytes (a sliced array's buffer may hold far more: a hierarchy's labels).
        let offsets = column.values.value_offsets();
        let text = (offsets[n] - offsets[0]) as usize;
        let mut fields = Fields {
            bytes: Vec::with_capacity(text + 2 * (n + 1)),
            spans: Vec::with_capacity(n + 1),
            line_breaks: false,
        };
        for i in 0..=n {
            let start = fields.bytes.len();
            if !first {
                fields.bytes.push(b',');
            }
            if i < n && !column.values.is_null(i) {
                let value = column.values.value(i);
                // Only a quoted value can hold one (a value is searched once more then only).
                if self.field(value, &mut fields.bytes) {
                    fields.line_breaks |= value.contains(['\n', '\r']);
                }
            }
            if first && last && fields.bytes.len() == start {
                // A line of one empty field is written `""`, as by arrow (csv's rule): an empty
                // line would be no record at all.
                fields.bytes.extend_from_slice(b"\"\"");
            }
            if last {
                fields.bytes.push(b'\n');
            }
            fields.spans.push((start, fields.bytes.len() - start));
        }
        fields
    }
}

/// The encoded fields of one column, one after another in `bytes`: field `i` starts at
/// `spans[i].0` and is `spans[i].1` bytes long (one look-up for a row's length).
struct Fields {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
    /// Whether a value holds a line break.
    line_breaks: bool,
}

impl Fields {
    /// Field `i`.
    fn get(&self, i: usize) -> &[u8] {
        let (start, len) = self.spans[i];
        &self.bytes[start..start + len]
    }

    /// The length of field `i`.
    fn len(&self, i: usize) -> usize {
        self.spans[i].1
    }

    /// The fields.
    fn count(&self) -> usize {
        self.spans.len()
    }

    /// The length of the longest field.
    fn widest(&self) -> usize {
        self.spans.iter().map(|s| s.1).max().unwrap_or(0)
    }
}

/// The widest field (separators included) written by one fixed-size copy.
const SLOT: usize = 32;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::record_batch::RecordBatch;
    use proptest::prelude::*;

    use super::*;
    use crate::input::text::text_column;

    /// Arrow's CSV writer on the same columns, without a header: the bytes `rows` must give.
    fn arrow_csv(columns: &[ArrayRef]) -> Vec<u8> {
        let fields: Vec<Field> = (0..columns.len())
            .map(|i| Field::new(format!("c{i}"), DataType::Utf8, true))
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns.to_vec()).unwrap();
        let mut out = Vec::new();
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(false)
            .build(&mut out);
        writer.write(&batch).unwrap();
        drop(writer);
        out
    }

    proptest! {
        /// The lines of text columns are arrow's CSV writer's, byte for byte: values that need
        /// quotes (comma, quote, CR, LF), nulls, empty texts, and values too long for one slot.
        #[test]
        fn rows_are_arrows_csv(
            width in 1usize..5,
            cells in proptest::collection::vec(
                proptest::option::weighted(0.9, "[a,\"\\r\\n é]{0,6}|x{25,40}|[ab]{0,3}"), 0..120),
        ) {
            let rows = cells.len() / width;
            // Both ways of copying: with the long values, and with every value cut short.
            for cut in [usize::MAX, 8] {
                let columns: Vec<ArrayRef> = (0..width)
                    .map(|c| {
                        let column: StringArray = (0..rows)
                            .map(|r| cells[r * width + c].as_ref().map(|v| v.chars().take(cut).collect::<String>()))
                            .collect();
                        Arc::new(column) as ArrayRef
                    })
                    .collect();
                let texts: Vec<TextColumn> = columns.iter().map(|c| text_column(c).unwrap()).collect();
                let mut out = Vec::new();
                let line_breaks = CsvQuoting::default().rows(&texts, rows, &mut out);
                let broken = (0..rows * width).any(|i| cells[i].as_ref().is_some_and(|v| v.chars().take(cut).any(|c| c == '\r' || c == '\n')));
                prop_assert_eq!(line_breaks, broken);
                let want = arrow_csv(&columns);
                prop_assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&want));
            }
        }
    }
}
