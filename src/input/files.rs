//! The files of a path input: their format (by extension, as spelled on disk), and the checks
//! made before DataFusion reads them — repeated column names, CSV headers that disagree (CSV is
//! read by position), files a listing would skip, empty files.

use std::path::{Path, PathBuf};

use arrow::datatypes::SchemaRef;
use datafusion::datasource::listing::ListingTableUrl;
use futures::TryStreamExt;

use super::{Input, df_error};
use crate::error::{PbgError, Result};

/// The file format of a path input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// CSV with a header row.
    Csv,
    /// Parquet.
    Parquet,
}

/// Every file this process has read as an input, a profile or a hierarchy, or written as an
/// output (canonical paths).
static READ: std::sync::LazyLock<std::sync::Mutex<std::collections::HashSet<PathBuf>>> =
    std::sync::LazyLock::new(Default::default);

/// Notes that `path` is read by this process, so that nothing removes it as a leftover (the
/// atomic writer's cleanup of killed runs' temporary files).
pub fn note_read(path: &Path) {
    if let (Ok(p), Ok(mut read)) = (path.canonicalize(), READ.lock()) {
        read.insert(p);
    }
}

/// Whether `path` is a file this process has read ([`note_read`]); true when that cannot be told.
pub fn was_read(path: &Path) -> bool {
    match (path.canonicalize(), READ.lock()) {
        (Ok(p), Ok(read)) => read.contains(&p),
        _ => true,
    }
}

/// Whether a path holds glob characters.
pub(super) fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Every regular file under `dir` (recursively), skipping hidden and temporary names.
pub(super) fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| PbgError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| PbgError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The format and the extension filter of a path input (the extension as spelled on disk:
/// DataFusion filters files by a case-sensitive suffix).
pub fn kind_of(path: &Path) -> Result<(FileKind, String)> {
    let text = path.to_string_lossy();
    let of_ext = |ext: Option<&str>| match ext {
        Some(e) if matches!(e.to_ascii_lowercase().as_str(), "parquet" | "parq") => {
            (FileKind::Parquet, format!(".{e}"))
        }
        Some(e) => (FileKind::Csv, format!(".{e}")),
        None => (FileKind::Csv, String::new()),
    };
    let raw_ext = |p: &Path| p.extension().map(|e| e.to_string_lossy().into_owned());
    if has_glob(&text) {
        // `lake/*.parquet`: the pattern's extension decides; `lake/*` holds CSV unless it says.
        let last = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let ext = last
            .as_deref()
            .and_then(|n| n.rsplit_once('.'))
            .map(|(_, e)| e.to_string())
            .filter(|e| !has_glob(e));
        return Ok(of_ext(ext.as_deref()));
    }
    let meta = std::fs::metadata(path).map_err(|e| PbgError::io(path, e))?;
    if !meta.is_dir() {
        return Ok(of_ext(raw_ext(path).as_deref()));
    }
    let mut files = Vec::new();
    files_under(path, &mut files)?;
    let spelled = |kind: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = files
            .iter()
            .filter_map(|f| raw_ext(f))
            .filter(|e| kind.contains(&e.to_ascii_lowercase().as_str()))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let (parquet, csv) = (spelled(&["parquet", "parq"]), spelled(&["csv"]));
    let mixed = |v: &[String]| {
        Err(PbgError::Format {
            path: path.to_path_buf(),
            message: format!(
                "the directory mixes files named {}; name one kind with a glob such as `{}/*.{}`",
                v.iter()
                    .map(|e| format!(".{e}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                path.display(),
                v[0]
            ),
        })
    };
    match (parquet.as_slice(), csv.as_slice()) {
        ([], []) if files.is_empty() => Err(PbgError::Format {
            path: path.to_path_buf(),
            message: "the directory holds no files".into(),
        }),
        ([], []) => Err(PbgError::Format {
            path: path.to_path_buf(),
            message: format!(
                "the directory holds no .parquet or .csv files ({} other files); name them with a glob such as `{}/*.txt`",
                files.len(),
                path.display()
            ),
        }),
        ([e], []) => Ok((FileKind::Parquet, format!(".{e}"))),
        ([], [e]) => Ok((FileKind::Csv, format!(".{e}"))),
        _ => {
            let all: Vec<String> = parquet.iter().chain(&csv).cloned().collect();
            mixed(&all)
        }
    }
    .and_then(|(kind, ext)| {
        // A file the listing would pass over (`part.csv.gz`, `notes.txt`) is rows or a mistake:
        // neither may vanish silently.
        let other: Vec<&PathBuf> = files
            .iter()
            .filter(|f| !f.to_string_lossy().ends_with(&ext))
            .collect();
        match other.first() {
            None => Ok((kind, ext)),
            Some(first) => Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "{} file(s) not named *{ext} would be skipped, e.g. {}: move them out, or name the input files with a glob such as `{}/*{ext}`",
                    other.len(),
                    first.display(),
                    path.display()
                ),
            }),
        }
    })
}

/// The header of a CSV file: its first record ([`first_record`]), so it is the header DataFusion
/// will read; a leading BOM is dropped.
fn csv_header(path: &Path, delimiter: u8) -> Result<Vec<String>> {
    let mut names = first_record(path, delimiter)?;
    if let Some(first) = names.first_mut()
        && let Some(rest) = first.strip_prefix('\u{feff}')
    {
        *first = rest.to_string();
    }
    Ok(names)
}

/// The fields of the first record of a CSV file (at least one), tokenized by csv-core with the
/// settings arrow's CSV reader gives it (`"` quotes, doubled inner quotes, a record ends at `\n`,
/// `\r\n` or a lone `\r` outside quotes), so they are the fields arrow will read: a quoted field
/// may hold the delimiter and line breaks.
pub(crate) fn first_record(path: &Path, delimiter: u8) -> Result<Vec<String>> {
    use csv_core::{ReadRecordResult, ReaderBuilder};
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| PbgError::io(path, e))?;
    let mut reader = ReaderBuilder::new().delimiter(delimiter).build();
    let mut chunk = vec![0u8; 8192];
    let (mut at, mut filled) = (0, 0);
    let mut out = vec![0u8; 8192];
    let mut ends = vec![0usize; 64];
    let (mut written, mut fields) = (0, 0);
    loop {
        if at == filled {
            // An empty read tells csv-core the file has ended.
            filled = file.read(&mut chunk).map_err(|e| PbgError::io(path, e))?;
            at = 0;
        }
        let (result, read, wrote, ended) =
            reader.read_record(&chunk[at..filled], &mut out[written..], &mut ends[fields..]);
        at += read;
        written += wrote;
        fields += ended;
        match result {
            ReadRecordResult::InputEmpty => {}
            ReadRecordResult::OutputFull if out.len() >= 16 << 20 => {
                return Err(PbgError::Format {
                    path: path.to_path_buf(),
                    message: "the first record (a header line, or a hierarchy's first row) is longer than 16 MiB".into(),
                });
            }
            ReadRecordResult::OutputFull => out.resize(out.len() * 2, 0),
            ReadRecordResult::OutputEndsFull => ends.resize(ends.len() * 2, 0),
            ReadRecordResult::Record | ReadRecordResult::End => break,
        }
    }
    // Field ends count from the record's start.
    let mut names = Vec::with_capacity(fields);
    let mut from = 0;
    for &end in &ends[..fields] {
        names.push(String::from_utf8_lossy(&out[from..end]).into_owned());
        from = end;
    }
    if names.is_empty() {
        names.push(String::new());
    }
    Ok(names)
}

/// The arrow schema stored in a Parquet file's footer (no data read).
fn parquet_schema(path: &Path) -> Result<SchemaRef> {
    let file = std::fs::File::open(path).map_err(|e| PbgError::io(path, e))?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| PbgError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    Ok(builder.schema().clone())
}

/// Checks every file of a path input before DataFusion reads it: no repeated column names, CSV
/// headers that agree (CSV is read by position), and no file that the listing would skip.
pub(super) async fn check_files(
    state: &datafusion::execution::SessionState,
    path: &Path,
    url: &ListingTableUrl,
    kind: FileKind,
    ext: &str,
    delimiter: u8,
) -> Result<Quoting> {
    let input = Input::Path(path.to_path_buf());
    let store = state
        .runtime_env()
        .object_store(url)
        .map_err(|e| df_error(&input, e))?;
    let metas: Vec<object_store::ObjectMeta> = url
        .list_all_files(state, store.as_ref(), ext)
        .await
        .map_err(|e| df_error(&input, e))?
        .try_collect()
        .await
        .map_err(|e| df_error(&input, e))?;
    let mut files: Vec<PathBuf> = metas
        .iter()
        .map(|m| PathBuf::from(format!("/{}", m.location.as_ref())))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(PbgError::Format {
            path: path.to_path_buf(),
            message: format!("no files match (extension `{ext}`)"),
        });
    }
    if path.is_dir() {
        // Every data file under the directory must be one DataFusion reads.
        let mut all = Vec::new();
        files_under(path, &mut all)?;
        let skipped: Vec<&PathBuf> = all
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(ext))
            .filter(|f| {
                let f = f.canonicalize().unwrap_or_else(|_| (*f).clone());
                !files
                    .iter()
                    .any(|g| g.canonicalize().unwrap_or_else(|_| g.clone()) == f)
            })
            .collect();
        if let Some(first) = skipped.first() {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "{} file(s) in subdirectories that are not partition directories (`name=value`) would be skipped, e.g. {}: move them, or set datafusion.execution.listing_table_ignore_subdirectory = false",
                    skipped.len(),
                    first.display()
                ),
            });
        }
    }
    for f in &files {
        note_read(f);
    }
    let mut first: Option<(PathBuf, Vec<String>)> = None;
    for f in &files {
        let names: Vec<String> = match kind {
            FileKind::Csv => csv_header(f, delimiter)?,
            FileKind::Parquet => parquet_schema(f)?
                .fields()
                .iter()
                .map(|x| x.name().clone())
                .collect(),
        };
        if names.iter().all(|n| n.is_empty()) {
            let empty = std::fs::metadata(f).map(|m| m.len() <= 1).unwrap_or(false);
            if kind == FileKind::Csv && empty {
                return Err(PbgError::EmptyTable { path: f.clone() });
            }
        }
        for (i, n) in names.iter().enumerate() {
            if let Some(j) = names[..i].iter().position(|m| m == n) {
                return Err(PbgError::Format {
                    path: f.clone(),
                    message: format!(
                        "column `{n}` appears twice (columns {} and {}): rename one, pbg refuses ambiguous column names",
                        j + 1,
                        i + 1
                    ),
                });
            }
        }
        match &first {
            None => first = Some((f.clone(), names)),
            Some((g, header)) if kind == FileKind::Csv && *header != names => {
                return Err(PbgError::Format {
                    path: f.clone(),
                    message: format!(
                        "its header ({}) differs from that of {} ({}): CSV files of one input must have the same columns in the same order",
                        names.join(", "),
                        g.display(),
                        header.join(", ")
                    ),
                });
            }
            Some((g, header)) if kind == FileKind::Parquet && !same_set(header, &names) => {
                return Err(PbgError::Format {
                    path: f.clone(),
                    message: format!(
                        "its columns ({}) differ from those of {} ({}): Parquet files of one input must have the same columns",
                        names.join(", "),
                        g.display(),
                        header.join(", ")
                    ),
                });
            }
            Some(_) => {}
        }
    }
    // Every file's quoting is checked, even after one with a quoted line break.
    let mut quoting = Quoting::Unquoted;
    if kind == FileKind::Csv {
        let columns = first.map(|(_, names)| names).unwrap_or_default();
        for f in &files {
            quoting = quoting.max(csv_quoting(f, delimiter, &columns)?);
        }
    }
    Ok(quoting)
}

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
    use std::io::Read;
    let io = |e| PbgError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut buf = vec![0u8; 8 << 20];
    let mut scan = QuoteScan {
        delimiter,
        ..QuoteScan::default()
    };
    let mut first = true;
    let column = |field: usize| {
        columns.get(field).map_or_else(
            || format!("field {}", field + 1),
            |c| format!("column `{c}`"),
        )
    };
    let fail = |message: String| PbgError::Format {
        path: path.to_path_buf(),
        message,
    };
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        // A byte-order mark before the header is no part of its first field.
        let skip = if std::mem::take(&mut first) && buf[..n].starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        if let Some((line, field)) = scan.chunk(&buf[skip..n]) {
            return Err(fail(format!(
                "line {line}, {}: text follows the closing quote of a quoted value; quote the whole value and double the quotes inside it (\"\"), as CSV requires",
                column(field)
            )));
        }
    }
    if scan.quoted && !scan.quote {
        let (line, field) = scan.opened;
        return Err(fail(format!(
            "line {line}, {}: a `\"` opens a quoted value that is never closed, so the rest of the file would be read as that one value",
            column(field)
        )));
    }
    Ok(if scan.line_break {
        Quoting::LineBreaks
    } else {
        Quoting::Quoted
    })
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
        }
    }
}

impl QuoteScan {
    /// Moves past a delimiter or line terminator `b` outside quotes.
    fn separator(&mut self, b: u8) {
        self.start = true;
        if b == self.delimiter {
            self.field += 1;
        } else {
            self.field = 0;
            self.line += usize::from(b == b'\n');
        }
    }

    /// Scans the next chunk; the line and field of text after a closing quote, if any.
    fn chunk(&mut self, mut chunk: &[u8]) -> Option<(usize, usize)> {
        let d = self.delimiter;
        if chunk.is_empty() {
            return None;
        }
        if !self.quoted && !self.quote && memchr::memchr(b'"', chunk).is_none() {
            // No quote: only the line, the field and whether a field starts next move on.
            match memchr::memrchr2(b'\n', b'\r', chunk) {
                Some(last) => {
                    self.line += memchr::memchr_iter(b'\n', chunk).count();
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
                        self.separator(b);
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
                            self.line += usize::from(chunk[i] == b'\n');
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
                        self.separator(chunk[i]);
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
/// file's start or after a `\n`), each scanned to its end.
fn range_clean(path: &Path, delimiter: u8, start: u64, stop: u64) -> Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e| PbgError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    // From the byte before the range: a `\n` there starts a record at `start`.
    let mut at = start.saturating_sub(1);
    file.seek(SeekFrom::Start(at)).map_err(io)?;
    let mut begun = start == 0;
    let mut scan = QuoteScan {
        delimiter,
        ..QuoteScan::default()
    };
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
        if !piece.is_empty() && scan.chunk(piece).is_some() {
            return Ok(false);
        }
        if end.is_some() {
            break;
        }
    }
    Ok(!scan.line_break && (!scan.quoted || scan.quote))
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

/// Whether two column lists hold the same names, in any order.
fn same_set(a: &[String], b: &[String]) -> bool {
    let mut a: Vec<&String> = a.iter().collect();
    let mut b: Vec<&String> = b.iter().collect();
    a.sort();
    b.sort();
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort();
            let mut pieces = Vec::new();
            let mut from = 0;
            for c in cuts {
                pieces.push(&bytes[from..c]);
                from = c;
            }
            pieces.push(&bytes[from..]);
            proptest::prop_assert_eq!(run(&pieces), run(&[bytes]));
        }
    }

    /// The header of `bytes` written to a scratch file.
    fn header_of(name: &str, bytes: &[u8], delimiter: u8) -> Vec<String> {
        let path =
            std::env::temp_dir().join(format!("pbg-header-{name}-{}.csv", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let names = csv_header(&path, delimiter).unwrap();
        let _ = std::fs::remove_file(&path);
        names
    }

    /// Records end at `\n`, `\r\n` and a lone `\r`, as in arrow's reader: a file whose lines end
    /// in `\r` alone has a header of its first line, not the whole file.
    #[test]
    fn header_ends_at_every_line_terminator() {
        let want = vec!["zip", "age", "s"];
        assert_eq!(header_of("lf", b"zip;age;s\n1;2;3\n", b';'), want);
        assert_eq!(header_of("crlf", b"zip;age;s\r\n1;2;3\r\n", b';'), want);
        assert_eq!(header_of("cr", b"zip;age;s\r1;2;3\r4;5;6\r", b';'), want);
        assert_eq!(header_of("eof", b"zip;age;s", b';'), want);
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

    /// Quoted names keep their delimiters, newlines and doubled quotes; a BOM is dropped; a
    /// quote inside an unquoted name does not swallow the rest of the file.
    #[test]
    fn header_quotes_and_bom() {
        assert_eq!(
            header_of(
                "quoted",
                b"\xef\xbb\xbf\"a,b\",\"c\"\"d\",\"e\nf\"\n1,2,3\n",
                b','
            ),
            vec!["a,b", "c\"d", "e\nf"]
        );
        assert_eq!(
            header_of("inner", b"height\",w\n1,2\n3,4\n", b','),
            vec!["height\"", "w"]
        );
        assert_eq!(header_of("empty", b"", b','), vec![""]);
    }
}
