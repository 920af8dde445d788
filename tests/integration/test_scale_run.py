"""`gatebench scale` and `gatebench change-under-load` end to end at small sizes (10 and 100
routes, seconds of load): real gateways, real Gatling; the run's folder, the store and the
read API hold what the report shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatebench.cli import main
from gatebench.core.renderers import get_renderer
from gatebench.store import open_store
from paths import EXAMPLES
from webapp import read_client

pytestmark = pytest.mark.integration

SPEC = str(EXAMPLES / "auction" / "openapi.yaml")
QUICK = ["--rate", "100", "--warmup", "1"]


def _needs(*gateways: str) -> None:
    for gateway in gateways:
        reason = get_renderer(gateway).available_here()
        if reason is not None:
            pytest.skip(reason)


def _only_run(results: Path) -> Path:
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def test_gatebench_scale_measures_every_size_and_stores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _needs("nginx", "haproxy")
    code = main(
        [
            "scale",
            SPEC,
            "--routes",
            "10,100",
            "--gateways",
            "nginx,haproxy",
            "--duration",
            "2",
            *QUICK,
            "--results",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    run_dir = _only_run(tmp_path)
    document = json.loads((run_dir / "scale.json").read_text())
    assert document["kind"] == "scale" and document["format"] == "gatebench-scale/1"
    points = {(p["gateway"], p["routes"]): p for p in document["points"]}
    assert set(points) == {("haproxy", 10), ("haproxy", 100), ("nginx", 10), ("nginx", 100)}
    for point in points.values():
        assert point["problem"] == ""
        assert point["start_s"] > 0 and point["rss_idle_mb"] > 1
        assert set(point["latency"]) == {"start", "middle", "end"}
        assert all(
            190 <= lat["requests"] <= 201 and lat["ko"] == 0 for lat in point["latency"].values()
        )
    assert points[("nginx", 100)]["config_bytes"] > points[("nginx", 10)]["config_bytes"]
    html = (run_dir / "scale.html").read_text()
    assert 'id="mem-nginx"' in html and 'id="p99-haproxy"' in html
    printed = [line.split()[:2] for line in out.splitlines() if line.startswith("  ")]
    assert [r for r in printed if r[0] in ("haproxy", "nginx")] == [
        ["haproxy", "10"],
        ["haproxy", "100"],
        ["nginx", "10"],
        ["nginx", "100"],
    ]  # the table printed at the end, a row per gateway and size
    with open_store(str(tmp_path / "gatebench.sqlite")) as store:
        run = store.get_run(run_dir.name)
        assert run is not None and str(run.status) == "done"
        assert run.plan["kind"] == "scale" and run.plan["sizes"] == [10, 100]
        assert set(store.results(run.run_id, "scale")) == {
            "haproxy@10",
            "haproxy@100",
            "nginx@10",
            "nginx@100",
        }
        served = read_client(store).get(f"/runs/{run.run_id}/scale").get_json()
        assert served["points"] == document["points"]
        summary = read_client(store).get(f"/runs/{run.run_id}").get_json()["run"]
        assert summary["kind"] == "scale"


def test_gatebench_change_under_load_records_each_gateways_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _needs("haproxy", "caddy")
    code = main(
        [
            "change-under-load",
            SPEC,
            "--routes",
            "10",
            "--add",
            "90",
            "--gateways",
            "haproxy,caddy",
            "--duration",
            "3",
            "--change-after",
            "1",
            "--window",
            "1.5",
            *QUICK,
            "--results",
            str(tmp_path),
        ]
    )
    assert code == 0, capsys.readouterr()
    run_dir = _only_run(tmp_path)
    changes = {c["gateway"]: c for c in json.loads((run_dir / "scale.json").read_text())["changes"]}
    assert set(changes) == {"haproxy", "caddy"}
    for change in changes.values():
        assert change["routes_before"] == 10 and change["routes_added"] == 90
        assert change["all_new_routes_answered"] and len(change["new_routes_s"]) == 90
        assert change["failures"] == len(change["failed"])
    assert changes["haproxy"]["failures"] == 0  # the seamless reload
    assert changes["caddy"]["kind"] == "admin-api"
    lines = (run_dir / "change.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["key"] for line in lines) == ["caddy", "haproxy"]


def test_bad_sizes_are_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["scale", SPEC, "--routes", "100,10", "--results", str(tmp_path)])
    assert info.value.code == 2
    assert "sizes must increase; got 10 after 100" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
