//! `pbg anonymize`: the release file, its verification and atomic replacement.

use std::collections::{HashMap, HashSet};

use crate::common::{pbg, pbg_json, repo};

#[test]
fn adult_release_csv_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["release.csv", "release.parquet"] {
        let out = dir.path().join(name);
        let out_s = out.to_string_lossy().into_owned();
        let node = "2,1,1,1,0,1,2,1";
        let summary = pbg_json(&[
            "anonymize",
            "datasets/adult/adult.toml",
            "--node",
            node,
            "--output",
            &out_s,
        ]);
        let eval = pbg_json(&["evaluate", "datasets/adult/adult.toml", "--node", node]);
        assert_eq!(summary["verified"], true);
        assert_eq!(summary["indices"]["k"], eval["k"]);
        assert_eq!(summary["suppressed"], eval["suppressed"]);
        let released = summary["rows_released"].as_u64().unwrap();
        assert_eq!(released + summary["suppressed"].as_u64().unwrap(), 30162);
        // The file holds exactly the released rows; no temporary file is left behind.
        let table = pbg::io::read_table(&pbg::input::Input::Path(out.clone()), b',').unwrap();
        assert_eq!(table.num_rows() as u64, released);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("pbg-tmp"))
            .collect();
        assert!(leftovers.is_empty());
        // Age at level 2 is a width-10 interval label; every class has at least k rows.
        let age = arrow::compute::cast(
            &table.column(table.column_index("age").unwrap()).unwrap(),
            &arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        let age = arrow::array::AsArray::as_string::<i32>(&age);
        let labels: HashSet<&str> = age.iter().flatten().collect();
        assert!(
            labels
                .iter()
                .all(|l| l.starts_with('[') && l.ends_with(')')),
            "{labels:?}"
        );
        let mut sizes: HashMap<Vec<String>, u64> = HashMap::new();
        let cols: Vec<_> = [
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
        .map(|c| {
            arrow::compute::cast(
                &table.column(table.column_index(c).unwrap()).unwrap(),
                &arrow::datatypes::DataType::Utf8,
            )
            .unwrap()
        })
        .collect();
        for r in 0..table.num_rows() {
            let key = cols
                .iter()
                .map(|c| {
                    arrow::array::AsArray::as_string::<i32>(c)
                        .value(r)
                        .to_string()
                })
                .collect();
            *sizes.entry(key).or_default() += 1;
        }
        assert_eq!(*sizes.values().min().unwrap(), eval["k"].as_u64().unwrap());
        assert_eq!(sizes.len() as u64, eval["classes"].as_u64().unwrap());
    }
}

#[test]
fn identifiers_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t1.csv");
    pbg_json(&[
        "anonymize",
        "datasets/t1/t1.toml",
        "--node",
        "1,1",
        "--output",
        &out.to_string_lossy(),
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().next().unwrap(), "zip,age,marital");
    assert!(text.contains("1305*,\"(25,35]\",CF-Spouse"), "{text}");
    assert_eq!(text.lines().count(), 11);
}

#[test]
fn a_failed_run_leaves_the_previous_release_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("keep.csv");
    std::fs::write(&out, "previous release\n").unwrap();
    let o = pbg(&[
        "anonymize",
        "datasets/t1/t1.toml",
        "--node",
        "9,9",
        "--output",
        &out.to_string_lossy(),
    ]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous release\n");
    let o = pbg(&[
        "anonymize",
        "datasets/t1/t1.toml",
        "--node",
        "1,1",
        "--output",
        "/no/such/dir/x.csv",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/such/dir"));
    assert!(repo("datasets/t1/t1.csv").exists());
}

/// `anonymize --report`: one self-contained page whose numbers are the JSON report's, with both
/// figures and the verification result; nothing is fetched from elsewhere.
#[test]
fn html_report_matches_the_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("release.csv");
    let page = dir.path().join("report.html");
    let r = pbg_json(&[
        "anonymize",
        "datasets/adult/adult-arx7.toml",
        "--pick",
        "--require",
        "k>=5,l>=2",
        "--minimize",
        "glm",
        "--output",
        out.to_str().unwrap(),
        "--report",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    for (id, v) in [
        ("rows_in", &r["rows_in"]),
        ("rows_released", &r["rows_released"]),
        ("suppressed", &r["suppressed"]),
        ("ix-k", &r["indices"]["k"]),
        ("ix-l_distinct", &r["indices"]["l_distinct"]),
        ("ix-classes", &r["indices"]["classes"]),
    ] {
        assert!(
            html.contains(&format!("id=\"{id}\">{v}<")),
            "{id} = {v} missing"
        );
    }
    assert_eq!(html.matches("<svg").count(), 2, "both figures");
    assert!(html.contains("id=\"fig-sizes\"") && html.contains("id=\"fig-front\""));
    assert!(html.contains("class=\"ok\">verified"));
    assert!(html.contains("<code>k&gt;=5</code>") && html.contains("<code>l&gt;=2</code>"));
    assert!(html.contains("chosen node"));
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "nothing fetched"
    );
    // The report is refused over the input or over the release.
    let o = pbg(&[
        "anonymize",
        "datasets/adult/adult-arx7.toml",
        "--node",
        "1,1,1,1,0,0,1",
        "--output",
        out.to_str().unwrap(),
        "--report",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
}

/// `pbg report`: the page of a picked node without a release; its numbers are the node's.
#[test]
fn report_without_release() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    let r = pbg_json(&[
        "report",
        "datasets/adult/adult-arx7.toml",
        "--pick",
        "--require",
        "k>=10",
        "--output",
        page.to_str().unwrap(),
    ]);
    assert!(r["output"].is_null());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("No release was written"));
    assert!(html.contains(&format!("id=\"ix-k\">{}<", r["indices"]["k"])));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the page"
    );
    assert!(r["indices"]["k"].as_u64().unwrap() >= 10);
    assert!(html.contains(&format!("id=\"ix-classes\">{}<", r["indices"]["classes"])));
    assert!(html.contains(&format!("id=\"suppressed\">{}<", r["suppressed"])));
    // The same choice as a release makes.
    let out = tempfile::tempdir().unwrap();
    let a = pbg_json(&[
        "anonymize",
        "datasets/adult/adult-arx7.toml",
        "--pick",
        "--require",
        "k>=10",
        "--output",
        out.path().join("r.csv").to_str().unwrap(),
    ]);
    assert_eq!(a["node"], r["node"]);
    assert_eq!(a["indices"], r["indices"]);
    assert_eq!(a["suppressed"], r["suppressed"]);
}

/// A Parquet release is the same file on every run, whatever the timing of its partitions (the
/// writer got them merged as they arrived, so row order changed between runs): three Parquet input
/// files (several partitions) and the CSV adult input, each released four times.
#[test]
fn parquet_release_is_the_same_file_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    for (i, seed) in ["3", "4", "5"].iter().enumerate() {
        let part = lake.join(format!("part{i}.parquet"));
        let out = pbg(&[
            "--quiet",
            "generate",
            "adult-like",
            "--rows",
            "40000",
            "--seed",
            seed,
            "--output",
            &part.to_string_lossy(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let lake_s = lake.to_string_lossy().into_owned();
    let cases: [Vec<&str>; 2] = [
        vec![
            "datasets/adult/adult.toml",
            "--input",
            &lake_s,
            "--identifier",
            "id",
            "--node",
            "3,1,1,2,1,1,2,0",
        ],
        vec!["datasets/adult/adult-arx7.toml", "--node", "2,1,1,1,1,0,1"],
    ];
    for (c, args) in cases.iter().enumerate() {
        let mut files = Vec::new();
        for run in 0..4 {
            let out = dir.path().join(format!("r{c}-{run}.parquet"));
            let out_s = out.to_string_lossy().into_owned();
            let mut a = vec!["anonymize"];
            a.extend(args.iter().copied());
            a.extend(["--output", &out_s]);
            let summary = pbg_json(&a);
            assert_eq!(summary["verified"], true);
            files.push(std::fs::read(&out).unwrap());
        }
        assert!(
            files.windows(2).all(|w| w[0] == w[1]),
            "case {c}: runs differ"
        );
    }
}

/// A Parquet input read in several partitions is released in input order, and as the same file
/// whatever the partition count: DataFusion dealt the scan's batches round-robin over the release
/// plan's partitions, so rows came out of order and the bytes changed with the cores.
#[test]
fn parquet_input_release_is_in_input_order() {
    use arrow::array::{Array, Int64Array};
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("generated.parquet");
    let out = pbg(&[
        "--quiet",
        "generate",
        "adult-like",
        "--rows",
        "30000",
        "--seed",
        "7",
        "--output",
        &generated.to_string_lossy(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Rewritten in row groups of 2000 rows, so that every partition reads some; a second copy
    // sorted by `occupation` (kept as it is) and declaring it (Parquet sorting columns, which DataFusion trusts: it
    // merged the partitions by that order, ties dealt round-robin).
    let batches: Vec<arrow::record_batch::RecordBatch> =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&generated).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
    let whole = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
    let write = |path: &std::path::Path, sorted: bool| {
        let schema = whole.schema();
        let (occupation, id) = (
            schema.index_of("occupation").unwrap(),
            schema.index_of("id").unwrap(),
        );
        let mut props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(2000));
        let mut table = whole.clone();
        if sorted {
            let by = |i: usize| arrow::compute::SortColumn {
                values: whole.column(i).clone(),
                options: None,
            };
            let order =
                arrow::compute::lexsort_to_indices(&[by(occupation), by(id)], None).unwrap();
            table = arrow::compute::take_record_batch(&whole, &order).unwrap();
            props = props.set_sorting_columns(Some(vec![parquet::file::metadata::SortingColumn {
                column_idx: occupation as i32,
                descending: false,
                nulls_first: false,
            }]));
        }
        let mut w = ArrowWriter::try_new(
            std::fs::File::create(path).unwrap(),
            schema,
            Some(props.build()),
        )
        .unwrap();
        w.write(&table).unwrap();
        w.close().unwrap();
    };
    let ids = |path: &std::path::Path| -> Vec<i64> {
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .flat_map(|b| {
                let b = b.unwrap();
                let c = b.column(b.schema().index_of("id").unwrap()).clone();
                let c = c.as_any().downcast_ref::<Int64Array>().unwrap().clone();
                (0..c.len()).map(move |i| c.value(i)).collect::<Vec<_>>()
            })
            .collect()
    };
    for sorted in [false, true] {
        let input = dir.path().join(format!("input-{sorted}.parquet"));
        write(&input, sorted);
        let position: HashMap<i64, usize> = ids(&input)
            .into_iter()
            .enumerate()
            .map(|(i, id)| (id, i))
            .collect();
        assert_eq!(position.len(), 30000, "ids are unique");
        let mut profile = pbg::Profile::from_toml_file(&repo("datasets/adult/adult.toml")).unwrap();
        profile.input = pbg::input::Input::Path(input.clone());
        let node = vec![2u8, 2, 2, 1, 1, 1, 1, 1];
        let choose = |_: &pbg::Evaluator| Ok(node.clone());
        let mut files = Vec::new();
        // One partition; three byte ranges; three partitions over one range (the file is below
        // DataFusion's split size: the optimizer dealt its batches round-robin).
        for (partitions, split) in [(1, true), (3, true), (3, false)] {
            let mut config = pbg::input::session_config().with_target_partitions(partitions);
            if split {
                config.options_mut().optimizer.repartition_file_min_size = 0;
            }
            let ctx = pbg::input::context_with(config);
            let release = dir
                .path()
                .join(format!("release-{sorted}-{partitions}-{split}.parquet"));
            let summary =
                pbg::release::anonymize_in(&ctx, &profile, &choose, &release, &|_| {}).unwrap();
            assert!(summary.verified);
            assert!(summary.suppressed > 0, "the node suppresses classes");
            let order: Vec<usize> = ids(&release).iter().map(|id| position[id]).collect();
            assert_eq!(order.len() as u64, summary.rows_released);
            assert!(
                order.windows(2).all(|w| w[0] < w[1]),
                "{partitions} partitions (split {split}, sorted {sorted}): rows out of input order"
            );
            // The CSV release of the same plan: its lines follow the Parquet release's ids.
            let csv = release.with_extension("csv");
            pbg::release::anonymize_in(&ctx, &profile, &choose, &csv, &|_| {}).unwrap();
            let text = std::fs::read_to_string(&csv).unwrap();
            let csv_ids: Vec<i64> = text
                .lines()
                .skip(1)
                .map(|l| l.split(',').next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(
                csv_ids,
                ids(&release),
                "{partitions} partitions (split {split})"
            );
            files.push((std::fs::read(&release).unwrap(), text));
        }
        assert!(
            files.windows(2).all(|w| w[0] == w[1]),
            "the release differs with the partitions (sorted {sorted})"
        );
    }
}
