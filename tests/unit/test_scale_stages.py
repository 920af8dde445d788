"""The route-scale and change-under-load runs are stage lists (gatebench.kinds.scale and
gatebench.kinds.change, on what they share: gatebench.kinds._live): their
order, what each stage needs and gives, and the lifecycle moving forward once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gatebench.cli import main
from gatebench.core.errors import RunError
from gatebench.core.scaleplan import ChangeSpec, LoadSettings
from gatebench.kinds._live._plan import scale_problems
from gatebench.kinds._live._stages import GrowRender, ScaleRequest
from gatebench.kinds.change import change_stages
from gatebench.kinds.scale import scale_stages
from gatebench.run import check_order
from paths import EXAMPLES


def test_a_scale_run_renders_provisions_loads_and_tears_down_each_size_in_turn() -> None:
    stages = scale_stages(ScaleRequest(("nginx",), sizes=(100, 10), settings=LoadSettings()))
    check_order(stages)
    names = [s.name for s in stages]
    assert names == [
        "parse",
        "backend",
        *["render", "provision", "load", "teardown"] * 2,
        "score",
    ]
    sizes = [s.size for s in stages if isinstance(s, GrowRender)]
    assert sizes == [10, 100]  # smallest first
    moves = [(s.name, s.moves) for s in stages if s.moves is not None]
    # The lifecycle goes forward once: later sizes move the run nowhere.
    assert moves == [
        ("parse", "end"),
        ("render", "end"),
        ("provision", "start"),
        ("load", "start"),
        ("score", "start"),
    ]


def test_a_change_run_is_one_render_provision_and_a_load_with_the_change() -> None:
    request = ScaleRequest(("haproxy",), settings=LoadSettings(), change=ChangeSpec(100, 50))
    stages = change_stages(request)
    check_order(stages)
    assert [s.name for s in stages] == [
        "parse",
        "backend",
        "render",
        "provision",
        "load",
        "teardown",
        "score",
    ]
    assert isinstance(stages[2], GrowRender) and stages[2].size == 100
    assert type(stages[4]).__name__ == "ChangeLoad"
    with pytest.raises(RunError, match="needs what to change"):
        change_stages(ScaleRequest(("haproxy",)))


def _spec_with(tmp_path: Path, **extra: object) -> Path:
    spec = yaml.safe_load((EXAMPLES / "auction" / "openapi.yaml").read_text(encoding="utf-8"))
    spec["x-gatebench"].update(extra)
    path = tmp_path / "api.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["scale", "change-under-load"])
def test_a_description_asking_for_tls_replicas_or_a_fault_is_refused_where_it_asks(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """These runs load and probe over plain HTTP in front of one backend: a description whose
    benchmark section asks for TLS, replicas or a fault is refused before anything starts,
    each key located, rather than measured without it."""
    spec = _spec_with(
        tmp_path,
        tls={"http2": True},
        backend={"builtin": "echo", "replicas": 3},
        fault={"at": "50%"},
    )
    results = tmp_path / "results"
    assert main([command, str(spec), "--gateways", "nginx", "--results", str(results)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[2] for line in lines] == [
        "/x-gatebench/tls",
        "/x-gatebench/backend/replicas",
        "/x-gatebench/fault",
    ]
    assert all(re.match(r"api\.yaml:\d+:\d+: error: ", line) for line in lines), lines
    assert "scale and change-under-load do not carry TLS yet" in lines[0]
    assert 'docs/scale.md, "TLS and replicas"' in lines[0]
    assert not results.exists(), "nothing may start"


def test_plain_deployment_keys_are_not_refused() -> None:
    plain = {"tls": False, "backend": {"builtin": "echo", "replicas": 1}}
    assert scale_problems(plain) == []
    assert scale_problems(None) == []
    (problem,) = scale_problems({"tls": True}, "/x-gatebench", "bench.yaml")
    assert (problem.pointer, problem.source) == ("/x-gatebench/tls", "bench.yaml")


def test_a_change_whose_window_ends_after_the_load_is_refused_with_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line and an upload's metadata say the same (core.scaleplan)."""
    spec = EXAMPLES / "petstore" / "openapi.yaml"
    results = tmp_path / "results"
    argv = ["change-under-load", str(spec), "--gateways", "nginx", "--results", str(results)]
    assert main([*argv, "--duration", "4"]) == 2
    assert capsys.readouterr().err == (
        "gatebench: --change-after, --window, --duration: the window after the change (3 s "
        "into the load, then 4 s) ends at 7 s, after the measured load (4 s), and that window "
        "is read under the load: measure for at least 7 s, or change sooner\n"
    )
    assert not results.exists(), "nothing may start"


def test_by_default_every_gateway_installed_here_is_measured_and_the_others_are_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gateway that is not installed is left out of the default, not failed (the run would
    be partial on every machine without KrakenD); one named with --gateways is measured, and
    fails with its reason when it does not run here."""
    from gatebench.cli.scale import _gateways
    from gatebench.core.renderers import all_renderers
    from gatebench.core.renderers._base import Renderer

    installed = {"nginx", "haproxy"}
    monkeypatch.setattr(
        Renderer,
        "available_here",
        lambda self: None if self.name in installed else f"{self.name} is not installed",
    )
    chosen, missing = _gateways(None)
    assert set(chosen) == installed
    native = {r.name for r in all_renderers() if r.runs_here}
    assert set(missing) == native - installed and "krakend" in missing
    assert _gateways("krakend, NGINX,nginx") == (("krakend", "nginx"), ())

    installed.clear()
    argv = ["scale", str(EXAMPLES / "petstore" / "openapi.yaml"), "--results", str(tmp_path)]
    assert main(argv) == 2
    assert "no gateway is installed here" in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing may start"


def test_a_change_whose_table_after_it_is_too_large_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each number alone is within the bound, the table after the change holds both: refused
    naming the options (or the metadata's key), not after every gateway booted, not blaming
    the description."""
    from gatebench.core.model import RunKind
    from gatebench.core.scaleplan import scale_ask_from_json

    spec = EXAMPLES / "petstore" / "openapi.yaml"
    results = tmp_path / "results"
    argv = ["change-under-load", str(spec), "--gateways", "nginx", "--results", str(results)]
    assert main([*argv, "--routes", "100000", "--add", "1"]) == 2
    assert capsys.readouterr().err == (
        "gatebench: --routes, --add: the table after the change holds 100,000 + 1 = 100,001 "
        "routes, more than the 100,000 a table may hold: add at most 0\n"
    )
    assert not results.exists(), "nothing may start"
    ask, problems = scale_ask_from_json(
        RunKind.CHANGE, {"routes": 99_990, "add": 11}, source="x-goog-meta-gatebench"
    )
    assert ask is None
    assert [p.format() for p in problems] == [
        "x-goog-meta-gatebench: error: /scale/add: the table after the change holds 99,990 + 11 "
        "= 100,001 routes, more than the 100,000 a table may hold: add at most 10"
    ]
    fits, none = scale_ask_from_json(RunKind.CHANGE, {"routes": 99_990, "add": 10})
    assert fits is not None and none == []


@pytest.mark.parametrize("command", ["scale", "change-under-load"])
def test_a_description_without_an_operation_is_refused_located_before_the_run(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "empty.yaml"
    spec.write_text('openapi: 3.0.3\ninfo: {title: Empty, version: "1"}\npaths: {}\n')
    results = tmp_path / "results"
    argv = [command, str(spec), "--gateways", "nginx", "--routes", "5", "--results", str(results)]
    assert main(argv) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert errors == [
        "empty.yaml:3:1: error: /paths: the description has no operation to replicate"
    ]
    assert not results.exists(), "nothing may start"


@pytest.mark.parametrize("names", ["", ",", " , "])
def test_an_empty_gateway_list_is_refused_not_read_as_every_gateway(
    names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["scale", str(EXAMPLES / "petstore" / "openapi.yaml"), "--routes", "5"]
    assert main([*argv, "--gateways", names, "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gatebench: --gateways: {names!r} names no gateway; name one or more")
    assert not (tmp_path / "results").exists(), "nothing may start"
