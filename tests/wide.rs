//! High-dimensional data: QIs whose codes do not fit a 64-bit key are evaluated on the wide path
//! (first-row class keys), checked against the naive evaluator and by roll-ups, and released.

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use pbg::Evaluator;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use crate::common::{evaluator_at, pbg, pbg_json};
use crate::naive::{self, NaiveTable};

/// `pbg generate wide` into `dir`: the profile's path.
pub(crate) fn generate(dir: &Path, qis: usize, rows: u64, seed: u64) -> PathBuf {
    let out = pbg_json(&[
        "generate",
        "wide",
        "--qis",
        &qis.to_string(),
        "--rows",
        &rows.to_string(),
        "--seed",
        &seed.to_string(),
        "--output",
        dir.to_str().unwrap(),
    ]);
    PathBuf::from(out["profile"].as_str().unwrap())
}

/// The generated table as text rows (QIs), sensitive values, read with the parquet crate alone.
fn raw_rows(data: &Path, qis: usize) -> (Vec<Vec<String>>, Vec<String>) {
    let file = std::fs::File::open(data).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let (mut rows, mut sens) = (Vec::new(), Vec::new());
    for batch in reader {
        let batch = batch.unwrap();
        for r in 0..batch.num_rows() {
            rows.push(
                (1..=qis)
                    .map(|c| {
                        let col = batch.column(c).as_primitive::<Int64Type>();
                        assert!(!col.is_null(r));
                        col.value(r).to_string()
                    })
                    .collect(),
            );
            sens.push(
                batch
                    .column(qis + 1)
                    .as_string::<i32>()
                    .value(r)
                    .to_string(),
            );
        }
    }
    (rows, sens)
}

/// The engine's hierarchies as ARX-style rows `[leaf, level 1, ..., top]` for the naive evaluator.
fn hierarchy_rows(ev: &Evaluator) -> Vec<Vec<Vec<String>>> {
    ev.dataset()
        .qis
        .iter()
        .map(|q| {
            let h = &q.hierarchy;
            h.leaves()
                .iter()
                .enumerate()
                .map(|(i, leaf)| {
                    let mut row = vec![leaf.clone()];
                    for level in &h.levels()[1..] {
                        row.push(level.labels[level.group_of_leaf[i] as usize].clone());
                    }
                    row
                })
                .collect()
        })
        .collect()
}

/// 10 QIs of which two have 10^3-10^6 values: more than 63 bits, so the evaluator takes the wide
/// path; every index the naive evaluator computes agrees on random nodes, directly and rolled up
/// from the bottom along a random chain.
#[test]
fn wide_keys_agree_with_the_naive_evaluator() {
    let dir = tempfile::tempdir().unwrap();
    let qis = 10;
    let ev = evaluator_at(&generate(dir.path(), qis, 1500, 5));
    assert!(
        ev.class_keys().is_wide(),
        "10 generated QIs should not pack"
    );
    let (rows, sens) = raw_rows(&dir.path().join("wide.parquet"), qis);
    let t = NaiveTable {
        labels: vec!["c".into(); rows.len()],
        rows,
        sens,
        hierarchies: hierarchy_rows(&ev),
        sens_hierarchy: None,
    };
    let eta = ev.dataset().eta;
    let heights = ev.lattice().heights().to_vec();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut checked = 0;
    for _ in 0..6 {
        // A random chain from the bottom: raise one random QI at a time, rolling up each step.
        let mut node = vec![0u8; qis];
        let mut tables = ev.tables(&node).unwrap();
        let steps = rng.random_range(0..heights.iter().map(|&h| h as usize).sum::<usize>());
        for _ in 0..steps {
            let open: Vec<usize> = (0..qis).filter(|&d| node[d] < heights[d]).collect();
            let d = open[rng.random_range(0..open.len())];
            node[d] += 1;
            tables = ev.rollup(&tables, &node, d);
        }
        assert_eq!(tables, ev.tables(&node).unwrap(), "tables at {node:?}");
        let rolled = ev.indices(&node, &tables);
        let direct = ev.evaluate(&node).unwrap();
        assert_eq!(rolled, direct, "roll-up vs direct at {node:?}");
        let want = naive::evaluate(&t, &node, eta);
        // Counts and vectors only (not `naive::agrees`): the generated QIs' interval hierarchies
        // lose GLM by range, which the naive evaluator, counting leaves, does not model.
        assert_eq!(
            naive::engine_counts(&direct),
            want.counts(),
            "node {node:?}"
        );
        assert!((direct.l_entropy - want.l_entropy).abs() < 1e-9);
        let (_, v) = ev.property_vectors(&node).unwrap();
        assert_eq!(v.p_equiv, want.p_equiv, "node {node:?}");
        assert_eq!(v.p_sens, want.p_sens, "node {node:?}");
        checked += 1;
    }
    assert_eq!(checked, 6);
}

/// A 16-QI release with suppressed classes: the wide filter removes exactly the suppressed rows
/// and the verifier accepts the file.
#[test]
fn wide_release_with_suppression_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let profile = generate(dir.path(), 16, 20_000, 2);
    let out = dir.path().join("release.parquet");
    let profile = profile.to_str().unwrap();
    // Three QIs at level 1, the others at their top: a few small classes, suppressed.
    let node = "1,1,1,5,2,4,3,5,3,4,3,3,4,3,5,5";
    let ev = pbg_json(&["evaluate", profile, "--node", node]);
    let suppressed = ev["suppressed"].as_u64().unwrap();
    assert!(suppressed > 0, "the node should suppress some rows: {ev}");
    let report = pbg_json(&[
        "anonymize",
        profile,
        "--node",
        node,
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(report["verified"], serde_json::json!(true), "{report}");
    assert_eq!(
        report["rows_released"].as_u64().unwrap(),
        20_000 - suppressed,
        "{report}"
    );
    let verify = pbg(&["verify", profile, "--release", out.to_str().unwrap()]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// The former "at most 63 bits" refusal: 8 QIs of 300 leaves (72 bits) now evaluate.
#[test]
fn no_qi_count_is_refused_for_its_bits() {
    let dir = tempfile::tempdir().unwrap();
    let leaves: String = (0..300).map(|i| format!("{i};*\n")).collect();
    std::fs::write(dir.path().join("h.csv"), leaves).unwrap();
    let cols: Vec<String> = (0..8).map(|i| format!("c{i}")).collect();
    let data: String = format!(
        "{},s\n{}\n{}\n",
        cols.join(","),
        (0..8).map(|i| i.to_string()).collect::<Vec<_>>().join(",") + ",a",
        (0..8)
            .map(|i| (299 - i).to_string())
            .collect::<Vec<_>>()
            .join(",")
            + ",b"
    );
    std::fs::write(dir.path().join("d.csv"), data).unwrap();
    let h = dir.path().join("h.csv");
    let mut a: Vec<String> = vec![
        "evaluate".into(),
        "--input".into(),
        dir.path().join("d.csv").to_string_lossy().into_owned(),
        "--sensitive".into(),
        "s".into(),
    ];
    for c in &cols {
        a.push("--qi".into());
        a.push(format!("{c}={}", h.display()));
    }
    a.extend(["--node".into(), "0,0,0,0,0,0,0,0".into()]);
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    let out = pbg_json(&refs);
    assert_eq!(out["classes"], serde_json::json!(2), "{out}");
    assert_eq!(out["k"], serde_json::json!(1), "{out}");
}

/// 100 QIs: a lattice of more than 2^128 nodes, its size reported exactly (as the product of the
/// hierarchies' level counts), evaluated, and picked by the pruned search into a verified release.
#[test]
fn a_hundred_qis_evaluate_and_pick() {
    let dir = tempfile::tempdir().unwrap();
    let profile = generate(dir.path(), 100, 200, 4);
    let ev = evaluator_at(&profile);
    // The exact product, in base 10 by schoolbook multiplication of decimal digits.
    let mut digits: Vec<u32> = vec![1];
    for &h in ev.lattice().heights() {
        let mut carry = 0;
        for d in digits.iter_mut() {
            let v = *d * (h as u32 + 1) + carry;
            *d = v % 10;
            carry = v / 10;
        }
        while carry > 0 {
            digits.push(carry % 10);
            carry /= 10;
        }
    }
    let want: String = digits.iter().rev().map(|d| d.to_string()).collect();
    assert!(want.len() > 39, "more than 2^128 nodes: {want}");
    assert_eq!(ev.lattice().size_decimal(), want);
    // Messages give its leading digits and power of ten.
    let text = format!("about {}.{}e{}", &want[..1], &want[1..3], want.len() - 1);
    assert_eq!(ev.lattice().size_text(), text);
    let profile = profile.to_str().unwrap();
    let node = vec!["0"; 100].join(",");
    let v = pbg_json(&["evaluate", profile, "--node", &node]);
    assert_eq!(v["lattice_size"], serde_json::json!(want));
    let out = dir.path().join("r.parquet");
    let r = pbg_json(&[
        "anonymize",
        profile,
        "--pick",
        "--require",
        "k>=2",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r["verified"], serde_json::json!(true), "{r}");
    assert_eq!(r["pick"]["search"], serde_json::json!("pruned"));
    assert!(r["indices"]["k"].as_u64().unwrap() >= 2, "{r}");
}

/// A descent with room for fewer evaluations than the node has predecessors tries those of
/// least bound that fit: on 20 QIs a budget of 4 (one evaluation for the descent) returned the
/// top node (GLM rows x QIs), which any meeting predecessor improves.
#[test]
fn a_short_descent_still_steps() {
    let dir = tempfile::tempdir().unwrap();
    let profile = generate(dir.path(), 20, 3000, 3);
    let out = dir.path().join("r.parquet");
    let r = crate::common::pbg_json(&[
        "anonymize",
        profile.to_str().unwrap(),
        "--pick",
        "--require",
        "k>=5",
        "--pick-evaluations",
        "4",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r["verified"], serde_json::json!(true), "{r}");
    let glm = r["indices"]["glm"].as_f64().unwrap();
    assert!(glm < 3000.0 * 20.0, "{r}");
    let without = r["pick"]["evaluated_without_suppression"].as_u64().unwrap();
    assert!(
        r["pick"]["evaluated"].as_u64().unwrap() - without <= 4,
        "{r}"
    );
    assert_eq!(r["pick"]["optimal"], serde_json::json!(false), "{r}");
}

/// A pruned pick stopped by `--pick-evaluations` says so, meets the requirements, and its GLM
/// lower bound holds: the proven optimum of a run with a budget large enough lies between the
/// stopped run's bound and its GLM. The budget caps the evaluations; one under 2 is refused.
#[test]
fn a_pick_budget_reports_a_lower_bound_that_holds() {
    let dir = tempfile::tempdir().unwrap();
    let profile = generate(dir.path(), 8, 3000, 7);
    let out = dir.path().join("r.parquet");
    // `anonymize` picking with `pick` (after --pick) and the budget, or its error text.
    let run = |pick: &[&str], budget: &str| {
        let mut a = vec!["anonymize", profile.to_str().unwrap(), "--pick"];
        a.extend_from_slice(pick);
        a.extend(["--require", "k>=5", "--pick-evaluations", budget]);
        a.extend(["--output", out.to_str().unwrap()]);
        let o = pbg(&a);
        match o.status.success() {
            true => Ok(serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()),
            false => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
        }
    };
    let stopped = run(&[], "4").unwrap();
    let full = run(&[], "20000").unwrap();
    assert_eq!(stopped["verified"], serde_json::json!(true), "{stopped}");
    assert_eq!(
        stopped["pick"]["optimal"],
        serde_json::json!(false),
        "{stopped}"
    );
    let note = stopped["pick"]["note"].as_str().unwrap();
    assert!(note.contains("--pick-evaluations"), "{note}");
    // The budget of 4: 3 for the search, 1 for the descent.
    assert!(
        note.contains("4 evaluations, 3 of them for the search and the rest for a greedy descent"),
        "{note}"
    );
    assert!(
        stopped["indices"]["k"].as_f64().unwrap() >= 5.0,
        "{stopped}"
    );
    assert_eq!(full["pick"]["optimal"], serde_json::json!(true), "{full}");
    let glm = |v: &serde_json::Value| v["indices"]["glm"].as_f64().unwrap();
    let lower = stopped["pick"]["glm_lower_bound"].as_f64().unwrap();
    assert!(
        lower <= glm(&full) && glm(&full) <= glm(&stopped),
        "{stopped} {full}"
    );
    assert_eq!(full["pick"]["glm_lower_bound"].as_f64(), Some(glm(&full)));
    // The budget is a cap: a probe evaluates several nodes, and checking only between probes
    // made 12 evaluations of a budget of 10.
    for budget in [2u64, 3, 4, 10, 25] {
        let r = run(&[], &budget.to_string()).unwrap();
        // Under the generated profile's suppression limit, the pick without suppression has a
        // budget of its own.
        let count = |name: &str| r["pick"][name].as_u64().unwrap();
        let without = count("evaluated_without_suppression");
        assert!(count("evaluated") - without <= budget, "{budget}: {r}");
        assert!(without <= budget, "{budget}: {r}");
        assert!(r["indices"]["k"].as_f64().unwrap() >= 5.0, "{r}");
        if budget == 2 {
            let note = r["pick"]["note"].as_str().unwrap();
            assert!(
                note.contains("2 evaluations (the bottom and the top"),
                "{note}"
            );
        }
    }
    // Less than the bottom and the top is refused.
    for budget in ["0", "1"] {
        let err = run(&[], budget).unwrap_err();
        assert!(err.contains("--pick-evaluations"), "{err}");
    }
    // A pick that cannot prune refuses the budget instead of ignoring it.
    let err = run(&["lex", "--objectives", "glm,k"], "10").unwrap_err();
    assert!(
        err.contains("pick-evaluations") && err.contains("cannot prune"),
        "{err}"
    );
}
