"""A route a gateway cannot express is left out of that gateway's configuration, unless a
workload needs it.

Renderers refuse what their gateway cannot express with one located problem per route
(:class:`~gatebench.core.errors.UnsupportedFeature`). A description of a thousand routes where
three use HEAD should still benchmark KrakenD on the routes the workloads use: those three are
left out of its configuration, each with a located warning, and the report says how many.
Only a route a workload needs excludes the gateway, with the reason. Every renderer gets
this from one place, without knowing about it.

The same holds for a query a gateway would not forward as sent (``Renderer.query_problem``:
KrakenD rebuilds every query): an operation a workload uses whose query repeats a parameter
excludes the gateway, located at the operation, with the reason.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.ir import Api, Operation
from gatebench.core.policies import ApiKeyAuth, PolicySet
from gatebench.core.renderers._base import Renderer, RenderTarget
from gatebench.core.renderers._policies import render_with_policies


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
        query_problems = [
            problem
            for op in operations
            if op.operation_id in needed
            for problem in _query_problems(renderer, op, policies or PolicySet())
        ]
        if query_problems:
            raise UnsupportedFeature(query_problems)
        rendered_api = (
            api if len(operations) == len(api.operations) else replace(api, operations=operations)
        )
        return Rendered(files, tuple(left_out), len(api.operations), rendered_api)
    raise UnsupportedFeature(left_out)  # pragma: no cover - every pass removes an operation


def sent_query_names(op: Operation, policies: PolicySet) -> list[str]:
    """The query parameters a workload of ``op`` may send, in order (gatebench.core.workload): its
    declared query parameters, the API key of the security requirement it sends when that key
    travels in the query, and the key of an ``auth.api_key`` policy read from the query."""
    names = [p.name for p in op.query_params]
    sent = op.sent_security
    names += [
        s.param_name
        for s in (sent.schemes if sent else ())
        if s.kind == "apiKey" and s.location == "query" and s.param_name
    ]
    auth = policies.for_operation(op.operation_id).auth
    if isinstance(auth, ApiKeyAuth) and auth.query:
        names.append(auth.query)
    return names


def _query_problems(renderer: Renderer, op: Operation, policies: PolicySet) -> list[Problem]:
    reason = renderer.query_problem(sent_query_names(op, policies))
    if reason is None:
        return []
    return [
        Problem(
            op.pointer,
            f"{renderer.name} cannot forward the query of this operation unchanged "
            f"({op.method} {op.route_path}): {reason}",
            source=op.source or None,
        )
    ]


def _owners(problem: Problem, operations: tuple[Operation, ...]) -> list[Operation]:
    """The operations a renderer's problem is about (located at the operation or below)."""
    return [
        op
        for op in operations
        if op.pointer
        and (problem.pointer == op.pointer or problem.pointer.startswith(op.pointer + "/"))
        and (problem.source or "") == op.source
    ]


__all__ = ["Rendered", "render_leaving_out", "sent_query_names"]
