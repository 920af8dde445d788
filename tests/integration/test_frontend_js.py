"""The page's own decisions, in Node without a browser: where a run stands along its steps
(done, failed at a step, partial, a cloud stage name), the status words of the runs list,
and the chart axis steps (the same rule as the report's ``nice_step``, and its log decades)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.report._charts import scale_end
from gatebench.core.report._svg import _decades, nice_step
from paths import ROOT

SCRIPT = r"""
import { stepState, isScaleRun, scaleBlock, targetErrorText } from "./run.mjs";
import { progressText, kindText, comparable } from "./runs.mjs";
import { niceStep, decades, scaleEnd } from "./charts.mjs";
const STEPS = 7;
const states = (run) => Array.from({ length: STEPS }, (_, i) => stepState(run, i));
const out = {
  loading: states({ status: "loading", finished: false }),
  done: states({ status: "done", finished: true }),
  queued: states({ status: "queued", finished: false }),
  failedAtProvisioning: states({ status: "failed", finished: true, failed_step: "provisioning" }),
  failedAtParseStage: states({ status: "failed", finished: true, failed_step: "parse" }),
  partialAtTheEnd: states({ status: "partial", finished: true, failed_step: null }),
  partialInterrupted: states({ status: "partial", finished: true, failed_step: "loading" }),
  queuedNext: progressText({ status: "queued", queue_position: 1 }),
  queuedThird: progressText({ status: "queued", queue_position: 3 }),
  running: progressText({ status: "loading", finished: false,
    progress: { step: "loading", phase: "rep 1 · nginx · list", phase_number: 5, phases: 24 } }),
  provisioning: progressText({ status: "provisioning", finished: false,
    progress: { step: "provisioning", message: "nginx" } }),
  finished: progressText({ status: "done", finished: true, progress: null }),
  steps: [0.7, 9, 42, 180, 1234, 4598.9, 100].map((v) => niceStep(v)),
  decades: [[0.4, 52], [10, 10], [3, 2500], [0.001, 0.5]].map(([lo, hi]) => decades(lo, hi)),
  scaleEnds: [[63.4, null], [12041, null], [0, null], [80, 100], [0.7, null]].map(([top, given]) => scaleEnd(top, given)),
  scaleKinds: ["scale", "change-under-load", "workload", undefined].map((kind) => isScaleRun({ kind })),
  kinds: [
    { kind: "fixed", repetitions: 10 }, { kind: "fixed", quick: true }, { kind: "capacity" },
    { kind: "capacity", quick: true }, { kind: "scale" }, { kind: "change-under-load" }, {},
  ].map(kindText),
  targetErrors: [
    targetErrorText({ left_out: ["caddy"] }, "caddy", "caddy cannot apply the requested policies natively"),
    targetErrorText({ left_out: ["caddy"] }, "kong", "exited 1"),
    targetErrorText({}, "kong", "exited 1"),
  ],
  comparable: [
    { kind: "fixed", status: "done" }, { status: "done" }, { kind: "fixed", status: "queued" },
    { kind: "capacity", status: "done" }, { kind: "scale", status: "done" },
    { kind: "change-under-load", status: "done" },
  ].map(comparable),
};
console.log(JSON.stringify(out));
"""


def run_in_node(tmp_path: Path) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed: install Node.js 20 (`make test` checks it)")
    # Node reads .mjs files as ES modules; the site's files are the same modules as .js.
    for source in (ROOT / "frontend" / "js").glob("*.js"):
        text = re.sub(r'from "\./([a-z]+)\.js"', r'from "./\1.mjs"', source.read_text("utf-8"))
        (tmp_path / f"{source.stem}.mjs").write_text(text, encoding="utf-8")
    (tmp_path / "probe.mjs").write_text(SCRIPT, encoding="utf-8")
    proc = subprocess.run(
        [node, str(tmp_path / "probe.mjs")], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_step_states_status_words_and_axis_steps(tmp_path: Path) -> None:
    out = run_in_node(tmp_path)
    assert out["scaleKinds"] == [True, True, False, False]
    assert out["kinds"] == [
        "10 reps",
        "quick",
        "capacity search",
        "capacity search, quick",
        "route scale",
        "change under load",
        "–",
    ]
    # the read API's compare refuses every kind but fixed workloads: none can be picked
    assert out["comparable"] == [True, True, False, False, False, False]
    # a gateway left out before the run (policies it cannot apply) was shown as 'failed'
    assert out["targetErrors"] == [
        "caddy cannot apply the requested policies natively",
        "kong failed: exited 1",
        "kong failed: exited 1",
    ]
    done, current, todo = "done", "current", "to do"
    assert out["loading"] == [done, done, done, done, current, todo, todo]
    assert out["done"] == [done] * 7
    assert out["queued"] == [todo] * 7
    stopped, unreached = "stopped here", "not reached"
    assert out["failedAtProvisioning"] == [
        done,
        done,
        done,
        stopped,
        unreached,
        unreached,
        unreached,
    ]
    assert out["failedAtParseStage"] == [done, stopped] + [unreached] * 5
    assert out["partialAtTheEnd"] == [done] * 6 + ["partial"]
    assert out["partialInterrupted"] == [done] * 4 + [stopped, unreached, unreached]
    assert out["queuedNext"] == "(next)"
    assert out["queuedThird"] == "(3 in line)"
    assert out["running"] == "(phase 5 of 24: rep 1 · nginx · list)"
    assert out["provisioning"] == "(provisioning: nginx)"
    assert out["finished"] == ""
    assert out["steps"] == [nice_step(v) for v in (0.7, 9, 42, 180, 1234, 4598.9, 100)]
    # the capacity curves' log axis: the same decades as the report's (report._svg._decades)
    pairs = [(0.4, 52), (10, 10), (3, 2500), (0.001, 0.5)]
    assert out["decades"] == [pytest.approx(list(_decades(lo, hi))) for lo, hi in pairs]
    # a group's own bar scale (Chart.per_group): the same end and step as the report's
    ends = [(63.4, None), (12041, None), (0, None), (80, 100.0), (0.7, None)]
    assert out["scaleEnds"] == [pytest.approx(list(scale_end(top, given))) for top, given in ends]
