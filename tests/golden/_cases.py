"""The golden cases every renderer is rendered for, and the fixed target they use.

A case is an API description; its golden output is ``tests/golden/<gateway>/<case>/<file>``
(or ``errors.txt`` when the gateway cannot express the case: the located
``UnsupportedFeature`` problems, one per line). Add a case here and run ``make goldens``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from gatebench.core.errors import UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.renderers import Renderer, RenderTarget
from gatebench.core.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
ERRORS_FILE = "errors.txt"

# case name → API description (relative to the repository root)
CASES: dict[str, str] = {
    "adversarial": "tests/data/adversarial/openapi.yaml",
    "auction": "examples/auction/openapi.yaml",
    "petstore": "examples/petstore/openapi.yaml",
    "portable": "tests/data/adversarial/portable.yaml",
    "templates": "tests/data/adversarial/templates.yaml",
}


# Large, real-world-shaped specs (tests/data/adversarial/generate_large.py): rendered through
# every renderer, checker, schema and simulation, replayed, but not kept as goldens.
LARGE: dict[str, str] = {
    "large-openapi3": "tests/data/adversarial/large/openapi3.yaml",
    "large-raml": "tests/data/adversarial/large/api.raml",
    "large-swagger2": "tests/data/adversarial/large/swagger2.json",
}
ALL_SPECS = {**CASES, **LARGE}


def golden_target(gateway: str) -> RenderTarget:
    """The target goldens are rendered for; only ``workdir`` differs between gateways."""
    return RenderTarget(
        workdir=f"/srv/gatebench/{gateway}",
        listen_host="127.0.0.1",
        listen_port=8080,
        backend_url="http://127.0.0.1:9000",
        admin_port=8081,
    )


@cache
def case_api(case: str) -> Api:
    api = load_spec(ROOT / ALL_SPECS[case]).api
    assert api is not None
    return api


def render_case(renderer: Renderer, case: str, target: RenderTarget | None = None) -> dict[str, str]:
    """The files of one case, or ``{"errors.txt": ...}`` when the gateway refuses it."""
    target = target or golden_target(renderer.name)
    try:
        return renderer.render(case_api(case), target)
    except UnsupportedFeature as exc:
        return {ERRORS_FILE: "".join(p.format(ALL_SPECS[case]) + "\n" for p in exc.problems)}
