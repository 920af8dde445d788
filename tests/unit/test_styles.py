"""Parameters as OpenAPI's style and explode write them: the specification's own table
("Style Examples", OpenAPI 3.0.3 and 3.1.0), percent-encoded for the place they go."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatebench.core.ir import Parameter
from gatebench.core.spec import load_spec
from gatebench.core.styles import serialized

COLORS = ["blue", "black", "brown"]
RGB = {"R": 100, "G": 200, "B": 150}


def text(where: str, style: str | None, explode: bool | None, value: object) -> str:
    p = Parameter("color", where, True, {}, style=style, explode=explode)  # type: ignore[arg-type]
    pairs = serialized(p, value)
    if where in ("path", "header"):
        assert len(pairs) == 1
        return pairs[0][1]
    return "&".join(f"{n}={v}" for n, v in pairs)


@pytest.mark.parametrize(
    ("where", "style", "explode", "string", "array", "obj"),
    [
        ("path", "matrix", False, ";color=blue", ";color=blue,black,brown", ";color=R,100,G,200,B,150"),
        ("path", "matrix", True, ";color=blue", ";color=blue;color=black;color=brown", ";R=100;G=200;B=150"),
        ("path", "label", False, ".blue", ".blue,black,brown", ".R,100,G,200,B,150"),
        ("path", "label", True, ".blue", ".blue.black.brown", ".R=100.G=200.B=150"),
        ("query", "form", False, "color=blue", "color=blue,black,brown", "color=R,100,G,200,B,150"),
        ("query", "form", True, "color=blue", "color=blue&color=black&color=brown", "R=100&G=200&B=150"),
        ("path", "simple", False, "blue", "blue,black,brown", "R,100,G,200,B,150"),
        ("path", "simple", True, "blue", "blue,black,brown", "R=100,G=200,B=150"),
        ("query", "spaceDelimited", False, "color=blue", "color=blue%20black%20brown", "color=R%20100%20G%20200%20B%20150"),
        ("query", "pipeDelimited", False, "color=blue", "color=blue%7Cblack%7Cbrown", "color=R%7C100%7CG%7C200%7CB%7C150"),
        ("query", "deepObject", True, "color=blue", "color=blue&color=black&color=brown", "color%5BR%5D=100&color%5BG%5D=200&color%5BB%5D=150"),
    ],
)  # fmt: skip
def test_the_specifications_style_examples(
    where: str, style: str, explode: bool, string: str, array: str, obj: str
) -> None:
    assert text(where, style, explode, "blue") == string
    assert text(where, style, explode, COLORS) == array
    assert text(where, style, explode, RGB) == obj


def test_the_defaults_by_place_and_the_empty_cases() -> None:
    assert (
        text("query", None, None, COLORS) == "color=blue&color=black&color=brown"
    )  # form, exploded
    assert text("path", None, None, COLORS) == "blue,black,brown"  # simple
    assert text("header", None, None, RGB) == "R,100,G,200,B,150"
    assert text("cookie", None, None, "a b;c=1%") == "color=a%20b%3Bc=1%25"  # RFC 6265
    assert text("header", None, None, "50% a\r\nX-Evil: 1") == "50% a%0D%0AX-Evil: 1"
    assert text("query", "matrix", None, COLORS) == "color=blue&color=black&color=brown"
    assert text("path", "deepObject", True, RGB) == "R=100,G=200,B=150"  # not the place's: simple
    assert text("path", "matrix", False, []) == ";color"
    assert text("path", "matrix", True, []) == ";color"
    assert text("path", "label", False, []) == "."
    assert text("query", None, None, True) == "color=true"  # JSON's words, not Python's
    assert text("path", None, None, "a/b?c") == "a%2Fb%3Fc"
    assert text("query", None, None, [{"a": 1}]) == "color=%7B%22a%22%3A1%7D"


def test_a_parameter_described_by_content_is_its_media_types_text() -> None:
    p = Parameter("q", "query", True, {}, content="application/json")
    assert serialized(p, {"k": "v"}) == [("q", "%7B%22k%22%3A%22v%22%7D")]
    assert serialized(p, "v") == [("q", "%22v%22")]
    assert serialized(Parameter("q", "query", True, {}, content="text/plain"), "v") == [("q", "v")]


def test_swagger_collection_formats_read_as_styles(tmp_path: Path) -> None:
    params = "".join(
        f"        - {{name: {name}, in: query, required: true, type: array, items: {{type: string}}"
        + (f", collectionFormat: {fmt}}}\n" if fmt else "}\n")
        for name, fmt in [("c", None), ("s", "ssv"), ("t", "tsv"), ("p", "pipes"), ("m", "multi")]
    )
    (tmp_path / "api.yaml").write_text(
        "swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n"
        f"      operationId: a\n      parameters:\n{params}"
        "      responses: {'200': {description: ok}}\n"
    )
    result = load_spec(tmp_path / "api.yaml")
    assert result.api is not None
    op = result.api.operation("a")
    sent = ["&".join(f"{n}={v}" for n, v in serialized(p, ["x", "y"])) for p in op.query_params]
    assert sent == ["c=x,y", "s=x%20y", "t=x%09y", "p=x%7Cy", "m=x&m=y"]
