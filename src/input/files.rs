//! The files of a path input: their format (by extension, as spelled on disk), and the checks
//! made before DataFusion reads them — repeated column names, CSV headers that disagree (CSV is
//! read by position), files a listing would skip, empty files.

use std::path::{Path, PathBuf};

use arrow::datatypes::SchemaRef;
use datafusion::datasource::listing::ListingTableUrl;
use futures::TryStreamExt;

use super::quoting::{Quoting, check_record_widths, csv_quoting};
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

/// The status change time (ns) of a file, where the platform has one: any write, and any
/// change of its metadata, moves it (it cannot be set back as a modification time can).
pub(crate) fn status_change(meta: &std::fs::Metadata) -> Option<i128> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// The identity of a file's contents as the system keeps it: device, inode, size, and the
/// modification and status change times (ns).
type Stamp = (u64, u64, u64, i128, i128);

/// The [`Stamp`] of the file at `path`.
#[cfg(unix)]
fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let modified = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
    Some((m.dev(), m.ino(), m.size(), modified, status_change(&m)?))
}

/// Elsewhere no file is known unchanged.
#[cfg(not(unix))]
fn stamp(_path: &Path) -> Option<Stamp> {
    None
}

/// The stamps of a path input's files (one file, the files a glob matches, or every file under a
/// directory but hidden and temporary ones, as [`kind_of`] takes them all for the input's);
/// `None` when a file cannot be looked at.
fn input_stamps(path: &Path) -> Option<Vec<(PathBuf, Stamp)>> {
    let mut files = Vec::new();
    if is_glob(path) {
        let (_, ext) = kind_of(path).ok()?;
        files = glob_files(&listing_url(path).ok()?, &ext)?.0;
    } else if std::fs::metadata(path).ok()?.is_dir() {
        files_under(path, &mut files).ok()?;
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    files
        .into_iter()
        .map(|f| Some((f.clone(), stamp(&f)?)))
        .collect()
}

/// A path input's files as they were before a run read them, to tell whether the run read one
/// input throughout: a file written, replaced, added or removed meanwhile gave the statistics of
/// one table and the rows (or the verifier's input) of another.
#[derive(Debug)]
pub struct InputStamps {
    path: PathBuf,
    stamps: Vec<(PathBuf, Stamp)>,
}

impl InputStamps {
    /// The stamps of `input`'s files now (none for a registered table, or files that cannot be
    /// looked at).
    pub fn take(input: &Input) -> Option<Self> {
        let path = input.path()?;
        Some(InputStamps {
            path: path.to_path_buf(),
            stamps: input_stamps(path)?,
        })
    }

    /// An error naming a file that changed since the stamps were taken, if one did.
    pub fn check(&self) -> Result<()> {
        let now = input_stamps(&self.path).unwrap_or_default();
        let gone = self.stamps.iter().find(|b| !now.contains(b));
        match gone.or_else(|| now.iter().find(|n| !self.stamps.contains(n))) {
            None => Ok(()),
            Some((f, _)) => Err(PbgError::Format {
                path: f.clone(),
                message: "the input changed (written, replaced, added or removed) while pbg released it: nothing was released; release a copy that nothing writes to".into(),
            }),
        }
    }

    /// `e`, or the input's change if there was one (then the cause of `e`).
    pub fn blame(&self, e: PbgError) -> PbgError {
        self.check().err().unwrap_or(e)
    }
}

/// CSV files this process wrote holding no value quoted across a line break (releases, before
/// they are renamed into place; canonical paths), with their stamp when written.
static WRITTEN_CSV: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<PathBuf, Stamp>>,
> = std::sync::LazyLock::new(Default::default);

/// Notes that this process has just written `path` as CSV with no value quoted across a line
/// break, so that its verification reads it back in parallel byte ranges without first scanning
/// all of it for quotes. The note is a shortcut only: were the file changed to quote a value
/// across lines after all, a byte range would meet it and the read fail (see [`written_csv`]).
pub fn note_written_csv(path: &Path) {
    if let (Some(stamp), Ok(path), Ok(mut written)) =
        (stamp(path), path.canonicalize(), WRITTEN_CSV.lock())
    {
        written.insert(path, stamp);
    }
}

/// Whether `path` is a CSV file noted by [`note_written_csv`] and unchanged since. Such a file is
/// planned as one whose quoted values stay on their line: pbg's scan decodes any quote it holds,
/// and one opening a value that runs past its line end is an error in whichever byte range holds
/// the first such value (the ranges before it start on true record boundaries), never a record
/// cut in two.
fn written_csv(path: &Path) -> bool {
    match (stamp(path), path.canonicalize(), WRITTEN_CSV.lock()) {
        (Some(now), Ok(path), Ok(written)) => written.get(&path) == Some(&now),
        _ => false,
    }
}

/// Whether a text holds glob characters (DataFusion reads a path holding one as a glob).
pub(crate) fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Whether a path input is a glob: it holds glob characters and names no existing file or
/// directory ([`listing_url`]).
pub(crate) fn is_glob(path: &Path) -> bool {
    has_glob(&path.to_string_lossy()) && !path.exists()
}

/// Every regular file under `dir` (recursively), skipping hidden and temporary names; a
/// directory reached again through a symbolic link is walked once (a link back to an ancestor
/// made the walk endless).
pub(super) fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut walked = std::collections::HashSet::new();
    walk(dir, out, &mut walked)
}

/// [`files_under`], with the directories walked so far (canonical paths).
fn walk(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    walked: &mut std::collections::HashSet<PathBuf>,
) -> Result<()> {
    if !walked.insert(dir.canonicalize().map_err(|e| PbgError::io(dir, e))?) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| PbgError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| PbgError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if is_hidden(&name) {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out, walked)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Whether a file or directory name is hidden (`.` or `_` first, as temporary and leftover
/// files are named): pbg's walk skips it, and an input must not read it.
fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

/// The names of the directories and the file of `file` below `base` (none if it is not below).
fn parts_below(file: &Path, base: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(base).ok()?;
    Some(
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect(),
    )
}

/// Why a local path that is neither a file nor a directory (a named pipe, a device) is refused:
/// opening a pipe waits for a writer, and its bytes come once where pbg reads a table more than
/// once.
pub(crate) const NOT_REGULAR: &str = "it is not a regular file (a named pipe or a device): its bytes can be read once, and pbg reads a table more than once (its schema, its statistics, the release, the verification); write the rows to a file first";

/// Why an output path that is a named pipe or a device is refused: outputs are written to a
/// temporary file renamed into place, which would replace it.
pub(crate) const NOT_WRITABLE: &str = "it is a named pipe or a device, not a regular file: an output is written to a temporary file and renamed into place, which would replace it; name a regular file";

/// Why a file of an input that DataFusion's listing leaves out is left out, when that is no
/// fault of the listing: it is not a regular file (DataFusion lists regular files only), or it
/// cannot be looked at (a symbolic link to nothing). Without it, such a file was reported as
/// missing from a stale listing cache, or as left out by a partition-directory rule.
fn unlisted_reason(file: &Path) -> Option<String> {
    match std::fs::metadata(file) {
        Ok(m) if m.is_file() => None,
        Ok(_) => Some(NOT_REGULAR.into()),
        Err(e) => Some(match std::fs::read_link(file) {
            Ok(target) => format!(
                "it is a symbolic link to {}, which cannot be read ({e}): fix the link or remove it",
                target.display()
            ),
            Err(_) => format!("it cannot be read ({e})"),
        }),
    }
}

/// The first of `files` (of an input, left out by DataFusion's listing) that [`unlisted_reason`]
/// explains, as the error naming it.
fn unlisted_error<'a>(files: impl IntoIterator<Item = &'a PathBuf>) -> Option<PbgError> {
    files.into_iter().find_map(|f| {
        unlisted_reason(f).map(|message| PbgError::Format {
            path: f.clone(),
            message,
        })
    })
}

/// The format and the extension filter of a path input (the extension as spelled on disk:
/// DataFusion filters files by a case-sensitive suffix).
pub fn kind_of(path: &Path) -> Result<(FileKind, String)> {
    let of_ext = |ext: Option<&str>| match ext {
        Some(e) if matches!(e.to_ascii_lowercase().as_str(), "parquet" | "parq") => {
            (FileKind::Parquet, format!(".{e}"))
        }
        Some(e) => (FileKind::Csv, format!(".{e}")),
        None => (FileKind::Csv, String::new()),
    };
    let raw_ext = |p: &Path| p.extension().map(|e| e.to_string_lossy().into_owned());
    if is_glob(path) {
        // `lake/*.parquet`: the pattern's extension decides; `lake/*` holds CSV unless it says.
        let last = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let ext = last
            .as_deref()
            .and_then(|n| n.rsplit_once('.'))
            .map(|(_, e)| e.to_string())
            .filter(|e| !has_glob(e));
        // A pattern without one (`lake/**`) is of the kind its base directory holds, as that
        // directory given alone would be (Parquet files were read as CSV and failed on a
        // "header" of binary bytes).
        let base: PathBuf = path
            .components()
            .take_while(|c| !has_glob(&c.as_os_str().to_string_lossy()))
            .collect();
        if ext.is_none() && !base.as_os_str().is_empty() && base.is_dir() {
            return kind_of(&base);
        }
        return Ok(of_ext(ext.as_deref()));
    }
    let meta = std::fs::metadata(path).map_err(|e| PbgError::io(path, e))?;
    if !meta.is_dir() && !meta.is_file() {
        // A named pipe (or a device) gives its bytes once; the first pass took them all, and
        // the next found "the table is empty".
        return Err(PbgError::Format {
            path: path.to_path_buf(),
            message: NOT_REGULAR.into(),
        });
    }
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

/// The header of a CSV file: its first record ([`record_fields`]), so it is the header its rows
/// are read under; a leading BOM is dropped (by csv-core, as every reader does: a second one
/// begins the first name, and this function once dropped it too, renaming the column). A file
/// holding no record (empty, or blank lines only) is an empty table; a header naming no column
/// (an empty first line is skipped, so a byte-order mark alone) is refused.
fn csv_header(path: &Path, delimiter: u8) -> Result<Vec<String>> {
    let Some(names) = record_fields(path, delimiter)? else {
        return Err(PbgError::EmptyTable {
            path: path.to_path_buf(),
        });
    };
    if names.len() == 1 && names[0].is_empty() {
        let tiny = std::fs::metadata(path).is_ok_and(|m| m.len() <= 4);
        return Err(match tiny {
            true => PbgError::EmptyTable {
                path: path.to_path_buf(),
            },
            false => PbgError::Format {
                path: path.to_path_buf(),
                message: "its header names no column (its first record is empty): a CSV input starts with a header row naming its columns".into(),
            },
        });
    }
    Ok(names)
}

/// The fields of the first record of the CSV bytes `text` of `path` (at least one: an empty
/// field if it holds no record), see [`record_fields`].
pub(crate) fn first_record(text: &[u8], path: &Path, delimiter: u8) -> Result<Vec<String>> {
    Ok(fields_read(text, path, delimiter)?.unwrap_or_else(|| vec![String::new()]))
}

/// The fields of the first record of a CSV file, `None` if it holds none (empty, or blank lines
/// only), tokenized by csv-core with the settings arrow's CSV reader gives it (`"` quotes, doubled
/// inner quotes, a record ends at `\n`, `\r\n` or a lone `\r` outside quotes), so they are the
/// fields arrow will read: a quoted field may hold the delimiter and line breaks. A field that is
/// not UTF-8 is refused (a column name made of replacement characters would be released, and two
/// files' different bytes would read as one name).
fn record_fields(path: &Path, delimiter: u8) -> Result<Option<Vec<String>>> {
    let file = std::fs::File::open(path).map_err(|e| PbgError::io(path, e))?;
    fields_read(file, path, delimiter)
}

/// [`record_fields`] of the bytes `file` reads (those of `path`).
fn fields_read(
    mut file: impl std::io::Read,
    path: &Path,
    delimiter: u8,
) -> Result<Option<Vec<String>>> {
    use csv_core::{ReadRecordResult, ReaderBuilder};
    let mut reader = ReaderBuilder::new().delimiter(delimiter).build();
    let mut chunk = vec![0u8; 8192];
    let (mut at, mut filled) = (0, 0);
    let mut out = vec![0u8; 8192];
    let mut ends = vec![0usize; 64];
    let (mut written, mut fields) = (0, 0);
    // The file's first bytes, to name a binary format read as CSV.
    let mut magic: Option<Vec<u8>> = None;
    loop {
        if at == filled {
            // An empty read tells csv-core the file has ended.
            filled = file.read(&mut chunk).map_err(|e| PbgError::io(path, e))?;
            at = 0;
            if magic.is_none() {
                let first = chunk[..filled.min(8)].to_vec();
                // Binary bytes that happen to read as a header (an uncompressed Parquet file's
                // first line can be UTF-8) are named before they are taken for column names.
                if let Some(format) = binary_file(&first) {
                    return Err(PbgError::Format {
                        path: path.to_path_buf(),
                        message: format,
                    });
                }
                magic = Some(first);
            }
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
    if fields == 0 {
        return Ok(None);
    }
    // Field ends count from the record's start.
    let mut names = Vec::with_capacity(fields);
    let mut from = 0;
    for (i, &end) in ends[..fields].iter().enumerate() {
        let name = String::from_utf8(out[from..end].to_vec()).map_err(|_| PbgError::Format {
            path: path.to_path_buf(),
            message: match binary_format(magic.as_deref().unwrap_or_default()) {
                Some(format) => format,
                None => format!(
                    "field {} of its first record (the header) is not UTF-8 text: save the file as UTF-8",
                    i + 1
                ),
            },
        })?;
        names.push(name);
        from = end;
    }
    Ok(Some(names))
}

/// Binary formats a file read as CSV may be: its first bytes, what it is, and what to do.
const BINARY_FORMATS: [(&[u8], &str, &str); 6] = [
    (
        b"ARROW1",
        "an Arrow IPC file",
        "pbg reads CSV and Parquet; convert it in `pbg sql`: `CREATE EXTERNAL TABLE t STORED AS ARROW LOCATION 'IN.arrow'; COPY t TO 'OUT.parquet'`",
    ),
    (
        &[0xff, 0xff, 0xff, 0xff],
        "an Arrow IPC stream",
        "pbg reads CSV and Parquet; write it as Parquet",
    ),
    (
        b"PAR1",
        "a Parquet file",
        "give it the extension .parquet (pbg reads a file as Parquet by its name)",
    ),
    (&[0x1f, 0x8b], "gzip-compressed", "decompress it first"),
    (
        &[0x28, 0xb5, 0x2f, 0xfd],
        "zstd-compressed",
        "decompress it first",
    ),
    (
        b"PK\x03\x04",
        "a ZIP archive (an .xlsx workbook is one)",
        "export the sheet as CSV",
    ),
];

/// The binary format `first` (a file's first bytes) begins as: its magic number's length and
/// the message naming it.
fn binary_magic(first: &[u8]) -> Option<(usize, String)> {
    BINARY_FORMATS
        .iter()
        .find(|(magic, _, _)| first.starts_with(magic))
        .map(|(magic, format, advice)| {
            (
                magic.len(),
                format!("it is {format}, not CSV text: {advice}"),
            )
        })
}

/// What a file read as CSV is, and what to do, if its first bytes name a binary format (asked
/// of a file whose header is not UTF-8: text never matches).
fn binary_format(first: &[u8]) -> Option<String> {
    binary_magic(first).map(|(_, message)| message)
}

/// [`binary_format`] asked of any file: only when the byte after the magic number is a control
/// byte too (`PAR1,b` is a header, `PAR1\x15` a Parquet page header), so that text is never
/// taken for one; a binary file whose first line is UTF-8 (an uncompressed Parquet file) was read
/// as a header of control characters.
fn binary_file(first: &[u8]) -> Option<String> {
    let (n, message) = binary_magic(first)?;
    let next = *first.get(n)?;
    (next < 0x20 && !matches!(next, b'\t' | b'\n' | b'\r')).then_some(message)
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

/// The listing URL of a path input. A path that exists is that file or directory, whatever
/// characters its name holds; only a path that does not exist is a glob. DataFusion takes any
/// path holding `*`, `?` or `[` for a glob: `r[1].csv` read `r1.csv`, so `pbg verify` checked
/// another file than the one named and passed, and a release written to `out[2].csv` could not
/// be read back.
pub(super) fn listing_url(path: &Path) -> Result<ListingTableUrl> {
    let input = Input::Path(path.to_path_buf());
    if !path.exists() {
        return ListingTableUrl::parse(path.to_string_lossy().as_ref())
            .map_err(|e| df_error(&input, e));
    }
    let absolute = std::path::absolute(path).map_err(|e| PbgError::io(path, e))?;
    let url = match path.is_dir() {
        true => url::Url::from_directory_path(&absolute),
        false => url::Url::from_file_path(&absolute),
    }
    // Parsed again, as DataFusion does, to resolve `.` and `..` segments.
    .ok()
    .and_then(|u| url::Url::parse(u.as_str()).ok())
    .ok_or_else(|| PbgError::Format {
        path: path.to_path_buf(),
        message: "its path cannot be made a file URL".into(),
    })?;
    ListingTableUrl::try_new(url, None).map_err(|e| df_error(&input, e))
}

/// A file a glob input matches, read literally (its partition directories included), that
/// DataFusion's listing left out, and the glob's base directory. DataFusion matches a glob
/// against a file's path with its `key=value` directories left out, so `lake/*/*.csv` over
/// `lake/plain/a.csv` and `lake/year=2020/a.csv` read the first alone: rows were silently lost.
fn glob_left_out(
    url: &ListingTableUrl,
    ext: &str,
    listed: &[PathBuf],
) -> Option<(PathBuf, PathBuf)> {
    let (files, base) = glob_files(url, ext)?;
    let left = files.into_iter().find(|f| !listed.contains(f))?;
    Some((left, base))
}

/// The files named `*ext` under a glob's base directory that its pattern matches by their path
/// below the base (sorted), and the base.
fn glob_files(url: &ListingTableUrl, ext: &str) -> Option<(Vec<PathBuf>, PathBuf)> {
    let glob = url.get_glob().as_ref()?;
    let base = url.get_url().to_file_path().ok()?;
    let mut files = Vec::new();
    files_under(&base, &mut files).ok()?;
    files.retain(|f| {
        f.to_string_lossy().ends_with(ext)
            && f.strip_prefix(&base)
                .is_ok_and(|rel| glob.matches(&rel.to_string_lossy()))
    });
    files.sort();
    Some((files, base))
}

/// The error for a glob input whose listing left out `left`, a file it matches (see
/// [`glob_left_out`]).
fn left_out(path: &Path, url: &ListingTableUrl, ext: &str, left: &Path, base: &Path) -> PbgError {
    let glob = url.get_glob().as_ref().map_or("", |g| g.as_str());
    PbgError::Format {
        path: path.to_path_buf(),
        message: format!(
            "`{glob}` matches {}, but DataFusion's listing leaves it out: it matches a glob against a file's path with its partition directories (`key=value`) left out; name the files without them (`{}` reads every file below the partition directories of {}) or give the directory",
            left.display(),
            base.join(format!("*{ext}")).display(),
            base.display()
        ),
    }
}

/// What [`check_files`] found out about a path input's files.
#[derive(Debug)]
pub(super) struct CheckedFiles {
    /// How the CSV files' values are quoted (the most quoted file decides).
    pub(super) quoting: Quoting,
    /// The CSV files' header names, read with the reader's quoting rule (empty for Parquet).
    pub(super) header: Vec<String>,
    /// The files DataFusion lists, and the directory the listing starts from (the input
    /// directory, or a glob's base; none for a remote store).
    pub(super) files: Vec<PathBuf>,
    pub(super) base: Option<PathBuf>,
}

/// Fails unless every listed file's first directories below `base` are the partition
/// directories `partitions` (`key=value`, in order): DataFusion takes partition values only from
/// there and, at the scan, leaves out a file whose path does not parse so (`x/a=2/y.csv` beside
/// `a=1/y.csv`: its rows were silently missing from a release that then verified).
pub(super) fn check_partition_paths(
    path: &Path,
    checked: &CheckedFiles,
    partitions: &[String],
) -> Result<()> {
    let Some(base) = &checked.base else {
        return Ok(());
    };
    if partitions.is_empty() {
        return Ok(());
    }
    for f in &checked.files {
        let Some(dirs) = parts_below(f, base) else {
            continue;
        };
        let placed = partitions.iter().enumerate().all(|(i, p)| {
            dirs.get(i)
                .is_some_and(|d| d.split_once('=').is_some_and(|(k, _)| k == p))
        }) && dirs.len() > partitions.len();
        if !placed {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "{} is not directly below the partition directories ({}) of {}: DataFusion reads partition values only from a path's first directories and leaves this file out; give every file the same partition directories, or read the files apart",
                    f.display(),
                    partitions
                        .iter()
                        .map(|p| format!("`{p}=…`"))
                        .collect::<Vec<_>>()
                        .join("/"),
                    base.display()
                ),
            });
        }
    }
    Ok(())
}

/// Fails on a listed file that pbg's own walk would skip or that a glob reaches below its
/// depth: DataFusion's listing reads hidden and `_` names (a killed run's temporary file in an
/// input directory was read as rows of the input), and its `*` crosses `/` (`lk/a*.csv` read
/// `lk/archive/rel.csv`, an earlier release, as more rows: every person counted twice).
fn check_listed(path: &Path, url: &ListingTableUrl, files: &[PathBuf], base: &Path) -> Result<()> {
    let glob = url.get_glob().as_ref().map(|g| g.as_str());
    // Without `**`, a glob reaches as deep as it has segments (partition directories, which
    // DataFusion leaves out of the path it matches, not counted).
    let depth = glob
        .filter(|g| !g.contains("**"))
        .map(|g| g.split('/').filter(|s| !s.is_empty()).count());
    for f in files {
        let Some(parts) = parts_below(f, base) else {
            continue;
        };
        if let Some(hidden) = parts.iter().find(|p| is_hidden(p)) {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "{} would be read as part of the input although `{hidden}` is hidden (named with `.` or `_`, as temporary and leftover files are): move it out of the input, or name the files to read",
                    f.display()
                ),
            });
        }
        let reached = parts.iter().filter(|p| !p.contains('=')).count();
        if let (Some(g), Some(d)) = (glob, depth)
            && reached != d
        {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "`{g}` matches {} in a directory below: DataFusion's `*` crosses `/`; use `**` to read subdirectories, or a glob that reaches only the files meant",
                    f.display()
                ),
            });
        }
    }
    Ok(())
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
) -> Result<CheckedFiles> {
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
    if let Some((left, base)) = glob_left_out(url, ext, &files) {
        return Err(
            unlisted_error([&left]).unwrap_or_else(|| left_out(path, url, ext, &left, &base))
        );
    }
    let base = url.get_url().to_file_path().ok();
    if let Some(base) = &base {
        check_listed(path, url, &files, base)?;
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
        if let Some(e) = unlisted_error(skipped.iter().copied()) {
            return Err(e);
        }
        if let Some(first) = skipped.first() {
            // A file directly in the directory is skipped by no rule: the listing is stale.
            let message = match first.parent() == Some(path) {
                true => format!(
                    "{} file(s) are missing from DataFusion's listing of it, e.g. {}: this session's list-files cache holds the directory as it was first listed; run SET datafusion.runtime.list_files_cache_limit = '0' (pbg's own sessions keep no such cache)",
                    skipped.len(),
                    first.display()
                ),
                false => format!(
                    "{} file(s) in subdirectories that are not partition directories (`name=value`) would be skipped, e.g. {}: move them, or set datafusion.execution.listing_table_ignore_subdirectory = false",
                    skipped.len(),
                    first.display()
                ),
            };
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message,
            });
        }
    }
    if files.is_empty() {
        return Err(PbgError::Format {
            path: path.to_path_buf(),
            message: format!("no files match (extension `{ext}`)"),
        });
    }
    for f in &files {
        note_read(f);
    }
    let mut first: Option<(PathBuf, Vec<String>)> = None;
    // The Parquet files' schemas merged so far (DataFusion's merge error named no file).
    let mut merged: Option<arrow::datatypes::Schema> = None;
    for f in &files {
        if kind == FileKind::Parquet {
            // Without the file's own metadata (pandas writes its own per file), as DataFusion
            // merges them.
            let schema = arrow::datatypes::Schema::new(parquet_schema(f)?.fields().clone());
            merged = Some(match merged.take() {
                None => schema,
                Some(m) => arrow::datatypes::Schema::try_merge([m, schema])
                    .map_err(|e| PbgError::Format {
                        path: f.clone(),
                        message: format!(
                            "its column types do not merge with those of the files before it ({e}): Parquet files of one input must give each column one type"
                        ),
                    })?,
            });
        }
        let names: Vec<String> = match kind {
            // One empty file among others is no empty table: it is named as what it is.
            FileKind::Csv => csv_header(f, delimiter).map_err(|e| match e {
                PbgError::EmptyTable { path } if files.len() > 1 => PbgError::Format {
                    path,
                    message: "this file of the input holds no header and no rows (it is empty, or blank lines): remove it, or give the other files alone".into(),
                },
                e => e,
            })?,
            FileKind::Parquet => parquet_schema(f)?
                .fields()
                .iter()
                .map(|x| x.name().clone())
                .collect(),
        };
        super::check_unique_names(f, names.iter().map(String::as_str))?;
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
    let mut header = Vec::new();
    if kind == FileKind::Csv {
        header = first.map(|(_, names)| names).unwrap_or_default();
        for f in &files {
            quoting = quoting.max(match written_csv(f) {
                true => Quoting::Quoted,
                false => csv_quoting(f, delimiter, &header)?,
            });
        }
        // Read whole by DataFusion's reader, whose ragged-record error names neither the file
        // nor its line: checked here, file by file.
        if quoting == Quoting::LineBreaks {
            for f in &files {
                check_record_widths(f, delimiter, &header)?;
            }
        }
    }
    Ok(CheckedFiles {
        quoting,
        header,
        files,
        base,
    })
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
    /// A binary file read as CSV is named by its format; text that is not UTF-8 as before.
    #[test]
    fn binary_formats_read_as_csv_are_named() {
        let path = std::path::Path::new("in.csv");
        let message = |bytes: &[u8]| {
            super::first_record(bytes, path, b',')
                .unwrap_err()
                .to_string()
        };
        assert!(message(b"ARROW1\0\0\xff\xfe").contains("an Arrow IPC file"));
        assert!(message(b"PAR1\x15\x04\xff\xfe,x").contains("the extension .parquet"));
        assert!(message(&[0x1f, 0x8b, 8, 0, 0xff, 0xfe]).contains("gzip-compressed"));
        assert!(message(b"PK\x03\x04\xff\xfe").contains("export the sheet as CSV"));
        assert!(message(b"na\xffme,b\n").contains("field 1 of its first record"));
        // Text starting like a magic number is text.
        let fields = super::first_record(b"PAR1,b\n1,2\n", path, b',').unwrap();
        assert_eq!(fields, ["PAR1", "b"]);
        // A binary file whose first line happens to be UTF-8 (an uncompressed Parquet file) is
        // named too, not read as a header of control characters.
        assert!(message(b"PAR1\x15\x00\x15(\x15(,a\n").contains("the extension .parquet"));
        assert!(message(b"ARROW1\x00\x00x,y\n").contains("an Arrow IPC file"));
    }

    use super::*;

    /// The stamps of a glob input, and the files it matches, are taken whatever else its base
    /// directory holds: a named pipe there made the walk fail, which turned both checks off.
    #[test]
    fn a_named_pipe_beside_a_glob_leaves_its_checks_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.csv"), "x\n1\n").unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("notes.txt"))
            .status()
            .unwrap();
        assert!(made.success());
        let glob = dir.path().join("*.csv");
        let stamps = input_stamps(&glob).expect("the glob's files were stamped");
        assert_eq!(stamps.len(), 1);
        let (files, _) = glob_files(&listing_url(&glob).unwrap(), ".csv").unwrap();
        assert_eq!(files, vec![dir.path().join("a.csv")]);
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

    /// A header is UTF-8 or refused (its bytes were replaced by U+FFFD and released, and two
    /// files' different bytes read as one name); a file of no record (blank lines, a byte-order
    /// mark alone) is an empty table; a first record naming no column is refused, saying so.
    #[test]
    fn headers_that_are_not_text_or_name_nothing_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let header = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            csv_header(&path, b';').map_err(|e| e.to_string())
        };
        let e = header("latin1.csv", b"age;s\xe9x\n39;M\n").unwrap_err();
        assert!(e.contains("field 2") && e.contains("not UTF-8"), "{e}");
        let e = header("quoted.csv", b"\"a\xff\";b\n1;2\n").unwrap_err();
        assert!(e.contains("field 1") && e.contains("not UTF-8"), "{e}");
        for (name, bytes) in [
            ("blank.csv", &b"\n\r\n\n\n\n"[..]),
            ("bom.csv", b"\xEF\xBB\xBF"),
            ("bom-line.csv", b"\xEF\xBB\xBF\n"),
            ("nothing.csv", b""),
        ] {
            let e = header(name, bytes).unwrap_err();
            assert!(e.contains("empty"), "{name}: {e}");
        }
        let e = header("unnamed.csv", b"\"\"\nx\ny\n").unwrap_err();
        assert!(e.contains("names no column"), "{e}");
        assert_eq!(
            header("ok.csv", b"\n\nage;sex\n1;2\n"),
            Ok(vec!["age".into(), "sex".into()])
        );
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
    }
}
