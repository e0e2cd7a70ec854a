//! Singleton implication: a node with more than η tuples alone in their class suppresses nothing,
//! nor does any node below it, so its k, l, GLM, precision and non-uniform entropy follow without
//! its classes. Checked against full evaluations: the implied values, the probe that claims it
//! (never without the classes showing it), the packed cover it is tried on, and PBG-EA's fronts;
//! likewise the probe's other claim, a node failing `k >= K` from its small classes.

use pbg::evaluate::Probed;
use pbg::indices::{INDICES, SingletonIndices};
use pbg::objective::values;
use pbg::search::{EaConfig, pbg_ea};
use pbg::{Evaluator, Objective};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use crate::common::{evaluator, evaluator_at, pbg_json};
use crate::wide::generate;

/// Whether `node` has more than η singleton tuples, from its full tables.
fn singleton_rich(ev: &Evaluator, node: &[u8]) -> bool {
    let t = ev.tables(node).unwrap();
    Evaluator::singleton_tuples(&t) > ev.dataset().eta
}

/// At every singleton-rich node among `nodes`: each implied index equals the full evaluation's,
/// every node below it is singleton-rich too, and the probes agree with the tables (the probe
/// may miss a rich node, never invent one). Returns how many rich nodes it checked.
fn check_nodes(ev: &Evaluator, nodes: &[Vec<u8>], rng: &mut ChaCha8Rng) -> usize {
    let mut rich_nodes = 0;
    for node in nodes {
        let rich = singleton_rich(ev, node);
        let probed = ev.singleton_rich(node).unwrap();
        assert!(!probed || rich, "probe claims singleton tuples at {node:?}");
        match ev.tables_unless_singleton_rich(node).unwrap() {
            None => assert!(probed, "stopped without the probe's evidence at {node:?}"),
            Some(t) => {
                assert!(!probed, "evaluated a node the probe shows rich: {node:?}");
                assert_eq!(t, ev.tables(node).unwrap(), "tables at {node:?}");
            }
        }
        if !rich {
            continue;
        }
        rich_nodes += 1;
        let implied = ev.singleton_indices(node).expect("the DBSEC rule");
        let full = ev.evaluate(node).unwrap();
        assert_eq!(full.suppressed, 0, "{node:?}");
        for info in INDICES
            .iter()
            .filter(|i| SingletonIndices::implies(i.index))
        {
            assert_eq!(
                implied.value(info.index),
                Some(info.index.of(&full)),
                "{} at {node:?}",
                info.name
            );
        }
        // A random node below is rich as well.
        let below: Vec<u8> = node.iter().map(|&l| rng.random_range(0..=l)).collect();
        assert!(singleton_rich(ev, &below), "{below:?} below {node:?}");
    }
    rich_nodes
}

/// Adult (packed keys, η = 301): random nodes under the full, class-only and distinct-only
/// evaluators (the lighter ones are what searches run on).
#[test]
fn implied_indices_equal_full_evaluations_on_adult() {
    let ev = evaluator("datasets/adult/adult.toml");
    let lattice = ev.lattice().clone();
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let nodes: Vec<Vec<u8>> = (0..120)
        .map(|_| lattice.node(rng.random_range(0..lattice.size())))
        .chain([lattice.bottom(), lattice.top()])
        .collect();
    let full = check_nodes(&ev, &nodes, &mut rng);
    assert!(full >= 5, "only {full} singleton-rich nodes drawn");
    let light = [ev.class_only().unwrap(), ev.distinct_only().unwrap()];
    for l in &light {
        assert_eq!(check_nodes(l, &nodes, &mut rng), full);
    }
}

/// A generated 10-QI table (wide keys: first rows below, packed above): the same checks, and
/// the packed cover of every node packs and lies above it.
#[test]
fn implied_indices_equal_full_evaluations_on_wide_data() {
    let dir = tempfile::tempdir().unwrap();
    let ev = evaluator_at(&generate(dir.path(), 10, 4000, 8));
    assert!(ev.class_keys().is_wide());
    let lattice = ev.lattice().clone();
    let heights = lattice.heights().to_vec();
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let nodes: Vec<Vec<u8>> = (0..60)
        .map(|_| heights.iter().map(|&h| rng.random_range(0..=h)).collect())
        .chain([lattice.bottom(), lattice.top()])
        .collect();
    assert!(check_nodes(&ev, &nodes, &mut rng) >= 5);
    for node in &nodes {
        let cover = ev.class_keys().packed_cover(node).unwrap();
        assert!(node.iter().zip(&cover).all(|(a, b)| a <= b), "{cover:?}");
        assert!(matches!(
            ev.node_keys(&cover),
            pbg::classes::NodeKeys::Packed(_)
        ));
        if matches!(ev.node_keys(node), pbg::classes::NodeKeys::Packed(_)) {
            assert_eq!(&cover, node);
        }
    }
}

/// PBG-EA with implied nodes: every front point's objective values equal a full evaluation's,
/// and some nodes were implied rather than evaluated (on adult and on wide data).
#[test]
fn ea_fronts_with_implied_nodes_match_full_evaluations() {
    let dir = tempfile::tempdir().unwrap();
    let wide = evaluator_at(&generate(dir.path(), 12, 6000, 9));
    let adult = evaluator("datasets/adult/adult.toml");
    for (ev, objectives) in [(&wide, "k,glm"), (&adult, "k,l,glm"), (&adult, "k,glm")] {
        let objectives =
            Objective::parse_list(objectives, pbg::indices::Present::of(ev.dataset())).unwrap();
        let cfg = EaConfig {
            population: 16,
            iterations: 25,
            seed: 5,
            ..EaConfig::default()
        };
        let r = pbg_ea(ev, &objectives, &cfg).unwrap();
        assert!(r.implied > 0, "nothing implied");
        assert!(r.implied < r.evaluations);
        for point in &r.front {
            let full = ev.evaluate(&point.node).unwrap();
            assert_eq!(point.values, values(&objectives, &full), "{:?}", point.node);
        }
    }
}

/// The search report counts implied nodes and probes.
#[test]
fn search_reports_implied_nodes() {
    let v = pbg_json(&[
        "search",
        crate::common::repo("datasets/adult/adult.toml")
            .to_str()
            .unwrap(),
        "--objectives",
        "k,glm",
        "--algorithm",
        "ea",
        "--seed",
        "2",
        "--iterations",
        "10",
    ]);
    let implied = v["implied"].as_u64().unwrap();
    assert!(
        implied > 0 && implied < v["evaluations"].as_u64().unwrap(),
        "{v}"
    );
    assert!(v["probes"].as_u64().is_some(), "{v}");
}

/// At each of `nodes` and each K: what the probe settles agrees with the full tables. It claims
/// `FailsK` only where more than η tuples lie in classes smaller than K (and then the node's k is
/// below K), `SingletonRich` only where the tables show more than η singletons, and otherwise
/// returns exactly the direct tables. Returns how many nodes it showed failing.
fn check_probes(ev: &Evaluator, nodes: &[Vec<u8>]) -> usize {
    let eta = ev.dataset().eta;
    let mut failing = 0;
    for node in nodes {
        let tables = ev.tables(node).unwrap();
        let full = ev.indices(node, &tables);
        for (k, singletons) in [2u64, 3, 5, 10]
            .into_iter()
            .flat_map(|k| [(k, true), (k, false)])
        {
            let small: u64 = tables.sens.sizes().map(|(s, _)| s).filter(|&s| s < k).sum();
            match ev.tables_unless_decided(node, singletons, Some(k)).unwrap() {
                Probed::FailsK => {
                    assert!(small > eta, "{node:?} k {k}: {small} small tuples");
                    assert!(full.k < k, "{node:?} k {k}: k = {}", full.k);
                    failing += 1;
                }
                Probed::SingletonRich => {
                    assert!(singletons, "{node:?}: singletons not asked for");
                    assert!(Evaluator::singleton_tuples(&tables) > eta, "{node:?}");
                }
                Probed::Tables(t) => assert_eq!(t, tables, "tables at {node:?}"),
            }
        }
    }
    failing
}

/// The probe's `k >= K` claims on adult (row parts by age, country, ...) and on a generated
/// 10-QI table of 150,000 rows (above the row count from which searches probe), under the full
/// and the class-only evaluator; nodes drawn at random, so some lie above every row part's level
/// (every row's key then) and some below (a part's rows only).
#[test]
fn probes_fail_k_only_where_the_tables_do() {
    let dir = tempfile::tempdir().unwrap();
    let wide = evaluator_at(&generate(dir.path(), 10, 150_000, 8));
    let adult = evaluator("datasets/adult/adult.toml");
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    for ev in [&adult, &wide] {
        let heights = ev.lattice().heights().to_vec();
        let nodes: Vec<Vec<u8>> = (0..40)
            .map(|_| heights.iter().map(|&h| rng.random_range(0..=h)).collect())
            .chain([ev.lattice().top()])
            .collect();
        let failing = check_probes(ev, &nodes);
        assert!(failing >= 10, "only {failing} claims of failure");
        assert_eq!(check_probes(&ev.class_only().unwrap(), &nodes), failing);
    }
}
