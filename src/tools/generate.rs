//! Scale data for benchmarks: `adult-like` tables drawn row by row from the empirical joint
//! distribution of the shipped adult data (a seeded bootstrap), with an `id` column first. Rows
//! are produced in chunks of one Parquet row group, each from its own seed derived from the
//! user's seed and the chunk index, so the file is the same whatever the thread count.

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, UInt32Array};
use arrow::compute::{cast, concat_batches, take};
use arrow::csv::ReaderBuilder;
use arrow::csv::reader::Format;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;

use crate::error::{PbgError, Result};
use crate::io::{AtomicFile, OutputFormat};

/// The adult data shipped in `datasets/adult` (30162 rows), built into the binary.
const ADULT_CSV: &[u8] = include_bytes!("../../datasets/adult/adult.csv");

/// Rows per generated chunk (one Parquet row group).
const CHUNK_ROWS: usize = 1 << 20;

/// The adult table as one batch, text columns dictionary-encoded.
fn adult_source() -> Result<RecordBatch> {
    let format = Format::default().with_header(true).with_delimiter(b';');
    let (schema, _) = format
        .infer_schema(Cursor::new(ADULT_CSV), None)
        .map_err(|e| PbgError::Format {
            path: "adult.csv (built in)".into(),
            message: e.to_string(),
        })?;
    let reader = ReaderBuilder::new(Arc::new(schema))
        .with_format(format)
        .build(Cursor::new(ADULT_CSV))?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let batch = concat_batches(&batches[0].schema(), &batches)?;
    let dict = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        if f.data_type() == &DataType::Utf8 {
            fields.push(Field::new(f.name(), dict.clone(), false));
            columns.push(cast(c, &dict)?);
        } else {
            fields.push(Field::new(f.name(), f.data_type().clone(), false));
            columns.push(c.clone());
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// SplitMix64: decorrelates the seeds of consecutive chunks.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn chunk(
    source: &RecordBatch,
    schema: &SchemaRef,
    seed: u64,
    index: u64,
    start: u64,
    len: usize,
) -> Result<RecordBatch> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed ^ mix(index)));
    let n = source.num_rows() as u32;
    let picks: UInt32Array = (0..len).map(|_| rng.random_range(0..n)).collect();
    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
        (start..start + len as u64).map(|i| i as i64),
    ))];
    for c in source.columns() {
        columns.push(take(c, &picks, None)?);
    }
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// Writes `rows` adult-like rows drawn with `seed` to `output` (Parquet, or CSV by extension),
/// atomically. Returns the rows written.
pub fn adult_like(rows: u64, seed: u64, output: &Path) -> Result<u64> {
    if rows == 0 {
        return Err(PbgError::argument("rows", "must be at least 1".to_string()));
    }
    let source = adult_source()?;
    let mut fields = vec![Field::new("id", DataType::Int64, false)];
    fields.extend(source.schema().fields().iter().map(|f| f.as_ref().clone()));
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let format = OutputFormat::of(output)?;
    let file = AtomicFile::new(output)?;
    let out =
        std::fs::File::create(file.temp_path()).map_err(|e| PbgError::io(file.temp_path(), e))?;
    let fail = |e: &dyn std::fmt::Display| PbgError::Format {
        path: output.to_path_buf(),
        message: format!("while writing: {e}"),
    };
    let chunks: Vec<(u64, u64, usize)> = (0..rows.div_ceil(CHUNK_ROWS as u64))
        .map(|i| {
            let start = i * CHUNK_ROWS as u64;
            (i, start, (rows - start).min(CHUNK_ROWS as u64) as usize)
        })
        .collect();
    let window = rayon::current_num_threads().max(1);
    match format {
        OutputFormat::Parquet => {
            let props = WriterProperties::builder()
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .set_max_row_group_row_count(Some(CHUNK_ROWS))
                .build();
            let mut w =
                ArrowWriter::try_new(out, schema.clone(), Some(props)).map_err(|e| fail(&e))?;
            for group in chunks.chunks(window) {
                let batches: Vec<RecordBatch> = group
                    .par_iter()
                    .map(|&(i, start, len)| chunk(&source, &schema, seed, i, start, len))
                    .collect::<Result<_>>()?;
                for b in batches {
                    w.write(&b).map_err(|e| fail(&e))?;
                }
            }
            let out = w.into_inner().map_err(|e| fail(&e))?;
            out.sync_all().map_err(|e| PbgError::io(output, e))?;
        }
        OutputFormat::Csv => {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(std::io::BufWriter::new(out));
            for &(i, start, len) in &chunks {
                let b = chunk(&source, &schema, seed, i, start, len)?;
                let cols = b
                    .columns()
                    .iter()
                    .map(|c| match c.data_type() {
                        DataType::Dictionary(_, _) => cast(c, &DataType::Utf8),
                        _ => Ok(c.clone()),
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                let fields: Vec<Field> = b
                    .schema()
                    .fields()
                    .iter()
                    .zip(&cols)
                    .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), false))
                    .collect();
                let b = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?;
                w.write(&b).map_err(|e| fail(&e))?;
            }
            let out = w.into_inner().into_inner().map_err(|e| fail(&e))?;
            out.sync_all().map_err(|e| PbgError::io(output, e))?;
        }
    }
    file.commit()?;
    Ok(rows)
}
