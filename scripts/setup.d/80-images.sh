#!/usr/bin/env bash
# The base images cloudbuild/runner.Dockerfile builds FROM, as local STAND-INS: every image
# registry is unreachable here, so each FROM name gets an image built locally under that exact
# name (tests/cloud/images/*.Containerfile say what each one is and what it cannot show), and the
# runner image is built with --pull=never (tests/cloud/image.py). podman, runc and mmdebstrap
# come from 10-apt.sh; images live in .cache/podman (scripts/podman.sh).
#
#   gatebench-standin/bookworm   Debian bookworm (minbase + ca-certificates) from this machine's
#                                apt sources, by mmdebstrap (~75 s), trusting the extra CA
#                                certificates this machine trusts (pip, Maven and Go need them)
#   python:*, golang:*           built from it; golang gets the Go toolchain of its tag's version
#   hashicorp/terraform:*        this machine's terraform binary at /bin/terraform
#
# Idempotent: each image carries a label with the hash of its recipe and is rebuilt only when
# the recipe changes (a new FROM tag, Containerfile, certificate or terraform binary).
set -euo pipefail
cd "$(dirname "$0")/../.."
podman=scripts/podman.sh
images=tests/cloud/images
work=.cache/images
mkdir -p "$work"

for tool in podman mmdebstrap runc; do
  command -v "$tool" >/dev/null || { echo "setup: '$tool' is missing (scripts/setup.d/10-apt.sh installs it)" >&2; exit 1; }
done

recipe_of() { # the label value of an existing image, or nothing
  "$podman" image inspect --format '{{index .Labels "gatebench.recipe"}}' "$1" 2>/dev/null || true
}

sources=/etc/apt/sources.list.d/debian.sources
[ -f "$sources" ] || sources=/etc/apt/sources.list
certs=$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null | sha256sum | cut -c1-16)
base=localhost/gatebench-standin/bookworm:latest
want=$( (echo bookworm-minbase-ca-certificates-v1 "$certs"; cat "$sources") | sha256sum | cut -c1-16)
if [ "$(recipe_of "$base")" != "$want" ]; then
  echo "setup: Debian bookworm base image from $sources (mmdebstrap, ~75 s)"
  rm -f "$work/bookworm.tar"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --setup-hook='mkdir -p "$1/usr/local/share/ca-certificates"; cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/" 2>/dev/null || true' \
    bookworm "$work/bookworm.tar" "$sources"
  "$podman" import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL gatebench.recipe=$want" \
    --change 'LABEL gatebench.stand-in="Debian bookworm minbase from this machine'"'"'s apt sources (mmdebstrap)"' \
    --change 'CMD ["bash"]' \
    "$work/bookworm.tar" "$base" >/dev/null
  rm -f "$work/bookworm.tar"
fi

build() { # NAME CONTAINERFILE CONTEXT RECIPE STAND-IN-TEXT
  if [ "$(recipe_of "$1")" = "$4" ]; then return; fi
  echo "setup: stand-in image $1"
  "$podman" build --quiet --pull=never --file "$2" --label "gatebench.recipe=$4" \
    --label "gatebench.stand-in=$5" --tag "$1" "$3" >/dev/null
}

recipe() { (echo "$@"; recipe_of "$base") | sha256sum | cut -c1-16; }

mapfile -t froms < <(awk 'toupper($1) == "FROM" { print $2 }' cloudbuild/runner.Dockerfile)
for ref in "${froms[@]}"; do
  case "$ref" in
    python:*)
      name=docker.io/library/$ref
      build "$name" "$images/python.Containerfile" "$images" \
        "$(recipe "$ref" "$(cat "$images/python.Containerfile")")" \
        "STAND-IN for $ref: Debian bookworm's Python 3 (3.11) and pip"
      ;;
    golang:*)
      name=docker.io/library/$ref
      version=${ref#golang:}; version=${version%%-*}
      command -v go >/dev/null || { echo "setup: 'go' is missing (it fetches Go $version for the $ref stand-in)" >&2; exit 1; }
      toolchain=$PWD/.cache/go/mod/golang.org/toolchain@v0.0.1-go$version.linux-amd64
      if [ ! -x "$toolchain/bin/go" ]; then
        echo "setup: Go $version toolchain from the Go module proxy"
        GOTOOLCHAIN=go$version GOMODCACHE=$PWD/.cache/go/mod GOFLAGS=-modcacherw go version >/dev/null
      fi
      build "$name" "$PWD/$images/golang.Containerfile" "$toolchain" \
        "$(recipe "$ref" "$(cat "$images/golang.Containerfile")")" \
        "STAND-IN for $ref: Debian bookworm with Go $version from the Go module proxy"
      ;;
    hashicorp/terraform:*)
      name=docker.io/$ref
      binary=$(command -v terraform) || { echo "setup: 'terraform' is missing (the $ref stand-in copies it; docs/cloud.md, Deploy)" >&2; exit 1; }
      tf_version=$(terraform version -json 2>/dev/null | sed -nE 's/.*"terraform_version": *"([^"]+)".*/\1/p')
      context=$work/terraform
      rm -rf "$context"; mkdir -p "$context"; cp "$binary" "$context/terraform"
      build "$name" "$PWD/$images/terraform.Containerfile" "$context" \
        "$(recipe "$ref" "$(cat "$images/terraform.Containerfile")" "$(sha256sum < "$binary")")" \
        "STAND-IN for $ref: this machine's terraform $tf_version at /bin/terraform"
      rm -rf "$context"
      ;;
    *)
      echo "setup: cloudbuild/runner.Dockerfile builds FROM $ref, which has no stand-in recipe in $images" >&2
      exit 1
      ;;
  esac
done
