#!/usr/bin/env bash
# Terraform tooling that runs offline: tflint (with its bundled terraform ruleset) and hclfmt
# (canonical HCL formatting), built from the Go module proxy into .cache/bin. terraform itself
# cannot be installed here and no provider can be downloaded, so `terraform validate` is not
# possible; tests/unit/test_terraform*.py check the structure with python-hcl2 instead.
# tflint takes ~2.5 min to build the first time; afterwards this is a no-op.
set -euo pipefail
cd "$(dirname "$0")/../.."
TFLINT_VERSION=v0.64.0
HCLFMT_VERSION=v2.25.0
bin=$PWD/.cache/bin
stamp=$bin/.terraform-tools
want="tflint@$TFLINT_VERSION hclfmt@$HCLFMT_VERSION"
if [ -x "$bin/tflint" ] && [ -x "$bin/hclfmt" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "setup: 'go' is missing (Go 1.22+ builds tflint and hclfmt)" >&2; exit 1; }
echo "setup: building tflint $TFLINT_VERSION and hclfmt $HCLFMT_VERSION (go install, ~3 min the first time)"
mkdir -p "$bin"
# Downloads and build cache stay inside the checkout; -modcacherw keeps `make clean` able to
# delete the module cache (Go makes it read-only by default).
export GOBIN=$bin GOMODCACHE=$PWD/.cache/go/mod GOFLAGS=-modcacherw CGO_ENABLED=0
go install "github.com/hashicorp/hcl/v2/cmd/hclfmt@$HCLFMT_VERSION"
go install "github.com/terraform-linters/tflint@$TFLINT_VERSION"
echo "$want" > "$stamp"
