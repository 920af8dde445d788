"""The cloud result store: Google Cloud Firestore (``google-cloud-firestore``).

Same logical model as SQLite: ``runs/{run}``, ``runs/{run}/measurements/{target}:{workload}:{rep}``,
``runs/{run}/scores/{target}``. The client is built on first use (importing this module
imports nothing from Google), from the project and database given, with the ambient
credentials (the service account on Cloud Functions) or, when ``FIRESTORE_EMULATOR_HOST``
is set, the emulator.

Only calls that every emulator implements are used: get/set/create/delete, queries on one
collection (where, order_by, limit), batches committed with ``Commit`` and transactions.
No ``list_documents`` (ListDocuments), ``collections()`` (ListCollectionIds), bulk writers
(BatchWrite) or collection-group queries.

Firestore refuses an array directly inside an array, which the model has (KO reasons,
metric weights): such an inner array is stored as a map ``{"_nested_list": [...]}`` and
turned back on reading (:func:`encode` / :func:`decode`).

Every document is measured before it is written, by Firestore's documented rules
(gatebench.store._firestore_size): one above 1 MiB or 20,000 fields is refused with a
StoreError naming it and its figures, never sent. What the cloud path writes is bounded so that
this never happens for a plan its parse step accepts (docs/cloud.md, "Limits": what one run's records may hold).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from gatebench.core.errors import StoreError
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.store._common import (
    BaseStore,
    check_measurement,
    check_result,
    check_run_id,
    check_scores,
    no_such_run,
)
from gatebench.store._firestore_size import limit_problem

if TYPE_CHECKING:  # pragma: no cover
    from google.cloud.firestore import Client, DocumentReference

NESTED_LIST = "_nested_list"
RUNS = "runs"
MEASUREMENTS = "measurements"
SCORES = "scores"
RESULTS = "results"
_T = TypeVar("_T")


def encode(value: Any, *, in_array: bool = False) -> Any:
    """A JSON-like value as Firestore accepts it: tuples become arrays, an array inside
    an array becomes ``{"_nested_list": [...]}``, map keys become strings."""
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [encode(v, in_array=True) for v in value]
        return {NESTED_LIST: items} if in_array else items
    return value


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(value, Mapping):
        if len(value) == 1 and NESTED_LIST in value and isinstance(value[NESTED_LIST], list):
            return [decode(v) for v in value[NESTED_LIST]]
        return {str(k): decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


KO_TEXT_KEPT = 1000
"""The characters a stored measurement keeps of a KO reason's text."""


def _cut(text: str) -> str:
    return text if len(text) <= KO_TEXT_KEPT else text[: KO_TEXT_KEPT - 1] + "…"


def _fits(path: list[str], fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` when a document at ``path`` holding them is within Firestore's limits;
    StoreError otherwise."""
    problem = limit_problem(path, fields)
    if problem is not None:
        raise StoreError(problem)
    return fields


class FirestoreStore(BaseStore):
    """The result store in a Firestore database (``(default)`` unless named)."""

    def __init__(self, project: str, database: str = "(default)", *, timeout: float = 30.0):
        if not project:
            raise StoreError("firestore: a project id is required (firestore://PROJECT)")
        self.project = project
        self.database = database
        self.timeout = timeout
        self._client: Client | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FirestoreStore({self.project!r}, {self.database!r})"

    @property
    def location(self) -> str:
        return f"firestore://{self.project}/{self.database}"

    @property
    def client(self) -> Client:
        with self._lock:
            if self._client is None:
                from google.cloud import firestore

                try:
                    self._client = firestore.Client(project=self.project, database=self.database)
                except Exception as exc:  # credentials missing, bad project...
                    raise StoreError(f"{self.location}: cannot create a client: {exc}") from None
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()  # type: ignore[no-untyped-call]
                self._client = None

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        """Run one Firestore call; its failures become StoreError naming the store."""
        from google.api_core import exceptions as gexc

        try:
            return fn()
        except StoreError:
            raise
        except gexc.GoogleAPIError as exc:
            message = getattr(exc, "message", None) or str(exc)
            raise StoreError(f"{self.location}: {what} failed: {message}") from None

    def _run_ref(self, run_id: str) -> DocumentReference:
        return self.client.collection(RUNS).document(run_id)

    # -- runs -------------------------------------------------------------------------------

    def create_run(self, run: RunRecord) -> bool:
        from google.api_core.exceptions import AlreadyExists, Conflict

        check_run_id(run.run_id)
        ref = self._run_ref(run.run_id)

        fields = _fits([RUNS, run.run_id], encode(run.to_dict()))

        def create() -> bool:
            try:
                ref.create(fields, timeout=self.timeout)
            except (AlreadyExists, Conflict):
                return False
            return True

        return self._call(f"creating run {run.run_id!r}", create)

    def get_run(self, run_id: str) -> RunRecord | None:
        check_run_id(run_id)
        snap = self._call(
            f"reading run {run_id!r}", lambda: self._run_ref(run_id).get(timeout=self.timeout)
        )
        if not snap.exists:
            return None
        return RunRecord.from_dict(decode(snap.to_dict() or {}))

    def _change_run(
        self, run_id: str, what: str, change: Callable[[RunRecord], RunRecord]
    ) -> RunRecord:
        """Read, change and write a run in one transaction (retried on contention)."""
        from google.cloud import firestore

        check_run_id(run_id)
        ref = self._run_ref(run_id)

        @firestore.transactional
        def apply(transaction: Any) -> RunRecord:
            snap = ref.get(transaction=transaction)
            if not snap.exists:
                raise no_such_run(run_id)
            stored = snap.to_dict() or {}
            new = change(RunRecord.from_dict(decode(stored)))
            # Fields the model does not know (written by other tools) are kept, not dropped.
            transaction.set(ref, _fits([RUNS, run_id], {**stored, **encode(new.to_dict())}))
            return new

        result: RunRecord = self._call(what, lambda: apply(self.client.transaction()))
        return result

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        from google.cloud import firestore

        if limit <= 0:
            return []
        query = (
            self.client.collection(RUNS)
            .order_by("created_at", direction=firestore.Query.DESCENDING)
            .limit(limit)
        )
        snaps = self._call("listing runs", lambda: list(query.stream(timeout=self.timeout)))
        runs = [RunRecord.from_dict(decode(s.to_dict() or {})) for s in snaps]
        # Ties on created_at: the run id decides, as in SQLite.
        runs.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        return runs

    def unfinished_runs(self) -> list[RunRecord]:
        from google.cloud.firestore_v1.base_query import FieldFilter

        unfinished = [s.value for s in RunStatus if not s.finished]
        # One single-field filter (Firestore indexes it by itself); sorted here.
        query = self.client.collection(RUNS).where(filter=FieldFilter("status", "in", unfinished))
        snaps = self._call(
            "listing unfinished runs", lambda: list(query.stream(timeout=self.timeout))
        )
        runs = [RunRecord.from_dict(decode(s.to_dict() or {})) for s in snaps]
        return sorted(runs, key=lambda r: (r.created_at, r.run_id))

    # -- measurements -----------------------------------------------------------------------

    def _require_run(self, run_id: str) -> None:
        snap = self._call(
            f"reading run {run_id!r}", lambda: self._run_ref(run_id).get(timeout=self.timeout)
        )
        if not snap.exists:
            raise no_such_run(run_id)

    def put_measurement(self, measurement: Measurement) -> None:
        check_measurement(measurement)
        m = measurement
        self._require_run(m.run_id)
        ref = self._run_ref(m.run_id).collection(MEASUREMENTS).document(m.key)
        data = m.to_dict()
        # its ten KO reasons' texts bounded: an engine's message may carry a whole answer
        data["errors"] = [[_cut(str(text)), count] for text, count in data.get("errors") or []]
        fields = _fits([RUNS, m.run_id, MEASUREMENTS, m.key], encode(data))
        self._call(
            f"writing measurement {m.key!r} of run {m.run_id!r}",
            lambda: ref.set(fields, timeout=self.timeout),
        )

    def measurements(self, run_id: str) -> list[Measurement]:
        check_run_id(run_id)
        collection = self._run_ref(run_id).collection(MEASUREMENTS)
        snaps = self._call(
            f"reading the measurements of run {run_id!r}",
            lambda: list(collection.stream(timeout=self.timeout)),
        )
        out = [Measurement.from_dict(decode(s.to_dict() or {})) for s in snaps]
        out.sort(key=lambda m: (m.target, m.workload, m.repetition))
        return out

    # -- scores -----------------------------------------------------------------------------

    def put_scores(self, run_id: str, scores: Mapping[str, Mapping[str, Any]]) -> None:
        docs = {t: dict(d) for t, d in scores.items()}
        check_run_id(run_id)
        check_scores(run_id, docs)
        encoded = {t: _fits([RUNS, run_id, SCORES, t], encode(d)) for t, d in docs.items()}
        self._require_run(run_id)
        collection = self._run_ref(run_id).collection(SCORES)

        def replace() -> None:
            # Delete every old document, then write the new ones, in one atomic commit: a
            # set() alone would replace a document on Firestore, but the npm emulator
            # merges the new fields into the old ones (it keeps fields the new one lacks).
            existing = [s.id for s in collection.stream(timeout=self.timeout)]
            batch = self.client.batch()
            for target in existing:
                batch.delete(collection.document(target))
            for target, fields in sorted(encoded.items()):
                batch.set(collection.document(target), fields)
            batch.commit(timeout=self.timeout)

        self._call(f"writing the scores of run {run_id!r}", replace)

    def scores(self, run_id: str) -> dict[str, dict[str, Any]] | None:
        check_run_id(run_id)
        collection = self._run_ref(run_id).collection(SCORES)
        snaps = self._call(
            f"reading the scores of run {run_id!r}",
            lambda: list(collection.stream(timeout=self.timeout)),
        )
        if not snaps:
            return None
        return {s.id: decode(s.to_dict() or {}) for s in sorted(snaps, key=lambda s: s.id)}

    # -- results of other kinds of run --------------------------------------------------------

    def put_result(self, run_id: str, kind: str, key: str, doc: Mapping[str, Any]) -> None:
        check_result(run_id, kind, key)
        fields = _fits([RUNS, run_id, RESULTS, f"{kind}:{key}"], encode(dict(doc)))
        self._require_run(run_id)
        ref = self._run_ref(run_id).collection(RESULTS).document(f"{kind}:{key}")

        def replace() -> None:
            # delete then set in one commit: the npm emulator merges a set into an old document
            batch = self.client.batch()
            batch.delete(ref)
            batch.set(ref, fields)
            batch.commit(timeout=self.timeout)

        self._call(f"writing result {kind}:{key} of run {run_id!r}", replace)

    def results(self, run_id: str, kind: str) -> dict[str, dict[str, Any]]:
        check_run_id(run_id)
        collection = self._run_ref(run_id).collection(RESULTS)
        snaps = self._call(
            f"reading the {kind} results of run {run_id!r}",
            lambda: list(collection.stream(timeout=self.timeout)),
        )
        prefix = f"{kind}:"
        return {
            s.id[len(prefix) :]: decode(s.to_dict() or {})
            for s in sorted(snaps, key=lambda s: s.id)
            if s.id.startswith(prefix)
        }
