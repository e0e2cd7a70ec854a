//! Every bad input ends with a non-zero exit and one clear message naming the culprit, never a panic.

use std::fs;
use std::path::Path;

use crate::common::pbg;

const ADULT: &str = "datasets/adult/adult.toml";

/// Runs pbg, expects failure, and returns stderr (asserting there was no panic).
fn fails(args: &[&str]) -> String {
    let out = pbg(args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success(),
        "pbg {args:?} should fail; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!err.contains("panicked"), "pbg {args:?} panicked: {err}");
    assert!(
        err.starts_with("pbg: error: "),
        "one clear message, got: {err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one line, got: {err}");
    err
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// A small valid setup: data.csv with zip/age/disease and two hierarchies.
fn setup(dir: &Path, data: &str) -> Vec<String> {
    let data = write(dir, "data.csv", data);
    let zip = write(dir, "zip.csv", "13053;1305*;*\n13268;1326*;*\n");
    vec![
        "--input".into(),
        data,
        "--qi".into(),
        format!("zip={zip}"),
        "--sensitive".into(),
        "disease".into(),
    ]
}

fn args<'a>(head: &[&'a str], rest: &'a [String]) -> Vec<&'a str> {
    head.iter()
        .copied()
        .chain(rest.iter().map(String::as_str))
        .collect()
}

#[test]
fn missing_input_file() {
    let err = fails(&[
        "evaluate",
        "--input",
        "no/such.csv",
        "--qi",
        "a=b.csv",
        "--sensitive",
        "s",
        "--node",
        "0",
    ]);
    assert!(err.contains("no/such.csv"), "{err}");
}

#[test]
fn missing_profile_file() {
    let err = fails(&["evaluate", "no-such-profile.toml", "--node", "0"]);
    assert!(err.contains("no-such-profile.toml"), "{err}");
}

#[test]
fn corrupt_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "bad.parquet", "this is not parquet");
    let err = fails(&[
        "evaluate",
        "--input",
        &p,
        "--qi",
        "a=b.csv",
        "--sensitive",
        "s",
        "--node",
        "0",
    ]);
    assert!(err.contains("bad.parquet"), "{err}");
}

#[test]
fn ragged_csv_row() {
    let dir = tempfile::tempdir().unwrap();
    let a = setup(dir.path(), "zip,disease\n13053,flu\n13268\n");
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(
        err.contains("data.csv") && err.to_lowercase().contains("line"),
        "{err}"
    );
}

#[test]
fn unknown_column() {
    let dir = tempfile::tempdir().unwrap();
    let a = setup(dir.path(), "zip,illness\n13053,flu\n");
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(
        err.contains("`disease`") && err.contains("zip, illness"),
        "{err}"
    );
}

#[test]
fn value_missing_from_hierarchy() {
    let dir = tempfile::tempdir().unwrap();
    let a = setup(
        dir.path(),
        "zip,disease\n13053,flu\n13268,cold\n99999,flu\n",
    );
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(
        err.contains("`zip`") && err.contains("`99999`") && err.contains("row 3"),
        "{err}"
    );
}

#[test]
fn null_in_a_quasi_identifier() {
    let dir = tempfile::tempdir().unwrap();
    let a = setup(dir.path(), "zip,disease\n13053,flu\n,cold\n");
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(
        err.contains("`zip`") && err.contains("null at data row 2"),
        "{err}"
    );
}

#[test]
fn hierarchy_not_nested() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = setup(dir.path(), "zip,disease\n13053,flu\n");
    let h = write(dir.path(), "bad.csv", "13053;A;X;*\n13268;A;Y;*\n");
    a[3] = format!("zip={h}");
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(
        err.contains("bad.csv") && err.contains("not nested") && err.contains("`A`"),
        "{err}"
    );
}

#[test]
fn hierarchy_with_one_level() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = setup(dir.path(), "zip,disease\n13053,flu\n");
    let h = write(dir.path(), "flat.csv", "13053\n13268\n");
    a[3] = format!("zip={h}");
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(
        err.contains("flat.csv") && err.contains("at least 2"),
        "{err}"
    );
}

#[test]
fn ragged_hierarchy() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = setup(dir.path(), "zip,disease\n13053,flu\n");
    let h = write(dir.path(), "ragged.csv", "13053;1305*;*\n13268;*\n");
    a[3] = format!("zip={h}");
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(err.contains("ragged.csv"), "{err}");
}

#[test]
fn node_of_the_wrong_length() {
    let err = fails(&["evaluate", ADULT, "--node", "1,2,3"]);
    assert!(
        err.contains("has 3 levels") && err.contains("8 quasi-identifiers"),
        "{err}"
    );
}

#[test]
fn level_out_of_range() {
    let err = fails(&["evaluate", ADULT, "--node", "7,0,0,0,0,0,0,0"]);
    assert!(
        err.contains("level 7 of `age`") && err.contains("0..=6"),
        "{err}"
    );
}

#[test]
fn unparsable_level() {
    let err = fails(&["evaluate", ADULT, "--node", "1,x,0,0,0,0,0,0"]);
    assert!(err.contains("`x`"), "{err}");
}

#[test]
fn empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let a = setup(dir.path(), "zip,disease\n");
    let err = fails(&args(&["evaluate", "--node", "0"], &a));
    assert!(err.contains("data.csv") && err.contains("empty"), "{err}");
}

#[test]
fn unparsable_suppression_limit() {
    let err = fails(&[
        "evaluate",
        ADULT,
        "--node",
        "0,0,0,0,0,0,0,0",
        "--suppression-limit",
        "lots",
    ]);
    assert!(err.contains("`lots`"), "{err}");
    let err = fails(&[
        "evaluate",
        ADULT,
        "--node",
        "0,0,0,0,0,0,0,0",
        "--suppression-limit",
        "150%",
    ]);
    assert!(err.contains("`150%`"), "{err}");
}

#[test]
fn bad_profile_toml() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "p.toml", "input = \"x.csv\"\nsensitive = 3\n");
    let err = fails(&["evaluate", &p, "--node", "0"]);
    assert!(err.contains("p.toml"), "{err}");
}

#[test]
fn overlapping_roles() {
    let err = fails(&[
        "evaluate",
        ADULT,
        "--node",
        "0,0,0,0,0,0,0,0",
        "--sensitive",
        "age",
    ]);
    assert!(err.contains("`age`") && err.contains("sensitive"), "{err}");
}

#[test]
fn search_compare_experiment_and_sql_arguments() {
    let t1 = "datasets/t1/t1.toml";
    let cases: [(&[&str], &str); 11] = [
        (
            &["search", t1, "--objectives", "k"],
            "at least two objectives",
        ),
        // The evolutionary search's settings with the exhaustive search: refused, not ignored.
        (
            &["search", t1, "--objectives", "k,glm", "--seed", "5"],
            "--seed set the evolutionary search (--algorithm ea)",
        ),
        (
            &[
                "search",
                t1,
                "--objectives",
                "k,glm",
                "--algorithm",
                "exhaustive",
                "--population",
                "10",
                "--epsilon",
                "1,1",
            ],
            "--epsilon, --population set the evolutionary search",
        ),
        (
            &[
                "search",
                t1,
                "--objectives",
                "k,glm",
                "--algorithm",
                "ea",
                "--epsilon",
                "1,x",
            ],
            "`x` is not a number",
        ),
        (
            &[
                "search",
                t1,
                "--objectives",
                "k,glm",
                "--algorithm",
                "ea",
                "--epsilon",
                "1",
            ],
            "1 values for 2 objectives",
        ),
        (
            &[
                "search",
                t1,
                "--objectives",
                "k,glm",
                "--algorithm",
                "ea",
                "--p-cross",
                "2",
            ],
            "not a probability",
        ),
        (
            &["search", t1, "--objectives", "k,cm"],
            "needs a class attribute",
        ),
        (
            &["compare", t1, "--node", "1,1", "--property", "equiv"],
            "exactly two nodes",
        ),
        (
            &[
                "compare",
                t1,
                "--node",
                "1,1",
                "--node",
                "2,2",
                "--property",
                "nope",
            ],
            "unknown property `nope`",
        ),
        (
            &[
                "experiment",
                "dbsec2010",
                "--data",
                "/nonexistent",
                "--runs",
                "1",
            ],
            "/nonexistent/adult.toml",
        ),
        (&["sql", t1, "-c", "SELEC"], "SELEC"),
    ];
    for (args, needle) in cases {
        let err = fails(args);
        assert!(err.contains(needle), "{args:?}: {err}");
        // No message repeats its cause.
        let body = err.trim_start_matches("pbg: error: ").trim();
        let half = body.len() / 2;
        assert!(
            half < 20 || !body[half..].contains(&body[..20.min(half)]),
            "{err}"
        );
    }
}

/// `correlate --identifier` leaves the column out of the pairs; an unknown one is named.
#[test]
fn correlate_leaves_identifiers_out() {
    let o = crate::common::pbg(&[
        "correlate",
        "--input",
        "datasets/t1/t1.csv",
        "--identifier",
        "id",
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("zip,age,") && !text.contains("id,"), "{text}");
    let o = crate::common::pbg(&[
        "correlate",
        "--input",
        "datasets/t1/t1.csv",
        "--identifier",
        "nope",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("`nope`"), "{err}");
}

/// `--quiet` is accepted before or after any command; progress never reaches a stderr that is not
/// a terminal, so a successful run leaves it empty.
#[test]
fn quiet_and_clean_stderr() {
    for args in [
        vec![
            "--quiet",
            "evaluate",
            "datasets/t1/t1.toml",
            "--node",
            "1,1",
        ],
        vec!["lattice", "datasets/t1/t1.toml", "--quiet"],
        vec!["search", "datasets/t1/t1.toml", "--objectives", "k,glm"],
    ] {
        let o = pbg(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            o.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A refused path is named by the flag that gave it; an empty NAME=CSV part is said to be empty.
#[test]
fn refusals_name_their_flag() {
    let err = fails(&[
        "lattice",
        "datasets/t1/t1.toml",
        "--out",
        "datasets/t1/t1.csv",
    ]);
    assert!(err.contains("--out:") && !err.contains("--output"), "{err}");
    let err = fails(&[
        "search",
        "datasets/t1/t1.toml",
        "--objectives",
        "k,glm",
        "--plot",
        "datasets/t1/t1.toml",
    ]);
    assert!(err.contains("--plot:"), "{err}");
    let err = fails(&[
        "evaluate",
        "datasets/icde2007/disease.toml",
        "--node",
        "0,0,0",
        "--sensitive-hierarchy",
        "disease=",
    ]);
    assert!(err.contains("must be NAME=HIERARCHY_CSV"), "{err}");
}

/// The options of a pick are refused beside `--node` rather than silently ignored (clap drops a
/// `requires` whose target conflicts with a present argument, so each option conflicts itself).
#[test]
fn pick_options_refused_with_a_node() {
    let node = "0,0,0,0,0,0,0,0";
    for (flag, value) in [
        ("--minimize", "glm"),
        ("--maximize", "k"),
        ("--objectives", "k,glm"),
        ("--significance", "0,0"),
        ("--goal", "1,1"),
        ("--weights", "1,1"),
        ("--pick-evaluations", "5"),
    ] {
        let out = pbg(&[
            "anonymize",
            ADULT,
            "--node",
            node,
            flag,
            value,
            "--output",
            "/nonexistent/x.csv",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} accepted beside --node");
        assert!(
            err.contains(flag) && err.contains("--node"),
            "{flag}: {err}"
        );
    }
}

/// A pick that minimizes a loss is refused when no requirement can fail: none, or only bounds
/// the data as it is meets (a negative or unit k, a distance or risk of at most 1, a bound on
/// suppression alone). Each would release the input unchanged as verified; nothing is written.
#[test]
fn a_pick_under_requirements_that_require_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("raw.csv");
    let out = out.to_str().unwrap();
    for require in [
        "k>=-5",
        "k>=0",
        "k>=1",
        "k>0.5",
        "l>=1",
        "t<=1",
        "risk_prosecutor<=1",
        "suppressed<=1000",
        "k>=1,suppressed<=1000,glm<=1e9",
    ] {
        let err = fails(&[
            "anonymize",
            ADULT,
            "--pick",
            "--require",
            require,
            "--output",
            out,
        ]);
        assert!(
            err.contains("needs a privacy requirement")
                && err.contains("alone bounds no privacy index"),
            "{require}: {err}"
        );
        assert!(!Path::new(out).exists(), "{require}: a release was written");
    }
    // Other rules pick the data as it is just as well: the most classes, or a comparator
    // putting loss first.
    for pick in [
        vec!["--pick", "--maximize", "classes"],
        vec!["--pick", "lex", "--objectives", "glm,k"],
        vec!["--pick", "wtd", "--objectives", "k,glm", "--weights", "0,1"],
    ] {
        let mut a = vec!["anonymize", ADULT, "--output", out];
        a.extend(pick.iter().copied());
        let err = fails(&a);
        assert!(err.contains("without one"), "{pick:?}: {err}");
        assert!(!Path::new(out).exists(), "{pick:?}: a release was written");
    }
    // Equalities imply their bound.
    let page = format!("{out}.html");
    for require in ["uniques=0", "t_equal=0"] {
        let o = pbg(&[
            "--quiet",
            "report",
            ADULT,
            "--pick",
            "--require",
            require,
            "--output",
            &page,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("needs a privacy requirement"),
            "{require}: {err}"
        );
    }
    // One bound some node fails is enough, beside vacuous ones.
    let ok = pbg(&[
        "--quiet",
        "anonymize",
        ADULT,
        "--pick",
        "--require",
        "k>=1,k>1",
        "--output",
        out,
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// A quote or a line terminator as the delimiter is refused: it already means something else in
/// CSV (it was accepted, and a quote happened to parse).
#[test]
fn a_quote_or_line_break_is_no_delimiter() {
    let dir = tempfile::tempdir().unwrap();
    let rest = setup(dir.path(), "zip,disease\n13053,flu\n");
    for d in ["\"", "\n", "\r"] {
        let err = fails(&args(&["evaluate", "--delimiter", d, "--node", "0"], &rest));
        assert!(err.contains("cannot separate fields"), "{d:?}: {err}");
    }
}
