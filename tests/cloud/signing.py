"""Cloud Storage V4 signing for tests: a throw-away service-account key (it signs locally,
as a key file does; on Cloud Functions IAM signBlob signs instead), and a check of a signed
URL's signature recomputed from the URL and the headers a browser will send."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

EMAIL = "gb-upload@gatebench-test.iam.gserviceaccount.com"


def service_account_info(email: str = EMAIL) -> tuple[dict[str, str], Any]:
    """A service-account key made for this test (its JSON form) and its public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    info = {
        "type": "service_account",
        "project_id": "gatebench-test",
        "private_key_id": "test",
        "private_key": pem,
        "client_email": email,
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    return info, key.public_key()


def service_account() -> tuple[Any, Any]:
    """Credentials with a key made for this test, and the key's public half."""
    from google.oauth2 import service_account as sa

    info, public_key = service_account_info()
    return sa.Credentials.from_service_account_info(info), public_key


def write_key_file(path: Path) -> Any:
    """A key file for GOOGLE_APPLICATION_CREDENTIALS; returns the public key."""
    info, public_key = service_account_info()
    path.write_text(json.dumps(info), encoding="utf-8")
    path.chmod(0o600)
    return public_key


def verify_v4(url: str, headers: dict[str, str], public_key: Any) -> None:
    """Recompute the V4 string to sign from the URL and the headers the page will send, and
    check the signature with the key's public half: it covers these headers and no other."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    signature = bytes.fromhex(query.pop("X-Goog-Signature"))
    signed = query["X-Goog-SignedHeaders"].split(";")
    lowered = {k.lower(): v for k, v in headers.items()} | {"host": parts.netloc}
    canonical_headers = "".join(f"{name}:{lowered[name]}\n" for name in signed)
    canonical_query = "&".join(
        f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in sorted(query.items())
    )
    canonical_request = "\n".join(
        [
            "PUT",
            parts.path,
            canonical_query,
            canonical_headers,
            ";".join(signed),
            "UNSIGNED-PAYLOAD",
        ]
    )
    scope = query["X-Goog-Credential"].split("/", 1)[1]
    to_sign = "\n".join(
        [
            "GOOG4-RSA-SHA256",
            query["X-Goog-Date"],
            scope,
            hashlib.sha256(canonical_request.encode()).hexdigest(),
        ]
    )
    public_key.verify(signature, to_sign.encode(), padding.PKCS1v15(), hashes.SHA256())


BUILD_EMAIL = "gb-build@gatebench-test.iam.gserviceaccount.com"
BUILD_KEY_PATH = "/etc/gatebench-test/build-key.json"
"""Where a build step's container finds the build account's key (GOOGLE_APPLICATION_CREDENTIALS)."""


def build_account(folder: Path) -> tuple[dict[str, str], tuple[Path, str, str], Any]:
    """The deployment's build account as the pipeline stand-ins sign with it: a key of its
    own, standing in for IAM signBlob (Cloud Build holds no key; the provision build signs the
    VMs' write policies as this account). Returns the build steps' environment, the mount of
    the key into their containers, and the key's public half (what Cloud Storage checks)."""
    info, public_key = service_account_info(BUILD_EMAIL)
    path = folder / "build-key.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    path.chmod(0o644)  # read inside a container by its user
    return (
        {"GOOGLE_APPLICATION_CREDENTIALS": BUILD_KEY_PATH},
        (path, BUILD_KEY_PATH, "ro"),
        public_key,
    )
