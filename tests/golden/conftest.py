"""Golden tests first: with ``--update-goldens`` (``make goldens``) the files are rewritten
before the contract, checker and schema tests in this folder read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from paths import DATA, EXAMPLES, ROOT  # noqa: F401


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: 0 if item.path.name == "test_goldens.py" else 1)
