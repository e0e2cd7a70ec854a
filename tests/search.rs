//! Search: Theorems 1 and 2 of the box-dominance archive, the archive vs the exact front, the exact
//! front vs brute force, PBG-EA determinism across thread counts and its quality on adult.

use std::collections::HashSet;

use pbg::Objective;
use pbg::dominance::strongly_dominates;
use pbg::search::{
    BoxArchive, EaConfig, Point, convergence_error, exhaustive, pareto_front, pbg_ea,
    representation_ratio,
};
use proptest::prelude::*;

use crate::common::{evaluator, pbg_json};

fn objectives(dirs: &[bool]) -> Vec<Objective> {
    // K and S_K are maximized, GLM and CM minimized: enough to cover both directions.
    let max = [Objective::K, Objective::SK, Objective::L];
    let min = [Objective::Glm, Objective::Cm];
    let (mut a, mut b) = (0, 0);
    dirs.iter()
        .map(|&up| {
            if up {
                a += 1;
                max[a - 1]
            } else {
                b += 1;
                min[b - 1]
            }
        })
        .collect()
}

fn offered() -> impl Strategy<Value = (Vec<bool>, Vec<u32>, Vec<f64>, Vec<Vec<u32>>)> {
    (2usize..4).prop_flat_map(|r| {
        (
            proptest::collection::vec(any::<bool>(), r).prop_filter("≤3 max, ≤2 min", |d| {
                d.iter().filter(|x| !**x).count() <= 2
            }),
            proptest::collection::vec(1u32..40, r),
            proptest::collection::vec(0.3f64..6.0, r),
        )
            .prop_flat_map(move |(dirs, k, eps)| {
                let point = k.iter().map(|&m| 0..=m).collect::<Vec<_>>();
                (
                    Just(dirs),
                    Just(k),
                    Just(eps),
                    proptest::collection::vec(point, 1..120),
                )
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn theorems_1_and_2((dirs, k, eps, points) in offered()) {
        let objs = objectives(&dirs);
        let mut archive = BoxArchive::new(&objs, &eps).unwrap();
        let all: Vec<Point> = points
            .iter()
            .enumerate()
            .map(|(i, v)| Point { node: vec![i as u8], values: v.iter().map(|&x| x as f64).collect() })
            .collect();
        for p in &all {
            archive.offer(p.clone());
        }
        let kept = archive.points();
        prop_assert!(!kept.is_empty());
        // Theorem 1: only minimal PBGs of everything offered.
        for a in &kept {
            let oa = a.oriented(&objs);
            prop_assert!(!all.iter().any(|p| strongly_dominates(&p.oriented(&objs), &oa)));
        }
        // One node per box, no box dominated by another.
        let boxes: Vec<Vec<i64>> = kept.iter().map(|p| archive.cell(&p.values)).collect();
        prop_assert_eq!(boxes.iter().collect::<HashSet<_>>().len(), boxes.len());
        for a in &boxes {
            prop_assert!(!boxes.iter().any(|b| strongly_dominates(b, a)));
        }
        // Theorem 2: |A| ≤ product of the r − 1 largest box counts per objective.
        let mut counts: Vec<f64> = k.iter().zip(&eps).map(|(&m, e)| (m as f64 / e).floor() + 1.0).collect();
        counts.sort_by(|a, b| b.total_cmp(a));
        let bound: f64 = counts[..counts.len() - 1].iter().product();
        prop_assert!(kept.len() as f64 <= bound, "{} > {}", kept.len(), bound);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The front keeps exactly the points no point strongly dominates, ties included (values
    /// drawn from few levels, so that many points are equal), in its order; and the front of a
    /// front and more points is the front of all of them (how the exhaustive search merges its
    /// blocks).
    #[test]
    fn front_is_the_undominated_points((dirs, k, _eps, points) in offered(), cut in 0usize..120) {
        let objs = objectives(&dirs);
        let all: Vec<Point> = points
            .iter()
            .enumerate()
            .map(|(i, v)| Point {
                node: vec![(i / 256) as u8, (i % 256) as u8],
                values: v.iter().zip(&k).map(|(&x, &m)| (x % 3.min(m + 1)) as f64).collect(),
            })
            .collect();
        let front = pareto_front(all.clone(), &objs);
        let mut want: Vec<Point> = all
            .iter()
            .filter(|p| {
                let o = p.oriented(&objs);
                !all.iter().any(|q| strongly_dominates(&q.oriented(&objs), &o))
            })
            .cloned()
            .collect();
        want.sort_by(|a, b| {
            a.values.partial_cmp(&b.values).unwrap().then_with(|| a.node.cmp(&b.node))
        });
        prop_assert_eq!(&front, &want);
        let cut = cut.min(all.len());
        let mut merged = pareto_front(all[..cut].to_vec(), &objs);
        merged.extend(all[cut..].iter().cloned());
        prop_assert_eq!(pareto_front(merged, &objs), front);
    }
}

fn vectors(points: &[Point]) -> HashSet<Vec<u64>> {
    points
        .iter()
        .map(|p| p.values.iter().map(|v| v.to_bits()).collect())
        .collect()
}

#[test]
fn archive_fed_every_node_equals_the_exact_front() {
    let ev = evaluator("datasets/adult/adult-arx.toml");
    let all = ev.evaluate_lattice(&|| {}).unwrap();
    for objs in [
        vec![Objective::K, Objective::L],
        vec![Objective::SK, Objective::SL],
        vec![Objective::K, Objective::L, Objective::SL],
    ] {
        let mut archive = BoxArchive::new(&objs, &vec![1.0; objs.len()]).unwrap();
        let points: Vec<Point> = all
            .iter()
            .map(|ix| Point {
                node: ix.node.clone(),
                values: pbg::objective::values(&objs, ix),
            })
            .collect();
        for p in &points {
            archive.offer(p.clone());
        }
        let front = pareto_front(points, &objs);
        assert_eq!(vectors(&archive.points()), vectors(&front), "{objs:?}");
        assert_eq!(convergence_error(&archive.points(), &front), 0.0);
        assert_eq!(
            representation_ratio(&archive.points(), &front, &objs, &vec![1.0; objs.len()]),
            1.0
        );
    }
}

#[test]
fn exact_front_equals_brute_force() {
    let ev = evaluator("datasets/adult/adult-arx.toml");
    let objs = vec![Objective::K, Objective::Glm, Objective::L];
    let result = exhaustive(&ev, &objs).unwrap();
    assert_eq!(result.evaluations, 4320);
    let all = ev.evaluate_lattice(&|| {}).unwrap();
    let oriented: Vec<(Vec<u8>, Vec<f64>)> = all
        .iter()
        .map(|ix| {
            (
                ix.node.clone(),
                objs.iter().map(|o| o.oriented(o.value(ix))).collect(),
            )
        })
        .collect();
    let brute: HashSet<Vec<u8>> = oriented
        .iter()
        .filter(|(_, a)| !oriented.iter().any(|(_, b)| strongly_dominates(b, a)))
        .map(|(n, _)| n.clone())
        .collect();
    let got: HashSet<Vec<u8>> = result.front.iter().map(|p| p.node.clone()).collect();
    assert_eq!(got, brute);
}

#[test]
fn same_seed_same_archive_on_any_thread_count() {
    let ev = evaluator("datasets/adult/adult.toml");
    let objs = vec![Objective::K, Objective::L, Objective::Glm];
    let cfg = EaConfig {
        seed: 7,
        iterations: 40,
        ..EaConfig::default()
    };
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| pbg_ea(&ev, &objs, &cfg).unwrap())
    };
    let one = run(1);
    let many = run(4);
    assert_eq!(one.front, many.front);
    assert_eq!(one.evaluations, many.evaluations);
    let other = pbg_ea(
        &ev,
        &objs,
        &EaConfig {
            seed: 8,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_ne!(one.front, other.front, "another seed explores differently");
}

#[test]
fn pbg_ea_converges_on_adult_k_glm() {
    // 20 runs of 25 × 200 (with our DGHs 100 iterations leave a few near-front nodes: see README).
    let ev = evaluator("datasets/adult/adult.toml");
    let objs = vec![Objective::K, Objective::Glm];
    let front = exhaustive(&ev, &objs).unwrap().front;
    let (mut ce, mut rr, mut evals) = (0.0, 0.0, 0.0);
    for seed in 0..20 {
        let r = pbg_ea(
            &ev,
            &objs,
            &EaConfig {
                seed,
                iterations: 200,
                ..EaConfig::default()
            },
        )
        .unwrap();
        ce += convergence_error(&r.front, &front) / 20.0;
        rr += representation_ratio(&r.front, &front, &objs, &[1.0, 1.0]) / 20.0;
        evals += r.evaluations as f64 / 20.0;
    }
    assert!(rr >= 0.9, "mean RR {rr}");
    assert!(ce <= 1e-3, "mean CE {ce}");
    assert!(evals <= 1792.0, "mean evaluations {evals}");
}

#[test]
fn cli_search_and_compare() {
    let v = pbg_json(&["search", "datasets/t1/t1.toml", "--objectives", "k,glm"]);
    assert_eq!(v["algorithm"], "exhaustive");
    assert_eq!(v["lattice_size"], 16);
    assert_eq!(v["evaluations"], 16);
    let front = v["front"].as_array().unwrap();
    assert!(
        front
            .iter()
            .all(|p| p["node"].is_array() && p["k"].is_u64() && p["glm"].is_number())
    );
    // Counts are integers in the JSON (k = 1 at the bottom, not 1.0).
    assert!(v.to_string().contains("\"k\":1,"), "{v}");
    let ea = pbg_json(&[
        "search",
        "datasets/t1/t1.toml",
        "--objectives",
        "k,glm",
        "--algorithm",
        "ea",
        "--seed",
        "3",
        "--iterations",
        "20",
    ]);
    assert_eq!(ea["algorithm"], "ea");
    assert!(ea["evaluations"].as_u64().unwrap() <= 16);
    // EDBT golden values through the CLI: T3a = (1,1) vs T3b = (2,2) on P_equiv.
    let c = pbg_json(&[
        "compare",
        "datasets/t1/t1.toml",
        "--node",
        "1,1",
        "--node",
        "2,2",
        "--property",
        "equiv",
    ]);
    assert_eq!(c["cov_ab"], 0.3);
    assert_eq!(c["cov_ba"], 1.0);
    assert_eq!(c["binary_ab"], 0);
    assert_eq!(c["binary_ba"], 7);
    assert_eq!(c["relation"], "b_dominates");
    assert_eq!(c["spr_ab"], 0.0);
    assert_eq!(c["spr_ba"], 24.0); // (0,4,4,0,3,3,3,0,4,3)
}

/// The class-only and distinct-only evaluators searches use give the same k, classes,
/// suppression, GLM, S_k and CM as the full one on every node, and distinct-only the same l.
#[test]
fn class_only_evaluation_keeps_every_class_index() {
    for profile in ["datasets/adult/adult.toml", "datasets/adult/adult-cm.toml"] {
        let ev = evaluator(profile);
        let light = ev.class_only().unwrap();
        let full = ev.evaluate_lattice(&|| {}).unwrap();
        let cheap = light.evaluate_lattice(&|| {}).unwrap();
        for (a, b) in full.iter().zip(&cheap) {
            assert_eq!(
                (a.classes, a.k, a.max_class, a.suppressed, a.s_k, a.cm),
                (b.classes, b.k, b.max_class, b.suppressed, b.s_k, b.cm),
                "node {:?}",
                a.node
            );
            assert!(
                (a.glm - b.glm).abs() <= 1e-9 * a.glm.max(1.0),
                "glm at {:?}",
                a.node
            );
        }
    }
}

/// `search --format table` prints an aligned table (numbers right-aligned), counts as integers.
#[test]
fn search_table_is_aligned() {
    let o = crate::common::pbg(&[
        "search",
        "datasets/t1/t1.toml",
        "--objectives",
        "k,glm",
        "--format",
        "table",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(lines[0].starts_with("zip  age"), "{text}");
    assert!(lines.len() >= 3, "{text}");
    assert!(
        lines.iter().all(|l| l.len() == lines[0].len()),
        "not aligned:\n{text}"
    );
    assert!(!text.contains('\t') && !text.contains(" 3.0 "), "{text}");
}

/// A search whose result cannot be written (standard output on a full device) fails with an
/// error naming standard output, in every format, instead of a panic.
#[test]
fn search_output_failure_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    for format in ["json", "csv", "table"] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_pbg"))
            .current_dir(crate::common::repo("."))
            .args(["search", "datasets/t1/t1.toml", "--objectives", "k,glm"])
            .args(["--format", format])
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{format}");
        assert!(
            err.contains("standard output") && !err.contains("panicked"),
            "{format}: {err}"
        );
    }
}
