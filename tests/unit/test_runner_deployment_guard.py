"""A local run never goes ahead without the deployment its plan asks for (TLS, replicas, a
fault): it is refused before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatebench.errors import RunError
from gatebench.plan import build_plan
from gatebench.runner import RunOptions, run_benchmark
from plans import auction_api, section


def test_a_plan_with_tls_and_replicas_is_refused_before_anything_starts(tmp_path: Path) -> None:
    api = auction_api()
    plan = build_plan(section(tls=True, backend={"replicas": 2}), api)
    with pytest.raises(RunError, match=r"cannot apply tls, backend\.replicas of the plan"):
        run_benchmark(
            api,
            plan,
            spec_uri="auction",
            spec_sha256="0" * 64,
            options=RunOptions(results_dir=tmp_path / "results"),
        )
    assert not (tmp_path / "results").exists()
