//! Engine benchmarks (run: `cargo bench --bench engine`):
//! - the whole 17920-node adult lattice with every index, by roll-ups;
//! - one direct node evaluation over adult replicated 100× (3,016,200 rows, built here);
//! - the exhaustive {k, l, GLM} and {k, t_equal, GLM} fronts and one PBG-EA run (25 × 100) for {k, GLM} on adult;
//! - SQL: `generalize` over a dictionary-encoded 3M-row column on one core, and a GROUP BY node
//!   evaluation (k, l, classes) over 3M rows in DataFusion next to the engine's `evaluate`;
//! - a CSV pass's per-batch work on adult's 30,162 rows as `;` text: arrow's decode to text
//!   columns, and `text_column` (each column's keys into its distinct texts) over them.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{ArrayRef, DictionaryArray, StringArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, UInt32Type};
use arrow::record_batch::RecordBatch;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use pbg::search::{EaConfig, exhaustive, pbg_ea};
use pbg::{Dataset, Evaluator, Objective, Profile};

fn adult() -> (Profile, Dataset) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/adult/adult.toml");
    let profile = Profile::from_toml_file(&path).expect("adult profile");
    let ds = Dataset::load(&profile).expect("adult data");
    (profile, ds)
}

fn lattice(c: &mut Criterion) {
    let (_, ds) = adult();
    let ev = Evaluator::new(Arc::new(ds)).unwrap();
    let mut g = c.benchmark_group("adult");
    g.sample_size(20);
    g.bench_function("lattice_17920_nodes", |b| {
        b.iter(|| black_box(ev.evaluate_lattice(&|| {}).unwrap()))
    });
    g.finish();
}

fn search(c: &mut Criterion) {
    let (_, ds) = adult();
    let ev = Evaluator::new(Arc::new(ds)).unwrap();
    let mut g = c.benchmark_group("adult_search");
    g.sample_size(20);
    let klg = [Objective::K, Objective::L, Objective::Glm];
    g.bench_function("exhaustive_k_l_glm", |b| {
        b.iter(|| black_box(exhaustive(&ev, &klg).unwrap()))
    });
    let ktg = [Objective::K, Objective::TEqual, Objective::Glm];
    g.bench_function("exhaustive_k_t_equal_glm", |b| {
        b.iter(|| black_box(exhaustive(&ev, &ktg).unwrap()))
    });
    let kg = [Objective::K, Objective::Glm];
    let mut seed = 0;
    g.bench_function("pbg_ea_k_glm_25x100", |b| {
        b.iter(|| {
            seed += 1;
            black_box(
                pbg_ea(
                    &ev,
                    &kg,
                    &EaConfig {
                        seed,
                        ..EaConfig::default()
                    },
                )
                .unwrap(),
            )
        })
    });
    g.finish();
}

fn direct_3m(c: &mut Criterion) {
    let (profile, _) = adult();
    let once = pbg::io::read_table(&profile.input, profile.delimiter).unwrap();
    let mut table = once.clone();
    table.batches = (0..100)
        .flat_map(|_| once.batches.iter().cloned())
        .collect();
    let rows = table.num_rows();
    let ev = Evaluator::new(Arc::new(Dataset::from_table(&profile, table).unwrap())).unwrap();
    let node = [2u8, 1, 1, 1, 0, 1, 2, 1];
    let mut g = c.benchmark_group("adult_x100");
    g.sample_size(20);
    g.throughput(Throughput::Elements(rows as u64));
    g.bench_function("direct_node_3016200_rows", |b| {
        b.iter(|| black_box(ev.evaluate(&node).unwrap()))
    });
    g.finish();
}

fn sql_3m(c: &mut Criterion) {
    let (profile, _) = adult();
    let once = pbg::io::read_table(&profile.input, profile.delimiter).unwrap();
    let mut table = once.clone();
    table.batches = (0..100)
        .flat_map(|_| once.batches.iter().cloned())
        .collect();
    let rows = table.num_rows();
    let ev = Arc::new(
        Evaluator::new(Arc::new(
            Dataset::from_table(&profile, table.clone()).unwrap(),
        ))
        .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = SessionContext::new();
    let registry = pbg::sql::register(&ctx);
    registry.declare("adult", profile.clone()).unwrap();
    let mem = MemTable::try_new(table.schema.clone(), vec![table.batches.clone()]).unwrap();
    ctx.register_table("adult", Arc::new(mem)).unwrap();
    // The same rows with dictionary-encoded string columns, as Parquet readers can deliver them.
    let dict_type = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
    let dict_schema = Arc::new(Schema::new(
        table
            .schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 => Field::new(f.name(), dict_type.clone(), f.is_nullable()),
                _ => f.as_ref().clone(),
            })
            .collect::<Vec<_>>(),
    ));
    let dict_batches: Vec<RecordBatch> = table
        .batches
        .iter()
        .map(|b| {
            let cols = b
                .columns()
                .iter()
                .zip(dict_schema.fields())
                .map(|(c, f)| arrow::compute::cast(c, f.data_type()).unwrap())
                .collect();
            RecordBatch::try_new(dict_schema.clone(), cols).unwrap()
        })
        .collect();
    let dict_mem = MemTable::try_new(dict_schema, vec![dict_batches]).unwrap();
    ctx.register_table("adult_dict", Arc::new(dict_mem))
        .unwrap();

    // generalize() on one core over a dictionary-encoded column (the age leaves as text).
    let age = ev.dataset().qis[0].hierarchy.clone();
    let keys = UInt32Array::from_iter_values((0..rows as u32).map(|i| i % age.leaf_count() as u32));
    let values = StringArray::from_iter_values(age.leaves().iter());
    let dict: ArrayRef =
        Arc::new(DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(values)).unwrap());
    let mut g = c.benchmark_group("sql_3016200_rows");
    g.sample_size(20);
    g.throughput(Throughput::Elements(rows as u64));
    g.bench_function("generalize_dictionary_one_core", |b| {
        b.iter(|| black_box(pbg::hierarchy::generalize(&age, 3, &dict).unwrap()))
    });
    let node = [2u8, 1, 1, 1, 0, 1, 2, 1];
    let names = [
        "age",
        "workclass",
        "education",
        "marital-status",
        "race",
        "sex",
        "native-country",
        "salary-class",
    ];
    let keys: Vec<String> = names
        .iter()
        .zip(node)
        .map(|(n, l)| format!("generalize(\"{n}\", '{n}', {l})"))
        .collect();
    let sql = format!(
        "SELECT min(n) AS k, min(l) AS l, count(*) AS classes FROM \
         (SELECT count(*) AS n, count(DISTINCT occupation) AS l FROM adult GROUP BY {})",
        keys.join(", ")
    );
    g.bench_function("group_by_node_sql", |b| {
        b.iter(|| {
            rt.block_on(async { black_box(ctx.sql(&sql).await.unwrap().collect().await.unwrap()) })
        })
    });
    let dict_sql = sql.replace("FROM adult GROUP BY", "FROM adult_dict GROUP BY");
    g.bench_function("group_by_node_sql_dictionary", |b| {
        b.iter(|| {
            rt.block_on(async {
                black_box(ctx.sql(&dict_sql).await.unwrap().collect().await.unwrap())
            })
        })
    });
    g.bench_function("evaluate_node_engine", |b| {
        b.iter(|| black_box(ev.evaluate(&node).unwrap()))
    });
    g.finish();
}

fn csv_text(c: &mut Criterion) {
    use arrow::csv::ReaderBuilder;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/adult/adult.csv");
    let bytes = std::fs::read(&path).expect("adult.csv");
    let header = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let fields: Vec<Field> = std::str::from_utf8(header)
        .unwrap()
        .split(';')
        .map(|n| Field::new(n, DataType::Utf8, true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let view_schema = Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), DataType::Utf8View, true))
            .collect::<Vec<_>>(),
    ));
    // Arrow's CSV reader on `bytes`.
    let read_from = |bytes: &[u8], schema: &Arc<Schema>| -> Vec<RecordBatch> {
        ReaderBuilder::new(schema.clone())
            .with_header(true)
            .with_delimiter(b';')
            .with_batch_size(8192)
            .build(std::io::Cursor::new(bytes))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let read_as = |schema: &Arc<Schema>| read_from(&bytes, schema);
    let read = || read_as(&schema);
    let batches = read();
    let view_batches = read_as(&view_schema);
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut g = c.benchmark_group("csv_text_adult");
    g.throughput(Throughput::Elements(rows as u64));
    g.bench_function("arrow_decode_utf8", |b| b.iter(|| black_box(read())));
    // Every column keyed as it is read (what pbg's statistics pass and verifier ask for).
    let keyed_schema = Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), pbg::input::keyed_type(), true))
            .collect::<Vec<_>>(),
    ));
    // The same file with every value that is not a number quoted (as pandas' QUOTE_NONNUMERIC
    // and many exports write it).
    let quoted: Vec<u8> = bytes
        .split_inclusive(|&b| b == b'\n')
        .flat_map(|line| {
            let ended = line.iter().rev().take_while(|&&b| b == b'\n' || b == b'\r');
            let (text, end) = line.split_at(line.len() - ended.count());
            let fields: Vec<Vec<u8>> = text
                .split(|&b| b == b';')
                .map(|f| match f.iter().all(u8::is_ascii_digit) {
                    true => f.to_vec(),
                    false => [&b"\""[..], f, b"\""].concat(),
                })
                .collect();
            [fields.join(&b';'), end.to_vec()].concat()
        })
        .collect();
    // pbg's decoder, fed 8 KiB at a time as DataFusion's scan feeds it.
    let decode_from = |bytes: &[u8], schema: &Arc<Schema>| -> Vec<RecordBatch> {
        let all: Vec<usize> = (0..schema.fields().len()).collect();
        let begin = pbg::input::Begin::FileStart { header: true };
        let mut d =
            pbg::input::TextDecoder::new(schema.clone(), b';', all.len(), &all, 8192, begin);
        let mut out = Vec::new();
        for chunk in bytes.chunks(8192).chain([&[][..]]) {
            let mut rest = chunk;
            loop {
                let n = d.decode(rest).unwrap();
                rest = &rest[n..];
                if (n == 0 || d.is_full())
                    && let Some(b) = d.flush().unwrap()
                {
                    out.push(b);
                }
                if rest.is_empty() {
                    break;
                }
            }
        }
        out
    };
    let decode_as = |schema: &Arc<Schema>| decode_from(&bytes, schema);
    let decode_pbg = || decode_as(&schema);
    assert_eq!(
        decode_pbg(),
        batches,
        "pbg's decoder reads what arrow's reads"
    );
    // Keyed as read: the keys and distinct texts the keying of the decoded text gives.
    for (keyed, text) in decode_as(&keyed_schema).iter().zip(&batches) {
        for (k, t) in keyed.columns().iter().zip(text.columns()) {
            let (k, t) = (
                pbg::encode::text_column(k).unwrap(),
                pbg::encode::text_column(t).unwrap(),
            );
            assert_eq!((k.keys, k.values), (t.keys, t.values));
        }
    }
    assert_eq!(
        decode_from(&quoted, &keyed_schema),
        decode_as(&keyed_schema),
        "quoted or not, the same values"
    );
    g.bench_function("pbg_decode_utf8", |b| b.iter(|| black_box(decode_pbg())));
    g.bench_function("pbg_decode_keyed_quoted", |b| {
        b.iter(|| black_box(decode_from(&quoted, &keyed_schema)))
    });
    g.bench_function("arrow_decode_utf8_quoted", |b| {
        b.iter(|| black_box(read_from(&quoted, &schema)))
    });
    g.bench_function("pbg_decode_keyed", |b| {
        b.iter(|| black_box(decode_as(&keyed_schema)))
    });
    g.bench_function("arrow_decode_utf8view", |b| {
        b.iter(|| black_box(read_as(&view_schema)))
    });
    g.bench_function("text_column_every_view_column", |b| {
        b.iter(|| {
            for batch in &view_batches {
                for column in batch.columns() {
                    black_box(pbg::encode::text_column(column).unwrap());
                }
            }
        })
    });
    g.bench_function("text_column_every_column", |b| {
        b.iter(|| {
            for batch in &batches {
                for column in batch.columns() {
                    black_box(pbg::encode::text_column(column).unwrap());
                }
            }
        })
    });
    g.finish();
}

criterion_group!(benches, lattice, search, direct_3m, sql_3m, csv_text);
criterion_main!(benches);
