#!/usr/bin/env bash
# Node tools the tests use, from tools/node/package-lock.json (exact versions):
# @firestore-emulator/server (the Firestore leg of the store contract) and playwright-core
# (drives Debian's Chromium for the browser tests; it never downloads a browser) and drafter.js
# (Apiary's API Blueprint parser, run by gatebench.core.spec._apib).
# Installed into tools/node/node_modules (gitignored); npm's cache lives in .cache/npm.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=tools/node
stamp=$dir/node_modules/.gatebench-stamp
want=$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "setup: 'node' and 'npm' are missing: install Node.js 20 or newer (with npm) for tools/node" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || {
  echo "setup: Node.js $(node --version) is too old: playwright-core needs Node.js 20 or newer" >&2; exit 1; }
echo "setup: node tools (npm ci in $dir)"
# --ignore-scripts: no package needs an install script (protobufjs' only checks versions),
# and playwright-core must not fetch a browser.
(cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund \
  --loglevel=error --cache "$PWD/../../.cache/npm" >/dev/null)
echo "$want" > "$stamp"
