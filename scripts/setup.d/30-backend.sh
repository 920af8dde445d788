#!/usr/bin/env bash
# Builds the Go backend (backend/) into .cache/bin/gatebench-backend when its sources change.
# Standard library only: no module download.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.cache/bin/gatebench-backend
stamp=.cache/bin/.gatebench-backend.sha
want=$(cat backend/go.mod backend/*.go | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
command -v go >/dev/null || { echo "setup: 'go' is missing (Go 1.22+ is needed to build backend/)" >&2; exit 1; }
echo "setup: building backend/ (go build)"
mkdir -p .cache/bin
(cd backend && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "../$out" .)
echo "$want" > "$stamp"
