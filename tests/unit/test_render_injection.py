"""No injection: whatever a spec string holds, it cannot change a configuration's structure.

Each generated API is rendered twice: as is, and as a *skeleton* where every literal path
segment is ``x`` and every name is ``v``. For line-based configurations (nginx, HAProxy,
Caddyfile, httpd, VCL) the two must have the same lines, differing only inside regexes and
names (letters, digits and regex syntax: never a quote, ``;``, ``#``, ``{``, a space or a
newline from the spec). Structured ones (YAML, JSON) must parse to the same shape: same
keys, same list lengths. A renderer may refuse an API only with ``UnsupportedFeature``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gatebench.core.errors import UnsupportedFeature
from gatebench.core.ir import Api, Operation, Parameter
from gatebench.core.renderers import RenderTarget, all_renderers

# What the IR lets through in a literal segment (no '/', '?', '#', braces, whitespace,
# control characters; '%' only as %XX).
_LITERAL_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"),
    blacklist_characters="/?#{}%\t\n\r\x0b\x0c \x85\xa0",
)
literal = (
    st.lists(
        st.one_of(
            _LITERAL_CHARS, st.sampled_from(["%20", "%2F", "%41", "%e9", ";", "$", "'", '"'])
        ),
        min_size=1,
        max_size=12,
    )
    .map("".join)
    .filter(lambda s: s not in (".", ".."))
)
# A segment of '.' or '..' is a dot segment every URL resolver removes: a gateway that would
# forward it resolved away refuses the route (its own test), which is not a string changing
# the configuration's structure.
var_name = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zs"), blacklist_characters="/{}%?#"),
    min_size=1,
    max_size=8,
)
op_id = st.text(min_size=0, max_size=20)
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")

# Regex syntax and names: what may differ between a line and its skeleton's line.
_REGEX_AND_NAMES = re.compile(r"[A-Za-z0-9_\\\[\]^$()?:|+/]+")
LINE_BASED = {"nginx.conf", "haproxy.cfg", "Caddyfile", "httpd.conf", "default.vcl"}


@st.composite
def apis(draw: st.DrawFn) -> tuple[Api, Api]:
    """An API and its skeleton (same shape, harmless strings)."""
    count = draw(st.integers(1, 3))
    ops, skeleton = [], []
    used: set[tuple[str, str]] = set()
    tokens: dict[str, str] = {}  # equal literals stay equal in the skeleton
    for i in range(count):
        lit1, lit2, name = draw(literal), draw(literal), draw(var_name)
        method = draw(st.sampled_from(METHODS))
        path = f"/{lit1}/{{{name}}}/{lit2}"
        first = tokens.setdefault(lit1, f"s{len(tokens)}")
        second = tokens.setdefault(lit2, f"s{len(tokens)}")
        shape = f"/{first}/{{v}}/{second}"
        if (method, lit1, lit2) in used:  # the IR refuses routes that differ only in names
            continue
        used.add((method, lit1, lit2))
        param = Parameter(name, "path", True, {"type": "string"})
        ops.append(
            Operation(draw(op_id), method, path, "", path_params=(param,), pointer=f"/p/{i}")
        )
        skeleton.append(
            Operation(
                f"s{i}",
                method,
                shape,
                "",
                path_params=(Parameter("v", "path", True, {}),),
                pointer=f"/p/{i}",
            )
        )
    return Api("t", "1", "openapi-3.0.3", tuple(ops)), Api(
        "t", "1", "openapi-3.0.3", tuple(skeleton)
    )


def _shape(data: Any) -> Any:
    """Keys, nesting and list lengths, order-free; spec-derived keys (paths, route names)
    count as one wildcard."""
    if isinstance(data, dict):
        items = [
            (k if not k.startswith(("r", "/", "~")) else "*", _shape(v)) for k, v in data.items()
        ]
        return ("dict", tuple(sorted(items, key=repr)))
    if isinstance(data, list):
        return ("list", tuple(sorted((_shape(v) for v in data), key=repr)))
    return type(data).__name__


def _parse(name: str, text: str) -> Any:
    if name.endswith((".json", ".conf")) and text.lstrip().startswith("{"):
        return json.loads(text)
    data = yaml.safe_load(text)
    # Zuul's own routes are Ant patterns where a %XX escape becomes '%??': operations whose
    # patterns coincide share one Zuul route (the exact filter still tells them apart), so
    # only one route per pattern counts here; the operations list keeps the full shape.
    if isinstance(data, dict) and isinstance(data.get("zuul", {}).get("routes"), dict):
        routes = data["zuul"]["routes"]
        data["zuul"]["routes"] = dict(list(routes.items())[:1])
    return data


TARGET = RenderTarget(workdir="/srv/gatebench/x")
MAY_REFUSE = {"krakend", "google-api-gateway"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(apis())
def test_spec_strings_cannot_change_structure(pair: tuple[Api, Api]) -> None:
    api, skeleton = pair
    for renderer in all_renderers():
        refusal: UnsupportedFeature | None = None
        try:
            files = renderer.render(api, TARGET)
        except UnsupportedFeature as exc:
            refusal = exc
        if refusal is not None:
            assert renderer.name in MAY_REFUSE, f"{renderer.name} refused: {refusal}"
            assert refusal.problems
            assert all(p.pointer.startswith("/p/") for p in refusal.problems)
            continue
        expected = renderer.render(skeleton, TARGET)
        assert files.keys() == expected.keys()
        for name, text in files.items():
            if name in LINE_BASED:
                got, want = text.split("\n"), expected[name].split("\n")
                assert len(got) == len(want), f"{renderer.name}/{name}: lines added or removed"
                for line, base in zip(got, want, strict=True):
                    assert _REGEX_AND_NAMES.sub("#", line) == _REGEX_AND_NAMES.sub("#", base), (
                        f"{renderer.name}/{name}: spec text changed the line {line!r}"
                    )
            elif name.endswith((".yml", ".yaml", ".json", ".conf")):
                if name == "kong.conf":
                    assert len(text.split("\n")) == len(expected[name].split("\n"))
                    continue
                assert _shape(_parse(name, text)) == _shape(_parse(name, expected[name])), (
                    f"{renderer.name}/{name}: structure differs"
                )
