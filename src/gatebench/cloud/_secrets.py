"""Secret Manager for the VMs: a tester reads the JWT signing key of runs whose plan signs its
tokens (``auth.jwt``) and the API keys it sends (``auth.api_key``); a gateway VM reads the API
keys its gateway checks. infra/secrets.tf grants each VM role ``secretAccessor`` on those
secrets alone.

It speaks Secret Manager's REST API (``GET v1/{secret}/versions/latest:access``) as the VM's
service account, through ``google-auth`` (already there for Cloud Storage): no client library
of its own. Google ships no Secret Manager emulator; with ``SECRET_MANAGER_EMULATOR_HOST`` set
(gatebench's own variable, for the local pipeline's stand-in, tests/cloud/secretgate.py) it
talks to that address without credentials. The value is returned to the caller and never
logged; an error names the secret and Secret Manager's answer, never the value.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import urllib.error
import urllib.request
from typing import Any, Protocol

from gatebench.core.errors import RunError

API = "https://secretmanager.googleapis.com"
EMULATOR_ENV = "SECRET_MANAGER_EMULATOR_HOST"
TIMEOUT_S = 30.0


class SecretAccessError(RunError):
    """Secret Manager refused or could not give the secret's latest version."""


class SecretReader(Protocol):
    def access(self, secret: str) -> str:
        """The latest version of ``secret`` (``projects/P/secrets/S``) as text."""
        ...


def _payload(secret: str, status: int, body: bytes) -> str:
    try:
        answer: Any = json.loads(body or b"null")
    except ValueError:
        answer = None
    if status != 200:
        error = answer.get("error") if isinstance(answer, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        raise SecretAccessError(
            f"{secret}: Secret Manager answered {status}"
            + (f": {message}" if message else "")
            + " (does this VM's service account hold roles/secretmanager.secretAccessor on "
            "it? infra/secrets.tf)"
        )
    try:
        data = answer["payload"]["data"]
        return base64.b64decode(data, validate=True).decode("utf-8")
    except (TypeError, KeyError, binascii.Error, UnicodeDecodeError):
        raise SecretAccessError(
            f"{secret}: Secret Manager's answer holds no text payload"
        ) from None


class SecretManager:
    """The real client (the VM's service account), or the stand-in at
    ``$SECRET_MANAGER_EMULATOR_HOST``; built on first use."""

    def __init__(self) -> None:
        self._session: Any = None

    def access(self, secret: str) -> str:
        path = f"/v1/{secret}/versions/latest:access"
        emulator = os.environ.get(EMULATOR_ENV)
        if emulator:
            try:
                with urllib.request.urlopen(emulator.rstrip("/") + path, timeout=TIMEOUT_S) as r:
                    return _payload(secret, r.status, r.read())
            except urllib.error.HTTPError as exc:
                return _payload(secret, exc.code, exc.read())
            except OSError as exc:
                raise SecretAccessError(f"{secret}: Secret Manager unreachable: {exc}") from None
        if self._session is None:
            import google.auth
            from google.auth.transport.requests import AuthorizedSession

            credentials, _ = google.auth.default(
                scopes=["https://www.googleapis.com/auth/cloud-platform"]
            )
            self._session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]
        try:
            response = self._session.get(API + path, timeout=TIMEOUT_S)
        except OSError as exc:
            raise SecretAccessError(f"{secret}: Secret Manager unreachable: {exc}") from None
        return _payload(secret, int(response.status_code), bytes(response.content))


__all__ = ["EMULATOR_ENV", "SecretAccessError", "SecretManager", "SecretReader"]
