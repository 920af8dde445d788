"""The route-scale and change-under-load runs are stage lists (gatebench.stages.scale): their
order, what each stage needs and gives, and the lifecycle moving forward once."""

from __future__ import annotations

import pytest

from gatebench.errors import RunError
from gatebench.liveruns import LoadSettings
from gatebench.stages import check_order
from gatebench.stages.scale import (
    ChangeSpec,
    GrowRender,
    ScaleRequest,
    change_stages,
    scale_stages,
)


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
