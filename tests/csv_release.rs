//! CSV releases written from the rows pass 1 keeps (one read of the input): the same bytes as the
//! DataFusion release plan, rows in input order across partitions, and the plan as the fallback.

use std::sync::Arc;

use crate::common::{pbg, pbg_json, repo};

/// A CSV whose kept values need quoting (commas, quotes, a newline, spaces, an empty field).
const TRICKY: &str = "id,zip,age,note,diagnosis
1,13053,26,\"a,b\",flu
2,13068,28,\"say \"\"hi\"\"\",flu
3,13068,31,plain,cold
4,13053,39,\"two
lines\",cold
5,14853,41, spaced ,flu
6,14853,42,,cancer
7,14850,47,Zürich — ü,cancer
8,14850,49,#hash,flu
9,13053,50,'single',cold
10,14853,55,\"x\"\"\",hiv
11,13068,26,tail;semi,flu
12,14850,28,\"\",cold
";

const PROFILE: &str = r#"
input = "tricky.csv"
sensitive = "diagnosis"
identifiers = ["id"]
suppression_limit = "25%"

[[qi]]
name = "zip"
hierarchy = { type = "mask", steps = 3 }

[[qi]]
name = "age"
hierarchy = { type = "table", rows = [
  ["26", "(25,35]", "*"], ["28", "(25,35]", "*"], ["31", "(25,35]", "*"],
  ["39", "(35,45]", "*"], ["41", "(35,45]", "*"], ["42", "(35,45]", "*"],
  ["47", "(45,55]", "*"], ["49", "(45,55]", "*"], ["50", "(45,55]", "*"],
  ["55", "(45,55]", "*"],
] }
"#;

/// The kept-rows CSV release and `COPY` of the release plan write the same bytes (one partition:
/// both in input order), suppression included; the report says the input was read once.
#[test]
fn kept_release_equals_the_plan_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tricky.csv"), TRICKY).unwrap();
    let profile = dir.path().join("tricky.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    let profile = profile.to_str().unwrap();
    for node in ["0,0", "1,1", "2,1", "3,2"] {
        let cli = dir.path().join(format!("cli-{node}.csv"));
        let report = pbg_json(&[
            "anonymize",
            profile,
            "--node",
            node,
            "--output",
            cli.to_str().unwrap(),
        ]);
        assert_eq!(report["input_reads"], 1, "{report}");
        assert_eq!(report["verified"], true);
        let sql = dir.path().join(format!("sql-{node}.csv"));
        let o = pbg(&[
            "sql",
            profile,
            "-c",
            &format!(
                "COPY (SELECT * FROM pbg_anonymize('tricky', '{node}')) TO '{}' STORED AS CSV",
                sql.display()
            ),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (a, b) = (std::fs::read(&cli).unwrap(), std::fs::read(&sql).unwrap());
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "node {node}"
        );
        if node == "3,2" {
            // One class, nothing suppressed: every kept value, quoted where needed.
            let text = String::from_utf8(a).unwrap();
            assert!(text.starts_with("zip,age,note,diagnosis\n"), "{text}");
            for v in [
                "\"two\nlines\"",
                "\"say \"\"hi\"\"\"",
                ", spaced ,",
                "\"x\"\"\"",
            ] {
                assert!(text.contains(v), "{v} missing from {text}");
            }
            assert_eq!(report["rows_released"], 12);
        }
    }
}

/// Over several partitions (a CSV above DataFusion's 10 MB split size), the kept release keeps
/// the input's row order: at the bottom node it is the input itself, comma-separated.
#[test]
fn kept_release_is_in_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let adult = std::fs::read_to_string(repo("datasets/adult/adult.csv")).unwrap();
    let (header, body) = adult.split_once('\n').unwrap();
    let mut big = format!("{header}\n");
    for _ in 0..5 {
        big.push_str(body);
    }
    assert!(big.len() > 11 << 20);
    let input = dir.path().join("adult5.csv");
    std::fs::write(&input, &big).unwrap();
    let out = dir.path().join("out.csv");
    let report = pbg_json(&[
        "anonymize",
        "datasets/adult/adult.toml",
        "--input",
        input.to_str().unwrap(),
        "--node",
        "0,0,0,0,0,0,0,0",
        "--suppression-limit",
        "0",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(report["input_reads"], 1);
    assert_eq!(report["rows_released"], 5 * 30162);
    let written = std::fs::read_to_string(&out).unwrap();
    // adult.csv ends its lines with CRLF; a release ends them with LF.
    let expected = big.replace(';', ",").replace("\r\n", "\n");
    assert!(written == expected, "rows out of input order");

    // Read again in ordered ranges (what a CSV too large to keep gets): the same file, here at a
    // node with suppression too.
    let mut profile = pbg::Profile::from_toml_file(&repo("datasets/adult/adult.toml")).unwrap();
    profile.input = pbg::input::Input::Path(input.clone());
    let ctx = pbg::input::new_context();
    let (ds, kept) = pbg::input::block_on(pbg::statistics::statistics_with(
        &ctx,
        &profile,
        pbg::release::KeptRows::new(pbg::release::KEEP_LIMIT, None),
    ))
    .unwrap()
    .unwrap();
    let ev = pbg::Evaluator::new(Arc::new(ds)).unwrap();
    for node in [[0u8; 8], [3, 1, 1, 2, 1, 1, 2, 0]] {
        let a = dir.path().join("kept.csv");
        let b = dir.path().join("streamed.csv");
        let kept_fp =
            pbg::release::write_kept_csv(&ev, &node, kept.batches().unwrap(), &a).unwrap();
        let streamed_fp =
            pbg::input::block_on(pbg::release::write_streamed_csv(&ctx, &ev, &node, &b))
                .unwrap()
                .unwrap();
        assert_eq!(kept_fp, streamed_fp);
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "node {node:?}"
        );
    }
}

/// A CSV release whose rows do not fit the budget goes through the release plan (two reads) and
/// holds the same rows as the kept release; a Parquet release of a CSV input is the release plan
/// over the kept rows (one read).
#[test]
fn the_plan_is_the_fallback() {
    use pbg::release::{KeptRows, write_kept_csv, write_release};
    let dir = tempfile::tempdir().unwrap();
    for (name, reads) in [("kept.csv", 1), ("kept.parquet", 1)] {
        let out = dir.path().join(name);
        let report = pbg_json(&[
            "anonymize",
            "datasets/adult/adult.toml",
            "--node",
            "2,1,1,1,0,1,2,1",
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(report["input_reads"], reads, "{name}");
    }

    // Library: a budget too small keeps nothing; a large one keeps every row; both writers
    // produce the same fingerprint and the same lines.
    let profile = pbg::Profile::from_toml_file(&repo("datasets/adult/adult.toml")).unwrap();
    let ctx = pbg::input::new_context();
    let run = |limit| {
        pbg::input::block_on(pbg::statistics::statistics_with(
            &ctx,
            &profile,
            KeptRows::new(limit, None),
        ))
        .unwrap()
        .unwrap()
    };
    let (_, none) = run(1000);
    assert!(none.batches().is_none());
    // A session pool too small for the rows stops the keeping too.
    let small: Arc<dyn datafusion::execution::memory_pool::MemoryPool> = Arc::new(
        datafusion::execution::memory_pool::GreedyMemoryPool::new(4096),
    );
    let (_, refused) = pbg::input::block_on(pbg::statistics::statistics_with(
        &ctx,
        &profile,
        KeptRows::new(pbg::release::KEEP_LIMIT, Some(&small)),
    ))
    .unwrap()
    .unwrap();
    assert!(refused.batches().is_none());
    assert_eq!(small.reserved(), 0, "the pool gets the bytes back");
    let (ds, kept) = run(pbg::release::KEEP_LIMIT);
    // One byte per key (nine columns of at most 256 distinct values per batch), not four.
    assert!(kept.bytes() < 30162 * 9 * 2, "{} bytes kept", kept.bytes());
    let ev = pbg::Evaluator::new(Arc::new(ds)).unwrap();
    let node = [3, 1, 1, 2, 1, 1, 2, 0];
    let a = dir.path().join("a.csv");
    let (rows_a, fp_a) = write_kept_csv(&ev, &node, kept.batches().unwrap(), &a).unwrap();
    let b = dir.path().join("b.csv");
    let (rows_b, fp_b) = pbg::input::block_on(write_release(
        &ctx,
        &ev,
        &node,
        &b,
        pbg::io::OutputFormat::Csv,
    ))
    .unwrap()
    .unwrap();
    assert_eq!((rows_a, Some(&fp_a)), (rows_b, fp_b.as_ref()));
    let lines = |p: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        v.sort();
        v
    };
    assert_eq!(lines(&a), lines(&b));
}

/// A quoted value spanning many lines in a CSV large enough to be split into byte ranges: the
/// lines inside it must not become rows (they could make a small class look large). The input is
/// read one file per partition instead, and every record comes out whole.
#[test]
fn quoted_line_breaks_are_not_rows() {
    use std::fmt::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("id,zip,age,diag,note\n");
    let mut records = 0u64;
    while text.len() < 9_000_000 {
        writeln!(text, "{records},13053,26,flu,v").unwrap();
        records += 1;
    }
    let inner: Vec<String> = (0..110_000)
        .map(|j| format!("{},13053,26,flu,FAKE{j}", 900_000_000 + j))
        .collect();
    writeln!(
        text,
        "{records},13053,26,flu,\"START\n{}\"",
        inner.join("\n")
    )
    .unwrap();
    records += 1;
    while text.len() < 22_000_000 {
        writeln!(text, "{}{records},13268,28,cold,v", "L".repeat(200)).unwrap();
        records += 1;
    }
    std::fs::write(dir.path().join("d.csv"), &text).unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(
        &profile,
        r#"input = "d.csv"
sensitive = "diag"
identifiers = ["id"]
[[qi]]
name = "zip"
hierarchy = { type = "mask", steps = 3 }
[[qi]]
name = "age"
hierarchy = { type = "table", rows = [["26", "(25,35]", "*"], ["28", "(25,35]", "*"]] }
"#,
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let report = pbg_json(&[
        "anonymize",
        profile.to_str().unwrap(),
        "--node",
        "1,1",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(report["rows_in"], records, "{report}");
    assert_eq!(report["rows_released"], records);
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(written.matches("FAKE").count(), 110_000);
    assert!(
        written.contains("\"START\n"),
        "the multi-line value is whole"
    );
}
