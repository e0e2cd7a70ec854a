//! CSV text of tables held as text columns (keys into distinct values), encoded in parallel.
//! Each distinct value is quoted once; a row is then its fields' bytes copied one after another.
//! The bytes are those of arrow's CSV writer (DataFusion's `COPY ... STORED AS CSV`): comma,
//! `"` quotes only where needed (csv-core's rule, the one arrow uses), doubled inner quotes, `\n`
//! after every row, nulls as empty fields.

use arrow::array::Array;
use csv_core::{QuoteStyle, Terminator, Writer, WriterBuilder};

use crate::encode::TextColumn;

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
    /// Appends `field` to `out`, quoted if it holds a comma, a quote or a newline.
    pub fn field(&self, field: &str, out: &mut Vec<u8>) {
        let bytes = field.as_bytes();
        if !self.writer.should_quote(bytes) {
            out.extend_from_slice(bytes);
            return;
        }
        out.push(b'"');
        let start = out.len();
        out.resize(start + 2 * bytes.len(), 0);
        let (_, _, written) = csv_core::quote(bytes, &mut out[start..], b'"', b'\\', true);
        out.truncate(start + written);
        out.push(b'"');
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
        out.push(b'\n');
        out
    }

    /// Appends the CSV lines of `rows` rows given as one text column per field.
    pub fn rows(&self, columns: &[TextColumn], rows: usize, out: &mut Vec<u8>) {
        // Every distinct value quoted once: `bytes[ends[i - 1]..ends[i]]` is value i; the null
        // entry (empty) is last.
        let quoted: Vec<(Vec<u8>, Vec<usize>)> = columns
            .iter()
            .map(|c| {
                let mut bytes = Vec::new();
                let mut ends = Vec::with_capacity(c.values.len() + 2);
                ends.push(0);
                for i in 0..c.values.len() {
                    if !c.values.is_null(i) {
                        self.field(c.values.value(i), &mut bytes);
                    }
                    ends.push(bytes.len());
                }
                ends.push(bytes.len());
                (bytes, ends)
            })
            .collect();
        let null_key: Vec<usize> = columns.iter().map(|c| c.values.len()).collect();
        let keys: Vec<&[u32]> = columns.iter().map(|c| c.keys.values().as_ref()).collect();
        let nulls: Vec<bool> = columns.iter().map(|c| c.keys.null_count() > 0).collect();
        let average: usize = quoted
            .iter()
            .map(|(b, e)| b.len() / (e.len() - 1).max(1) + 1)
            .sum();
        out.reserve(rows * average);
        // `r` indexes every column's keys: a row is one field of each.
        #[allow(clippy::needless_range_loop)]
        for r in 0..rows {
            for (c, (bytes, ends)) in quoted.iter().enumerate() {
                if c > 0 {
                    out.push(b',');
                }
                let k = if nulls[c] && columns[c].keys.is_null(r) {
                    null_key[c]
                } else {
                    keys[c][r] as usize
                };
                out.extend_from_slice(&bytes[ends[k]..ends[k + 1]]);
            }
            out.push(b'\n');
        }
    }
}
