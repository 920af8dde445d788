"""Where things are, for every test. A plain module (``from paths import ROOT``): pytest
imports every conftest.py under the same name, so tests never import from conftest."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "examples"
ARTIFACTS = ROOT / "tests" / "artifacts"
