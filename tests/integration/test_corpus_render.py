"""Real third-party descriptions through every renderer and every checker available here.

Render: a sample of the APIs.guru corpus and ReadMe's examples through all renderers: always
a config (a route a gateway cannot express is left out of it with a located warning, since no
workload needs it) — never an exception; KrakenD's output valid against its official schema. Check: a smaller sample through each gateway's own checker
(`nginx -t`, `haproxy -c`, `caddy validate`, `envoy --mode validate`, `apache2 -t`,
`varnishd -C`, `krakend check -c` where KrakenD is installed): no config a checker rejects;
a gateway checked by booting it (Traefik; Tyk where installed) boots each of them and refuses
no part of its configuration.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from booted import skip_unless_installed
from corpus import CORPUS, EXAMPLES_CORPUS, EXPECTED_ERRORS, corpus_files, example_files
from gatebench.core.errors import UnsupportedFeature
from gatebench.core.renderers import RenderTarget, all_renderers
from gatebench.core.renderers._jvm import JvmRenderer
from gatebench.core.renderers._leave_out import render_leaving_out
from gatebench.core.spec import read_spec
from gatebench.local.provisioners import CheckTask, check_config, check_gateway, write_files
from krakend_schema import krakend_validator

RENDER_SAMPLE = [
    p for p in corpus_files()[::40] if str(p.relative_to(CORPUS)) not in EXPECTED_ERRORS
] + [e for e in example_files() if e.suffix == ".yaml"]
CHECK_SAMPLE = corpus_files()[7::200] + [
    e
    for e in example_files()
    if e.suffix == ".yaml" and e.stem in ("petstore", "readme", "train-travel")
]
CHECKED = [r for r in all_renderers() if r.runs_here and r.check_command]
# Booting is the check of these; the JVM gateways (10-13 s a boot) have their own tests.
BOOTED = [
    r
    for r in all_renderers()
    if r.runs_here and not r.check_command and not isinstance(r, JvmRenderer)
]


def _name(path: Path) -> str:
    base = EXAMPLES_CORPUS if EXAMPLES_CORPUS in path.parents else CORPUS
    return str(path.relative_to(base))


def _api(path: Path):  # type: ignore[no-untyped-def]
    result = read_spec(path)
    assert result.errors == [], [p.format() for p in result.errors[:3]]
    assert result.api is not None
    return result.api


@pytest.mark.parametrize("path", RENDER_SAMPLE, ids=_name)
def test_every_renderer_gives_a_config_leaving_out_located_routes(
    path: Path, tmp_path: Path
) -> None:
    api = _api(path)
    target = RenderTarget(workdir=str(tmp_path))
    for renderer in all_renderers():
        rendered = render_leaving_out(renderer, api, target)
        files = rendered.files
        for problem in rendered.left_out:
            assert problem.severity == "warning", (renderer.name, problem.format())
            assert problem.pointer.startswith("/"), (renderer.name, problem.format())
            assert problem.message.endswith("; the route is left out of its configuration")
        assert len(rendered.left_out) <= len(api.operations)
        assert files, renderer.name
        if renderer.name == "krakend":
            errors = list(krakend_validator().iter_errors(json.loads(files["krakend.json"])))
            assert errors == [], [e.message for e in errors[:3]]


@pytest.mark.parametrize(
    ("path", "gateway"),
    [(p, r.name) for p in CHECK_SAMPLE for r in CHECKED],
    ids=lambda v: v if isinstance(v, str) else _name(v),
)
def test_the_gateway_checker_accepts_the_config(path: Path, gateway: str, tmp_path: Path) -> None:
    skip_unless_installed(gateway)
    renderer = next(r for r in CHECKED if r.name == gateway)
    api = _api(path)
    target = RenderTarget(workdir=str(tmp_path))
    try:
        files = renderer.render(api, target)
    except UnsupportedFeature as refusal:
        # The other acceptable outcome: located reasons instead of a config.
        assert refusal.problems
        assert all(p.pointer.startswith("/") for p in refusal.problems)
        return
    write_files(files, tmp_path)
    assert check_config(renderer, tmp_path, target) is not None
    if renderer.boot_check:  # KrakenD: its checker passes paths its router refuses at start
        checked = check_gateway(CheckTask(renderer, tmp_path, target, api))
        assert checked.status == " [checker: ok] [booted: ok]", checked.messages


@pytest.mark.parametrize(
    ("path", "gateway"),
    [(p, r.name) for p in CHECK_SAMPLE for r in BOOTED],
    ids=lambda v: v if isinstance(v, str) else _name(v),
)
def test_the_gateway_boots_the_config(path: Path, gateway: str, tmp_path: Path) -> None:
    skip_unless_installed(gateway)
    renderer = next(r for r in BOOTED if r.name == gateway)
    api = _api(path)
    target = RenderTarget(workdir=str(tmp_path))
    try:
        renderer.render(api, target)
    except UnsupportedFeature as refusal:
        assert refusal.problems
        assert all(p.pointer.startswith("/") for p in refusal.problems)
        return
    checked = check_gateway(CheckTask(renderer, tmp_path, target, api))
    assert checked.status == " [booted: ok]", checked.messages
