#!/usr/bin/env bash
# Slicing at scale: `pbg slice` on the shipped adult data (30,162 rows) and on adult-like data of
# 300,000 and 3,000,000 rows (generated, seeded bootstrap of adult), for bucketization and slicing
# at l = 5 and overlapping slicing at the strongest l its columns allow (see README). Wall time and
# peak RSS from /usr/bin/time -v; the time includes reading, partitioning, writing and the
# independent re-read check.
#
#   bash benches/slicing_scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PBG=target/release/pbg
DIR=target/slicing-bench
mkdir -p "$DIR"
[ -x "$PBG" ] || cargo build --release
for rows in 300000 3000000; do
  [ -f "$DIR/adult-$rows.parquet" ] ||
    "$PBG" generate adult-like --rows "$rows" --seed 1 --output "$DIR/adult-$rows.parquet" >/dev/null
done
run() { # label, args...
  local label=$1; shift
  /usr/bin/time -v "$PBG" slice "$@" >"$DIR/out.json" 2>"$DIR/time.txt" || { echo "$label: $(tail -1 "$DIR/time.txt")"; return; }
  python3 - "$label" "$DIR/out.json" "$DIR/time.txt" <<'PY'
import json, re, sys
label, out, t = sys.argv[1], json.load(open(sys.argv[2])), open(sys.argv[3]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", t).group(1)
print(f"{label:55} {out['rows']:>9,} rows  {out['buckets']:>6} buckets  max p {out['max_p']:.3f}  "
      f"{out['seconds']:6.2f} s (wall {wall})  peak RSS {rss:5.0f} MB")
PY
}
echo "machine: $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for input in "" "--input $DIR/adult-300000.parquet" "--input $DIR/adult-3000000.parquet"; do
  name=${input:-adult 30162}
  # shellcheck disable=SC2086
  run "bucketization l=5 [$name]" datasets/adult/adult.toml $input --l 5 --mode bucketization --output "$DIR/b.parquet"
  # shellcheck disable=SC2086
  run "slicing l=5 chi [$name]" datasets/adult/adult.toml $input --l 5 --mode slicing --output "$DIR/s.parquet"
  # shellcheck disable=SC2086
  run "overlapping l=3 generalize 4,3,2,2,1,1,4,1 [$name]" datasets/adult/adult.toml $input --l 3 --mode overlapping --generalize 4,3,2,2,1,1,4,1 --output "$DIR/o.parquet"
  # shellcheck disable=SC2086
  run "overlapping l=5 distinct [$name]" datasets/adult/adult.toml $input --l 5 --mode overlapping --diversity distinct --output "$DIR/od.parquet"
  # shellcheck disable=SC2086
  run "overlapping l=5 raw [$name]" datasets/adult/adult.toml $input --l 5 --mode overlapping --output "$DIR/o5.parquet"
done
