#!/usr/bin/env bash
# One node evaluated end to end on a 3,016,200-row Parquet file (adult x 100): `pbg evaluate`
# (DataFusion scan + pbg's statistics aggregate + the engine) against Polars doing read_parquet +
# the same generalization (joins with the hierarchy tables) + group-by, in one process, same run.
# Run from the repository root: bash benches/evaluate_vs_polars.sh   (Polars is pip-installed into
# target/bench-venv on first use; nothing is committed).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x target/release/pbg ] || cargo build --release
pbg=target/release/pbg
if [ ! -x target/bench-venv/bin/python ]; then python3 -m venv target/bench-venv; fi
target/bench-venv/bin/python -c "import polars" 2>/dev/null || target/bench-venv/bin/pip install -q polars
data=target/batch-bench/adult3m.parquet
mkdir -p target/batch-bench
[ -f "$data" ] || $pbg sql datasets/adult/adult.toml -c "COPY (SELECT a.* FROM adult a CROSS JOIN generate_series(1, 100) t) TO '$data' STORED AS PARQUET" >/dev/null
cat > target/batch-bench/polars_node.py <<'PY'
import sys, time, polars as pl
t0 = time.time()
df = pl.read_parquet(sys.argv[1])
qis = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country", "salary-class"]
node = [2, 1, 1, 1, 0, 1, 2, 1]
keys = []
for q, l in zip(qis, node):
    h = pl.read_csv(f"datasets/adult/dbsec-hierarchies/{q}.csv", separator=";", has_header=False,
                    infer_schema_length=0)
    h = h.select([pl.col(h.columns[0]).alias(q), pl.col(h.columns[l]).alias(f"{q}@")])
    df = df.with_columns(pl.col(q).cast(pl.Utf8)).join(h, on=q, how="left")
    keys.append(f"{q}@")
g = df.group_by(keys).agg(pl.len().alias("n"), pl.col("occupation").n_unique().alias("l"))
print(f"k={g['n'].min()} l={g['l'].min()} classes={g.height} in {time.time()-t0:.2f} s")
PY
for i in 1 2 3; do
  /usr/bin/time -f "pbg evaluate: %e s, peak %M KB" $pbg evaluate --config datasets/adult/adult.toml \
    --input "$data" --suppression-limit 0 --node 2,1,1,1,0,1,2,1 --format table | grep -E "^(k|l_distinct|classes) "
  /usr/bin/time -f "polars: %e s, peak %M KB" target/bench-venv/bin/python target/batch-bench/polars_node.py "$data"
done
