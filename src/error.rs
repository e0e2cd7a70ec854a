//! Typed errors of the engine. Every message names the culprit: file, column, value, row.

use std::path::PathBuf;

/// Result alias used throughout the library.
pub type Result<T, E = PbgError> = std::result::Result<T, E>;

/// Everything that can go wrong between reading an input and writing a release.
#[derive(Debug, thiserror::Error)]
pub enum PbgError {
    /// A file could not be opened, read, written or renamed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A CSV or Parquet file could not be parsed.
    #[error("{path}: {message}")]
    Format {
        /// The file concerned.
        path: PathBuf,
        /// What the reader reported (it names the line for ragged CSV rows).
        message: String,
    },
    /// The profile (TOML or flags) is malformed or inconsistent.
    #[error("profile {origin}: {message}")]
    Profile {
        /// The config file, or `command line`.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// A column named by the profile is not in the input.
    #[error("{path}: no column `{column}` (the columns are: {available})")]
    UnknownColumn {
        /// The input file.
        path: PathBuf,
        /// The missing column.
        column: String,
        /// The columns the file has, comma separated.
        available: String,
    },
    /// A hierarchy is malformed (ragged, not nested, too few levels, duplicate leaf, ...).
    #[error("hierarchy for `{column}` ({source_name}): {message}")]
    Hierarchy {
        /// The QI the hierarchy belongs to.
        column: String,
        /// Where it came from: a file path or `inline table`, `mask`, ...
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// A value present in the data is not a leaf of its hierarchy.
    #[error(
        "column `{column}`: value `{value}` (first at data row {row}) is not a leaf of its hierarchy ({source_name})"
    )]
    ValueNotInHierarchy {
        /// The QI column.
        column: String,
        /// The value's text form.
        value: String,
        /// 1-based data row (header excluded) of its first occurrence.
        row: usize,
        /// Where the hierarchy came from.
        source_name: String,
    },
    /// A null where the profile does not allow one.
    #[error("column `{column}`: null at data row {row}; {hint}")]
    NullValue {
        /// The column.
        column: String,
        /// 1-based data row.
        row: usize,
        /// How to fix it.
        hint: String,
    },
    /// The input holds no rows.
    #[error("{path}: the table is empty (no data rows)")]
    EmptyTable {
        /// The input file.
        path: PathBuf,
    },
    /// A node does not fit the lattice.
    #[error("node {node}: {message}")]
    Node {
        /// The node as given.
        node: String,
        /// What is wrong (length, level out of range, unparsable level).
        message: String,
    },
    /// The suppression limit could not be understood.
    #[error(
        "suppression limit `{text}`: {message} (write a row count such as 301 or a percentage such as 1%)"
    )]
    SuppressionLimit {
        /// The text given.
        text: String,
        /// What is wrong.
        message: String,
    },
    /// The generalized codes of all QIs (plus the sensitive code) do not fit one 64-bit key.
    #[error(
        "the quasi-identifiers need {bits} bits to pack a class key ({detail}); at most 63 fit: use fewer QIs or coarser leaves"
    )]
    KeyTooLarge {
        /// Bits needed.
        bits: u32,
        /// Bits per column.
        detail: String,
    },
    /// A release failed its verification after it was written.
    #[error("verification of {path} failed: {message}")]
    Verification {
        /// The temporary file that was checked (it is removed).
        path: PathBuf,
        /// What did not hold.
        message: String,
    },
    /// An argument of a search, comparison or experiment is invalid.
    #[error("{name}: {message}")]
    Argument {
        /// The argument (e.g. `--objectives`).
        name: String,
        /// What is wrong.
        message: String,
    },
    /// An Arrow kernel failed (an internal invariant, reported rather than panicking).
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
}

/// The most columns an unknown-column error lists whole.
const LISTED_COLUMNS: usize = 40;

/// The columns an unknown-column error lists of a wider input: those nearest the name wanted.
const NEAREST_COLUMNS: usize = 10;

/// The edit (Levenshtein) distance between two texts, by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Column `names` for a message about a column named `wanted`: all of them up to
/// [`LISTED_COLUMNS`]; of more (a wide table's thousands), the [`NEAREST_COLUMNS`] nearest to the
/// name wanted (fewest edits, ignoring case), in their order, and how many others.
pub(crate) fn column_list(wanted: &str, names: &[&str]) -> String {
    if names.len() <= LISTED_COLUMNS {
        return names.join(", ");
    }
    let wanted = wanted.to_lowercase();
    let mut near: Vec<(usize, usize, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (edits(&wanted, &n.to_lowercase()), i, *n))
        .collect();
    near.sort_unstable();
    let mut shown: Vec<(usize, &str)> = near[..NEAREST_COLUMNS]
        .iter()
        .map(|&(_, i, n)| (i, n))
        .collect();
    shown.sort_unstable();
    format!(
        "{} and {} more; of the {} columns, those listed are the nearest to the name",
        shown.iter().map(|&(_, n)| n).collect::<Vec<_>>().join(", "),
        names.len() - NEAREST_COLUMNS,
        names.len()
    )
}

impl PbgError {
    /// A profile error from the given origin.
    pub fn profile(origin: impl Into<String>, message: impl Into<String>) -> Self {
        PbgError::Profile {
            origin: origin.into(),
            message: message.into(),
        }
    }

    /// An invalid argument.
    pub fn argument(name: impl Into<String>, message: impl Into<String>) -> Self {
        PbgError::Argument {
            name: name.into(),
            message: message.into(),
        }
    }

    /// A column named `column` (what the profile or a flag wanted) missing from the input at
    /// `path`, whose columns are `names` ([`column_list`]).
    pub fn unknown_column<'a>(
        path: PathBuf,
        column: String,
        wanted: &str,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let names: Vec<&str> = names.into_iter().collect();
        let available = column_list(wanted, &names);
        PbgError::UnknownColumn {
            path,
            column,
            available,
        }
    }

    /// The same error naming argument `name` instead (for an engine check run on another flag).
    pub fn for_argument(self, name: &str) -> Self {
        match self {
            PbgError::Argument { message, .. } => PbgError::Argument {
                name: name.to_string(),
                message,
            },
            other => other,
        }
    }

    /// An I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        PbgError::Io {
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edit distances by characters, and an unknown column of a wide input listed by the
    /// nearest names (in the input's order) and a count, of a narrow one whole.
    #[test]
    fn unknown_columns_list_the_nearest_of_a_wide_input() {
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("âge", "age"), 1);
        let wide: Vec<String> = std::iter::once("zip".to_string())
            .chain((0..3000).map(|i| format!("x{i}")))
            .collect();
        let e = PbgError::unknown_column(
            "w.csv".into(),
            "X12".into(),
            "X12",
            wide.iter().map(String::as_str),
        );
        assert_eq!(
            e.to_string(),
            "w.csv: no column `X12` (the columns are: x1, x2, x10, x11, x12, x13, x14, x15, x16, x17 and 2991 more; of the 3001 columns, those listed are the nearest to the name)"
        );
        let e = PbgError::unknown_column("n.csv".into(), "b".into(), "b", ["a", "c"]);
        assert_eq!(
            e.to_string(),
            "n.csv: no column `b` (the columns are: a, c)"
        );
    }
}
