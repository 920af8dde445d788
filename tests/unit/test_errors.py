"""Problems print as one bounded, readable line; to_dict keeps the exact text."""

from __future__ import annotations

from gatebench.core.errors import Problem, pointer, split_pointer


def test_control_characters_are_escaped_in_the_printed_line() -> None:
    problem = Problem("/paths/~1a\nb", "bad\tthing", line=3, column=1, source="api.yaml")
    assert problem.format() == "api.yaml:3:1: error: /paths/~1a\\nb: bad\\tthing"
    assert problem.to_dict()["pointer"] == "/paths/~1a\nb"


def test_long_pointers_are_shortened_when_printed() -> None:
    long = "/paths/~1" + "a" * 9000
    line = Problem(long, "x").format("api.yaml")
    assert len(line) < 400
    assert "…(8749 more characters)…" in line
    assert line.endswith("aaaaaaaaaaaaaaaaaaaa: x")


def test_pointer_round_trip() -> None:
    tokens = ["paths", "/pets/{id}", "get~x"]
    assert pointer(*tokens) == "/paths/~1pets~1{id}/get~0x"
    assert split_pointer(pointer(*tokens)) == tokens


def test_c1_controls_and_bidirectional_overrides_are_escaped() -> None:
    """U+202E in a title turned 'evil TAB' into 'BAT live' in `gatebench runs`; 0x9B is a C1
    control sequence introducer some terminals obey."""
    from gatebench.core.errors import printable

    assert printable("evil \u202eTAB\u2066x\x9b31m") == "evil \\u202eTAB\\u2066x\\x9b31m"
    assert printable("café ünï") == "café ünï"  # letters stay as written
