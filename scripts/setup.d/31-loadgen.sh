#!/usr/bin/env bash
# Builds the Go load generator (loadgen/, the capacity search's open-model engine) into
# .cache/bin/gatebench-loadgen when its sources change. Standard library only: no module download.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.cache/bin/gatebench-loadgen
stamp=.cache/bin/.gatebench-loadgen.sha
want=$(cat loadgen/go.mod loadgen/*.go | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
command -v go >/dev/null || { echo "setup: 'go' is missing (Go 1.22+ is needed to build loadgen/)" >&2; exit 1; }
echo "setup: building loadgen/ (go build)"
mkdir -p .cache/bin
(cd loadgen && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "../$out" .)
echo "$want" > "$stamp"
