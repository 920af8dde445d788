"""Byte-exact golden files: every registered renderer × every shared case.

``make goldens`` (``pytest tests/golden --update-goldens``) rewrites them and removes files a
renderer no longer produces; a mismatch leaves ``*.actual`` beside the expected file.
"""

from __future__ import annotations

import pytest
from _cases import CASES, GOLDEN, render_case

from gatebench.core.renderers import all_renderers, get_renderer

PAIRS = [(r.name, case) for r in all_renderers() for case in sorted(CASES)]


@pytest.mark.parametrize(("gateway", "case"), PAIRS, ids=[f"{g}-{c}" for g, c in PAIRS])
def test_golden(gateway: str, case: str, golden, request: pytest.FixtureRequest) -> None:
    renderer = get_renderer(gateway)
    files = render_case(renderer, case)
    folder = GOLDEN / gateway / case
    if request.config.getoption("--update-goldens") and folder.is_dir():
        for stale in sorted(folder.rglob("*")):
            rel = stale.relative_to(folder).as_posix()
            if stale.is_file() and rel not in files and not rel.endswith(".actual"):
                stale.unlink()
    for name, text in sorted(files.items()):
        golden.check(folder / name, text)
    produced = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    leftovers = sorted(p for p in produced if p not in files and not p.endswith(".actual"))
    assert not leftovers, (
        f"tests/golden/{gateway}/{case}/ holds files the renderer no longer writes: "
        f"{', '.join(leftovers)}; run `make goldens`"
    )


@pytest.mark.parametrize(("gateway", "case"), PAIRS, ids=[f"{g}-{c}" for g, c in PAIRS])
def test_render_is_deterministic(gateway: str, case: str) -> None:
    renderer = get_renderer(gateway)
    assert render_case(renderer, case) == render_case(renderer, case)
