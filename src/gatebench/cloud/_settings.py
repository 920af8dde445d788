"""The deployment's settings: ``gs://RUNS_BUCKET/pipeline/settings.json``, written by
Terraform (infra/main.tf, ``local.settings``). Names, ids and limits only, never a secret."""

from __future__ import annotations

import json
from typing import Any, Protocol

from gatebench.cloud._objects import RequestError
from gatebench.core.errors import Problem

SETTINGS_OBJECT = "pipeline/settings.json"


class Reader(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...


def read_settings(bucket: Reader, runs_bucket: str) -> dict[str, Any]:
    data = bucket.read_optional(runs_bucket, SETTINGS_OBJECT)
    where = f"gs://{runs_bucket}/{SETTINGS_OBJECT}"
    if data is None:
        raise RequestError([Problem("", f"{where} is missing: apply infra/ (Terraform) first")])
    try:
        settings = json.loads(data)
    except ValueError as exc:
        raise RequestError([Problem("", f"{where}: {exc}")]) from None
    if not isinstance(settings, dict):
        raise RequestError([Problem("", f"{where}: expected a JSON object")])
    return settings
