//! Fuzz-style robustness through the binary: random, often malformed tables (CSV or Parquet),
//! hierarchies (inline or ARX files) and profiles go to every command. Each run must end in
//! success or in a non-zero exit with a message — never a panic, an abort or an internal error —
//! must leave its inputs byte for byte as they were and write no output on failure; every release
//! written must be accepted by `pbg verify`. `FUZZ_TALLY=1` prints each run's outcome (to tune the
//! mix: about a quarter of the cases get through every command).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use proptest::prelude::*;

use crate::common::pbg;

/// Text cells rich in separators, quotes, blanks, lookalikes and non-finite numbers.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => "[0-9]{1,5}",
        8 => "0[0-9]{2,4}",
        8 => "[a-c]{1,3}",
        1 => Just(String::new()),
        1 => Just("\"a,b\"".to_string()),
        1 => Just("a;b".to_string()),
        1 => Just(" 7".to_string()),
        1 => Just("1e3".to_string()),
        1 => Just("NaN".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("é\u{0}".to_string()),
    ]
}

/// A header (duplicates and missing roles included) and rows of three cells.
fn table() -> impl Strategy<Value = (Vec<&'static str>, Vec<Vec<String>>)> {
    (
        prop_oneof![
            12 => Just(vec!["zip", "disease", "note"]),
            1 => Just(vec!["zip", "disease", "zip"]),
            1 => Just(vec!["disease", "zip", "x"]),
            1 => Just(vec!["zip", "illness", "note"]),
        ],
        proptest::collection::vec(proptest::collection::vec(cell(), 3), 0..14),
    )
}

/// A hierarchy declaration: inline, or `file` for an ARX file written by [`arx_file`].
fn hierarchy() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        1 => Just("{ type = \"mask\" }"),
        1 => Just("{ type = \"mask\", steps = 2 }"),
        1 => Just("{ type = \"mask\", steps = 0 }"),
        1 => Just("{ type = \"interval\", widths = [10, 100] }"),
        1 => Just("{ type = \"interval\", cuts = [[50, 10]] }"),
        1 => Just("{ type = \"table\", rows = [[\"1\", \"*\"], [\"2\", \"*\"]] }"),
        1 => Just("{ type = \"date\", levels = [\"year\"] }"),
        8 => Just("file"),
    ]
}

/// How the ARX hierarchy file is spoiled (0: not at all).
fn spoil() -> impl Strategy<Value = u8> {
    prop_oneof![12 => Just(0u8), 1 => Just(1), 1 => Just(2), 1 => Just(3), 1 => Just(4)]
}

/// An ARX hierarchy of the zip values present: leaf;prefix;*, spoiled by `how` (1: a leaf
/// missing, 2: tab-delimited, 3: ragged heights, 4: empty).
fn arx_file(zips: &[String], how: u8) -> String {
    let mut leaves: Vec<&String> = zips.iter().collect();
    leaves.sort();
    leaves.dedup();
    if how == 1 && !leaves.is_empty() {
        leaves.remove(0);
    }
    let d = if how == 2 { "\t" } else { ";" };
    let mut text = String::new();
    for (i, v) in leaves.iter().enumerate() {
        let prefix: String = v.chars().take(1).collect();
        if how == 3 && i % 2 == 1 {
            text += &format!("{v}{d}*\n");
        } else {
            text += &format!("{v}{d}{prefix}~{d}*\n");
        }
    }
    if how == 4 { String::new() } else { text }
}

/// Optional profile lines, some of them wrong.
fn extras() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::collection::vec(
        prop_oneof![
            6 => Just("suppression_limit = \"20%\""),
            1 => Just("suppression_limit = \"abc\""),
            1 => Just("suppression_limit = \"101%\""),
            6 => Just("suppression_rule = \"requirements\""),
            1 => Just("suppression_rule = \"bogus\""),
            6 => Just("identifiers = [\"note\"]"),
            1 => Just("identifiers = [\"nope\"]"),
            1 => Just("colour = 1"),
        ],
        0..2,
    )
}

fn write_parquet(path: &Path, header: &[&str], rows: &[Vec<String>]) {
    let fields: Vec<Field> = header
        .iter()
        .map(|h| Field::new(*h, DataType::Utf8, true))
        .collect();
    let columns: Vec<ArrayRef> = (0..header.len())
        .map(|c| {
            // An empty cell is a null in Parquet.
            let values: Vec<Option<&str>> = rows
                .iter()
                .map(|r| Some(r[c].as_str()).filter(|v| !v.is_empty()))
                .collect();
            Arc::new(StringArray::from(values)) as ArrayRef
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let file = fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema.clone(), None).unwrap();
    if !rows.is_empty() {
        w.write(&RecordBatch::try_new(schema, columns).unwrap())
            .unwrap();
    }
    w.close().unwrap();
}

/// One run of the binary: fails the case on a panic, an abort, an internal error or a silent
/// failure; returns whether it succeeded.
fn run(args: &[&str], context: &str) -> Result<bool, TestCaseError> {
    let out = pbg(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    prop_assert!(
        matches!(code, Some(0..=2)),
        "pbg {args:?} ended with {code:?} on {context}: {stderr}"
    );
    for bad in [
        "panicked",
        "RUST_BACKTRACE",
        "Internal error",
        "bug in DataFusion",
    ] {
        prop_assert!(!stderr.contains(bad), "pbg {args:?} on {context}: {stderr}");
    }
    if code != Some(0) {
        prop_assert!(
            !stderr.trim().is_empty(),
            "pbg {args:?} failed silently on {context}"
        );
    }
    if std::env::var("FUZZ_TALLY").is_ok() {
        eprintln!(
            "TALLY {} {} {}",
            args[1],
            code == Some(0),
            stderr
                .lines()
                .last()
                .unwrap_or("")
                .chars()
                .take(150)
                .collect::<String>()
        );
    }
    Ok(code == Some(0))
}

/// Each file's bytes, to check that no command changed an input.
fn snapshot(paths: &[&PathBuf]) -> Vec<Option<Vec<u8>>> {
    paths.iter().map(|p| fs::read(p).ok()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]

    #[test]
    fn every_command_ends_in_a_clear_error_or_a_verified_result(
        (header, rows) in table(),
        h in hierarchy(),
        how in spoil(),
        parquet in any::<bool>(),
        delimiter in prop_oneof![Just(','), Just(';')],
        extra in extras(),
        release_parquet in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name);
        let data = p(if parquet { "d.parquet" } else { "d.csv" });
        let d = delimiter.to_string();
        if parquet {
            write_parquet(&data, &header, &rows);
        } else {
            let mut text = header.join(&d) + "\n";
            for r in &rows {
                text += &(r.join(&d) + "\n");
            }
            fs::write(&data, text).unwrap();
        }
        let zip = header.iter().position(|c| *c == "zip").unwrap_or(0);
        let zips: Vec<String> = rows.iter().map(|r| r[zip].clone()).collect();
        let hfile = p("h.csv");
        fs::write(&hfile, arx_file(&zips, how)).unwrap();
        let hierarchy = if h == "file" { "\"h.csv\"".to_string() } else { h.to_string() };
        let mut toml = format!(
            "input = \"{}\"\ndelimiter = \"{d}\"\nsensitive = \"disease\"\n",
            data.file_name().unwrap().to_string_lossy()
        );
        for e in &extra {
            toml += e;
            toml.push('\n');
        }
        toml += &format!("[[qi]]\nname = \"zip\"\nhierarchy = {hierarchy}\n");
        let profile = p("p.toml");
        fs::write(&profile, &toml).unwrap();
        let context = format!("{toml}with {} rows ({})", rows.len(), if parquet { "parquet" } else { "csv" });
        let inputs = [&data, &hfile, &profile];
        let before = snapshot(&inputs);
        let prof = profile.to_str().unwrap();
        let out_name = if release_parquet { "r.parquet" } else { "r.csv" };
        let release = p(out_name);
        let s = |x: &PathBuf| x.to_str().unwrap().to_string();

        run(&["--quiet", "evaluate", prof, "--node", "0"], &context)?;
        run(&["--quiet", "lattice", prof], &context)?;
        run(&["--quiet", "search", prof, "--objectives", "k,glm"], &context)?;
        run(&["--quiet", "compare", prof, "--node", "0", "--node", "1", "--property", "equiv"], &context)?;
        run(&["--quiet", "correlate", prof], &context)?;
        run(&["--quiet", "sql", prof, "--table", "d", "-c", "SELECT * FROM pbg_evaluate('d', '0')"], &context)?;
        run(&["--quiet", "init", "--input", &s(&data), "--delimiter", &d, "--output", &s(&p("drafted"))], &context)?;
        let built = p("built.csv");
        if !run(&["--quiet", "hierarchy", "build", "--input", &s(&data), "--delimiter", &d, "--column", "zip", "--output", &s(&built)], &context)? {
            prop_assert!(!built.exists(), "a hierarchy after a failure");
        }
        let report = p("r.html");
        if !run(&["--quiet", "report", prof, "--node", "0", "--output", &s(&report)], &context)? {
            prop_assert!(!report.exists(), "a report after a failure");
        }
        let sliced = p("s.csv");
        if !run(&["--quiet", "slice", prof, "--l", "2", "--output", &s(&sliced)], &context)? {
            prop_assert!(!sliced.exists(), "a slicing after a failure");
        }
        // Releases: every one written is accepted by verify, under the rule it was made with.
        for (node, picked) in [("0", None), ("1", None), ("", Some("k>=2,l>=2"))] {
            let mut args = vec!["--quiet", "anonymize", prof, "--output", release.to_str().unwrap()];
            match picked {
                Some(require) => args.extend(["--pick", "--require", require]),
                None => args.extend(["--node", node]),
            }
            if run(&args, &context)? {
                let mut check = vec!["--quiet", "verify", prof, "--release", release.to_str().unwrap()];
                if let Some(require) = picked {
                    check.extend(["--require", require]);
                }
                prop_assert!(run(&check, &context)?, "verify refused a release of {args:?} on {context}");
                fs::remove_file(&release).unwrap();
            } else {
                prop_assert!(!release.exists(), "a release after a failure: {args:?}");
            }
        }
        // The input is never a release of itself, and never overwritten.
        run(&["--quiet", "verify", prof, "--release", &s(&data)], &context)?;
        prop_assert!(!run(&["--quiet", "anonymize", prof, "--node", "0", "--output", &s(&data)], &context)?);
        prop_assert!(snapshot(&inputs) == before, "an input changed on {context}");
        let left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.') || n.contains(".tmp"))
            .collect();
        prop_assert!(left.is_empty(), "temporary files left: {left:?}");
    }
}
