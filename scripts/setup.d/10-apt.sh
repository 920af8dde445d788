#!/usr/bin/env bash
# Debian packages: the gateways that run here as native processes, wrk, and Chromium for
# the browser tests. Services are never started by the packages (policy-rc.d), because
# gatebench runs every gateway itself on loopback with its own config.
# GATEBENCH_SETUP_PROFILE=demo (scripts/setup.sh --demo): only the lines marked `demo`.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${GATEBENCH_SETUP_PROFILE:-all}" = demo ]; then
  mapfile -t wanted < <(grep -v '^\s*#' scripts/setup.d/apt-packages.txt | awk 'NF && $2 == "demo" {print $1}')
else
  mapfile -t wanted < <(grep -v '^\s*#' scripts/setup.d/apt-packages.txt | awk 'NF {print $1}')
fi
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: apt-get install ${missing[*]}"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy"
  added_policy=1
fi
trap '[ $added_policy = 1 ] && $sudo rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || true
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
