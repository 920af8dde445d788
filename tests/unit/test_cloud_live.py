"""Route scale and changes under load on the cloud path (gatebench.cloud._live,
gatebench.vm._live_agent, gatebench.vm._live_tester): the run request that asks for them,
what the parse and render steps make of it, the gateway VM's live agent and the tester's remote
gateway talking through a bucket (in memory here, the agent's Docker a recording fake), the score
step's results with the meter's memory, the rows, the price."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from cloud.settings import deployment
from gatebench.cloud import ObjectRef, RequestError, parse_upload
from gatebench.cloud._live import (
    ADMIN_PORT,
    CHANGED_BACKEND_PORT,
    LEAD_S,
    LIVE_PLAN,
    finish_live_run,
    manifest_object,
    request_object,
    result_object,
)
from gatebench.cloud._render import render_run
from gatebench.cloud._tester import marker
from gatebench.core.cost import estimate_cost, live_seconds
from gatebench.core.errors import RunError
from gatebench.core.model import RunRecord
from gatebench.core.report import bigquery_schema, column_names
from gatebench.core.routescale import replicate
from gatebench.core.scaleplan import ScaleAsk
from gatebench.core.spec import read_spec
from gatebench.kinds.request import METADATA_HEADER, UploadRejected, run_request_from_metadata
from gatebench.store import SqliteStore
from gatebench.vm._docker import ContainerState
from gatebench.vm._live_agent import LiveAgent

ROOT = Path(__file__).resolve().parents[2]
PETSTORE = (ROOT / "examples" / "petstore" / "openapi.yaml").read_bytes()
REF = ObjectRef("gb-uploads", "specs/petstore.yaml", "7")
RUN = REF.run_id
BUCKET = "gb-runs"


def metadata(kind: str, **scale: Any) -> dict[str, str]:
    request: dict[str, Any] = {"kind": kind, "gateways": ["nginx", "haproxy"]}
    if scale:
        request["scale"] = scale
    return {"gatebench": json.dumps(request)}


CHANGE = metadata("change-under-load", routes=10, add=5, duration=8, warmup=1)
SCALE = metadata("scale", routes=[10, 100], duration=2, warmup=1)


class Bucket:
    """The runs bucket in memory (what gatebench.cloud.Storage offers the VMs)."""

    def __init__(self, objects: dict[str, str] | None = None) -> None:
        self.objects: dict[str, bytes] = {k: v.encode() for k, v in (objects or {}).items()}
        self.lock = threading.Lock()

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        with self.lock:
            return self.objects.get(name)

    def open_optional(self, bucket: str, name: str) -> io.BytesIO | None:
        data = self.read_optional(bucket, name)
        return None if data is None else io.BytesIO(data)

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = "") -> None:
        with self.lock:
            self.objects[name] = data.encode() if isinstance(data, str) else data

    def names(self, bucket: str, prefix: str) -> list[str]:
        with self.lock:
            return sorted(n for n in self.objects if n.startswith(prefix))


# -- the run request -------------------------------------------------------------------------


def test_the_upload_asks_for_the_kind_and_its_settings_each_problem_located() -> None:
    request = run_request_from_metadata(SCALE["gatebench"])
    assert request.kind == "scale" and request.scale is not None
    assert request.scale.sizes == (10, 100)
    assert (request.scale.settings.duration_s, request.scale.settings.warmup_s) == (2.0, 1.0)
    assert run_request_from_metadata(request.to_metadata()) == request  # a round trip
    bad = json.dumps(
        {
            "kind": "scale",
            "quick": True,
            "scale": {"routes": [100, 10, 0], "rate": -1, "add": 3},
        }
    )
    with pytest.raises(UploadRejected) as caught:
        run_request_from_metadata(bad)
    assert [(p.pointer, p.message) for p in caught.value.problems] == [
        (
            "/quick",
            "a scale run has no quick profile: shorten it with /scale/duration and "
            "/scale/warmup instead",
        ),
        (
            "/scale/add",
            "not a setting of a scale run; expected deadline, duration, rate, routes, warmup",
        ),
        ("/scale/rate", "expected a number more than 0 and at most 100000, got -1"),
        ("/scale/routes/1", "sizes must increase; got 10 after 100"),
        (
            "/scale/routes/2",
            "expected a table size: a whole number from 1 to 100000, got 0",
        ),
    ]
    assert {p.source for p in caught.value.problems} == {METADATA_HEADER}
    with pytest.raises(UploadRejected) as caught:
        run_request_from_metadata(json.dumps({"scale": {"routes": [10]}}))
    assert caught.value.problems[0].pointer == "/scale"
    with pytest.raises(UploadRejected) as caught:
        run_request_from_metadata(json.dumps({"kind": "soak"}))
    assert caught.value.problems[0].message == (
        "expected one of fixed, capacity, scale, change-under-load, got 'soak'"
    )
    too_late = json.dumps({"kind": "change-under-load", "scale": {"duration": 6}})
    with pytest.raises(UploadRejected) as caught:
        run_request_from_metadata(too_late)
    assert [(p.pointer, p.message) for p in caught.value.problems] == [
        (
            "/scale/window",
            "the window after the change (3 s into the load, then 4 s) ends at 7 s, after the "
            "measured load (6 s), and that window is read under the load: measure for at least "
            "7 s, or change sooner",
        )
    ]


def test_the_parse_step_records_what_the_run_measures_as_a_local_run_does() -> None:
    outcome = parse_upload(PETSTORE, REF, now=1.0, metadata=CHANGE, settings=deployment())
    assert outcome.ok, outcome.message
    # the record is the kind's from the start: the score step picks the kind's results by it
    assert outcome.run.kind == "change-under-load"
    assert parse_upload(PETSTORE, REF, now=1.0, metadata=SCALE).run.kind == "scale"
    plan = outcome.run.plan
    assert plan["kind"] == "change-under-load"
    assert plan["gateways"] == ["nginx", "haproxy"]
    assert plan["change"] == {
        "routes_before": 10,
        "routes_added": 5,
        "change_after_s": 3.0,
        "window_s": 4.0,
    }
    assert "working set" in plan["memory"]
    # the same description of the run as `gatebench change-under-load` writes
    ask = run_request_from_metadata(CHANGE["gatebench"]).scale
    assert ask is not None
    assert {k: v for k, v in plan.items() if k not in ("memory", "infrastructure")} == ask.about(
        ["nginx", "haproxy"]
    )


def test_the_cloud_path_refuses_what_it_cannot_measure_with_located_errors() -> None:
    doc = yaml.safe_load(PETSTORE)
    doc["x-gatebench"]["tls"] = True
    data = yaml.safe_dump(doc, sort_keys=False).encode()
    early = metadata("change-under-load", change_after=1, window=4, duration=8)
    outcome = parse_upload(data, REF, now=1.0, metadata=early, settings=deployment())
    assert not outcome.ok
    found = {(p.pointer, p.source) for p in outcome.problems if p.severity == "error"}
    assert ("/x-gatebench/tls", "petstore.yaml") in found
    assert ("/scale/change_after", METADATA_HEADER) in found
    tls = next(p for p in outcome.problems if p.pointer == "/x-gatebench/tls")
    assert tls.line is not None  # located in the description
    assert "scale and change-under-load do not carry TLS yet" in tls.message
    with pytest.raises(RequestError, match="change_after"):
        render_run(PETSTORE, REF, deployment(), BUCKET, early)


# -- the render step -------------------------------------------------------------------------


def rendered_change() -> Any:
    return render_run(PETSTORE, REF, deployment(), BUCKET, CHANGE)


def test_render_writes_every_steps_files_the_manifests_and_the_testers_program() -> None:
    rendered = render_run(PETSTORE, REF, deployment(), BUCKET, SCALE)
    assert rendered.failures == {}
    objects = rendered.objects()
    for gateway, names in (("nginx", ["nginx.conf"]), ("haproxy", ["haproxy.cfg", "routes.map"])):
        manifest = json.loads(objects[manifest_object(RUN, gateway)])
        assert sorted(manifest["steps"]) == ["size-10", "size-100"]
        small, large = (manifest["steps"][s] for s in ("size-10", "size-100"))
        assert small["bytes"] < large["bytes"]
        assert sorted(f["object"] for f in large["files"]) == [
            f"runs/{RUN}/configs/{gateway}/steps/size-100/{name}" for name in names
        ]
        # the gateway boots on the first size's files; its live agent beside it
        entry = rendered.fleet["gateways"][gateway]
        assert entry["files"] == small["files"]
        assert entry["live"] == [
            [
                "cloud",
                "live-gateway",
                "--run-id",
                RUN,
                "--runs-bucket",
                BUCKET,
                "--gateway",
                gateway,
                "--dir",
                "/etc/gatebench",
            ]
        ]
    # the routes the table holds, as the local run grows them
    api = read_spec(PETSTORE, name="petstore.yaml").api
    assert api is not None
    nginx = objects[f"runs/{RUN}/configs/nginx/steps/size-100/nginx.conf"]
    last = replicate(api, 100).operations[-1].path_template
    assert last.split("/")[1] in nginx
    program = json.loads(objects[f"runs/{RUN}/{LIVE_PLAN}"])
    assert program["kind"] == "scale"
    assert program["gateways"]["nginx"]["url"] == (
        f"http://gb-{RUN}-gw-nginx.europe-central2-a.c.proj.internal:8000"
    )
    assert program["lead_s"] == LEAD_S
    # one backend (a) for a scale run, one tester, and what the tester reaches first
    assert json.loads(objects[f"runs/{RUN}/backend.json"])["instances"] == {"a": "0.0.0.0:8080"}
    assert rendered.fleet["backend"]["ports"] == [8080]
    assert rendered.fleet["tester"]["count"] == 1
    assert {p["target"] for p in rendered.workload["phases"]} == {"nginx", "haproxy"}


class FailingRemote:
    """A gateway VM whose container never starts (its agent said why): what the tester's
    program records without load."""

    def __init__(
        self, storage: Any, bucket: str, run_id: str, name: str, url: str, steps: Any, **kw: Any
    ) -> None:
        from gatebench.core.renderers import get_renderer

        self.renderer, self.name, self.steps = get_renderer(name), name, steps
        self.step = next(iter(steps))
        self.marks: list[float] = []
        self.failure = "the container exited with code 1"
        self.host, self.port, self.ca_file, self.lead_s, self.pids = "10.0.0.9", 8000, None, 0.0, ()

    @property
    def mechanism(self) -> Any:
        return self.renderer.live_change

    def start(self) -> float:
        raise RunError(self.failure)

    def confirm_start(self, started: float) -> float:
        return started

    def alive(self) -> bool:
        return False

    def rss_bytes(self) -> None:
        self.marks.append(time.time())

    def config_bytes(self) -> int:
        return int(self.steps[self.step]["bytes"])

    def stop(self) -> None:
        pass


class NoLoad:
    name, measured_from = "gatling", "send"

    def check(self) -> None:
        pass

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a gateway that never started is not loaded")


def test_the_testers_program_runs_the_kinds_stages_and_writes_each_result(tmp_path: Path) -> None:
    """The tester VM runs route scale's own stages (gatebench.kinds.scale) on its machine: a
    gateway VM that did not answer is a ``failed`` object; one whose container never starts
    gets a point per size that says so, without load, and no memory moments to read."""
    from gatebench.vm._live_tester import run_live_program

    rendered = render_run(PETSTORE, REF, deployment(), BUCKET, SCALE)
    bucket = Bucket(
        {k: v.decode() if isinstance(v, bytes) else v for k, v in rendered.objects().items()}
    )
    program = json.loads(bucket.objects[f"runs/{RUN}/{LIVE_PLAN}"])
    done = run_live_program(
        bucket,
        BUCKET,
        RUN,
        tmp_path,
        program,
        {"nginx": "no answer on port 8000"},
        load=NoLoad(),
        make_gateway=FailingRemote,
    )
    failed = json.loads(bucket.objects[result_object(RUN, "nginx", "failed")])
    assert failed == {
        "kind": "scale",
        "gateway": "nginx",
        "ok": False,
        "reason": "did not answer: no answer on port 8000",
    }
    points = [
        json.loads(bucket.objects[result_object(RUN, "haproxy", f"size-{n}")]) for n in (10, 100)
    ]
    assert [p["result"]["routes"] for p in points] == [10, 100]
    for point in points:
        assert point["ok"] and point["step"] == f"size-{point['result']['routes']}"
        assert point["result"]["problem"] == "did not start: the container exited with code 1"
        assert point["memory"] == {"idle_ms": None, "load_ms": None}
    assert done["ok"] and done["failed"] == {"nginx": "did not answer: no answer on port 8000"}
    assert done["results"] == [result_object(RUN, "haproxy", s) for s in ("size-10", "size-100")]


def test_a_change_is_rendered_for_the_checker_and_moves_to_the_second_backend() -> None:
    rendered = rendered_change()
    objects = rendered.objects()
    manifest = json.loads(objects[manifest_object(RUN, "nginx")])
    before, after = manifest["steps"]["before"], manifest["steps"]["after"]
    assert (before["routes"], after["routes"]) == (10, 15)
    assert (before["backend"], after["backend"], before["check"]) == ("a", "b", None)
    check = after["check"]
    assert check["argv"][:2] == ["nginx", "-t"]
    assert "/etc/gatebench/.check/nginx.conf" in check["argv"]
    checked = objects[check["files"][0]["object"]]
    applied = objects[after["files"][0]["object"]]
    assert "/etc/gatebench/.check/" in checked and "/etc/gatebench/.check/" not in applied
    host = f"gb-{RUN}-backend.europe-central2-a.c.proj.internal"
    assert f"{host}:{CHANGED_BACKEND_PORT}" in applied
    assert f"{host}:8080" in objects[before["files"][0]["object"]]
    backend = json.loads(objects[f"runs/{RUN}/backend.json"])
    assert backend["instances"] == {"a": "0.0.0.0:8080", "b": "0.0.0.0:8081"}
    assert rendered.fleet["backend"]["ports"] == [8080, 8081]
    # HAProxy's seamless reload needs its master-worker files; its checker checks them
    haproxy = json.loads(objects[manifest_object(RUN, "haproxy")])
    assert "master-worker" in objects[haproxy["steps"]["before"]["files"][0]["object"]]
    assert haproxy["steps"]["after"]["check"]["argv"][:2] == ["haproxy", "-c"]
    # the management port is the VM's loopback one
    assert manifest["placeholders"]["admin_port"] == str(ADMIN_PORT)


def test_the_change_runs_startup_scripts_open_both_backends_and_no_management_port() -> None:
    from cloud.startup import firewall_commands, live_command, live_mounts, startup_script
    from gatebench.cloud._vms import vm_vars

    values = vm_vars(deployment(), rendered_change().fleet, RUN, BUCKET)
    values["runner_image"] = "europe-docker.pkg.dev/p/gb-gatebench/runner:1"

    def opened(script: str) -> list[str]:
        return [c[c.index("--dport") + 1] for c in firewall_commands(script) if "INPUT" in c]

    assert opened(startup_script("backend", values)) == ["8080", "8081"]
    for gateway in ("nginx", "haproxy"):
        script = startup_script("gateway", values, gateway)
        assert opened(script) == ["8000"]  # ADMIN_PORT is on the loopback: nothing opens it
        image = values["runner_image"]
        assert live_command(script, image) == values["gateways"][gateway]["live"][0]
        assert live_mounts(script, image) == [
            "/var/run/docker.sock:/var/run/docker.sock",
            "$dir:/etc/gatebench",
        ]
        # the agent starts after the gateway's container, which it changes
        assert script.index("--name gateway ") < script.index("--name gatebench-live ")


# -- the gateway VM's agent and the tester's remote gateway ------------------------------------


class FakeDocker:
    """A recording stand-in for DockerEngine (the real one is tested against tests/cloud/dockerd.py
    in tests/unit/test_cloud_live_docker.py)."""

    def __init__(self, check_exit: int = 0) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.check_exit = check_exit
        self.started_at: float | None = None

    def stop(self, name: str, grace_s: int = 10) -> None:
        self.calls.append(("stop", name, time.time()))

    def start(self, name: str) -> None:
        self.started_at = time.time() + 0.01  # Docker's StartedAt: the process, a bit later
        self.calls.append(("start", name, time.time()))

    def inspect(self, name: str) -> ContainerState:
        return ContainerState(True, 42, self.started_at)

    def kill(self, name: str, signal: str) -> None:
        self.calls.append(("kill", name, signal, time.time()))

    def restart(self, name: str, grace_s: int = 10) -> None:
        self.calls.append(("restart", name, time.time()))

    def exec(self, name: str, argv: list[str], timeout: float) -> tuple[int, str]:
        self.calls.append(("exec", name, tuple(argv)))
        return self.check_exit, "" if self.check_exit == 0 else "nginx: [emerg] unknown directive"


@pytest.fixture
def world(tmp_path: Path) -> Any:
    bucket = Bucket(rendered_change().objects())
    docker = FakeDocker()
    agent = LiveAgent(bucket, BUCKET, RUN, "nginx", tmp_path / "gw", docker)
    thread = threading.Thread(target=agent.run, kwargs={"poll_s": 0.01}, daemon=True)
    thread.start()
    yield bucket, docker, agent, tmp_path / "gw"
    bucket.write(BUCKET, marker(RUN, "load-done"), "{}")  # the agent stops once the tester did
    thread.join(timeout=5)
    assert not thread.is_alive()


def remote(bucket: Bucket, lead_s: float = 0.3) -> Any:
    from gatebench.vm._live_tester import RemoteGateway

    program = json.loads(bucket.objects[f"runs/{RUN}/{LIVE_PLAN}"])
    about = program["gateways"]["nginx"]
    return RemoteGateway(
        bucket, BUCKET, RUN, "nginx", about["url"], about["steps"], lead_s=lead_s, poll_s=0.01
    )


def test_a_start_happens_at_the_moment_asked_for_and_says_when(world: Any) -> None:
    bucket, docker, _, folder = world
    gateway = remote(bucket)
    gateway.step = "before"
    asked = time.monotonic()
    started = gateway.start()  # returns at the moment the agent starts the container
    assert started - asked == pytest.approx(0.3, abs=0.05)
    actual = gateway.confirm_start(started)
    assert 0.0 <= actual - started < 0.2  # Docker's StartedAt, a little after
    stop, start = docker.calls[0], docker.calls[1]
    assert (stop[0], start[0]) == ("stop", "start")
    request = json.loads(bucket.objects[request_object(RUN, "nginx")])
    assert start[2] >= request["at"]  # never before the moment asked for
    assert (folder / "nginx.conf").read_text().count("server") > 0
    assert (folder / "logs").is_dir()  # the folders the gateway expects beside its files
    assert (gateway.host, gateway.port) == (
        f"gb-{RUN}-gw-nginx.europe-central2-a.c.proj.internal",
        8000,
    )
    assert (
        gateway.config_bytes()
        == json.loads(bucket.objects[manifest_object(RUN, "nginx")])["steps"]["before"]["bytes"]
    )


def test_a_change_is_checked_first_then_applied_through_its_mechanism(world: Any) -> None:
    bucket, docker, _, folder = world
    gateway = remote(bucket)
    api = read_spec(PETSTORE, name="petstore.yaml").api
    assert api is not None
    prepared = gateway.prepare(replicate(api, 15), "http://b")
    check = [c for c in docker.calls if c[0] == "exec"]
    assert len(check) == 1 and check[0][2][:2] == ("nginx", "-t")
    assert not (folder / ".check").exists()  # the checker's copy is gone again
    planned = gateway.apply(prepared)
    applied = gateway.confirm(planned)
    kill = next(c for c in docker.calls if c[0] == "kill")
    assert kill[1:3] == ("gateway", "SIGHUP")  # nginx's reload, through `docker kill -s`
    assert applied.triggered_at >= planned.triggered_at
    assert applied.triggered_at - planned.triggered_at < 0.2
    assert f":{CHANGED_BACKEND_PORT}" in (folder / "nginx.conf").read_text()
    # the routes count must be the rendered one
    with pytest.raises(RunError, match="the change has 12 routes, its rendered files 15"):
        gateway.prepare(replicate(api, 12), "http://b")


def test_a_refused_change_is_never_applied_and_the_tester_hears_why(world: Any) -> None:
    bucket, docker, _, folder = world
    docker.check_exit = 1
    gateway = remote(bucket)
    api = read_spec(PETSTORE, name="petstore.yaml").api
    assert api is not None
    with pytest.raises(RunError) as caught:
        gateway.prepare(replicate(api, 15), "http://b")
    assert "the gateway's checker refused the new configuration (exit 1)" in str(caught.value)
    assert "unknown directive" in str(caught.value)
    # asked to apply it anyway, the agent refuses: nothing was written, no signal sent
    with pytest.raises(RunError, match="step 'after' was not prepared"):
        gateway.confirm(gateway.apply({"step": "after", "check_s": 0.0}))
    assert not [c for c in docker.calls if c[0] == "kill"]
    assert not (folder / "nginx.conf").exists()


@pytest.mark.parametrize(
    ("gateway", "expected"),
    [
        # Varnish's own commands in its container: the new VCL loaded under a fresh label, used
        (
            "varnish",
            [
                ("exec", "varnishadm", "vcl.load", "gatebench1"),
                ("exec", "varnishadm", "vcl.use", "gatebench1"),
            ],
        ),
        ("envoy", []),  # a watched file: the atomic rename is the change, nothing is sent
        ("krakend", [("restart",)]),  # no live mechanism: the container restarted
    ],
)
def test_each_kind_of_mechanism_goes_through_the_gateways_container(
    tmp_path: Path, gateway: str, expected: list[tuple[str, ...]]
) -> None:
    """The mechanisms the pipeline tests do not run end to end (they run nginx's signal, Caddy's
    admin API and HAProxy's reload): what the agent asks of Docker for each other kind, after
    the gateway's own checker (where it has one) passed."""
    request = {"kind": "change-under-load", "gateways": [gateway]}
    request["scale"] = {"routes": 10, "add": 5, "duration": 8, "warmup": 1}
    spec = PETSTORE.replace(b"gateways: [nginx, haproxy, caddy]", f"gateways: [{gateway}]".encode())
    assert spec != PETSTORE
    rendered = render_run(spec, REF, deployment(), BUCKET, {"gatebench": json.dumps(request)})
    assert rendered.failures == {}
    bucket, docker = Bucket(rendered.objects()), FakeDocker()
    agent = LiveAgent(bucket, BUCKET, RUN, gateway, tmp_path / "gw", docker)
    prepared = agent.handle({"seq": 1, "op": "prepare", "step": "after"})
    assert prepared["ok"], prepared
    checks = len(docker.calls)
    assert checks == (1 if agent.manifest["steps"]["after"]["check"] else 0)
    applied = agent.handle({"seq": 2, "op": "apply", "step": "after", "at": time.time()})
    assert applied["ok"], applied
    calls = docker.calls[checks:]
    seen = [
        (c[0], *(w for w in c[2] if w in {"varnishadm", "vcl.load", "vcl.use", "gatebench1"}))
        if c[0] == "exec"
        else (c[0],)
        for c in calls
    ]
    assert seen == expected
    if gateway == "varnish":  # {workdir} filled: the container's folder, not this machine's
        assert all("/etc/gatebench/varnish" in c[2] for c in calls)
    for item in agent.manifest["steps"]["after"]["files"]:  # the new files are in place
        written = (tmp_path / "gw" / item["path"]).read_bytes()
        assert written == bucket.objects[item["object"]]


def test_an_agent_that_never_answers_is_a_located_failure() -> None:
    bucket = Bucket(rendered_change().objects())
    gateway = remote(bucket, lead_s=0.05)
    gateway.answer_timeout_s = 0.3
    gateway.step = "before"
    started = gateway.start()
    with pytest.raises(RunError, match=r"its VM's live agent did not answer within 0\.3s"):
        gateway.confirm_start(started)


# -- the score step ------------------------------------------------------------------------


def sample(wall_ms: float, mb: float) -> str:
    return json.dumps(
        {"wall_ms": wall_ms, "usage_usec": int(wall_ms), "memory_current": int(mb * 2**20)}
    )


def test_the_score_step_stores_each_point_with_the_meters_memory_and_writes_rows(
    tmp_path: Path,
) -> None:
    from gatebench.kinds._live.metrics import Latency, ScalePoint

    store = SqliteStore(tmp_path / "runs.sqlite")
    outcome = parse_upload(PETSTORE, REF, now=1.0, metadata=SCALE, settings=deployment())
    store.create_run(outcome.run)
    bucket = Bucket()
    latency = {p: Latency(100, 0, 1.0, 3.0, 5.0) for p in ("start", "middle", "end")}
    for routes in (10, 100):
        point = ScalePoint(
            "nginx", routes, 1000 * routes, 0.2, None, None, 50.0, "gatling", "send", latency
        )
        t0 = routes * 10_000.0
        body = {
            "kind": "scale",
            "gateway": "nginx",
            "step": f"size-{routes}",
            "ok": True,
            "result": point.to_dict(),
            "memory": {"idle_ms": t0, "load_ms": [t0 + 1000, t0 + 5000]},
        }
        bucket.write(BUCKET, result_object(RUN, "nginx", f"size-{routes}"), json.dumps(body))
    failed = {"kind": "scale", "gateway": "haproxy", "ok": False, "reason": "did not answer"}
    bucket.write(BUCKET, result_object(RUN, "haproxy", "failed"), json.dumps(failed))
    lines = [sample(t, 20.0) for t in range(99_000, 106_000, 200)]
    lines += [sample(t, 20.0 if t < 101_000 else 25.0) for t in range(106_000, 106_200, 200)]
    lines += [sample(t, 30.0 if t < 1_001_000 else 45.0) for t in range(999_000, 1_006_000, 200)]
    lines.append(json.dumps({"meter_done": True, "wall_ms": 1_006_000.0, "why": "load-done"}))
    bucket.write(BUCKET, f"runs/{RUN}/cgroup/nginx.jsonl", "\n".join(lines) + "\n")
    run = store.get_run(RUN)
    assert run is not None
    result = finish_live_run(store, bucket, BUCKET, run, meter_wait_s=0)
    assert (result["status"], result["missing"]) == ("partial", ["haproxy"])
    points = store.results(RUN, "scale")
    assert sorted(points) == ["nginx@10", "nginx@100"]
    assert (points["nginx@10"]["rss_idle_mb"], points["nginx@10"]["rss_load_mb"]) == (20.0, 20.0)
    assert (points["nginx@100"]["rss_idle_mb"], points["nginx@100"]["rss_load_mb"]) == (
        30.0,
        45.0,
    )
    stored = store.get_run(RUN)
    assert stored is not None and stored.target_errors == {"haproxy": "did not answer"}
    rows = [json.loads(line) for line in bucket.objects[f"runs/{RUN}/rows.jsonl"].splitlines()]
    assert all(set(row) <= set(column_names()) for row in rows)
    required = {c["name"] for c in bigquery_schema() if c["mode"] == "REQUIRED"}
    assert all(required <= set(row) for row in rows)
    idle = {r["routes"]: r["value"] for r in rows if r["statistic"] == "idle"}
    assert idle == {10: 20.0, 100: 30.0}
    assert {(r["workload"], r["metric"]) for r in rows if r["routes"] == 100 and r["workload"]} == {
        (p, m) for p in ("start", "middle", "end") for m in ("p50", "p99", "error_pct")
    }
    assert json.loads(bucket.objects[f"runs/{RUN}/scale.json"])["points"]
    assert "<h1>" in bucket.objects[f"runs/{RUN}/scale.html"].decode()


def test_points_the_meter_did_not_cover_are_noted_not_guessed(tmp_path: Path) -> None:
    from gatebench.kinds._live.metrics import ScalePoint

    store = SqliteStore(tmp_path / "runs.sqlite")
    store.create_run(
        parse_upload(PETSTORE, REF, now=1.0, metadata=SCALE, settings=deployment()).run
    )
    bucket = Bucket()
    point = ScalePoint("nginx", 10, 1000, 0.2, None, None, 50.0, "gatling", "send", {})
    body = {
        "kind": "scale",
        "gateway": "nginx",
        "step": "size-10",
        "ok": True,
        "result": point.to_dict(),
        "memory": {"idle_ms": 5.0, "load_ms": [6.0, 9.0]},
    }
    bucket.write(BUCKET, result_object(RUN, "nginx", "size-10"), json.dumps(body))
    run = store.get_run(RUN)
    assert run is not None
    assert finish_live_run(store, bucket, BUCKET, run)["status"] == "done"
    assert store.results(RUN, "scale")["nginx@10"]["rss_idle_mb"] is None
    noted = store.get_run(RUN)
    assert noted is not None
    assert noted.environment["meter_gaps"]["nginx"].startswith(
        "nginx: no memory figure for 1 scale point (nginx@10)"
    )


def test_a_run_with_no_result_is_a_failed_score() -> None:
    from gatebench.cloud import NothingMeasured

    run = RunRecord(run_id=RUN, spec_uri="gs://x/y#1", spec_sha256="0" * 64, plan={"kind": "scale"})
    with pytest.raises(NothingMeasured, match="has no scale point or change outcome"):
        finish_live_run(None, Bucket(), BUCKET, run)  # type: ignore[arg-type]


# -- the price -------------------------------------------------------------------------------


def test_the_price_counts_the_run_kinds_load_and_the_agents_reads() -> None:
    plan = {
        "gateways": ["nginx", "haproxy"],
        "baseline": True,
        "repetitions": 10,
        "workloads": [{"name": "w", "injection": {"kind": "sequential", "requests": 10**6}}],
        "backend": {"kind": "url"},
        "infrastructure": {},
    }
    ask = ScaleAsk("scale", (10, 100, 1000))
    fixed = estimate_cost(plan)
    scaled = estimate_cost(plan, live=ask)
    # 2 gateways × 3 sizes × (a start of 15 s, Gatling's 15 s, a 3 s warm-up, 3 × 10 s) + 15 s
    assert live_seconds(ask, 2) == 2 * 3 * (15 + 15 + 3 + 30) + 15
    assert scaled.load_s == live_seconds(ask, 2)
    assert scaled.vms == fixed.vms + 1  # the echo backends' VM, though the plan's is a URL
    items = {line.item: line for line in scaled.lines}
    assert "raw logs kept 30 days" in items and items["raw logs kept 30 days"].quantity == 0
    agents = items["Cloud Storage reads (the gateway VMs' live agents)"]
    assert agents.quantity == pytest.approx(2 * scaled.vm_s / 0.2)
