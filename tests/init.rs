//! `pbg init` and `pbg hierarchy build`: a profile drafted from the data runs end to end.

use crate::common::{pbg, pbg_json};

/// On adult: every column but the sensitive one becomes a QI with a drafted hierarchy, and the
/// drafted profile releases as it is (picked, verified).
#[test]
fn init_drafts_a_profile_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("draft");
    let d = pbg_json(&[
        "init",
        "--input",
        "datasets/adult/adult.csv",
        "--delimiter",
        ";",
        "--sensitive",
        "occupation",
        "--output",
        out.to_str().unwrap(),
    ]);
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
    let o = pbg(&[
        "init",
        "--input",
        "datasets/adult/adult.csv",
        "--delimiter",
        ";",
        "--sensitive",
        "occupation",
        "--output",
        out.to_str().unwrap(),
    ]);
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
    let zip = dir.path().join("zip.csv");
    let h = pbg_json(&[
        "hierarchy",
        "build",
        "--input",
        "datasets/t1/t1.csv",
        "--column",
        "zip",
        "--output",
        zip.to_str().unwrap(),
    ]);
    assert_eq!(h["kind"], "mask");
    let text = std::fs::read_to_string(&zip).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("13053;1305*;130**")),
        "{text}"
    );
    let dates = dir.path().join("dates.csv");
    std::fs::write(&dates, "d,x\n2020-01-15,a\n2020-02-03,b\n2021-07-30,c\n").unwrap();
    let out = dir.path().join("d.csv");
    let h = pbg_json(&[
        "hierarchy",
        "build",
        "--input",
        dates.to_str().unwrap(),
        "--column",
        "d",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(h["kind"], "date");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("2020-01-15;2020-01;2020"), "{text}");
    let age = dir.path().join("age.csv");
    let h = pbg_json(&[
        "hierarchy",
        "build",
        "--input",
        "datasets/t1/t1.csv",
        "--column",
        "age",
        "--kind",
        "categorical",
        "--output",
        age.to_str().unwrap(),
    ]);
    assert_eq!(h["kind"], "categorical");
    assert_eq!(h["values"], 10);
}
