"""A quick run with the AGE paper's gateways a user installs from their vendors, KrakenD and
Tyk: where one is installed (PATH, GATEBENCH_KRAKEND_BIN / GATEBENCH_TYK_BIN) it is measured
as a local process (Tyk with a Redis the run starts on loopback and stops), where it is not
the run says "not installed here" with how to install it, and measures the rest. Nothing is
faked: the branch taken depends on what this machine has, and each one asserts what the user
would see."""

from __future__ import annotations

from pathlib import Path

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, RecordingSupervisor, assert_torn_down, items

from gatebench.core.model import RunStatus
from gatebench.core.renderers import get_renderer
from gatebench.local.runner import RunOptions, run_benchmark

VENDOR = ("krakend", "tyk")


def test_a_quick_run_measures_krakend_and_tyk_where_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "quick-run-token")
    api, plan = items(gateways=[*VENDOR, "nginx"], repetitions=1)
    supervisor = RecordingSupervisor()
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="3" * 64,
        options=RunOptions(results_dir=tmp_path, seed=5, quick=True, ceiling=False),
        display=lambda p: None,
        supervisor_factory=lambda: supervisor,
    )
    measured = {m.target for m in outcome.measurements}
    assert {"nginx", "baseline"} <= measured
    installed = [g for g in VENDOR if get_renderer(g).available_here() is None]
    for gateway in VENDOR:
        if gateway in installed:
            assert gateway in measured, outcome.record.target_errors.get(gateway)
            assert gateway not in outcome.record.target_errors
            mine = [m for m in outcome.measurements if m.target == gateway]
            assert all(m.ok > 0 and m.ko == 0 for m in mine), [(m.ok, m.ko) for m in mine]
        else:
            assert gateway not in measured
            reason = outcome.record.target_errors[gateway]
            assert f"{gateway}: '{gateway}' is not installed here; install " in reason
            assert (outcome.run_dir / "gateways" / gateway).is_dir()  # rendered all the same
    if "tyk" in installed:
        redis = supervisor.named("tyk's redis")
        assert redis.returncode is not None, "Tyk's Redis outlived the run"
        assert "--bind" in redis.argv and "127.0.0.1" in redis.argv
    expected = RunStatus.DONE if len(installed) == len(VENDOR) else RunStatus.PARTIAL
    assert outcome.record.status == expected
    assert_torn_down(outcome.run_dir)
