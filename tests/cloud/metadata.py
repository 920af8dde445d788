"""A STAND-IN for a VM's Compute Engine metadata server, at its address inside the VM's
network namespace (169.254.169.254:80, ``metadata.google.internal`` in the VM's hosts file).

What it answers, as Compute Engine's "About VM metadata" and "Query VM metadata" pages say the
server does, and only with the ``Metadata-Flavor: Google`` header (403 otherwise):

- ``/computeMetadata/v1/instance/service-accounts/default/token``: an access token of the VM's
  service account (here a marked stand-in value naming the account: nothing outside the test
  accepts it);
- ``.../service-accounts/default/email``: the account;
- ``/computeMetadata/v1/instance/attributes/NAME``: the VM's custom metadata (404 for a name it
  does not have), what Terraform set in the instance's ``metadata``.

It records every request (path, status) so that a test can say who was served; who can reach it
at all is the VM's firewall's business (the startup script's rules, run in the namespace).
"""

from __future__ import annotations

import http.server
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
EMAIL_PATH = "/computeMetadata/v1/instance/service-accounts/default/email"
ATTRIBUTES = "/computeMetadata/v1/instance/attributes/"


def stand_in_token(account: str) -> str:
    return f"stand-in-token-of-{account}"


@dataclass
class MetadataStandIn:
    account: str
    attributes: dict[str, str]
    listener: socket.socket
    requests: list[tuple[str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, body, kind = stand_in.answer(self.path, self.headers.get("Metadata-Flavor"))
                stand_in.requests.append((self.path.split("?", 1)[0], status))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Metadata-Flavor", "Google")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = http.server.ThreadingHTTPServer(
            self.listener.getsockname()[:2], Handler, bind_and_activate=False
        )
        server.socket.close()
        server.socket = self.listener
        server.daemon_threads = True
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, target: str, flavor: str | None) -> tuple[int, str, str]:
        path = target.split("?", 1)[0]
        if flavor != "Google":
            return 403, "Missing Metadata-Flavor:Google header.", "text/html"
        if path == TOKEN_PATH:
            token = {
                "access_token": stand_in_token(self.account),
                "expires_in": 3599,
                "token_type": "Bearer",
            }
            return 200, json.dumps(token), "application/json"
        if path == EMAIL_PATH:
            return 200, self.account, "application/text"
        if path.startswith(ATTRIBUTES) and path[len(ATTRIBUTES) :] in self.attributes:
            return 200, self.attributes[path[len(ATTRIBUTES) :]], "application/text"
        return 404, "not found", "text/html"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


__all__ = ["ATTRIBUTES", "EMAIL_PATH", "TOKEN_PATH", "MetadataStandIn", "stand_in_token"]
