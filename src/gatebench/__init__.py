"""gatebench: which API gateway serves *your* API best, under *your* workload, on *your* hardware."""

from __future__ import annotations

from gatebench.core._version import __version__
from gatebench.core.errors import (
    GatebenchError,
    PlanError,
    Problem,
    RenderError,
    RunError,
    SpecError,
    SpecSyntaxError,
    SpecValidationError,
    StoreError,
    UnsupportedFeature,
    UnsupportedHere,
)
from gatebench.core.ir import Api, Operation
from gatebench.core.plan import Plan, build_plan, load_plan
from gatebench.core.spec import SpecResult, load_spec, read_spec

__all__ = [
    "Api",
    "GatebenchError",
    "Operation",
    "Plan",
    "PlanError",
    "Problem",
    "RenderError",
    "RunError",
    "SpecError",
    "SpecResult",
    "SpecSyntaxError",
    "SpecValidationError",
    "StoreError",
    "UnsupportedFeature",
    "UnsupportedHere",
    "__version__",
    "build_plan",
    "load_plan",
    "load_spec",
    "read_spec",
]
