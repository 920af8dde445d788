#!/usr/bin/env bash
# fake-gcs-server, a Cloud Storage emulator that takes V4 signed-URL PUTs and keeps their
# x-goog-meta-* headers as the object's custom metadata (gcp-storage-emulator drops them):
# tests/integration/test_dashboard_functions.py PUTs the dashboard's signed upload to it.
# Built from the Go module proxy into .cache/bin (~1.5 min the first time); then a no-op.
set -euo pipefail
cd "$(dirname "$0")/../.."
FAKE_GCS_VERSION=v1.56.1
bin=$PWD/.cache/bin
stamp=$bin/.fake-gcs
want="fake-gcs-server@$FAKE_GCS_VERSION"
if [ -x "$bin/fake-gcs-server" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "setup: 'go' is missing (Go 1.22+ builds fake-gcs-server)" >&2; exit 1; }
echo "setup: building fake-gcs-server $FAKE_GCS_VERSION (go install, ~1.5 min the first time)"
mkdir -p "$bin"
# Downloads and build cache stay inside the checkout; -modcacherw keeps `make clean` able to
# delete the module cache (Go makes it read-only by default).
export GOBIN=$bin GOMODCACHE=$PWD/.cache/go/mod GOFLAGS=-modcacherw CGO_ENABLED=0
go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION"
echo "$want" > "$stamp"
