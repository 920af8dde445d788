#!/usr/bin/env bash
# Builds the two JVM gateways, Spring Cloud Gateway and Zuul 1 (Maven projects in gateways/),
# into runnable jars in .cache/jvm-gateways/<name>.jar. A jar is rebuilt only when its
# pom.xml or sources change (a hash of them is kept beside it). Maven resolves into ~/.m2;
# every version is pinned in the poms. Needs JDK 17 and Maven (apt-packages.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.cache/jvm-gateways
for name in spring-cloud-gateway zuul; do
  src=gateways/$name
  jar=$out/$name.jar
  stamp=$out/.$name.sha
  want=$(cd "$src" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
  if [ -f "$jar" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then continue; fi
  for tool in java mvn; do
    command -v "$tool" >/dev/null || { echo "setup: '$tool' is missing (JDK 17 and Maven build gateways/$name)" >&2; exit 1; }
  done
  echo "setup: building $name (mvn package in $src; the first build downloads its dependencies into ~/.m2)"
  started=$(date +%s)
  log=$out/build/$name.log
  mkdir -p "$out/build"
  if ! (cd "$src" && mvn -q -B -DskipTests package) >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup: building $name failed (log: $log)" >&2
    exit 1
  fi
  # The poms put their build directory in $out/build/<name> (gatebench.buildDirectory).
  cp "$out/build/$name/$name.jar" "$jar.tmp"
  mv "$jar.tmp" "$jar"
  echo "$want" > "$stamp"
  echo "setup: $name built in $(( $(date +%s) - started )) s"
done
