"""workflows/benchmark.yaml run by the interpreter against in-memory stand-ins (named as such
in tests/cloud/standins.py): every way out of a run — success, a failing stage, a stage that
times out, an invalid spec — runs teardown, every status transition is written, and a
re-delivered event starts no second run. tests/integration/test_pipeline*.py repeats the
main paths with the real functions, emulators and build steps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cloud.pipeline import WORKFLOW, workflow_env
from cloud.standins import MemoryFirestore, RecordingBigQuery, RecordingBuilds, RoutedHttp
from cloud.workflows_interpreter import Clock, Execution, Interpreter
from gatebench.core.model import run_id_for_object

DOCS = "projects/proj/databases/(default)/documents"
PARSE, RENDER, SCORE = (f"https://fn.example/{n}" for n in ("parse", "render", "score"))


def env(**overrides: str) -> dict[str, str]:
    return workflow_env(parse=PARSE, render=RENDER, score=SCORE, **overrides)


class Pipeline:
    """The workflow plus stand-ins for everything it calls."""

    def __init__(
        self, *, parse_status: int = 200, score_status: int = 200, answer_bytes: int = 0
    ) -> None:
        self.firestore = MemoryFirestore()
        self.builds = RecordingBuilds()
        self.bigquery = RecordingBigQuery()
        self.parse_status = parse_status
        self.score_status = score_status
        self.answer_bytes = answer_bytes
        """Parse answers this many bytes of JSON, its record padded (0: as small as it is)."""
        self.http = RoutedHttp({PARSE: self.parse, RENDER: self.render, SCORE: self.score})
        self.now = 1000.0

    def parse(self, body: dict[str, Any]) -> tuple[int, Any]:
        generation = body["generation"] or "7"
        run_id = run_id_for_object(body["bucket"], body["name"], generation)
        document = {
            "fields": {
                "run_id": {"stringValue": run_id},
                "status": {"stringValue": "received"},
                "execution_id": {"stringValue": body["execution_id"]},
            }
        }
        if self.parse_status == 400:
            message = "/paths: error: expected a mapping"
            return 400, {"run_id": run_id, "document": document, "message": message, "errors": []}
        answer = {"run_id": run_id, "generation": generation, "document": document}
        if self.answer_bytes:
            short = self.answer_bytes - len(json.dumps(answer, separators=(",", ":")))
            pad = short - len(',"plan":{"stringValue":""}')
            document["fields"]["plan"] = {"stringValue": "p" * pad}
            assert len(json.dumps(answer, separators=(",", ":"))) == self.answer_bytes
        return 200, answer

    def render(self, body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"run_id": body["run_id"], "gateways": {"nginx": ["nginx.conf"]}}

    def score(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.score_status != 200:
            return self.score_status, {"errors": [{"pointer": "", "message": "no raw logs"}]}
        rows_uri = f"gs://gb-runs/runs/{body['run_id']}/rows.jsonl"
        return 200, {"status": "done", "scores": {"nginx": 100.0}, "rows_uri": rows_uri}

    def run(self, argument: Any, **env_overrides: str) -> Execution:
        def tick() -> float:
            self.now += 1
            return self.now

        connectors = {
            **self.firestore.connectors(),
            **self.builds.connectors(),
            **self.bigquery.connectors(),
        }
        interpreter = Interpreter(
            WORKFLOW,
            env=env(**env_overrides),
            connectors=connectors,
            http_transport=self.http,
            clock=Clock(now=tick, sleep=lambda s: None),
        )
        return interpreter.run(argument)

    def doc(self, run_id: str) -> str:
        return f"{DOCS}/runs/{run_id}"


def event(name: str = "specs/auction.yaml", generation: str = "42") -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "type": "google.cloud.storage.object.v1.finalized",
        "source": "//storage.googleapis.com/projects/_/buckets/gb-uploads",
        "subject": f"objects/{name}",
        "id": "evt-1",
        "data": {"bucket": "gb-uploads", "name": name, "generation": generation},
    }


RUN = run_id_for_object("gb-uploads", "specs/auction.yaml", "42")


def test_success_walks_every_status_then_tears_down_and_exports() -> None:
    pipeline = Pipeline()
    execution = pipeline.run(event())
    assert execution.state == "SUCCEEDED", execution.error
    assert execution.result == {
        "run_id": RUN,
        "status": "done",
        "scores": {"nginx": 100.0},
        "teardown": "ok",
    }
    doc = pipeline.doc(RUN)
    assert pipeline.firestore.field(doc, "status") == "done"
    assert list(pipeline.firestore.field(doc, "status_times")) == [
        "parsed",
        "rendered",
        "provisioning",
        "loading",
        "scoring",
        "done",
    ]
    assert [b["kind"] for b in pipeline.builds.builds] == ["provision", "load", "teardown"]
    teardown = pipeline.builds.builds[-1]
    assert teardown["body"]["substitutions"]["_RUN_ID"] == RUN
    assert teardown["body"]["timeout"] == "1800s"
    assert teardown["body"]["serviceAccount"].endswith("gb-build@proj.iam.gserviceaccount.com")
    assert teardown["connector_params"]["timeout"] == 86400
    assert teardown["parent"] == "projects/proj/locations/europe-west1"
    (job,) = pipeline.bigquery.jobs.values()
    assert job["configuration"]["load"]["sourceUris"] == [f"gs://gb-runs/runs/{RUN}/rows.jsonl"]
    assert job["jobReference"]["jobId"] == f"gatebench-rows-{RUN}"
    # The functions were called with OIDC tokens, in order.
    assert [c["url"] for c in pipeline.http.calls] == [PARSE, RENDER, SCORE]
    assert all(
        c["headers"]["Authorization"].startswith("Bearer local-oidc") for c in pipeline.http.calls
    )


@pytest.mark.parametrize("stage", ["provision", "load"])
@pytest.mark.parametrize("outcome", ["FAILURE", "TIMEOUT"])
def test_a_failed_or_timed_out_build_marks_failed_and_still_tears_down(
    stage: str, outcome: str
) -> None:
    pipeline = Pipeline()
    pipeline.builds.outcomes[stage] = outcome
    execution = pipeline.run(event())
    assert execution.state == "FAILED"
    assert execution.error["step"] == stage
    assert f"finished with status {outcome}" in execution.error["message"]
    doc = pipeline.doc(RUN)
    assert pipeline.firestore.field(doc, "status") == "failed"
    assert pipeline.firestore.field(doc, "failed_step") == stage
    assert pipeline.firestore.field(doc, "teardown") == "ok"
    assert pipeline.builds.builds[-1]["kind"] == "teardown"
    assert pipeline.bigquery.jobs == {}


def test_a_failing_function_marks_failed_with_its_stage_and_tears_down() -> None:
    pipeline = Pipeline(score_status=500)
    execution = pipeline.run(event())
    assert execution.state == "FAILED"
    assert execution.error["step"] == "score"
    doc = pipeline.doc(RUN)
    assert pipeline.firestore.field(doc, "failed_step") == "score"
    assert [b["kind"] for b in pipeline.builds.builds] == ["provision", "load", "teardown"]
    # 500 is not retried by http.default_retry: one call only.
    assert [c["url"] for c in pipeline.http.calls].count(SCORE) == 1


def test_an_invalid_spec_is_recorded_as_failed_at_parse_and_teardown_still_runs() -> None:
    pipeline = Pipeline(parse_status=400)
    execution = pipeline.run(event())
    assert execution.state == "FAILED"
    assert execution.error == {
        "run_id": RUN,
        "status": "failed",
        "step": "parse",
        "message": "/paths: error: expected a mapping",
        "status_write": "ok",
    }
    doc = pipeline.doc(RUN)
    assert pipeline.firestore.field(doc, "error") == "/paths: error: expected a mapping"
    assert [b["kind"] for b in pipeline.builds.builds] == ["teardown"]


def test_a_failed_teardown_fails_the_execution_but_keeps_the_result() -> None:
    pipeline = Pipeline()
    pipeline.builds.outcomes["teardown"] = "FAILURE"
    execution = pipeline.run(event())
    assert execution.state == "FAILED"
    assert execution.error["status"] == "done"
    assert execution.error["message"].startswith("failed: Build")
    doc = pipeline.doc(RUN)
    assert pipeline.firestore.field(doc, "status") == "done"
    assert pipeline.firestore.field(doc, "teardown").startswith("failed: ")


def test_a_redelivered_event_starts_no_second_run() -> None:
    pipeline = Pipeline()
    first = pipeline.run(event())
    assert first.state == "SUCCEEDED"
    builds = len(pipeline.builds.builds)
    second = pipeline.run(event(), GOOGLE_CLOUD_WORKFLOW_EXECUTION_ID="exec-2")
    assert second.state == "SUCCEEDED"
    assert second.result == {"run_id": RUN, "duplicate": True, "status": "done"}
    assert len(pipeline.builds.builds) == builds  # no provision, no teardown
    # A new generation of the same object is a new run.
    third = pipeline.run(event(generation="43"), GOOGLE_CLOUD_WORKFLOW_EXECUTION_ID="exec-3")
    assert third.result["run_id"] == run_id_for_object("gb-uploads", "specs/auction.yaml", "43")


def test_the_largest_answer_parse_gives_fits_the_workflows_variables() -> None:
    """Workflows holds at most 512 KB of variables: the largest answer parse gives
    (cloud._parse.PARSE_ANSWER_BYTES) runs to the end; one well above it (what parse answered
    for a plan of 100 workloads with long headers before that bound) fails the execution,
    as Workflows fails it, before any VM is made."""
    from cloud.workflows_interpreter import DATA_BYTES
    from gatebench.cloud._parse import PARSE_ANSWER_BYTES

    largest = Pipeline(answer_bytes=PARSE_ANSWER_BYTES)
    execution = largest.run(event())
    assert execution.state == "SUCCEEDED", execution.error
    assert execution.result["status"] == "done"
    assert 2 * PARSE_ANSWER_BYTES < execution.peak_data_bytes <= DATA_BYTES
    too_large = Pipeline(answer_bytes=396_566)
    failed = too_large.run(event())
    assert failed.error["tags"] == ["ResourceLimitError"]
    assert not too_large.builds.builds


def test_a_redelivered_event_of_a_large_finished_run_reads_only_its_owner() -> None:
    """A finished run's record can take most of Firestore's 1 MiB: the duplicate check reads
    only the two fields it needs, which the workflow's 512 KB of variables hold."""
    pipeline = Pipeline()
    pipeline.firestore.documents[pipeline.doc(RUN)] = {
        "fields": {
            "execution_id": {"stringValue": "exec-0"},
            "status": {"stringValue": "done"},
            "result": {"stringValue": "r" * 900_000},
        }
    }
    execution = pipeline.run(event())
    assert execution.state == "SUCCEEDED", execution.error
    assert execution.result == {"run_id": RUN, "duplicate": True, "status": "done"}


def test_a_retried_create_of_our_own_document_is_not_a_duplicate() -> None:
    pipeline = Pipeline()
    # The document exists already, created by this same execution (a lost response).
    pipeline.firestore.documents[pipeline.doc(RUN)] = {
        "fields": {"execution_id": {"stringValue": "exec-1"}, "status": {"stringValue": "received"}}
    }
    execution = pipeline.run(event())
    assert execution.state == "SUCCEEDED"
    assert execution.result["status"] == "done"


def test_gcloud_run_data_without_generation_and_other_objects_are_ignored() -> None:
    pipeline = Pipeline()
    manual = pipeline.run({"bucket": "gb-uploads", "name": "ci/build-9/spec.yaml"})
    assert manual.state == "SUCCEEDED"
    assert manual.result["run_id"] == run_id_for_object("gb-uploads", "ci/build-9/spec.yaml", "7")
    calls = len(pipeline.http.calls)
    # Events outside the spec prefix, and folder placeholders, start nothing.
    for name in ("runs/x/raw/simulation.log", "specs/"):
        ignored = pipeline.run(event(name=name))
        assert ignored.result == {"ignored": name, "reason": "not a spec upload"}
    assert len(pipeline.http.calls) == calls


def test_a_failing_status_write_in_the_except_path_still_tears_down() -> None:
    pipeline = Pipeline(score_status=500)
    pipeline.firestore.failing_patches["failed"] = 500
    execution = pipeline.run(event())
    assert [b["kind"] for b in pipeline.builds.builds] == ["provision", "load", "teardown"]
    assert execution.state == "FAILED"
    assert execution.error["step"] == "score"
    assert execution.error["status_write"].startswith(
        "failed: HTTP server responded with error code 500"
    )
    # The write was retried (http.default_retry: 5 retries) before giving up, and the
    # teardown result is still recorded on the run.
    assert pipeline.firestore.refused == [("failed", 500)] * 6
    assert pipeline.firestore.field(pipeline.doc(RUN), "teardown") == "ok"
    assert any("status write failed" in str(entry) for entry in execution.logs)


def test_the_last_writes_of_a_run_outlast_a_passing_firestore_outage() -> None:
    """Recording the teardown and the final status is retried as the failed status is: one
    500 there left a finished run reading 'exporting' on the dashboard, the execution failed."""
    pipeline = Pipeline()
    pipeline.firestore.flaky.update({"teardown": 2, "done": 2})
    execution = pipeline.run(event())
    assert execution.state == "SUCCEEDED", execution.error
    assert pipeline.firestore.refused == [("teardown", 500)] * 2 + [("done", 500)] * 2
    assert pipeline.firestore.field(pipeline.doc(RUN), "teardown") == "ok"
    assert pipeline.firestore.field(pipeline.doc(RUN), "status") == "done"


@pytest.mark.parametrize(
    ("failure", "calls"),
    [
        ("timeout", 1),  # the score step may still be running: no second 1800-s wait
        ("504", 1),  # Cloud Run's answer when the function outlived its timeout
        ("broken", 1),  # the connection broke mid-request: the function may be running
        ("503", 4),  # no instance took it: repeated (3 retries)
        ("unreached", 4),  # the connection was never made: repeated
    ],
)
def test_a_score_call_that_timed_out_is_not_repeated(failure: str, calls: int) -> None:
    from cloud.workflows_interpreter import error

    pipeline = Pipeline()

    def score(body: dict[str, Any]) -> tuple[int, Any]:
        if failure == "timeout":
            raise error("TimeoutError", f"POST {SCORE}: timed out")
        if failure == "broken":
            raise error("ConnectionError", f"POST {SCORE}: connection reset by peer")
        if failure == "unreached":
            raise error("ConnectionFailedError", f"POST {SCORE}: connection refused")
        return int(failure), {"errors": [{"pointer": "", "message": failure}]}

    pipeline.http.routes[SCORE] = score
    execution = pipeline.run({"bucket": "gb-uploads", "name": "specs/a.yaml"})
    assert execution.state == "FAILED"
    assert execution.error["step"] == "score"
    assert len([c for c in pipeline.http.calls if c["url"] == SCORE]) == calls
    assert [b["kind"] for b in pipeline.builds.builds][-1] == "teardown"
