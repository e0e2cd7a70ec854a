//! `pbg init` and `pbg hierarchy build`: a profile drafted from the data runs end to end.

use crate::common::{pbg, pbg_json};

/// On adult: every column but the sensitive one becomes a QI with a drafted hierarchy, and the
/// drafted profile releases as it is (picked, verified).
#[test]
fn init_drafts_a_profile_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("draft");
    let init = [
        "init",
        "--input",
        "datasets/adult/adult.csv",
        "--delimiter",
        ";",
        "--sensitive",
        "occupation",
        "--output",
        out.to_str().unwrap(),
    ];
    let d = pbg_json(&init);
    assert_eq!(d["rows"], 30162);
    assert_eq!(d["sensitive_guessed"], false);
    let qis = d["qis"].as_array().unwrap();
    assert_eq!(qis.len(), 8, "{d}");
    let kind = |name: &str| {
        qis.iter()
            .find(|q| q["name"] == name)
            .map(|q| q["kind"].as_str().unwrap().to_string())
    };
    assert_eq!(kind("age").as_deref(), Some("interval"));
    assert_eq!(kind("education").as_deref(), Some("categorical"));
    let profile = out.join("profile.toml");
    let release = dir.path().join("release.csv");
    let r = pbg_json(&[
        "anonymize",
        profile.to_str().unwrap(),
        "--pick",
        "--require",
        "k>=5,l>=2",
        "--minimize",
        "glm",
        "--output",
        release.to_str().unwrap(),
    ]);
    assert_eq!(r["verified"], true);
    assert!(r["indices"]["k"].as_u64().unwrap() >= 5);
    // A second init into the same directory never overwrites the (maybe edited) profile.
    let o = pbg(&init);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("already there"),
        "{err}"
    );
}

/// On generated Parquet: the unique `id` is proposed as an identifier, the sensitive attribute
/// is a marked guess, and the profile runs.
#[test]
fn init_finds_identifiers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("people.parquet");
    pbg_json(&[
        "generate",
        "adult-like",
        "--rows",
        "5000",
        "--seed",
        "2",
        "--output",
        data.to_str().unwrap(),
    ]);
    let out = dir.path().join("draft");
    let d = pbg_json(&[
        "init",
        "--input",
        data.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(d["identifiers"], serde_json::json!(["id"]), "{d}");
    assert_eq!(d["sensitive_guessed"], true);
    let text = std::fs::read_to_string(out.join("profile.toml")).unwrap();
    assert!(
        text.contains("GUESSED") && text.contains("identifiers = [\"id\"]"),
        "{text}"
    );
    let r = pbg_json(&[
        "anonymize",
        out.join("profile.toml").to_str().unwrap(),
        "--pick",
        "--require",
        "k>=5",
        "--output",
        dir.path().join("release.parquet").to_str().unwrap(),
    ]);
    assert_eq!(r["verified"], true);
    let o = pbg(&[
        "init",
        "--input",
        data.to_str().unwrap(),
        "--sensitive",
        "nope",
        "--output",
        dir.path().join("other").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("nope"), "{err}");
}

/// `hierarchy build`: fixed-width codes are masked, dates go month → year, a kind can be forced.
#[test]
fn hierarchy_build_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let dates = dir.path().join("dates.csv");
    std::fs::write(&dates, "d,x\n2020-01-15,a\n2020-02-03,b\n2021-07-30,c\n").unwrap();
    let dates = dates.to_str().unwrap();
    // (input, column, --kind, kind reported, a line of the file)
    for (input, column, kind, expected, line) in [
        (
            "datasets/t1/t1.csv",
            "zip",
            "auto",
            "mask",
            "13053;1305*;130**",
        ),
        (dates, "d", "auto", "date", "2020-01-15;2020-01;2020"),
        (
            "datasets/t1/t1.csv",
            "age",
            "categorical",
            "categorical",
            "26;",
        ),
    ] {
        let out = dir.path().join(format!("{column}.csv"));
        let h = pbg_json(&[
            "hierarchy",
            "build",
            "--input",
            input,
            "--column",
            column,
            "--kind",
            kind,
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(h["kind"], expected);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.lines().any(|l| l.starts_with(line)), "{text}");
    }
    // Not into the input's directory: the next read of it took the file for a part.
    let lake = dir.path().join("lake");
    std::fs::create_dir(&lake).unwrap();
    std::fs::copy("datasets/t1/t1.csv", lake.join("t1.csv")).unwrap();
    let inside = lake.join("zip.csv");
    let o = pbg(&[
        "hierarchy",
        "build",
        "--input",
        lake.to_str().unwrap(),
        "--column",
        "zip",
        "--output",
        inside.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("never writes over its input"),
        "{err}"
    );
    assert!(!inside.exists());
}

/// What an adversarial run found: float columns, a column left out (dropped, not released raw),
/// names that would inject TOML, `;` inside values, contradictory roles, a draft inside the input.
#[test]
fn init_refuses_or_survives_hostile_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    // A float column in Parquet, and a free-text column with too many values to draft.
    let parquet = p("people.parquet");
    let o = pbg(&[
        "sql",
        "datasets/adult/adult.toml",
        "-c",
        &format!(
            "COPY (SELECT CAST(age AS DOUBLE) AS age, sex, concat(sex, CAST(random() AS VARCHAR)) AS note, occupation FROM adult) TO '{}' STORED AS PARQUET",
            parquet.display()
        ),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = pbg_json(&[
        "init",
        "--input",
        parquet.to_str().unwrap(),
        "--sensitive",
        "occupation",
        "--output",
        p("d1").to_str().unwrap(),
    ]);
    assert!(
        d["identifiers"]
            .as_array()
            .unwrap()
            .contains(&"note".into()),
        "{d}"
    );
    let out = p("r1.csv");
    pbg_json(&[
        "anonymize",
        p("d1/profile.toml").to_str().unwrap(),
        "--pick",
        "--require",
        "k>=5",
        "--output",
        out.to_str().unwrap(),
    ]);
    let header = std::fs::read_to_string(&out).unwrap();
    assert!(
        !header.lines().next().unwrap().contains("note"),
        "a left-out column is dropped"
    );

    // A column name with a line break and TOML in it, and `;` inside values.
    let csv = p("odd.csv");
    std::fs::write(
        &csv,
        "\"b\nnull_as = \"\"x\"\"\n#\",v,dx\n1,a;b,x\n2,c;d,y\n3,a;b,x\n4,e,y\n5,c;d,x\n6,e,y\n",
    )
    .unwrap();
    pbg_json(&[
        "init",
        "--input",
        csv.to_str().unwrap(),
        "--sensitive",
        "dx",
        "--output",
        p("d2").to_str().unwrap(),
    ]);
    let toml = std::fs::read_to_string(p("d2/profile.toml")).unwrap();
    assert!(!toml.lines().any(|l| l.starts_with("null_as")), "{toml}");
    let r = pbg_json(&[
        "anonymize",
        p("d2/profile.toml").to_str().unwrap(),
        "--node",
        "0,1",
        "--output",
        p("r2.csv").to_str().unwrap(),
    ]);
    assert_eq!(r["verified"], true);

    // One role per column; no draft inside the input directory.
    for args in [
        vec!["--sensitive", "dx", "--qi", "v,dx"],
        vec!["--sensitive", "dx", "--identifier", "dx"],
        vec!["--sensitive", "dx", "--qi", "v", "--identifier", "v"],
    ] {
        let mut all = vec!["init", "--input", csv.to_str().unwrap(), "--output"];
        let target = p("d3");
        all.push(target.to_str().unwrap());
        all.extend(args);
        let o = pbg(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("one role per column"),
            "{err}"
        );
        assert!(!target.exists(), "nothing written");
    }
    let lake = p("lake");
    std::fs::create_dir(&lake).unwrap();
    std::fs::copy(&csv, lake.join("a.csv")).unwrap();
    let o = pbg(&[
        "init",
        "--input",
        lake.to_str().unwrap(),
        "--sensitive",
        "dx",
        "--output",
        lake.join("draft").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("inside the input directory"),
        "{err}"
    );
    assert!(!lake.join("draft").exists());
}

/// The guessed sensitive attribute is the last scalar column: a nested last column (which
/// `anonymize` refuses as the sensitive attribute) is passed over.
#[test]
fn init_guesses_a_scalar_sensitive_attribute() {
    use arrow::array::{ArrayRef, ListBuilder, StringArray, StringBuilder};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.parquet");
    let mut tags = ListBuilder::new(StringBuilder::new());
    for i in 0..30 {
        tags.values().append_value(format!("t{}", i % 3));
        tags.append(true);
    }
    let zips: Vec<String> = (0..30).map(|i| format!("130{}", 50 + i % 5)).collect();
    let disease: Vec<&str> = (0..30).map(|i| ["flu", "cold"][i % 2]).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("zip", Arc::new(StringArray::from(zips))),
        ("disease", Arc::new(StringArray::from(disease))),
        ("tags", Arc::new(tags.finish())),
    ];
    let batch = arrow::record_batch::RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(&input).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let out = dir.path().join("draft");
    let d = pbg_json(&[
        "init",
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(d["sensitive"], "disease", "{d}");
    assert_eq!(d["sensitive_guessed"], true);
    // A list has no hierarchy: the draft does not advise making it a QI.
    let text = std::fs::read_to_string(out.join("profile.toml")).unwrap();
    let note = text
        .lines()
        .find(|l| l.starts_with("# Dropped (listed as an identifier): \"tags\""))
        .unwrap();
    assert!(
        note.contains("its type cannot be drafted")
            && note.contains("remove it from `identifiers`")
            && !note.contains("make it a QI"),
        "{text}"
    );
}

/// A column name too long for a file name gets a shortened hierarchy file, and the draft runs.
#[test]
fn init_shortens_hierarchy_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let long = "c".repeat(230);
    let data = dir.path().join("d.csv");
    let mut text = format!("age,{long},dis\n");
    for i in 0..40 {
        text.push_str(&format!(
            "{},{},{}\n",
            20 + i % 7,
            ["x", "y", "z"][i % 3],
            ["flu", "cold"][i % 2]
        ));
    }
    std::fs::write(&data, text).unwrap();
    let out = dir.path().join("draft");
    let d = pbg_json(&[
        "init",
        "--input",
        data.to_str().unwrap(),
        "--sensitive",
        "dis",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(d["qis"].as_array().unwrap().len(), 2, "{d}");
    let profile = out.join("profile.toml");
    let r = pbg_json(&["evaluate", profile.to_str().unwrap(), "--node", "0,0"]);
    assert_eq!(r["node"], serde_json::json!([0, 0]), "{r}");
    assert_eq!(r["qis"][1], serde_json::json!(long), "{r}");
}

/// A float column holding both -0.0 and 0.0 gets a leaf for each (grouping by value made them
/// one leaf, `0.0`, and the drafted profile was refused on its own data).
#[test]
fn init_keeps_negative_and_positive_zero_apart() {
    use arrow::array::{ArrayRef, Float64Array, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.parquet");
    let x: Vec<f64> = (0..30)
        .map(|i| match i % 6 {
            0 => -0.0,
            1 => 0.0,
            n => n as f64 * 1.5,
        })
        .collect();
    let disease: Vec<&str> = (0..30).map(|i| ["flu", "cold"][i % 2]).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("x", Arc::new(Float64Array::from(x))),
        ("disease", Arc::new(StringArray::from(disease))),
    ];
    let batch = arrow::record_batch::RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(&input).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let out = dir.path().join("draft");
    let args = [
        "init",
        "--input",
        input.to_str().unwrap(),
        "--sensitive",
        "disease",
        "--qi",
        "x",
    ];
    let mut args = args.to_vec();
    args.extend(["--output", out.to_str().unwrap()]);
    pbg_json(&args);
    let leaves = std::fs::read_to_string(out.join("hierarchies/x.csv")).unwrap();
    assert!(leaves.lines().any(|l| l.starts_with("-0.0;")), "{leaves}");
    assert!(leaves.lines().any(|l| l.starts_with("0.0;")), "{leaves}");
    let profile = out.join("profile.toml");
    let r = pbg_json(&["evaluate", profile.to_str().unwrap(), "--node", "0"]);
    assert_eq!(r["classes"], 6, "{r}");
}

/// A column named like the count's alias (`__n`) is drafted like any other (the alias made the
/// aggregate's schema ambiguous and `init` failed).
#[test]
fn init_drafts_a_column_named_like_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.csv");
    let mut text = "__n,age,dis\n".to_string();
    for i in 0..40 {
        text.push_str(&format!(
            "{},{},{}\n",
            i % 4,
            20 + i % 7,
            ["flu", "cold"][i % 2]
        ));
    }
    std::fs::write(&data, text).unwrap();
    let out = dir.path().join("draft");
    let d = pbg_json(&[
        "init",
        "--input",
        data.to_str().unwrap(),
        "--sensitive",
        "dis",
        "--output",
        out.to_str().unwrap(),
    ]);
    let qis: Vec<&str> = d["qis"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|q| q["name"].as_str())
        .collect();
    assert!(qis.contains(&"__n"), "{d}");
}
