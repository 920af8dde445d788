"""The deployment settings (``settings.json``, written by infra/) that the render step's unit
tests give it: one definition, so that a new setting reaches every test at once."""

from __future__ import annotations

from typing import Any

DEPLOYMENT: dict[str, Any] = {
    "project": "proj",
    "prefix": "gb",
    "zone": "europe-central2-a",
    "layout": "dns",
    "subnetwork": "projects/proj/regions/r/subnetworks/s",
    "tags": {"tester": "t", "gateway": "g", "backend": "b"},
    "accounts": {"tester": "t@x", "gateway": "g@x", "backend": "b@x"},
    "runner_image": "r/runner:1",
    "vm_image": "projects/cos-cloud/global/images/cos-133-19999-44-85",
    "limits": {"vm_lifetime": 3600},
}


def deployment(**extra: Any) -> dict[str, Any]:
    """:data:`DEPLOYMENT` with ``extra`` settings added or replaced."""
    return {**DEPLOYMENT, **extra}
