//! Slicing, part 2: the diversity check against a brute-force one, tuple partitioning, releases
//! (format, independent check, determinism) and bad inputs.

use std::fs;

use pbg::slicing::diversity::{Diversity, disclosure, partition_tuples, partition_tuples_with};
use pbg::slicing::table::{SliceAttribute, SliceLayout, SliceMode};
use proptest::prelude::*;

use crate::common::{pbg, pbg_json};

/// p(t,s) by brute force: for every tuple and every bucket, scan the bucket's entries.
fn brute_force_max_p(layout: &SliceLayout, buckets: &[Vec<u32>]) -> f64 {
    let s_attr = layout.sensitive;
    let code = |a: usize, r: u32| layout.attributes[a].codes[r as usize];
    let known_eq = |c: usize, r1: u32, r2: u32| {
        layout.columns[c]
            .iter()
            .filter(|&&a| a != s_attr)
            .all(|&a| code(a, r1) == code(a, r2))
    };
    let values = layout.attributes[s_attr].domain();
    let mut max_p: f64 = 0.0;
    for t in 0..layout.rows() as u32 {
        let mut den = 0.0;
        let mut num = vec![vec![0.0; values]; layout.columns.len()];
        for b in buckets {
            let mut f = 1.0;
            for c in 0..layout.columns.len() {
                let matches = b.iter().filter(|&&r| known_eq(c, t, r)).count();
                f *= matches as f64 / b.len() as f64;
            }
            if f == 0.0 {
                continue;
            }
            den += f;
            for &c in &layout.sensitive_columns {
                let matching: Vec<u32> = b.iter().copied().filter(|&r| known_eq(c, t, r)).collect();
                for &r in &matching {
                    num[c][code(s_attr, r) as usize] += f / matching.len() as f64;
                }
            }
        }
        for row in &num {
            for &x in row {
                max_p = max_p.max(x / den);
            }
        }
    }
    max_p
}

/// A random table: `qis` QIs and a sensitive attribute with small domains.
fn table(rows: usize, qis: usize, seed: u64) -> Vec<SliceAttribute> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = |m: u32| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % m as u64) as u32
    };
    (0..=qis)
        .map(|a| {
            let domain = if a == qis { 4 } else { 2 + (a as u32 % 3) };
            let mut codes: Vec<u32> = (0..rows).map(|_| next(domain)).collect();
            // Every code used, so domains match the labels.
            for (i, c) in codes.iter_mut().take(domain as usize).enumerate() {
                *c = i as u32;
            }
            SliceAttribute {
                name: if a == qis {
                    "s".into()
                } else {
                    format!("q{a}")
                },
                codes,
                labels: (0..domain).map(|v| format!("v{v}")).collect(),
            }
        })
        .collect()
}

fn layouts(attributes: &[SliceAttribute]) -> Vec<SliceLayout> {
    let q = attributes.len() - 1;
    let mut pairs: Vec<Vec<usize>> = (0..q)
        .collect::<Vec<_>>()
        .chunks(2)
        .map(|c| c.to_vec())
        .collect();
    if pairs.len() < 2 {
        pairs = (0..q).map(|a| vec![a]).collect();
    }
    let mut with_s = pairs.clone();
    with_s[0].push(q);
    vec![
        SliceLayout::new(attributes.to_vec(), &[], SliceMode::Bucketization).unwrap(),
        SliceLayout::new(attributes.to_vec(), &pairs, SliceMode::Slicing).unwrap(),
        SliceLayout::new(attributes.to_vec(), &with_s, SliceMode::Slicing).unwrap(),
        SliceLayout::new(attributes.to_vec(), &pairs, SliceMode::Overlapping).unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// The signature-based check equals the brute-force one on random bucketings.
    #[test]
    fn fast_check_equals_brute_force(rows in 8usize..40, qis in 2usize..5, seed in 0u64..1000, k in 1usize..6) {
        let attrs = table(rows, qis, seed);
        for layout in layouts(&attrs) {
            let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); k];
            for r in 0..rows as u32 {
                buckets[((r as u64 * 7 + seed) % k as u64) as usize].push(r);
            }
            buckets.retain(|b| !b.is_empty());
            let fast = disclosure(&layout, &buckets).max_p;
            let slow = brute_force_max_p(&layout, &buckets);
            prop_assert!((fast - slow).abs() < 1e-9, "{:?}: fast {} slow {}", layout.mode, fast, slow);
        }
    }

    /// Tuple partitioning yields l-diverse buckets (brute force), or fails exactly when the
    /// whole table is not l-diverse as one bucket.
    #[test]
    fn tuple_partitions_are_l_diverse(rows in 10usize..60, qis in 2usize..5, seed in 0u64..1000, l in 1u64..5) {
        let attrs = table(rows, qis, seed);
        for layout in layouts(&attrs) {
            let root = vec![(0..rows as u32).collect::<Vec<u32>>()];
            match partition_tuples(&layout, l) {
                Ok(tp) => {
                    let covered: usize = tp.buckets.iter().map(Vec::len).sum();
                    prop_assert_eq!(covered, rows);
                    let p = brute_force_max_p(&layout, &tp.buckets);
                    prop_assert!(p <= 1.0 / l as f64 + 1e-9, "{:?}: max p {} > 1/{}", layout.mode, p, l);
                    prop_assert!((p - tp.disclosure.max_p).abs() < 1e-9);
                }
                Err(_) => {
                    prop_assert!(brute_force_max_p(&layout, &root) > 1.0 / l as f64);
                }
            }
            // Distinct diversity: every bucket holds at least l distinct sensitive values, and the
            // reported disclosure is the brute-force one.
            let s = &layout.attributes[layout.sensitive];
            let tp = partition_tuples_with(&layout, l, Diversity::Distinct).unwrap();
            for b in &tp.buckets {
                let distinct: std::collections::HashSet<u32> = b.iter().map(|&r| s.codes[r as usize]).collect();
                prop_assert!(distinct.len() as u64 >= l);
            }
            prop_assert!((brute_force_max_p(&layout, &tp.buckets) - tp.disclosure.max_p).abs() < 1e-9);
        }
    }
}

#[test]
fn adult_releases_pass_the_independent_check_and_follow_the_format() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, partition) in [
        ("bucketization", "chi"),
        ("slicing", "chi"),
        ("slicing", "pam"),
        (
            "slicing",
            "age+marital-status,education+occupation,race+native-country,sex+workclass+salary-class",
        ),
    ] {
        let out = dir.path().join(format!("{mode}.csv"));
        let l = if partition.contains("education+occupation") {
            "1"
        } else {
            "5"
        };
        let r = pbg_json(&[
            "slice",
            "datasets/adult/adult.toml",
            "--l",
            l,
            "--mode",
            mode,
            "--partition",
            partition,
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r["verified"], true);
        assert_eq!(r["rows"], 30162);
        assert!(r["max_p"].as_f64().unwrap() <= 1.0 / l.parse::<f64>().unwrap() + 1e-9);
        let text = fs::read_to_string(&out).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        assert_eq!(header[0], "bucket");
        assert!(
            header[1..]
                .iter()
                .all(|h| h.starts_with('c') && h.contains('.')),
            "{header:?}"
        );
        assert_eq!(text.lines().count(), 30163);
        if mode == "bucketization" {
            // QIs in place: the first data row keeps the input's first row's QI values.
            assert!(header.contains(&"c1.age") && header.contains(&"c2.occupation"));
            let first: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
            let age = header.iter().position(|h| *h == "c1.age").unwrap();
            assert_eq!(first[age], "39");
        }
    }
    // Overlapping slicing repeats the sensitive attribute in every column.
    let out = dir.path().join("overlapping.csv");
    let r = pbg_json(&[
        "slice",
        "datasets/adult/adult.toml",
        "--l",
        "1",
        "--mode",
        "overlapping",
        "--output",
        out.to_str().unwrap(),
    ]);
    let cols = r["columns"].as_array().unwrap();
    assert!(
        cols.iter()
            .all(|c| c.as_array().unwrap().iter().any(|a| a == "occupation"))
    );
    let header = fs::read_to_string(&out)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(
        header.contains("c1.occupation") && header.contains("c2.occupation"),
        "{header}"
    );
}

#[test]
fn same_seed_same_release_other_seed_other_release() {
    let dir = tempfile::tempdir().unwrap();
    let run = |seed: &str, name: &str| {
        let out = dir.path().join(name);
        pbg_json(&[
            "slice",
            "datasets/adult/adult.toml",
            "--l",
            "3",
            "--seed",
            seed,
            "--output",
            out.to_str().unwrap(),
        ]);
        fs::read(out).unwrap()
    };
    let a = run("7", "a.parquet");
    let b = run("7", "b.parquet");
    let c = run("8", "c.parquet");
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn infeasible_and_bad_slicing_inputs_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.csv");
    let o = out.to_str().unwrap();
    let fails = |args: &[&str]| -> String {
        let r = pbg(args);
        let err = String::from_utf8_lossy(&r.stderr).to_string();
        assert!(!r.status.success(), "{args:?} should fail");
        assert!(
            err.starts_with("pbg: error: ") && !err.contains("panicked"),
            "{err}"
        );
        assert!(!out.exists());
        err
    };
    let adult = "datasets/adult/adult.toml";
    // Overlapping slicing of raw adult is not 5-diverse even as one bucket: named tuple and column.
    let e = fails(&[
        "slice",
        adult,
        "--l",
        "5",
        "--mode",
        "overlapping",
        "--output",
        o,
    ]);
    assert!(
        e.contains("no 5-diverse overlapping") && e.contains("at most l = 1"),
        "{e}"
    );
    // l larger than the number of distinct sensitive values.
    let e = fails(&["slice", adult, "--l", "15", "--output", o]);
    assert!(e.contains("only 14 distinct values"), "{e}");
    let e = fails(&["slice", adult, "--l", "0", "--output", o]);
    assert!(e.contains("at least 1"), "{e}");
    let e = fails(&[
        "slice",
        adult,
        "--l",
        "2",
        "--partition",
        "age+nope",
        "--output",
        o,
    ]);
    assert!(e.contains("nope"), "{e}");
    let e = fails(&[
        "slice",
        adult,
        "--l",
        "2",
        "--partition",
        "age+sex",
        "--output",
        o,
    ]);
    assert!(e.contains("in no column"), "{e}");
    let e = fails(&[
        "slice", adult, "--l", "2", "--mode", "sideways", "--output", o,
    ]);
    assert!(e.contains("sideways"), "{e}");
    let e = fails(&[
        "slice",
        adult,
        "--l",
        "2",
        "--generalize",
        "1,1",
        "--output",
        o,
    ]);
    assert!(e.contains("levels"), "{e}");
    // One-row, empty and one-attribute tables.
    let one = dir.path().join("one.csv");
    fs::write(&one, "a,s\nx,y\n").unwrap();
    let h = dir.path().join("h.csv");
    fs::write(&h, "x;*\n").unwrap();
    let qi = format!("a={}", h.display());
    let small = |input: &std::path::Path, sensitive: &str| {
        fails(&[
            "slice",
            "--input",
            input.to_str().unwrap(),
            "--qi",
            &qi,
            "--sensitive",
            sensitive,
            "--l",
            "1",
            "--output",
            o,
        ])
    };
    let e = small(&one, "s");
    assert!(e.contains("at least two rows"), "{e}");
    let empty = dir.path().join("empty.csv");
    fs::write(&empty, "a,s\n").unwrap();
    let e = small(&empty, "s");
    assert!(e.contains("empty"), "{e}");
    let single = dir.path().join("single.csv");
    fs::write(&single, "a\nx\nx\n").unwrap();
    let e = small(&single, "a");
    assert!(e.contains("both"), "{e}");
}

#[test]
fn sql_correlation_and_slice_agree_with_the_cli() {
    let cols = "age,sex,race,education,occupation";
    let sql = pbg_json(&[
        "sql",
        "datasets/adult/adult.toml",
        "--format",
        "json",
        "-c",
        &format!("SELECT * FROM pbg_correlation('adult', '{cols}')"),
    ]);
    let cli = pbg_json(&[
        "correlate",
        "datasets/adult/adult.toml",
        "--columns",
        cols,
        "--format",
        "json",
    ]);
    let names: Vec<&str> = cols.split(',').collect();
    let rows = sql.as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for row in rows {
        let i = names.iter().position(|n| *n == row["a"]).unwrap();
        let j = names.iter().position(|n| *n == row["b"]).unwrap();
        assert_eq!(row["chi_square"], cli["chi_square"][i][j]);
        assert_eq!(row["phi_squared"], cli["phi_squared"][i][j]);
    }
    // pbg_slice = pbg slice with the same seed (same buckets and permutations).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.csv");
    pbg_json(&[
        "slice",
        "datasets/adult/adult.toml",
        "--l",
        "5",
        "--seed",
        "4",
        "--output",
        out.to_str().unwrap(),
    ]);
    let copy = dir.path().join("q.csv");
    pbg(&[
        "sql",
        "datasets/adult/adult.toml",
        "-c",
        &format!(
            "COPY (SELECT * FROM pbg_slice('adult', 5, 'slicing', 4)) TO '{}' STORED AS CSV",
            copy.display()
        ),
    ]);
    let a = fs::read_to_string(&out).unwrap();
    let b = fs::read_to_string(&copy).unwrap();
    assert_eq!(a.lines().count(), b.lines().count());
    assert_eq!(a, b);
}

#[test]
fn slicing_utility_experiment_runs_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let run = |sub: &str| {
        let out = dir.path().join(sub);
        let r = pbg(&[
            "experiment",
            "slicing-utility",
            "--folds",
            "2",
            "--repetitions",
            "1",
            "--l",
            "5",
            "--targets",
            "occupation,education",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        (
            String::from_utf8_lossy(&r.stdout).to_string(),
            fs::read_to_string(out.join("slicing-utility.csv")).unwrap(),
            out,
        )
    };
    let (md, csv, out) = run("a");
    assert!(out.join("slicing-utility.svg").exists());
    assert!(
        md.contains("## Target occupation, diversity `tuple`")
            && md.contains("## Target education")
    );
    // 2 targets × (original + 4 methods × 2 diversities × 1 l) rows.
    assert_eq!(csv.lines().count(), 1 + 2 * (1 + 4 * 2));
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        for acc in [f[4], f[5]] {
            if !acc.is_empty() {
                let a: f64 = acc.parse().unwrap();
                assert!((0.0..=1.0).contains(&a), "{line}");
            }
        }
    }
    // Overlapping slicing of raw adult is not 5-diverse per tuple: reported, not faked.
    let overlapping = csv
        .lines()
        .find(|l| l.starts_with("occupation,overlapping slicing,tuple,5"))
        .unwrap();
    assert!(
        overlapping.contains("no 5-diverse overlapping"),
        "{overlapping}"
    );
    // Distinct diversity: every sliced release exists and reports the p(t,s) it leaves.
    let bucket = csv
        .lines()
        .find(|l| l.starts_with("occupation,bucketization,distinct,5"))
        .unwrap();
    let max_p: f64 = bucket.split(',').nth(6).unwrap().parse().unwrap();
    assert!(
        max_p > 0.2,
        "distinct 5-diversity is weaker than p <= 1/5: {bucket}"
    );
    let (_, again, _) = run("b");
    assert_eq!(csv, again);
}
