//! ARX-format hierarchy files: no header, one row per leaf, `;` or `,` separated.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex};

use arrow::array::{Array, AsArray};
use arrow::csv::ReaderBuilder;
use arrow::datatypes::{DataType, Field, Schema};

use super::Hierarchy;
use crate::error::{PbgError, Result};
use crate::input::first_record;

/// The hierarchy files that are pipes, by the pipe (device and inode), with the bytes first read
/// from them: a pipe gives its bytes once, and a session loads a profile's hierarchies again for
/// each function call (`pbg sql`'s second load found the pipe empty, or waited for a writer gone).
/// Each pipe is held open, so its inode cannot be given to another pipe while its entry lives: a
/// pipe removed and another made at once got the same inode, and the old bytes.
#[cfg(unix)]
static PIPED: LazyLock<Mutex<PipedBytes>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// A pipe (held open) and its bytes, by its (device, inode).
#[cfg(unix)]
type PipedBytes = HashMap<(u64, u64), (std::fs::File, Arc<[u8]>)>;

/// The bytes of the hierarchy file `path`, read once and whole (`--qi age=<(...)` is a pipe: it
/// was read three times and sought back, which failed with "Illegal seek"); a pipe's bytes are
/// kept for the next load of it.
fn hierarchy_bytes(path: &Path) -> Result<Arc<[u8]>> {
    let io = |e| PbgError::io(path, e);
    // Its status only: opening a named pipe waits for a writer.
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_file() {
        return Ok(std::fs::read(path).map_err(io)?.into());
    }
    piped_bytes(path, &meta)
}

/// [`hierarchy_bytes`] of a pipe (`meta`: its status), kept in [`PIPED`].
#[cfg(unix)]
fn piped_bytes(path: &Path, meta: &std::fs::Metadata) -> Result<Arc<[u8]>> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let io = |e| PbgError::io(path, e);
    // A poisoned lock still holds whole entries: each is inserted in one step.
    let mut piped = PIPED.lock().unwrap_or_else(|p| p.into_inner());
    // Held open, a kept pipe's inode is its own: the same (device, inode) is the same pipe.
    if let Some((_, bytes)) = piped.get(&(meta.dev(), meta.ino())) {
        return Ok(bytes.clone());
    }
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;
    // The pipe as opened (the path may name another by now).
    let opened = file.metadata().map_err(io)?;
    let bytes: Arc<[u8]> = bytes.into();
    piped.insert((opened.dev(), opened.ino()), (file, bytes.clone()));
    Ok(bytes)
}

/// Elsewhere no (device, inode) tells one pipe from the next: read as it comes.
#[cfg(not(unix))]
fn piped_bytes(path: &Path, _meta: &std::fs::Metadata) -> Result<Arc<[u8]>> {
    Ok(std::fs::read(path)
        .map_err(|e| PbgError::io(path, e))?
        .into())
}

/// Loads an ARX hierarchy CSV for `column`; the delimiter is `;` if the first line has one, else `,`.
pub(super) fn load(column: &str, path: &Path) -> Result<Hierarchy> {
    let source = path.display().to_string();
    let err = |message: String| PbgError::Hierarchy {
        column: column.to_string(),
        source_name: source.clone(),
        message,
    };
    crate::input::note_read(path);
    let text = hierarchy_bytes(path)?;
    let line = text.split_inclusive(|&b| b == b'\n').next().unwrap_or(&[]);
    let first = std::str::from_utf8(line)
        .map_err(|_| err("its first line is not UTF-8 text: save the file as UTF-8".into()))?;
    if first.trim().is_empty() {
        return Err(err("the file is empty or starts with an empty line".into()));
    }
    // The first record as arrow will read it: quoted labels may hold either separator and line
    // breaks, and only separators outside quotes split it.
    let by_semicolon = first_record(&text, path, b';')?.len();
    let (delimiter, width) = if by_semicolon > 1 {
        (b';', by_semicolon)
    } else {
        (b',', first_record(&text, path, b',')?.len())
    };
    // A quote left open swallows the rest of the file into one field.
    if width == 1 && first.contains('"') {
        return Err(err(
            "its first row reads as one field: a `\"` opened there is never closed (a quoted label ends with `\"`; a quote inside it is written `\"\"`)".into(),
        ));
    }
    // A file separated by something else reads as one level: say which separator it uses.
    if width == 1
        && let Some(sep) = ['\t', '|'].into_iter().find(|c| first.contains(*c))
    {
        let name = if sep == '\t' { "tab" } else { "`|`" };
        return Err(err(format!(
            "its first line has no `;` or `,` but a {name}: the delimiter is probably wrong (ARX hierarchy files separate levels with `;` or `,`)"
        )));
    }
    let schema = Arc::new(Schema::new(
        (0..width)
            .map(|i| Field::new(format!("level{i}"), DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ));
    let reader = ReaderBuilder::new(schema)
        .with_header(false)
        .with_delimiter(delimiter)
        .build(&text[..])
        .map_err(|e| err(e.to_string()))?;
    let mut rows: Vec<Vec<String>> = Vec::new();
    for batch in reader {
        // arrow names the offending line of a ragged file.
        let batch = batch.map_err(|e| {
            err(format!(
                "{e} (every row needs {width} levels, as the first)"
            ))
        })?;
        let cols: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| c.as_string::<i32>())
            .collect();
        for r in 0..batch.num_rows() {
            let mut row = Vec::with_capacity(width);
            for (l, c) in cols.iter().enumerate() {
                if c.is_null(r) {
                    return Err(err(format!(
                        "row {} has an empty label at level {l}",
                        rows.len() + 1
                    )));
                }
                row.push(c.value(r).to_string());
            }
            rows.push(row);
        }
    }
    Hierarchy::from_rows(column, &source, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe's bytes are read once and kept for its next load; a pipe made after it is
    /// removed gets its own bytes (the kept one is held open, so its inode is not given to the
    /// new one: made at once, they shared it, and the new pipe's load gave the old bytes).
    #[test]
    fn a_pipe_is_read_once_and_a_new_pipe_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = |name: &str, text: &'static str| {
            let path = dir.path().join(name);
            let made = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .unwrap();
            assert!(made.success());
            let writer = {
                let path = path.clone();
                std::thread::spawn(move || std::fs::write(path, text))
            };
            (path, writer)
        };
        let (f, writer) = fifo("f", "a;*\n");
        assert_eq!(&hierarchy_bytes(&f).unwrap()[..], b"a;*\n");
        writer.join().unwrap().unwrap();
        // No writer now: a second read would wait for one for good.
        assert_eq!(&hierarchy_bytes(&f).unwrap()[..], b"a;*\n");
        std::fs::remove_file(&f).unwrap();
        let (g, writer) = fifo("g", "b;*\n");
        assert_eq!(&hierarchy_bytes(&g).unwrap()[..], b"b;*\n");
        writer.join().unwrap().unwrap();
    }

    /// The levels of `text` loaded as an ARX file.
    fn levels(text: &str) -> Result<Vec<Vec<String>>> {
        let dir = tempfile::tempdir().map_err(|e| PbgError::io("tempdir", e))?;
        let path = dir.path().join("h.csv");
        std::fs::write(&path, text).map_err(|e| PbgError::io(&path, e))?;
        let h = load("q", &path)?;
        Ok((0..=h.height())
            .map(|l| h.level(l).labels.clone())
            .collect())
    }

    /// A first row whose quoted label holds a line break or the other separator has the levels
    /// arrow reads (the first line alone would cut it short), with `;` and with `,`; a separator
    /// inside a field that does not start with a quote still splits it, as arrow splits it.
    #[test]
    fn quoted_first_labels_keep_their_line_breaks_and_separators() {
        let want = |a: &str, b: &str| vec![vec![a.to_string(), b.to_string()], vec!["*".into()]];
        assert_eq!(levels("\"a\nb\";*\nc;*\n").unwrap(), want("a\nb", "c"));
        assert_eq!(levels("\"a\r\nb\",*\nc,*\n").unwrap(), want("a\r\nb", "c"));
        assert_eq!(levels("\"a;b\",*\nc,*\n").unwrap(), want("a;b", "c"));
        assert_eq!(levels("\"a,b\";*\nc;*\n").unwrap(), want("a,b", "c"));
        assert_eq!(
            levels("a\"b;*\nc;*\n").unwrap(),
            want("a\"b", "c"),
            "a quote inside a field is a character"
        );
        let open = levels("\"a;*\nc;*\n").unwrap_err().to_string();
        assert!(open.contains("never closed"), "{open}");
    }
}
