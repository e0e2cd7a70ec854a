#!/usr/bin/env bash
# pbg on a Ballista cluster against the local run, on this machine: an adult-like table of ROWS
# rows (default 30,000,000) in three Parquet files, `anonymize --pick --require 'k>=5,l>=2'`
# (Parquet release, verified) locally and through a scheduler + 2 executors on 127.0.0.1. On one
# 2-core machine the cluster adds overhead (shuffles, gRPC, executors competing for the cores);
# the point is the figure, not a speed-up. Also prints the size of the class statistics (what
# comes back from the cluster: the GROUP BY result as Arrow IPC) against the rows.
# Run from the repository root: bash benches/cluster.sh   (ROWS=3000000 for a quick run; logs
# and data under target/cluster-bench, nothing is committed).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x target/release/pbg ] || cargo build --release
pbg=${PBG:-target/release/pbg}
rows=${ROWS:-30000000}
out=target/cluster-bench
mkdir -p "$out/lake-$rows"
lake=$out/lake-$rows
per=$((rows / 3))
for f in 0 1 2; do
  [ -f "$lake/part$f.parquet" ] || $pbg --quiet generate adult-like --rows "$per" --seed "$((21 + f))" \
    --output "$lake/part$f.parquet" > /dev/null
done
port=50450
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
$pbg cluster scheduler --bind 127.0.0.1:$port --log-file "$out/scheduler.log" 2> /dev/null &
pids+=($!)
sleep 1
for e in 1 2; do
  $pbg cluster executor --scheduler 127.0.0.1:$port --bind 127.0.0.1:$((port + 2 * e)) \
    --work-dir "$out/work$e" --log-file "$out/executor$e.log" 2> /dev/null &
  pids+=($!)
done
sleep 2
job=(anonymize datasets/adult/adult.toml --input "$lake" --identifier id --pick --require 'k>=5,l>=2')
report() {
  python3 -c "import json; r=json.load(open('$out/report.json')); print('  node', r['node'], 'rows_in', r['rows_in'], 'released', r['rows_released'], {k: round(v, 2) for k, v in r['timings'].items()})"
}
for i in $(seq "${RUNS:-3}"); do
  /usr/bin/time -f "local, $rows rows: %e s wall, %U s user, peak %M KB" $pbg --quiet "${job[@]}" \
    --output "$out/local.parquet" > "$out/report.json"; report
  /usr/bin/time -f "cluster (scheduler + 2 executors), $rows rows: %e s wall, client peak %M KB" \
    $pbg --quiet "${job[@]}" --output "$out/cluster.parquet" --cluster df://127.0.0.1:$port \
    > "$out/report.json"; report
done
# The class statistics: the GROUP BY of pass 1 (QIs, sensitive attribute) as Arrow IPC (what
# comes back from the executors; text as plain Utf8).
rm -f "$out/statistics.arrow"
cols='age, workclass, education, "marital-status", race, sex, "native-country", "salary-class", occupation'
group="SELECT $cols, count(*) AS n FROM lake GROUP BY $cols"
$pbg --quiet sql datasets/adult/adult.toml --input "$lake" --table lake -c \
  "COPY (SELECT arrow_cast(age, 'Utf8') AS age, arrow_cast(workclass, 'Utf8') AS workclass, arrow_cast(education, 'Utf8') AS education, arrow_cast(\"marital-status\", 'Utf8') AS ms, arrow_cast(race, 'Utf8') AS race, arrow_cast(sex, 'Utf8') AS sex, arrow_cast(\"native-country\", 'Utf8') AS nc, arrow_cast(\"salary-class\", 'Utf8') AS sc, arrow_cast(occupation, 'Utf8') AS occupation, n FROM ($group)) TO '$out/statistics.arrow' STORED AS ARROW" > /dev/null
combos=$($pbg --quiet sql datasets/adult/adult.toml --input "$lake" --table lake --format csv -c "SELECT count(*) AS c FROM ($group)" | tail -1)
echo "statistics: $(stat -c %s "$out/statistics.arrow") bytes (Arrow IPC), $combos combinations, for $rows rows ($(du -sb "$lake" | cut -f1) bytes of Parquet)"
