#!/usr/bin/env bash
# The Python module against the CLI on the same release: an adult-like table of ROWS rows
# (default 3,000,000) in one Parquet file, `anonymize --pick --require 'k>=5,l>=2'` minimising GLM
# (Parquet release, verified), once with `pbg anonymize` and once with `pbg.anonymize(...)` from
# Python (a release wheel, `pip install ./python`). Both run the same engine job; the difference is
# the interpreter's start-up and import, and the binding.
# Run from the repository root: bash benches/python_overhead.sh   (PYTHON=... a Python with the
# release wheel installed; default target/py-bench/venv, created and filled here; logs and data
# under target/py-bench, nothing is committed).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x target/release/pbg ] || cargo build --release --bin pbg
pbg=${PBG:-target/release/pbg}
rows=${ROWS:-3000000}
out=target/py-bench
mkdir -p "$out"
py=${PYTHON:-$out/venv/bin/python}
if [ ! -x "$py" ]; then
  python3 -m venv "$out/venv"
  "$out/venv/bin/pip" install --quiet ./python
fi
data=$out/people-$rows.parquet
[ -f "$data" ] || $pbg --quiet generate adult-like --rows "$rows" --seed 21 --output "$data" > /dev/null
# The DBSEC adult profile reading the generated table, its identifier dropped.
profile=$out/profile.toml
{
  echo "input = \"$PWD/$data\""
  echo 'identifiers = ["id"]'
  grep -v '^input\|^delimiter' datasets/adult/adult.toml |
    sed "s#hierarchy = \"#hierarchy = \"$PWD/datasets/adult/#"
} > "$profile"
cli=($pbg --quiet anonymize "$profile" --pick --require 'k>=5,l>=2' --minimize glm
  --output "$out/cli.parquet")
python=("$py" -c "import pbg; pbg.anonymize('$profile', '$out/py.parquet', pick='measure', require='k>=5,l>=2', minimize='glm')")
for i in $(seq "${RUNS:-3}"); do
  /usr/bin/time -f "cli    %e s  %M KB" "${cli[@]}" > /dev/null
  /usr/bin/time -f "python %e s  %M KB" "${python[@]}"
done
"$py" - "$out/cli.parquet" "$out/py.parquet" <<'PY'
import sys
import pyarrow as pa, pyarrow.parquet as pq
def rows(path):
    t = pq.read_table(path)
    t = t.cast(pa.schema([(f.name, pa.string()) for f in t.schema]))
    return t.sort_by([(c, "ascending") for c in t.column_names])
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert a.equals(b), "the two releases differ"
print(f"the two releases hold the same {a.num_rows} rows")
PY
