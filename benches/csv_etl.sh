#!/usr/bin/env bash
# CSV at ETL scale: adult x 100 (3,016,200 rows, 251 MB, `;`-separated, as read) with ARX's
# hierarchies and ARX's 7 QIs, whole process, verified CSV release:
#   anonymize --pick --require 'k>=5' (0 % suppression; also with the text values quoted, and with a
#   column of unique values added), --require 'k>=5,l>=3' at 1 %, the first
#   with a Parquet release too, and pbg lattice (every index of 2160 nodes); then adult x 1000
#   (30,162,000 rows, 2.5 GB) with `BIG=1`. The report's `input_reads` says whether the release came from the rows pass 1 kept.
#   With ARX_CP set (see benches/arx_pick.sh), ARX's Flash runs on the same 3 M-row file: its
#   anonymize call in one JVM (3 runs), then its whole process writing the output CSV.
# Run from the repository root: bash benches/csv_etl.sh   (GNU time gives the peak memory; data
# is generated under target/csv-bench, nothing is committed).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x target/release/pbg ] || cargo build --release
pbg=target/release/pbg
out=target/csv-bench
mkdir -p "$out"
copies() { # copies N FILE: the header of adult.csv, then its rows N times
  [ -f "$2" ] || { head -1 datasets/adult/adult.csv; for _ in $(seq "$1"); do tail -n +2 datasets/adult/adult.csv; done; } > "$2"
}
copies 100 "$out/adult3m.csv"
profile() { # profile INPUT FILE
  { echo "input = \"$1\""; echo 'delimiter = ";"'; echo 'sensitive = "occupation"'
    echo 'suppression_limit = "0"'
    for q in age workclass education marital-status race sex native-country; do
      printf '[[qi]]\nname = "%s"\nhierarchy = "../../datasets/adult/arx-hierarchies/adult_hierarchy_%s.csv"\n' "$q" "$q"
    done; } > "$2"
}
profile adult3m.csv "$out/p3m.toml"
# The same rows with every value that is not a number quoted (as pandas' QUOTE_NONNUMERIC writes):
# the same release is expected, byte for byte.
[ -f "$out/adult3m_q.csv" ] || python3 -c "
import sys
for line in open(sys.argv[1]):
    print(';'.join(f if f.isdigit() else '\"' + f + '\"' for f in line.rstrip('\r\n').split(';')))
" "$out/adult3m.csv" > "$out/adult3m_q.csv"
profile adult3m_q.csv "$out/p3mq.toml"
# The same rows with a column of unique values first (a row number, not an identifier: released as
# it is), as person data often has (IDs, amounts, timestamps).
[ -f "$out/adult3m_id.csv" ] || awk 'BEGIN { FS = OFS = ";" } NR == 1 { print "rid", $0; next } { print NR + 1000000, $0 }' \
  "$out/adult3m.csv" > "$out/adult3m_id.csv"
profile adult3m_id.csv "$out/p3mid.toml"
report() {
  python3 -c "import json; r=json.load(open('$out/report.json')); print('  node', r['node'], 'released', r['rows_released'], 'input_reads', r['input_reads'], {k: round(v, 2) for k, v in r['timings'].items()})"
}
for i in 1 2 3; do
  # Once into a new file, once replacing it: freeing the replaced release's blocks is the
  # kernel's work inside the rename (seconds for 2.5 GB on a disk mounted with online discard).
  rm -f "$out/release.csv"; sync
  /usr/bin/time -f "3M CSV, k>=5, new output: %e s wall, peak %M KB" $pbg anonymize "$out/p3m.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/release.csv" > "$out/report.json"; report
  /usr/bin/time -f "3M CSV, k>=5, replacing it: %e s wall, peak %M KB" $pbg anonymize "$out/p3m.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/release.csv" > "$out/report.json"; report
  /usr/bin/time -f "3M quoted CSV, k>=5: %e s wall, peak %M KB" $pbg anonymize "$out/p3mq.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/release_q.csv" > "$out/report.json"; report
  cmp "$out/release.csv" "$out/release_q.csv"
  /usr/bin/time -f "3M CSV with a unique column, k>=5: %e s wall, peak %M KB" $pbg anonymize "$out/p3mid.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/release_id.csv" > "$out/report.json"; report
  /usr/bin/time -f "3M CSV, k>=5,l>=3, 1 pct: %e s wall, peak %M KB" $pbg anonymize "$out/p3m.toml" --pick \
    --require 'k>=5,l>=3' --suppression-limit 1% --minimize glm --output "$out/release.csv" > "$out/report.json"; report
  /usr/bin/time -f "3M CSV, k>=5, Parquet release: %e s wall, peak %M KB" $pbg anonymize "$out/p3m.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/release.parquet" > "$out/report.json"; report
  /usr/bin/time -f "3M CSV, lattice (2160 nodes): %e s wall, peak %M KB" $pbg lattice "$out/p3m.toml" \
    --out "$out/lattice.csv"
done
if [ -n "${ARX_CP:-}" ]; then
  mkdir -p "$out/arx3m"
  ln -sf "$PWD/$out/adult3m.csv" "$out/arx3m/adult.csv"
  ln -sfn "$PWD/datasets/adult/arx-hierarchies" "$out/arx3m/arx-hierarchies"
  ARX_DATA="$out/arx3m" RUNS=3 bash benches/arx_pick.sh
  for suppression in 0.0 0.01; do
    /usr/bin/time -f "ARX whole process, $suppression, output written: %e s wall, peak %M KB" \
      java -cp "$ARX_CP:target/arx-bench" PickBench "$out/arx3m" "$suppression" 1 "$out/arx-release.csv"
  done
fi
if [ "${BIG:-0}" = 1 ]; then
  [ -f "$out/adult30m.csv" ] || { head -1 "$out/adult3m.csv"; for _ in $(seq 10); do tail -n +2 "$out/adult3m.csv"; done; } > "$out/adult30m.csv"
  profile adult30m.csv "$out/p30m.toml"
  # The previous release deleted and synced first: its freeing and its writeback are not the
  # run's (the README's figures are taken so).
  rm -f "$out/release30m.csv"; sync
  /usr/bin/time -f "30M CSV, k>=5: %e s wall, peak %M KB" $pbg anonymize "$out/p30m.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/release30m.csv" > "$out/report.json"; report
  rm -f "$out/release30m.csv"
  /usr/bin/time -f "30M CSV, k>=5, Parquet release: %e s wall, peak %M KB" $pbg anonymize "$out/p30m.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/release30m.parquet" > "$out/report.json"; report
  rm -f "$out/release30m.parquet"
fi
