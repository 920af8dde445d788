"""``parse``: what the plan asks of this machine, checked before anything starts.

The description and the plan were read by the caller (``gatebench run``, ``gatebench serve``:
``read_spec``, ``load_plan``), as the cloud's parse function reads them; here the run's own
choices are checked against this machine: the load engine is installed and can run every
workload (``--engine`` may differ from the plan's), every credential variable the plan names
is set. With ``auth.jwt`` the run signs its bearer tokens (the key's fingerprint goes in the
notes; a pool of tokens lives in a file that teardown deletes). The run reaches ``parsed``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gatebench.core.api_keys import api_key_envs, key_problems, with_api_keys
from gatebench.core.capabilities import injection_problem, token_pool_problem
from gatebench.core.errors import Problem, RunError, Severity
from gatebench.core.fairness import plan_concurrency
from gatebench.core.model import RunStatus
from gatebench.core.plan import Plan
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._base import DEFAULT_CONCURRENCY
from gatebench.core.spec import BENCH_KEY, SpecResult
from gatebench.core.tokens import SIGNED_TOKEN_ENV, SIGNED_TOKENS_FILE_ENV
from gatebench.run._base import Stage

if TYPE_CHECKING:
    from gatebench.run._context import RunContext, RunOutcome


@dataclass(frozen=True)
class Parsed:
    """What the run sends and with what."""

    plan: Plan
    """The plan whose auth sends the run's signed tokens (the context's plan otherwise)."""
    engine: str
    """The load engine's name."""
    policies: PolicySet
    """What every gateway enforces, API keys included (read from their variable here)."""
    concurrency: int = DEFAULT_CONCURRENCY
    """The most requests the run holds in flight through a gateway: no pool is rendered
    below it (``gatebench.core.fairness.plan_concurrency``)."""


class Parse(Stage):
    """``parse``: the run's signed tokens and secrets, the load engine (:meth:`engine`) and the
    concurrency the gateways' pools hold (:meth:`concurrency`)."""

    name = "parse"
    step = RunStatus.PARSED
    moves = "end"
    gives = Parsed

    def check(self, ctx: RunContext) -> None:
        name = engine_name(ctx)
        ctx.machine.engine(name).check()
        check_engine_supports(name, ctx.plan)

    def run(self, ctx: RunContext) -> Parsed:
        plan = ctx.resources.enter_context(signed_tokens(ctx.plan, ctx.outcome))
        check_secrets(plan)
        # The gateways get the API keys from their variable; the stored plan never holds them.
        return Parsed(
            plan,
            self.engine(ctx),
            with_api_keys(plan.policies, os.environ),
            self.concurrency(plan),
        )

    def engine(self, ctx: RunContext) -> str:
        return engine_name(ctx)

    def concurrency(self, plan: Plan) -> int:
        return plan_concurrency(plan)


def engine_name(ctx: RunContext) -> str:
    return ctx.options.engine or ctx.plan.engine


def check_engine_supports(engine_name: str, plan: Plan) -> None:
    """A plan validated for one engine may be run with another (``--engine``): refuse what it
    cannot run before anything starts."""
    for w in plan.workloads:
        inj = w.injection
        reason = injection_problem(engine_name, inj.kind, inj.duration, inj.requests)
        if reason is not None:
            raise RunError(f"workload {w.name!r}: {reason}")
    if plan.auth.jwt_private_key_env is not None:
        problem = token_pool_problem(engine_name, plan.auth.jwt_subjects)
        if problem is not None:
            raise RunError(f"auth.jwt.subjects: {problem}")


def check_secrets(plan: Plan) -> None:
    missing = _unset_auth(plan, os.environ)
    if missing:
        raise RunError(missing[0])


def _unset_auth(plan: Plan, environ: Mapping[str, str]) -> list[str]:
    names = (
        plan.auth.bearer_env,
        plan.auth.basic_username_env,
        plan.auth.basic_password_env,
        plan.auth.api_key_env,
    )
    return [
        f"environment variable {n} is not set; the plan's auth reads the credential from it "
        f"when requests are sent (export {n}=...)"
        for n in names
        if n and not environ.get(n)
    ]


def _unset_signing_key(name: str) -> str:
    return (
        f"environment variable {name} is not set; auth.jwt signs the tokens with the PEM "
        f'private key it holds (export {name}="$(cat key.pem)")'
    )


def environment_problems(
    plan: Plan, environ: Mapping[str, str], base: str = "/" + BENCH_KEY
) -> list[Problem]:
    """What this stage would refuse of ``environ`` for ``plan``: every credential variable
    the plan's auth reads that is unset, and the API keys its policies read, each at its key
    (``gatebench serve`` says it before a run is queued, not when the run fails at once);
    ``base``: where the plan is."""
    out = [Problem(f"{base}/auth", m) for m in _unset_auth(plan, environ)]
    signing = plan.auth.jwt_private_key_env
    if signing and not environ.get(signing):
        out.append(Problem(f"{base}/auth/jwt", _unset_signing_key(signing)))
    for env in api_key_envs(plan.policies):
        out += [Problem(f"{base}/policies", m) for m in key_problems(env, environ.get(env))]
    return out


def unset_credentials(
    plan: Plan,
    spec: SpecResult,
    environ: Mapping[str, str],
    said: str,
    *,
    severity: Severity = "error",
    plan_file: str | None = None,
) -> list[Problem]:
    """``environment_problems`` as the edges say them before a run: at the line of the spec's
    ``x-gatebench`` (or in ``plan_file``, the plan read apart), ``said`` appended (what the
    unset variable means where it is checked) and at ``severity`` (``gatebench validate``
    notes them: another machine may set them; ``gatebench serve`` refuses the upload)."""
    where = spec.benchmark_loc if plan_file is None else None
    found = environment_problems(plan, environ, *([where.pointer] if where else []))
    source = where.doc if where is not None else (plan_file or spec.spec_name or None)
    out = [replace(p, severity=severity, message=p.message + said, source=source) for p in found]
    return [spec.reader.locate(p) for p in out] if where and spec.reader else out


@contextlib.contextmanager
def signed_tokens(plan: Plan, outcome: RunOutcome) -> Iterator[Plan]:
    """With ``auth.jwt``: sign the requests' bearer tokens with the private key from its
    variable and the JWT policy's claims, valid for the run's estimated length plus a margin
    (or the plan's lifetime, refused when shorter); the run records the key's fingerprint
    only. One subject: the token goes to the engine in this process's environment; a pool:
    one token per subject in a temporary file, deleted when the block ends. Yields the plan
    whose auth sends them."""
    from gatebench.core.cost import load_seconds
    from gatebench.core.tokens import TokenSignerError, signer_from_spec, signing_spec, token_file

    name = plan.auth.jwt_private_key_env
    if name is None:
        yield plan
        return
    pem = os.environ.get(name)
    if not pem:
        raise RunError(_unset_signing_key(name))
    try:
        signer = signer_from_spec(signing_spec(plan, load_seconds(plan.to_dict())), pem)
    except TokenSignerError as exc:
        raise RunError(f"auth.jwt: {exc} (key from ${name})") from None
    described = ", ".join(f"{k} {v}" for k, v in signer.describe().items())
    outcome.notes.append(f"bearer tokens signed by the run ({described})")
    if plan.auth.jwt_subjects == 1:
        os.environ[SIGNED_TOKEN_ENV] = signer.sign(0)
        try:
            yield replace(plan, auth=replace(plan.auth, bearer_env=SIGNED_TOKEN_ENV))
        finally:
            os.environ.pop(SIGNED_TOKEN_ENV, None)
        return
    with token_file(signer.tokens(plan.auth.jwt_subjects)) as path:
        os.environ[SIGNED_TOKENS_FILE_ENV] = str(path)
        try:
            yield replace(
                plan,
                auth=replace(plan.auth, bearer_env=SIGNED_TOKENS_FILE_ENV, bearer_per_user=True),
            )
        finally:
            os.environ.pop(SIGNED_TOKENS_FILE_ENV, None)


__all__ = [
    "Parse",
    "Parsed",
    "check_engine_supports",
    "check_secrets",
    "environment_problems",
    "signed_tokens",
    "unset_credentials",
]
