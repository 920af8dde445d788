#!/usr/bin/env bash
# The project's virtualenv in .venv with the pinned lock and gatebench itself (editable).
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
stamp=.venv/.gatebench-stamp
want=$(cat pyproject.toml requirements/dev.lock | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/gatebench ]; then
  exit 0
fi
echo "setup: python virtualenv (.venv)"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip==26.3
.venv/bin/python -m pip install -q -r requirements/dev.lock
.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
echo "$want" > "$stamp"
