//! The quoting check of a CSV file, made before DataFusion reads it: whether it holds a `"`,
//! whether every quoted value is well formed (closed, nothing glued after its closing quote), and
//! whether one spans a line break (then the file is read whole, not in byte ranges).

use std::path::Path;

use crate::error::{PbgError, Result};

mod blocks;

use blocks::BlockCheck;

/// How the values of a CSV input are quoted, as far as the way to read it depends on it (the
/// most quoted file decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Quoting {
    /// No file holds a `"`: every record is a line and every field the text between delimiters,
    /// which pbg's own decoder reads.
    Unquoted,
    /// Some file quotes values (well-formed), none across a line break.
    Quoted,
    /// Some quoted value spans lines: files are read whole, not in byte ranges.
    LineBreaks,
}

/// A CSV file's [`Quoting`] (whether it holds a `"`, and a line break inside a quoted value), after
/// checking that quoting. DataFusion
/// splits a large CSV into byte ranges at line breaks, and one inside a quoted value would cut a
/// record in two (its lines could even pass as rows of their own): such inputs must be read one
/// file per partition. The scan follows the reader's rule: a `"` opens a quoted value only at the
/// start of a field, `""` inside it is a quote. A file with no `"` at all is cleared by one byte
/// search.
///
/// Arrow's reader is lenient where a release must not be: a quoted value never closed swallows
/// the rest of the file (its rows, QIs and all, become one kept value: a raw-value leak), and
/// text after a closing quote is glued to the value (`"Ma"le` read as `Male`). Both are refused,
/// naming the line and the column (`columns`: the header's names).
pub(super) fn csv_quoting(path: &Path, delimiter: u8, columns: &[String]) -> Result<Quoting> {
    if !holds_quote(path)? {
        return Ok(Quoting::Unquoted);
    }
    if ranges_clean(path, delimiter, QUOTE_RANGE)? {
        return Ok(Quoting::Quoted);
    }
    // A fault or a quoted line break: the whole file is scanned in order, which names the first
    // fault's line and column.
    quoting_in_order(path, delimiter, columns)
}

/// [`csv_quoting`] of a file by one scan in order.
fn quoting_in_order(path: &Path, delimiter: u8, columns: &[String]) -> Result<Quoting> {
    let mut scan = QuoteScan {
        delimiter,
        ..QuoteScan::default()
    };
    let fail = |message: String| PbgError::Format {
        path: path.to_path_buf(),
        message,
    };
    if let Some((line, field)) = scan_in_order(path, &mut scan)? {
        return Err(fail(format!(
            "line {line}, {}: text follows the closing quote of a quoted value; quote the whole value and double the quotes inside it (\"\"), as CSV requires",
            column_named(columns, field)
        )));
    }
    if scan.quoted && !scan.quote {
        let (line, field) = scan.opened;
        return Err(fail(format!(
            "line {line}, {}: a `\"` opens a quoted value that is never closed, so the rest of the file would be read as that one value",
            column_named(columns, field)
        )));
    }
    Ok(if scan.line_break {
        Quoting::LineBreaks
    } else {
        Quoting::Quoted
    })
}

/// Scans `path` in order with `scan` (a byte-order mark before the header skipped); the line
/// and field of the first text after a closing quote, if any.
fn scan_in_order(path: &Path, scan: &mut QuoteScan) -> Result<Option<(usize, usize)>> {
    use std::io::Read;
    let io = |e| PbgError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut buf = vec![0u8; 8 << 20];
    let mut first = true;
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            return Ok(None);
        }
        // A byte-order mark before the header is no part of its first field.
        let skip = if std::mem::take(&mut first) && buf[..n].starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        if let Some(fault) = scan.chunk(&buf[skip..n]) {
            return Ok(Some(fault));
        }
    }
}

/// Field `field` (0-based) of a record as a message names it: by its column's name.
fn column_named(columns: &[String], field: usize) -> String {
    columns.get(field).map_or_else(
        || format!("field {}", field + 1),
        |c| format!("column `{}`", shown(c)),
    )
}

/// Fails on the first record of `path` whose fields are not the header's `columns` (by line,
/// where the record starts, and file). For an input read whole because a quoted value spans
/// lines: DataFusion's reader of such files counts records, not lines, and names no file (a
/// ragged record in one file of a directory was reported against the directory). Blank lines
/// are no records, as for the readers. The file's quoting was checked before.
pub(super) fn check_record_widths(path: &Path, delimiter: u8, columns: &[String]) -> Result<()> {
    let mut scan = QuoteScan {
        delimiter,
        width: columns.len(),
        ..QuoteScan::default()
    };
    let glued = scan_in_order(path, &mut scan)?;
    scan.end_of_file();
    let fail = |message: String| PbgError::Format {
        path: path.to_path_buf(),
        message,
    };
    if let Some((line, fields)) = scan.ragged {
        return Err(fail(format!(
            "the record starting on line {line} has {fields} field(s) but the header names {} column(s)",
            columns.len()
        )));
    }
    match glued {
        // The quoting check refused it first; a file changed since is refused all the same.
        Some((line, field)) => Err(fail(format!(
            "line {line}, {}: text follows the closing quote of a quoted value (the file changed while it was read)",
            column_named(columns, field)
        ))),
        None => Ok(()),
    }
}

/// A column's name as a message shows it: at most its first 40 characters, up to its first line
/// break or other control character. A header whose quoted name is never closed reads the rest
/// of the file as that name, and the message printed every record (person data, into logs).
fn shown(name: &str) -> String {
    let head: String = name
        .chars()
        .take_while(|c| !c.is_control())
        .take(40)
        .collect();
    let more = if head.len() < name.len() { "…" } else { "" };
    format!("{head}{more}")
}

/// The state of [`csv_quoting`]'s scan between chunks of a file.
#[derive(Debug)]
struct QuoteScan {
    delimiter: u8,
    /// Inside a quoted value.
    quoted: bool,
    /// Inside a quoted value, the last byte was a `"` that may close it (or start `""`).
    quote: bool,
    /// Outside quotes, the next byte starts a field.
    start: bool,
    /// 1-based line of the next byte, and its field (0-based) in the record.
    line: usize,
    field: usize,
    /// Line and field where the open quoted value started.
    opened: (usize, usize),
    /// A line break was seen inside a quoted value.
    line_break: bool,
    /// Bytes scanned before the chunk at hand, and the offset just past the last `\r` seen: a
    /// `\n` there ends no second line (`\r\n`), while a `\r` alone ends one, as in arrow.
    scanned: u64,
    after_cr: u64,
    /// The fields every record must have (0: not checked, and records are not followed).
    width: usize,
    /// Where the record at hand starts (offset and line): a line end there ends a blank line.
    record_at: u64,
    record_line: usize,
    /// The first record (its first line, its fields) whose fields are not `width`.
    ragged: Option<(usize, usize)>,
}

impl Default for QuoteScan {
    fn default() -> Self {
        QuoteScan {
            delimiter: b',',
            quoted: false,
            quote: false,
            start: true,
            line: 1,
            field: 0,
            opened: (1, 0),
            line_break: false,
            scanned: 0,
            after_cr: u64::MAX,
            width: 0,
            record_at: 0,
            record_line: 1,
            ragged: None,
        }
    }
}

impl QuoteScan {
    /// Moves past a delimiter or line terminator `b` outside quotes, at offset `at`.
    fn separator(&mut self, b: u8, at: u64) {
        self.start = true;
        if b == self.delimiter {
            self.field += 1;
        } else {
            if self.width > 0 {
                self.record_end(at);
            }
            self.field = 0;
            self.line_end(b, at);
            (self.record_at, self.record_line) = (at + 1, self.line);
        }
    }

    /// The record at hand ends at offset `at` (a line end, or the end of the file): its width
    /// is checked unless it is blank.
    fn record_end(&mut self, at: u64) {
        if at != self.record_at && self.field + 1 != self.width && self.ragged.is_none() {
            self.ragged = Some((self.record_line, self.field + 1));
        }
    }

    /// The end of the file: its last record may have no line end.
    fn end_of_file(&mut self) {
        if self.width > 0 && (!self.quoted || self.quote) {
            self.record_end(self.scanned);
        }
    }

    /// Counts the line the terminator `b` at offset `at` ends (none for the `\n` of `\r\n`).
    fn line_end(&mut self, b: u8, at: u64) {
        if b == b'\r' {
            self.line += 1;
            self.after_cr = at + 1;
        } else if at != self.after_cr {
            self.line += 1;
        }
    }

    /// Scans the next chunk; the line and field of text after a closing quote, if any.
    fn chunk(&mut self, mut chunk: &[u8]) -> Option<(usize, usize)> {
        let d = self.delimiter;
        if chunk.is_empty() {
            return None;
        }
        // The offset of `chunk[i]` in the file, as `chunk` is cut down from the front.
        let (base, total) = (self.scanned, chunk.len() as u64);
        self.scanned += total;
        let at = |rest: &[u8], i: usize| base + total - rest.len() as u64 + i as u64;
        // (Records' widths are followed field by field, below.)
        if self.width == 0 && !self.quoted && !self.quote && memchr::memchr(b'"', chunk).is_none() {
            // No quote: only the line, the field and whether a field starts next move on.
            match memchr::memrchr2(b'\n', b'\r', chunk) {
                Some(last) => {
                    for i in memchr::memchr2_iter(b'\n', b'\r', chunk) {
                        self.line_end(chunk[i], base + i as u64);
                    }
                    self.field = memchr::memchr_iter(d, &chunk[last + 1..]).count();
                }
                None => self.field += memchr::memchr_iter(d, chunk).count(),
            }
            let end = chunk[chunk.len() - 1];
            self.start = matches!(end, b'\n' | b'\r') || end == d;
            return None;
        }
        while !chunk.is_empty() {
            if self.quoted {
                if self.quote {
                    self.quote = false;
                    let b = chunk[0];
                    chunk = &chunk[1..];
                    if b == b'"' {
                        continue; // `""`: a quote inside the value
                    }
                    self.quoted = false;
                    if b == d || b == b'\n' || b == b'\r' {
                        self.separator(b, at(chunk, 0) - 1);
                        continue;
                    }
                    return Some((self.line, self.field));
                }
                match memchr::memchr3(b'"', b'\n', b'\r', chunk) {
                    None => chunk = &[],
                    Some(i) => {
                        if chunk[i] == b'"' {
                            self.quote = true;
                        } else {
                            self.line_break = true;
                            self.line_end(chunk[i], at(chunk, i));
                        }
                        chunk = &chunk[i + 1..];
                    }
                }
            } else if self.start && chunk[0] == b'"' {
                self.quoted = true;
                self.opened = (self.line, self.field);
                chunk = &chunk[1..];
            } else {
                match memchr::memchr3(d, b'\n', b'\r', chunk) {
                    None => {
                        self.start = false;
                        chunk = &[];
                    }
                    Some(i) => {
                        self.separator(chunk[i], at(chunk, i));
                        chunk = &chunk[i + 1..];
                    }
                }
            }
        }
        None
    }
}

/// The bytes each parallel task of [`ranges_clean`] scans.
const QUOTE_RANGE: u64 = 16 << 20;

/// Whether each byte range of a file (`range` bytes, moved to start after a `\n` as a scan's do)
/// passes [`QuoteScan`] on its own, as if it started the file: no fault, no quoted line break,
/// no quoted value open at its end. Then so does the whole file: the first range starts the file
/// and, being clean, ends outside quotes at a line end, where the next one starts as the whole
/// file's scan would be; and so on. When the file passes, every range does the same way. The
/// ranges are scanned in parallel (a quoted file's scan of 250 MB took a core 0.5 s); a range
/// that does not pass sends the file to the scan in order, for its first fault's line.
fn ranges_clean(path: &Path, delimiter: u8, range: u64) -> Result<bool> {
    use rayon::prelude::*;
    let len = std::fs::metadata(path)
        .map_err(|e| PbgError::io(path, e))?
        .len();
    // The first range found not clean stops the others (a fault near the start of a large file
    // was refused 1 s late when every range was scanned).
    match (0..len.div_ceil(range.max(1)))
        .into_par_iter()
        .map(|i| range_clean(path, delimiter, i * range, ((i + 1) * range).min(len)))
        .find_any(|clean| !matches!(clean, Ok(true)))
    {
        None => Ok(true),
        Some(found) => found,
    }
}

/// [`ranges_clean`] of one range: the records starting in `start..stop` (a record starts at the
/// file's start or after a `\n`), each scanned to its end: by 64-byte masks, and byte by byte
/// where they leave a doubt.
fn range_clean(path: &Path, delimiter: u8, start: u64, stop: u64) -> Result<bool> {
    if range_passes(path, start, stop, &mut BlockCheck::new(delimiter))? {
        return Ok(true);
    }
    let mut scan = QuoteScan {
        delimiter,
        ..QuoteScan::default()
    };
    range_passes(path, start, stop, &mut scan)
}

/// A scan of a range's records for [`range_clean`].
trait RangeScan {
    /// Scans the next bytes; false if the range does not pass.
    fn chunk(&mut self, bytes: &[u8]) -> bool;
    /// Whether the range passes, ending here.
    fn clean_end(&self) -> bool;
}

impl RangeScan for QuoteScan {
    fn chunk(&mut self, bytes: &[u8]) -> bool {
        QuoteScan::chunk(self, bytes).is_none()
    }

    fn clean_end(&self) -> bool {
        !self.line_break && (!self.quoted || self.quote)
    }
}

/// Whether the records starting in `start..stop` pass `scan`.
fn range_passes(path: &Path, start: u64, stop: u64, scan: &mut impl RangeScan) -> Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e| PbgError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    // From the byte before the range: a `\n` there starts a record at `start`.
    let mut at = start.saturating_sub(1);
    file.seek(SeekFrom::Start(at)).map_err(io)?;
    let mut begun = start == 0;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        let (mut piece, mut piece_at) = (&buf[..n], at);
        at += n as u64;
        if !begun {
            let Some(j) = memchr::memchr(b'\n', piece) else {
                if at >= stop {
                    return Ok(true); // No line ends at or after the byte before the range's end.
                }
                continue;
            };
            (piece, piece_at) = (&piece[j + 1..], piece_at + j as u64 + 1);
            if piece_at >= stop {
                return Ok(true); // No record starts in the range.
            }
            begun = true;
        }
        if piece_at == 0 && piece.starts_with(b"\xEF\xBB\xBF") {
            (piece, piece_at) = (&piece[3..], 3);
        }
        // The range ends with the line holding its last byte.
        let last = (stop - 1).saturating_sub(piece_at) as usize;
        let end = piece
            .get(last..)
            .and_then(|tail| memchr::memchr(b'\n', tail))
            .map(|j| last + j + 1);
        let piece = &piece[..end.unwrap_or(piece.len())];
        if !piece.is_empty() && !scan.chunk(piece) {
            return Ok(false);
        }
        if end.is_some() {
            break;
        }
    }
    Ok(scan.clean_end())
}

/// Whether a file holds a `"` at all: its byte ranges searched in parallel.
fn holds_quote(path: &Path) -> Result<bool> {
    use rayon::prelude::*;
    use std::io::{Read, Seek, SeekFrom};
    let io = |e| PbgError::io(path, e);
    let len = std::fs::metadata(path).map_err(io)?.len();
    const RANGE: u64 = 16 << 20;
    (0..len.div_ceil(RANGE))
        .into_par_iter()
        .map(|i| {
            let (start, end) = (i * RANGE, ((i + 1) * RANGE).min(len));
            let mut file = std::fs::File::open(path).map_err(io)?;
            file.seek(SeekFrom::Start(start)).map_err(io)?;
            // Read in 1 MiB pieces: the scan holds little memory however large the range.
            let mut buf = vec![0u8; 1 << 20];
            let mut left = end - start;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                file.read_exact(&mut buf[..n]).map_err(io)?;
                if memchr::memchr(b'"', &buf[..n]).is_some() {
                    return Ok(true);
                }
                left -= n as u64;
            }
            Ok(false)
        })
        .try_reduce(|| false, |a, b| Ok(a || b))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `bytes` cut at `cuts` (any order, past the end meaning the end) into consecutive pieces,
    /// as a file's reads may cut it.
    pub(in crate::input::quoting) fn pieces(bytes: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
        cuts.iter_mut().for_each(|c| *c = (*c).min(bytes.len()));
        cuts.sort();
        let mut from = 0;
        let mut out = Vec::new();
        for c in cuts {
            out.push(&bytes[from..c]);
            from = c;
        }
        out.push(&bytes[from..]);
        out
    }

    /// Whether [`csv_quoting`] of `bytes` (columns a, b, c; `;`-separated) written to a scratch
    /// file finds a quoted line break, or its message.
    fn quoting(name: &str, bytes: &[u8]) -> std::result::Result<bool, String> {
        let path =
            std::env::temp_dir().join(format!("pbg-quoting-{name}-{}.csv", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let columns = ["a", "b", "c"].map(String::from);
        let out = csv_quoting(&path, b';', &columns)
            .map(|q| q == Quoting::LineBreaks)
            .map_err(|e| e.to_string());
        let _ = std::fs::remove_file(&path);
        out
    }

    /// A quoted value never closed (which arrow reads as the rest of the file) and text after a
    /// closing quote (which arrow glues to the value) are refused with their line and column;
    /// well-formed quoting passes, with or without a line break inside quotes.
    #[test]
    fn malformed_quoting_is_refused_with_its_line_and_column() {
        let h = "a;b;c\n";
        let unclosed = quoting("open", format!("{h}1;2;\"free\n4;5;6\n7;8;9\n").as_bytes());
        let e = unclosed.unwrap_err();
        assert!(
            e.contains("line 2, column `c`") && e.contains("never closed"),
            "{e}"
        );
        let e = quoting("open-last", format!("{h}1;2;3\n4;\"5;6\n").as_bytes()).unwrap_err();
        assert!(
            e.contains("line 3, column `b`") && e.contains("never closed"),
            "{e}"
        );
        // The swallowed text usually ends at a later quote: then text follows it.
        let e = quoting("glued", format!("{h}1;\"x\n4;\"5\";6\n").as_bytes()).unwrap_err();
        assert!(
            e.contains("line 3, column `b`") && e.contains("text follows"),
            "{e}"
        );
        let e = quoting("glued2", format!("{h}\"Ma\"le;2;3\n").as_bytes()).unwrap_err();
        assert!(
            e.contains("line 2, column `a`") && e.contains("text follows"),
            "{e}"
        );
        let e = quoting("crlf", b"a;b;c\r\n1;2;3\r\n4;5;\"6\"x\r\n").unwrap_err();
        assert!(e.contains("line 3, column `c`"), "{e}");
        let ok = |name: &str, text: &str| quoting(name, format!("{h}{text}").as_bytes());
        assert_eq!(ok("none", "1;2;3\n"), Ok(false));
        assert_eq!(ok("plain", "\"1\";\"2;x\";\"3\"\"\"\n"), Ok(false));
        assert_eq!(
            ok("inner", "5\";2\"x;3\"\n"),
            Ok(false),
            "a quote inside a field is a character"
        );
        assert_eq!(ok("break", "\"1\n1\";\"2\r\n\";3\n4;5;6"), Ok(true));
        assert_eq!(
            ok("last", "1;2;\"3\""),
            Ok(false),
            "closed at the last byte"
        );
        assert_eq!(ok("empty", "\"\";\"\";\"\"\n"), Ok(false));
        let bom = quoting("bom", b"\xEF\xBB\xBF\"a\";b;c\n1;2;3\n");
        assert_eq!(bom, Ok(false));
    }

    /// Lines ended by `\r` alone, `\n` or `\r\n`, mixed and cut anywhere, are counted as an
    /// editor shows them (the check named line 1 for a fault on line 7 of a file whose lines end
    /// in `\r`); a column's name is shown short and escaped (a header's quoted name never
    /// closed is the rest of the file, which the message printed).
    #[test]
    fn faults_name_their_line_whatever_ends_lines() {
        let e = quoting("cr", b"a;b;c\r1;2;3\r4;5;6\r7;\"8;9\r").unwrap_err();
        assert!(
            e.contains("line 4, column `b`") && e.contains("never closed"),
            "{e}"
        );
        let e = quoting("mixed", b"a;b;c\r\n1;2;3\r4;5;6\n\r\n7;8;\"9\"x\r").unwrap_err();
        assert!(e.contains("line 5, column `c`"), "{e}");
        let text: &[u8] = b"a\r\nb\rc\n\"d\re\r\nf\";g\r\r\n\nh;\"i\"\r";
        let want = 1
            + text.iter().filter(|&&b| b == b'\r').count()
            + text
                .windows(2)
                .filter(|w| w[1] == b'\n' && w[0] != b'\r')
                .count();
        for cut in 0..=text.len() {
            for cut2 in cut..=text.len() {
                let mut scan = QuoteScan {
                    delimiter: b';',
                    ..QuoteScan::default()
                };
                for piece in pieces(text, vec![cut, cut2]) {
                    assert_eq!(scan.chunk(piece), None);
                }
                assert_eq!(scan.line, want, "cut at {cut} and {cut2}");
            }
        }
        let path =
            std::env::temp_dir().join(format!("pbg-quoting-long-{}.csv", std::process::id()));
        let rest = "1;2;3\n".repeat(1000);
        std::fs::write(&path, format!("a;\"b\n{rest}")).unwrap();
        let columns = ["a".to_string(), format!("b\n{rest}")];
        let e = csv_quoting(&path, b';', &columns).unwrap_err().to_string();
        let _ = std::fs::remove_file(&path);
        assert!(e.contains("line 1, column `b…`"), "{e}");
        assert!(!e.contains("1;2;3"), "{e}");
    }

    /// The width check counts fields outside quotes, skips blank lines (`\r\n` included),
    /// names the line a record starts on, and checks a last record without a line end.
    #[test]
    fn record_widths_are_checked_by_record() {
        let width = |text: &[u8]| {
            let mut scan = QuoteScan {
                delimiter: b';',
                width: 3,
                ..QuoteScan::default()
            };
            for piece in pieces(text, vec![5, 11]) {
                assert_eq!(scan.chunk(piece), None);
            }
            scan.end_of_file();
            scan.ragged
        };
        assert_eq!(width(b"a;b;c\n1;\"2;\n2\";3\r\n\r\n\n4;5;6"), None);
        assert_eq!(width(b"a;b;c\n1;2;\"3\""), None);
        assert_eq!(width(b"a;b;c\n1;\"x\ny\";3;4\n"), Some((2, 4)));
        assert_eq!(width(b"a;b;c\r\n\r\n1;2\r\n"), Some((3, 2)));
        assert_eq!(width(b"a;b;c\n1;2;3\n;"), Some((3, 2)));
        assert_eq!(width(b"a;b;c\r1;2;3\r\"q\rq\"\r"), Some((3, 1)));
    }

    proptest::proptest! {
        /// The scan's verdict and position do not depend on where the file's reads split it.
        #[test]
        fn quote_scan_is_the_same_in_any_chunks(
            text in "[a;\"\n\r]{0,40}",
            cuts in proptest::collection::vec(0usize..40, 0..6),
        ) {
            let bytes = text.as_bytes();
            let run = |pieces: &[&[u8]]| {
                let mut scan = QuoteScan { delimiter: b';', ..QuoteScan::default() };
                let mut glued = None;
                for p in pieces.iter().filter(|p| !p.is_empty()) {
                    if let Some(at) = scan.chunk(p) {
                        glued = Some(at);
                        break;
                    }
                }
                let open = (scan.quoted && !scan.quote).then_some(scan.opened);
                (glued, glued.is_none().then_some((open, scan.line_break, scan.line, scan.field)))
            };
            proptest::prop_assert_eq!(run(&pieces(bytes, cuts)), run(&[bytes]));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// The check of a file's quoting by byte ranges in parallel passes exactly the files that
        /// the scan in order passes (no fault, no quoted line break), whatever the ranges' size:
        /// texts of quotes, delimiters, line ends and letters, with or without a byte-order mark.
        #[test]
        fn ranges_pass_what_the_scan_in_order_passes(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["\"", "\"\"", ";", "\n", "\r\n", "\r", "a", "bc", "\";\"", "\"x\"\n"]),
                0..60,
            ),
            bom in proptest::bool::ANY,
            range in 1u64..40,
        ) {
            let text = format!("{}{}", if bom { "\u{feff}" } else { "" }, parts.concat());
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), &text).unwrap();
            let in_order = quoting_in_order(file.path(), b';', &[]);
            let passes = matches!(in_order, Ok(Quoting::Quoted));
            proptest::prop_assert_eq!(
                ranges_clean(file.path(), b';', range).unwrap(),
                passes,
                "{:?}: {:?}", text, in_order
            );
        }
    }
}
