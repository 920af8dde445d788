"""The tester VM signs the run's tokens itself, just before the load (``auth.jwt`` on the
cloud path; docs/cloud.md, "Signed tokens").

The render step puts a ``signing`` section in the workload document: the claims, the pool of
subjects, the lifetime and the Secret Manager secret holding the private key. Never the key:
the bucket holds nothing that can sign. The tester reads the secret with its own service
account (the only one granted it: infra/secrets.tf), signs one token per subject, and hands
them to Gatling the way a local run does (gatebench.core.tokens.token_file: a private temporary
file, deleted when the load ends). The key lives in the tester's memory for that time only.

With ``auth.api_key`` the workload's ``client_key`` section names the variable the load sends
its key from (``auth: {api_key: {env: NAME}}``) and the deployment's ``api_clients`` secret:
the tester reads that secret with its own account and sends its first key, held in its
environment while the load runs (docs/cloud.md, "API keys").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from gatebench.cloud._secrets import SecretManager, SecretReader
from gatebench.core.api_keys import parse_api_keys
from gatebench.core.errors import RunError
from gatebench.core.tokens import (
    SIGNED_TOKENS_FILE_ENV,
    TokenSignerError,
    signer_from_spec,
    token_file,
)


@contextlib.contextmanager
def signed_tokens_on_tester(
    document: Mapping[str, Any], secrets: SecretReader | None = None
) -> Iterator[None]:
    """With a ``signing`` section: the pool's tokens in a temporary file named by
    :data:`~gatebench.core.tokens.SIGNED_TOKENS_FILE_ENV` in this process's environment (which the
    load engine inherits) while the block runs. RunError when the key cannot be read or does
    not sign (the load then does not start: it would measure rejection)."""
    spec = document.get("signing")
    if not spec:
        yield
        return
    if not isinstance(spec, Mapping) or not isinstance(spec.get("secret"), str):
        raise RunError("the workload's signing section names no secret")
    pem = (secrets or SecretManager()).access(spec["secret"])
    try:
        signer = signer_from_spec(spec, pem)
    except TokenSignerError as exc:
        raise RunError(f"{spec['secret']}: {exc}") from None
    with token_file(signer.tokens(len(signer.subjects))) as path:
        os.environ[SIGNED_TOKENS_FILE_ENV] = str(path)
        try:
            yield
        finally:
            os.environ.pop(SIGNED_TOKENS_FILE_ENV, None)


@contextlib.contextmanager
def client_key_on_tester(
    document: Mapping[str, Any], secrets: SecretReader | None = None
) -> Iterator[None]:
    """With a ``client_key`` section: the first key of its secret in the environment variable
    it names while the block runs. RunError (naming the secret, never a key) when the secret
    cannot be read or holds no valid key list."""
    spec = document.get("client_key")
    if not spec:
        yield
        return
    if not isinstance(spec, Mapping) or not all(
        isinstance(spec.get(k), str) for k in ("env", "secret")
    ):
        raise RunError("the workload's client_key section names no secret or variable")
    env, secret = spec["env"], spec["secret"]
    text = (secrets or SecretManager()).access(secret)
    try:
        keys = parse_api_keys(env, text)
    except RunError as exc:
        raise RunError(f"{secret}: {exc}") from None
    previous = os.environ.get(env)
    os.environ[env] = keys[0]
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(env, None)
        else:
            os.environ[env] = previous


__all__ = ["client_key_on_tester", "signed_tokens_on_tester"]
