#!/usr/bin/env bash
# Times `make setup-demo` (what `make demo` installs) and `make setup-all` (what `make test`
# installs) as close to a fresh machine as one machine allows: each in its own fresh clone of
# this checkout's HEAD, with every download and build cache empty — pip (PIP_NO_CACHE_DIR), Go
# (GOCACHE; the module cache is the clone's .cache/go), Maven (an empty repository for Gatling
# and the JVM gateways alike), npm (an empty cache for the Node tools and the corpus).
# Not measured: Debian packages. They are already installed on the measuring machine (apt-get
# is a no-op there), so their download and unpacking are not in the figures.
# Usage: scripts/measure-setup.sh [demo|all]...   (default: demo all). One line per target.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(demo all)
tmp=$(mktemp -d /tmp/gatebench-measure.XXXXXX)
cleanup() { chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
branch=$(git -C "$repo" rev-parse --abbrev-ref HEAD)
for target in "${targets[@]}"; do
  dir=$tmp/$target
  git clone -q --branch "$branch" "$repo" "$dir/clone"
  started=$(date +%s)
  (
    cd "$dir/clone"
    export PIP_NO_CACHE_DIR=1 GOCACHE=$dir/go-build npm_config_cache=$dir/npm \
      MAVEN_OPTS="-Dmaven.repo.local=$dir/m2"
    make "setup-$target" >"$dir/setup.log" 2>&1
  ) || { cat "$dir/setup.log" >&2; echo "make setup-$target failed" >&2; exit 1; }
  echo "make setup-$target: $(( $(date +%s) - started )) s from a fresh clone with empty caches ($(git -C "$dir/clone" rev-parse --short HEAD), $(nproc) cores)"
done
