#!/usr/bin/env bash
# podman with gatebench's settings and storage: scripts/podman/containers.conf, images and
# layers under the checkout's .cache/podman (ignored by git, kept between test sessions, removed
# by `make clean`). scripts/setup.d/80-images.sh and the tests (tests/cloud/image.py) call podman
# only through this script.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF="$root/scripts/podman/containers.conf"
store=$root/.cache/podman
mkdir -p "$store/storage" "$store/run" "$store/tmp"
export TMPDIR="$store/tmp"
exec podman --root "$store/storage" --runroot "$store/run" --storage-driver overlay "$@"
