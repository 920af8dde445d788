#!/usr/bin/env bash
# Installs everything gatebench needs on a fresh Debian 12 machine, idempotently.
# Each step lives in scripts/setup.d/NN-name.sh and is skipped when already done.
# Usage: scripts/setup.sh [step-name ...]   (no argument: every step)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
for script in scripts/setup.d/*.sh; do
  name=$(basename "$script" .sh); name=${name#*-}
  if [ ${#steps[@]} -gt 0 ]; then
    wanted=0
    for s in "${steps[@]}"; do [ "$s" = "$name" ] && wanted=1; done
    [ $wanted = 1 ] || continue
  fi
  bash "$script"
done
