#!/usr/bin/env bash
# Installs everything gatebench needs on a fresh Debian 12 machine, idempotently.
# Each step lives in scripts/setup.d/NN-name.sh and is skipped when already done.
# Usage: scripts/setup.sh [step-name ...]   (no argument: every step, what the tests need)
#        scripts/setup.sh --demo            (only what `make demo` needs: DEMO_STEPS, the Debian
#                                            packages marked `demo` and the runtime Python packages)
set -euo pipefail
cd "$(dirname "$0")/.."
DEMO_STEPS=(apt python backend gatling)
steps=("$@")
if [ "${1:-}" = "--demo" ]; then
  export GATEBENCH_SETUP_PROFILE=demo
  steps=("${DEMO_STEPS[@]}")
fi
for script in scripts/setup.d/*.sh; do
  name=$(basename "$script" .sh); name=${name#*-}
  if [ ${#steps[@]} -gt 0 ]; then
    wanted=0
    for s in "${steps[@]}"; do [ "$s" = "$name" ] && wanted=1; done
    [ $wanted = 1 ] || continue
  fi
  bash "$script"
done
