#!/usr/bin/env bash
# Batch anonymization at scale: `pbg anonymize` (two streaming passes, verified release) against the
# same pipeline in DuckDB SQL (generalize by joins with the hierarchy tables, window count per
# class, filter the suppressed classes, COPY TO parquet), on the same generated Parquet input, in
# the same run. Peak RSS and wall time from /usr/bin/time -v.
#
#   bash benches/batch_vs_duckdb.sh [ROWS] [NODE]
#
# Needs a release build (cargo build --release) and Python 3 with venv; DuckDB is pip-installed
# into target/bench-venv on first use. Nothing is committed; files go to target/batch-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-30000000}
NODE=${2:-3,1,1,2,1,1,2,0}
DIR=target/batch-bench
PBG=target/release/pbg
mkdir -p "$DIR"
[ -x "$PBG" ] || cargo build --release
if [ ! -x target/bench-venv/bin/python ]; then
  python3 -m venv target/bench-venv
  target/bench-venv/bin/pip install -q duckdb
fi
IN="$DIR/adult-$ROWS.parquet"
[ -f "$IN" ] || "$PBG" generate adult-like --rows "$ROWS" --seed 1 --output "$IN" >/dev/null
echo "input: $IN ($(du -h "$IN" | cut -f1)), node $NODE, $(nproc) cores"

/usr/bin/time -v "$PBG" anonymize datasets/adult/adult.toml --input "$IN" --identifier id \
  --node "$NODE" --output "$DIR/pbg.parquet" >"$DIR/pbg.json" 2>"$DIR/pbg.time"
THRESHOLD=$(python3 -c "import json; print(json.load(open('$DIR/pbg.json'))['threshold'])")
python3 - "$DIR/pbg.json" "$DIR/pbg.time" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1])); t = open(sys.argv[2]).read()
wall = r["timings"]["total_s"]
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
print(f"pbg:    {r['rows_in']:,} rows in {wall:.2f} s = {r['rows_in']/wall/1e6:.2f} M rows/s, "
      f"peak RSS {rss:.0f} MB, released {r['rows_released']:,}, suppressed {r['suppressed']:,}, "
      f"phases {r['timings']}")
PY

cat >"$DIR/duckdb_pipeline.py" <<'PY'
import sys, time, duckdb
inp, out, node, threshold = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(",")], int(sys.argv[4])
qis = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country", "salary-class"]
con = duckdb.connect()
start = time.time()
for q in qis:
    con.execute(f"""CREATE TABLE "h_{q}" AS SELECT * FROM read_csv('datasets/adult/dbsec-hierarchies/{q}.csv',
                    delim=';', header=false, all_varchar=true)""")
hcols = {q: [c[0] for c in con.execute(f'DESCRIBE "h_{q}"').fetchall()] for q in qis}
cols = [c[0] for c in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{inp}')").fetchall()]
select = []
for c in cols:
    if c == "id":
        continue
    if c in qis:
        select.append(f'"h_{c}"."{hcols[c][node[qis.index(c)]]}" AS "{c}"')
    else:
        select.append(f't."{c}"')
joins = " ".join(f'JOIN "h_{q}" ON CAST(t."{q}" AS VARCHAR) = "h_{q}"."{hcols[q][0]}"' for q in qis)
part = ", ".join(f'"{q}"' for q in qis)
con.execute(f"""COPY (
    SELECT * EXCLUDE (n) FROM (
        SELECT *, count(*) OVER (PARTITION BY {part}) AS n
        FROM (SELECT {", ".join(select)} FROM read_parquet('{inp}') t {joins})
    ) WHERE n > {threshold}
) TO '{out}' (FORMAT parquet, COMPRESSION zstd)""")
rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0]
print(f"{rows} {time.time() - start:.3f}")
PY
/usr/bin/time -v target/bench-venv/bin/python "$DIR/duckdb_pipeline.py" "$IN" "$DIR/duckdb.parquet" \
  "$NODE" "$THRESHOLD" >"$DIR/duckdb.out" 2>"$DIR/duckdb.time"
python3 - "$DIR/duckdb.out" "$DIR/duckdb.time" "$DIR/pbg.json" <<'PY'
import json, re, sys
rows, secs = open(sys.argv[1]).read().split()
t = open(sys.argv[2]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", t).group(1)
r = json.load(open(sys.argv[3]))
n = r["rows_in"]
print(f"duckdb: {n:,} rows in {float(secs):.2f} s = {n/float(secs)/1e6:.2f} M rows/s (process wall {wall}), "
      f"peak RSS {rss:.0f} MB, released {int(rows):,}")
assert int(rows) == r["rows_released"], "DuckDB and pbg release different row counts"
PY
