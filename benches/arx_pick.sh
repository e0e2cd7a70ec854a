#!/usr/bin/env bash
# ARX's side of the pick comparison (issue 15): ARX's Flash with k-anonymity (k = 5) and its Loss
# metric on adult with ARX's hierarchies and 7 QIs, at 0 % and 1 % suppression, printing for every
# run the anonymize call's time, the optimum (in pbg's QI order, to compare with
# `bash benches/pick.sh`) and the nodes checked. Runs in one JVM: the first calls include the JIT.
#
# Needs Java and a classpath holding ARX 3.9 and its libraries in ARX_CP: the jars of an ARX
# release, or ARX's `src/main` compiled from its repository (tag v3.9.2) by
#   export ARX_CP=$(bash benches/arx_classpath.sh | tail -1)
# ARX_DATA names another directory holding adult.csv and arx-hierarchies/ (benches/csv_etl.sh
# passes adult x 100); ARX_OUTPUT saves the last run's output there as `;` CSV, so that a timing of
# the whole `java` process includes writing the release, as pbg's does.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ARX_CP:?set ARX_CP to a classpath with ARX 3.9 and its libraries}"
runs="${RUNS:-21}"
out=target/arx-bench
mkdir -p "$out"
javac -nowarn -cp "$ARX_CP" -d "$out" benches/arx/PickBench.java
for suppression in 0.0 0.01; do
  java -cp "$ARX_CP:$out" PickBench "${ARX_DATA:-datasets/adult}" "$suppression" "$runs" ${ARX_OUTPUT:+"$ARX_OUTPUT"}
done
