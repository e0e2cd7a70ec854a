//! Batch anonymization at scale: statistics = rows, streamed release = in-memory release,
//! `--pick` policies against brute force, `pbg verify` rejecting tampered releases, row
//! accounting, deterministic generation, and a run killed mid-write.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pbg::policy::{Choice, Measure, Policy, Requirement, pick};
use pbg::{Dataset, Evaluator, Objective, Profile};

use crate::common::{evaluator, pbg, pbg_json, repo};

const ADULT: &str = "datasets/adult/adult.toml";

fn statistics_evaluator(profile: &str) -> Evaluator {
    let p = Profile::from_toml_file(&repo(profile)).unwrap();
    let ds = Dataset::load_statistics(&p).unwrap();
    Evaluator::new(Arc::new(ds)).unwrap()
}

#[test]
fn statistics_give_the_same_indices_as_the_rows_for_every_node() {
    for profile in [ADULT, "datasets/adult/adult-cm.toml"] {
        let rows = evaluator(profile).evaluate_lattice(&|| {}).unwrap();
        let stats_ev = statistics_evaluator(profile);
        assert!(
            stats_ev.dataset().num_rows() < 30162,
            "statistics are smaller than the rows"
        );
        assert_eq!(stats_ev.dataset().num_tuples(), 30162);
        let stats = stats_ev.evaluate_lattice(&|| {}).unwrap();
        assert_eq!(rows.len(), stats.len());
        for (a, b) in rows.iter().zip(&stats) {
            assert_eq!(
                (
                    a.classes,
                    a.k,
                    a.l_distinct,
                    a.suppressed,
                    a.s_k,
                    a.s_l,
                    a.max_class
                ),
                (
                    b.classes,
                    b.k,
                    b.l_distinct,
                    b.suppressed,
                    b.s_k,
                    b.s_l,
                    b.max_class
                ),
                "node {:?}",
                a.node
            );
            assert!(
                (a.glm - b.glm).abs() < 1e-6 * a.glm.max(1.0),
                "glm at {:?}",
                a.node
            );
            assert!(
                (a.l_entropy - b.l_entropy).abs() < 1e-9,
                "l_entropy at {:?}",
                a.node
            );
            assert_eq!(a.cm.is_some(), b.cm.is_some());
            if let (Some(x), Some(y)) = (a.cm, b.cm) {
                assert!((x - y).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn row_level_functions_refuse_statistics() {
    let ev = statistics_evaluator(ADULT);
    let err = ev.property_vectors(&[0; 8]).unwrap_err().to_string();
    assert!(err.contains("class statistics"), "{err}");
}

/// Column names, rows of text, and (column, hierarchy rows) per QI.
type TextTable = (
    Vec<String>,
    Vec<Vec<String>>,
    Vec<(usize, Vec<Vec<String>>)>,
);

/// The adult CSV and its DBSEC hierarchies read as plain text, for the naive release.
fn adult_text() -> TextTable {
    let text = fs::read_to_string(repo("datasets/adult/adult.csv")).unwrap();
    let mut lines = text.lines();
    let names: Vec<String> = lines.next().unwrap().split(';').map(String::from).collect();
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(';').map(String::from).collect())
        .collect();
    let qis = [
        "age",
        "workclass",
        "education",
        "marital-status",
        "race",
        "sex",
        "native-country",
        "salary-class",
    ]
    .iter()
    .map(|q| {
        let h = fs::read_to_string(repo(&format!("datasets/adult/dbsec-hierarchies/{q}.csv")))
            .unwrap()
            .lines()
            .map(|l| l.split(';').map(String::from).collect())
            .collect();
        (names.iter().position(|n| n == q).unwrap(), h)
    })
    .collect();
    (names, rows, qis)
}

/// Rows of a CSV release as text (fields unquoted by the CSV reader), sorted.
fn release_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let t = pbg::io::read_table(&pbg::input::Input::Path(path.to_path_buf()), b',').unwrap();
    let names = t.schema.fields().iter().map(|f| f.name().clone()).collect();
    let columns: Vec<_> = (0..t.schema.fields().len())
        .map(|i| {
            arrow::compute::cast(&t.column(i).unwrap(), &arrow::datatypes::DataType::Utf8).unwrap()
        })
        .collect();
    let mut rows: Vec<Vec<String>> = (0..t.num_rows())
        .map(|r| {
            columns
                .iter()
                .map(|c| {
                    arrow::array::AsArray::as_string::<i32>(c)
                        .value(r)
                        .to_string()
                })
                .collect()
        })
        .collect();
    rows.sort();
    (names, rows)
}

#[test]
fn the_release_equals_a_naive_row_by_row_release() {
    let dir = tempfile::tempdir().unwrap();
    let (names, rows, qis) = adult_text();
    let sensitive = names.iter().position(|n| n == "occupation").unwrap();
    for node in [[3u8, 1, 1, 2, 1, 1, 2, 0], [6, 2, 2, 2, 0, 0, 2, 0], [0; 8]] {
        let text: Vec<String> = node.iter().map(|l| l.to_string()).collect();
        let text = text.join(",");
        let out = dir.path().join("release.csv");
        let report = pbg_json(&[
            "anonymize",
            ADULT,
            "--node",
            &text,
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(report["verified"], true);
        let (header, mut expected) =
            crate::naive::release(&names, &rows, &qis, sensitive, &[], &node, 301);
        expected.sort();
        let (got_header, got) = release_rows(&out);
        assert_eq!(got_header, header, "node {text}");
        assert_eq!(got.len(), expected.len(), "node {text}");
        assert!(
            got == expected,
            "node {text}: the release differs from the naive one"
        );
        // Row accounting: input = released + suppressed, and the file has the released rows.
        let rows_in = report["rows_in"].as_u64().unwrap();
        let released = report["rows_released"].as_u64().unwrap();
        let suppressed = report["suppressed"].as_u64().unwrap();
        assert_eq!(rows_in, 30162);
        assert_eq!(released + suppressed, rows_in);
        assert_eq!(released, got.len() as u64);
        if node == [3, 1, 1, 2, 1, 1, 2, 0] {
            assert!(suppressed > 0, "this node suppresses rows");
        }
    }
}

#[test]
fn parquet_release_with_identifiers_dropped_is_verified() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.parquet");
    let input_s = input.to_str().unwrap();
    pbg_json(&[
        "generate",
        "adult-like",
        "--rows",
        "200000",
        "--seed",
        "7",
        "--output",
        input_s,
    ]);
    let out = dir.path().join("release.parquet");
    let report = pbg_json(&[
        "anonymize",
        ADULT,
        "--input",
        input_s,
        "--identifier",
        "id",
        "--node",
        "2,1,1,1,0,0,1,0",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(report["rows_in"], 200000);
    let t = pbg::io::read_table(&pbg::input::Input::Path(out.clone()), b',').unwrap();
    assert!(t.schema.index_of("id").is_err(), "identifier dropped");
    assert_eq!(
        t.num_rows() as u64,
        report["rows_released"].as_u64().unwrap()
    );
    // The same node evaluated in memory on the same file agrees with the streamed report.
    let mut p = Profile::from_toml_file(&repo(ADULT)).unwrap();
    p.input = pbg::input::Input::Path(input.clone());
    let ev = Evaluator::new(Arc::new(Dataset::load(&p).unwrap())).unwrap();
    let ix = ev.evaluate(&[2, 1, 1, 1, 0, 0, 1, 0]).unwrap();
    assert_eq!(report["indices"]["k"], ix.k);
    assert_eq!(report["indices"]["classes"], ix.classes);
    assert_eq!(report["suppressed"], ix.suppressed);
    // pbg verify accepts it and infers the node.
    let v = pbg_json(&[
        "verify",
        ADULT,
        "--input",
        input_s,
        "--identifier",
        "id",
        "--release",
        out.to_str().unwrap(),
        "--require",
        "k>=1",
    ]);
    assert_eq!(v["ok"], true);
    assert_eq!(v["node"], serde_json::json!([2, 1, 1, 1, 0, 0, 1, 0]));
}

/// Brute force over every node evaluated from the rows: the feasible node with the best value,
/// ties to fewer levels, then lexicographic.
fn brute_force(require: &[Requirement], m: Measure, max: bool) -> Vec<u8> {
    brute_force_with(&evaluator(ADULT), require, m, max)
}

/// [`brute_force`] over a given evaluator (its suppression rule).
fn brute_force_with(ev: &Evaluator, require: &[Requirement], m: Measure, max: bool) -> Vec<u8> {
    let mut best: Option<(f64, u32, Vec<u8>)> = None;
    for ix in ev.evaluate_lattice(&|| {}).unwrap() {
        if !require.iter().all(|r| r.holds(r.measure.of(&ix))) {
            continue;
        }
        let v = if max { -m.of(&ix) } else { m.of(&ix) };
        let h: u32 = ix.node.iter().map(|&x| x as u32).sum();
        let cand = (v, h, ix.node.clone());
        if best
            .as_ref()
            .is_none_or(|b| cand.0 < b.0 || (cand.0 == b.0 && (cand.1, &cand.2) < (b.1, &b.2)))
        {
            best = Some(cand);
        }
    }
    best.unwrap().2
}

#[test]
fn pick_minimize_and_maximize_match_brute_force() {
    let ev = statistics_evaluator(ADULT);
    let require = Requirement::parse_list("k>=5,l>=3").unwrap();
    for (choice, m, max) in [
        (Choice::Minimize(Measure::Glm), Measure::Glm, false),
        (Choice::Maximize(Measure::LEntropy), Measure::LEntropy, true),
        (
            Choice::Minimize(Measure::Suppressed),
            Measure::Suppressed,
            false,
        ),
    ] {
        let got = pick(
            &ev,
            &Policy {
                require: require.clone(),
                choice,
                evaluations: None,
            },
        )
        .unwrap();
        assert_eq!(got.node, brute_force(&require, m, max));
        // l under suppression is not monotone: every policy here enumerates.
        assert_eq!((got.search, got.evaluated), ("exhaustive", 17920));
    }
    // Through the binary: the release is of the picked node and meets the requirements, under
    // the DBSEC rule and under the requirement rule (the default with --require).
    let dir = tempfile::tempdir().unwrap();
    let by_requirements = evaluator(ADULT).with_rule(pbg::suppression::SuppressionRule::named(
        pbg::suppression::RuleName::Requirements,
        &require,
    ));
    for (rule, expected) in [
        ("dbsec", brute_force(&require, Measure::Glm, false)),
        (
            "requirements",
            brute_force_with(&by_requirements, &require, Measure::Glm, false),
        ),
    ] {
        let out = dir.path().join(format!("{rule}.csv"));
        let r = pbg_json(&[
            "anonymize",
            ADULT,
            "--pick",
            "--require",
            "k>=5,l>=3",
            "--minimize",
            "glm",
            "--suppression-rule",
            rule,
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r["node"], serde_json::json!(expected), "{rule}");
        assert!(r["check"]["k"].as_u64().unwrap() >= 5);
        assert!(r["check"]["l_distinct"].as_u64().unwrap() >= 3);
    }
}

/// The exact front of the feasible nodes by pairwise dominance (no sweep), for the comparators.
fn naive_front(objectives: &[Objective], require: &[Requirement]) -> Vec<(Vec<u8>, Vec<f64>)> {
    let ev = evaluator(ADULT);
    let pts: Vec<(Vec<u8>, Vec<f64>)> = ev
        .evaluate_lattice(&|| {})
        .unwrap()
        .iter()
        .filter(|ix| require.iter().all(|r| r.holds(r.measure.of(ix))))
        .map(|ix| {
            let v = objectives.iter().map(|o| o.oriented(o.value(ix))).collect();
            (ix.node.clone(), v)
        })
        .collect();
    let dominates = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x >= y) && a != b;
    let mut front: Vec<(Vec<u8>, Vec<f64>)> = pts
        .iter()
        .filter(|(_, v)| !pts.iter().any(|(_, w)| dominates(w, v)))
        .cloned()
        .collect();
    // Finest first: the order in which ties are broken.
    front.sort_by(|a, b| {
        let h = |n: &Vec<u8>| n.iter().map(|&x| x as u32).sum::<u32>();
        (h(&a.0), &a.0).cmp(&(h(&b.0), &b.0))
    });
    front
}

#[test]
fn pick_with_comparators_chooses_from_the_front() {
    let ev = statistics_evaluator(ADULT);
    let objectives = vec![Objective::K, Objective::Glm];
    let require = Requirement::parse_list("l>=2").unwrap();
    let front = naive_front(&objectives, &require);
    let on_front = |n: &Vec<u8>| front.iter().any(|(f, _)| f == n);
    let value_of = |n: &Vec<u8>| front.iter().find(|(f, _)| f == n).unwrap().1.clone();

    // LEX with GLM first and no significance: the smallest GLM on the front.
    let lex = pick(
        &ev,
        &Policy {
            require: require.clone(),
            choice: Choice::Lex {
                objectives: vec![Objective::Glm, Objective::K],
                significance: vec![0.0, 0.0],
            },
            evaluations: None,
        },
    )
    .unwrap();
    assert!(on_front(&lex.node));
    let best_glm = front
        .iter()
        .map(|(_, v)| v[1])
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(value_of(&lex.node)[1], best_glm);

    // GOAL at the front's best k and best GLM at once: the node nearest in normalized space.
    let goal = pick(
        &ev,
        &Policy {
            require: require.clone(),
            choice: Choice::Goal {
                objectives: objectives.clone(),
                goal: vec![1e9, 0.0],
            },
            evaluations: None,
        },
    )
    .unwrap();
    assert!(on_front(&goal.node));

    // WTD with all weight on k: the largest k on the front.
    let wtd = pick(
        &ev,
        &Policy {
            require,
            choice: Choice::Wtd {
                objectives,
                weights: vec![1.0, 0.0],
            },
            evaluations: None,
        },
    )
    .unwrap();
    let best_k = front
        .iter()
        .map(|(_, v)| v[0])
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(value_of(&wtd.node)[0], best_k);
    assert_eq!(wtd.front, Some(front.len()));
}

fn release_for_tampering(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("release.csv");
    pbg_json(&[
        "anonymize",
        ADULT,
        "--node",
        "6,2,2,2,0,0,2,0",
        "--output",
        out.to_str().unwrap(),
    ]);
    out
}

fn verify_fails(release: &Path, extra: &[&str]) -> String {
    let mut args = vec!["verify", ADULT, "--release", release.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = pbg(&args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "verify should fail: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn verify_rejects_tampered_releases_and_unmet_policies() {
    let dir = tempfile::tempdir().unwrap();
    let good = release_for_tampering(dir.path());
    let text = fs::read_to_string(&good).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    // The good release passes; a stricter policy than it meets fails, saying which requirement.
    let ok = pbg_json(&[
        "verify",
        ADULT,
        "--release",
        good.to_str().unwrap(),
        "--require",
        "k>=5,l>=3",
    ]);
    assert_eq!(ok["ok"], true);
    let err = verify_fails(&good, &["--require", "k>=100"]);
    assert!(err.contains("k>=100"), "{err}");

    // A row dropped: the accounting no longer matches the node's suppression.
    let fewer = dir.path().join("fewer.csv");
    fs::write(&fewer, format!("{}\n", lines[..lines.len() - 1].join("\n"))).unwrap();
    let err = verify_fails(&fewer, &[]);
    assert!(
        err.contains("row accounting") || err.contains("k ="),
        "{err}"
    );

    // A label finer than the node's level (a raw workclass value).
    let header: Vec<&str> = lines[0].split(',').collect();
    let wc = header.iter().position(|h| *h == "workclass").unwrap();
    let mut fields: Vec<String> = lines[1].split(',').map(String::from).collect();
    fields[wc] = "State-gov".into();
    let mut changed: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    changed[1] = fields.join(",");
    let finer = dir.path().join("finer.csv");
    fs::write(&finer, format!("{}\n", changed.join("\n"))).unwrap();
    let err = verify_fails(&finer, &[]);
    assert!(err.contains("workclass"), "{err}");

    // Sensitive values moved between rows of different classes: l or entropy no longer match.
    let occ = header.iter().position(|h| *h == "occupation").unwrap();
    let mut rows: Vec<Vec<String>> = lines[1..]
        .iter()
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    let first = rows[0][occ].clone();
    for r in rows.iter_mut().take(40) {
        r[occ] = first.clone();
    }
    let moved = dir.path().join("moved.csv");
    let body: Vec<String> = rows.iter().map(|r| r.join(",")).collect();
    fs::write(&moved, format!("{}\n{}\n", lines[0], body.join("\n"))).unwrap();
    let err = verify_fails(&moved, &[]);
    assert!(err.contains("sensitive values differ"), "{err}");
}

#[test]
fn anonymize_refuses_a_node_that_breaks_the_requirements() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.csv");
    let o = pbg(&[
        "anonymize",
        ADULT,
        "--node",
        "0,0,0,0,0,0,0,0",
        "--require",
        "k>=5",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("k>=5"));
    assert!(!out.exists(), "nothing written");
    // No node at all meets an impossible policy.
    let o = pbg(&[
        "anonymize",
        ADULT,
        "--pick",
        "--require",
        "l>=99",
        "--output",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no node"), "{err}");
    for bad in [
        vec!["--pick", "best"],
        vec!["--pick", "lex"],
        vec!["--pick", "goal", "--objectives", "k,glm"],
        vec!["--pick", "wtd", "--objectives", "k,glm", "--weights", "1"],
        vec!["--pick", "--require", "k=>5"],
        vec!["--pick", "--minimize", "speed"],
        vec!["--node", "1,1,1,1,1,1,1,1", "--pick"],
        vec![],
    ] {
        let mut args = vec!["anonymize", ADULT, "--output", out.to_str().unwrap()];
        args.extend(bad.iter().copied());
        let o = pbg(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{bad:?} should fail");
        assert!(
            !err.contains("panicked") && !err.is_empty(),
            "{bad:?}: {err}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn generation_is_deterministic_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for threads in ["1", "3"] {
        let f = dir.path().join(format!("g{threads}.parquet"));
        let o = Command::new(env!("CARGO_BIN_EXE_pbg"))
            .args([
                "generate",
                "adult-like",
                "--rows",
                "2500000",
                "--seed",
                "11",
                "--output",
            ])
            .arg(&f)
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(fs::read(&f).unwrap());
    }
    assert_eq!(files[0], files[1]);
    let other = dir.path().join("other.parquet");
    pbg_json(&[
        "generate",
        "adult-like",
        "--rows",
        "1000",
        "--seed",
        "12",
        "--output",
        other.to_str().unwrap(),
    ]);
    let t = pbg::io::read_table(&pbg::input::Input::Path(other.clone()), b',').unwrap();
    assert_eq!(t.num_rows(), 1000);
    assert!(
        pbg(&[
            "generate",
            "adult-like",
            "--rows",
            "0",
            "--output",
            other.to_str().unwrap()
        ])
        .status
        .code()
            == Some(1)
    );
}

#[test]
fn a_run_killed_mid_write_leaves_the_previous_release_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.parquet");
    pbg_json(&[
        "generate",
        "adult-like",
        "--rows",
        "3000000",
        "--seed",
        "3",
        "--output",
        input.to_str().unwrap(),
    ]);
    let out = dir.path().join("release.parquet");
    // A previous release in place.
    fs::write(&out, b"previous release").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pbg"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["anonymize", ADULT, "--input"])
        .arg(&input)
        .args(["--node", "1,1,1,1,1,1,1,1", "--output"])
        .arg(&out)
        .spawn()
        .unwrap();
    // Wait until the temporary release exists and has data, then kill the process outright.
    let start = Instant::now();
    let temp = loop {
        let found = fs::read_dir(dir.path()).unwrap().flatten().find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".release.parquet.pbg-tmp-")
                && e.metadata().map(|m| m.len() > 0).unwrap_or(false)
        });
        if let Some(e) = found {
            break e.path();
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no temporary file appeared"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(fs::read(&out).unwrap(), b"previous release");
    // Once left unchanged for an hour (aged here), the next run removes the dead run's
    // temporary files (the one found may have been the writer's staging file, renamed since)
    // and replaces the release.
    let left: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".release.parquet.pbg-tmp-")
        })
        .map(|e| e.path())
        .collect();
    assert!(!left.is_empty(), "the killed run left no temporary file");
    for f in &left {
        fs::File::options()
            .write(true)
            .open(f)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
    }
    let r = pbg_json(&[
        "anonymize",
        ADULT,
        "--input",
        input.to_str().unwrap(),
        "--node",
        "6,2,2,2,1,1,3,1",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r["verified"], true);
    assert!(!temp.exists(), "stale temporary file removed");
    assert!(
        left.iter().all(|f| !f.exists()),
        "stale temporary files removed"
    );
    assert_ne!(fs::read(&out).unwrap(), b"previous release");
}

/// pbg's statistics aggregate (packed keys, per partition) equals DataFusion's own
/// `GROUP BY cols, count(*)` on the same input: adult (CSV, one file) and generated Parquet files
/// in a directory (several partitions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statistics_aggregate_equals_a_group_by() {
    let dir = tempfile::tempdir().unwrap();
    for seed in ["4", "5"] {
        pbg_json(&[
            "generate",
            "adult-like",
            "--rows",
            "150000",
            "--seed",
            seed,
            "--output",
            dir.path()
                .join(format!("p{seed}.parquet"))
                .to_str()
                .unwrap(),
        ]);
    }
    let mut lake = Profile::from_toml_file(&repo(ADULT)).unwrap();
    lake.input = pbg::input::Input::Path(dir.path().to_path_buf());
    let cm = Profile::from_toml_file(&repo("datasets/adult/adult-cm.toml")).unwrap();
    for p in [Profile::from_toml_file(&repo(ADULT)).unwrap(), cm, lake] {
        let ctx = pbg::input::new_context();
        let df = pbg::input::open(&ctx, &p.input, p.delimiter).await.unwrap();
        let spec = pbg::encode::profile_columns(&p);
        let fast = pbg::statistics::count_combinations(df.clone(), &p.input, &spec)
            .await
            .unwrap();
        let batches = pbg::statistics::statistics_plan(df, &spec)
            .unwrap()
            .collect()
            .await
            .unwrap();
        let slow = pbg::encode::Combinations::gather(&batches, &spec, Some(pbg::statistics::COUNT))
            .unwrap();
        assert_eq!(fast.tuples, slow.tuples);
        assert!(fast.len() > 100);
        for (a, b) in fast.columns.iter().zip(&slow.columns) {
            assert_eq!(a, b);
        }
        assert_eq!(fast.ids, slow.ids);
        assert_eq!(fast.weights, slow.weights);
    }
}
