"""``gatebench runs``, ``gatebench report`` and ``gatebench score`` against a SQLite store."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from gatebench.cli import main
from gatebench.core.model import RunStatus
from gatebench.core.report import column_names
from gatebench.store import SqliteStore
from synthetic import synthetic_run


@pytest.fixture
def store_path(tmp_path: Path) -> str:
    path = tmp_path / "store.sqlite"
    run, ms = synthetic_run(repetitions=3)
    with SqliteStore(path) as store:
        store.create_run(run)
        for m in ms:
            store.put_measurement(m)
        older, _ = synthetic_run(run_id="older", created_at=run.created_at - 3600)
        store.create_run(older)
    return str(path)


def test_runs_lists_newest_first(store_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--store", store_path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "RUN",
        "STATUS",
        "CREATED",
        "(UTC)",
        "KIND",
        "GATEWAYS",
        "WORKLOADS",
        "TITLE",
    ]
    assert lines[1].startswith(
        "20260101-120000-synthetic  done    2026-01-01 12:00  fixed workload  nginx,haproxy,caddy"
    )
    assert lines[2].startswith("older")
    assert main(["runs", "--store", store_path, "--json", "--limit", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in data] == ["20260101-120000-synthetic"]


def test_runs_lists_a_scale_run_without_a_count_of_workloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A route scale has no workloads: '-', not 0."""
    from gatebench.core.model import RunKind, RunRecord

    path = tmp_path / "s.sqlite"
    record = RunRecord(
        run_id="20260101-000000-bbbb",
        spec_uri="file:///a.yaml",
        spec_sha256="0" * 64,
        gateways=["nginx"],
        kind=RunKind.SCALE,
    )
    with SqliteStore(path) as store:
        store.create_run(record)
    assert main(["runs", "--store", str(path)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[4:8] == ["route", "scale", "nginx", "-"]


def test_runs_of_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.sqlite"
    assert main(["runs", "--store", str(path)]) == 0
    assert capsys.readouterr().out == f"no runs in {path}\n"


def test_report_html_goes_to_results_by_default(
    store_path: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", "latest", "--store", store_path]) == 0
    written = capsys.readouterr().out.strip()
    assert written == "results/20260101-120000-synthetic/report.html"
    assert (tmp_path / written).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_report_html_goes_into_the_folder_the_run_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gatebench run --results out`` ends with "`gatebench report RUN --store
    out/gatebench.sqlite` writes the HTML report": it went to a new results/RUN beside the
    run's own out/RUN, holding nothing else."""
    results = tmp_path / "out"
    run, ms = synthetic_run(repetitions=3)
    folder = results / run.run_id
    folder.mkdir(parents=True)
    run.owner = {"host": "h", "pid": 1, "started": 0.0, "run_dir": str(folder)}
    with SqliteStore(results / "gatebench.sqlite") as store:
        store.create_run(run)
        for m in ms:
            store.put_measurement(m)
    monkeypatch.chdir(tmp_path)
    assert main(["report", run.run_id, "--store", "out/gatebench.sqlite"]) == 0
    assert capsys.readouterr().out.strip() == str(folder / "report.html")
    assert (folder / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert not (tmp_path / "results").exists()


def test_a_run_is_named_by_its_folder_whose_store_is_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gatebench run --results /tmp/res`` writes /tmp/res/RUN and /tmp/res/gatebench.sqlite:
    the folder alone names the run and its store, and the HTML report goes into the folder."""
    results = tmp_path / "res"
    run, ms = synthetic_run(repetitions=3)
    with SqliteStore(results / "gatebench.sqlite") as store:
        store.create_run(run)
        for m in ms:
            store.put_measurement(m)
    folder = results / run.run_id
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(run.to_dict()), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GATEBENCH_STORE", raising=False)
    assert main(["report", "res/" + run.run_id + "/"]) == 0
    assert capsys.readouterr().out.strip() == f"res/{run.run_id}/report.html"
    assert (folder / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["score", str(folder), "--profile", "robust"]) == 0
    assert capsys.readouterr().out.startswith(f"run {run.run_id}, profile robust")
    # A folder that is no run's is read as a run id, and the store says it has no such run.
    (tmp_path / "empty").mkdir()
    assert main(["report", "empty"]) != 0
    assert "run 'empty' does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["json", "csv", "md"])
def test_report_formats_go_to_stdout(
    store_path: str, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["report", "20260101-120000-synthetic", "--format", fmt, "--store", store_path]) == 0
    )
    out = capsys.readouterr().out
    if fmt == "json":
        assert json.loads(out)["run"]["run_id"] == "20260101-120000-synthetic"
    elif fmt == "csv":
        assert tuple(next(csv.reader(io.StringIO(out)))) == column_names()
    else:
        assert out.startswith("# Synthetic auction run\n")


def test_report_to_a_file(
    store_path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out" / "r.md"
    assert main(["report", "latest", "-f", "md", "-o", str(target), "--store", store_path]) == 0
    assert capsys.readouterr().out.strip() == str(target)
    assert target.read_text(encoding="utf-8").startswith("# Synthetic auction run")


def test_report_of_an_unknown_run(store_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "nope", "--store", store_path]) == 3
    assert capsys.readouterr().err == (
        "gatebench: run 'nope' does not exist; `gatebench runs` lists the stored runs\n"
    )


def test_report_of_an_abandoned_run_reads_as_recorded_once_settled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its gatebench process is gone (this pid, started at another time): the report says so,
    as ``gatebench runs`` does, never that the run is still loading."""
    path = str(tmp_path / "s.sqlite")
    run, ms = synthetic_run(repetitions=1)
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": 1.0}
    with SqliteStore(path) as store:
        store.create_run(replace(run, status=RunStatus.LOADING, owner=owner))
        for m in ms[:3]:
            store.put_measurement(m)
    assert main(["runs", "--store", path]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:2] == [run.run_id, "abandoned"]
    assert main(["report", run.run_id, "-f", "md", "--store", path]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].startswith(f"Run `{run.run_id}` · status partial · profile paper")
    assert (
        "- The run's status is 'partial' (abandoned: the gatebench process that ran it "
        f"(pid {os.getpid()}) ended without finishing it): the results may be incomplete.\n"
    ) in out


def test_score_stores_the_scores_and_the_report_follows_them(
    store_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["score", "latest", "--profile", "robust", "--weight", "p99=3", "--store", store_path])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("run 20260101-120000-synthetic, profile robust\nRANK  GATEWAY  SCORE")
    with SqliteStore(store_path) as store:
        docs = store.scores("20260101-120000-synthetic")
    assert docs is not None
    assert set(docs) == {"nginx", "haproxy", "caddy"}
    assert {d["profile"] for d in docs.values()} == {"robust"}
    assert docs["nginx"]["weights"]["p99"] == 3.0
    # Without --profile, the report uses the profile and weights the run was scored with.
    assert main(["report", "latest", "-f", "json", "--store", store_path]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "robust"
    assert data["weights"]["p99"] == 3.0
    assert data["scores"]["gateways"]["nginx"]["score"] == docs["nginx"]["score"]


def test_score_writes_the_run_folders_scores_again(tmp_path: Path) -> None:
    """A run's folder holds scores.json, written when it was scored: after `gatebench score
    --profile robust` the folder still said paper while the store said robust."""
    run, ms = synthetic_run(repetitions=3)
    folder = tmp_path / run.run_id
    folder.mkdir()
    (folder / "scores.json").write_text('{"nginx": {"profile": "paper"}}\n', encoding="utf-8")
    run.owner = {"host": "h", "pid": 1, "started": 0.0, "run_dir": str(folder)}
    with SqliteStore(tmp_path / "gatebench.sqlite") as store:
        store.create_run(run)
        for m in ms:
            store.put_measurement(m)
    store_path = str(tmp_path / "gatebench.sqlite")
    assert main(["score", run.run_id, "--profile", "robust", "--store", store_path]) == 0
    saved = json.loads((folder / "scores.json").read_text(encoding="utf-8"))
    with SqliteStore(store_path) as store:
        assert saved == store.scores(run.run_id)
    assert {d["profile"] for d in saved.values()} == {"robust"}


def test_a_report_naming_the_stored_profile_keeps_its_weights(
    store_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gatebench report RUN --profile robust` on a run scored robust with weights scored it
    again with every weight 1; the Markdown report never named the weights."""
    weights = ["--weight", "p99=5", "--weight", "min=0"]
    assert main(["score", "latest", "--profile", "robust", *weights, "--store", store_path]) == 0
    capsys.readouterr()
    with SqliteStore(store_path) as store:
        docs = store.scores("20260101-120000-synthetic")
    assert docs is not None
    robust = ["report", "latest", "--profile", "robust", "--store", store_path]
    assert main([*robust, "-f", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["weights"] == docs["nginx"]["weights"]
    assert {g: d["score"] for g, d in data["scores"]["gateways"].items()} == {
        g: d["score"] for g, d in docs.items()
    }
    assert main([*robust, "-f", "md"]) == 0
    assert (
        "· profile robust (weights throughput×1, min×0, mean×1, max×1, stddev×1, p50×1, p90×1, "
        "p95×1, p99×5, error_pct×1)\n" in capsys.readouterr().out
    )
    # naming another profile scores with that one's weights
    assert (
        main(["report", "latest", "--profile", "paper", "-f", "json", "--store", store_path]) == 0
    )
    assert json.loads(capsys.readouterr().out)["weights"] == {}


def test_score_of_a_run_that_measured_no_gateway_says_none_was_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run stopped before any gateway's phase: `gatebench score` printed every gateway
    ranked first with a score of 0."""
    from gatebench.core.metrics import METRICS
    from gatebench.core.model import Measurement, RunRecord, RunStatus

    path = tmp_path / "s.sqlite"
    record = RunRecord(
        run_id="20260101-000000-aaaa",
        spec_uri="file:///a.yaml",
        spec_sha256="0" * 64,
        status=RunStatus.PARTIAL,
        gateways=["nginx", "haproxy"],
        workloads=[{"name": "w"}],
    )
    values: dict[str, object] = dict.fromkeys(METRICS, 0.0)
    values.update(requests=0, ok=0, ko=0)
    with SqliteStore(path) as store:
        store.create_run(record)
        for target in ("nginx", "haproxy"):
            store.put_measurement(
                Measurement(
                    run_id=record.run_id, target=target, workload="w", repetition=0, **values
                )  # type: ignore[arg-type]
            )
    assert main(["score", "latest", "--store", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "run 20260101-000000-aaaa, profile paper",
        "no gateway was scored: no score and no rank (the notes say why)",
    ]
    with SqliteStore(path) as store:
        assert not store.scores(record.run_id)


def test_score_refuses_weights_for_the_paper_profile(
    store_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["score", "latest", "--profile", "paper", "--weight", "p99=3", "--store", store_path])
        == 2
    )
    assert capsys.readouterr().err == (
        "gatebench score: weights apply to the 'robust' profile; the 'paper' profile weighs "
        "every metric equally\n"
    )


@pytest.mark.parametrize("kind", ["capacity", "scale", "change-under-load"])
def test_score_refuses_a_run_of_another_kind_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Only a fixed-workload run has the AGE score: another kind's scores would say nothing was
    measured, and would be stored as its scores."""
    from gatebench.core.model import RunKind, RunRecord

    path = tmp_path / "s.sqlite"
    record = RunRecord(
        run_id="20260101-000000-aaaa",
        spec_uri="file:///a.yaml",
        spec_sha256="0" * 64,
        kind=RunKind(kind),
    )
    with SqliteStore(path) as store:
        store.create_run(record)
    assert main(["score", "latest", "--store", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"gatebench score: run 20260101-000000-aaaa is a {kind} run: only a fixed-workload run "
        "has the AGE score; `gatebench report 20260101-000000-aaaa` shows what it measured\n"
    )
    with SqliteStore(path) as store:
        assert store.scores("20260101-000000-aaaa") is None


def test_score_weight_syntax(store_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["score", "latest", "--weight", "latency=2", "--store", store_path])
    assert exc.value.code == 2
    assert (
        "expected METRIC=WEIGHT with METRIC one of throughput, min, mean" in capsys.readouterr().err
    )


def test_score_json(store_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "latest", "--json", "--store", store_path]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "paper"
    assert data["order"][0] in ("nginx", "haproxy", "caddy")
