#!/usr/bin/env bash
# `make test` after set-up: every test, in two stages (docs/development.md, "make test").
#
# 1. The cloud tier (the pipeline stand-ins: containers of the runner image, emulators,
#    functions served from their bundles) runs beside the tests that time nothing: the unit
#    and golden tiers, the corpus, and route and policy replay (answers compared byte for
#    byte). Most of the cloud tier's time goes to waiting (on containers, on markers in the
#    bucket, on timeouts it proves), so the two share the 2 cores without slowing each
#    other much. The side stage's output goes to .cache/test-logs/beside.log and is printed
#    when the cloud tier ends.
# 2. Then everything else alone: every test that measures load, latency, a distribution or
#    a timeout runs on an otherwise idle machine.
#
# Exit status: 0 only when every stage passed.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTEST=.venv/bin/pytest
LOGS=.cache/test-logs
mkdir -p "$LOGS"

CLOUD=(
  tests/integration/test_pipeline.py
  tests/integration/test_pipeline_deployed.py
  tests/integration/test_pipeline_identity.py
  tests/integration/test_pipeline_steps.py
  tests/integration/test_pipeline_vms.py
  tests/integration/test_cloud_deployed_vms.py
  tests/integration/test_cloud_streaming.py
  tests/integration/test_cloud_tester_tokens.py
  tests/integration/test_runner_image.py
  tests/integration/test_functions.py
  tests/integration/test_dashboard_functions.py
  tests/integration/test_frontend_gcp.py
  tests/integration/test_frontend_gcp_functions.py
)
BESIDE=(
  tests/unit
  tests/golden
  tests/integration/test_corpus_read.py
  tests/integration/test_ingest_bounded.py
  tests/integration/test_corpus_render.py
  tests/integration/test_route_replay.py
  tests/integration/test_route_replay_boot.py
  tests/integration/test_policy_replay.py
)

ignore=()
for path in "${CLOUD[@]}" "${BESIDE[@]}"; do ignore+=("--ignore=$path"); done

started=$(date +%s)
echo "make test, stage 1: the cloud tier, beside it the tests that time nothing ($LOGS/beside.log)"
"$PYTEST" -p no:cacheprovider -q "${BESIDE[@]}" > "$LOGS/beside.log" 2>&1 &
beside=$!
"$PYTEST" -p no:cacheprovider --durations=15 "${CLOUD[@]}"
cloud_rc=$?
wait "$beside"
beside_rc=$?
echo "---- beside the cloud tier (exit $beside_rc):"
grep -vE '^[.sxF]+ +\[ *[0-9]+%\]$' "$LOGS/beside.log" | tail -n 60
echo "make test, stage 1 took $(( $(date +%s) - started )) s"

stage2=$(date +%s)
echo "make test, stage 2: everything else, alone"
"$PYTEST" -p no:cacheprovider --durations=30 tests "${ignore[@]}"
rest_rc=$?
echo "make test, stage 2 took $(( $(date +%s) - stage2 )) s; all tests $(( $(date +%s) - started )) s"
echo "make test: cloud tier exit $cloud_rc, beside it exit $beside_rc, the rest exit $rest_rc"
[ "$cloud_rc" -eq 0 ] && [ "$beside_rc" -eq 0 ] && [ "$rest_rc" -eq 0 ]
