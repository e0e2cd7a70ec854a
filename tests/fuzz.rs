//! Fuzz-style robustness: random, often malformed CSV inputs and hierarchies go through the whole
//! release path (statistics, plan, write, verifier). Every case must end in a clear error or in a
//! release the verifier accepted — never a panic — and a release at the top node must hold only
//! one label in its QI column (no raw value can slip through).

use std::fs;

use pbg::Profile;
use proptest::prelude::*;

/// Text cells drawn from an alphabet rich in separators, quotes, blanks and lookalikes.
fn cell() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => "[0-9]{1,5}",
        4 => "0[0-9]{2,4}",
        4 => "[a-c]{1,3}",
        1 => Just(String::new()),
        1 => Just("\"a,b\"".to_string()),
        1 => Just("\"\"".to_string()),
        1 => Just(" 7".to_string()),
        1 => Just("1e3".to_string()),
        1 => Just("NaN".to_string()),
        1 => Just("é".to_string()),
    ]
}

fn table() -> impl Strategy<Value = (Vec<String>, Vec<Vec<String>>)> {
    let header = prop_oneof![
        Just(vec![
            "zip".to_string(),
            "disease".to_string(),
            "note".to_string()
        ]),
        Just(vec![
            "zip".to_string(),
            "disease".to_string(),
            "zip".to_string()
        ]),
        Just(vec!["zip".to_string(), "disease".to_string()]),
        Just(vec![
            "disease".to_string(),
            "zip".to_string(),
            "x".to_string()
        ]),
    ];
    (
        header,
        proptest::collection::vec(proptest::collection::vec(cell(), 3), 0..12),
    )
}

fn hierarchy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{ type = \"mask\" }".to_string()),
        Just("{ type = \"mask\", steps = 2 }".to_string()),
        Just("{ type = \"mask\", steps = 0 }".to_string()),
        Just("{ type = \"interval\", widths = [10, 100] }".to_string()),
        Just("{ type = \"interval\", cuts = [[50, 10]] }".to_string()),
        Just("{ type = \"table\", rows = [[\"1\", \"*\"], [\"2\", \"*\"]] }".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn random_inputs_end_in_a_clear_error_or_a_verified_release(
        (header, rows) in table(),
        h in hierarchy(),
        delimiter in prop_oneof![Just(','), Just(';')],
        parquet in any::<bool>(),
        ragged in proptest::bool::weighted(0.1),
        null_as in proptest::option::of(prop_oneof![Just("0"), Just("5")]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let d = delimiter.to_string();
        let mut text = header.join(&d) + "\n";
        for (i, r) in rows.iter().enumerate() {
            // Rows as wide as the header, but for an occasional ragged one.
            let width = if ragged && i % 2 == 1 { 1 } else { header.len() };
            text.push_str(&r[..width.min(r.len())].join(&d));
            text.push('\n');
        }
        let data = dir.path().join("d.csv");
        fs::write(&data, &text).unwrap();
        let toml = format!(
            "input = \"{}\"\ndelimiter = \"{d}\"\nsensitive = \"disease\"\n[[qi]]\nname = \"zip\"\nhierarchy = {h}\n{}",
            data.display(),
            null_as.map(|v| format!("null_as = \"{v}\"\n")).unwrap_or_default()
        );
        let profile = match Profile::from_toml_str(&toml, dir.path(), "fuzz") {
            Ok(p) => p,
            Err(_) => return Ok(()),
        };
        let out = dir.path().join(if parquet { "r.parquet" } else { "r.csv" });
        // The top node: every zip must come out as the top label.
        let result = std::panic::catch_unwind(|| {
            pbg::release::anonymize(
                &profile,
                &|ev| Ok(ev.dataset().heights().to_vec()),
                &out,
            )
        });
        let Ok(result) = result else {
            return Err(TestCaseError::fail(format!("panicked on {text:?} with {h}")));
        };
        match result {
            Err(e) => {
                let message = e.to_string();
                prop_assert!(!message.is_empty() && !message.contains("panicked"), "{message}");
                prop_assert!(!out.exists(), "no output after a failure");
            }
            Ok(summary) => {
                prop_assert!(summary.verified);
                if !parquet {
                    // The top level is one group: every released zip is the same label.
                    let t = pbg::io::read_table(&pbg::input::Input::Path(out.clone()), b',').unwrap();
                    let z = t.column_index("zip").unwrap();
                    let text = pbg::encode::text_column(&t.column(z).unwrap()).unwrap();
                    let used: std::collections::HashSet<u32> =
                        text.keys.values().iter().copied().collect();
                    prop_assert!(used.len() <= 1, "several zip labels at the top node");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// The CSV release written from the rows pass 1 keeps and the release plan written by
    /// DataFusion are the same file, at any node, on random (often awkward) CSV text: the same
    /// labels, the same suppression, the same kept values byte for byte, in the same order.
    #[test]
    fn kept_release_equals_the_plan_on_random_tables(
        (header, rows) in table(),
        h in hierarchy(),
        level in 0u8..4,
        limit in prop_oneof![Just("0"), Just("20%"), Just("60%")],
    ) {
        use pbg::release::{KEEP_LIMIT, KeptRows, write_kept_csv, write_kept_release, write_release};
        let dir = tempfile::tempdir().unwrap();
        let mut text = header.join(",") + "\n";
        for r in &rows {
            text.push_str(&r[..header.len()].join(","));
            text.push('\n');
        }
        let data = dir.path().join("d.csv");
        fs::write(&data, &text).unwrap();
        let toml = format!(
            "input = \"{}\"\nsensitive = \"disease\"\nsuppression_limit = \"{limit}\"\n[[qi]]\nname = \"zip\"\nhierarchy = {h}\n",
            data.display()
        );
        let Ok(profile) = Profile::from_toml_str(&toml, dir.path(), "fuzz") else {
            return Ok(());
        };
        let ctx = pbg::input::new_context();
        let Ok(Ok((ds, kept))) = pbg::input::block_on(pbg::statistics::statistics_with(
            &ctx,
            &profile,
            KeptRows::new(KEEP_LIMIT, None),
        )) else {
            return Ok(());
        };
        let Ok(ev) = pbg::Evaluator::new(std::sync::Arc::new(ds)) else {
            return Ok(());
        };
        let node = [level.min(ev.dataset().heights()[0])];
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        let kept_result = write_kept_csv(&ev, &node, kept.batches().unwrap(), &a);
        let plan_result = pbg::input::block_on(write_release(
            &ctx,
            &ev,
            &node,
            &b,
            pbg::io::OutputFormat::Csv,
        ))
        .unwrap();
        match (kept_result, plan_result) {
            (Ok(x), Ok((rows, fp))) => {
                prop_assert_eq!(x, (rows, fp.unwrap()));
                let (ta, tb) = (fs::read(&a).unwrap(), fs::read(&b).unwrap());
                prop_assert!(ta == tb, "kept:\n{}\nplan:\n{}", String::from_utf8_lossy(&ta), String::from_utf8_lossy(&tb));
            }
            (Err(_), Err(_)) => {}
            (x, y) => prop_assert!(false, "one path failed: kept {x:?}, plan {y:?}"),
        }
        // A Parquet release: the release plan over the kept rows writes the same file as over
        // the input read again.
        let (c, d) = (dir.path().join("c.parquet"), dir.path().join("d.parquet"));
        let batches = kept.into_batches().unwrap();
        let parquet = pbg::io::OutputFormat::Parquet;
        let kept_result = pbg::input::block_on(write_kept_release(&ctx, &ev, &node, batches, &c, parquet)).unwrap();
        let plan_result = pbg::input::block_on(write_release(&ctx, &ev, &node, &d, parquet)).unwrap();
        match (kept_result, plan_result) {
            (Ok(x), Ok((rows, fp))) => {
                prop_assert_eq!(x, (rows, fp.unwrap()));
                prop_assert!(fs::read(&c).unwrap() == fs::read(&d).unwrap(), "Parquet releases differ");
            }
            (Err(_), Err(_)) => {}
            (x, y) => prop_assert!(false, "one Parquet path failed: kept {x:?}, plan {y:?}"),
        }
    }
}
