"""The result store port: one logical model (``gatebench.core.model``), two adapters.

SQLite is the embedded default (one file, :class:`SqliteStore`); Firestore is the cloud
adapter (:class:`FirestoreStore`). One contract test suite runs against both
(tests/integration/test_store_contract.py). The logical model (DESIGN.md "Storage")::

    runs/{run}                                          a RunRecord
    runs/{run}/measurements/{target}:{workload}:{rep}   a Measurement
    runs/{run}/scores/{target}                          a score document (ScoreResult.to_documents)
    runs/{run}/results/{kind}:{key}                     a result of another kind of run (a scale
                                                        point, a change under load: docs/scale.md)

Rules every adapter keeps:

- Writes are idempotent: writing the same run, measurement (target, workload,
  repetition) or score again overwrites it; ``create_run`` of an existing id changes nothing.
- A write is durable when the call returns (SQLite commits with ``synchronous=FULL``;
  Firestore has committed the write), so measurements completed before a crash are kept.
- Status changes follow ``model.can_move``; anything else raises ``StoreError``.
- Measurements and scores belong to an existing run; names cannot contain ``/`` or ``:``
  (they are the separators of the keys above).

``open_store(location)`` picks the adapter: a file path or ``sqlite:PATH`` → SQLite,
``firestore://PROJECT[/DATABASE]`` → Firestore. Nothing connects until first use.
"""

from __future__ import annotations

import os
from pathlib import Path

from gatebench.core.errors import StoreError
from gatebench.core.model import ResultStore
from gatebench.store._firestore import FirestoreStore
from gatebench.store._sqlite import SCHEMA_VERSION, SqliteStore

DEFAULT_STORE = "results/gatebench.sqlite"
"""Where results go when nothing else is said: a SQLite file under ``results/``."""
STORE_ENV = "GATEBENCH_STORE"
"""Environment variable naming the store (a path or URL) instead of the default."""


def default_store_location() -> str:
    return os.environ.get(STORE_ENV) or DEFAULT_STORE


def open_store(location: str | os.PathLike[str] | None = None) -> SqliteStore | FirestoreStore:
    """The store at ``location`` (default: ``$GATEBENCH_STORE`` or ``results/gatebench.sqlite``).

    - ``results/x.sqlite``, ``sqlite:results/x.sqlite``, ``sqlite:///abs/x.sqlite``: SQLite
    - ``firestore://PROJECT`` or ``firestore://PROJECT/DATABASE``: Firestore (the emulator
      when ``FIRESTORE_EMULATOR_HOST`` is set)
    """
    text = os.fspath(location) if location is not None else default_store_location()
    if not text:
        raise StoreError("empty store location; give a file path or firestore://PROJECT")
    if text.startswith("firestore:"):
        rest = text.removeprefix("firestore:").removeprefix("//")
        parts = [p for p in rest.split("/") if p]
        if not 1 <= len(parts) <= 2:
            raise StoreError(
                f"store {text!r}: expected firestore://PROJECT or firestore://PROJECT/DATABASE"
            )
        return FirestoreStore(parts[0], parts[1] if len(parts) == 2 else "(default)")
    if text.startswith("sqlite:"):
        path = text.removeprefix("sqlite:")
        path = path[2:] if path.startswith("//") else path  # sqlite:///abs → /abs
        if not path:
            raise StoreError(f"store {text!r}: expected sqlite:PATH")
        return SqliteStore(Path(path))
    scheme = text.split(":", 1)[0] if "://" in text else ""
    if scheme:
        raise StoreError(
            f"store {text!r}: unknown kind {scheme!r}; use a file path, sqlite:PATH or "
            "firestore://PROJECT[/DATABASE]"
        )
    return SqliteStore(Path(text))


__all__ = [
    "DEFAULT_STORE",
    "SCHEMA_VERSION",
    "STORE_ENV",
    "FirestoreStore",
    "ResultStore",
    "SqliteStore",
    "default_store_location",
    "open_store",
]
