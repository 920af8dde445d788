"""The Firestore connector of the interpreter, mapped onto the Firestore emulator.

The workflow calls the REST-shaped connector (``googleapis.firestore.v1.projects.databases.
documents.{createDocument,patch,get}``); the npm emulator (``@firestore-emulator/server``)
speaks gRPC and implements ``Commit`` and ``BatchGetDocuments`` but not ``CreateDocument``,
``UpdateDocument`` or ``GetDocument``. Each connector call is therefore sent as the write or
read Firestore defines it to be: createDocument is a Commit of one write with the
precondition ``exists: false``; patch is a Commit with the update mask and the precondition
given; get is a BatchGetDocuments of one name. Documents and errors travel in their REST
JSON forms, converted by the real ``google-cloud-firestore`` protobuf types; gRPC status
codes become the HTTP errors the connector raises (ALREADY_EXISTS → 409, NOT_FOUND → 404).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gatebench.local.procs import ManagedProcess, Supervisor, free_port

from .workflows_interpreter import WorkflowError, error

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "googleapis.firestore.v1.projects.databases.documents"

_HTTP = {  # gRPC status code → (HTTP status, REST status name)
    3: (400, "INVALID_ARGUMENT"),
    5: (404, "NOT_FOUND"),
    6: (409, "ALREADY_EXISTS"),
    9: (400, "FAILED_PRECONDITION"),
    10: (409, "ABORTED"),
}


def node_tools() -> Path:
    return Path(os.environ.get("GATEBENCH_NODE_TOOLS", ROOT / "tools" / "node"))


def start_firestore_emulator(supervisor: Supervisor, logs: Path) -> tuple[ManagedProcess, str]:
    """The npm emulator on 127.0.0.1 (tools/node, installed by scripts/setup.d/50-node.sh)."""
    import socket
    import time

    script = node_tools() / "firestore-emulator.cjs"
    if not script.exists():
        raise RuntimeError(f"{script} is missing: run `scripts/setup.sh node`")
    port = free_port()
    proc = supervisor.start(
        "firestore-emulator",
        ["node", str(script), str(port)],
        log_path=logs / "firestore.log",
        cwd=script.parent,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeError(f"the Firestore emulator exited:\n{proc.log_tail()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"127.0.0.1:{port}"
        time.sleep(0.05)
    raise RuntimeError(f"the Firestore emulator did not listen on {port}:\n{proc.log_tail()}")


class EmulatorFirestore:
    """Connector stand-ins over the emulator's gRPC API (real Firestore client types)."""

    def __init__(self, host: str) -> None:
        import grpc
        from google.cloud.firestore_v1.services.firestore import FirestoreClient
        from google.cloud.firestore_v1.services.firestore.transports import FirestoreGrpcTransport

        self.channel = grpc.insecure_channel(host)
        self.client = FirestoreClient(transport=FirestoreGrpcTransport(channel=self.channel))

    def close(self) -> None:
        self.channel.close()

    def connectors(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            f"{PREFIX}.createDocument": self.create_document,
            f"{PREFIX}.patch": self.patch,
            f"{PREFIX}.get": self.get,
        }

    @staticmethod
    def _database(document_name: str) -> str:
        return document_name.split("/documents", 1)[0]

    def _call(self, fn: Callable[[], Any]) -> Any:
        from google.api_core import exceptions

        try:
            return fn()
        except exceptions.GoogleAPICallError as exc:
            code = exc.grpc_status_code.value[0] if exc.grpc_status_code else 2
            status, name = _HTTP.get(code, (500, "INTERNAL"))
            raise error(
                "HttpError",
                f"HTTP server responded with error code {status}",
                code=status,
                headers={"content-type": "application/json"},
                body={"error": {"code": status, "message": exc.message, "status": name}},
            ) from None

    def _commit(
        self, name: str, body: dict[str, Any], mask: list[str] | None, exists: bool | None
    ) -> None:
        from google.cloud.firestore_v1.types import Document, DocumentMask, Precondition, Write

        document = Document.from_json(json.dumps({"name": name, "fields": body.get("fields", {})}))
        write = Write(update=document)
        if mask is not None:
            write.update_mask = DocumentMask(field_paths=list(mask))
        if exists is not None:
            write.current_document = Precondition(exists=exists)
        self._call(
            lambda: self.client.commit(
                request={"database": self._database(name), "writes": [write]}
            )
        )

    def _read(self, name: str) -> dict[str, Any]:
        from google.cloud.firestore_v1.types import Document

        responses = self._call(
            lambda: list(
                self.client.batch_get_documents(
                    request={"database": self._database(name), "documents": [name]}
                )
            )
        )
        for response in responses:
            if response.found and response.found.name:
                return dict(json.loads(Document.to_json(response.found)))
        raise WorkflowError(
            {
                "tags": ["HttpError"],
                "message": "HTTP server responded with error code 404",
                "code": 404,
                "headers": {"content-type": "application/json"},
                "body": {
                    "error": {
                        "code": 404,
                        "message": f"Document {name} not found",
                        "status": "NOT_FOUND",
                    }
                },
            }
        )

    def create_document(self, args: dict[str, Any]) -> dict[str, Any]:
        extra = set(args) - {"parent", "collectionId", "documentId", "body", "mask.fieldPaths"}
        if extra:
            raise error("TypeError", f"createDocument: unexpected args {sorted(extra)}")
        name = f"{args['parent']}/{args['collectionId']}/{args['documentId']}"
        self._commit(name, args["body"], None, exists=False)
        return self._read(name)

    def patch(self, args: dict[str, Any]) -> dict[str, Any]:
        extra = set(args) - {
            "name",
            "body",
            "updateMask.fieldPaths",
            "currentDocument.exists",
            "mask.fieldPaths",
        }
        if extra:
            raise error("TypeError", f"patch: unexpected args {sorted(extra)}")
        self._commit(
            args["name"],
            args["body"],
            args.get("updateMask.fieldPaths"),
            args.get("currentDocument.exists"),
        )
        return self._read(args["name"])

    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        return self._read(args["name"])
