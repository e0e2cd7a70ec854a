#!/usr/bin/env bash
# End-to-end: one node evaluated by `pbg evaluate` and by a GROUP BY generalize() query in `pbg sql`
# over the same 3,016,200-row Parquet file (adult x 100, generated here, not committed).
# Run from the repository root: bash benches/sql_vs_evaluate.sh
set -euo pipefail
cargo build --release --bin pbg -q
pbg=target/release/pbg
data=$(mktemp -d)/adult3m.parquet
$pbg sql datasets/adult/adult.toml -c "COPY (SELECT a.* FROM adult a CROSS JOIN generate_series(1, 100) t) TO '$data' STORED AS PARQUET" >/dev/null
keys="generalize(age, 'age', 2), generalize(workclass, 'workclass', 1), generalize(education, 'education', 1),
  generalize(\"marital-status\", 'marital-status', 1), generalize(race, 'race', 0), generalize(sex, 'sex', 1),
  generalize(\"native-country\", 'native-country', 2), generalize(\"salary-class\", 'salary-class', 1)"
query="SELECT min(n) AS k, min(l) AS l, count(*) AS classes FROM
  (SELECT count(*) AS n, count(DISTINCT occupation) AS l FROM adult3m GROUP BY $keys)"
for i in 1 2 3; do
  /usr/bin/time -f "pbg evaluate: %e s, peak %M KB" $pbg evaluate --config datasets/adult/adult.toml \
    --input "$data" --suppression-limit 0 --node 2,1,1,1,0,1,2,1 >/dev/null
  /usr/bin/time -f "pbg sql GROUP BY: %e s, peak %M KB" $pbg sql --config datasets/adult/adult.toml \
    --input "$data" --suppression-limit 0 --format csv -c "$query" >/dev/null
done
rm -f "$data"
