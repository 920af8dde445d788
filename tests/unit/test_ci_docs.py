"""docs/ci.md shows the CI examples verbatim: its listings are the files that
tests/integration/test_ci_examples.py runs, so the page cannot drift from what is tested."""

from __future__ import annotations

import re

import pytest

from paths import ROOT


def listings() -> list[str]:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return [block + "\n" for block in re.findall(r"```yaml\n(.*?)\n```", text, re.DOTALL)]


@pytest.mark.parametrize("name", ["github-actions.yml", "cloudbuild.yaml"])
def test_the_page_shows_the_example_verbatim(name: str) -> None:
    assert (ROOT / "examples" / "ci" / name).read_text(encoding="utf-8") in listings()


def test_the_thresholds_listing_is_a_valid_section() -> None:
    import yaml

    from gatebench.core.plan import build_plan
    from gatebench.core.spec import load_spec

    section = yaml.safe_load(listings()[0])["x-gatebench"]
    api = load_spec(ROOT / "examples" / "petstore" / "openapi.yaml").api
    assert api is not None
    section["workloads"] = [
        {"name": "list", "operation": "listPets", "injection": {"sequential": 10}}
    ]
    plan = build_plan(section, api)
    assert [t.label() for t in plan.thresholds] == [
        "p95 <= 50 ms",
        "error_pct <= 1%",
        "throughput >= 500 req/s",
        "overhead.p95 <= 5 ms",
        "overhead.mean <= 20%",
        "score >= 70",
        "capacity >= 2,000 req/s",
        "wrong_answers <= 0",
    ]
