"""Every benchmark module imports: `make bench` is not run by `make test`, so a module that
names a function the product no longer has would otherwise be found only when someone measures."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ ships in no wheel
import benchmarks

MODULES = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__))


def test_the_benchmarks_are_found() -> None:
    assert "bench_capacity_examples" in MODULES and len(MODULES) > 20


@pytest.mark.parametrize("name", MODULES)
def test_each_benchmark_module_imports(name: str) -> None:
    importlib.import_module(f"benchmarks.{name}")
