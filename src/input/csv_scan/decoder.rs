//! The record decoder of pbg's CSV scan: delimited text whose quoted values stay on their line
//! into `Utf8` columns, the same arrays arrow's CSV decoder gives for such text, at a fraction of
//! its cost.
//!
//! It only ever sees files whose quoting the scan has checked (every quoted value closed on its
//! line, nothing after a closing quote), so a record is the bytes between line terminators: the
//! delimiters, line terminators and quotes are found with one vectorized search over each chunk,
//! and each projected field is copied once, into its column. A field starting with `"` is quoted:
//! its delimiters are text, `""` in it is a quote, and it ends at a `"` that is followed by a
//! delimiter or the line's end; a `"` inside an unquoted value is text. Arrow's decoder runs
//! csv-core's byte-at-a-time state machine, copies every field (projected or not) into a row
//! buffer, and copies it again into the column.
//!
//! A column the output schema declares `Dictionary(UInt32, Utf8)` ([`keyed_type`]) is keyed as it
//! is read: each field is looked up in a table of the batch's distinct texts and only its key is
//! kept. pbg's passes key every text column anyway (to count and compare values); keying in the
//! decoder saves copying each value and reading it again.
//!
//! The rules are arrow's (csv-core's defaults): `\n`, `\r` and `\r\n` end a record, empty lines are
//! skipped, an empty field is null (quoted or not), a record with another number of fields is an
//! error naming its line (counted from the start of the byte range, the header included), and so
//! is text that is not UTF-8. Quoting the check would have refused (a quoted value running past
//! its line's end, text after a closing quote) is refused: the file changed since it was checked.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanBufferBuilder, RecordBatch, StringArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, SchemaRef};
use arrow::error::ArrowError;

use crate::input::words::{EXACT_BYTES, WordTable, buffer_words};

/// One projected column being filled, as the output schema declares it: `Utf8` text, or text
/// keyed as it is read (`Dictionary(UInt32, Utf8)`).
#[derive(Debug)]
enum ColumnBuilder {
    Text(TextBuilder),
    Keyed(KeyedBuilder),
    /// A keyed column whose batch held over [`KEYED_DISTINCT`] distinct texts: its texts are
    /// kept as read and keyed column by column when the batch is built, so that one table of
    /// distinct texts at a time is alive and in cache (with a table per column filled row by row,
    /// 200 columns of unique values took 2.5 times as long, and 185 MB more).
    KeyedLater(TextBuilder),
}

/// The most distinct texts of a batch that a column keys as it reads them (a table of at most
/// 8192 slots, 320 KiB); a column holding more is keyed when the batch is built, and stays so.
const KEYED_DISTINCT: usize = 1024;

impl ColumnBuilder {
    /// An empty column of `data_type` with room for `rows` values.
    fn new(data_type: &DataType, rows: usize) -> Self {
        if *data_type == keyed_type() {
            ColumnBuilder::Keyed(KeyedBuilder::new(rows))
        } else {
            ColumnBuilder::Text(TextBuilder::new(rows))
        }
    }

    /// Appends the field `line[start..end]`.
    #[inline(always)]
    fn push(&mut self, line: &[u8], start: usize, end: usize) {
        match self {
            ColumnBuilder::Text(b) | ColumnBuilder::KeyedLater(b) => b.push(line, start, end),
            ColumnBuilder::Keyed(b) => {
                if b.push(line, start, end) > b.limit {
                    *self = ColumnBuilder::KeyedLater(b.texts());
                }
            }
        }
    }

    /// Takes back the last value pushed (of a record a chunk ended inside).
    fn pop(&mut self) {
        match self {
            ColumnBuilder::Text(b) | ColumnBuilder::KeyedLater(b) => b.pop(),
            ColumnBuilder::Keyed(b) => b.pop(),
        }
    }

    /// The column filled so far as an array (its rows from line `first_line`, file column
    /// `field`, counted from 1), leaving the builder empty, with room for `rows` values. A
    /// column keyed when the batch is built makes its table with room for the distinct texts of
    /// its last batch, `room`, and sets it to this batch's (the hint stays out of the builder:
    /// a wider variant cost the scan's hot loop 4 % more instructions).
    fn finish(
        &mut self,
        rows: usize,
        first_line: usize,
        field: usize,
        room: &mut usize,
    ) -> Result<ArrayRef, ArrowError> {
        match self {
            ColumnBuilder::Text(b) => {
                std::mem::replace(b, TextBuilder::new(rows)).finish(first_line, field)
            }
            ColumnBuilder::Keyed(b) => b.finish(first_line, field),
            ColumnBuilder::KeyedLater(b) => {
                let text =
                    std::mem::replace(b, TextBuilder::new(rows)).strings(first_line, field)?;
                // The same keys and distinct texts as keying while reading gives.
                let keyed = crate::input::text::keyed_texts(&text, (*room).max(KEYED_DISTINCT))?;
                *room = keyed.values.len();
                Ok(Arc::new(crate::input::text::dictionary(
                    keyed.keys,
                    Arc::new(keyed.values),
                )?))
            }
        }
    }
}

/// The type of a column the decoder keys as it reads: what pbg's passes make of any text column
/// ([`crate::input::text::text_column`]), without copying each value and hashing it again.
pub fn keyed_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

/// A `Utf8` column being filled: offsets into its bytes, its bytes and its null rows.
#[derive(Debug)]
struct TextBuilder {
    offsets: Vec<i32>,
    data: Vec<u8>,
    /// Rows whose field is empty (null, as arrow reads an empty field): few, so kept as a list
    /// rather than a bit per row.
    nulls: Vec<u32>,
}

impl TextBuilder {
    /// An empty column with room for `rows` values.
    fn new(rows: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        TextBuilder {
            offsets,
            data: Vec::with_capacity(rows * 8),
            nulls: Vec::new(),
        }
    }

    /// Appends the field `line[start..end]`. A field of up to 16 bytes with 16 bytes of the line
    /// from its start is copied as one fixed 16-byte move (then cut to its length), not through
    /// a `memcpy` call of variable length.
    #[inline(always)]
    fn push(&mut self, line: &[u8], start: usize, end: usize) {
        let len = end - start;
        if len == 0 {
            self.nulls.push(self.offsets.len() as u32 - 1);
        } else if let Some(block) = line.get(start..start + 16).filter(|_| len <= 16) {
            let at = self.data.len();
            self.data.extend_from_slice(block);
            self.data.truncate(at + len);
        } else {
            self.data.extend_from_slice(&line[start..end]);
        }
        // Checked when the batch is built: the offsets must fit i32.
        self.offsets.push(self.data.len() as i32);
    }

    /// Takes back the last value pushed.
    fn pop(&mut self) {
        // A null taken back would be pushed again with the record (an empty field is empty
        // in any chunk), but the list stays exact.
        let row = self.offsets.len() as u32 - 2;
        if self.nulls.last() == Some(&row) {
            self.nulls.pop();
        }
        self.offsets.pop();
        self.data
            .truncate(self.offsets.last().map_or(0, |&o| o as usize));
    }

    /// The column as an array ([`Self::strings`]).
    fn finish(self, first_line: usize, field: usize) -> Result<ArrayRef, ArrowError> {
        Ok(Arc::new(self.strings(first_line, field)?))
    }

    /// The column as a string array: its bytes checked to be UTF-8 with every value starting on
    /// a character (so each value is UTF-8 on its own), its offsets to fit i32.
    fn strings(self, first_line: usize, field: usize) -> Result<StringArray, ArrowError> {
        let rows = self.offsets.len() - 1;
        let nulls = null_buffer(&self.nulls, rows);
        let (offsets, data) = text_buffers(self.offsets, self.data, first_line, field)?;
        // `try_new` checks that the bytes are UTF-8 and that every value starts on a character
        // (so that each value is UTF-8 on its own); only a failure is looked at again, to name
        // its line.
        match StringArray::try_new(offsets.clone(), data.clone(), nulls) {
            Ok(array) => Ok(array),
            Err(_) => {
                let value = invalid_value(&offsets, &data);
                Err(invalid_text(first_line + value, field))
            }
        }
    }
}

/// A column keyed as it is read: each field is looked up by its words in a [`WordTable`] and
/// only its key is kept; a text is copied once per batch, when first met. The keys are numbered
/// in order of first appearance, as [`crate::input::text::text_column`] numbers them.
#[derive(Debug)]
struct KeyedBuilder {
    keys: Vec<u32>,
    /// Rows whose field is empty (null).
    nulls: Vec<u32>,
    table: WordTable,
    /// The distinct texts in key order: offsets into their bytes.
    offsets: Vec<i32>,
    data: Vec<u8>,
    /// Whether a batch held more distinct texts than keys can number.
    overflow: bool,
    /// The most distinct texts keyed as read ([`KEYED_DISTINCT`]; tests lower it).
    limit: usize,
}

impl KeyedBuilder {
    /// An empty column with room for `rows` keys.
    fn new(rows: usize) -> Self {
        KeyedBuilder {
            keys: Vec::with_capacity(rows),
            nulls: Vec::new(),
            table: WordTable::new(),
            offsets: vec![0],
            data: Vec::new(),
            overflow: false,
            limit: KEYED_DISTINCT,
        }
    }

    /// Appends the key of the field `line[start..end]`, numbering its text if it is new;
    /// returns the number of distinct texts if it grew, else 0.
    #[inline(always)]
    fn push(&mut self, line: &[u8], start: usize, end: usize) -> usize {
        if start == end {
            self.nulls.push(self.keys.len() as u32);
            self.keys.push(0);
            return 0;
        }
        let (offsets, data) = (&self.offsets, &self.data);
        let text = &line[start..end];
        let mut words = buffer_words(line, start, end);
        if words.len > EXACT_BYTES {
            words.mid = self.table.long_mid(text);
        }
        let found = self.table.key(words, |k| {
            let k = k as usize;
            data.get(offsets[k] as usize..offsets[k + 1] as usize) == Some(text)
        });
        let (key, grown) = match found {
            Ok((key, new)) => {
                if new {
                    self.data.extend_from_slice(text);
                    // Checked when the batch is built: the offsets must fit i32.
                    self.offsets.push(self.data.len() as i32);
                }
                (key, if new { self.offsets.len() - 1 } else { 0 })
            }
            Err(_) => {
                self.overflow = true;
                (0, 0)
            }
        };
        self.keys.push(key);
        grown
    }

    /// The rows pushed so far as texts (the same rows, nulls included), to go on as text.
    #[inline(never)]
    fn texts(&self) -> TextBuilder {
        let mut texts = TextBuilder::new(self.keys.capacity());
        let mut nulls = self.nulls.iter().peekable();
        for (row, &key) in self.keys.iter().enumerate() {
            if nulls.next_if(|&&r| r as usize == row).is_some() {
                texts.push(&[], 0, 0);
            } else {
                let k = key as usize;
                texts.push(
                    &self.data,
                    self.offsets[k] as usize,
                    self.offsets[k + 1] as usize,
                );
            }
        }
        texts
    }

    /// Takes back the last key pushed. Its text stays numbered: the record it belongs to is
    /// decoded again into the same batch, where it is met first again.
    fn pop(&mut self) {
        let row = self.keys.len() as u32 - 1;
        if self.nulls.last() == Some(&row) {
            self.nulls.pop();
        }
        self.keys.pop();
    }

    /// The column as a dictionary of its distinct texts, checked to be UTF-8 each (so every row,
    /// which holds one of them byte for byte, is), leaving the builder empty with its room.
    fn finish(&mut self, first_line: usize, field: usize) -> Result<ArrayRef, ArrowError> {
        if self.overflow {
            return Err(ArrowError::CsvError(format!(
                "field {field} holds more distinct values than a batch from line {first_line} can number"
            )));
        }
        let rows = self.keys.len();
        let nulls = null_buffer(&std::mem::take(&mut self.nulls), rows);
        let keys = std::mem::replace(&mut self.keys, Vec::with_capacity(rows));
        let (offsets, data) = text_buffers(
            std::mem::replace(&mut self.offsets, vec![0]),
            std::mem::take(&mut self.data),
            first_line,
            field,
        )?;
        self.table.clear();
        let values = match StringArray::try_new(offsets.clone(), data.clone(), None) {
            Ok(values) => values,
            Err(_) => {
                // The first row holding a text that is not UTF-8: texts are numbered in order
                // of first appearance, so the first such text's first row.
                let bad = invalid_value(&offsets, &data) as u32;
                let row = (0..rows)
                    .find(|&r| keys[r] == bad && nulls.as_ref().is_none_or(|n| n.is_valid(r)))
                    .unwrap_or(0);
                return Err(invalid_text(first_line + row, field));
            }
        };
        let keys = UInt32Array::new(keys.into(), nulls);
        Ok(Arc::new(crate::input::text::dictionary(
            keys,
            Arc::new(values),
        )?))
    }
}

/// The null buffer of a column of `rows` rows whose `nulls` rows are null (none if there are
/// none).
fn null_buffer(nulls: &[u32], rows: usize) -> Option<NullBuffer> {
    (!nulls.is_empty()).then(|| {
        let mut valid = BooleanBufferBuilder::new(rows);
        valid.append_n(rows, true);
        for &r in nulls {
            valid.set_bit(r as usize, false);
        }
        NullBuffer::new(valid.finish())
    })
}

/// Text offsets and bytes as arrow buffers, the bytes checked to fit i32 offsets.
fn text_buffers(
    offsets: Vec<i32>,
    data: Vec<u8>,
    first_line: usize,
    field: usize,
) -> Result<(OffsetBuffer<i32>, arrow::buffer::Buffer), ArrowError> {
    if data.len() > i32::MAX as usize {
        return Err(ArrowError::CsvError(format!(
            "the text of field {field} in the batch from line {first_line} exceeds 2 GiB"
        )));
    }
    Ok((OffsetBuffer::new(ScalarBuffer::from(offsets)), data.into()))
}

/// The index of the first value that is not UTF-8 on its own.
fn invalid_value(offsets: &[i32], data: &[u8]) -> usize {
    offsets
        .windows(2)
        .position(|w| std::str::from_utf8(&data[w[0] as usize..w[1] as usize]).is_err())
        .unwrap_or(0)
}

/// The error for text that is not UTF-8 at `line`, file column `field` (arrow's words).
fn invalid_text(line: usize, field: usize) -> ArrowError {
    ArrowError::CsvError(format!(
        "Encountered invalid UTF-8 data for line {line} and field {field}"
    ))
}

/// Bit `i` set where `block[i]` is `delimiter`, `\n`, `\r` or (if `QUOTES`) `"`: 16-byte
/// compares (SSE2, which every x86-64 CPU has) instead of a search call per special byte.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn specials<const QUOTES: bool>(block: &[u8; 64], delimiter: u8) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of x86-64 itself (every such CPU has it; the compiler assumes it for
    // the target), and each load reads one 16-byte part of `block`, with no alignment required.
    unsafe {
        let (d, n, r, q) = (
            _mm_set1_epi8(delimiter as i8),
            _mm_set1_epi8(b'\n' as i8),
            _mm_set1_epi8(b'\r' as i8),
            _mm_set1_epi8(b'"' as i8),
        );
        let mut mask = 0u64;
        for (i, part) in block.chunks_exact(16).enumerate() {
            let v = _mm_loadu_si128(part.as_ptr().cast::<__m128i>());
            let mut hit = _mm_or_si128(
                _mm_cmpeq_epi8(v, d),
                _mm_or_si128(_mm_cmpeq_epi8(v, n), _mm_cmpeq_epi8(v, r)),
            );
            if QUOTES {
                hit = _mm_or_si128(hit, _mm_cmpeq_epi8(v, q));
            }
            mask |= (_mm_movemask_epi8(hit) as u16 as u64) << (16 * i);
        }
        mask
    }
}

/// Bit `i` set where `block[i]` is `delimiter`, `\n`, `\r` or (if `QUOTES`) `"`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn specials<const QUOTES: bool>(block: &[u8; 64], delimiter: u8) -> u64 {
    specials_of::<QUOTES>(block, delimiter)
}

/// Bit `i` set where `bytes[i]` is `delimiter`, `\n`, `\r` or (if `QUOTES`) `"`, byte by byte
/// (`bytes`: at most 64, the end of a chunk).
fn specials_of<const QUOTES: bool>(bytes: &[u8], delimiter: u8) -> u64 {
    bytes.iter().enumerate().fold(0, |mask, (i, &b)| {
        let special = (b == delimiter) | (b == b'\n') | (b == b'\r') | (QUOTES && b == b'"');
        mask | (special as u64) << i
    })
}

/// Bit `i` set where `block[i]` is `delimiter`, `\n`, `\r` or (if `QUOTES`) `"`: two 32-byte
/// compares per special byte (AVX2), for the scan compiled for CPUs that have it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn specials_avx2<const QUOTES: bool>(block: &[u8; 64], delimiter: u8) -> u64 {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256,
        _mm256_set1_epi8,
    };
    let (d, n, r, q) = (
        _mm256_set1_epi8(delimiter as i8),
        _mm256_set1_epi8(b'\n' as i8),
        _mm256_set1_epi8(b'\r' as i8),
        _mm256_set1_epi8(b'"' as i8),
    );
    let mut mask = 0u64;
    for (i, part) in block.chunks_exact(32).enumerate() {
        // SAFETY: each load reads one 32-byte part of `block`, with no alignment required.
        let v = unsafe { _mm256_loadu_si256(part.as_ptr().cast::<__m256i>()) };
        let mut hit = _mm256_or_si256(
            _mm256_cmpeq_epi8(v, d),
            _mm256_or_si256(_mm256_cmpeq_epi8(v, n), _mm256_cmpeq_epi8(v, r)),
        );
        if QUOTES {
            hit = _mm256_or_si256(hit, _mm256_cmpeq_epi8(v, q));
        }
        mask |= (_mm256_movemask_epi8(hit) as u32 as u64) << (32 * i);
    }
    mask
}

/// The special bytes ([`specials`]) of the 64 bytes of `buf` from `base` (fewer at its end),
/// found with AVX2 if `WIDE` (only in the scan compiled for it, [`TextDecoder::scan_avx2`]).
#[inline(always)]
fn block_mask<const QUOTES: bool, const WIDE: bool>(buf: &[u8], base: usize, delimiter: u8) -> u64 {
    match buf.get(base..base + 64) {
        Some(block) => {
            let block = block.try_into().unwrap_or(&[0; 64]);
            #[cfg(target_arch = "x86_64")]
            if WIDE {
                // SAFETY: `WIDE` scans run only on CPUs found to have AVX2 (`TextDecoder::scan`
                // checks `wide`).
                return unsafe { specials_avx2::<QUOTES>(block, delimiter) };
            }
            specials::<QUOTES>(block, delimiter)
        }
        None => specials_of::<QUOTES>(&buf[base..], delimiter),
    }
}

/// The mark of a quoted value holding `""`, whose value is taken from [`unquote`]'s output.
const UNQUOTED: usize = usize::MAX;

/// `quoted` (the text between a value's quotes) with each `""` made one `"`, into `out`.
fn unquote(quoted: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut rest = quoted;
    while let Some(i) = memchr::memchr(b'"', rest) {
        // A `"` inside the value is always the first of a pair (the scan checked).
        out.extend_from_slice(&rest[..=i]);
        rest = rest.get(i + 2..).unwrap_or_default();
    }
    out.extend_from_slice(rest);
}

/// The UTF-8 byte-order mark.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Where the bytes a decoder reads begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// At the start of the file: a byte-order mark is dropped and, if the file has a `header`,
    /// its first record is skipped.
    FileStart {
        /// The first record is the header.
        header: bool,
    },
    /// At a line inside the file (a byte range after the first): every record is a row.
    Inside,
    /// At a line inside the file that only blank lines (and the file's byte-order mark) come
    /// before: its first record is the header, skipped (a byte range cut inside the blank lines
    /// a file opens with).
    HeaderNext,
}

/// Decodes CSV text (quoted values within their line) into record batches of the projected
/// columns, as text or keyed text.
#[derive(Debug)]
pub struct TextDecoder {
    /// Output schema: the projected columns, each `Utf8` or [`keyed_type`] (any other type is
    /// decoded as `Utf8`, which the batch then refuses).
    schema: SchemaRef,
    delimiter: u8,
    /// Fields every record must have (the file's columns).
    columns: usize,
    builders: Vec<ColumnBuilder>,
    batch_size: usize,
    /// Rows in the batch being filled.
    rows: usize,
    /// Whether the next non-empty record is the header, to skip.
    skip_header: bool,
    /// Whether a byte-order mark may still begin the input (it starts the file), and the bytes of
    /// one seen so far: dropped, as csv-core drops it at the start of the stream.
    bom_pending: bool,
    bom_held: Vec<u8>,
    /// Records decoded so far, the header included (arrow's line number, less one).
    lines: usize,
    /// The start of a record that a chunk ended in the middle of.
    partial: Vec<u8>,
    /// The output slot of each file column (`usize::MAX`: not projected).
    slot_of: Vec<usize>,
    /// Where the bytes come from, for errors (see [`TextDecoder::with_origin`]).
    origin: String,
    /// The text of a quoted value holding `""`, each made one `"`.
    unquoted: Vec<u8>,
    /// Per output column, the distinct texts of its last batch keyed when built (see
    /// [`ColumnBuilder::finish`]).
    rooms: Vec<usize>,
    /// Whether the CPU has AVX2, for the scan compiled for it ([`TextDecoder::scan_avx2`]).
    wide: bool,
}

/// Whether the CPU has AVX2 (found once and kept by the standard library).
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

impl TextDecoder {
    /// A decoder of records of `columns` fields into batches of `batch_size` rows of the
    /// `projection` (distinct file column indices, in output order; `schema` is their output schema),
    /// reading bytes that `begin` where it says.
    pub fn new(
        schema: SchemaRef,
        delimiter: u8,
        columns: usize,
        projection: &[usize],
        batch_size: usize,
        begin: Begin,
    ) -> Self {
        let mut slot_of = vec![usize::MAX; columns];
        for (slot, &c) in projection.iter().enumerate() {
            if let Some(s) = slot_of.get_mut(c) {
                *s = slot;
            }
        }
        let batch_size = batch_size.max(1);
        let builders: Vec<ColumnBuilder> = schema
            .fields()
            .iter()
            .map(|f| ColumnBuilder::new(f.data_type(), batch_size))
            .collect();
        let rooms = vec![0; builders.len()];
        TextDecoder {
            schema,
            delimiter,
            columns,
            builders,
            batch_size,
            rows: 0,
            skip_header: matches!(begin, Begin::FileStart { header: true } | Begin::HeaderNext),
            bom_pending: matches!(begin, Begin::FileStart { .. }),
            bom_held: Vec::new(),
            lines: 0,
            partial: Vec::new(),
            slot_of,
            origin: String::new(),
            unquoted: Vec::new(),
            rooms,
            wide: has_avx2(),
        }
    }

    /// The error for a record of `fields` fields.
    fn ragged(&self, fields: usize) -> ArrowError {
        ArrowError::CsvError(format!(
            "incorrect number of fields for line {}, expected {} got {}",
            self.lines, self.columns, fields
        ))
    }

    /// The error for a quoted value at the record being read, field `field` (0-based), that the
    /// check of the file's quoting would have refused.
    fn misquoted(&self, field: usize, what: &str) -> ArrowError {
        ArrowError::CsvError(format!(
            "line {}, field {}: {what}, which pbg's check of the file's quoting found nowhere: the file changed while it was read",
            self.lines + 1,
            field + 1
        ))
    }

    /// Decodes the records of `buf` from `at` until the batch is full, each projected field
    /// appended to its column as its delimiter or line end is found; returns where the first
    /// record not taken starts (a record the chunk ends inside is taken back).
    fn scan(&mut self, buf: &[u8], at: usize) -> Result<usize, ArrowError> {
        // Most files (or chunks) hold no quote: their scan looks for none (one search here
        // saves a compare per 16 bytes and the quoted values' bookkeeping per field).
        let quotes = memchr::memchr(b'"', &buf[at..]).is_some();
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: the CPU has AVX2 (`has_avx2`), which is all the scan is compiled to use
            // beyond x86-64.
            return unsafe { self.scan_avx2(buf, at, quotes) };
        }
        match quotes {
            false => self.scan_with::<false, false>(buf, at),
            true => self.scan_with::<true, false>(buf, at),
        }
    }

    /// [`Self::scan`] compiled for CPUs with AVX2: the special bytes of 64 bytes found with two
    /// compares per kind instead of four (most x86-64 CPUs of the last ten years have it; the
    /// binary itself must run on any).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn scan_avx2(&mut self, buf: &[u8], at: usize, quotes: bool) -> Result<usize, ArrowError> {
        match quotes {
            false => self.scan_with::<false, true>(buf, at),
            true => self.scan_with::<true, true>(buf, at),
        }
    }

    /// [`Self::scan`], with quoted values if `QUOTES`.
    #[inline(always)]
    fn scan_with<const QUOTES: bool, const WIDE: bool>(
        &mut self,
        buf: &[u8],
        at: usize,
    ) -> Result<usize, ArrowError> {
        let (delimiter, columns) = (self.delimiter, self.columns);
        // The record at hand: where it starts, its field being read and where that starts.
        let (mut record, mut field, mut start) = (at, 0usize, at);
        // Bytes before the field's delimiter that are not its value (the closing quote of a
        // quoted value), or [`UNQUOTED`]: its value is `self.unquoted`.
        let mut trim = 0usize;
        let mut base = at;
        // Whether the record at hand is the header (held here: read from `self` on every field,
        // it cost a load and a test each).
        let mut skip = self.skip_header;
        // The delimiters, line terminators and quotes of the chunk, 64 bytes at a time.
        'blocks: while base < buf.len() {
            let mut mask = block_mask::<QUOTES, WIDE>(buf, base, delimiter);
            while mask != 0 {
                let p = base + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let byte = buf[p];
                let delimited = byte == delimiter;
                if QUOTES && !delimited && byte == b'"' {
                    if p != start {
                        continue; // A quote inside an unquoted value is text (csv-core's rule).
                    }
                    // A quoted value: its delimiters are text, it ends at a `"` not doubled.
                    let mut doubled = false;
                    let close = loop {
                        while mask == 0 {
                            base += 64;
                            if base >= buf.len() {
                                break 'blocks;
                            }
                            mask = block_mask::<QUOTES, WIDE>(buf, base, delimiter);
                        }
                        let i = base + mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        match (buf[i], buf.get(i + 1)) {
                            // Whether the quote closes the value, the next chunk tells.
                            (b'"', None) => break 'blocks,
                            (b'"', Some(b'"')) => {
                                // `""`: a quote in the value; the search goes on after it.
                                doubled = true;
                                base = i + 2;
                                if base >= buf.len() {
                                    break 'blocks;
                                }
                                mask = block_mask::<QUOTES, WIDE>(buf, base, delimiter);
                            }
                            (b'"', Some(&next)) => {
                                if next != delimiter && next != b'\n' && next != b'\r' {
                                    return Err(
                                        self.misquoted(field, "text follows a closing quote")
                                    );
                                }
                                break i;
                            }
                            (b'\n' | b'\r', _) => {
                                return Err(self.misquoted(
                                    field,
                                    "a quoted value runs past the end of its line",
                                ));
                            }
                            _ => {} // A delimiter inside the value.
                        }
                    };
                    // The delimiter or line end after the closing quote comes next.
                    if doubled {
                        unquote(&buf[p + 1..close], &mut self.unquoted);
                        trim = UNQUOTED;
                    } else {
                        (start, trim) = (p + 1, 1);
                    }
                    continue;
                }
                if p == record && !delimited {
                    // An empty line, or the `\n` of `\r\n`: skipped.
                    record = p + 1;
                    start = p + 1;
                    continue;
                }
                if !delimited && field + 1 != columns {
                    // Too few fields or too many, counted at the record's end (a record that
                    // a chunk ends inside is counted whole once carried over).
                    self.lines += 1;
                    return Err(self.ragged(field + 1));
                }
                // Fields past the last column are only counted.
                if field < columns
                    && !skip
                    && let Some(b) = self.builders.get_mut(self.slot_of[field])
                {
                    if trim == UNQUOTED {
                        b.push(&self.unquoted, 0, self.unquoted.len());
                    } else {
                        b.push(buf, start, p - trim);
                    }
                }
                (start, trim) = (p + 1, 0);
                if delimited {
                    field += 1;
                    continue;
                }
                // The record's end.
                self.lines += 1;
                if skip {
                    // The header: checked, not a row.
                    (skip, self.skip_header) = (false, false);
                } else {
                    self.rows += 1;
                }
                field = 0;
                record = p + 1;
                if self.rows == self.batch_size {
                    return Ok(record);
                }
            }
            base += 64;
        }
        // The chunk ends inside a record: its fields are taken back.
        if !skip {
            for c in 0..field.min(self.columns) {
                if let Some(b) = self.builders.get_mut(self.slot_of[c]) {
                    b.pop();
                }
            }
        }
        Ok(record)
    }

    /// Takes the record carried over from the last chunk, completed by `tail` (no line end).
    fn carried(&mut self, tail: &[u8]) -> Result<(), ArrowError> {
        let mut record = std::mem::take(&mut self.partial);
        record.extend_from_slice(tail);
        record.push(b'\n');
        let taken = self.scan(&record, 0).map(|_| ());
        record.clear();
        self.partial = record;
        taken
    }

    /// Decodes whole records from `buf` until the batch is full, keeping the start of a record the
    /// chunk ends in; returns the bytes consumed. An empty `buf` marks the end of the input.
    pub fn decode(&mut self, buf: &[u8]) -> Result<usize, ArrowError> {
        self.decode_bytes(buf).map_err(|e| self.located(e))
    }

    /// The decoder naming `origin` in its errors: the file, and for a byte range inside it where
    /// the range starts, since its lines are counted from there (which line of the file that is,
    /// only a read of every byte before it could tell).
    pub fn with_origin(mut self, origin: String) -> Self {
        self.origin = origin;
        self
    }

    /// `e` with the decoder's origin added to a CSV error's message.
    fn located(&self, e: ArrowError) -> ArrowError {
        match e {
            ArrowError::CsvError(message) if !self.origin.is_empty() => {
                ArrowError::CsvError(format!("{message} ({})", self.origin))
            }
            e => e,
        }
    }

    /// [`Self::decode`], its errors without the origin.
    fn decode_bytes(&mut self, buf: &[u8]) -> Result<usize, ArrowError> {
        if self.bom_pending {
            let take = (BOM.len() - self.bom_held.len()).min(buf.len());
            let mut head = std::mem::take(&mut self.bom_held);
            head.extend_from_slice(&buf[..take]);
            if !buf.is_empty() && BOM.starts_with(&head) {
                // A byte-order mark, or the start of one: taken, not decoded.
                self.bom_pending = head.len() < BOM.len();
                if self.bom_pending {
                    self.bom_held = head;
                }
                return Ok(take);
            }
            // No mark: the bytes held (a start of one, no delimiter or line end) begin the
            // first record.
            self.bom_pending = false;
            head.truncate(head.len() - take);
            self.partial.extend_from_slice(&head);
        }
        if buf.is_empty() {
            // End of input: the last record needs no terminator.
            if !self.partial.is_empty() && self.rows < self.batch_size {
                self.carried(&[])?;
            }
            return Ok(0);
        }
        if self.rows == self.batch_size {
            return Ok(0);
        }
        let mut at = 0;
        if !self.partial.is_empty() {
            match memchr::memchr2(b'\n', b'\r', buf) {
                None => {
                    self.partial.extend_from_slice(buf);
                    return Ok(buf.len());
                }
                Some(end) => {
                    self.carried(&buf[..end])?;
                    at = end;
                    if self.rows == self.batch_size {
                        return Ok(at);
                    }
                }
            }
        }
        let record = self.scan(buf, at)?;
        if self.rows < self.batch_size {
            // The chunk ends inside a record (or between two): its start is kept.
            self.partial.extend_from_slice(&buf[record..]);
            return Ok(buf.len());
        }
        Ok(record)
    }

    /// The decoder with at most `limit` distinct texts of a batch keyed as read, in each keyed
    /// column (more are keyed when the batch is built): to test both ways on few rows.
    #[cfg(test)]
    fn with_keyed_distinct(mut self, limit: usize) -> Self {
        for b in &mut self.builders {
            if let ColumnBuilder::Keyed(b) = b {
                b.limit = limit;
            }
        }
        self
    }

    /// The decoder with the scan for any x86-64 CPU, AVX2 or not: to test both.
    #[cfg(test)]
    fn narrow(mut self) -> Self {
        self.wide = false;
        self
    }

    /// Whether the batch is full.
    pub fn is_full(&self) -> bool {
        self.rows >= self.batch_size
    }

    /// The rows decoded so far as a batch (`None` if there are none), checked to be UTF-8.
    pub fn flush(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        self.flush_rows().map_err(|e| self.located(e))
    }

    /// [`Self::flush`], its errors without the origin.
    fn flush_rows(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        if self.rows == 0 {
            return Ok(None);
        }
        let rows = std::mem::take(&mut self.rows);
        // The batch's first record's line: its records are the last `rows` decoded.
        let first_line = self.lines + 1 - rows;
        let (slot_of, batch_size) = (&self.slot_of, self.batch_size);
        let columns = self
            .builders
            .iter_mut()
            .zip(self.rooms.iter_mut())
            .enumerate()
            .map(|(slot, (b, room))| {
                let field = slot_of.iter().position(|&s| s == slot).map_or(0, |c| c + 1);
                b.finish(batch_size, first_line, field, room)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), columns, &options).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Array;
    use arrow::datatypes::{DataType, Field, Schema, UInt32Type};

    thread_local! {
        /// Whether [`ours_keyed`] reads with the scan for any x86-64 CPU rather than AVX2's.
        static NARROW: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Decodes `bytes` fed in `piece`-sized chunks, then the end of input, the way DataFusion's
    /// `DecoderDeserializer` drives a decoder: a batch is flushed when the decoder is full or a
    /// call consumes nothing.
    fn ours(
        bytes: &[u8],
        columns: usize,
        projection: &[usize],
        batch: usize,
        piece: usize,
    ) -> Result<Vec<RecordBatch>, ArrowError> {
        ours_keyed(
            bytes,
            columns,
            projection,
            batch,
            piece,
            &[],
            KEYED_DISTINCT,
        )
    }

    /// [`ours`] with the output columns whose flag in `keyed` is set keyed (up to `limit`
    /// distinct texts of a batch as read, the others when the batch is built).
    fn ours_keyed(
        bytes: &[u8],
        columns: usize,
        projection: &[usize],
        batch: usize,
        piece: usize,
        keyed: &[bool],
        limit: usize,
    ) -> Result<Vec<RecordBatch>, ArrowError> {
        let schema = Arc::new(Schema::new(
            projection
                .iter()
                .enumerate()
                .map(|(slot, c)| match keyed.get(slot) {
                    Some(true) => Field::new(format!("c{c}"), keyed_type(), true),
                    _ => Field::new(format!("c{c}"), DataType::Utf8, true),
                })
                .collect::<Vec<_>>(),
        ));
        let begin = Begin::FileStart { header: true };
        let mut d = TextDecoder::new(schema, b';', columns, projection, batch, begin)
            .with_keyed_distinct(limit);
        if NARROW.get() {
            d = d.narrow();
        }
        let mut queue: std::collections::VecDeque<&[u8]> = bytes.chunks(piece.max(1)).collect();
        queue.push_back(&[]);
        let mut out = Vec::new();
        while let Some(front) = queue.front_mut() {
            let n = d.decode(front)?;
            *front = &front[n..];
            if front.is_empty() {
                queue.pop_front();
            }
            if (n == 0 || d.is_full())
                && let Some(b) = d.flush()?
            {
                out.push(b);
            }
        }
        Ok(out)
    }

    /// Arrow's CSV decoder on the same bytes, every column as text.
    fn arrows(
        bytes: &[u8],
        columns: usize,
        projection: &[usize],
        batch: usize,
    ) -> Result<Vec<RecordBatch>, ArrowError> {
        let fields: Vec<Field> = (0..columns)
            .map(|c| Field::new(format!("c{c}"), DataType::Utf8, true))
            .collect();
        let reader = arrow::csv::ReaderBuilder::new(Arc::new(Schema::new(fields)))
            .with_header(true)
            .with_delimiter(b';')
            .with_batch_size(batch)
            .with_projection(projection.to_vec())
            .build_buffered(std::io::Cursor::new(bytes.to_vec()))?;
        reader.collect()
    }

    fn schema_of(projection: &[usize]) -> SchemaRef {
        Arc::new(Schema::new(
            projection
                .iter()
                .map(|c| Field::new(format!("c{c}"), DataType::Utf8, true))
                .collect::<Vec<_>>(),
        ))
    }

    /// The batches' rows as (value or null) lists, batch boundaries ignored.
    fn rows(batches: &[RecordBatch]) -> Vec<Vec<Option<String>>> {
        use arrow::array::AsArray;
        let mut out = Vec::new();
        for b in batches {
            for r in 0..b.num_rows() {
                out.push(
                    b.columns()
                        .iter()
                        .map(|c| {
                            let text = arrow::compute::cast(c, &DataType::Utf8).unwrap();
                            let s = text.as_string::<i32>();
                            (!s.is_null(r)).then(|| s.value(r).to_string())
                        })
                        .collect(),
                );
            }
        }
        out
    }

    #[test]
    fn reads_what_arrow_reads() {
        let text = b"a;b;c\r\n1;;x\n\n\r\n2;y;\r3;z;w";
        let got = ours(text, 3, &[0, 1, 2], 2, 4).unwrap();
        let want = arrows(text, 3, &[0, 1, 2], 2).unwrap();
        assert_eq!(rows(&got), rows(&want));
        assert_eq!(
            rows(&got),
            vec![
                vec![Some("1".into()), None, Some("x".into())],
                vec![Some("2".into()), Some("y".into()), None],
                vec![Some("3".into()), Some("z".into()), Some("w".into())],
            ]
        );
        assert_eq!(got.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [2, 1]);
    }

    /// Quoted values as csv-core reads them: delimiters inside are text, `""` is a quote, an
    /// empty one is null, a quote inside an unquoted value is text; a quoted header is skipped.
    #[test]
    fn reads_quoted_values_as_arrow_does() {
        let text =
            b"\"a\";\"b;c\"\r\n\"x;y\";\"\"\n\"say \"\"hi\"\"\";q\"r\n\"\"\"\";\"\"\"\"\"\"\n";
        let want = vec![
            vec![Some("x;y".into()), None],
            vec![Some("say \"hi\"".into()), Some("q\"r".into())],
            vec![Some("\"".into()), Some("\"\"".into())],
        ];
        assert_eq!(rows(&arrows(text, 2, &[0, 1], 8).unwrap()), want);
        for piece in 1..text.len() + 1 {
            for batch in [1, 2, 8] {
                let got = ours(text, 2, &[0, 1], batch, piece).unwrap();
                assert_eq!(rows(&got), want, "{piece} {batch}");
                let keyed = ours_keyed(
                    text,
                    2,
                    &[0, 1],
                    batch,
                    piece,
                    &[true, true],
                    KEYED_DISTINCT,
                );
                assert_eq!(rows(&keyed.unwrap()), want, "{piece} {batch}");
            }
        }
    }

    /// A byte-order mark at the start of the file is dropped, even before an empty line (a
    /// helper's attack found it read as a record of its own), and whatever the chunks; inside
    /// the file (a byte range that does not start it) it is text.
    #[test]
    fn a_byte_order_mark_starts_the_file_only() {
        let text = b"\xEF\xBB\xBF\r\na;b\n1;2\n";
        for piece in [1, 2, 3, 100] {
            let got = ours(text, 2, &[0, 1], 8, piece).unwrap();
            assert_eq!(rows(&got), rows(&arrows(text, 2, &[0, 1], 8).unwrap()));
            assert_eq!(rows(&got), vec![vec![Some("1".into()), Some("2".into())]]);
        }
        let schema = schema_of(&[0, 1]);
        let mut d = TextDecoder::new(schema, b';', 2, &[0, 1], 8, Begin::Inside);
        assert_eq!(d.decode(b"\xEF\xBB\xBF1;2\n").unwrap(), 7);
        d.decode(&[]).unwrap();
        let b = d.flush().unwrap().unwrap();
        assert_eq!(
            rows(&[b]),
            vec![vec![Some("\u{feff}1".into()), Some("2".into())]]
        );
    }

    #[test]
    fn refuses_ragged_records_and_bad_text_with_their_line() {
        let e = ours(b"a;b\n1;2\n\n3\n", 2, &[0, 1], 8, 3).unwrap_err();
        assert!(
            e.to_string()
                .contains("incorrect number of fields for line 3, expected 2 got 1"),
            "{e}"
        );
        let e = ours(b"a;b\n1;2\n3;4;5\n", 2, &[1], 8, 100).unwrap_err();
        assert!(e.to_string().contains("line 3, expected 2 got 3"), "{e}");
        // Counted whole wherever the chunks end (a third attack found a record that a chunk
        // ended inside counted only up to that end).
        for piece in 1..20 {
            let e = ours(b"a;b\n1;2\nx;yyyyyy;1;2;3\n", 2, &[0, 1], 8, piece).unwrap_err();
            assert!(
                e.to_string().contains("line 3, expected 2 got 5"),
                "{piece}: {e}"
            );
        }
        let e = ours(b"a;b\n1;2\n3;\xff\n", 2, &[0, 1], 8, 100).unwrap_err();
        assert!(
            e.to_string()
                .contains("invalid UTF-8 data for line 3 and field 2"),
            "{e}"
        );
        // Each half of a character is refused, though the two halves side by side are UTF-8.
        let e = ours(b"a;b\n1;2\nx\xc3;\xa9y\n", 2, &[0, 1], 8, 100).unwrap_err();
        assert!(e.to_string().contains("invalid UTF-8"), "{e}");
        // Quoting the check refuses (so the file changed since): a quoted value past its line's
        // end (or the input's), text after a closing quote; named by line and field.
        for (bytes, what) in [
            (
                &b"a;b\n1;2\n\"3\n;4\"\n"[..],
                "line 3, field 1: a quoted value runs past",
            ),
            (b"a;b\n1;\"2", "line 2, field 2: a quoted value runs past"),
            (
                b"a;b\n1;\"2\"x\n",
                "line 2, field 2: text follows a closing quote",
            ),
            (
                b"a;b\n\"1\"2;3\n",
                "line 2, field 1: text follows a closing quote",
            ),
        ] {
            for piece in [1, 2, 3, 100] {
                let e = ours(bytes, 2, &[0, 1], 8, piece).unwrap_err().to_string();
                assert!(e.contains(what) && e.contains("changed"), "{piece}: {e}");
            }
        }
        // Named with the decoder's origin, at decoding and when a batch is built.
        let origin = |bytes: &[u8]| {
            let schema = schema_of(&[0, 1]);
            let begin = Begin::FileStart { header: true };
            let mut d = TextDecoder::new(schema, b';', 2, &[0, 1], 8, begin)
                .with_origin("in lake/b.csv".into());
            d.decode(bytes)
                .and_then(|_| d.decode(&[]))
                .and_then(|_| d.flush())
                .unwrap_err()
                .to_string()
        };
        assert!(origin(b"a;b\n1\n").ends_with("got 1 (in lake/b.csv)"));
        assert!(origin(b"a;b\n1;\xff\n").ends_with("line 2 and field 2 (in lake/b.csv)"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// CSV (a byte-order mark or empty lines before the header or not, records of any
        /// values, quoted or not, ended by any line terminator, with empty lines; sometimes a
        /// stray delimiter, line break, quote, or a byte that is not UTF-8), chunked anyhow and
        /// read in any batch size and projection, with either scan, gives arrow's rows, or an
        /// error where arrow gives one; quoting that pbg's check refuses or reads whole is
        /// refused.
        #[test]
        fn agrees_with_arrow(
            records in proptest::collection::vec(
                (
                    proptest::collection::vec(
                        proptest::sample::select(vec![
                            "", "a", "bb", "é", "x y", "\u{7f}", "0123456789",
                            "sixteen bytes ok", "seventeen bytes!!",
                            "a value of more than sixty-four bytes, so that it spans a whole block",
                            // Texts over 24 bytes that share the words they are hashed by.
                            "sixteen-byte-hd-X-twelve-tail", "sixteen-byte-hd-Y-twelve-tail",
                            // Quoted values: plain, empty, with delimiters, doubled quotes, a
                            // quote alone; a quote inside an unquoted value; long ones.
                            "\"q\"", "\"\"", "\"x;y\"", "\"say \"\"hi\"\"\"", "\"\"\"\"", "a\"b",
                            "\"a quoted value of more than sixty-four bytes; it spans a whole block\"",
                            "\"sixteen-byte-hd-X-twelve-tail\"",
                        ]),
                        3,
                    ),
                    proptest::sample::select(vec!["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"]),
                ),
                0..40,
            ),
            last_ended in proptest::bool::ANY,
            // What comes before the header: a byte-order mark, half of one, a mark and a line
            // end, empty lines, nothing.
            start in 0usize..5,
            stray in proptest::option::of((0usize..2000, proptest::sample::select(vec![b';', b'\n', 0xff, b'"']))),
            columns in 1usize..4,
            piece in proptest::prop_oneof![1usize..40, 60usize..300],
            batch in 1usize..6,
            keep in proptest::collection::vec(proptest::bool::ANY, 4),
            keyed in proptest::collection::vec(proptest::bool::ANY, 4),
            // Distinct texts keyed as read (the rest when the batch is built).
            limit in proptest::prop_oneof![0usize..4, proptest::strategy::Just(KEYED_DISTINCT)],
            // The scan for any x86-64 CPU, or AVX2's (where the CPU has it).
            narrow in proptest::bool::ANY,
        ) {
            NARROW.set(narrow);
            let mut bytes = [&[0xEF, 0xBB, 0xBF][..], &[0xEF, 0xBB], b"\xEF\xBB\xBF\r\n", b"\n\n", b""]
                [start].to_vec();
            bytes.extend(b"h0;h1;h2".iter().copied().take(3 * columns - 1));
            bytes.push(b'\n');
            for (i, (fields, end)) in records.iter().enumerate() {
                bytes.extend_from_slice(fields[..columns].join(";").as_bytes());
                if last_ended || i + 1 < records.len() {
                    bytes.extend_from_slice(end.as_bytes());
                }
            }
            if let Some((at, byte)) = stray.filter(|&(a, _)| a < bytes.len()) {
                bytes.insert(at, byte);
            }
            let projection: Vec<usize> = (0..columns).filter(|&c| keep[c]).collect();
            let all: Vec<usize> = (0..columns).collect();
            let want = arrows(&bytes, columns, &all, batch);
            let got = ours(&bytes, columns, &projection, batch, piece);
            // Quoting the scan's check refuses, or a quoted value across lines (read whole by
            // DataFusion's decoder, not this one), the decoder refuses too.
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), &bytes).unwrap();
            let quoting = crate::input::quoting::csv_quoting(file.path(), b';', &[]);
            if !matches!(quoting, Ok(crate::input::quoting::Quoting::Unquoted | crate::input::quoting::Quoting::Quoted)) {
                proptest::prop_assert!(got.is_err(), "{quoting:?} {got:?}");
                return Ok(());
            }
            // Keyed columns give the same rows and errors, each batch's texts numbered in order
            // of first appearance with none left over (as the keying of the text would).
            let got_keyed = ours_keyed(&bytes, columns, &projection, batch, piece, &keyed, limit);
            match (&got, &got_keyed) {
                (Ok(g), Ok(k)) => {
                    proptest::prop_assert_eq!(rows(g), rows(k));
                    for (g, k) in g.iter().zip(k) {
                        for (slot, c) in k.columns().iter().enumerate() {
                            proptest::prop_assert_eq!(c.data_type(), &if keyed[slot] { keyed_type() } else { DataType::Utf8 });
                            if keyed[slot] {
                                use arrow::array::AsArray;
                                // Keys within the dictionary (built unchecked).
                                c.to_data().validate_full().unwrap();
                                let values = c.as_dictionary::<UInt32Type>().values();
                                let want = crate::input::text::text_column(g.column(slot)).unwrap();
                                proptest::prop_assert_eq!(values.as_string::<i32>(), &want.values);
                            }
                        }
                    }
                }
                (Err(g), Err(k)) => proptest::prop_assert_eq!(g.to_string(), k.to_string()),
                (g, k) => proptest::prop_assert!(false, "text {g:?}, keyed {k:?}"),
            }
            match (want, got) {
                (Ok(w), Ok(g)) => {
                    let w: Vec<Vec<Option<String>>> = rows(&w)
                        .into_iter()
                        .map(|r| projection.iter().map(|&c| r[c].clone()).collect())
                        .collect();
                    proptest::prop_assert_eq!(rows(&g), w);
                    proptest::prop_assert!(g.iter().all(|b| b.num_rows() <= batch));
                }
                (Err(_), Err(_)) => {}
                // Invalid text in a column left out of the projection is not read, so it is
                // not refused (arrow checks every column's text).
                (Err(e), Ok(_)) => proptest::prop_assert!(
                    projection.len() < columns && e.to_string().contains("UTF-8"),
                    "arrow: {e}"
                ),
                // Arrow checks the text of a whole batch at once, so a character split in two
                // by a delimiter or a line end passes, leaving two values that are not UTF-8
                // (the attack found it); pbg refuses them.
                (Ok(w), Err(e)) => proptest::prop_assert!(
                    e.to_string().contains("UTF-8") && splits_a_character(&w),
                    "ours: {e}"
                ),
            }
        }
    }

    /// Whether some value of `batches` is not UTF-8 on its own.
    fn splits_a_character(batches: &[RecordBatch]) -> bool {
        use arrow::array::AsArray;
        batches.iter().flat_map(|b| b.columns()).any(|c| {
            let s = c.as_string::<i32>();
            s.offsets()
                .windows(2)
                .any(|w| std::str::from_utf8(&s.values()[w[0] as usize..w[1] as usize]).is_err())
        })
    }
}
