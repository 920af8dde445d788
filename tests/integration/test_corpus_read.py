"""Real third-party descriptions (APIs.guru): no traceback on any file, every operation of a
valid file recovered, every problem located. A deterministic quarter of the corpus runs here;
`python -m benchmarks corpus` reads all of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import (
    CORPUS,
    EXAMPLES_CORPUS,
    EXPECTED_ERRORS,
    corpus_files,
    count_operations,
    example_files,
    load_json,
)
from gatebench.core.spec import read_spec

SAMPLE = corpus_files()[::4]


@pytest.mark.parametrize("path", SAMPLE, ids=lambda p: str(p.relative_to(CORPUS)))
def test_real_description(path: Path) -> None:
    name = str(path.relative_to(CORPUS))
    result = read_spec(path)
    for problem in result.problems:
        assert problem.pointer == "" or problem.pointer.startswith("/")
        assert problem.message
    if name in EXPECTED_ERRORS:
        assert result.errors
        assert EXPECTED_ERRORS[name] in result.errors[0].message
        return
    assert result.errors == [], [p.format() for p in result.errors[:5]]
    assert result.api is not None
    expected = count_operations(load_json(path))
    if expected is not None:
        # Every operation is recovered, or left out with a located reason (a problem hides
        # its route); the corpus has none of the latter today.
        assert len(result.api.operations) + len(result.api.left_out) == expected
        assert len(result.api.operations) >= 0.99 * expected, [
            x.to_dict() for x in result.api.left_out[:3]
        ]
    ids = [op.operation_id for op in result.api.operations]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("path", example_files(), ids=lambda p: str(p.relative_to(EXAMPLES_CORPUS)))
def test_readme_example(path: Path) -> None:
    result = read_spec(path)
    assert result.errors == [], [p.format() for p in result.errors[:5]]
    assert result.api is not None
    expected = count_operations(load_json(path))
    if expected is not None:
        assert len(result.api.operations) == expected


def test_the_corpus_covers_every_format() -> None:
    formats = {
        result.api.source_format[:11] for result in map(read_spec, example_files()) if result.api
    }
    assert {"swagger-2.0", "openapi-3.0", "openapi-3.1"} <= formats
