"""Copies the non-Python source trees into the wheel as package data (gatebench/_data/).

frontend/, gatling/, backend/, loadgen/ and gateways/ stay at the top of the repository; an installed
gatebench finds them under gatebench/_data/ (src/gatebench/local/_resources.py). Everything else
about the package is in pyproject.toml. Editable installs skip the copy: they read the
checkout's folders directly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA_TREES = ("backend", "frontend", "gateways", "gatling", "loadgen")
SKIP = shutil.ignore_patterns("target", "node_modules", "__pycache__", "*.actual", ".*")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        data = Path(self.build_lib) / "gatebench" / "_data"
        if data.exists():
            shutil.rmtree(data)
        for name in DATA_TREES:
            shutil.copytree(ROOT / name, data / name, ignore=SKIP)


setup(cmdclass={"build_py": BuildPyWithData})
