"""Where the section comes from: the description's own ``x-gatebench``, the benchmark file
it was reached through, or a separate file (``--plan``); problems located in that file."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gatebench.core.errors import PlanError, Problem
from gatebench.core.plan._build import build_plan
from gatebench.core.plan._model import Plan


def load_plan(result: Any, plan_file: str | None = None) -> Plan:
    """The plan for a read spec: from ``plan_file`` (a separate benchmark file), else from the
    spec's own ``x-gatebench`` (or the benchmark file it was reached through).

    ``result`` is a :class:`gatebench.core.spec.SpecResult` without errors.
    """
    from gatebench.core.spec import BENCH_KEY, DEFAULT_LIMITS
    from gatebench.core.spec._bundle import bundle_from_path
    from gatebench.core.spec._reader import Reader

    api = result.api
    if api is None:
        raise PlanError("the API description has errors; fix them first")
    reader = result.reader
    bundle = reader.bundle if reader is not None else None
    if plan_file is not None:
        try:
            bundle = bundle_from_path(plan_file, DEFAULT_LIMITS)
            reader = Reader(bundle, DEFAULT_LIMITS)
            data = reader.entry.data
        except Exception as exc:  # SpecSyntaxError carries located problems
            problems = getattr(exc, "problems", None)
            if problems is None:
                raise
            raise PlanError(problems) from None
        if not isinstance(data, dict) or BENCH_KEY not in data:
            raise PlanError(
                [
                    Problem(
                        "",
                        f"a benchmark file needs a top-level '{BENCH_KEY}' section",
                        source=bundle.entry,
                    )
                ]
            )
        section, base, source = data[BENCH_KEY], "/" + BENCH_KEY, bundle.entry
    else:
        if result.benchmark_loc is None:
            raise PlanError(
                [
                    Problem(
                        "",
                        f"no '{BENCH_KEY}' section: add one to the description (see examples/) "
                        "or pass a benchmark file with --plan",
                        source=result.spec_name or None,
                    )
                ]
            )
        section, base, source = (
            result.benchmark,
            result.benchmark_loc.pointer,
            result.benchmark_loc.doc,
        )
    try:
        plan = build_plan(
            section, api, base_pointer=base, source=source, read_file=_bundle_reader(bundle, source)
        )
    except PlanError as exc:
        located = [reader.locate(p) for p in exc.problems] if reader is not None else exc.problems
        raise PlanError(located) from None
    if reader is not None and plan.warnings:
        plan = replace(plan, warnings=tuple(reader.locate(p) for p in plan.warnings))
    return plan


def _bundle_reader(bundle: Any, source: str | None) -> Callable[[str], str] | None:
    """Reads a file named relative to the plan's own file, inside its bundle only."""
    if bundle is None:
        return None
    folder = posixpath.dirname(source or bundle.entry or "")

    def read(name: str) -> str:
        full = posixpath.normpath(posixpath.join(folder, name))
        if full.startswith("../") or full == "..":
            raise ValueError("the path leads outside the bundle")
        try:
            data: bytes = bundle.read(full)
        except FileNotFoundError:
            raise ValueError("no such file in the bundle") from None
        except Exception as exc:  # OutsideBundle, the size budget
            raise ValueError(str(exc).split("\n")[0]) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("not UTF-8 text") from None

    return read
