//! Pass 2 of a streamed anonymization: the input is read again, part by part (row groups decoded in
//! parallel, written in order by a writer thread), each QI is replaced by its label at the node,
//! rows of suppressed classes and identifier columns are dropped, and the release is written
//! batch by batch to a temporary file. Memory holds a few parts at a time, never the table.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::sync_channel;

use arrow::array::{Array, ArrayRef, BooleanArray, DictionaryArray, StringArray, UInt32Array};
use arrow::compute::{cast, filter};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::compute_leaves;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;

use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::io::{OutputFormat, StreamInput, text_column};
use crate::statistics::LeafMaps;

/// Rows per Parquet row group of a release.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// Counts of a streamed release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamedRows {
    /// Rows read.
    pub rows_in: u64,
    /// Rows written.
    pub rows_out: u64,
}

/// How each input column appears in the release.
#[derive(Clone)]
enum Source {
    Qi(usize),
    Keep(usize),
}

/// What pass 2 needs per QI: text → group code at the node's level, and the level's labels.
struct QiMap {
    column: usize,
    group_of_text: HashMap<String, u32>,
    labels: ArrayRef,
    null_group: Option<u32>,
}

fn schema_of(
    ev: &Evaluator,
    input: &StreamInput,
    format: OutputFormat,
) -> (SchemaRef, Vec<Source>) {
    let ds = ev.dataset();
    let qi_type = match format {
        OutputFormat::Parquet => {
            DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
        }
        OutputFormat::Csv => DataType::Utf8,
    };
    let mut fields = Vec::new();
    let mut sources = Vec::new();
    for (i, f) in input.schema.fields().iter().enumerate() {
        if ds.identifiers.contains(&i) {
            continue;
        }
        match ds.qis.iter().position(|q| q.column == i) {
            Some(d) => {
                fields.push(Field::new(f.name(), qi_type.clone(), false));
                sources.push(Source::Qi(d));
            }
            None => {
                fields.push(f.as_ref().clone());
                sources.push(Source::Keep(i));
            }
        }
    }
    (Arc::new(Schema::new(fields)), sources)
}

/// The class keys (engine layout) of the classes the suppression rule removes at `node`.
fn suppressed_classes(ev: &Evaluator, node: &[u8], threshold: u64) -> Result<HashSet<u64>> {
    if threshold == 0 {
        return Ok(HashSet::new());
    }
    let tables = ev.tables(node)?;
    Ok(tables
        .sens
        .classes()
        .filter(|c| c.size <= threshold)
        .map(|c| c.key)
        .collect())
}

/// Streams the release of `node` from the profile's input to `path` (`format`), using the
/// statistics dataset of `ev` and its `leaf_maps` from pass 1, and syncs the file.
pub fn write_release_stream(
    ev: &Evaluator,
    leaf_maps: &LeafMaps,
    node: &[u8],
    path: &Path,
    format: OutputFormat,
) -> Result<StreamedRows> {
    let ds = ev.dataset();
    let indices = ev.evaluate(node)?;
    let suppressed = suppressed_classes(ev, node, indices.threshold)?;
    let input = StreamInput::open(&ds.profile.input, ds.profile.delimiter)?;
    let (schema, sources) = schema_of(ev, &input, format);
    let qmaps: Vec<QiMap> = ds
        .qis
        .iter()
        .enumerate()
        .map(|(d, q)| {
            let level = q.hierarchy.level(node[d]);
            let group_of_text: HashMap<String, u32> = leaf_maps[d]
                .iter()
                .map(|(t, &leaf)| (t.clone(), level.group_of_leaf[leaf as usize]))
                .collect();
            let null_group = ds.profile.qis[d]
                .null_as
                .as_ref()
                .and_then(|t| group_of_text.get(t).copied());
            QiMap {
                column: q.column,
                group_of_text,
                labels: Arc::new(StringArray::from_iter_values(level.labels.iter())),
                null_group,
            }
        })
        .collect();
    let layout = ev.layout();
    let shifts: Vec<u32> = (0..ds.qis.len()).map(|d| layout.shift(d)).collect();

    // One batch in, one release batch out.
    let transform = |first_row: u64, batch: RecordBatch| -> Result<RecordBatch> {
        let n = batch.num_rows();
        let mut groups: Vec<Vec<u32>> = Vec::with_capacity(qmaps.len());
        for (d, m) in qmaps.iter().enumerate() {
            let text = text_column(batch.column(m.column))?;
            let mut local = Vec::with_capacity(text.values.len());
            for i in 0..text.values.len() {
                let v = text.values.value(i);
                // Values absent from pass 1 can only come from unused dictionary entries or a
                // file changed between the passes; the latter is caught below, per row.
                local.push(m.group_of_text.get(v).copied().unwrap_or(u32::MAX));
            }
            let mut g = Vec::with_capacity(n);
            for r in 0..n {
                let code = if text.keys.is_null(r) {
                    m.null_group.unwrap_or(u32::MAX)
                } else {
                    local[text.keys.values()[r] as usize]
                };
                if code == u32::MAX {
                    return Err(PbgError::Format {
                        path: input.path.clone(),
                        message: format!(
                            "column `{}` row {}: a value not seen in the first pass (was the input changed during the run?)",
                            ds.qis[d].name,
                            first_row + r as u64 + 1
                        ),
                    });
                }
                g.push(code);
            }
            groups.push(g);
        }
        let keep: Option<BooleanArray> = (!suppressed.is_empty()).then(|| {
            (0..n)
                .map(|r| {
                    let key = groups
                        .iter()
                        .zip(&shifts)
                        .fold(0u64, |k, (g, &s)| k | ((g[r] as u64) << s));
                    Some(!suppressed.contains(&key))
                })
                .collect()
        });
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(sources.len());
        for s in &sources {
            columns.push(match s {
                Source::Keep(i) => match &keep {
                    Some(k) => filter(batch.column(*i), k)?,
                    None => batch.column(*i).clone(),
                },
                Source::Qi(d) => {
                    let keys = UInt32Array::from(std::mem::take(&mut groups[*d]));
                    let keys = match &keep {
                        Some(k) => filter(&keys, k)?,
                        None => Arc::new(keys),
                    };
                    let keys = keys
                        .as_any()
                        .downcast_ref::<UInt32Array>()
                        .cloned()
                        .unwrap_or_else(|| UInt32Array::from(Vec::<u32>::new()));
                    let dict =
                        DictionaryArray::<UInt32Type>::try_new(keys, qmaps[*d].labels.clone())?;
                    match format {
                        OutputFormat::Parquet => Arc::new(dict) as ArrayRef,
                        OutputFormat::Csv => cast(&dict, &DataType::Utf8)?,
                    }
                }
            });
        }
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    };

    // The writer runs on its own thread so that encoding overlaps decoding.
    let window = rayon::current_num_threads().max(1);
    let (tx, rx) = sync_channel::<RecordBatch>(2 * window + 2);
    let file = File::create(path).map_err(|e| PbgError::io(path, e))?;
    let writer_schema = schema.clone();
    let out_path = path.to_path_buf();
    let writer = std::thread::spawn(move || write_all(file, &out_path, format, writer_schema, rx));
    let mut rows_in = 0u64;
    let produced = (|| -> Result<()> {
        for chunk in input.parts.chunks(window) {
            if chunk.len() == 1 {
                input.read_part(&chunk[0], &mut |row, batch| {
                    rows_in += batch.num_rows() as u64;
                    let out = transform(row, batch)?;
                    tx.send(out).map_err(|_| writer_gone(path))
                })?;
                continue;
            }
            let parts: Vec<(u64, Vec<RecordBatch>)> = chunk
                .par_iter()
                .map(|part| {
                    let mut out = Vec::new();
                    let mut rows = 0u64;
                    input.read_part(part, &mut |row, batch| {
                        rows += batch.num_rows() as u64;
                        out.push(transform(row, batch)?);
                        Ok(())
                    })?;
                    Ok((rows, out))
                })
                .collect::<Result<_>>()?;
            for (rows, batches) in parts {
                rows_in += rows;
                for b in batches {
                    tx.send(b).map_err(|_| writer_gone(path))?;
                }
            }
        }
        Ok(())
    })();
    drop(tx);
    let written = writer.join().map_err(|_| writer_gone(path)).and_then(|r| r);
    // The writer's own error explains a producer's failure to send.
    let rows_out = written?;
    produced?;
    Ok(StreamedRows { rows_in, rows_out })
}

fn writer_gone(path: &Path) -> PbgError {
    PbgError::Format {
        path: path.to_path_buf(),
        message: "the release writer stopped".into(),
    }
}

fn write_fail(path: &Path, e: impl std::fmt::Display) -> PbgError {
    PbgError::Format {
        path: path.to_path_buf(),
        message: format!("while writing: {e}"),
    }
}

/// Writes every batch received, then syncs; returns the rows written.
fn write_all(
    file: File,
    path: &Path,
    format: OutputFormat,
    schema: SchemaRef,
    rx: std::sync::mpsc::Receiver<RecordBatch>,
) -> Result<u64> {
    let mut rows = 0u64;
    match format {
        OutputFormat::Csv => {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(BufWriter::new(file));
            for b in rx {
                rows += b.num_rows() as u64;
                w.write(&b).map_err(|e| write_fail(path, e))?;
            }
            let file = w
                .into_inner()
                .into_inner()
                .map_err(|e| write_fail(path, e))?;
            file.sync_all().map_err(|e| PbgError::io(path, e))?;
        }
        OutputFormat::Parquet => {
            let props = WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .build();
            // The Arrow writer sets up the schema (with its Arrow form, so dictionaries read back
            // as dictionaries); row groups are then encoded one column per task, because the
            // dictionary interning of text columns is the most expensive step of the pipeline.
            let w = ArrowWriter::try_new(file, schema.clone(), Some(props))
                .map_err(|e| write_fail(path, e))?;
            let (mut writer, factory) = w
                .into_serialized_writer()
                .map_err(|e| write_fail(path, e))?;
            let mut pending: Vec<RecordBatch> = Vec::new();
            let mut pending_rows = 0usize;
            let mut groups = 0usize;
            let mut flush = |pending: &mut Vec<RecordBatch>,
                             writer: &mut parquet::file::writer::SerializedFileWriter<File>|
             -> Result<()> {
                if pending.is_empty() {
                    return Ok(());
                }
                let columns = factory
                    .create_column_writers(groups)
                    .map_err(|e| write_fail(path, e))?;
                let fields = schema.fields();
                let chunks = columns
                    .into_par_iter()
                    .enumerate()
                    .map(|(i, mut cw)| {
                        for b in pending.iter() {
                            for leaf in compute_leaves(&fields[i], b.column(i))
                                .map_err(|e| write_fail(path, e))?
                            {
                                cw.write(&leaf).map_err(|e| write_fail(path, e))?;
                            }
                        }
                        cw.close().map_err(|e| write_fail(path, e))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut rg = writer.next_row_group().map_err(|e| write_fail(path, e))?;
                for c in chunks {
                    c.append_to_row_group(&mut rg)
                        .map_err(|e| write_fail(path, e))?;
                }
                rg.close().map_err(|e| write_fail(path, e))?;
                groups += 1;
                pending.clear();
                Ok(())
            };
            for b in rx {
                rows += b.num_rows() as u64;
                pending_rows += b.num_rows();
                pending.push(b);
                if pending_rows >= ROW_GROUP_ROWS {
                    flush(&mut pending, &mut writer)?;
                    pending_rows = 0;
                }
            }
            flush(&mut pending, &mut writer)?;
            let file = writer.into_inner().map_err(|e| write_fail(path, e))?;
            file.sync_all().map_err(|e| PbgError::io(path, e))?;
        }
    }
    Ok(rows)
}

/// What a streamed `anonymize` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StreamSummary {
    /// The file written.
    pub output: std::path::PathBuf,
    /// The node applied.
    pub node: crate::lattice::Node,
    /// Input rows.
    pub rows_in: u64,
    /// Rows in the release.
    pub rows_released: u64,
    /// Rows suppressed.
    pub suppressed: u64,
    /// The suppression threshold j: rows of classes of size ≤ j were suppressed.
    pub threshold: u64,
    /// The node's indices, from the statistics.
    pub indices: crate::indices::NodeIndices,
    /// The release passed the independent check.
    pub verified: bool,
    /// The indices recomputed from the written file.
    pub check: super::check::ReleaseCheck,
    /// Seconds per phase.
    pub timings: Timings,
}

/// Seconds spent in each phase of a streamed anonymization.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Timings {
    /// Pass 1: reading the input into class statistics.
    pub statistics_s: f64,
    /// Choosing the node.
    pub choice_s: f64,
    /// Pass 2: writing the release.
    pub release_s: f64,
    /// Re-reading and checking the release.
    pub verify_s: f64,
    /// All of it.
    pub total_s: f64,
}

/// The whole batch job: pass 1 into statistics, `choose` a node on them, pass 2 into a temporary
/// file beside `output`, the independent check of that file, then the rename. A failure at any
/// step (or a kill) leaves `output` as it was.
pub fn anonymize_stream(
    profile: &crate::profile::Profile,
    choose: &dyn Fn(&Evaluator) -> Result<crate::lattice::Node>,
    output: &Path,
) -> Result<StreamSummary> {
    use std::time::Instant;
    let start = Instant::now();
    let file = crate::io::AtomicFile::new(output)?;
    let (dataset, leaf_maps) = crate::encode::Dataset::load_statistics(profile)?;
    let ev = Evaluator::new(Arc::new(dataset))?;
    let t1 = Instant::now();
    let node = choose(&ev)?;
    let indices = ev.evaluate(&node)?;
    let t2 = Instant::now();
    let format = OutputFormat::from_path(output);
    let rows = write_release_stream(&ev, &leaf_maps, &node, file.temp_path(), format)?;
    let t3 = Instant::now();
    if rows.rows_in != ev.dataset().num_tuples() {
        return Err(PbgError::Format {
            path: profile.input.clone(),
            message: format!(
                "{} rows in the second pass, {} in the first (was the input changed during the run?)",
                rows.rows_in,
                ev.dataset().num_tuples()
            ),
        });
    }
    let check = super::check::check_release(ev.dataset(), file.temp_path(), b',', Some(&node))?;
    super::check::confirm(&ev, &check, &indices, file.temp_path())?;
    file.commit()?;
    let t4 = Instant::now();
    let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
    Ok(StreamSummary {
        output: output.to_path_buf(),
        node,
        rows_in: rows.rows_in,
        rows_released: rows.rows_out,
        suppressed: indices.suppressed,
        threshold: indices.threshold,
        indices,
        verified: true,
        check,
        timings: Timings {
            statistics_s: secs(start, t1),
            choice_s: secs(t1, t2),
            release_s: secs(t2, t3),
            verify_s: secs(t3, t4),
            total_s: secs(start, t4),
        },
    })
}
