"""A small valid ``x-gatebench`` section over the auction example, and the errors a plan
raises: shared by the plan tests (``from plans import plan_errors, section``)."""

from __future__ import annotations

from typing import Any

import pytest

from gatebench.core.errors import PlanError
from gatebench.core.ir import Api
from gatebench.core.plan import build_plan
from gatebench.core.spec import load_spec
from paths import EXAMPLES


def auction_api() -> Api:
    result = load_spec(EXAMPLES / "auction" / "openapi.yaml")
    assert result.api is not None
    return result.api


def section(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "gateways": ["nginx"],
        "workloads": [{"name": "get", "operation": "getAuction", "injection": {"sequential": 10}}],
        "auth": {"bearer": {"env": "TOKEN"}},
    }
    base.update(overrides)
    return base


def plan_errors(api: Api, data: Any) -> list[tuple[str, str]]:
    with pytest.raises(PlanError) as info:
        build_plan(data, api)
    return [(p.pointer, p.message) for p in info.value.errors]
