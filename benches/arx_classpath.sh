#!/usr/bin/env bash
# Builds the ARX 3.9.2 classpath that benches/arx_pick.sh and benches/csv_etl.sh take in ARX_CP:
# ARX's `src/main` compiled with javac against the jars of its repository (`lib/ant`), its
# resource files copied beside the classes. Prints the classpath on its last line:
#
#   export ARX_CP=$(bash benches/arx_classpath.sh | tail -1)
#
# Needs git (or ARX_SRC naming a checkout of tag v3.9.2), javac and unzip; everything goes under
# target/arx (nothing is committed). Where a copy of the repository lacks a jar that only code
# off the anonymize path needs (pdfbox-app for the PDF certificate, hadoop-core for the
# logistic-regression classifier), javac gets a compile-only declaration of the one type it
# names instead (never on the run classpath), and the certificate's two PDF classes are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/target/arx"
src="${ARX_SRC:-$root/src}"
mkdir -p "$root"
if [ ! -d "$src/src/main" ]; then
  git clone --quiet --depth 1 --branch v3.9.2 https://github.com/arx-deidentifier/arx.git "$src"
fi
# The jars that open (a checkout may hold pointers instead of large files); not the GUI's.
jars=()
while IFS= read -r jar; do
  unzip -tq "$jar" >/dev/null 2>&1 && jars+=("$jar")
done < <(find "$src/lib/ant" -name '*.jar' ! -path '*swt*' ! -path '*eclipse*' ! -path '*junit*' | sort)
has() { printf '%s\n' "${jars[@]}" | grep -q "/$1"; }
stubs="$root/stubs"
rm -rf "$stubs" "$root/classes"
mkdir -p "$stubs/src" "$stubs/classes" "$root/classes"
sources="$root/sources.txt"
find "$src/src/main" -name '*.java' | sort > "$sources"
if ! has 'pdfbox-app'; then
  mkdir -p "$stubs/src/org/apache/pdfbox/pdmodel/font"
  echo 'package org.apache.pdfbox.pdmodel.font; public abstract class PDFont {}' \
    > "$stubs/src/org/apache/pdfbox/pdmodel/font/PDFont.java"
  grep -v -e '/certificate/ARXCertificate.java$' -e '/certificate/resources/Watermark.java$' \
    "$sources" > "$sources.kept"
  mv "$sources.kept" "$sources"
fi
if ! has 'hadoop-core'; then
  mkdir -p "$stubs/src/org/apache/hadoop/io"
  printf '%s\n' 'package org.apache.hadoop.io;' 'public interface Writable {' \
    '  void write(java.io.DataOutput out) throws java.io.IOException;' \
    '  void readFields(java.io.DataInput in) throws java.io.IOException;' '}' \
    > "$stubs/src/org/apache/hadoop/io/Writable.java"
fi
libs=$(IFS=:; echo "${jars[*]}")
if [ -n "$(find "$stubs/src" -name '*.java')" ]; then
  javac -nowarn -d "$stubs/classes" $(find "$stubs/src" -name '*.java')
fi
javac -nowarn -encoding UTF-8 -cp "$libs:$stubs/classes" -d "$root/classes" @"$sources" 2>&1 \
  | grep -v '^Note:' || true
# Resources (watermarks, the risk model's tables) as the classes expect them.
(cd "$src/src/main" && find . -type f ! -name '*.java' -exec cp --parents {} "$root/classes" \;)
[ -f "$root/classes/org/deidentifier/arx/ARXAnonymizer.class" ] || { echo "ARX did not compile" >&2; exit 1; }
echo "$root/classes:$libs"
