"""Golden tests first: with ``--update-goldens`` (``make goldens``) the files are rewritten
before the contract, checker and schema tests in this folder read them."""

from __future__ import annotations

from pathlib import Path

import pytest

# The path constants of tests/conftest.py, repeated on purpose: tests import them by name
# (`from conftest import ROOT`), and `conftest` is whichever conftest pytest imported last.
ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: 0 if item.path.name == "test_goldens.py" else 1)
