"""A route a gateway cannot express is left out of that gateway's configuration, unless a
workload needs it.

Renderers refuse what their gateway cannot express with one located problem per route
(:class:`~gatebench.errors.UnsupportedFeature`). A description of a thousand routes where
three use HEAD should still benchmark KrakenD on the routes the workloads use: those three are
left out of its configuration, each with a located warning, and the report says how many.
Only a route a workload needs excludes the gateway, with the reason. Every renderer gets
this from one place, without knowing about it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from ..errors import Problem, UnsupportedFeature
from ..ir import Api, Operation
from ..policies import PolicySet
from ._base import Renderer, RenderTarget
from ._policies import render_with_policies


@dataclass(frozen=True)
class Rendered:
    """A gateway's files, and the routes left out of them (located warnings)."""

    files: dict[str, str]
    left_out: tuple[Problem, ...] = ()
    operations: int = 0
    """How many operations the description has (the denominator of "3 of 1,123")."""
    api: Api | None = None
    """The description as rendered: without the operations left out. A gateway checked by
    booting it boots this, so that its check sees exactly what was written."""

    def summary(self, gateway: str) -> str:
        """``krakend: 3 of 1,123 routes left out (...)``; "" when none is."""
        if not self.left_out:
            return ""
        return (
            f"{gateway}: {len(self.left_out):,} of {self.operations:,} routes left out (it "
            "cannot express them and no workload uses them)"
        )


def render_leaving_out(
    renderer: Renderer,
    api: Api,
    target: RenderTarget,
    needed: Collection[str] = (),
    *,
    policies: PolicySet | None = None,
    allow_missing_policies: bool = False,
) -> Rendered:
    """Render ``api`` for ``renderer``, leaving out the operations it cannot express, with
    the plan's ``policies`` enforced (``render_with_policies``).

    ``needed``: operation ids the workloads use. Raises :class:`UnsupportedFeature` with the
    problems of those only, when the gateway cannot express one of them, and when the gateway
    lacks a feature the policies need (unless ``allow_missing_policies``).
    """
    operations = api.operations
    left_out: list[Problem] = []
    # Each pass leaves out what the renderer refused; operations sharing one route take
    # its place in turn, so a few passes may be needed (never more than there are routes).
    for _ in range(len(api.operations) + 1):
        try:
            files = render_with_policies(
                renderer,
                replace(api, operations=operations),
                target,
                policies or PolicySet(),
                allow_missing=allow_missing_policies,
            )
        except UnsupportedFeature as exc:
            refused = {
                id(op): problem for problem in exc.problems for op in _owners(problem, operations)
            }
            blocking = [
                p
                for p in exc.problems
                if any(op.operation_id in needed for op in _owners(p, operations))
            ]
            unlocated = [p for p in exc.problems if not _owners(p, operations)]
            if blocking or unlocated or not refused:
                raise UnsupportedFeature(blocking or unlocated or list(exc.problems)) from None
            for problem in dict.fromkeys(refused.values()):
                left_out.append(
                    replace(
                        problem,
                        message=problem.message + "; the route is left out of its configuration",
                        severity="warning",
                    )
                )
            operations = tuple(op for op in operations if id(op) not in refused)
            continue
        rendered_api = (
            api if len(operations) == len(api.operations) else replace(api, operations=operations)
        )
        return Rendered(files, tuple(left_out), len(api.operations), rendered_api)
    raise UnsupportedFeature(left_out)  # pragma: no cover - every pass removes an operation


def _owners(problem: Problem, operations: tuple[Operation, ...]) -> list[Operation]:
    """The operations a renderer's problem is about (located at the operation or below)."""
    return [
        op
        for op in operations
        if op.pointer
        and (problem.pointer == op.pointer or problem.pointer.startswith(op.pointer + "/"))
        and (problem.source or "") == op.source
    ]


__all__ = ["Rendered", "render_leaving_out"]
