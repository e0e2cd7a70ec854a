#!/usr/bin/env bash
# The optimal pick without enumeration (`anonymize --pick --require 'k>=5' --minimize glm`):
# 1. adult with ARX's hierarchies and ARX's 7 QIs (2160 nodes) at 0 % and 1 % suppression, whole
#    process including the verified CSV release; the report's `pick` says how many nodes were
#    evaluated (ARX 3.9's Flash: 86 and 292 nodes checked, 58 and 226 ms for its anonymize call).
# 2. generated wide tables of 1 M rows with 12, 16 and 24 QIs (`pbg generate wide`, seed 1).
# 3. PBG-EA 25 x 100 for {k, GLM} on the 16- and 24-QI tables (`timings.ms_per_evaluation`).
# Run from the repository root: bash benches/pick.sh   (GNU time gives the peak memory).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x target/release/pbg ] || cargo build --release
pbg=target/release/pbg
out=target/pick-bench
mkdir -p "$out"
run() {
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, peak %M KB" "$pbg" "$@" > "$out/report.json"
  python3 -c "import json; r=json.load(open('$out/report.json')); p=r['pick']; print('  node', r['node'], 'glm', r['indices']['glm'], 'k', r['indices']['k'], 'suppressed', r['suppressed'], '| evaluated', p['evaluated'], 'optimal', p['optimal'], 'glm_lower_bound', p['glm_lower_bound'], '|', p['note'])"
}
for limit in 0 1%; do
  for i in 1 2 3; do
    run "adult 7 QIs, k>=5, limit ${limit//%/ pct}" anonymize datasets/adult/adult-arx7.toml --pick \
      --require 'k>=5' --minimize glm --suppression-limit "$limit" --output "$out/adult.csv"
  done
done
for q in 12 16 24; do
  [ -f "$out/wide$q/wide.parquet" ] || $pbg generate wide --qis $q --rows 1000000 --seed 1 --output "$out/wide$q" >/dev/null
  run "wide $q QIs 1M rows, k>=5, limit 1 pct" anonymize "$out/wide$q/wide.toml" --pick \
    --require 'k>=5' --minimize glm --output "$out/wide$q.parquet"
done
for q in 16 24; do
  /usr/bin/time -f "PBG-EA 25x100 {k,glm}, wide $q QIs 1M rows: %e s wall, peak %M KB" \
    "$pbg" search "$out/wide$q/wide.toml" --objectives k,glm --algorithm ea --seed 1 > "$out/ea.json"
  python3 -c "import json; r=json.load(open('$out/ea.json')); print('  evaluations', r['evaluations'], 'front', len(r['front']), r['timings'])"
done
