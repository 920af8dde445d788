#!/usr/bin/env bash
# Gatling (gatling/ Maven project): resolves the test classpath once into
# .cache/gatling/classpath.txt (Maven repository in .cache/m2) and compiles the generic
# simulation into gatling/target/test-classes. gatebench then starts java directly with them.
# A no-op when the pom, the sources and the resources are unchanged.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.cache/gatling
stamp=$out/stamp
want=$(cat gatling/pom.xml $(find gatling/src -type f | sort) | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -s "$out/classpath.txt" ] \
   && [ -f gatling/target/test-classes/gatebench/GenericSimulation.class ]; then
  exit 0
fi
command -v mvn >/dev/null || { echo "setup: 'mvn' is missing (Debian package maven)" >&2; exit 1; }
command -v java >/dev/null || { echo "setup: 'java' is missing (JDK 17)" >&2; exit 1; }
echo "setup: Gatling (mvn dependency:build-classpath, test-compile)"
mkdir -p "$out"
repo="$PWD/.cache/m2"
mvn -q -B -Dmaven.repo.local="$repo" -f gatling/pom.xml \
  dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$PWD/$out/classpath.txt"
mvn -q -B -Dmaven.repo.local="$repo" -f gatling/pom.xml test-compile
echo "$want" > "$stamp"
