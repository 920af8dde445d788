"""A capacity probe split over several load generators, each in a network namespace of its own
(gatebench.local._netns), against the real mock backend: the rate is split by the rule every phase is
split by, the testers start together, and the records merge exactly (every request counted,
percentiles over all of them, the schedules summed). Nothing of the namespaces is left behind.

Then ``gatebench capacity --testers 2`` through a gateway: the run's every probe split the same
way.

Runs under ``flock /work/locks/netns.lock`` on shared machines (fixed tester addresses)."""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, items

from gatebench.core.loadlog import read_loadlog
from gatebench.core.testers import split_counts
from gatebench.kinds.capacity import ProbeRequest, late_threshold_ms, stored_capacity
from gatebench.local._netns import LoadHostNetwork, leftovers, namespaces_problem
from gatebench.local.backends import start_plan_backend
from gatebench.local.probing import Prober
from gatebench.local.procs import Supervisor

pytestmark = pytest.mark.skipif(namespaces_problem() is not None, reason=str(namespaces_problem()))


def _served(base_url: str) -> int:
    with urllib.request.urlopen(f"{base_url}/__gatebench__/stats", timeout=5) as r:
        count: int = json.load(r)["requests"]
        return count


def test_a_probe_over_three_testers_merges_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    api, plan = items(gateways=[], backend={"mock": {"latency": "2ms"}})
    settings = plan.capacity_settings()["read"]
    request = ProbeRequest(301.0, "grow", 0.5, 1.0)
    with Supervisor() as supervisor, LoadHostNetwork(3) as network:
        _, base_url, reset_url = start_plan_backend(supervisor, plan, api, tmp_path)
        prober = Prober(
            plan,
            api,
            "read",
            "baseline",
            base_url,
            supervisor,
            tmp_path,
            late_threshold_ms(settings.objective),
            reset_url=reset_url,
            hosts=network.hosts,
        )
        metrics = prober(request)
        served = _served(base_url)
        tag = network.tag
    assert leftovers(tag) == []
    # 301/s for 1 s: 301 arrivals split 101 + 100 + 100, each tester over the same second
    assert (metrics.scheduled, metrics.sent, metrics.dropped, metrics.testers) == (301, 301, 0, 3)
    assert metrics.requests == 301 and metrics.ko == 0
    # the backend saw every request of the probe, warm-up included (each reset it first)
    assert served == 301 + round(301 * 0.5)
    # each tester's own records: its share of the measured phase, from its own namespace
    shares = []
    for t in range(3):
        log = read_loadlog(tmp_path / "probe-001" / f"probe-001-t{t}.records")
        shares.append(log.phases[1].schedule.scheduled)
    assert shares == list(split_counts(301, 3))
    # latency from the intended start: at least the 2 ms hold, and the merged percentile is a
    # latency some tester recorded
    assert metrics.latency["p50"] >= 2.0
    assert metrics.lag_p50_ms < 50.0


@pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx")
def test_gatebench_capacity_with_two_testers_searches_through_a_gateway(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gatebench capacity --testers 2``: every probe of the run (nginx and the baseline) split
    over two generators in namespaces of their own; each knee is below the backend's known
    capacity (4 × 10 ms = 400 req/s) and nothing of the namespaces is left."""
    import yaml

    from gatebench.cli import main
    from gatebench.store import SqliteStore

    section = {
        "gateways": ["nginx"],
        "baseline": True,
        "backend": {"mock": {"latency": "10ms", "workers": 4}},
        "capacity": {
            "objective": {"p50": "25ms"},
            "start_rate": "150/s",
            "warmup": "0.2s",
            "probe": "0.5s",
            "confirm": "0.5s",
            "precision": "20%",
            "repetitions": 1,
        },
        "workloads": [
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "injection": {"constant_rate": {"rate": 100, "duration": "1s"}},
            }
        ],
    }
    spec = yaml.safe_load(ITEMS.read_text(encoding="utf-8"))
    spec["x-gatebench"] = section
    path = tmp_path / "items.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    results = tmp_path / "results"
    before = set(leftovers())
    code = main(
        ["capacity", str(path), "--results", str(results), "--testers", "2", "--no-ceiling"]
    )
    out, err = capsys.readouterr()
    assert set(leftovers()) <= before
    with SqliteStore(results / "gatebench.sqlite") as store:
        (run,) = store.list_runs()
        stored = stored_capacity(store, run.run_id)
    assert code == 0 and str(run.status) == "done", (out, err)
    assert run.environment["testers"] == 2
    assert stored is not None
    (endpoint,) = stored["endpoints"]
    for s in endpoint["summaries"]:
        assert 0 < s["estimate"] <= 400 * 1.2, s
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    records = sorted(p.name for p in (run_dir / "probes" / "read" / "nginx").rglob("*-t1.records"))
    assert records, "the second tester wrote no records"
