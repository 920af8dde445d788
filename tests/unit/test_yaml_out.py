"""The renderers' YAML writer (renderers/_yaml_out.py) writes exactly what libyaml writes.

Property: any nesting of dicts, lists, str, int, float, bool and None is written byte for
byte as ``yaml.dump`` with libyaml writes it, and loads back equal. Then every document the
real renderers hand to the writer, for the examples, the adversarial and large test
descriptions and the policy cases, is written the same by both paths, and most of them by
the fast one (a fallback for everything would pass the first checks and speed up nothing).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gatebench.core.api_keys import with_api_keys
from gatebench.core.errors import UnsupportedFeature
from gatebench.core.plan import load_plan
from gatebench.core.renderers import RenderTarget, _yaml_out, all_renderers, render_with_policies
from gatebench.core.renderers._yaml_out import _fast_dump, _libyaml_dump, dump_block_yaml
from gatebench.core.spec import load_spec
from paths import DATA, EXAMPLES

# Strings that sit on libyaml's and PyYAML's style decisions: indicators, resolvable
# scalars, quotes, spaces at the ends, non-ASCII, control characters, line breaks.
TRICKY = [
    "",
    " ",
    "-",
    "- a",
    "-a",
    "?",
    "? a",
    ":",
    "a:",
    "a: b",
    "a:b",
    "http://x/y",
    "a #b",
    "a#b",
    "#a",
    "---",
    "...",
    "--a",
    "'",
    "it's",
    '"',
    "&a",
    "*a",
    "!a",
    "|",
    ">",
    "%",
    "@",
    "`",
    "{id}",
    "/a/{id}",
    "[x]",
    "a,b",
    "true",
    "False",
    "yes",
    "on",
    "~",
    "null",
    "Null",
    "12",
    "-3",
    "0x1F",
    "0o17",
    "1_000",
    "60:30",
    "1.5",
    "1e3",
    ".5",
    ".inf",
    "-.Inf",
    ".NaN",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "=",
    "<<",
    "a  b",
    " a",
    "a ",
    "\ta",
    "a\tb",
    "a\nb",
    "a\r\nb",
    "a\x85b",
    "a\u2028b",
    "\x00",
    "\x7f",
    "é",
    "ü: x",
    "中文",
    "\U0001f600",
    "\ufeff",
    "x" * 129,
    "é" * 70,
]

_LEAVES = st.one_of(
    st.sampled_from(TRICKY),
    st.text(max_size=12),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
_KEYS = st.one_of(
    st.sampled_from(TRICKY),
    st.text(max_size=8),
    st.text(alphabet="ab/{}:-", min_size=125, max_size=135),
    st.integers(),
    st.booleans(),
    st.none(),
)
_DATA = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=30,
)
_DOCUMENTS = st.one_of(st.dictionaries(_KEYS, _DATA, max_size=5), st.lists(_DATA, max_size=5))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_DOCUMENTS, allow_unicode=st.booleans())
def test_writes_what_libyaml_writes(data: Any, allow_unicode: bool) -> None:
    text = dump_block_yaml(data, allow_unicode=allow_unicode)
    assert text == _libyaml_dump(data, allow_unicode=allow_unicode)
    assert yaml.safe_load(text) == data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.recursive(
        st.one_of(
            st.sampled_from([s for s in TRICKY if not any(c in s for c in "\r\n\x85\u2028")]),
            st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20),
            st.integers(),
            st.floats(),
            st.booleans(),
            st.none(),
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.text(alphabet="ab:#- é\t'", max_size=6), inner, max_size=4),
        ),
        max_leaves=30,
    ).filter(lambda d: isinstance(d, dict | list)),
    allow_unicode=st.booleans(),
)
def test_plain_data_takes_the_fast_path(data: Any, allow_unicode: bool) -> None:
    """Without line breaks and shared objects, nothing falls back to yaml.dump."""
    fast = _fast_dump(data, allow_unicode=allow_unicode)
    assert fast is not None
    assert fast == _libyaml_dump(data, allow_unicode=allow_unicode)
    loaded = yaml.safe_load(fast)
    assert _same(loaded, data)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b and type(a) is type(b))


def test_styles() -> None:
    data = {
        "plain": "/auctions/{id}",
        "bool-like": "true",
        "number-like": "12",
        "quote": "it's",
        "indicator": "*",
        "url": "http://127.0.0.1:9000",
        "comment-like": "a #b",
        "empty": "",
        "unicode": "é",
        "n": 8080,
        "f": 300.0,
        "none": None,
        "on": False,
        "map": {},
        "list": [],
        "rows": [{"a": 1, "b": [1, [2, 3]]}, ["x"]],
        "x" * 130: {"k": "v", "l": [1]},
    }
    assert dump_block_yaml(data, allow_unicode=False) == (
        "plain: /auctions/{id}\n"
        "bool-like: 'true'\n"
        "number-like: '12'\n"
        "quote: it's\n"
        "indicator: '*'\n"
        "url: http://127.0.0.1:9000\n"
        "comment-like: 'a #b'\n"
        "empty: ''\n"
        'unicode: "\\xE9"\n'
        "n: 8080\n"
        "f: 300.0\n"
        "none: null\n"
        "'on': false\n"
        "map: {}\n"
        "list: []\n"
        "rows:\n"
        "- a: 1\n"
        "  b:\n"
        "  - 1\n"
        "  - - 2\n"
        "    - 3\n"
        "- - x\n"
        f"? {'x' * 130}\n"
        ": k: v\n"
        "  l:\n"
        "  - 1\n"
    )
    assert dump_block_yaml(data, allow_unicode=False) == _libyaml_dump(data, allow_unicode=False)
    assert "unicode: é\n" in dump_block_yaml(data, allow_unicode=True)


def test_shared_objects_and_line_breaks_fall_back() -> None:
    shared = {"a": 1}
    assert _fast_dump({"x": shared, "y": shared}, allow_unicode=False) is None
    assert dump_block_yaml({"x": shared, "y": shared}, allow_unicode=False) == (
        "x: &id001\n  a: 1\ny: *id001\n"
    )
    assert _fast_dump({"x": "two\nlines"}, allow_unicode=False) is None
    assert _fast_dump({"x": (1, 2)}, allow_unicode=False) is None
    assert _fast_dump("scalar", allow_unicode=False) is None


_SPECS = [
    EXAMPLES / "auction" / "openapi.yaml",
    EXAMPLES / "petstore" / "openapi.yaml",
    EXAMPLES / "ci" / "openapi.yaml",
    DATA / "adversarial" / "openapi.yaml",
    DATA / "adversarial" / "portable.yaml",
    DATA / "adversarial" / "templates.yaml",
    DATA / "adversarial" / "large" / "openapi3.yaml",
    DATA / "adversarial" / "large" / "swagger2.json",
    DATA / "adversarial" / "large" / "api.raml",
]
_POLICY_SPECS = sorted((DATA / "policies").glob("*.yaml"))
_STAND_IN_KEYS = {"GATEBENCH_API_KEYS": "stand-in-key-0123456789abcdef"}
"""Not a secret: the API-key policy case renders with it."""


@pytest.fixture
def documents(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, bool]]:
    """Every document a renderer hands to the YAML writer while the test runs."""
    seen: list[tuple[Any, bool]] = []
    original = _yaml_out._fast_dump

    def spy(data: Any, *, allow_unicode: bool) -> str | None:
        seen.append((data, allow_unicode))
        return original(data, allow_unicode=allow_unicode)

    monkeypatch.setattr(_yaml_out, "_fast_dump", spy)
    return seen


def _target(name: str) -> RenderTarget:
    return RenderTarget(workdir=f"/srv/gatebench/{name}", backend_url="http://127.0.0.1:9000")


def _render_everything() -> None:
    for spec in _SPECS:
        api = load_spec(spec).api
        assert api is not None, spec
        for renderer in all_renderers():
            with contextlib.suppress(UnsupportedFeature):
                renderer.render(api, _target(renderer.name))
    for spec in _POLICY_SPECS:
        result = load_spec(spec)
        assert result.api is not None, spec
        plan = load_plan(result)
        assert plan.policies, spec
        for renderer in all_renderers():
            with contextlib.suppress(UnsupportedFeature):
                render_with_policies(
                    renderer,
                    result.api,
                    _target(renderer.name),
                    with_api_keys(plan.policies, _STAND_IN_KEYS),
                )


def test_renderers_output_is_what_libyaml_writes(documents: list[tuple[Any, bool]]) -> None:
    _render_everything()
    assert len(documents) > 50
    fast = 0
    for data, allow_unicode in documents:
        written = _fast_dump(data, allow_unicode=allow_unicode)
        if written is not None:
            fast += 1
            assert written == _libyaml_dump(data, allow_unicode=allow_unicode)
    # Only the policy cases' shared objects (anchors) and multi-line values fall back.
    assert fast >= 0.8 * len(documents), (fast, len(documents))
