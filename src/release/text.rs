//! The release of a node over batches held as text columns (CSV inputs): QIs through the release
//! plan's generalization kernel, the plan's suppressed-class filter, identifiers dropped, other
//! columns as read — encoded as CSV with the fingerprint of every row. Batches are released
//! independently (in parallel) and appended to the file in input order.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::filter;
use arrow::datatypes::{DataType, UInt32Type};

use super::fingerprint::Fingerprint;
use super::plan::suppression;
use super::udf::SuppressedClasses;
use crate::encode::TextColumn;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::hierarchy::{Hierarchy, generalize_with};
use crate::input::Input;
use crate::io::CsvQuoting;

/// Whether a column's values are text as read, so that a CSV release writes them byte for byte.
pub fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// One QI's generalization at the node.
#[derive(Debug)]
struct QiLevel {
    name: String,
    hierarchy: Arc<Hierarchy>,
    level: u8,
    null_as: Option<String>,
}

/// The release of one node over text batches; owns what it needs, so batches can be released on
/// any thread.
#[derive(Debug)]
pub struct TextRelease {
    input: Input,
    qis: Vec<QiLevel>,
    /// Per output column: the input column and, for a QI, its index.
    columns: Vec<(usize, Option<usize>)>,
    names: Vec<String>,
    suppressed: Option<SuppressedClasses>,
    quoting: CsvQuoting,
}

/// A batch's release: CSV lines, their fingerprint and their number.
#[derive(Debug)]
pub struct ReleasedText {
    bytes: Vec<u8>,
    fingerprint: Fingerprint,
    rows: u64,
    /// Whether a value of the batch may hold a line break.
    line_breaks: bool,
}

impl TextRelease {
    /// The release of `node` of `ev`'s dataset.
    pub fn new(ev: &Evaluator, node: &[u8]) -> Result<Self> {
        let ds = ev.dataset();
        let indices = ev.evaluate(node)?;
        let mut columns = Vec::new();
        let mut names = Vec::new();
        for (c, field) in ds.schema.fields().iter().enumerate() {
            if ds.identifiers.contains(&c) {
                continue;
            }
            columns.push((c, ds.qis.iter().position(|q| q.name == *field.name())));
            names.push(field.name().clone());
        }
        let qis = ds
            .qis
            .iter()
            .enumerate()
            .map(|(d, q)| QiLevel {
                name: q.name.clone(),
                hierarchy: q.hierarchy.clone(),
                level: node[d],
                null_as: ds.profile.qis[d].null_as.clone(),
            })
            .collect();
        Ok(TextRelease {
            input: ds.input().clone(),
            qis,
            columns,
            names,
            suppressed: suppression(ev, node, indices.threshold)?,
            quoting: CsvQuoting::default(),
        })
    }

    /// The release of `rows` rows given as the text of every input column.
    pub fn batch(&self, rows: usize, columns: &[TextColumn]) -> Result<ReleasedText> {
        let mut out: Vec<TextColumn> = Vec::with_capacity(self.columns.len());
        let mut groups: Vec<(usize, UInt32Array)> = Vec::with_capacity(self.qis.len());
        for &(c, qi) in &self.columns {
            let text = &columns[c];
            let Some(d) = qi else {
                out.push(text.clone());
                continue;
            };
            // The plan's kernel, over the batch's dictionary.
            let dict: ArrayRef = Arc::new(crate::input::text::dictionary(
                text.keys.clone(),
                Arc::new(text.values.clone()),
            )?);
            let q = &self.qis[d];
            let label = generalize_with(&q.hierarchy, q.level, &dict, q.null_as.as_deref())?;
            let label = label.as_dictionary::<UInt32Type>();
            if label.keys().null_count() > 0 {
                return Err(PbgError::Format {
                    path: self.input.as_path(),
                    message: format!(
                        "column `{}` holds a null and its profile declares no `null_as`",
                        q.name
                    ),
                });
            }
            groups.push((d, label.keys().clone()));
            out.push(TextColumn {
                keys: label.keys().clone(),
                values: label.values().as_string::<i32>().clone(),
            });
        }
        let mut kept = rows;
        if let Some(suppressed) = &self.suppressed {
            groups.sort_by_key(|(d, _)| *d);
            let codes: Vec<&[u32]> = groups.iter().map(|(_, g)| g.values().as_ref()).collect();
            let keep = suppressed.keep(&codes, rows);
            kept = keep.true_count();
            if kept < rows {
                for column in &mut out {
                    column.keys = filter(&column.keys, &keep)?.as_primitive().clone();
                }
            }
        }
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let mut fingerprint = Fingerprint::default();
        fingerprint.add_texts(&names, &out, kept);
        let mut bytes = Vec::new();
        let line_breaks = self.quoting.rows(&out, kept, &mut bytes);
        Ok(ReleasedText {
            bytes,
            fingerprint,
            rows: kept as u64,
            line_breaks,
        })
    }
}

/// A CSV release being written: the header, then released batches appended in order.
pub struct CsvRelease {
    path: PathBuf,
    writer: std::io::BufWriter<std::fs::File>,
    rows: u64,
    fingerprint: Fingerprint,
    /// Whether a value written may hold a line break.
    line_breaks: bool,
}

impl CsvRelease {
    /// Creates `path` and writes the header of `release`.
    pub fn create(path: &Path, release: &TextRelease) -> Result<Self> {
        let file = std::fs::File::create(path).map_err(|e| PbgError::io(path, e))?;
        // A released batch (hundreds of KiB) larger than the buffer goes to the file directly:
        // with a 1 MiB buffer every batch was first copied into it, 2.5 GB on a 30 M-row release.
        let mut writer = std::io::BufWriter::with_capacity(64 << 10, file);
        let names: Vec<&str> = release.names.iter().map(String::as_str).collect();
        writer
            .write_all(&release.quoting.header(&names))
            .map_err(|e| PbgError::io(path, e))?;
        Ok(CsvRelease {
            path: path.to_path_buf(),
            writer,
            rows: 0,
            fingerprint: Fingerprint::default(),
            line_breaks: release.names.iter().any(|n| n.contains(['\n', '\r'])),
        })
    }

    /// Appends a released batch.
    pub fn append(&mut self, part: ReleasedText) -> Result<()> {
        self.writer
            .write_all(&part.bytes)
            .map_err(|e| PbgError::io(&self.path, e))?;
        self.fingerprint.merge(&part.fingerprint);
        self.rows += part.rows;
        self.line_breaks |= part.line_breaks;
        Ok(())
    }

    /// Flushes and closes the file (syncing it is the atomic output's job); the rows written and
    /// their fingerprint. A file holding no value quoted across lines is noted as such, for its
    /// verification ([`crate::input::note_written_csv`]).
    pub fn finish(self) -> Result<(u64, Fingerprint)> {
        let path = self.path;
        let file = self
            .writer
            .into_inner()
            .map_err(|e| PbgError::io(&path, e.into_error()))?;
        drop(file);
        if !self.line_breaks {
            crate::input::note_written_csv(&path);
        }
        Ok((self.rows, self.fingerprint))
    }
}
