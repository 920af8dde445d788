"""The import contract that keeps circles out (``.importlinter``, contract ``acyclic``) is kept
by this checkout and fails when one of the circles it replaced comes back: run on a copy of
the package with the import put back. The three were type-only imports (``TYPE_CHECKING``)
or a lazy one inside a function; the contract counts both."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paths import ROOT

LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")
CIRCLES = {
    # the module that gets the import back, the import, the circle's two edges (import-linter
    # names one of them as the import to remove)
    "trust imports aggregate": (
        "core/trust.py",
        "from . import aggregate",
        (".trust -> .aggregate", ".aggregate -> .trust"),
    ),
    "_envoy_policies imports envoy": (
        "core/renderers/_envoy_policies.py",
        "from . import envoy",
        ("._envoy_policies -> .envoy", ".envoy -> ._envoy_policies"),
    ),
    "spec._apib imports spec._reader": (
        "core/spec/_apib.py",
        "from . import _reader",
        ("._apib -> ._reader", "._reader -> ._apib"),
    ),
}


def _lint(package_root: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    return subprocess.run(
        [LINT_IMPORTS, "--config", str(config), "--no-cache"],
        cwd=package_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _acyclic_only(tmp_path: Path) -> Path:
    """The repository's contract, alone in a configuration of its own."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter", encoding="utf-8")
    only = configparser.ConfigParser()
    only["importlinter"] = {"root_package": parser["importlinter"]["root_package"]}
    only["importlinter:contract:acyclic"] = dict(parser["importlinter:contract:acyclic"])
    path = tmp_path / "acyclic.ini"
    with path.open("w", encoding="utf-8") as fh:
        only.write(fh)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("circle", sorted(CIRCLES))
def test_the_acyclic_contract_fails_on_a_circle_put_back(tmp_path: Path, circle: str) -> None:
    config = _acyclic_only(tmp_path)
    copy = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "gatebench",
        copy / "gatebench",
        ignore=shutil.ignore_patterns("__pycache__", "_data"),
    )
    kept = _lint(copy, config)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    module, line, edges = CIRCLES[circle]
    path = copy / "gatebench" / module
    path.write_text(
        path.read_text(encoding="utf-8") + f"\n{line}  # noqa: E402\n", encoding="utf-8"
    )
    broken = _lint(copy, config)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "BROKEN" in broken.stdout
    assert any(edge in broken.stdout for edge in edges), broken.stdout
