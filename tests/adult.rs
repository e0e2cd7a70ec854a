//! The shipped adult profiles: lattice sizes, known nodes, roll-up vs direct, naive cross-check.

use std::collections::HashSet;

use crate::common::{evaluator, repo};
use crate::naive::{self, NaiveTable};

#[test]
fn lattice_sizes_match_the_paper() {
    assert_eq!(
        evaluator("datasets/adult/adult.toml").lattice().size(),
        17920
    );
    assert_eq!(
        evaluator("datasets/adult/adult-cm.toml").lattice().size(),
        8960
    );
    assert_eq!(
        evaluator("datasets/adult/adult-arx.toml").lattice().size(),
        4320
    );
}

#[test]
fn top_node_is_one_class() {
    let ev = evaluator("datasets/adult/adult.toml");
    let top = ev.lattice().top();
    let ix = ev.evaluate(&top).unwrap();
    assert_eq!(
        (ix.classes, ix.k, ix.max_class, ix.l_distinct, ix.suppressed),
        (1, 30162, 30162, 14, 0)
    );
    assert_eq!(ix.glm, 30162.0 * 8.0);
    assert_eq!(ix.s_k, 30162 * 30162);
    assert_eq!(ev.dataset().eta, 301);
}

/// adult.csv parsed by hand (split on `;`), for the naive evaluator.
fn adult_naive(qis: &[&str], hierarchy_dir: &str) -> NaiveTable {
    let text = std::fs::read_to_string(repo("datasets/adult/adult.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let idx: Vec<usize> = qis.iter().map(|q| col(q)).collect();
    let (occ, sal) = (col("occupation"), col("salary-class"));
    let mut t = NaiveTable {
        rows: vec![],
        sens: vec![],
        labels: vec![],
        hierarchies: qis
            .iter()
            .map(|q| {
                std::fs::read_to_string(repo(&format!("{hierarchy_dir}/{q}.csv")))
                    .unwrap()
                    .lines()
                    .map(|l| l.split(';').map(String::from).collect())
                    .collect()
            })
            .collect(),
        sens_hierarchy: None,
    };
    for line in lines {
        let f: Vec<&str> = line.split(';').collect();
        t.rows.push(idx.iter().map(|&i| f[i].to_string()).collect());
        t.sens.push(f[occ].to_string());
        t.labels.push(f[sal].to_string());
    }
    t
}

#[test]
fn adult_cm_nodes_match_the_naive_evaluator() {
    let ev = evaluator("datasets/adult/adult-cm.toml");
    let qis = [
        "age",
        "workclass",
        "education",
        "marital-status",
        "race",
        "sex",
        "native-country",
    ];
    let t = adult_naive(&qis, "datasets/adult/dbsec-hierarchies");
    for node in [
        [0, 0, 0, 0, 0, 0, 0],
        [2, 1, 1, 1, 0, 1, 2],
        [1, 0, 2, 0, 1, 0, 1],
        [6, 3, 3, 3, 1, 1, 4],
    ] {
        let got = ev.evaluate(&node).unwrap();
        let want = naive::evaluate(&t, &node, 301);
        naive::agrees(&ev, &node, &got, &want).unwrap();
    }
}

#[test]
fn adult_lattice_rollups_equal_direct_evaluation() {
    let ev = evaluator("datasets/adult/adult.toml");
    let all = ev.evaluate_lattice(&|| {}).unwrap();
    assert_eq!(all.len(), 17920);
    for i in (0..all.len()).step_by(61) {
        let node = ev.lattice().node(i);
        assert_eq!(all[i], ev.evaluate(&node).unwrap(), "node {node:?}");
    }
    // Suppression never exceeds η, and every node is reported once, in index order.
    assert!(all.iter().all(|x| x.suppressed <= 301));
    let nodes: HashSet<_> = all.iter().map(|x| x.node.clone()).collect();
    assert_eq!(nodes.len(), all.len());
}
