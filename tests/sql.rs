//! The SQL face: the sqllogictest files under `sql/` (one per function, pinning results and error
//! messages), the worked scripts under `sql/examples/`, and cross-checks of SQL against the CLI.

use std::path::PathBuf;

use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::{CsvReadOptions, SessionContext};
use pbg::Profile;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

use crate::common::{pbg, pbg_json, repo};

/// A SessionContext with the pbg functions, adult (profile and table `adult`, η = 301), the
/// EDBT T1 table (profile and table `t1`) and the ICDE 2007 records (table `records`, profiles
/// `disease` with a sensitive hierarchy and `salary`).
struct Db {
    ctx: SessionContext,
}

async fn context() -> Result<SessionContext, DataFusionError> {
    let ctx = SessionContext::new();
    let registry = pbg::sql::register(&ctx);
    for (name, profile, csv, delimiter) in [
        (
            "adult",
            "datasets/adult/adult.toml",
            "datasets/adult/adult.csv",
            b';',
        ),
        ("t1", "datasets/t1/t1.toml", "datasets/t1/t1.csv", b','),
        (
            "disease",
            "datasets/icde2007/disease.toml",
            "datasets/icde2007/records.csv",
            b',',
        ),
    ] {
        registry.add_profile_file(name, &repo(profile))?;
        let path = repo(csv).to_string_lossy().into_owned();
        let table = if name == "disease" { "records" } else { name };
        ctx.register_csv(table, &path, CsvReadOptions::new().delimiter(delimiter))
            .await?;
    }
    registry.add_profile_file("salary", &repo("datasets/icde2007/salary.toml"))?;
    // Hierarchies built from the data (t1's masks and intervals) are registered for generalize()
    // once a pbg function has read their profile.
    ctx.sql("SELECT * FROM pbg_evaluate('t1', '0,0')")
        .await?
        .collect()
        .await?;
    Ok(ctx)
}

/// pbg's query runtime is made on first use. Made inside another runtime (the first pbg query
/// of a `#[tokio::main]` program), its start check panicked in `block_on`, and every query
/// failed as if the system refused threads. The test runs itself again in a process of its own,
/// where its query is pbg's first use.
#[test]
fn the_first_query_may_come_from_inside_a_runtime() {
    const CHILD: &str = "PBG_TEST_FIRST_USE";
    if std::env::var_os(CHILD).is_some() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let ctx = runtime.block_on(context()).unwrap();
        let batches = runtime
            .block_on(async {
                ctx.sql("SELECT * FROM pbg_evaluate('t1', '1,1')")
                    .await?
                    .collect()
                    .await
            })
            .unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
        return;
    }
    let name = "sql::the_first_query_may_come_from_inside_a_runtime";
    let run = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

fn rows(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, DataFusionError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let formatters = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..b.num_rows() {
            out.push(formatters.iter().map(|f| f.value(r).to_string()).collect());
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl AsyncDB for Db {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<Self::ColumnType>, Self::Error> {
        let df = self.ctx.sql(sql).await?;
        let width = df.schema().fields().len();
        let batches = df.collect().await?;
        Ok(DBOutput::Rows {
            types: vec![DefaultColumnType::Any; width],
            rows: rows(&batches)?,
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "pbg"
    }
}

fn slt_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo("sql"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqllogictest_files() {
    let files = slt_files();
    assert!(files.len() >= 12, "one .slt per function: {files:?}");
    for file in files {
        let mut runner = sqllogictest::Runner::new(|| async {
            Ok(Db {
                ctx: context().await?,
            })
        });
        if let Err(e) = runner.run_file_async(&file).await {
            panic!("{}: {e}", file.display());
        }
    }
}

#[test]
fn example_scripts_run() {
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(repo("sql/examples"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 4);
    for s in scripts {
        let out = pbg(&[
            "sql",
            "datasets/adult/adult.toml",
            "-f",
            &s.to_string_lossy(),
        ]);
        assert!(
            out.status.success(),
            "{}: {}",
            s.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty());
    }
}

/// GROUP BY generalize() over adult as Parquet gives the CLI's k, l and class count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_by_generalize_matches_pbg_evaluate() {
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("adult.parquet");
    let ctx = context().await.unwrap();
    ctx.sql(&format!(
        "COPY (SELECT * FROM adult) TO '{}' STORED AS PARQUET",
        parquet.display()
    ))
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    let mut profile = Profile::from_toml_file(&repo("datasets/adult/adult.toml")).unwrap();
    profile.input = pbg::input::Input::Path(parquet.clone());
    profile.suppression = pbg::SuppressionLimit::Rows(0);
    let ctx = SessionContext::new();
    let registry = pbg::sql::register(&ctx);
    registry.declare("adultp", profile).unwrap();
    ctx.register_parquet("adultp", parquet.to_str().unwrap(), Default::default())
        .await
        .unwrap();
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
    for node in [
        [2u8, 1, 1, 1, 0, 1, 2, 1],
        [4, 2, 2, 2, 1, 1, 3, 1],
        [1, 0, 1, 0, 0, 0, 1, 0],
    ] {
        let keys: Vec<String> = names
            .iter()
            .zip(node)
            .map(|(n, l)| format!("generalize(\"{n}\", '{n}', {l})"))
            .collect();
        let sql = format!(
            "SELECT min(n) AS k, min(l) AS l, count(*) AS classes FROM \
             (SELECT count(*) AS n, count(DISTINCT occupation) AS l FROM adultp GROUP BY {})",
            keys.join(", ")
        );
        let got = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        let got = rows(&got).unwrap();
        let text = node
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let cli = pbg_json(&[
            "evaluate",
            "--input",
            parquet.to_str().unwrap(),
            "--config",
            "datasets/adult/adult.toml",
            "--suppression-limit",
            "0",
            "--node",
            &text,
        ]);
        assert_eq!(
            got[0],
            vec![
                cli["k"].to_string(),
                cli["l_distinct"].to_string(),
                cli["classes"].to_string()
            ],
            "{text}"
        );
        let via_fn = ctx
            .sql(&format!(
                "SELECT k, l_distinct, classes FROM pbg_evaluate('adultp', '{text}')"
            ))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert_eq!(rows(&via_fn).unwrap(), got);
    }
}

/// pbg_search gives the same front as pbg search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pbg_search_matches_the_cli() {
    let ctx = context().await.unwrap();
    // A seed is the evolutionary search's only (the exhaustive search refuses one).
    for (algorithm, seed) in [("exhaustive", None), ("ea", Some("5"))] {
        let seed_arg = seed.map_or(String::new(), |s| format!(", {s}"));
        let sql = format!("SELECT * FROM pbg_search('adult', 'k,l,glm', '{algorithm}'{seed_arg})");
        let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
        let sql_front = rows(&batches).unwrap();
        let mut args = vec![
            "search",
            "datasets/adult/adult.toml",
            "--objectives",
            "k,l,glm",
            "--algorithm",
            algorithm,
        ];
        args.extend(seed.iter().flat_map(|s| ["--seed", s]));
        let cli = pbg_json(&args);
        let front = cli["front"].as_array().unwrap();
        assert_eq!(sql_front.len(), front.len(), "{algorithm}");
        for (row, p) in sql_front.iter().zip(front) {
            let levels: Vec<String> = p["node"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.to_string())
                .collect();
            assert_eq!(&row[..8], &levels[..], "{algorithm}");
            // Counts are integers in both (k and distinct l, not `127.0`).
            assert_eq!(row[8], p["k"].to_string(), "{algorithm}");
            assert_eq!(row[9], p["l"].to_string(), "{algorithm}");
            // Text forms of floats may differ in the last digit: compare numerically.
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(1.0);
            assert!(close(
                row[8].parse::<f64>().unwrap(),
                p["k"].as_f64().unwrap()
            ));
            assert!(close(
                row[10].parse::<f64>().unwrap(),
                p["glm"].as_f64().unwrap()
            ));
        }
    }
}

/// Large results stream: pbg_vectors arrives in batches of the session's batch size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_stream_in_batches() {
    let ctx = context().await.unwrap();
    let batches = ctx
        .sql("SELECT * FROM pbg_vectors('adult', '1,1,1,1,1,1,1,1')")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let total: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(total, 30162);
    assert!(batches.len() >= 30162 / 8192, "{} batches", batches.len());
}

/// The pure SQL job (no profile on the command line): a Parquet lake registered as a table, a
/// profile declared with pbg_profile, a search, a partitioned COPY of pbg_anonymize and
/// pbg_verify of the written directory.
#[test]
fn pure_sql_script_runs_end_to_end() {
    let out = repo("out/pure-sql");
    let _ = std::fs::remove_dir_all(&out);
    let o = pbg(&[
        "sql",
        "-f",
        "sql/examples/pure/lake_to_release.sql",
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    // The verification row: node, rows_in, rows_released, suppressed, classes, k, l, verified.
    let line = text
        .lines()
        .find(|l| l.ends_with(",true"))
        .unwrap_or_else(|| panic!("no verification row in {text}"));
    let fields: Vec<&str> = line.rsplitn(8, ',').collect();
    let k: u64 = fields[2].parse().unwrap();
    let l: u64 = fields[1].parse().unwrap();
    assert!(k >= 10 && l >= 3, "{line}");
    assert!(line.contains(",30162,"), "{line}");
    // Partitioned by the sensitive attribute: one directory per occupation.
    let dirs = std::fs::read_dir(out.join("release"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("occupation="))
        })
        .count();
    assert_eq!(dirs, 14);
    let _ = std::fs::remove_dir_all(&out);
}

/// Lines of a CSV file, header first, the rest sorted (partitions may interleave rows).
fn csv_lines(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[1..].sort();
    lines
}

/// The SQL path (COPY of pbg_anonymize) writes what the CLI writes, line for line (in any order),
/// on adult and on a generated table spread over several Parquet files.
#[test]
fn sql_release_equals_cli_release() {
    let dir = tempfile::tempdir().unwrap();
    let node = "3,1,1,2,1,1,2,0";
    let cli = dir.path().join("cli.csv");
    let sql = dir.path().join("sql.csv");
    pbg_json(&[
        "anonymize",
        "datasets/adult/adult.toml",
        "--node",
        node,
        "--output",
        cli.to_str().unwrap(),
    ]);
    let o = pbg(&[
        "sql",
        "datasets/adult/adult.toml",
        "-c",
        &format!(
            "COPY (SELECT * FROM pbg_anonymize('adult', '{node}')) TO '{}' STORED AS CSV",
            sql.display()
        ),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Row order follows DataFusion's parallel execution; the lines are the same bytes.
    let same = csv_lines(&cli) == csv_lines(&sql);
    assert!(same, "the SQL release differs from the CLI's");

    // A generated table over three files in a directory.
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    for seed in 0..3 {
        pbg_json(&[
            "generate",
            "adult-like",
            "--rows",
            "40000",
            "--seed",
            &seed.to_string(),
            "--output",
            lake.join(format!("part-{seed}.parquet")).to_str().unwrap(),
        ]);
    }
    let lake_s = lake.to_str().unwrap();
    let cli = dir.path().join("lake-cli.csv");
    let report = pbg_json(&[
        "anonymize",
        "datasets/adult/adult.toml",
        "--input",
        lake_s,
        "--identifier",
        "id",
        "--pick",
        "--require",
        "k>=10",
        "--output",
        cli.to_str().unwrap(),
    ]);
    assert_eq!(report["rows_in"], 120000);
    let sql = dir.path().join("lake-sql.csv");
    let o = pbg(&[
        "sql",
        "datasets/adult/adult.toml",
        "--input",
        lake_s,
        "--identifier",
        "id",
        "--table",
        "lake",
        "-c",
        &format!(
            "COPY (SELECT * FROM pbg_anonymize('lake', 'pick', 'k>=10', 'glm')) TO '{}' STORED AS CSV",
            sql.display()
        ),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(csv_lines(&cli), csv_lines(&sql));
    // pbg verify accepts the SQL release and infers the CLI's node.
    let v = pbg_json(&[
        "verify",
        "datasets/adult/adult.toml",
        "--input",
        lake_s,
        "--identifier",
        "id",
        "--release",
        sql.to_str().unwrap(),
    ]);
    assert_eq!(v["node"], report["node"]);
}

/// Each query reads the profile's input afresh: a file that changed is seen as it is now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_table_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::copy(repo("datasets/t1/t1.csv"), &csv).unwrap();
    let toml = std::fs::read_to_string(repo("datasets/t1/t1.toml"))
        .unwrap()
        .replace(
            "input = \"t1.csv\"",
            &format!("input = \"{}\"", csv.display()),
        );
    let toml = toml.replace("\"t1-", &format!("\"{}/t1-", repo("datasets/t1").display()));
    let ctx = SessionContext::new();
    pbg::sql::register(&ctx);
    let declare = format!(
        "SELECT * FROM pbg_profile('t', '{}')",
        toml.replace('\'', "''")
    );
    ctx.sql(&declare).await.unwrap().collect().await.unwrap();
    let count = |ctx: SessionContext| async move {
        let b = ctx
            .sql("SELECT classes, k FROM pbg_evaluate('t', '0,0')")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        rows(&b).unwrap()
    };
    let before = count(ctx.clone()).await;
    // Keep the header and the first four rows.
    let text = std::fs::read_to_string(&csv).unwrap();
    let kept: Vec<&str> = text.lines().take(5).collect();
    std::fs::write(&csv, kept.join("\n") + "\n").unwrap();
    let after = count(ctx.clone()).await;
    assert_ne!(before, after);
    assert!(after[0][0].parse::<u64>().unwrap() <= 4, "{after:?}");
    // pbg's own sessions keep no listing of a directory between queries (DataFusion's list-files
    // cache kept the first: a file added later was never read, and pbg's listing check took it
    // for a file in a subdirectory).
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    std::fs::copy(&csv, lake.join("a.csv")).unwrap();
    let ctx = pbg::input::new_context();
    pbg::sql::register(&ctx);
    let in_lake = declare.replace(&csv.display().to_string(), &format!("{}/", lake.display()));
    ctx.sql(&in_lake).await.unwrap().collect().await.unwrap();
    let rows_of = |ctx: SessionContext| async move {
        let b = ctx
            .sql("SELECT count(*) FROM pbg_anonymize('t', '0,0')")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        rows(&b).unwrap()[0][0].clone()
    };
    assert_eq!(rows_of(ctx.clone()).await, "4");
    // A session with the cache (DataFusion's default) lists the directory first.
    let cached = SessionContext::new_with_config(pbg::input::session_config());
    pbg::sql::register(&cached);
    cached.sql(&in_lake).await.unwrap().collect().await.unwrap();
    assert_eq!(rows_of(cached.clone()).await, "4");
    std::fs::copy(&csv, lake.join("b.csv")).unwrap();
    assert_eq!(rows_of(ctx.clone()).await, "8");
    // There the file added is missing from the listing: refused, saying why and what to do.
    let err = cached
        .sql("SELECT count(*) FROM pbg_anonymize('t', '0,0')")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("list-files cache") && err.contains("b.csv"),
        "{err}"
    );
    let set = "SET datafusion.runtime.list_files_cache_limit = '0'";
    cached.sql(set).await.unwrap().collect().await.unwrap();
    assert_eq!(rows_of(cached.clone()).await, "8");
}

/// A view over `pbg_anonymize` keeps the statistics read when it was created: once the rows
/// under it change (a file rewritten or added, a memory table's insert or update), querying it
/// is refused, naming what changed, and a COPY through it writes nothing; a new query (or view)
/// reads the table as it is.
/// `COPY` cannot reach an input by a path through a directory that does not exist
/// (`nope/../in.csv`: DataFusion creates `nope` and writes through it; the guard took the path
/// as written and passed it), nor by a partitioned write into a directory above an input
/// directory (`PARTITIONED BY (s)` to `lake/` wrote `lake/s=x/<file>`, inside the table's
/// `lake/s=x/`, whose next read held the release's rows too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_reaches_no_input_through_missing_directories_or_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let t1 = std::fs::read_to_string(repo("datasets/t1/t1.csv")).unwrap();
    let input = dir.path().join("in/t.csv");
    std::fs::create_dir_all(input.parent().unwrap()).unwrap();
    std::fs::write(&input, &t1).unwrap();
    let lake = dir.path().join("lake/s=x");
    std::fs::create_dir_all(&lake).unwrap();
    std::fs::write(lake.join("t.csv"), &t1).unwrap();
    let declare = declare_t1;
    let ctx = SessionContext::new();
    pbg::sql::register(&ctx);
    let run = |sql: String| {
        let ctx = ctx.clone();
        async move { ctx.sql(&sql).await?.collect().await }
    };
    run(declare("p", &format!("input = \"{}\"", input.display())))
        .await
        .unwrap();
    run(format!(
        "CREATE EXTERNAL TABLE lake STORED AS CSV LOCATION '{}/'",
        lake.display()
    ))
    .await
    .unwrap();
    run(declare("q", "table = \"lake\"")).await.unwrap();
    let d = dir.path().display();
    std::os::unix::fs::symlink(dir.path().join("in"), dir.path().join("link")).unwrap();
    for sql in [
        format!(
            "COPY (SELECT * FROM pbg_anonymize('p', '1,1')) TO '{d}/nope/../link/t.csv' STORED AS CSV"
        ),
        format!(
            "COPY (SELECT * FROM pbg_anonymize('p', '1,1')) TO '{d}/nope/../in/t.csv' STORED AS CSV"
        ),
        format!(
            "COPY (SELECT * FROM pbg_anonymize('p', '1,1')) TO '{d}/in/nope/x/../../t.csv' STORED AS CSV"
        ),
        format!(
            "COPY (SELECT *, 'x' AS s FROM pbg_anonymize('q', '1,1')) TO '{d}/lake/' STORED AS CSV PARTITIONED BY (s)"
        ),
        format!(
            "COPY (SELECT *, 'x' AS s FROM pbg_anonymize('q', '1,1')) TO '{d}/nope/../lake/' STORED AS CSV PARTITIONED BY (s)"
        ),
        format!(
            "COPY (SELECT *, 's=x' AS s FROM lake) TO '{d}/lake/s=x/' STORED AS CSV PARTITIONED BY (s)"
        ),
    ] {
        let e = run(sql.clone()).await.unwrap_err().to_string();
        assert!(e.contains("never writes"), "{sql}: {e}");
    }
    // INSERT INTO a table over the input's directory (or a link to it) of release rows: the
    // new file would join the input. Raw rows inserted there are the table's own business.
    std::os::unix::fs::symlink(&lake, dir.path().join("lakelink")).unwrap();
    for (table, location) in [("o", "lake/s=x/"), ("ol", "lakelink/")] {
        run(format!(
            "CREATE EXTERNAL TABLE {table} (zip VARCHAR, age VARCHAR, marital VARCHAR) STORED AS CSV LOCATION '{d}/{location}'"
        ))
        .await
        .unwrap();
        let sql = format!("INSERT INTO {table} SELECT * FROM pbg_anonymize('q', '1,1')");
        let e = run(sql.clone()).await.unwrap_err().to_string();
        assert!(
            e.contains(&format!("INSERT INTO {table}")) && e.contains("never writes"),
            "{sql}: {e}"
        );
    }
    assert_eq!(walk(&lake), vec![lake.join("t.csv")]);
    run("INSERT INTO o VALUES ('13053', '28', 'Divorced')".into())
        .await
        .unwrap();
    std::fs::remove_file(
        walk(&lake)
            .into_iter()
            .find(|f| *f != lake.join("t.csv"))
            .unwrap(),
    )
    .unwrap();
    // An unbounded table is read afresh from its stream by each query: refused.
    run(format!(
        "CREATE UNBOUNDED EXTERNAL TABLE f (id VARCHAR, zip VARCHAR, age VARCHAR, marital VARCHAR) STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
        input.display()
    ))
    .await
    .unwrap();
    run(declare("pf", "table = \"f\"")).await.unwrap();
    let e = run("SELECT * FROM pbg_anonymize('pf', '1,1')".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("an unbounded table"), "{e}");
    assert_eq!(std::fs::read_to_string(&input).unwrap(), t1);
    assert!(!dir.path().join("nope").exists());
    assert!(!dir.path().join("in/nope").exists());
    let lake_files: Vec<_> = walk(&dir.path().join("lake"));
    assert_eq!(lake_files, vec![lake.join("t.csv")]);
    // A partitioned write elsewhere, and one above a single input file, pass.
    run(format!(
        "COPY (SELECT *, 'x' AS s FROM pbg_anonymize('q', '1,1')) TO '{d}/out/' STORED AS CSV PARTITIONED BY (s)"
    ))
    .await
    .unwrap();
    run(format!(
        "COPY (SELECT *, 'x' AS s FROM pbg_anonymize('p', '1,1')) TO '{d}/in/' STORED AS CSV PARTITIONED BY (s)"
    ))
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&input).unwrap(), t1);
}

/// Every file under `dir`, sorted.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// An input over a table that declares an order its rows do not have (`WITH ORDER`, or the
/// sorting columns of a Parquet file), under a `GROUP BY`: DataFusion trusts the order, and the
/// grouped rows depended on the session's partitions (a `SET` between the view and the query
/// released classes of one under `k>=2`). The pin now gives the file scan back without the
/// order: the statistics and the release group the rows alike, whatever the partitions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_order_under_an_aggregate_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("lie.csv");
    let mut text = String::from("x,s\n");
    for i in 0..20000 {
        text.push_str(if i % 2 == 0 { "b,flu\n" } else { "a,flu\n" });
    }
    std::fs::write(&csv, text).unwrap();
    let ctx = SessionContext::new();
    pbg::sql::register(&ctx);
    let run = |sql: String| {
        let ctx = ctx.clone();
        async move { ctx.sql(&sql).await?.collect().await }
    };
    run(format!(
        "CREATE EXTERNAL TABLE u (x VARCHAR, s VARCHAR) STORED AS CSV WITH ORDER (x ASC) LOCATION '{}' OPTIONS ('format.has_header' 'true')",
        csv.display()
    ))
    .await
    .unwrap();
    // The same rows in a Parquet file whose metadata says they are sorted by `x`: DataFusion
    // takes the order from the file, no declaration needed.
    let parquet = dir.path().join("lie.parquet");
    let batch = run("SELECT x, s FROM u".into()).await.unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_sorting_columns(Some(vec![parquet::file::metadata::SortingColumn {
            column_idx: 0,
            descending: false,
            nulls_first: false,
        }]))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&parquet).unwrap(),
        batch[0].schema(),
        Some(props),
    )
    .unwrap();
    for b in &batch {
        writer.write(b).unwrap();
    }
    writer.close().unwrap();
    run(format!(
        "CREATE EXTERNAL TABLE q STORED AS PARQUET LOCATION '{}'",
        parquet.display()
    ))
    .await
    .unwrap();
    for table in ["u", "q"] {
        run(format!(
            "CREATE VIEW v{table} AS SELECT x AS zip, max(s) AS dis FROM {table} GROUP BY x"
        ))
        .await
        .unwrap();
        run(format!(
            "SELECT * FROM pbg_profile('p{table}', 'table = \"v{table}\"\nsensitive = \"dis\"\n[[qi]]\nname = \"zip\"\nhierarchy = {{ type = \"mask\", steps = 1 }}')"
        ))
        .await
        .unwrap();
        // Trusted, the order made one partition's GROUP BY give each key several times.
        run("SET datafusion.execution.target_partitions = 1".into())
            .await
            .unwrap();
        run(format!(
            "CREATE VIEW r{table} AS SELECT * FROM pbg_anonymize('p{table}', 'pick', 'k>=2')"
        ))
        .await
        .unwrap();
        run("SET datafusion.execution.target_partitions = 2".into())
            .await
            .unwrap();
        let rows = run(format!(
            "SELECT zip, count(*) FROM r{table} GROUP BY zip ORDER BY zip"
        ))
        .await
        .unwrap();
        assert_eq!(
            self::rows(&rows).unwrap(),
            vec![vec!["*".to_string(), "2".into()]],
            "{table}"
        );
    }
}

/// The SQL declaring the EDBT T1 profile as `name`, its `input = "t1.csv"` line replaced by
/// `input` (another path, or `table = "..."`), its hierarchy files named absolutely.
fn declare_t1(name: &str, input: &str) -> String {
    let toml = std::fs::read_to_string(repo("datasets/t1/t1.toml"))
        .unwrap()
        .replace("\"t1-", &format!("\"{}/t1-", repo("datasets/t1").display()))
        .replace("input = \"t1.csv\"", input);
    format!(
        "SELECT * FROM pbg_profile('{name}', '{}')",
        toml.replace('\'', "''")
    )
}

/// A schema whose table `people` is another table at each lookup after the first: a
/// `CREATE OR REPLACE TABLE` run by another session while a query is planned, made
/// deterministic.
#[derive(Debug)]
struct ReplacedEachLookup {
    first: std::sync::Arc<dyn datafusion::catalog::TableProvider>,
    then: std::sync::Arc<dyn datafusion::catalog::TableProvider>,
    lookups: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl datafusion::catalog::SchemaProvider for ReplacedEachLookup {
    fn table_names(&self) -> Vec<String> {
        vec!["people".into()]
    }

    async fn table(
        &self,
        name: &str,
    ) -> Result<Option<std::sync::Arc<dyn datafusion::catalog::TableProvider>>, DataFusionError>
    {
        if name != "people" {
            return Ok(None);
        }
        let n = self
            .lookups
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Some(if n == 0 {
            self.first.clone()
        } else {
            self.then.clone()
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        name == "people"
    }
}

/// The class statistics of `pbg_anonymize` over a table are read through the plan its release
/// reads, not by looking the name up again: with a second lookup, a table replaced in between
/// (here by one holding every row five times, so that every class of the original passes
/// `k>=5` at the bottom node) gave the statistics of one table and the rows of another, and
/// released the original's ten rows in classes of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_replaced_while_a_release_is_planned_is_read_once() {
    use datafusion::datasource::MemTable;
    let ctx = SessionContext::new();
    pbg::sql::register(&ctx);
    let rows = ctx
        .read_csv(
            repo("datasets/t1/t1.csv").display().to_string(),
            CsvReadOptions::new(),
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let schema = rows[0].schema();
    let five: Vec<RecordBatch> = (0..5).flat_map(|_| rows.clone()).collect();
    let schema_provider = std::sync::Arc::new(ReplacedEachLookup {
        first: std::sync::Arc::new(MemTable::try_new(schema.clone(), vec![rows]).unwrap()),
        then: std::sync::Arc::new(MemTable::try_new(schema, vec![five]).unwrap()),
        lookups: Default::default(),
    });
    ctx.catalog("datafusion")
        .unwrap()
        .register_schema("shifty", schema_provider.clone())
        .unwrap();
    let declare = declare_t1("p", "table = \"shifty.people\"");
    ctx.sql(&declare).await.unwrap().collect().await.unwrap();
    let classes = ctx
        .sql(
            "SELECT count(*) AS size FROM pbg_anonymize('p', 'pick', 'k>=5') GROUP BY zip, age ORDER BY size",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let sizes: Vec<u64> = self::rows(&classes)
        .unwrap()
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert!(
        schema_provider
            .lookups
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 1
    );
    assert_eq!(sizes.iter().sum::<u64>(), 10, "{sizes:?}");
    assert!(
        sizes.iter().all(|&s| s >= 5),
        "classes below k=5: {sizes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_over_a_changed_table_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t1 = std::fs::read_to_string(repo("datasets/t1/t1.csv")).unwrap();
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    let csv = lake.join("t.csv");
    std::fs::write(&csv, &t1).unwrap();
    let declare = declare_t1;
    let ctx = SessionContext::new();
    pbg::sql::register(&ctx);
    let run = |ctx: SessionContext, sql: String| async move {
        let df = ctx.sql(&sql).await?;
        df.collect().await
    };
    let count = |ctx: SessionContext, table: &'static str| async move {
        let b = run(ctx, format!("SELECT count(*) FROM {table}")).await?;
        Ok::<String, DataFusionError>(rows(&b)?[0][0].clone())
    };
    let refused = |e: DataFusionError, what: &str| {
        let text = e.to_string();
        assert!(
            text.contains("changed since this release was planned") && text.contains(what),
            "{text}"
        );
    };
    // A path input: a file of the profile rewritten with one more row.
    let path_input = format!("input = \"{}\"", csv.display());
    run(ctx.clone(), declare("t", &path_input)).await.unwrap();
    run(
        ctx.clone(),
        "CREATE VIEW rel AS SELECT * FROM pbg_anonymize('t', '1,1')".into(),
    )
    .await
    .unwrap();
    assert_eq!(count(ctx.clone(), "rel").await.unwrap(), "10");
    std::fs::write(&csv, format!("{t1}11,13053,28,Divorced\n")).unwrap();
    refused(
        count(ctx.clone(), "rel").await.unwrap_err(),
        "t.csv was modified",
    );
    let out = dir.path().join("out.csv");
    let copy = format!(
        "COPY (SELECT * FROM rel) TO '{}' STORED AS CSV",
        out.display()
    );
    refused(run(ctx.clone(), copy).await.unwrap_err(), "t.csv");
    assert!(!out.exists(), "a refused COPY wrote its target");
    let direct = "(SELECT * FROM pbg_anonymize('t', '1,1'))";
    assert_eq!(count(ctx.clone(), direct).await.unwrap(), "11");
    // A listing table's directory: a file added by INSERT INTO.
    std::fs::write(&csv, &t1).unwrap();
    run(
        ctx.clone(),
        format!(
            "CREATE EXTERNAL TABLE people STORED AS CSV LOCATION '{}/' OPTIONS ('format.has_header' 'true')",
            lake.display()
        ),
    )
    .await
    .unwrap();
    run(ctx.clone(), declare("lk", "table = \"people\""))
        .await
        .unwrap();
    // A COPY into the directory the profile's table reads is refused, though the query reads
    // no table and the profile names the table, not its files (it was written, changing the
    // input under every view of its release).
    let into_lake = format!(
        "COPY (SELECT 1 AS a) TO '{}/p00.csv' STORED AS CSV",
        lake.display()
    );
    let text = run(ctx.clone(), into_lake).await.unwrap_err().to_string();
    assert!(
        text.contains("p00.csv") && text.contains("never writes over its input"),
        "{text}"
    );
    assert!(!lake.join("p00.csv").exists());
    run(
        ctx.clone(),
        "CREATE VIEW lrel AS SELECT * FROM pbg_anonymize('lk', 'pick', 'k>=2')".into(),
    )
    .await
    .unwrap();
    assert_eq!(count(ctx.clone(), "lrel").await.unwrap(), "10");
    run(
        ctx.clone(),
        "INSERT INTO people VALUES (11, 13053, 28, 'Divorced')".into(),
    )
    .await
    .unwrap();
    refused(count(ctx.clone(), "lrel").await.unwrap_err(), "is new");
    // A memory table: an insert, then (on a view made again) an update of as many rows.
    run(
        ctx.clone(),
        "CREATE TABLE mem AS SELECT * FROM people".into(),
    )
    .await
    .unwrap();
    run(ctx.clone(), declare("m", "table = \"mem\""))
        .await
        .unwrap();
    let view = "CREATE OR REPLACE VIEW mrel AS SELECT * FROM pbg_anonymize('m', 'pick', 'k>=2')";
    run(ctx.clone(), view.into()).await.unwrap();
    assert_eq!(count(ctx.clone(), "mrel").await.unwrap(), "11");
    run(
        ctx.clone(),
        "INSERT INTO mem VALUES (12, 13053, 28, 'Divorced')".into(),
    )
    .await
    .unwrap();
    refused(
        count(ctx.clone(), "mrel").await.unwrap_err(),
        "11 rows then, 12 now",
    );
    run(ctx.clone(), view.into()).await.unwrap();
    assert_eq!(count(ctx.clone(), "mrel").await.unwrap(), "12");
    run(
        ctx.clone(),
        "UPDATE mem SET marital = 'Widowed' WHERE age = 28".into(),
    )
    .await
    .unwrap();
    refused(
        count(ctx.clone(), "mrel").await.unwrap_err(),
        "12 rows then, 12 now",
    );
    // A profile's table that is a view over memory tables: a delete below it.
    run(
        ctx.clone(),
        "CREATE TABLE low AS SELECT * FROM people WHERE id < 5".into(),
    )
    .await
    .unwrap();
    run(
        ctx.clone(),
        "CREATE TABLE high AS SELECT * FROM people WHERE id >= 5".into(),
    )
    .await
    .unwrap();
    run(
        ctx.clone(),
        "CREATE VIEW both_halves AS SELECT * FROM low UNION ALL SELECT * FROM high".into(),
    )
    .await
    .unwrap();
    run(ctx.clone(), declare("v", "table = \"both_halves\""))
        .await
        .unwrap();
    run(
        ctx.clone(),
        "CREATE VIEW vrel AS SELECT * FROM pbg_anonymize('v', 'pick', 'k>=2')".into(),
    )
    .await
    .unwrap();
    assert_eq!(count(ctx.clone(), "vrel").await.unwrap(), "11");
    run(ctx.clone(), "DELETE FROM low WHERE id = 1".into())
        .await
        .unwrap();
    refused(
        count(ctx.clone(), "vrel").await.unwrap_err(),
        "4 rows then, 3 now",
    );
    // A directory input in a session with DataFusion's list-files cache (on by default): a file
    // rewritten with as many bytes and its modification time set back.
    for f in std::fs::read_dir(&lake).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    std::fs::write(&csv, &t1).unwrap();
    let dir_input = format!("input = \"{}/\"", lake.display());
    run(ctx.clone(), declare("d", &dir_input)).await.unwrap();
    run(
        ctx.clone(),
        "CREATE VIEW drel AS SELECT * FROM pbg_anonymize('d', '1,1')".into(),
    )
    .await
    .unwrap();
    assert_eq!(count(ctx.clone(), "drel").await.unwrap(), "10");
    assert_eq!(count(ctx.clone(), "drel").await.unwrap(), "10");
    let modified = std::fs::metadata(&csv).unwrap().modified().unwrap();
    let same_size = t1.replacen("13053", "13054", 1);
    assert_eq!(same_size.len(), t1.len());
    std::fs::write(&csv, &same_size).unwrap();
    let file = std::fs::File::options().write(true).open(&csv).unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    refused(
        count(ctx.clone(), "drel").await.unwrap_err(),
        "the status of file",
    );
    // An INSERT INTO a compressed directory table is refused: DataFusion writes a plain `.csv`
    // file there, which the table's `*.csv.gz` never reads.
    let gz = dir.path().join("gz");
    let copy = format!(
        "COPY (SELECT * FROM mem) TO '{}/a.csv.gz' STORED AS CSV OPTIONS ('format.compression' 'gzip')",
        gz.display()
    );
    run(ctx.clone(), copy).await.unwrap();
    let table = format!(
        "CREATE EXTERNAL TABLE zipped STORED AS CSV LOCATION '{}/' OPTIONS ('format.has_header' 'true', 'format.compression' 'gzip')",
        gz.display()
    );
    run(ctx.clone(), table).await.unwrap();
    let err = run(
        ctx.clone(),
        "INSERT INTO zipped VALUES (12, 13053, 28, 'Divorced')".into(),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("reads compressed files (`*.csv.gz`)"),
        "{err}"
    );
}

/// The rows a release reads are those its statistics counted, also where a session's state or
/// the clock could make them differ: a listing the session's list-files cache holds as it was
/// (then dropped, the rows of a file the statistics never counted were released), a table
/// defined by `now()` or `random()` (another table at each query), a file whose status changed
/// though its size and time did not (a rewrite with its time set back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_reads_the_rows_its_statistics_counted() {
    let dir = tempfile::tempdir().unwrap();
    let t1 = std::fs::read_to_string(repo("datasets/t1/t1.csv")).unwrap();
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    std::fs::write(lake.join("a.csv"), &t1).unwrap();
    let declare = declare_t1;
    // DataFusion's default session (a list-files cache without expiry), with its
    // information_schema.
    let ctx = SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_information_schema(true),
    );
    pbg::sql::register(&ctx);
    let run = |sql: String| {
        let ctx = ctx.clone();
        async move { ctx.sql(&sql).await?.collect().await }
    };
    let table = format!(
        "CREATE EXTERNAL TABLE people STORED AS CSV LOCATION '{}/' OPTIONS ('format.has_header' 'true')",
        lake.display()
    );
    run(table).await.unwrap();
    run("SELECT count(*) FROM people".into()).await.unwrap();
    std::fs::write(
        lake.join("b.csv"),
        "id,zip,age,marital\n11,13053,50,Divorced\n",
    )
    .unwrap();
    run(declare("p", "table = \"people\"")).await.unwrap();
    let err = run("SELECT * FROM pbg_anonymize('p', 'pick', 'k>=3')".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("list-files cache lists") && err.contains("b.csv"),
        "{err}"
    );
    run("SET datafusion.runtime.list_files_cache_limit = '0'".into())
        .await
        .unwrap();
    let b = run("SELECT count(*) FROM pbg_anonymize('p', 'pick', 'k>=3')".into())
        .await
        .unwrap();
    assert_eq!(rows(&b).unwrap()[0][0], "11");
    // Tables that change with the clock, at random, with the order rows arrive in (a scan
    // runs in several partitions), or with the session's state.
    for (name, query, why) in [
        (
            "recent",
            "SELECT * FROM people WHERE CAST(id AS BIGINT) > date_part('epoch', now()) - 1e12",
            "calls now()",
        ),
        (
            "sample",
            "SELECT * FROM people WHERE random() < 0.5",
            "calls random()",
        ),
        ("firsts", "SELECT * FROM people LIMIT 8", "takes a LIMIT"),
        (
            "numbered",
            "SELECT * FROM (SELECT *, row_number() OVER () AS rn FROM people) WHERE rn <= 8",
            "window function",
        ),
        (
            "one_each",
            "SELECT DISTINCT ON (zip) * FROM people",
            "uses DISTINCT ON",
        ),
        (
            "firsts_by_zip",
            "SELECT first_value(id) AS id, zip, first_value(age) AS age, first_value(marital) AS marital FROM people GROUP BY zip",
            "aggregates with first_value()",
        ),
        (
            "running",
            "SELECT *, sum(age) OVER (ORDER BY zip ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS run FROM people",
            "window function sum()",
        ),
        (
            "mean_times",
            "SELECT max(id) AS id, zip, CAST(avg(CAST(age AS BIGINT) * 1000000000000) AS BIGINT) AS age, max(marital) AS marital FROM people GROUP BY zip",
            "takes avg() of Float64 values",
        ),
        (
            "joined",
            "SELECT p.*, s.m FROM people p JOIN (SELECT zip, string_agg(CAST(age AS VARCHAR), marital ORDER BY CAST(age AS VARCHAR)) AS m FROM people GROUP BY zip) s ON p.zip = s.zip",
            "aggregates with string_agg()",
        ),
        (
            "float_totals",
            "SELECT max(id) AS id, zip, CAST(sum(CAST(age AS DOUBLE)) AS BIGINT) AS age, max(marital) AS marital FROM people GROUP BY zip",
            "takes sum() of Float64 values",
        ),
        (
            "settings",
            "SELECT * FROM people WHERE id <> (SELECT CAST(value AS BIGINT) FROM information_schema.df_settings WHERE name = 'datafusion.execution.batch_size')",
            "reads information_schema.df_settings",
        ),
    ] {
        run(format!("CREATE VIEW {name} AS {query}")).await.unwrap();
        run(declare(name, &format!("table = \"{name}\"")))
            .await
            .unwrap();
        let err = run(format!(
            "SELECT * FROM pbg_anonymize('{name}', 'pick', 'k>=2')"
        ))
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(why) && err.contains("CREATE TABLE"),
            "{name}: {err}"
        );
    }
    // A DataFrame registered as a table is a view too: its plan is read and its tables pinned.
    let firsts = ctx
        .table("people")
        .await
        .unwrap()
        .limit(0, Some(5))
        .unwrap();
    ctx.register_table("df_firsts", firsts.into_view()).unwrap();
    run(declare("df_firsts", "table = \"df_firsts\""))
        .await
        .unwrap();
    let err = run("SELECT * FROM pbg_anonymize('df_firsts', '1,1')".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("takes a LIMIT"), "{err}");
    // COPY onto a file the query reads in a subquery only is refused.
    let target = lake.join("a.csv");
    let before = std::fs::read(&target).unwrap();
    let err = run(format!(
        "COPY (SELECT * FROM (VALUES (1), (2)) AS v(x) WHERE x IN (SELECT CAST(id AS BIGINT) FROM people)) TO '{}' STORED AS CSV",
        target.display()
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("pbg_copy_guard"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), before);
    // Steady inputs pass: ranks and steady aggregates over whole partitions depend on the
    // values alone, sums of integers not on the order they are added in, and the file a row
    // comes from is pinned with the files.
    for (name, query) in [
        (
            "households",
            "SELECT *, count(*) OVER (PARTITION BY zip) AS household, rank() OVER (ORDER BY age) AS age_rank FROM people",
        ),
        (
            "totals",
            "SELECT id, zip, sum(age) AS age, max(marital) AS marital FROM people GROUP BY id, zip",
        ),
        ("named", "SELECT *, input_file_name() AS file FROM people"),
    ] {
        run(format!("CREATE VIEW {name} AS {query}")).await.unwrap();
        run(declare(name, &format!("table = \"{name}\"")))
            .await
            .unwrap();
        let b = run(format!(
            "SELECT count(*) FROM pbg_anonymize('{name}', '1,1')"
        ))
        .await
        .unwrap();
        assert_eq!(rows(&b).unwrap()[0][0], "11", "{name}");
    }
    // A CSV table without its own header option takes the session's when it is scanned.
    let bare = dir.path().join("bare.csv");
    std::fs::write(
        &bare,
        t1.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n",
    )
    .unwrap();
    run("SET datafusion.catalog.has_header = false".into())
        .await
        .unwrap();
    run(format!(
        "CREATE EXTERNAL TABLE bare (id INT, zip INT, age INT, marital VARCHAR) STORED AS CSV LOCATION '{}'",
        bare.display()
    ))
    .await
    .unwrap();
    run(declare("bare", "table = \"bare\"")).await.unwrap();
    run("CREATE VIEW bare_rel AS SELECT * FROM pbg_anonymize('bare', '1,1')".into())
        .await
        .unwrap();
    let b = run("SELECT count(*) FROM bare_rel".into()).await.unwrap();
    assert_eq!(rows(&b).unwrap()[0][0], "10");
    // A writer's setting changes nothing read.
    run("SET datafusion.execution.parquet.compression = 'snappy'".into())
        .await
        .unwrap();
    let b = run("SELECT count(*) FROM bare_rel".into()).await.unwrap();
    assert_eq!(rows(&b).unwrap()[0][0], "10");
    run("SET datafusion.catalog.has_header = true".into())
        .await
        .unwrap();
    let err = run("SELECT count(*) FROM bare_rel".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("setting datafusion.catalog.has_header was false and is true"),
        "{err}"
    );
    // A change of status alone is named as what it is.
    run(declare("d", &format!("input = \"{}/\"", lake.display())))
        .await
        .unwrap();
    run("CREATE VIEW rel AS SELECT * FROM pbg_anonymize('d', '1,1')".into())
        .await
        .unwrap();
    let modified = std::fs::metadata(lake.join("a.csv"))
        .unwrap()
        .modified()
        .unwrap();
    let file = std::fs::File::options()
        .write(true)
        .open(lake.join("a.csv"))
        .unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    let err = run("SELECT count(*) FROM rel".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("status of file") && err.contains("(ctime)"),
        "{err}"
    );
}

/// A SQL release streams: COPY of pbg_anonymize over 300,000 rows passes in a session whose
/// memory pool holds 48 MB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sql_release_runs_in_a_small_memory_pool() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.parquet");
    pbg_json(&[
        "generate",
        "adult-like",
        "--rows",
        "300000",
        "--seed",
        "3",
        "--output",
        input.to_str().unwrap(),
    ]);
    let runtime = datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
        .with_memory_limit(48 << 20, 1.0)
        .build_arc()
        .unwrap();
    let ctx =
        SessionContext::new_with_config_rt(datafusion::prelude::SessionConfig::new(), runtime);
    let registry = pbg::sql::register(&ctx);
    let mut profile = Profile::from_toml_file(&repo("datasets/adult/adult.toml")).unwrap();
    profile.input = pbg::input::Input::Path(input.clone());
    profile.identifiers = vec!["id".into()];
    registry.declare("big", profile).unwrap();
    let out = dir.path().join("release.parquet");
    ctx.sql(&format!(
        "COPY (SELECT * FROM pbg_anonymize('big', 'pick', 'k>=5', 'glm')) TO '{}' STORED AS PARQUET",
        out.display()
    ))
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    let b = ctx
        .sql(&format!(
            "SELECT rows_in, verified FROM pbg_verify('big', '{}', 'k>=5')",
            out.display()
        ))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(
        rows(&b).unwrap(),
        vec![vec!["300000".to_string(), "true".to_string()]]
    );
}

/// A hierarchy may be a registered table (leaf column, then one column per level): the same
/// indices as the same hierarchy written inline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hierarchy_from_a_registered_table() {
    let ctx = pbg::input::new_context();
    pbg::sql::register(&ctx);
    let t1 = repo("datasets/t1/t1.csv");
    let run = |sql: String| {
        let ctx = ctx.clone();
        async move { rows(&ctx.sql(&sql).await.unwrap().collect().await.unwrap()).unwrap() }
    };
    run("CREATE TABLE age_levels (leaf VARCHAR, l1 VARCHAR, l2 VARCHAR, l3 VARCHAR) AS VALUES \
         ('26','(25,35]','(15,35]','*'), ('28','(25,35]','(15,35]','*'), ('31','(25,35]','(15,35]','*'), \
         ('39','(35,45]','(35,55]','*'), ('41','(35,45]','(35,55]','*'), ('42','(35,45]','(35,55]','*'), \
         ('47','(45,55]','(35,55]','*'), ('49','(45,55]','(35,55]','*'), ('50','(45,55]','(35,55]','*'), \
         ('55','(45,55]','(35,55]','*')"
        .to_string())
    .await;
    let toml = format!(
        "input = \"{}\"\nsensitive = \"marital\"\nidentifiers = [\"id\"]\n[[qi]]\nname = \"zip\"\nhierarchy = {{ type = \"mask\", steps = 3 }}\n[[qi]]\nname = \"age\"\nhierarchy = {{ type = \"sql\", table = \"age_levels\" }}\n",
        t1.display()
    );
    run(format!("SELECT * FROM pbg_profile('s', '{toml}')")).await;
    run(format!(
        "SELECT * FROM pbg_profile('inline', '{}')",
        repo("datasets/t1/t1.toml").display()
    ))
    .await;
    for node in ["1,1", "2,2", "0,3"] {
        let q = |p: &str| {
            format!("SELECT classes, k, l_distinct, glm FROM pbg_evaluate('{p}', '{node}')")
        };
        assert_eq!(run(q("s")).await, run(q("inline")).await, "node {node}");
    }
}

/// The prompt's commands (here piped): `\d`, `\d NAME`, `\f`, SHOW TABLES, `\q` stops; an unknown
/// command is one clear error.
#[test]
fn prompt_commands() {
    use std::io::Write;
    let run = |input: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pbg"))
            .args(["sql", "datasets/t1/t1.toml"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let o = run("\\?\n\\d\n\\d t1\n\\f\nSHOW TABLES;\n\\q\nSELECT 'after quit';\n");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    for expected in [
        "\\d NAME",
        "| t1 ",
        "| marital ",
        "pbg_lattice         table",
        "emd_equal           aggregate",
        "generalize          scalar",
        "information_schema",
    ] {
        assert!(out.contains(expected), "{expected} missing:\n{out}");
    }
    assert!(!out.contains("after quit"), "{out}");
    let o = run("\\z\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("unknown command `\\z`"),
        "{err}"
    );
    assert_eq!(err.matches("unknown command").count(), 1, "{err}");
}

/// A query that fails on row 90,000, after many batches were written.
const FAILS_LATE: &str = "SELECT CAST(CASE WHEN value = 90000 THEN 'x' ELSE '1' END AS INT) AS c FROM generate_series(1, 100000)";

/// The hidden links to previous files a guarded write left in `dir`.
fn links_left(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("pbg-previous"))
        .collect()
}

/// The batches of `sql` run in `ctx`.
async fn run_sql(ctx: SessionContext, sql: String) -> datafusion::error::Result<Vec<RecordBatch>> {
    ctx.sql(&sql).await?.collect().await
}

/// A failed write leaves its target as it was: DataFusion 55 finishes the writers of a failed
/// write, which left the rows before the failure in the target (part of a release, its
/// classes cut below k) or an existing target empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_copy_leaves_its_target_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = SessionContext::new();
    pbg::sql::register(&ctx);
    let run = |sql: String| run_sql(ctx.clone(), sql);
    let late = FAILS_LATE;
    // Fails at its first batch (a struct cannot go to CSV).
    let early = "SELECT named_struct('x', value) AS s FROM generate_series(1, 10)";
    let previous = dir.path().join("previous.csv");
    let fresh = dir.path().join("fresh.csv");
    // A name near the file system's 255 bytes: the kept file's name, made from it, was too long,
    // and the failed write removed the target it could not keep.
    let long = dir.path().join(format!("{}.csv", "r".repeat(240)));
    for query in [late, early] {
        std::fs::write(&previous, "c\n7\n").unwrap();
        std::fs::write(&long, "c\n7\n").unwrap();
        for target in [&previous, &fresh, &long] {
            let copy = format!("COPY ({query}) TO '{}' STORED AS CSV", target.display());
            let err = run(copy).await.unwrap_err().to_string();
            assert!(
                err.contains("Cast error") || err.contains("Struct"),
                "{err}"
            );
        }
        assert_eq!(std::fs::read_to_string(&previous).unwrap(), "c\n7\n");
        assert_eq!(std::fs::read_to_string(&long).unwrap(), "c\n7\n");
        assert!(!fresh.exists(), "a failed COPY left {}", fresh.display());
    }
    // A directory target keeps its files, and gets none of the failed write's.
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    std::fs::write(lake.join("old.csv"), "c\n7\n").unwrap();
    let copy = format!("COPY ({late}) TO '{}/' STORED AS CSV", lake.display());
    run(copy).await.unwrap_err();
    let names: Vec<_> = std::fs::read_dir(&lake)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["old.csv"]);
    // Nor does a partitioned write leave its partition directories, or a write the directories
    // it made on the way to its target.
    let partitioned = format!(
        "COPY (SELECT CAST(CASE WHEN value = 90000 THEN 'x' ELSE '1' END AS INT) AS c, value % 3 AS p FROM generate_series(1, 100000)) TO '{}/' STORED AS CSV PARTITIONED BY (p)",
        lake.display()
    );
    run(partitioned).await.unwrap_err();
    let names: Vec<_> = std::fs::read_dir(&lake)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["old.csv"]);
    // A partition directory that is a symbolic link: the write's file there goes too.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, lake.join("p=1")).unwrap();
    let partitioned = format!(
        "COPY (SELECT CAST(CASE WHEN value = 90000 THEN 'x' ELSE '1' END AS INT) AS c, value % 3 AS p FROM generate_series(1, 100000)) TO '{}/' STORED AS CSV PARTITIONED BY (p)",
        lake.display()
    );
    run(partitioned).await.unwrap_err();
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    std::fs::remove_file(lake.join("p=1")).unwrap();
    let deep = dir.path().join("new/sub/x.csv");
    run(format!(
        "COPY ({late}) TO '{}' STORED AS CSV",
        deep.display()
    ))
    .await
    .unwrap_err();
    assert!(!dir.path().join("new").exists());
    // No link to a previous file is left beside it, and a write that succeeds replaces it,
    // keeping its access (a `0600` target came back `0644`).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&previous, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ok = format!(
        "COPY (SELECT 1 AS c) TO '{}' STORED AS CSV",
        previous.display()
    );
    run(ok).await.unwrap();
    assert_eq!(std::fs::read_to_string(&previous).unwrap(), "c\n1\n");
    let mode = std::fs::metadata(&previous).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let left = links_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
    // A name of 254 bytes or more leaves no room for the object store's staged `NAME#1`: named
    // before anything is written (it was DataFusion's "Internal error" after the write), and
    // the previous file stays. 253 bytes are written.
    for (bytes, fits) in [(253, true), (254, false), (255, false)] {
        let target = dir.path().join(format!("{}.csv", "n".repeat(bytes - 4)));
        if !fits {
            std::fs::write(&target, "c\n7\n").unwrap();
        }
        let copy = format!(
            "COPY (SELECT 1 AS c) TO '{}' STORED AS CSV",
            target.display()
        );
        match run(copy).await {
            Ok(_) => assert!(fits, "{bytes} bytes"),
            Err(e) => {
                let e = e.to_string();
                assert!(
                    !fits && e.contains(&format!("its name is {bytes} bytes")),
                    "{e}"
                );
                assert!(!e.contains("Internal error"), "{e}");
                assert_eq!(std::fs::read_to_string(&target).unwrap(), "c\n7\n");
            }
        }
    }
}

/// The same for Arrow IPC targets (DataFusion's Arrow sink is private: pbg's session plans those
/// writes with a format of its own), `COPY` and `INSERT INTO` a table stored as Arrow; what
/// succeeds is written and reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_arrow_copy_leaves_its_target_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = SessionContext::new();
    pbg::sql::register(&ctx);
    let run = |sql: String| run_sql(ctx.clone(), sql);
    let count = |sql: String| {
        let ctx = ctx.clone();
        async move {
            let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
            let column = batches[0].column(0);
            column
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap()
                .value(0)
        }
    };
    let late = FAILS_LATE;
    let previous = dir.path().join("previous.arrow");
    run(format!(
        "COPY (SELECT CAST(7 AS INT) AS c) TO '{}' STORED AS ARROW",
        previous.display()
    ))
    .await
    .unwrap();
    let before = std::fs::read(&previous).unwrap();
    // One guard, right above the write: a repartition between them ran two guards over one
    // write, and one of them left its link behind (or restored what the other committed).
    let explain = format!(
        "EXPLAIN COPY ({late}) TO '{}' STORED AS ARROW",
        previous.display()
    );
    let plan = run(explain).await.unwrap();
    let plan = arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string();
    let nodes: Vec<&str> = plan
        .lines()
        .filter_map(|l| l.split('|').nth(2))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let guard = nodes.iter().position(|n| n.starts_with("GuardedWriteExec"));
    let guard = guard.unwrap_or_else(|| panic!("{plan}"));
    assert!(nodes[guard + 1].starts_with("DataSinkExec"), "{plan}");
    assert_eq!(plan.matches("GuardedWriteExec").count(), 1, "{plan}");
    let fresh = dir.path().join("fresh.arrow");
    for target in [&previous, &fresh] {
        let copy = format!("COPY ({late}) TO '{}' STORED AS ARROW", target.display());
        let err = run(copy).await.unwrap_err().to_string();
        assert!(err.contains("Cast error"), "{err}");
    }
    assert_eq!(std::fs::read(&previous).unwrap(), before);
    assert!(!fresh.exists(), "a failed COPY left {}", fresh.display());
    // A directory target keeps its files, and gets none of the failed write's.
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    std::fs::copy(&previous, lake.join("old.arrow")).unwrap();
    let copy = format!("COPY ({late}) TO '{}/' STORED AS ARROW", lake.display());
    run(copy).await.unwrap_err();
    let names: Vec<_> = std::fs::read_dir(&lake)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["old.arrow"]);
    // INSERT INTO a table stored as Arrow: the failed one adds no file.
    run(format!(
        "CREATE EXTERNAL TABLE lake STORED AS ARROW LOCATION '{}/'",
        lake.display()
    ))
    .await
    .unwrap();
    run(format!("INSERT INTO lake {late}")).await.unwrap_err();
    let names: Vec<_> = std::fs::read_dir(&lake)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["old.arrow"]);
    run("INSERT INTO lake SELECT CAST(value AS INT) AS c FROM generate_series(1, 5)".into())
        .await
        .unwrap();
    assert_eq!(count("SELECT count(*) FROM lake".into()).await, 6);
    // A write that succeeds replaces the file, and no link to the previous one is left.
    let ok = format!(
        "COPY (SELECT CAST(value AS INT) AS c FROM generate_series(1, 3)) TO '{}' STORED AS ARROW",
        previous.display()
    );
    run(ok).await.unwrap();
    run(format!(
        "CREATE EXTERNAL TABLE previous STORED AS ARROW LOCATION '{}'",
        previous.display()
    ))
    .await
    .unwrap();
    assert_eq!(count("SELECT count(*) FROM previous".into()).await, 3);
    let left = links_left(dir.path());
    assert!(left.is_empty(), "{left:?}");
}
