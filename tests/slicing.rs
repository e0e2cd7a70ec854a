//! Slicing, part 1: attribute correlation through the CLI, checked against an independent
//! computation, and its bad inputs.

use std::collections::HashMap;

use crate::common::{pbg, pbg_json, repo};

/// φ² of two adult columns computed directly from the text (hash maps, textbook formula).
fn phi2(a: &str, b: &str) -> f64 {
    let text = std::fs::read_to_string(repo("datasets/adult/adult.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    let (ia, ib) = (
        header.iter().position(|h| *h == a).unwrap(),
        header.iter().position(|h| *h == b).unwrap(),
    );
    let mut joint: HashMap<(String, String), f64> = HashMap::new();
    let (mut ma, mut mb): (HashMap<String, f64>, HashMap<String, f64>) =
        (HashMap::new(), HashMap::new());
    let mut n = 0.0;
    for line in lines {
        let f: Vec<&str> = line.split(';').collect();
        *joint.entry((f[ia].into(), f[ib].into())).or_default() += 1.0;
        *ma.entry(f[ia].into()).or_default() += 1.0;
        *mb.entry(f[ib].into()).or_default() += 1.0;
        n += 1.0;
    }
    let mut chi = 0.0;
    for (x, cx) in &ma {
        for (y, cy) in &mb {
            let e = cx * cy / n;
            let o = joint.get(&(x.clone(), y.clone())).copied().unwrap_or(0.0);
            chi += (o - e) * (o - e) / e;
        }
    }
    chi / (n * (ma.len().min(mb.len()) as f64 - 1.0))
}

#[test]
fn correlation_matches_an_independent_computation() {
    let m = pbg_json(&[
        "correlate",
        "--input",
        "datasets/adult/adult.csv",
        "--delimiter",
        ";",
        "--columns",
        "sex,salary-class,education,occupation",
        "--format",
        "json",
    ]);
    let phi = &m["phi_squared"];
    for (i, j, a, b) in [
        (0, 1, "sex", "salary-class"),
        (2, 3, "education", "occupation"),
        (0, 3, "sex", "occupation"),
    ] {
        let got = phi[i][j].as_f64().unwrap();
        let want = phi2(a, b);
        assert!((got - want).abs() < 1e-12, "{a}/{b}: {got} vs {want}");
        assert_eq!(phi[i][j], phi[j][i]);
    }
    assert_eq!(phi[0][0], 1.0);
}

#[test]
fn correlation_bad_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let one_row = dir.path().join("one.csv");
    std::fs::write(&one_row, "a,b\n1,2\n").unwrap();
    let empty = dir.path().join("empty.csv");
    std::fs::write(&empty, "a,b\n").unwrap();
    let single = dir.path().join("single.csv");
    std::fs::write(&single, "a\n1\n2\n").unwrap();
    for (args, needle) in [
        (
            vec![
                "--input",
                "datasets/adult/adult.csv",
                "--delimiter",
                ";",
                "--columns",
                "age,nope",
            ],
            "no column `nope`",
        ),
        (
            vec!["--input", one_row.to_str().unwrap()],
            "at least two rows",
        ),
        (vec!["--input", empty.to_str().unwrap()], "empty"),
        (
            vec!["--input", single.to_str().unwrap()],
            "at least two columns",
        ),
        (
            vec![
                "--input",
                "datasets/adult/adult.csv",
                "--delimiter",
                ";",
                "--bins",
                "0",
            ],
            "--bins",
        ),
    ] {
        let mut full = vec!["correlate"];
        full.extend(args.iter());
        let out = pbg(&full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle) && !err.contains("panicked"),
            "{full:?}: {err}"
        );
    }
}

/// A slice of a Parquet input holding empty texts, written to CSV (which reads them back as
/// nulls), passes its own check: the check read a null as the column's first distinct text
/// and refused every such release ("holds some entry 12 time(s) more than the input").
#[test]
fn empty_texts_of_a_parquet_input_pass_a_csv_slice_check() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("e.parquet");
    let sql = format!(
        "COPY (SELECT concat('z', v % 3) AS zip, CASE WHEN v % 5 = 1 THEN '' ELSE concat('s', v % 4) END AS diag, CASE WHEN v % 2 = 0 THEN 'M' ELSE 'F' END AS sex FROM (SELECT unnest(range(0, 60)) AS v)) TO '{}' STORED AS PARQUET",
        input.display()
    );
    assert!(pbg(&["sql", "-c", &sql]).status.success());
    let profile = dir.path().join("e.toml");
    std::fs::write(
        &profile,
        format!(
            "input = \"{}\"\nsensitive = \"diag\"\n[[qi]]\nname = \"zip\"\nhierarchy = {{ type = \"table\", rows = [[\"z0\",\"*\"],[\"z1\",\"*\"],[\"z2\",\"*\"]] }}\n[[qi]]\nname = \"sex\"\nhierarchy = {{ type = \"table\", rows = [[\"M\",\"*\"],[\"F\",\"*\"]] }}\n",
            input.display()
        ),
    )
    .unwrap();
    for name in ["s.csv", "s.parquet"] {
        let out = dir.path().join(name);
        let r = pbg_json(&[
            "slice",
            profile.to_str().unwrap(),
            "--l",
            "2",
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r["verified"], true, "{name}: {r}");
        // `pbg verify` checks generalized releases, and says what a sliced one is.
        let o = pbg(&[
            "verify",
            profile.to_str().unwrap(),
            "--release",
            out.to_str().unwrap(),
            "--require",
            "k>=2",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success()
                && err.contains("it is a sliced release")
                && !err.contains("suppression rule tried"),
            "{name}: {err}"
        );
    }
}
