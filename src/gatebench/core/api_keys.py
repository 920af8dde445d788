"""API keys for the ``auth.api_key`` policy: read from their environment variable at the edge,
checked once, handed to the renderers, and kept out of every file a run stores.

A plan never holds a key: ``policies.auth.api_key.keys_env`` names the variable (default
``GATEBENCH_API_KEYS``) whose value lists the valid keys, comma-separated. The runner and
``gatebench render`` read it (:func:`with_api_keys`) and pass the keys to the renderers inside
:class:`~gatebench.core.policies.ApiKeyAuth` (``keys``), never inside the plan they store.

A key must be 16 to 256 characters of ``A-Za-z0-9-._~`` (RFC 3986 unreserved): sent the same
in a header and in a query string, never percent-encoded by a client, and nothing a
configuration language treats specially, so no key can open a string, a directive or a
regex construct. Anything else is refused with the variable's name and the key's position,
never its text. Gateways that can compare a hash (HAProxy ``sha2(256)``, Apache ``sha1()``)
get hashes; the others need the keys themselves in their configuration, which the local
provisioner redacts (:func:`redact`) once the gateway has read it and again at teardown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import replace

from gatebench.core.errors import Problem, RenderError, RunError
from gatebench.core.policies import ApiKeyAuth, Policies, PolicySet

KEY_ALPHABET = "A-Za-z0-9-._~"
MIN_KEY_LENGTH = 16
MAX_KEY_LENGTH = 256
REDACTED = "REDACTED-API-KEY"
"""What replaces a key in a stored copy (itself a valid key, so the copy still parses)."""

_KEY = re.compile(r"[A-Za-z0-9._~-]+")
_NAMES = {
    '"': "a double quote",
    "'": "a single quote",
    " ": "a space",
    "\t": "a tab",
    "\n": "a newline",
    "\r": "a carriage return",
    ";": "a semicolon",
    "\\": "a backslash",
    "$": "a dollar sign",
    "{": "a brace",
    "}": "a brace",
}


def parse_api_keys(env: str, value: str | None) -> tuple[str, ...]:
    """The keys listed in ``value`` (the variable ``env``'s text), in order, without
    duplicates. Raises :class:`RunError` naming ``env`` (never a key's text)."""
    problems = key_problems(env, value)
    if problems:
        raise RunError("; ".join(problems))
    assert value is not None
    return tuple(dict.fromkeys(k.strip() for k in value.strip().split(",")))


def key_problems(env: str, value: str | None) -> list[str]:
    """Why ``value`` is not a valid key list for the variable ``env`` (empty: it is)."""
    where = f"environment variable {env} (the valid keys of the auth.api_key policy)"
    if value is None or not value.strip():
        return [
            f"{where} is not set or empty; export {env}=KEY1,KEY2 (comma-separated, "
            f"{MIN_KEY_LENGTH} to {MAX_KEY_LENGTH} characters of {KEY_ALPHABET} each)"
        ]
    keys = [k.strip(" \t") for k in value.strip().split(",")]
    out: list[str] = []
    for n, key in enumerate(keys, 1):
        at = f"{where}: key {n} of {len(keys)}"
        bad = next((i for i, c in enumerate(key) if not _KEY.fullmatch(c)), None)
        if bad is not None:
            char = key[bad]
            name = _NAMES.get(char, f"character U+{ord(char):04X}")
            out.append(
                f"{at} has {name} at position {bad + 1}; a key is {KEY_ALPHABET} only "
                "(keys are separated by commas)"
            )
        elif not MIN_KEY_LENGTH <= len(key) <= MAX_KEY_LENGTH:
            out.append(
                f"{at} has {len(key)} characters; a key has {MIN_KEY_LENGTH} to {MAX_KEY_LENGTH}"
            )
    return out


def api_key_envs(policies: PolicySet) -> tuple[str, ...]:
    """The variables the policies read keys from, sorted."""
    return tuple(
        sorted({p.auth.keys_env for p in policies.all_policies() if isinstance(p.auth, ApiKeyAuth)})
    )


def with_api_keys(policies: PolicySet, environ: Mapping[str, str]) -> PolicySet:
    """``policies`` with every ``auth.api_key`` policy's keys read from ``environ``. Raises
    :class:`RunError` (one sentence per problem) when a variable is unset or holds a bad key."""
    envs = api_key_envs(policies)
    if not envs:
        return policies
    problems = [p for env in envs for p in key_problems(env, environ.get(env))]
    if problems:
        raise RunError("; ".join(problems))
    keys = {env: parse_api_keys(env, environ[env]) for env in envs}

    def fill(p: Policies) -> Policies:
        if isinstance(p.auth, ApiKeyAuth):
            return replace(p, auth=replace(p.auth, keys=keys[p.auth.keys_env]))
        return p

    return PolicySet(
        default=fill(policies.default),
        operations=tuple((op, fill(p)) for op, p in policies.operations),
    )


def policy_keys(policies: PolicySet) -> tuple[str, ...]:
    """Every key the (filled) policies hold, longest first (the order :func:`redact` needs)."""
    found = {
        k for p in policies.all_policies() if isinstance(p.auth, ApiKeyAuth) for k in p.auth.keys
    }
    return tuple(sorted(found, key=lambda k: (-len(k), k)))


def redact(text: str, keys: tuple[str, ...]) -> str:
    """``text`` with every key replaced by :data:`REDACTED` (longest keys first)."""
    for key in sorted(keys, key=len, reverse=True):
        text = text.replace(key, REDACTED)
    return text


def checked_keys(auth: ApiKeyAuth, gateway: str) -> tuple[str, ...]:
    """The policy's keys for a renderer, checked again (a renderer is pure and may be called
    with keys from anywhere). Raises :class:`RenderError` at ``/x-gatebench/policies``."""
    pointer = "/x-gatebench/policies"
    if not auth.keys:
        raise RenderError(
            [
                Problem(
                    pointer,
                    f"{gateway}: the auth.api_key policy has no keys; they are read from "
                    f"${auth.keys_env} when the configuration is rendered for a run "
                    "(gatebench.core.api_keys.with_api_keys)",
                )
            ]
        )
    problems = key_problems(auth.keys_env, ",".join(auth.keys))
    if problems or any("," in k for k in auth.keys):
        raise RenderError(
            [Problem(pointer, p) for p in problems or [f"${auth.keys_env}: a key holds a comma"]]
        )
    return auth.keys


def sha256_hex(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def sha1_hex(key: str) -> str:
    """Apache's strongest expression hash (``sha1()``); a key has at least 16 characters."""
    return hashlib.sha1(key.encode()).hexdigest()


__all__ = [
    "KEY_ALPHABET",
    "MAX_KEY_LENGTH",
    "MIN_KEY_LENGTH",
    "REDACTED",
    "api_key_envs",
    "checked_keys",
    "key_problems",
    "parse_api_keys",
    "policy_keys",
    "redact",
    "sha1_hex",
    "sha256_hex",
    "with_api_keys",
]
