//! Scale data for benchmarks: `wide` tables of many integer QIs with generated interval
//! hierarchies (and their profile), and `adult-like` tables drawn row by row from the empirical joint
//! distribution of the shipped adult data (a seeded bootstrap), with an `id` column first. Rows
//! are produced in chunks of one Parquet row group, each from its own seed derived from the
//! user's seed and the chunk index, so the file is the same whatever the thread count.

use std::io::Cursor;
use std::path::{Path, PathBuf};
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
    write_generated(output, &schema, rows, |i, start, len| {
        chunk(&source, &schema, seed, i, start, len)
    })?;
    Ok(rows)
}

/// Writes `rows` rows made chunk by chunk by `make(chunk index, first row, rows)` to `output`
/// (Parquet, or CSV by extension), atomically; chunks are made in parallel, written in order.
fn write_generated(
    output: &Path,
    schema: &SchemaRef,
    rows: u64,
    make: impl Fn(u64, u64, usize) -> Result<RecordBatch> + Sync,
) -> Result<()> {
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
                    .map(|&(i, start, len)| make(i, start, len))
                    .collect::<Result<_>>()?;
                for b in batches {
                    w.write(&b).map_err(|e| fail(&e))?;
                }
            }
            w.into_inner().map_err(|e| fail(&e))?;
        }
        OutputFormat::Csv => {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(std::io::BufWriter::new(out));
            for &(i, start, len) in &chunks {
                let b = make(i, start, len)?;
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
            w.into_inner().into_inner().map_err(|e| fail(&e))?;
        }
    }
    file.commit()
}

/// One QI of a generated wide table: values `0..domain`, drawn as `domain · u^skew`, and an
/// interval hierarchy of bins `base^1, base^2, ...` (then `*`).
#[derive(Debug, Clone, PartialEq)]
pub struct WideQi {
    /// Column name (`q01`, `q02`, ...).
    pub name: String,
    /// Distinct values the column can take.
    pub domain: u64,
    /// Skew exponent of the draws (1 = uniform).
    pub skew: f64,
    /// Bin width per hierarchy level above the leaves.
    pub widths: Vec<u64>,
}

/// The QIs of a wide table with `qis` columns, drawn from `seed`: domains of 10–100 values, every
/// fourth QI 10^3–10^6; hierarchies of 3–6 levels (leaves and `*` included).
pub fn wide_qis(qis: usize, seed: u64) -> Vec<WideQi> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed ^ 0x5749_4445));
    (0..qis)
        .map(|d| {
            let domain = if d % 4 == 3 {
                10u64.pow(rng.random_range(3..=6))
            } else {
                rng.random_range(10..=100)
            };
            // Levels between the leaves and `*`: 1..=4, so 3..=6 levels in all.
            let inner = rng.random_range(1..=4u32);
            let base = ((domain as f64).powf(1.0 / (inner as f64 + 1.0)).ceil() as u64).max(2);
            let widths = (1..=inner).map(|i| base.pow(i)).collect();
            WideQi {
                name: format!("q{:02}", d + 1),
                domain,
                skew: if rng.random_range(0..2) == 0 {
                    1.0
                } else {
                    2.0
                },
                widths,
            }
        })
        .collect()
}

/// The profile (TOML) of a generated wide table written to `data` (a file name beside it).
pub fn wide_profile(qis: &[WideQi], data: &str) -> String {
    let mut t = format!(
        "# A generated wide table (pbg generate wide): {} QIs with interval hierarchies,\n\
         # sensitive `s` (8 values, correlated with q01), identifier `id`.\n\
         input = \"{data}\"\nsensitive = \"s\"\nidentifiers = [\"id\"]\nsuppression_limit = \"1%\"\n",
        qis.len()
    );
    for q in qis {
        let widths: Vec<String> = q.widths.iter().map(|w| w.to_string()).collect();
        t.push_str(&format!(
            "\n[[qi]]\nname = \"{}\"\nhierarchy = {{ type = \"interval\", widths = [{}] }}\n",
            q.name,
            widths.join(", ")
        ));
    }
    t
}

/// Writes a wide table of `rows` rows (`id`, the QIs of [`wide_qis`], sensitive `s`) drawn with
/// `seed` to `dir/wide.parquet` and its profile to `dir/wide.toml`. Returns the two paths.
pub fn wide(qis: usize, rows: u64, seed: u64, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    if rows == 0 || qis == 0 {
        return Err(PbgError::argument(
            if rows == 0 { "rows" } else { "qis" },
            "must be at least 1".to_string(),
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| PbgError::io(dir, e))?;
    // Both checked before the table is written (a named pipe at the profile's name left the
    // table without its profile).
    for name in ["wide.parquet", "wide.toml"] {
        crate::io::refuse_special_target(&dir.join(name))?;
    }
    let spec = wide_qis(qis, seed);
    let mut fields = vec![Field::new("id", DataType::Int64, false)];
    fields.extend(
        spec.iter()
            .map(|q| Field::new(&q.name, DataType::Int64, false)),
    );
    fields.push(Field::new("s", DataType::Utf8, false));
    let schema: SchemaRef = Arc::new(Schema::new(fields));
    let data = dir.join("wide.parquet");
    write_generated(&data, &schema, rows, |i, start, len| {
        let mut rng = ChaCha8Rng::seed_from_u64(mix(seed ^ mix(i)));
        let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
            (start..start + len as u64).map(|i| i as i64),
        ))];
        let mut first = Vec::new();
        for (d, q) in spec.iter().enumerate() {
            let values: Vec<i64> = (0..len)
                .map(|_| {
                    let u: f64 = rng.random_range(0.0..1.0);
                    ((q.domain as f64 * u.powf(q.skew)) as u64).min(q.domain - 1) as i64
                })
                .collect();
            if d == 0 {
                first = values.clone();
            }
            columns.push(Arc::new(Int64Array::from(values)));
        }
        let d0 = spec[0].domain as f64;
        let s: arrow::array::StringArray = first
            .iter()
            .map(|&v| {
                // Half the draws follow q01's octile, half are uniform.
                let s = if rng.random_range(0..2) == 0 {
                    ((v as f64 / d0) * 8.0) as u32
                } else {
                    rng.random_range(0..8)
                };
                Some(format!("s{}", s.min(7)))
            })
            .collect();
        columns.push(Arc::new(s));
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    })?;
    let profile = dir.join("wide.toml");
    let file = AtomicFile::new(&profile)?;
    std::fs::write(file.temp_path(), wide_profile(&spec, "wide.parquet"))
        .map_err(|e| PbgError::io(file.temp_path(), e))?;
    file.commit()?;
    Ok((data, profile))
}
