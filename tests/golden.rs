//! SPEC §3 golden values: the EDBT 2009 T1 example (T3a, T3b, T4) and the D1/D2, s/t vectors.

use pbg::quality::{binary, coverage, hypervolume, spread};

use crate::common::{evaluator, pbg_json};

fn f(v: &[u64]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn t3a() -> (Vec<u64>, Vec<u64>) {
    let (_, v) = evaluator("datasets/t1/t1.toml")
        .property_vectors(&[1, 1])
        .unwrap();
    (v.p_equiv, v.p_sens)
}

fn t3b() -> Vec<u64> {
    evaluator("datasets/t1/t1.toml")
        .property_vectors(&[2, 2])
        .unwrap()
        .1
        .p_equiv
}

fn t4() -> Vec<u64> {
    evaluator("datasets/t1/t1-t4.toml")
        .property_vectors(&[3, 1])
        .unwrap()
        .1
        .p_equiv
}

#[test]
fn t3a_property_vectors() {
    let (equiv, sens) = t3a();
    assert_eq!(equiv, vec![3, 3, 3, 3, 4, 4, 4, 3, 3, 4]);
    assert_eq!(sens, vec![2, 2, 1, 2, 2, 1, 2, 1, 2, 1]);
    let ix = evaluator("datasets/t1/t1.toml").evaluate(&[1, 1]).unwrap();
    assert_eq!(ix.s_k as f64 / 10.0, 3.4, "average class size");
    assert_eq!(
        (ix.classes, ix.k, ix.max_class, ix.l_distinct),
        (3, 3, 4, 2)
    );
}

#[test]
fn t3b_and_t4_property_vectors() {
    assert_eq!(t3b(), vec![3, 7, 7, 3, 7, 7, 7, 3, 7, 7]);
    // T4 classes {1,3,4,8}, {2,5,6,7,9,10}.
    assert_eq!(t4(), vec![4, 6, 4, 4, 6, 6, 6, 4, 6, 6]);
}

#[test]
fn t1_binary_indices() {
    let (a, _) = t3a();
    let (a, b, t4) = (f(&a), f(&t3b()), f(&t4()));
    assert_eq!(binary(&a, &b), 0);
    assert_eq!(binary(&b, &a), 7);
    assert_eq!(coverage(&a, &b), 0.3);
    assert_eq!(coverage(&b, &a), 1.0);
    assert_eq!(coverage(&t4, &a), 1.0);
    assert_eq!(coverage(&b, &t4), 0.7);
    assert_eq!(coverage(&t4, &b), 0.3);
}

#[test]
fn d1_d2_coverage_and_spread() {
    let d1 = [2.0, 2.0, 3.0, 4.0, 5.0];
    let d2 = [3.0, 2.0, 4.0, 2.0, 3.0];
    assert_eq!(coverage(&d1, &d2), 0.6);
    assert_eq!(coverage(&d2, &d1), 0.6);
    assert_eq!(spread(&d1, &d2), 4.0);
    assert_eq!(spread(&d2, &d1), 2.0);
}

#[test]
fn s_t_hypervolume() {
    let s = [3.0, 3.0, 3.0, 5.0, 5.0, 5.0, 5.0, 5.0];
    let t = [4.0; 8];
    assert!((hypervolume(&s, &t) - 56727.0).abs() < 1e-6);
    assert!((hypervolume(&t, &s) - 37888.0).abs() < 1e-6);
}

#[test]
fn cli_vectors_match_golden() {
    let v = pbg_json(&[
        "evaluate",
        "datasets/t1/t1.toml",
        "--node",
        "1,1",
        "--vectors",
    ]);
    assert_eq!(
        v["p_equiv"],
        serde_json::json!([3, 3, 3, 3, 4, 4, 4, 3, 3, 4])
    );
    assert_eq!(
        v["p_sens"],
        serde_json::json!([2, 2, 1, 2, 2, 1, 2, 1, 2, 1])
    );
    assert_eq!(v["k"], 3);
    assert_eq!(v["lattice_size"], 16);
}
