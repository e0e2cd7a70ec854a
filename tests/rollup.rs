//! Property tests: roll-up = direct evaluation = the naive evaluator, on random tables with random
//! nested hierarchies, with and without suppression.

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use pbg::hierarchy::HierarchySpec;
use pbg::io::Table;
use pbg::profile::QiSpec;
use pbg::{Dataset, Evaluator, Profile, SuppressionLimit};
use proptest::prelude::*;

use crate::naive::{self, NaiveTable};

/// A random nested hierarchy over `leaves` leaves `v0, v1, ...`: each level merges groups of the
/// one below.
pub(crate) fn hierarchy(leaves: usize) -> impl Strategy<Value = Vec<Vec<String>>> {
    hierarchy_of(leaves, "v")
}

/// [`hierarchy`] over leaves named `{prefix}{i}`.
pub(crate) fn hierarchy_of(
    leaves: usize,
    prefix: &'static str,
) -> impl Strategy<Value = Vec<Vec<String>>> {
    // Up to 3 intermediate levels, each a random map from the previous level's groups.
    proptest::collection::vec(proptest::collection::vec(0usize..4, leaves), 0..3).prop_map(
        move |maps| {
            let mut rows: Vec<Vec<String>> =
                (0..leaves).map(|i| vec![format!("{prefix}{i}")]).collect();
            let mut group: Vec<usize> = (0..leaves).collect();
            for (l, m) in maps.iter().enumerate() {
                // The new group of a leaf is a function of its current group: m indexed by group.
                group = group.iter().map(|&g| m[g % m.len()]).collect();
                for (r, g) in rows.iter_mut().zip(&group) {
                    r.push(format!("L{}g{}", l + 1, g));
                }
            }
            for r in &mut rows {
                r.push("*".into());
            }
            rows
        },
    )
}

/// Random tables whose sensitive domain is small (dense cell tables) or large (sparse ones), its
/// values text (`s0`, `s1`, ...: ordered by text) or numbers (ordered numerically), with or
/// without a sensitive hierarchy (which then orders them).
pub(crate) fn table() -> impl Strategy<Value = (NaiveTable, u64)> {
    (
        1usize..4,
        proptest::collection::vec(1usize..6, 3),
        prop_oneof![Just(4usize), Just(40usize)],
        any::<bool>(),
    )
        .prop_flat_map(|(q, domains, sens_n, numeric)| {
            let domains: Vec<usize> = domains[..q].to_vec();
            let hs: Vec<_> = domains.iter().map(|&n| hierarchy(n)).collect();
            let row = domains.iter().map(|&n| 0..n).collect::<Vec<_>>();
            let prefix = if numeric { "" } else { "s" };
            (
                hs,
                proptest::collection::vec((row, 0..sens_n, 0usize..3), 1..50),
                0u64..20,
                proptest::option::of(hierarchy_of(sens_n, prefix)),
            )
                .prop_map(move |(hierarchies, rows, eta, sens_hierarchy)| {
                    let t = NaiveTable {
                        rows: rows
                            .iter()
                            .map(|(r, _, _)| r.iter().map(|v| format!("v{v}")).collect())
                            .collect(),
                        sens: rows
                            .iter()
                            .map(|(_, s, _)| format!("{prefix}{s}"))
                            .collect(),
                        labels: rows.iter().map(|(_, _, c)| format!("c{c}")).collect(),
                        hierarchies,
                        sens_hierarchy,
                    };
                    (t, eta)
                })
        })
}

/// The engine's view of a naive table: an in-memory Arrow table and an inline-hierarchy profile.
pub(crate) fn engine(t: &NaiveTable, eta: u64) -> Evaluator {
    let q = t.hierarchies.len();
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for d in 0..q {
        fields.push(Field::new(format!("q{d}"), DataType::Utf8, false));
        cols.push(Arc::new(StringArray::from_iter_values(
            t.rows.iter().map(|r| r[d].as_str()),
        )));
    }
    fields.push(Field::new("s", DataType::Utf8, false));
    cols.push(Arc::new(StringArray::from_iter_values(t.sens.iter())));
    fields.push(Field::new("c", DataType::Utf8, false));
    cols.push(Arc::new(StringArray::from_iter_values(t.labels.iter())));
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let table = Table {
        path: PathBuf::from("memory"),
        schema,
        batches: vec![batch],
    };
    let profile = Profile {
        origin: "test".into(),
        input: pbg::input::Input::Path(PathBuf::from("memory")),
        delimiter: b',',
        qis: (0..q)
            .map(|d| QiSpec {
                name: format!("q{d}"),
                hierarchy: HierarchySpec::Table {
                    rows: t.hierarchies[d].clone(),
                    source: None,
                },
                null_as: None,
            })
            .collect(),
        sensitive: "s".into(),
        sensitive_hierarchy: t.sens_hierarchy.as_ref().map(|rows| HierarchySpec::Table {
            rows: rows.clone(),
            source: None,
        }),
        class: Some("c".into()),
        identifiers: vec![],
        suppression: SuppressionLimit::Rows(eta),
        rule_name: None,
        suppression_rule: Default::default(),
    };
    Evaluator::new(Arc::new(Dataset::from_table(&profile, table).unwrap())).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every node's tables rolled up from each of its predecessors equal its tables built from
    /// the rows, for the full, distinct-only and class-only evaluators.
    #[test]
    fn rolled_up_tables_equal_direct_tables((t, eta) in table()) {
        let packed = engine(&t, eta);
        // The wide path with every node keyed by first rows, and with only coarse nodes packing
        // (roll-ups across the two kinds of nodes).
        let (rows, mixed) = (packed.with_wide_keys(0), packed.with_wide_keys(6));
        let mut evaluators = Vec::new();
        for ev in [packed, rows, mixed] {
            evaluators.push(ev.class_only().unwrap());
            evaluators.extend(ev.distinct_only());
            evaluators.push(ev);
        }
        for e in &evaluators {
            for i in 0..e.lattice().size() {
                let node = e.lattice().node(i);
                let direct = e.tables(&node).unwrap();
                for d in 0..node.len() {
                    if node[d] == 0 {
                        continue;
                    }
                    let mut parent = node.clone();
                    parent[d] -= 1;
                    let rolled = e.rollup(&e.tables(&parent).unwrap(), &node, d);
                    prop_assert_eq!(&rolled, &direct, "node {:?} from {:?}", node, parent);
                }
            }
        }
    }

    /// The packed and the wide class keys (first rows everywhere, or first rows below and packed
    /// codes above), each by roll-up and directly, equal the naive evaluator on every node; the
    /// sweep in blocks of any size is the sweep.
    #[test]
    fn rollup_direct_and_naive_agree((t, eta) in table(), block in 1usize..40) {
        let packed = engine(&t, eta);
        prop_assert!(!packed.class_keys().is_wide());
        for ev in [packed.with_wide_keys(0), packed.with_wide_keys(6), packed] {
        let all = ev.evaluate_lattice(&|| {}).unwrap();
        prop_assert_eq!(all.len(), ev.lattice().size());
        let mut blocks = Vec::new();
        ev.sweep_lattice(block, &|| {}, &mut |b| {
            blocks.push(b);
            Ok(true)
        })
        .unwrap();
        let last = ev.lattice().heights().last().map_or(1, |&h| h as usize + 1);
        prop_assert!(blocks.iter().all(|b| b.len() <= block.max(last)));
        prop_assert!(blocks.concat() == all, "blocks of {} differ from the sweep", block);
        for (i, rolled) in all.iter().enumerate() {
            let node = ev.lattice().node(i);
            prop_assert_eq!(&rolled.node, &node);
            let direct = ev.evaluate(&node).unwrap();
            prop_assert_eq!(rolled, &direct, "roll-up vs direct at {:?}", node);
            let want = naive::evaluate(&t, &node, eta);
            naive::agrees(&ev, &node, &direct, &want).map_err(TestCaseError::fail)?;
        }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Under the requirement rule (suppress the classes smaller than k, with fewer than l values
    /// or too far from the table in t_equal, when they fit η), the sweep, the direct evaluation,
    /// the lightest evaluator for the requirements and the row-level paths all equal the naive
    /// evaluator's literal rule.
    #[test]
    fn requirement_rule_agrees_with_naive(
        (t, eta) in table(),
        k in 1u64..5,
        l in 1u64..4,
        t_max in proptest::option::of(0.05f64..0.9),
        risk in proptest::option::of(0.1f64..0.7),
    ) {
        use pbg::indices::Index;
        use pbg::suppression::{RuleName, SuppressionRule};
        // Without l or t, the requirements need no sensitive values (a class-only evaluator).
        let mut text = format!("k>={k}");
        if l > 1 {
            text += &format!(",l>={l}");
        }
        if let Some(x) = t_max {
            text += &format!(",t_equal<={x}");
        }
        if let Some(r) = risk {
            text += &format!(",risk_prosecutor<={r}");
        }
        let require = pbg::policy::Requirement::parse_list(&text).unwrap();
        let ev = engine(&t, eta).with_rule(SuppressionRule::named(RuleName::Requirements, &require));
        let rule = naive::NaiveRule::Requirements { k, l, t: t_max, risk };
        let needed: Vec<Index> = require.iter().map(|r| r.measure).collect();
        let light = ev.lightest(&needed).unwrap();
        let swept = ev.evaluate_lattice(&|| {}).unwrap();
        let light_swept = light.evaluate_lattice(&|| {}).unwrap();
        for (i, rolled) in swept.iter().enumerate() {
            let node = ev.lattice().node(i);
            let direct = ev.evaluate(&node).unwrap();
            prop_assert_eq!(rolled, &direct, "roll-up vs direct at {:?}", node);
            let want = naive::evaluate_under(&t, &node, eta, &rule);
            let lx = &light_swept[i];
            prop_assert_eq!(
                (lx.classes, lx.k, lx.suppressed, lx.glm),
                (direct.classes, direct.k, direct.suppressed, direct.glm),
                "lightest at {:?}", node
            );
            if l > 1 {
                prop_assert_eq!(lx.l_distinct, direct.l_distinct);
            }
            if t_max.is_some() {
                prop_assert_eq!(lx.t_equal, direct.t_equal);
            }
            naive::agrees(&ev, &node, &direct, &want)
                .map_err(|e| TestCaseError::fail(format!("{text} eta {eta}: {e}")))?;
            let rows = ev.evaluate_rows(&node).unwrap();
            let n = t.rows.len() as u64;
            let naive_gone: Vec<u32> = (0..t.rows.len() as u32)
                .filter(|&r| want.suppressed > 0 && want.p_equiv[r as usize] == n)
                .collect();
            prop_assert_eq!(rows.suppressed.iter().collect::<Vec<u32>>(), naive_gone);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// An evaluator asked for some distances only gives exactly the full evaluator's values for
    /// them (its pruning looks at those alone) and NaN for the others.
    #[test]
    fn an_evaluator_for_some_distances_gives_them_exactly((t, eta) in table(), mask in 1u8..32) {
        use pbg::indices::Index;
        let full = engine(&t, eta);
        let wanted: Vec<Index> = [
            Index::TEqual,
            Index::TOrdered,
            Index::THierarchical,
            Index::Beta,
            Index::DeltaDisclosure,
        ]
        .into_iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, x)| x)
        .collect();
        let light = full.lightest(&wanted).unwrap();
        let (a, b) = (full.evaluate_lattice(&|| {}).unwrap(), light.evaluate_lattice(&|| {}).unwrap());
        for (x, y) in a.iter().zip(&b) {
            for i in [Index::TEqual, Index::TOrdered, Index::THierarchical, Index::Beta, Index::DeltaDisclosure] {
                let (u, v) = (i.of(x), i.of(y));
                if wanted.contains(&i) {
                    prop_assert!(u == v || (u.is_nan() && v.is_nan()), "{:?} at {:?}: {} vs {}", i, x.node, u, v);
                } else {
                    prop_assert!(v.is_nan(), "{:?} not wanted but {}", i, v);
                }
            }
            prop_assert_eq!((x.k, x.l_distinct, x.glm), (y.k, y.l_distinct, y.glm));
        }
    }
}

/// Tables above the row count where direct evaluation splits its group-by into key ranges
/// (`classes::group`): on the packed and both wide paths, with dense (4 values) and sparse (40
/// values) sensitive tables, the direct evaluation equals the naive evaluator at the bottom and
/// the top, and the roll-up sweep at every node.
#[test]
fn large_tables_counted_by_key_ranges_agree_with_naive() {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let domains = [5usize, 4, 3];
    let hierarchies: Vec<Vec<Vec<String>>> = domains
        .iter()
        .map(|&n| {
            (0..n)
                .map(|i| vec![format!("v{i}"), format!("g{}", i / 2), "*".to_string()])
                .collect()
        })
        .collect();
    for sens_n in [4usize, 40] {
        let rows = 140_000;
        let mut t = NaiveTable {
            rows: Vec::with_capacity(rows),
            sens: Vec::with_capacity(rows),
            labels: Vec::with_capacity(rows),
            hierarchies: hierarchies.clone(),
            sens_hierarchy: None,
        };
        for _ in 0..rows {
            t.rows.push(
                domains
                    .iter()
                    .map(|&n| format!("v{}", rng.random_range(0..n)))
                    .collect(),
            );
            t.sens.push(format!("s{}", rng.random_range(0..sens_n)));
            t.labels.push(format!("c{}", rng.random_range(0..3)));
        }
        let eta = 500;
        let packed = engine(&t, eta);
        assert!(packed.dataset().num_rows() > 131_072, "below the split");
        // The naive evaluator (slow on this many rows) at the bottom and the top; every node's
        // direct evaluation equals the sweep's roll-up from the bottom.
        let lattice = packed.lattice().clone();
        let ends = [lattice.bottom(), lattice.top()];
        let wants: Vec<_> = ends.iter().map(|n| naive::evaluate(&t, n, eta)).collect();
        for ev in [packed.with_wide_keys(0), packed.with_wide_keys(6), packed] {
            for (node, want) in ends.iter().zip(&wants) {
                let direct = ev.evaluate(node).unwrap();
                naive::agrees(&ev, node, &direct, want).unwrap();
            }
            let swept = ev.evaluate_lattice(&|| {}).unwrap();
            for (i, rolled) in swept.iter().enumerate() {
                let node = lattice.node(i);
                assert_eq!(rolled, &ev.evaluate(&node).unwrap(), "node {node:?}");
            }
        }
    }
}
