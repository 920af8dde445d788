"""The package's version is said once in the code (gatebench.core._version) and matches the
wheel's (pyproject.toml)."""

from __future__ import annotations

import tomllib

import gatebench
from gatebench.core._version import __version__
from paths import ROOT


def test_the_version_is_the_wheels() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert gatebench.__version__ == __version__ == project["version"]
