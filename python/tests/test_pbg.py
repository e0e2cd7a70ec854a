"""pbg from Python: its functions in a datafusion-python session (through datafusion-ffi) and the
Pythonic layer, checked against known values and against the CLI."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

import datafusion
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import pbg

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "datasets" / "adult"
ARX7 = ADULT / "adult-arx-columns.toml"
QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
CLI = Path(os.environ.get("PBG_CLI", ROOT / "target" / "debug" / "pbg"))


def cli(*args: str) -> str:
    """Runs the pbg CLI (the binary of the same build) and returns its standard output."""
    if not CLI.exists():
        pytest.skip(f"the pbg CLI is not built at {CLI} (set PBG_CLI)")
    done = subprocess.run([str(CLI), *args], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def adult_table() -> pa.Table:
    """The shipped adult data set as a pyarrow Table of strings (as pbg reads CSV text)."""
    names = (ADULT / "adult.csv").read_text(encoding="utf-8").splitlines()[0].split(";")
    return pacsv.read_csv(
        ADULT / "adult.csv",
        parse_options=pacsv.ParseOptions(delimiter=";"),
        convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in names}),
    )


def arx7_toml(head: str) -> str:
    """The ARX adult profile (7 QIs) with its input line replaced by `head`, paths absolute."""
    text = ARX7.read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        if line.startswith("input "):
            continue
        if line.startswith("hierarchy = \""):
            rel = line.split('"')[1]
            line = f'hierarchy = "{(ADULT / rel).as_posix()}"'
        lines.append(line)
    return head + "\n" + "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def ctx() -> datafusion.SessionContext:
    """A datafusion-python session with pbg registered and the adult data as table `adult`."""
    ctx = datafusion.SessionContext()
    names = pbg.register(ctx)
    assert "pbg_profile" in names and "generalize" in names and "entropy_l" in names
    ctx.register_csv("adult", str(ADULT / "adult.csv"), delimiter=";", schema=adult_table().schema)
    toml = arx7_toml(f'input = "{(ADULT / "adult.csv").as_posix()}"')
    row = ctx.sql(f"SELECT * FROM pbg_profile('p', $${toml}$$)").to_pylist()
    assert len(row) == 1
    return ctx


def test_datafusion_is_55():
    assert datafusion.__version__.split(".")[0] == "55"
    assert pbg._pbg.DATAFUSION_VERSION.startswith("55.")


def test_evaluate_in_datafusion_python(ctx):
    row = ctx.sql("SELECT k, classes, l_distinct FROM pbg_evaluate('p', '1,2,1,1,2,1,1')").to_pylist()
    assert row == [{"k": 1, "classes": 256, "l_distinct": 1}]


def test_lattice_count(ctx):
    n = ctx.sql("SELECT count(*) AS n FROM pbg_lattice('p')").to_pylist()[0]["n"]
    assert n == 2160


def test_exhaustive_front_equals_cli(ctx):
    front = ctx.sql("SELECT * FROM pbg_search('p', 'k,l,glm', 'exhaustive')").to_pandas()
    ours = sorted(tuple(int(front[q][i]) for q in QIS) for i in range(len(front)))
    out = json.loads(cli("search", str(ARX7), "--objectives", "k,l,glm", "--format", "json"))
    theirs = sorted(tuple(p["node"]) for p in out["front"])
    assert ours == theirs
    assert len(ours) > 1


def test_generalize_over_pyarrow_table(ctx):
    people = pa.table({"age": ["17", "42", "90"], "name": ["a", "b", "c"]})
    ctx.register_record_batches("people", [people.to_batches()])
    got = ctx.sql("SELECT generalize(age, 'p.age', 1) AS g FROM people").to_pylist()
    # The ARX age hierarchy's first level: 5-year bands.
    level1 = {}
    with open(ADULT / "arx-hierarchies" / "adult_hierarchy_age.csv", encoding="utf-8") as f:
        for row in csv.reader(f, delimiter=";"):
            level1[row[0]] = row[1]
    assert [r["g"] for r in got] == [level1["17"], level1["42"], level1["90"]]


def test_sql_anonymize_copy(ctx, tmp_path):
    out = tmp_path / "release"
    ctx.sql(
        f"COPY (SELECT * FROM pbg_anonymize('p', 'pick', 'k>=10,l>=3', 'glm')) "
        f"TO '{out.as_posix()}/' STORED AS PARQUET"
    ).collect()
    # Every released class meets the requirement, counted independently (polars, file by file:
    # each file has its own dictionaries).
    files = sorted(out.glob("*.parquet"))
    assert files
    released = pl.concat([pl.read_parquet(f).cast(pl.String) for f in files])
    sizes = released.group_by(QIS).agg(pl.len().alias("n"), pl.col("occupation").n_unique().alias("l"))
    assert sizes.height > 0
    assert sizes["n"].min() >= 10 and sizes["l"].min() >= 3
    assert 0 < released.height <= 30162


def test_distance_aggregate_reads_profile(ctx):
    rows = ctx.sql(
        "SELECT max(t) AS t FROM (SELECT emd_equal(occupation, 'p') AS t FROM adult GROUP BY sex)"
    ).to_pylist()
    assert 0.0 < rows[0]["t"] < 1.0


def test_pythonic_evaluate_equals_cli():
    ours = pbg.evaluate(str(ARX7), [1, 2, 1, 1, 2, 1, 1])
    theirs = json.loads(cli("evaluate", str(ARX7), "--node", "1,2,1,1,2,1,1"))
    assert ours == theirs
    assert ours["k"] == 1 and ours["classes"] == 256 and ours["l_distinct"] == 1


def test_pythonic_lattice_and_search_from_arrow():
    profile = pbg.Profile.from_file(ARX7, input=adult_table())
    table = pbg.lattice(profile)
    assert isinstance(table, pa.Table) and table.num_rows == 2160
    front = pbg.search(profile, "k,glm").to_pylist()
    cli_front = json.loads(cli("search", str(ARX7), "--objectives", "k,glm", "--format", "json"))
    assert sorted([r[q] for q in QIS] for r in front) == sorted(p["node"] for p in cli_front["front"])
    assert [r["k"] for r in front] == [p["k"] for p in cli_front["front"]]
    # A seed is the evolutionary search's: beside the exhaustive one it is refused, not ignored.
    with pytest.raises(Exception, match="a seed is for the evolutionary search"):
        pbg.search(profile, "k,glm", seed=3)


def test_anonymize_polars_verified(tmp_path):
    df = pl.from_arrow(adult_table())
    assert isinstance(df, pl.DataFrame)
    profile = pbg.Profile(
        input=df,
        qis={
            "age": ADULT / "arx-hierarchies" / "adult_hierarchy_age.csv",
            "sex": {"Male": ["*"], "Female": ["*"]},
            "race": pa.table(
                {
                    "leaf": ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"],
                    "top": ["*"] * 5,
                }
            ),
        },
        sensitive="occupation",
        suppression_limit="1%",
    )
    out = tmp_path / "release.parquet"
    report = pbg.anonymize(profile, out, pick="measure", require="k>=5,l>=2", minimize="glm")
    assert report["verified"] is True
    assert report["rows_in"] == 30162
    assert report["rows_released"] + report["suppressed"] == 30162
    released = pl.read_parquet(out)
    assert released.height == report["rows_released"]
    sizes = released.group_by(["age", "sex", "race"]).agg(
        pl.len().alias("n"), pl.col("occupation").n_unique().alias("l")
    )
    assert sizes["n"].min() >= 5 and sizes["l"].min() >= 2
    # No raw age survives where the node generalizes it.
    level = report["node"][0]
    if level > 0:
        raw = set(df["age"].unique().to_list())
        assert not raw & set(released["age"].unique().to_list())


def test_anonymize_node_csv_equals_cli(tmp_path):
    ours = pbg.anonymize(ARX7, tmp_path / "py.csv", node="1,1,1,1,1,1,1")
    theirs = json.loads(
        cli("anonymize", str(ARX7), "--node", "1,1,1,1,1,1,1", "--output", str(tmp_path / "cli.csv"))
    )
    assert (tmp_path / "py.csv").read_bytes() == (tmp_path / "cli.csv").read_bytes()
    assert ours["indices"] == theirs["indices"] and ours["verified"] and theirs["verified"]


def test_bad_column_raises_pbg_error():
    profile = pbg.Profile(
        input=pa.table({"age": ["1", "2"], "job": ["x", "y"]}),
        qis={"agee": {"1": ["*"], "2": ["*"]}},
        sensitive="job",
    )
    with pytest.raises(pbg.PbgError, match="agee"):
        pbg.evaluate(profile, [0])


def test_bad_column_in_sql_raises(ctx, tmp_path):
    data = tmp_path / "tiny.csv"
    data.write_text("a,s\n1,x\n", encoding="utf-8")
    toml = f'input = "{data.as_posix()}"\nsensitive = "s"\n[[qi]]\nname = "nope"\nhierarchy = {{ type = "mask" }}\n'
    ctx.sql(f"SELECT * FROM pbg_profile('bad', $${toml}$$)").collect()
    with pytest.raises(Exception, match="nope"):
        ctx.sql("SELECT * FROM pbg_evaluate('bad', '0')").collect()


def test_profile_over_a_session_table(ctx, tmp_path):
    """A profile naming a table of the caller's session (`table = "adult"`): pbg reads it through
    datafusion-python (Arrow C stream), afresh for each query, and the session keeps its tables."""
    toml = arx7_toml('table = "adult"')
    ctx.sql(f"SELECT * FROM pbg_profile('t', $${toml}$$)").collect()
    got = ctx.sql("SELECT k, classes, l_distinct FROM pbg_evaluate('t', '1,2,1,1,2,1,1')").to_pylist()
    assert got == [{"k": 1, "classes": 256, "l_distinct": 1}]
    assert ctx.sql("SELECT count(*) AS n FROM pbg_lattice('t')").to_pylist() == [{"n": 2160}]
    out = tmp_path / "t"
    ctx.sql(
        f"COPY (SELECT * FROM pbg_anonymize('t', '1,1,1,1,1,1,1')) TO '{out.as_posix()}/' STORED AS PARQUET"
    ).collect()
    released = pl.concat([pl.read_parquet(f).cast(pl.String) for f in sorted(out.glob("*.parquet"))])
    assert released.height == 30162
    assert not set(released["age"].unique().to_list()) & set(adult_table()["age"].to_pylist())
    # A table registered after the declaration, under the profile's name, is read as it is now.
    ctx.register_record_batches("later", [adult_table().slice(0, 1000).to_batches()])
    later = arx7_toml('table = "later"')
    ctx.sql(f"SELECT * FROM pbg_profile('u', $${later}$$)").collect()
    rows = ctx.sql("SELECT sum(classes) AS c FROM pbg_evaluate('u', '0,0,0,0,0,0,0')").to_pylist()
    assert rows[0]["c"] <= 1000
    # pbg_correlation reads a session table the same way.
    pairs = ctx.sql("SELECT a, b FROM pbg_correlation('adult', 'sex,race')").to_pylist()
    assert pairs == [{"a": "sex", "b": "race"}]
    assert "adult" in ctx.catalog("datafusion").schema("public").names()
    assert ctx.sql("SELECT count(*) AS n FROM adult").to_pylist() == [{"n": 30162}]
    # A table that does not exist is named in the error.
    nope = arx7_toml('table = "nope"')
    ctx.sql(f"SELECT * FROM pbg_profile('v', $${nope}$$)").collect()
    with pytest.raises(Exception, match="nope"):
        ctx.sql("SELECT * FROM pbg_evaluate('v', '0,0,0,0,0,0,0')").collect()


def test_not_arrow_input_raises():
    with pytest.raises(pbg.PbgError, match="not Arrow data"):
        pbg.Profile(input=[1, 2, 3], qis={"a": {"1": ["*"]}}, sensitive="b")


def test_output_equal_to_input_refused(tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("age;occupation\n1;x\n2;y\n", encoding="utf-8")
    profile = pbg.Profile(input=data, qis={"age": {"1": ["*"], "2": ["*"]}}, sensitive="occupation", delimiter=";")
    before = data.read_bytes()
    with pytest.raises(pbg.PbgError):
        pbg.anonymize(profile, data, node="1")
    assert data.read_bytes() == before


def test_group_by_generalize_equals_evaluate(ctx):
    """pbg's scalar and aggregate functions inside the caller's own plan over the caller's table:
    GROUP BY the generalized QIs of a node = pbg_evaluate of that node (no suppression)."""
    node = [1, 2, 1, 1, 2, 1, 1]
    keys = ", ".join(f"generalize(\"{q}\", 'p.{q}', {lv})" for q, lv in zip(QIS, node))
    got = ctx.sql(
        f"SELECT count(*) AS classes, min(n) AS k, min(l) AS l_entropy, min(d) AS l_distinct FROM "
        f"(SELECT count(*) AS n, entropy_l(occupation) AS l, count(DISTINCT occupation) AS d "
        f"FROM adult GROUP BY {keys})"
    ).to_pylist()[0]
    want = ctx.sql(
        "SELECT classes, k, l_entropy, l_distinct FROM pbg_evaluate('p', '1,2,1,1,2,1,1')"
    ).to_pylist()[0]
    assert got["classes"] == want["classes"] == 256
    assert got["k"] == want["k"] and got["l_distinct"] == want["l_distinct"]
    assert got["l_entropy"] == pytest.approx(want["l_entropy"])


def test_limit_and_show_over_a_release(ctx):
    """A LIMIT (or .show(), .head()) above pbg_anonymize runs pbg's plan from datafusion-python's
    threads: it must stream with pbg's runtime, not abort the interpreter."""
    rows = ctx.sql("SELECT age FROM pbg_anonymize('p', '1,1,1,1,1,1,1') LIMIT 5").to_pylist()
    assert len(rows) == 5
    raw = set(adult_table()["age"].to_pylist())
    assert not {r["age"] for r in rows} & raw
    assert ctx.sql("SELECT * FROM pbg_anonymize('p', '1,1,1,1,1,1,1')").limit(3).count() == 3


def test_register_twice_keeps_profiles(ctx):
    pbg.register(ctx)
    assert ctx.sql("SELECT k FROM pbg_evaluate('p', '1,2,1,1,2,1,1')").to_pylist() == [{"k": 1}]


def test_pick_without_requirements_refused(tmp_path):
    with pytest.raises(pbg.PbgError, match="needs a privacy requirement"):
        pbg.anonymize(ARX7, tmp_path / "raw.csv", pick="measure")
    assert not (tmp_path / "raw.csv").exists()


def test_node_argument_checked():
    with pytest.raises(pbg.PbgError, match="one integer level per QI"):
        pbg.evaluate(ARX7, [1.9, 0, 0, 0, 0, 0, 0])


def test_profile_over_a_datafusion_dataframe():
    """The data of the caller's session reaches pbg as a DataFrame (Arrow C stream), the way the
    refusal of `table = ...` advises."""
    ctx = datafusion.SessionContext()
    ctx.register_csv("adult", str(ADULT / "adult.csv"), delimiter=";")
    profile = pbg.Profile.from_file(ARX7, input=ctx.table("adult"))
    got = pbg.evaluate(profile, [1, 2, 1, 1, 2, 1, 1])
    assert (got["k"], got["classes"], got["l_distinct"]) == (1, 256, 1)


def test_distance_aggregate_over_a_session_table_profile(ctx):
    toml = arx7_toml('table = "adult"')
    ctx.sql(f"SELECT * FROM pbg_profile('w', $${toml}$$)").collect()
    by_table = ctx.sql(
        "SELECT max(t) AS t FROM (SELECT emd_equal(occupation, 'w') AS t FROM adult GROUP BY sex)"
    ).to_pylist()[0]["t"]
    by_path = ctx.sql(
        "SELECT max(t) AS t FROM (SELECT emd_equal(occupation, 'p') AS t FROM adult GROUP BY sex)"
    ).to_pylist()[0]["t"]
    assert by_table == pytest.approx(by_path) and 0.0 < by_table < 1.0


def test_duplicate_column_names_refused():
    data = pa.Table.from_arrays([pa.array(["1"]), pa.array(["2"]), pa.array(["x"])], names=["age", "age", "job"])
    profile = pbg.Profile(input=data, qis={"age": {"1": ["*"], "2": ["*"]}}, sensitive="job")
    with pytest.raises(pbg.PbgError, match="column `age` appears twice"):
        pbg.evaluate(profile, [0])


def test_leading_zeros_kept_as_written(tmp_path):
    """Values such as 007 reach the release as written: no type inference rewrites them."""
    data = pa.table({"zip": ["007", "07", "7", "007"], "job": ["a", "b", "a", "b"]})
    profile = pbg.Profile(input=data, qis={"zip": {"type": "mask", "steps": 1}}, sensitive="job")
    out = tmp_path / "r.csv"
    report = pbg.anonymize(profile, out, node=[0])
    assert report["verified"] is True
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [line.split(",")[0] for line in lines[1:]] == ["007", "07", "7", "007"]


def test_release_of_a_session_table_is_of_the_rows_its_statistics_counted(tmp_path):
    """A session table is read once when the release is planned: rewritten before the release
    runs (same leaves, fewer rows), it was released under the old statistics with classes of one
    row where k>=3 was required (an attack round)."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "a.csv").write_text("zip,job\n13051,a\n13052,b\n13053,c\n13261,a\n13262,b\n13263,c\n")
    ctx = datafusion.SessionContext()
    pbg.register(ctx)
    schema = pa.schema([("zip", pa.string()), ("job", pa.string())])
    ctx.register_csv("people", f"{lake.as_posix()}/", schema=schema)
    toml = 'table = "people"\nsensitive = "job"\n[[qi]]\nname = "zip"\nhierarchy = { type = "mask", steps = 3 }\n'
    ctx.sql(f"SELECT * FROM pbg_profile('p', $${toml}$$)").collect()
    df = ctx.sql("SELECT * FROM pbg_anonymize('p', 'pick', 'k>=3,l>=3', 'glm')")
    (lake / "a.csv").write_text("zip,job\n13051,a\n13261,a\n13262,b\n13263,c\n")
    released = pl.from_arrow(df.to_arrow_table())
    classes = released.group_by("zip").agg(pl.len().alias("n"), pl.col("job").n_unique().alias("l"))
    assert classes["n"].min() >= 3 and classes["l"].min() >= 3, classes
    assert released.height == 6


def test_columns_the_parquet_writer_cannot_hold_raise(tmp_path):
    """A kept column of a type arrow's Parquet writer panics on (a polars categorical, read as a
    dictionary of text views, or a union) is refused with an error naming it, not a Rust panic
    that `except Exception` does not catch; CSV still takes the categorical."""
    zips, jobs = ["13053", "13268"], ["a", "b"]
    union = pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["x", "y"])])
    views = pa.array(["u", "v"], pa.string_view()).dictionary_encode()
    for column in [union, views]:
        table = pa.table({"zip": zips, "x": column, "job": jobs})
        profile = pbg.Profile(input=table, qis={"zip": {"type": "mask", "steps": 3}}, sensitive="job")
        with pytest.raises(pbg.PbgError, match="column `x`.*Parquet writer cannot hold"):
            pbg.anonymize(profile, tmp_path / "o.parquet", node=[1])
        assert not (tmp_path / "o.parquet").exists()
    frame = pl.DataFrame({"zip": zips, "x": ["u", "v"], "job": jobs}).with_columns(pl.col("x").cast(pl.Categorical))
    profile = pbg.Profile(input=frame, qis={"zip": {"type": "mask", "steps": 3}}, sensitive="job")
    with pytest.raises(pbg.PbgError, match="column `x`"):
        pbg.anonymize(profile, tmp_path / "o.parquet", node=[1])
    report = pbg.anonymize(profile, tmp_path / "o.csv", node=[1])
    assert report["verified"] is True
    assert (tmp_path / "o.csv").read_text().splitlines()[1:] == ["1305*,u,a", "1326*,v,b"]


def test_pandas_index_refused_not_released():
    """A pandas index is carried by the frame's Arrow stream as a column: a named index (names of
    people) or a filtered frame's row numbers were released raw. Refused, naming the way out; a
    default index is fine."""
    import pandas as pd

    frame = pd.DataFrame({"name": ["Alice", "Bob"], "zip": ["13053", "13268"], "job": ["a", "b"]})
    qis = {"zip": {"type": "mask", "steps": 3}}
    for bad in [frame.set_index("name"), frame[frame["zip"] != "x"].iloc[[1, 0]]]:
        with pytest.raises(pbg.PbgError, match="index.*reset_index"):
            pbg.Profile(input=bad, qis=qis, sensitive="job")
    pbg.Profile(input=frame.drop(columns="name"), qis=qis, sensitive="job")


def test_release_notes_reach_python(tmp_path):
    """The notes the CLI prints (a raw column named like a QI apart from case) are in the report
    and issued as warnings: Python users got none."""
    table = pa.table({"zip": ["13053", "13268"], "ZIP": ["13053", "13268"], "job": ["a", "b"]})
    profile = pbg.Profile(input=table, qis={"zip": {"type": "mask", "steps": 3}}, sensitive="job")
    with pytest.warns(UserWarning, match="column `ZIP` is released as it is"):
        report = pbg.anonymize(profile, tmp_path / "o.csv", node=[1])
    assert any("`ZIP`" in n for n in report["notes"])
    quiet = pbg.anonymize(ARX7, tmp_path / "q.csv", node="1,1,1,1,1,1,1")
    assert quiet["notes"] == []


def test_output_over_the_profile_file_refused(tmp_path):
    """A release written over its own profile file is refused, as by the CLI: the profile's path
    was dropped on the way to the engine, and the profile was replaced by the release."""
    base = ARX7.parent.as_posix()
    text = ARX7.read_text().replace('"adult.csv"', f'"{base}/adult.csv"')
    text = text.replace('"arx-hierarchies/', f'"{base}/arx-hierarchies/')
    profile = tmp_path / "profile.csv"
    profile.write_text(text)
    with pytest.raises(pbg.PbgError, match="is the profile file"):
        pbg.anonymize(profile, profile, node="1,1,1,1,1,1,1")
    assert profile.read_text() == text


def test_odd_column_names_in_keyword_profiles():
    """A column named with DEL is written into the profile's TOML escaped (it gave a TOML parse
    error about a profile the user never wrote); a lone surrogate is a PbgError, not a
    UnicodeEncodeError."""
    table = pa.table({"zip\x7f": ["13053", "13268"], "job": ["a", "b"]})
    profile = pbg.Profile(input=table, qis={"zip\x7f": {"type": "mask", "steps": 3}}, sensitive="job")
    assert pbg.evaluate(profile, [3])["k"] == 2
    with pytest.raises(pbg.PbgError, match="surrogate"):
        pbg.Profile(input=table, qis={"zip\ud800": {"type": "mask", "steps": 3}}, sensitive="job")


def test_dictionary_null_values_are_nulls(tmp_path):
    """A dictionary whose values hold a null has null rows: named by their row, and taken by
    `null_as` (they were the text "", refused at "data row 0" even with `null_as`)."""
    zips = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 1], pa.int32()), pa.array(["13053", None]))
    table = pa.table({"zip": zips, "job": ["a", "b", "a", "b"]})
    qis = {"zip": {"13053": ["*"], "X": ["*"]}}
    with pytest.raises(pbg.PbgError, match="null at data row 2"):
        pbg.anonymize(pbg.Profile(input=table, qis=qis, sensitive="job"), tmp_path / "o.csv", node=[1])
    profile = pbg.Profile(input=table, qis=qis, sensitive="job", null_as={"zip": "X"})
    report = pbg.anonymize(profile, tmp_path / "o.csv", node=[0])
    assert report["verified"] is True
    assert (tmp_path / "o.csv").read_text().splitlines() == ["zip,job", "13053,a", "X,b", "13053,a", "X,b"]


def test_pick_options_beside_a_node_refused(tmp_path):
    """What only a pick reads (`minimize=`, `objectives=`, ...) is refused beside `node=`, as the
    CLI's flags conflict, rather than ignored."""
    with pytest.raises(pbg.PbgError, match="minimize: belongs to a pick"):
        pbg.anonymize(ARX7, tmp_path / "o.csv", node="1,1,1,1,1,1,1", minimize="cm")
    assert not (tmp_path / "o.csv").exists()


def test_names_and_values_the_engine_cannot_take_are_named(tmp_path):
    # A NUL in a column name (nested too): Arrow's C interface would cut the name there.
    for data in [
        pa.table({"zip": ["13053"], "no\x00te": [1], "dis": ["a"]}),
        pl.DataFrame({"zip": ["13053"], "no\x00te": [1], "dis": ["a"]}),
        pa.table({"zip": ["13053"], "s": [{"x\x00y": 1}], "dis": ["a"]}),
        # polars' own export aborted the interpreter on this one (a panic that cannot unwind).
        pl.DataFrame({"zip": ["13053"], "l": [[{"x\x00y": 1}]], "dis": ["a"]}),
    ]:
        with pytest.raises(pbg.PbgError, match="holds a NUL character"):
            pbg.Profile(data, qis={"zip": {"type": "mask", "steps": 2}}, sensitive="dis")
    # An empty text in a masked QI: named by its data row, not as a hierarchy row.
    data = pa.table({"zip": ["13053", "13054", "", "13055"], "dis": ["a", "b", "c", "a"]})
    profile = pbg.Profile(data, qis={"zip": {"type": "mask", "steps": 2}}, sensitive="dis")
    with pytest.raises(pbg.PbgError, match=r"value `` \(first at data row 3\).*no characters to mask"):
        pbg.anonymize(profile, tmp_path / "out.csv", node=[1])
    assert not (tmp_path / "out.csv").exists()
    # A null leaf in a hierarchy table: named as the table the user gave, not pbg's own name.
    levels = pa.table({"leaf": ["13053", None], "l1": ["1305*", "1305*"]})
    data = pa.table({"zip": ["13053", "13053"], "dis": ["a", "b"]})
    profile = pbg.Profile(data, qis={"zip": levels}, sensitive="dis")
    with pytest.raises(pbg.PbgError, match=r"the table given as its hierarchy.*null leaf at level 0"):
        pbg.anonymize(profile, tmp_path / "out.csv", node=[1])
