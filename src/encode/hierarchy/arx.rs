//! ARX-format hierarchy files: no header, one row per leaf, `;` or `,` separated.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::csv::ReaderBuilder;
use arrow::datatypes::{DataType, Field, Schema};

use super::Hierarchy;
use crate::error::{PbgError, Result};
use crate::input::first_record;

/// Loads an ARX hierarchy CSV for `column`; the delimiter is `;` if the first line has one, else `,`.
pub(super) fn load(column: &str, path: &Path) -> Result<Hierarchy> {
    let source = path.display().to_string();
    let err = |message: String| PbgError::Hierarchy {
        column: column.to_string(),
        source_name: source.clone(),
        message,
    };
    crate::input::note_read(path);
    // Read once, whole: a hierarchy given as a pipe (`--qi age=<(...)`) cannot be read again
    // (its second read failed with "Illegal seek").
    let text = std::fs::read(path).map_err(|e| PbgError::io(path, e))?;
    let line = text.split_inclusive(|&b| b == b'\n').next().unwrap_or(&[]);
    let first = std::str::from_utf8(line).map_err(|_| {
        PbgError::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ),
        )
    })?;
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
        .build(text.as_slice())
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
