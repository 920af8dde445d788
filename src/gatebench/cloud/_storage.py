"""Cloud Storage for the cloud path, through the real ``google-cloud-storage`` client.

The client is built on first use. With ``STORAGE_EMULATOR_HOST`` set (tests, a laptop), it
talks to that emulator with anonymous credentials; otherwise it uses the ambient service
account (a function's, a build's or a VM's). A run's VM reads with its account and writes with
its run's policies (:func:`vm_storage`, gatebench.cloud._writes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from gatebench.cloud._objects import ObjectRef, RequestError
from gatebench.core.errors import Problem

if TYPE_CHECKING:  # pragma: no cover
    from google.cloud.storage import Client

    from gatebench.cloud._writes import PolicyWriter


CHUNK_BYTES = 8 * 1024 * 1024
"""The part of a large object held in memory at a time, reading or writing it (a multiple of
256 KiB, as Cloud Storage's resumable uploads require)."""


class ObjectMissing(RequestError):
    """The object (or that generation of it) does not exist: HTTP 404 at the edge."""


@dataclass(frozen=True)
class StoredObject:
    data: bytes
    generation: str
    metadata: dict[str, str] = field(default_factory=dict)
    """Custom metadata (``x-goog-meta-NAME`` → ``NAME``): the upload form's run request."""


class Storage:
    def __init__(self, project: str | None = None, *, writer: PolicyWriter | None = None) -> None:
        self.project = project or os.environ.get("GATEBENCH_PROJECT")
        self._client: Client | None = None
        self.writer = writer
        """Writes go through it when set (a run's VM: its run's write policies)."""

    @property
    def client(self) -> Client:
        if self._client is None:
            from google.cloud.storage import Client as StorageClient

            if os.environ.get("STORAGE_EMULATOR_HOST"):
                from google.auth.credentials import AnonymousCredentials

                self._client = StorageClient(
                    project=self.project or "gatebench-local",
                    credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
                )
            else:
                self._client = StorageClient(project=self.project)
        return self._client

    def read(self, ref: ObjectRef) -> tuple[bytes, str]:
        """The object's bytes and generation (the live one when ``ref.generation`` is None)."""
        found = self.fetch(ref)
        return found.data, found.generation

    def fetch(self, ref: ObjectRef) -> StoredObject:
        """The object's bytes, generation and custom metadata (one generation of it)."""
        from google.api_core.exceptions import NotFound

        missing = ObjectMissing([Problem("/name", f"{ref.uri}: no such object")])
        generation = int(ref.generation) if ref.generation else None
        # Metadata first (it names the generation), then exactly that generation's bytes.
        blob = self.client.bucket(ref.bucket).get_blob(ref.name, generation=generation)
        if blob is None:
            raise missing
        # Read it before downloading: the download refreshes it from response headers.
        live = str(blob.generation)
        metadata = {str(k): str(v) for k, v in (blob.metadata or {}).items()}
        try:
            data: bytes = blob.download_as_bytes(if_generation_match=int(live))
        except NotFound:
            raise missing from None
        return StoredObject(data, live, metadata)

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        """The live object's bytes, or None when there is no such object."""
        from google.api_core.exceptions import NotFound

        try:
            data: bytes = self.client.bucket(bucket).blob(name).download_as_bytes()
        except NotFound:
            return None
        return data

    def write(
        self, bucket: str, name: str, data: bytes | str, content_type: str = "application/json"
    ) -> None:
        if self.writer is not None:
            self.writer.write(bucket, name, data, content_type)
            return
        blob = self.client.bucket(bucket).blob(name)
        blob.upload_from_string(data, content_type=content_type)

    def upload_file(
        self, bucket: str, name: str, path: Path, content_type: str = "application/octet-stream"
    ) -> None:
        """The file, streamed: a resumable upload sent in :data:`CHUNK_BYTES` parts, so a
        raw log of any size never sits in memory whole (with a writer: one form upload,
        streamed)."""
        if self.writer is not None:
            self.writer.upload_file(bucket, name, path, content_type)
            return
        blob = self.client.bucket(bucket).blob(name, chunk_size=CHUNK_BYTES)
        blob.upload_from_filename(str(path), content_type=content_type)

    def open_optional(self, bucket: str, name: str) -> BinaryIO | None:
        """A reader of the live object that downloads it in :data:`CHUNK_BYTES` ranges as it
        is read (never whole, never to a file), pinned to the generation it found; None when
        there is no such object."""
        blob = self.client.bucket(bucket).get_blob(name)
        if blob is None:
            return None
        reader: BinaryIO = blob.open(
            "rb", chunk_size=CHUNK_BYTES, if_generation_match=blob.generation
        )
        return reader

    def exists(self, bucket: str, name: str) -> bool:
        return bool(self.client.bucket(bucket).blob(name).exists())

    def names(self, bucket: str, prefix: str) -> list[str]:
        return sorted(b.name for b in self.client.list_blobs(bucket, prefix=prefix))

    def read_text(self, bucket: str, name: str) -> str:
        data, _ = self.read(ObjectRef(bucket, name))
        return data.decode("utf-8")

    def describe(self) -> dict[str, Any]:
        return {"project": self.project, "emulator": os.environ.get("STORAGE_EMULATOR_HOST")}


def vm_storage(project: str | None = None) -> Storage:
    """The storage of a command on a run's VM: reads as the VM's account, writes with the run's
    policies from the VM's metadata when it has them (gatebench.cloud._writes)."""
    from gatebench.cloud._writes import PolicyWriter, metadata_policies

    policies = metadata_policies()
    return Storage(project, writer=None if policies is None else PolicyWriter(policies))
