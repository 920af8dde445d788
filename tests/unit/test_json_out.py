"""The renderers' JSON writer (renderers/_json_out.py) writes exactly what
``json.dumps(data, indent=2, ensure_ascii=False)`` writes: on random data of the shapes
configurations hold, on what it hands back to ``json.dumps``, and on the documents the
JSON renderers (KrakenD, Tyk) produce for the examples and test descriptions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers._json_out import dump_json
from gatebench.core.renderers._leave_out import render_leaving_out
from paths import DATA, EXAMPLES

_LEAVES = st.one_of(
    st.text(),
    st.sampled_from(["", '"', "\\", "\x00", "\u2028", "é", "\U0001f600", "</script>"]),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
_DATA = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(data=_DATA)
def test_writes_what_json_dumps_writes(data: Any) -> None:
    text = dump_json(data)
    assert text == json.dumps(data, indent=2, ensure_ascii=False)
    assert json.loads(text) == data


def test_the_rest_is_json_dumps() -> None:
    odd = {"a": [1, float("nan"), float("inf")], "b": {1: "int key", None: 2}, "c": (1, 2)}
    assert dump_json(odd) == json.dumps(odd, indent=2, ensure_ascii=False)
    assert dump_json({"x": {}, "y": [], "z": [{}]}) == (
        '{\n  "x": {},\n  "y": [],\n  "z": [\n    {}\n  ]\n}'
    )
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dump_json(cycle)
    with pytest.raises(TypeError, match="not JSON serializable"):
        dump_json({"s": {1, 2}})


@pytest.mark.parametrize("gateway", ["krakend", "tyk"])
@pytest.mark.parametrize(
    "spec",
    [
        EXAMPLES / "auction" / "openapi.yaml",
        EXAMPLES / "petstore" / "openapi.yaml",
        DATA / "adversarial" / "openapi.yaml",
        DATA / "adversarial" / "large" / "openapi3.yaml",
    ],
    ids=lambda p: p.parent.name + "/" + p.name,
)
def test_renderers_documents(gateway: str, spec: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from gatebench.core.renderers import _json_out
    from gatebench.core.spec import load_spec

    seen: list[Any] = []
    original = _json_out._value

    def spy(value: Any, newline: str, out: list[str]) -> None:
        if newline == "\n":
            seen.append(value)
        original(value, newline, out)

    monkeypatch.setattr(_json_out, "_value", spy)
    api = load_spec(spec).api
    assert api is not None
    # Routes the gateway cannot express are left out, as `gatebench render` does.
    render_leaving_out(
        get_renderer(gateway), api, RenderTarget(workdir=f"/srv/gatebench/{gateway}")
    )
    monkeypatch.undo()
    assert seen
    for document in seen:
        assert dump_json(document) == json.dumps(document, indent=2, ensure_ascii=False)
