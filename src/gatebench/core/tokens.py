"""Signing JWTs for a workload, so that a benchmark with JWT validation on measures
validation, not rejection.

The signer holds a private key (PEM, read from a file of the bundle or an environment
variable by the edge that builds it) and signs tokens with the claims the gateway checks:
issuer, audience, subject, ``iat`` and ``exp``. A pool of subjects gives each simulated user
its own ``sub`` (so a per-subject rate limit counts per user): the run signs one token per
subject before the load and hands them to the engine in a file of a private temporary folder
(:func:`token_file`), deleted after the run. The private key lives only in this object: :meth:`TokenSigner.describe` (what runs record) names the key by its
fingerprint, never by its content.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from gatebench.core.errors import GatebenchError
from gatebench.core.policies import JwtAlgorithm, JwtAuth
from gatebench.core.records import fields

if TYPE_CHECKING:  # pragma: no cover
    from gatebench.core.plan import Plan


class TokenSignerError(GatebenchError):
    """The signing key cannot sign for the requested algorithm."""


@dataclass(frozen=True)
class TokenSigner:
    private_key_pem: str = field(repr=False)
    algorithm: JwtAlgorithm
    issuer: str
    audience: str
    lifetime: float = 300.0
    """Seconds from ``iat`` to ``exp``."""
    subjects: tuple[str, ...] = ("gatebench",)

    def __post_init__(self) -> None:
        key = self._key()
        ok = (
            (self.algorithm == "RS256" and isinstance(key, rsa.RSAPrivateKey))
            or (self.algorithm == "ES256" and isinstance(key, ec.EllipticCurvePrivateKey))
            or (self.algorithm == "HS256" and isinstance(key, bytes))
        )
        if not ok:
            raise TokenSignerError(f"the signing key does not fit {self.algorithm}")
        if not self.subjects:
            raise TokenSignerError("the pool of subjects is empty")

    def _key(self) -> Any:
        if self.algorithm == "HS256":
            return self.private_key_pem.encode()
        try:
            return serialization.load_pem_private_key(self.private_key_pem.encode(), None)
        except (ValueError, TypeError) as exc:
            raise TokenSignerError(f"not a PEM private key without a passphrase: {exc}") from None

    def sign(
        self,
        index: int = 0,
        *,
        now: float | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """A token for subject ``index`` (modulo the pool), valid from ``now`` for the
        lifetime; ``extra`` claims override the defaults (tests sign expired tokens so)."""
        issued = int(time.time() if now is None else now)
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": self.subjects[index % len(self.subjects)],
            "iat": issued,
            "exp": issued + int(self.lifetime),
        }
        claims.update(extra or {})
        return jwt.encode(claims, self._key(), algorithm=self.algorithm)

    def tokens(self, count: int, *, now: float | None = None) -> list[str]:
        """One token per subject of the pool (at most ``count``), for a workload's users."""
        return [self.sign(i, now=now) for i in range(min(count, len(self.subjects)))]

    def describe(self) -> dict[str, Any]:
        """What a run records about the signer: never the key, only its fingerprint."""
        return {
            **fields(self, "algorithm issuer audience lifetime"),
            "subjects": len(self.subjects),
            "key_sha256": hashlib.sha256(self.private_key_pem.encode()).hexdigest()[:16],
        }


SIGNED_TOKEN_ENV = "GATEBENCH_SIGNED_TOKEN"
"""Where a local run puts the token it signed (``auth.jwt`` with one subject), for the load
engine only: in the process's environment, never in a file of the run."""
SIGNED_TOKENS_FILE_ENV = "GATEBENCH_SIGNED_TOKENS_FILE"
"""The path of the file holding one token per subject (:func:`token_file`), for the load
engine, which gives simulated user i the token of subject i mod the pool: a local run with a
pool of subjects, and every cloud tester that signs (``signing`` in its workload)."""


def signing_spec(plan: Plan, estimated_run_s: float) -> dict[str, Any]:
    """What a signer needs besides its key, from a plan with ``auth.jwt``: the first JWT
    policy's algorithm, issuer and audience, the pool's size and the tokens' lifetime
    (:func:`token_lifetime`; TokenSignerError when the plan's is too short). Plain data: the
    cloud path carries it in the workload document to the tester, which signs there."""
    policy = next(p.auth for p in plan.policies.all_policies() if isinstance(p.auth, JwtAuth))
    return {
        "algorithm": policy.algorithms[0],
        "issuer": policy.issuer,
        "audience": policy.audience,
        "subjects": plan.auth.jwt_subjects,
        "lifetime": token_lifetime(estimated_run_s, plan.auth.jwt_lifetime),
    }


def signer_from_spec(spec: Mapping[str, Any], private_key_pem: str) -> TokenSigner:
    """The signer of a :func:`signing_spec` with its key (TokenSignerError when they do not
    fit, or when the spec is not one)."""
    try:
        algorithm = spec["algorithm"]
        if algorithm not in ("RS256", "ES256", "HS256"):
            raise TokenSignerError(f"unknown algorithm {algorithm!r}")
        return TokenSigner(
            private_key_pem,
            algorithm,
            str(spec["issuer"]),
            str(spec["audience"]),
            lifetime=float(spec["lifetime"]),
            subjects=subject_pool("gatebench", int(spec["subjects"])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise TokenSignerError(f"not a signing spec: {exc!r}") from None


TOKEN_MARGIN_S = 300.0
"""How much longer than the run's estimated length its tokens stay valid: the estimate
counts seconds per request, and gateways take their time to boot."""


def token_lifetime(estimated_run_s: float, given: float | None) -> float:
    """The tokens' lifetime: the plan's (``auth.jwt.lifetime``), or the run's estimated length
    plus :data:`TOKEN_MARGIN_S` rounded up to a minute. A given lifetime shorter than that is
    refused: tokens expiring mid-run would measure rejection, not validation."""
    needed = estimated_run_s + TOKEN_MARGIN_S
    if given is None:
        return float(math.ceil(needed / 60.0) * 60)
    if given < needed:
        raise TokenSignerError(
            f"lifetime {given:g}s is shorter than this run (about {estimated_run_s:.0f}s of "
            f"load) plus a {TOKEN_MARGIN_S:.0f}s margin: its tokens would expire during the "
            f"run; give at least {math.ceil(needed)}s, or leave lifetime out (the run's length "
            "plus the margin)"
        )
    return given


def subject_of_user(user: int, pool: int, *, base: int = 0, stride: int = 1) -> int:
    """The subject (index into the pool) of simulated user ``user`` of a phase: global user
    ``base + user * stride`` (a tester's share of a split phase: gatebench.core.testers) modulo the
    pool. The generic simulation applies the same rule (``GenericSimulation.userToken``)."""
    return (base + user * stride) % pool


@contextlib.contextmanager
def token_file(tokens: Sequence[str]) -> Iterator[Path]:
    """The tokens, one a line, in a file of a private temporary folder (mode 0700, the file
    0600) outside the run's results; the folder is deleted when the block ends, however it
    ends. The load engine reads the file once, when it starts."""
    folder = Path(tempfile.mkdtemp(prefix="gatebench-tokens-"))
    try:
        path = folder / "tokens"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write("".join(f"{t}\n" for t in tokens))
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def subject_pool(prefix: str, size: int) -> tuple[str, ...]:
    """``prefix-1`` … ``prefix-size``: one subject per simulated user."""
    return tuple(f"{prefix}-{i}" for i in range(1, size + 1))


def public_pem(private_key_pem: str) -> str:
    """The public half of a PEM private key (what the gateway's key file holds)."""
    key = serialization.load_pem_private_key(private_key_pem.encode(), None)
    data: bytes = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return data.decode()


def generate_private_key(algorithm: JwtAlgorithm) -> str:
    """A fresh PEM private key for ``RS256`` (RSA 2048) or ``ES256`` (P-256)."""
    key: Any = (
        ec.generate_private_key(ec.SECP256R1())
        if algorithm == "ES256"
        else rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    data: bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return data.decode()


__all__ = [
    "SIGNED_TOKENS_FILE_ENV",
    "SIGNED_TOKEN_ENV",
    "TOKEN_MARGIN_S",
    "TokenSigner",
    "TokenSignerError",
    "generate_private_key",
    "public_pem",
    "signer_from_spec",
    "signing_spec",
    "subject_of_user",
    "subject_pool",
    "token_file",
    "token_lifetime",
]
