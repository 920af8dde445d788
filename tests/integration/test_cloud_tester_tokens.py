"""The cloud tester's load with tokens it signs itself: the real Gatling engine, the key read
from the Secret Manager stand-in (tests/cloud/secretgate.py, the grant read from infra/), a
recording backend that checks every token. Each simulated user carries its own subject, and
neither the key nor a token reaches an object the tester writes or its working folder."""

from __future__ import annotations

import http.server
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import jwt
import pytest

from cloud.secretgate import SecretManagerStandIn
from gatebench.cloud._secrets import EMULATOR_ENV
from gatebench.core.plan import build_plan
from gatebench.core.spec import load_spec
from gatebench.core.tokens import SIGNED_TOKENS_FILE_ENV, generate_private_key, public_pem
from gatebench.core.workload import compile_load
from gatebench.vm._roles import _load_signed

pytestmark = pytest.mark.integration

PRIVATE = generate_private_key("ES256")
ISSUER = "https://issuer.gatebench.test"
SECRET = "projects/proj/secrets/gb-jwt"


class _Recorder(http.server.BaseHTTPRequestHandler):
    subjects: ClassVar[list[str]] = []
    tokens: ClassVar[set[str]] = set()

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            claims = jwt.decode(
                auth[7:], public_pem(PRIVATE), algorithms=["ES256"], audience="auction"
            )
            self.subjects.append(claims["sub"])
            self.tokens.add(auth[7:])
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


class _Bucket:
    """What the tester writes (its raw log), kept to be searched."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        return self.objects.get(name)

    def write(self, bucket: str, name: str, data: Any, content_type: str = "") -> None:
        self.objects[name] = data if isinstance(data, bytes) else str(data).encode()

    def upload_file(self, bucket: str, name: str, path: Path, content_type: str = "") -> None:
        self.objects[name] = path.read_bytes()


def test_the_tester_signs_and_each_user_carries_its_subject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.subjects, _Recorder.tokens = [], set()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    api = load_spec(Path(__file__).parents[2] / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    section = {
        "gateways": [],
        "baseline": True,
        "repetitions": 1,
        "warmup": False,
        "backend": {"url": url},
        "auth": {"jwt": {"private_key_env": "UNUSED_ON_THE_CLOUD_PATH", "subjects": 5}},
        "policies": {
            "auth": {"jwt": {"issuer": ISSUER, "audience": "auction", "keys": "public.pem"}}
        },
        "workloads": [
            {
                "name": "retrieve",
                "operation": "getAuction",
                "params": {"auctionId": 7},
                "expect": [200],
                "injection": {"at_once": 10},
            }
        ],
    }
    plan = build_plan(section, api, read_file=lambda name: public_pem(PRIVATE))
    # as the render step sends it (gatebench.cloud._render): per-user tokens from a file
    plan = replace(
        plan, auth=replace(plan.auth, bearer_env=SIGNED_TOKENS_FILE_ENV, bearer_per_user=True)
    )
    document = compile_load(plan, api, {"baseline": url}, seed=3).document
    document["signing"] = {
        "algorithm": "ES256",
        "issuer": ISSUER,
        "audience": "auction",
        "subjects": 5,
        "lifetime": 600.0,
        "secret": SECRET,
    }
    bucket = _Bucket()
    variables = {"project_id": "proj", "jwt_signer": "gb-jwt"}
    try:
        with SecretManagerStandIn("tester", {SECRET: PRIVATE}, variables) as stand_in:
            monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
            done = _load_signed(bucket, "gb-runs", "r1", tmp_path / "work", document)  # type: ignore[arg-type]
    finally:
        server.shutdown()
        server.server_close()
    assert done["ok"], done
    assert list(bucket.objects) == ["raw/r1/gatling/simulation.log"]
    assert Counter(_Recorder.subjects) == {f"gatebench-{i}": 2 for i in range(1, 6)}
    assert len(_Recorder.tokens) == 5
    secrets = [t.rsplit(".", 1)[1] for t in _Recorder.tokens] + [PRIVATE.splitlines()[1]]
    written = list(bucket.objects.values()) + [
        p.read_bytes() for p in (tmp_path / "work").rglob("*") if p.is_file()
    ]
    assert not [s for s in secrets for data in written if s.encode() in data]
