#!/usr/bin/env bash
# The project's virtualenv in .venv with the pinned lock and gatebench itself (editable).
# GATEBENCH_SETUP_PROFILE=demo (scripts/setup.sh --demo): gatebench's runtime dependencies
# and its PyPI gateways only (Envoy), at the lock's versions; a later full setup adds the rest.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=${PYTHON:-python3}
profile=${GATEBENCH_SETUP_PROFILE:-all}
stamp=.venv/.gatebench-stamp
want=$(cat pyproject.toml requirements/dev.lock | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ -x .venv/bin/gatebench ]; then
  have=$(cat "$stamp")
  # A full environment serves the demo too; a demo one does not serve the tests.
  if [ "$have" = "$want" ] || { [ "$profile" = demo ] && [ "$have" = "$want demo" ]; }; then
    exit 0
  fi
fi
echo "setup: python virtualenv (.venv, $profile)"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip==26.3
if [ "$profile" = demo ]; then
  .venv/bin/python -m pip install -q -c requirements/dev.lock setuptools wheel
  .venv/bin/python -m pip install -q -c requirements/dev.lock --no-build-isolation -e '.[gateways]'
  echo "$want demo" > "$stamp"
  exit 0
fi
.venv/bin/python -m pip install -q -r requirements/dev.lock
.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
echo "$want" > "$stamp"
