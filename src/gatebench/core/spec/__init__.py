"""Reading API descriptions: bytes → documents → validation → IR.

``read_spec`` never raises for a bad input: every problem (syntax, safety limit, validation)
comes back located in :attr:`SpecResult.problems`. ``load_spec`` raises the matching
:class:`~gatebench.core.errors.SpecError` when there is at least one error.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from typing import Any

from gatebench.core.errors import (
    Problem,
    SpecError,
    SpecSyntaxError,
    SpecValidationError,
)
from gatebench.core.ir import Api, MediaType, Operation, is_media_type
from gatebench.core.spec._bundle import (
    Bundle,
    OutsideBundle,
    bundle_from_bytes,
    bundle_from_path,
    join_inside,
)
from gatebench.core.spec._conformance import conformance_problems, strict_problems
from gatebench.core.spec._limits import DEFAULT_LIMITS, Limits
from gatebench.core.spec._openapi import OpenApiBuilder
from gatebench.core.spec._reader import Document, Reader
from gatebench.core.spec._refs import Loc

BENCH_KEY = "x-gatebench"
_SEVERITY_ORDER = {"error": 0, "warning": 1, "note": 2}


@dataclass
class SpecResult:
    """Everything known after reading a description: the IR (when it could be built),
    every problem (errors, warnings, notes), and the raw benchmark section with its place."""

    api: Api | None
    problems: list[Problem]
    reader: Reader | None
    sha256: str = ""
    benchmark: Any = None
    benchmark_loc: Loc | None = None
    syntax_failed: bool = False
    spec_name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    def raise_for_errors(self) -> None:
        if not self.errors:
            return
        cls = SpecSyntaxError if self.syntax_failed else SpecValidationError
        raise cls(self.problems)

    def in_plan(self, problem: Problem) -> Problem:
        """A problem of the plan written at ``/x-gatebench/...`` (what a kind of run refuses
        of a plan it is given: ``kinds.request.RunRequest.problems``), placed where this
        description's section is (its benchmark file, its pointer) with its line and column."""
        prefix = "/" + BENCH_KEY
        at = self.benchmark_loc
        if at is None or problem.source or not problem.pointer.startswith(prefix):
            return problem
        moved = Problem(
            at.pointer + problem.pointer[len(prefix) :],
            problem.message,
            problem.severity,
            source=at.doc,
        )
        return self.reader.locate(moved) if self.reader is not None else moved


def read_spec(
    source: str | os.PathLike[str] | bytes,
    *,
    name: str | None = None,
    entry: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    strict: bool = False,
) -> SpecResult:
    """Read a description from a path (file, folder, zip) or from uploaded bytes."""
    try:
        if isinstance(source, bytes):
            bundle = bundle_from_bytes(name or "spec", source, limits, entry=entry)
        else:
            bundle = bundle_from_path(source, limits, entry=entry)
    except SpecSyntaxError as exc:
        return SpecResult(None, _finish(exc.problems, None), None, syntax_failed=True)
    return read_bundle(bundle, limits=limits, strict=strict)


def read_bundle(
    bundle: Bundle, *, limits: Limits = DEFAULT_LIMITS, strict: bool = False
) -> SpecResult:
    reader = Reader(bundle, limits)
    result = SpecResult(None, [], reader)
    try:
        entry = reader.entry
        result.sha256 = hashlib.sha256(bundle.read(bundle.entry)).hexdigest()
        doc = _follow_benchmark_file(reader, entry, result)
        result.spec_name = doc.name
        api, problems = _build(reader, doc, strict)
        result.api = api
        result.problems.extend(problems)
        if result.benchmark is None and isinstance(doc.data, dict) and BENCH_KEY in doc.data:
            result.benchmark = doc.data[BENCH_KEY]
            result.benchmark_loc = Loc(doc.name, "/" + BENCH_KEY)
    except SpecSyntaxError as exc:
        result.problems.extend(exc.problems)
        result.syntax_failed = True
        result.api = None
    result.problems = _finish(reader.warnings + result.problems, reader)
    if result.errors:
        result.api = None
    return result


def load_spec(
    source: str | os.PathLike[str] | bytes,
    *,
    name: str | None = None,
    entry: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    strict: bool = False,
) -> SpecResult:
    """Like :func:`read_spec`, but raises :class:`SpecError` when there is an error."""
    result = read_spec(source, name=name, entry=entry, limits=limits, strict=strict)
    result.raise_for_errors()
    return result


def _follow_benchmark_file(reader: Reader, entry: Document, result: SpecResult) -> Document:
    """A benchmark file (``x-gatebench`` with ``spec:``, no API) points to an unmodified spec."""
    data = entry.data
    if not (
        isinstance(data, dict)
        and BENCH_KEY in data
        and "openapi" not in data
        and "swagger" not in data
    ):
        return entry
    if entry.format == "raml":
        return entry
    section = data[BENCH_KEY]
    loc = Loc(entry.name, "/" + BENCH_KEY)
    result.benchmark, result.benchmark_loc = section, loc
    target = section.get("spec") if isinstance(section, dict) else None
    if not isinstance(target, str) or not target:
        raise SpecSyntaxError(
            [
                Problem(
                    loc.pointer + ("/spec" if isinstance(section, dict) else ""),
                    "a benchmark file needs 'spec': the relative path of the API description",
                    source=entry.name,
                )
            ]
        )
    try:
        name = join_inside(entry.name, target)
    except OutsideBundle as exc:
        raise SpecSyntaxError(
            [Problem(loc.pointer + "/spec", f"{target!r}: {exc}", source=entry.name)]
        ) from None
    try:
        found = reader.bundle.exists(name)
    except OutsideBundle as exc:
        raise SpecSyntaxError(
            [Problem(loc.pointer + "/spec", f"{target!r}: {exc}", source=entry.name)]
        ) from None
    if not found:
        raise SpecSyntaxError(
            [
                Problem(
                    loc.pointer + "/spec",
                    f"{target!r}: no such file beside the benchmark file",
                    source=entry.name,
                )
            ]
        )
    return reader.document(name)


def _build(reader: Reader, doc: Document, strict: bool) -> tuple[Api | None, list[Problem]]:
    api, problems = _read(reader, doc, strict)
    if api is None:
        return api, problems
    return _sendable(api, doc.name, problems), problems


def _sendable(api: Api, source: str, problems: list[Problem]) -> Api:
    """``api`` without the media types a ``Content-Type`` header cannot carry (a line break, a
    list, a word without ``/``), each left out with a warning at its operation: the request
    body's go into every request the engines send, the responses' into the mock's answers."""

    def kept(content: tuple[MediaType, ...], op: Operation, what: str) -> tuple[MediaType, ...]:
        for media in (m for m in content if not is_media_type(m.media_type)):
            said = f"{what} media type {media.media_type!r} is not a media type (type/subtype, "
            said += "RFC 9110 8.3.1): left out"
            problems.append(Problem(op.pointer, said, "warning", source=source))
        return tuple(m for m in content if is_media_type(m.media_type))

    operations = []
    for op in api.operations:
        body = op.request_body
        if body is not None:
            content = kept(body.content, op, "request body")
            body = replace(body, content=content) if content else None
        responses = tuple(
            replace(r, content=kept(r.content, op, f"response {r.status}")) for r in op.responses
        )
        operations.append(replace(op, request_body=body, responses=responses))
    return replace(api, operations=tuple(operations))


def _read(reader: Reader, doc: Document, strict: bool) -> tuple[Api | None, list[Problem]]:
    if doc.format == "apib":
        from gatebench.core.spec._apib import read_blueprint

        return read_blueprint(doc)
    if doc.format == "raml":
        from gatebench.core.spec._raml import RamlBuilder

        raml = RamlBuilder(reader, doc)
        return raml.build(), raml.problems
    builder = OpenApiBuilder(reader, doc)
    api = builder.build()
    problems = list(builder.problems)
    if builder.version:
        # The builder's own finding at a place says more than the schema's there.
        places = {(p.source, p.pointer) for p in problems}
        problems.extend(
            p
            for p in conformance_problems(doc.data, builder.version, doc.name)
            if (p.source, p.pointer) not in places
        )
        if strict:
            problems.extend(strict_problems(reader, doc, builder.version))
    return api, problems


def _finish(problems: list[Problem], reader: Reader | None) -> list[Problem]:
    if reader is not None:
        reader.locate_all(problems)
    located = [reader.locate(p) for p in problems] if reader is not None else list(problems)
    unique = list(dict.fromkeys(located))
    # An error at a place makes a schema warning at the same place redundant.
    error_places = {(p.source, p.pointer) for p in unique if p.severity == "error"}
    unique = [
        p for p in unique if p.severity == "error" or (p.source, p.pointer) not in error_places
    ]
    unique.sort(
        key=lambda p: (
            _SEVERITY_ORDER[p.severity],
            p.source or "",
            p.line or 0,
            p.column or 0,
            p.pointer,
            p.message,
        )
    )
    return unique


__all__ = [
    "BENCH_KEY",
    "DEFAULT_LIMITS",
    "Limits",
    "SpecError",
    "SpecResult",
    "load_spec",
    "read_bundle",
    "read_spec",
]
