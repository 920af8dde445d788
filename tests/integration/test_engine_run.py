"""A short real run through nginx and the baseline: Gatling, the mock backend, real counts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, assert_torn_down, items

from gatebench.core.capabilities import ENGINE_WARMUP_S
from gatebench.core.model import RunStatus
from gatebench.core.thresholds import evaluate, failures
from gatebench.core.workload import Phase
from gatebench.local.runner import RunOptions, run_benchmark
from gatebench.run import Progress
from gatebench.store import open_store

SECRET = "tok-7f3a9c1e-never-stored"


def test_short_run_counts_match_the_workload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, SECRET)
    api, plan = items()
    seen_steps: list[str] = []
    seen_phases: list[Phase] = []

    def display(p: Progress) -> None:
        if p.phase is not None and p.phase not in seen_phases:
            seen_phases.append(p.phase)
        elif not p.message and p.phase is None:
            seen_steps.append(p.step)

    store = open_store(tmp_path / "store.sqlite")
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="0" * 64,
        options=RunOptions(results_dir=tmp_path, seed=11),
        store=store,
        display=display,
    )
    record = outcome.record
    assert record.status == RunStatus.DONE, record.error
    # every (target, workload, repetition) measured, with exactly the requests it defines
    keys = sorted(m.key for m in outcome.measurements)
    assert keys == sorted(
        f"{t}:{w}:{r}" for t in ("nginx", "baseline") for w in ("read", "write") for r in (1, 2)
    )
    for m in outcome.measurements:
        expected = 60 if m.workload == "read" else 20
        assert (m.requests, m.ok, m.ko) == (expected, expected, 0), m
        # every answer was checked against the backend's signature, through nginx too, and
        # every one was right (docs/trust.md, "Right answers under load")
        assert m.answers_checked is True
        assert m.wrong_answers == 0, m.wrong_evidence
        assert m.min <= m.p50 <= m.p90 <= m.p95 <= m.p99 <= m.max
        assert m.throughput > 0
        assert m.tester_cpu_pct is not None
        assert m.other_cpu_pct is not None
        assert "incomplete" not in m.flags
        # what the phase cost: the engine (a JVM) and the backend always, the gateway's
        # figures only where there is a gateway
        assert m.engine_cpu_s is not None and m.engine_rss_mb is not None
        assert m.engine_rss_mb > 50  # a JVM's heap and code, at the least
        assert m.backend_cpu_s is not None and m.backend_rss_mb is not None
        assert m.backend_rss_mb > 1
        if m.target == "baseline":
            assert m.gateway_cpu_s is None and m.gateway_rss_mb is None
        else:
            assert m.gateway_cpu_s is not None and m.gateway_rss_mb is not None
            assert m.gateway_rss_mb > 1
    # the engine warmed itself against the backend first (docs/trust.md, "The engine's own
    # warm-up"): before the ceiling and every target, one phase per workload, reported by the
    # engine as it ran them
    warm = [p for p in seen_phases if p.engine_warmup]
    assert [p.workload for p in warm] == ["read", "write"] and seen_phases[:2] == warm
    assert seen_phases[2].target == "ceiling"
    direct = {p.base_url for p in seen_phases if p.target == "baseline" and p.measured}
    assert {p.base_url for p in warm} == direct and len(direct) == 1
    assert outcome.record.environment["engine_warmup_s"] == ENGINE_WARMUP_S["gatling"]
    # lifecycle, in order
    order = [s for s in seen_steps if s in {str(x) for x in RunStatus}]
    assert order == ["parsed", "rendered", "provisioning", "loading", "scoring", "done"]
    # written through the store as it went: the same measurements, the run done and scored
    stored = store.get_run(record.run_id)
    assert stored is not None and stored.status == RunStatus.DONE
    assert sorted(m.key for m in store.measurements(record.run_id)) == keys
    scores = store.scores(record.run_id)
    assert scores is not None and set(scores) == {"nginx"}
    assert outcome.report is not None
    # the default gate held every checked cell to no wrong answer, and it passed
    gate = evaluate([], outcome.report.summary)
    assert len(gate) == 2 and not failures(gate)
    # artefacts on disk
    run_dir = outcome.run_dir
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "done"
    assert saved["environment"]["seed"] == 11
    lines = (run_dir / "measurements.jsonl").read_text().splitlines()
    assert len(lines) == 8
    assert (run_dir / "gateways/nginx/nginx.conf").is_file()
    assert (run_dir / "gateways/nginx/nginx.log").is_file()
    assert (run_dir / "workload.json").is_file()
    assert (run_dir / "mock-backend.json").is_file()
    assert list(run_dir.glob("gatling-results/*/simulation.log"))
    # the token went out as a header (the run is OK) but was never written anywhere
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"the token leaked into {path}"
    assert_torn_down(run_dir)


def test_missing_token_fails_before_any_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gatebench.core.errors import RunError

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    api, plan = items()
    with pytest.raises(RunError, match=r"^environment variable ITEMS_TOKEN is not set; "):
        run_benchmark(
            api, plan, spec_uri="x", spec_sha256="1" * 64, options=RunOptions(results_dir=tmp_path)
        )
    (run_dir,) = tmp_path.iterdir()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert not (run_dir / "gatling.log").exists()


def test_cli_run_with_a_relative_results_folder(tmp_path: Path) -> None:
    """`gatebench run` from another folder, results relative to it: tables, then where."""
    import os
    import subprocess
    import sys

    env = {**os.environ, TOKEN_ENV: "t"}
    done = subprocess.run(
        [sys.executable, "-m", "gatebench.cli", "run", str(ITEMS), "--quick", "--results", "out"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("Run ")
    assert ": done (4 measured phases, " in out[0]
    assert "Latencies in ms (Gatling records whole milliseconds" in out[1]
    assert any(line.startswith("read — GET /items/{id}, 60 sequential requests") for line in out)
    assert any(line.startswith("write — POST /items, 20 users at once") for line in out)
    (run_dir,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    assert out[-3] == (
        f"Results: {run_dir}/ (run.json, measurements.jsonl, workload.json, gateway logs, "
        "simulation.log)"
    )
    store = tmp_path / "out" / "gatebench.sqlite"
    assert out[-2] == (
        f"Stored in out/gatebench.sqlite; `gatebench report {run_dir.name} --store "
        "out/gatebench.sqlite` writes the HTML report."
    )
    # the default wrong-answers gate holds every run (docs/ci.md, "A default gate")
    assert re.fullmatch(
        r"Thresholds: (\d+) of \1 met, the default gate: no wrong answers \(docs/ci\.md\)\.",
        out[-1],
    ), out[-1]
    assert store.is_file()
    assert any(line.startswith("Scores (paper profile, 0-100):") for line in out)
    assert "[loading] " in done.stderr
    assert_torn_down(run_dir)


def test_cli_run_shows_its_progress_on_a_terminal(tmp_path: Path) -> None:
    """`gatebench run` with its stderr on a pseudo-terminal 80 columns wide: the live line
    (rewritten in place, never wider than the terminal) says the step, the time so far, the
    phase's number, the time left once the schedule's durations are known, the phase, its
    requests so far and current rate; each step stays above it. With --quiet: nothing."""
    import fcntl
    import os
    import pty
    import re
    import struct
    import subprocess
    import sys
    import termios

    from rich.cells import cell_len

    def run(*extra: str) -> tuple[str, str]:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        argv = ["run", str(ITEMS), "--quick", "--results", str(tmp_path / "out"), *extra]
        child = subprocess.Popen(
            [sys.executable, "-m", "gatebench.cli", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            env={**env, TOKEN_ENV: "t", "TERM": "xterm-256color"},
        )
        os.close(slave)
        recorded = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the run closed its end
                break
            if not chunk:
                break
            recorded += chunk
        os.close(master)
        out, _ = child.communicate(timeout=180)
        assert child.returncode == 0, recorded.decode(errors="replace")
        return recorded.decode("utf-8"), out.decode()

    raw, out = run()
    assert out.startswith("Run ")
    from paths import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "progress-line-pty.txt").write_text(raw, encoding="utf-8")  # the recording
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    screens = [s for s in re.split(r"[\r\n]", plain) if s.strip()]
    assert "\x1b[2K" in raw  # the line is rewritten in place
    assert max(cell_len(s) for s in screens) <= 80
    steps = [s.split("]")[0] + "]" for s in screens if s.startswith("[")]
    for step in ("[parsed]", "[rendered]", "[provisioning]", "[loading]", "[scoring]", "[done]"):
        assert step in steps, steps
    clock = r"\d+:\d\d"
    live = [s.rstrip() for s in screens if re.match(rf"loading {clock} · \d+/\d+", s)]
    assert live, screens
    counted = [s for s in live if " req/s" in s]
    assert counted, live
    assert any(s.endswith("rep 1 · nginx · read") for s in live), live
    assert any(re.search(rf"~{clock} left", s) for s in live), live
    raw, out = run("--quiet")
    assert out.startswith("Run ")
    assert raw == ""
