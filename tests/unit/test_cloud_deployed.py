"""The cloud path carries a plan's deployment (docs/cloud.md, "TLS and replicas"): the parse
and render steps with TLS, replicas and a fault, the run's own CA and each VM's key and
certificate made by the provision build (the CA's key never leaves it), the gateway VM's TLS
files from its own metadata, the tester's trust, and the score step's figures from what the
testers watched (gatebench.cloud._ingest)."""

from __future__ import annotations

import datetime
import json
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from cloud.settings import deployment
from cloud.simlog import SimLogWriter
from gatebench.cloud import ObjectRef, parse_upload
from gatebench.cloud._render import config_error_object, render_run
from gatebench.cloud._tls import CA_OBJECT, TLS_DIR, TLS_METADATA_KEY, TRUST_STORE_ON_TESTER
from gatebench.cloud._vms import machine_metadata, vm_vars
from gatebench.core.errors import RunError
from gatebench.core.model import Measurement
from gatebench.core.tls import FILES, SERVER_CERT, make_ca

ROOT = Path(__file__).resolve().parents[2]
AUCTION = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()
REF = ObjectRef("gb-uploads", "specs/auction.yaml", "44")
CA_KEY, CA_CERT = make_ca(validity=datetime.timedelta(days=30), label="a run CA")


def deployed_auction(gateways: list[str] | None = None, **bench: Any) -> bytes:
    """The auction example with TLS (HTTP/2), three replicas and replica 2 killed halfway
    through each gateway's bid phase."""
    doc = yaml.safe_load(AUCTION)
    x = doc["x-gatebench"]
    x.update(
        gateways=gateways or ["nginx", "haproxy"],
        repetitions=2,
        tls={"http2": True},
        backend={"builtin": "auction", "replicas": 3},
        fault={"replica": 2, "workload": "bid"},
        **bench,
    )
    return yaml.safe_dump(doc, sort_keys=False).encode()


def errors(outcome: Any) -> list[tuple[str, str]]:
    return [(e["pointer"], e["message"]) for e in outcome.response().get("errors", [])]


def test_parse_carries_tls_replicas_and_the_fault_without_a_deployment_ca() -> None:
    """Each run makes its own CA (the provision build): TLS needs nothing of the deployment."""
    spec = deployed_auction()
    fine = parse_upload(spec, REF, now=0.0, settings=deployment())
    assert fine.ok, errors(fine)
    assert fine.run.plan["tls"]["http2"] is True
    assert fine.run.plan["backend"]["replicas"] == 3
    assert fine.run.plan["fault"]["replica"] == 2


def test_render_gives_every_gateway_tls_from_its_vm_and_a_pool_of_the_replicas() -> None:
    settings = deployment()
    rendered = render_run(deployed_auction(["nginx", "haproxy", "varnish"]), REF, settings, "gb")
    run = REF.run_id
    host = f"gb-{run}-backend.europe-central2-a.c.proj.internal"
    # Varnish terminates no TLS: left out with the reason, as locally.
    assert rendered.failures == {
        "varnish": rendered.failures["varnish"],
    }
    assert rendered.failures["varnish"].startswith("varnish cannot render TLS termination")
    nginx = rendered.configs["nginx"]["nginx.conf"]
    assert "ssl_certificate /etc/gatebench/tls/server.crt;" in nginx
    assert "ssl_certificate_key /etc/gatebench/tls/server.key;" in nginx
    for port in (8080, 8081, 8082):
        assert f"server {host}:{port}" in nginx
    assert "/etc/gatebench/tls/server.pem" in rendered.configs["haproxy"]["haproxy.cfg"]
    # Each gateway VM writes its key and certificate before its gateway starts; the fleet names
    # the hosts the provision build makes them for, never a key or a CA.
    fleet = rendered.fleet
    for name in ("nginx", "haproxy"):
        assert fleet["gateways"][name]["configure"] == [
            [
                "cloud",
                "gateway-tls",
                "--run-id",
                run,
                "--runs-bucket",
                "gb",
                "--gateway",
                name,
                "--out",
                "/etc/gatebench",
            ]
        ]
    assert fleet["tls"] == {
        "key": "ecdsa-p256",
        "http2": True,
        "resumption": True,
        "hosts": {
            "nginx": f"gb-{run}-gw-nginx.europe-central2-a.c.proj.internal",
            "haproxy": f"gb-{run}-gw-haproxy.europe-central2-a.c.proj.internal",
        },
        "backend_host": host,
    }
    # The backend VM: three replicas, replica 1's TLS listener for the baseline, the fault's
    # control; its script opens those ports, its container may count packets (NET_RAW).
    assert rendered.backend == {
        "mode": "auction",
        "listen": "0.0.0.0:8080",
        "config_object": None,
        "replicas": ["0.0.0.0:8080", "0.0.0.0:8081", "0.0.0.0:8082"],
        "tls": {
            **{k: v for k, v in fleet["tls"].items() if k not in ("hosts", "backend_host")},
            "listen": "0.0.0.0:8443",
            "host": host,
        },
        "control": "0.0.0.0:8079",
    }
    assert fleet["backend"]["ports"] == [8080, 8081, 8082, 8443, 8079]
    assert (fleet["backend"]["caps"], fleet["tester"]["caps"]) == (["NET_RAW"], ["NET_RAW"])
    values = vm_vars(settings, fleet, run, "gb")
    assert values["backend"]["ports"] == [8080, 8081, 8082, 8443, 8079]
    # The tester: every target over TLS, the baseline at the backend's TLS listener, every
    # replica reset before a phase, a trust store to make (the CA: the provision build's), and
    # where the fault strikes.
    workload = rendered.workload
    urls = {p["target"]: p["request"]["base_url"] for p in workload["phases"]}
    assert urls == {
        "nginx": f"https://gb-{run}-gw-nginx.europe-central2-a.c.proj.internal:8000",
        "haproxy": f"https://gb-{run}-gw-haproxy.europe-central2-a.c.proj.internal:8000",
        "baseline": f"https://{host}:8443",
    }
    # The tester's Gatling warms itself first, against the backend as the baseline reaches it
    # (docs/trust.md, "The engine's own warm-up"): one phase per workload, never measured.
    warm = [p for p in workload["phases"] if p["repetition"] == 0 and p["target"] == "baseline"]
    assert workload["phases"][: len(warm)] == warm
    assert [p["workload"] for p in warm] == ["create-auction", "bid", "retrieve"]
    assert {(p["request"]["base_url"], p["measured"]) for p in warm} == {
        (f"https://{host}:8443", False)
    }
    measured = [p for p in workload["phases"] if p["measured"]]
    resets = {c["url"] for p in measured for c in p["before"]}
    assert resets == {f"http://{host}:{port}/__gatebench__/reset" for port in (8080, 8081, 8082)}
    assert "ca" not in workload["tls"]
    assert workload["tls"]["trust_store"] == TRUST_STORE_ON_TESTER
    assert workload["tls"]["http2"] is True
    bids = [p for p in measured if p["workload"] == "bid" and p["target"] != "baseline"]
    assert len(bids) == 4  # two gateways, two repetitions
    assert workload["fault"] == {
        "replica": 2,
        "port": 8081,
        "control": f"http://{host}:8079",
        "phases": {str(p["index"]): 0.125 for p in sorted(bids, key=lambda p: p["index"])},
    }
    # No private key anywhere the render step writes; the same run renders the same bytes.
    objects = rendered.objects()
    assert not [n for n, text in objects.items() if "PRIVATE KEY" in text]
    again = render_run(deployed_auction(["nginx", "haproxy", "varnish"]), REF, settings, "gb")
    assert again.objects() == objects


class Bucket:
    """An in-memory runs bucket."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        return self.objects.get(name)

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = "") -> None:
        self.objects[name] = data.encode() if isinstance(data, str) else data

    def open_optional(self, bucket: str, name: str) -> Any:
        import io

        data = self.objects.get(name)
        return None if data is None else io.BytesIO(data)

    def names(self, bucket: str, prefix: str) -> list[str]:
        return sorted(n for n in self.objects if n.startswith(prefix))


def provisioned(gateways: list[str], now: datetime.datetime | None = None) -> tuple[Any, Any, Any]:
    """A rendered TLS run as the provision build leaves it: its fleet, each VM's metadata and
    the run's CA certificate."""
    rendered = render_run(deployed_auction(gateways), REF, deployment(), "gb")
    values = vm_vars(deployment(), rendered.fleet, REF.run_id, "gb")
    metadata, ca_cert = machine_metadata(
        values, rendered.fleet, email="b@x", sign=lambda data: b"s", now=now
    )
    return rendered, metadata, ca_cert


def test_the_provision_build_makes_a_ca_for_the_run_alone_and_each_vm_its_own_key() -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    now = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
    rendered, metadata, ca_cert = provisioned(["nginx", "haproxy"], now)
    ca = x509.load_pem_x509_certificate(ca_cert)
    lifetime = rendered.fleet["max_run_duration_s"] + 3600
    assert ca.not_valid_before_utc <= now
    assert ca.not_valid_after_utc == now + datetime.timedelta(seconds=lifetime)  # the run's only
    assert b"PRIVATE KEY" not in ca_cert
    hosts = {**rendered.fleet["tls"]["hosts"], "backend": rendered.fleet["tls"]["backend_host"]}
    keys = set()
    for name, host in hosts.items():
        machine = name if name == "backend" else f"gw-{name}"
        tls = json.loads(metadata[machine][TLS_METADATA_KEY])
        leaf = x509.load_pem_x509_certificate(tls["server_cert"].encode())
        leaf.verify_directly_issued_by(ca)
        assert leaf.not_valid_after_utc <= ca.not_valid_after_utc
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert host in names.get_values_for_type(x509.DNSName)
        assert tls["ca_cert"].encode() == ca_cert
        keys.add(tls["server_key"])
    assert len(keys) == 3  # every VM its own key
    # The testers hold no TLS key, and no VM the CA's: no metadata value holds a key of the
    # CA's public key.
    assert {m for m, attrs in metadata.items() if TLS_METADATA_KEY in attrs} == {
        "gw-nginx",
        "gw-haproxy",
        "backend",
    }
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    ca_public = ca.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    for key in keys:
        public = load_pem_private_key(key.encode(), None).public_key()
        assert public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo) != ca_public
    # Two runs never share a CA.
    _, _, other = provisioned(["nginx"], now)
    assert other != ca_cert


def test_a_gateway_vm_writes_its_own_key_and_certificate(tmp_path: Path) -> None:
    from cryptography import x509

    from gatebench.vm._tls import configure_gateway_tls

    rendered, metadata, ca_cert = provisioned(["nginx"])
    bucket = Bucket()
    value = metadata["gw-nginx"][TLS_METADATA_KEY]
    written = configure_gateway_tls(
        bucket,  # type: ignore[arg-type]
        "gb",
        REF.run_id,
        "nginx",
        tmp_path,
        metadata=lambda key: value if key == TLS_METADATA_KEY else None,
    )
    assert written == sorted(FILES)
    folder = tmp_path / TLS_DIR
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    for name in FILES:  # the gateway images' own users read them
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o644
    leaf, ca = x509.load_pem_x509_certificates((folder / SERVER_CERT).read_bytes())
    assert ca == x509.load_pem_x509_certificate(ca_cert)
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert rendered.fleet["tls"]["hosts"]["nginx"] in names.get_values_for_type(x509.DNSName)
    assert json.loads(value)["server_key"].encode() == (folder / "server.key").read_bytes()
    assert bucket.objects == {}  # nothing of it went to the bucket


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "this VM's metadata holds no gatebench-tls"),
        ("{}", "this VM's gatebench-tls metadata is unreadable: 'key_type'"),
    ],
)
def test_a_gateway_vm_without_its_certificate_writes_nothing_and_says_why(
    tmp_path: Path, value: str | None, reason: str
) -> None:
    from gatebench.vm._tls import configure_gateway_tls

    bucket = Bucket()
    with pytest.raises(RunError) as caught:
        configure_gateway_tls(
            bucket,  # type: ignore[arg-type]
            "gb",
            REF.run_id,
            "nginx",
            tmp_path,
            metadata=lambda key: value,
        )
    prefix = "nginx: the gateway VM could not write its TLS certificate: "
    assert str(caught.value).startswith(prefix + reason)
    said = json.loads(bucket.objects[config_error_object(REF.run_id, "nginx")])
    assert said == {"reason": str(caught.value)}
    assert not (tmp_path / TLS_DIR).exists()


def test_the_tester_trusts_the_run_ca_alone(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    from gatebench.core.tls import STORE_PASSWORD
    from gatebench.vm._roles import trust_run_ca

    document = {
        "tls": {"http2": True, "trust_store": TRUST_STORE_ON_TESTER, "ca": CA_CERT.decode()}
    }
    ca_file = trust_run_ca(document, tmp_path)
    assert ca_file is not None and Path(ca_file).read_bytes() == CA_CERT
    store = Path(document["tls"]["trust_store"])
    assert store.is_file() and store.is_absolute()
    loaded = pkcs12.load_pkcs12(store.read_bytes(), STORE_PASSWORD.encode())
    pem = [c.certificate.public_bytes(Encoding.PEM) for c in loaded.additional_certs]
    assert pem == [CA_CERT]  # the run's CA, and nothing else
    assert trust_run_ca({}, tmp_path) is None
    with pytest.raises(RunError, match="the run has no CA certificate"):
        trust_run_ca({"tls": {"http2": False}}, tmp_path)


# -- the score step: what the testers watched, on each measurement


class Store:
    def __init__(self, plan: dict[str, Any]) -> None:
        from gatebench.core.model import RunRecord

        self.run = RunRecord("r-" + "a" * 20, "gs://u/s#1", "x", plan=plan)
        self.stored: dict[str, Measurement] = {}

    def put_measurement(self, m: Measurement) -> None:
        self.stored[m.key] = m

    def get_run(self, run_id: str) -> Any:
        return self.run

    def update_run(self, run_id: str, **changes: Any) -> None:
        for key, value in changes.items():
            setattr(self.run, key, value)


def test_the_score_step_adds_the_testers_handshakes_and_the_faults_impact() -> None:
    from gatebench.cloud._ingest import ingest_run

    run_id = "r-" + "a" * 20
    rendered = render_run(deployed_auction(["nginx"]), REF, deployment(), "gb")
    document = rendered.workload
    phases = [p for p in document["phases"] if p["measured"]]
    bucket = Bucket()
    prefix = f"runs/{run_id}/"
    bucket.write("gb", prefix + "workload.json", json.dumps(document))
    bucket.write("gb", prefix + "backend.json", json.dumps(rendered.backend))
    bucket.write("gb", prefix + "fleet.json", json.dumps({"tester": {"count": 2}}))
    bucket.write("gb", CA_OBJECT.format(run_id=run_id), CA_CERT)  # the provision build's
    start = 1_700_000_000_000
    logs = [SimLogWriter(start), SimLogWriter(start)]
    for n, phase in enumerate(phases):
        at = n * 1000
        for t, log in enumerate(logs):  # each tester's share: 10 requests of 2 ms
            for i in range(10):
                log.request(phase["id"], at + 20 * i + t, at + 20 * i + t + 2)
    fault_phase = next(p for p in phases if str(p["index"]) in document["fault"]["phases"])
    at = phases.index(fault_phase) * 1000
    logs[0].request(fault_phase["id"], at + 300, at + 340, ok=False)  # one failed after the kill
    killed = (start + at + 250) / 1000.0
    for t, log in enumerate(logs):
        bucket.write("gb", f"raw/{run_id}/gatling-t{t}/simulation.log", log.bytes())
    handshakes = {str(p["index"]): [3, 7] for p in phases}
    kills = {
        str(i): {"error": "the phase ended before the kill time"}
        for i in document["fault"]["phases"]
    }
    kills[str(fault_phase["index"])] = {
        "at": killed,
        "restarted_at": killed + 1,
        "attempts": [killed + 0.01, killed + 0.02, killed + 0.03, killed + 0.4],
    }
    done0 = {"ok": True, "deployment": {"handshakes": handshakes, "kills": kills}}
    bucket.write("gb", prefix + "tester/load-done.json", json.dumps(done0))
    done1 = {"ok": True, "deployment": {"handshakes": handshakes}}
    bucket.write("gb", prefix + "t1/tester/load-done.json", json.dumps(done1))
    plan = {"tls": {"key": "ecdsa-p256", "resumption": True}, "backend": {"balance": "round_robin"}}
    store: Any = Store(plan)
    assert ingest_run(bucket, store, "gb", run_id) == len(phases)
    measured = store.stored
    assert {(m.tls_new, m.tls_resumed) for m in measured.values()} == {(6, 14)}  # both testers
    faulted = measured[f"nginx:bid:{fault_phase['repetition']}"]
    assert faulted.fault is not None
    assert faulted.fault["replica"] == 2
    # the last attempt came after the phase's last request: not the phase's
    assert faulted.fault["errors"] == 1 and faulted.fault["attempts"] == 3
    assert faulted.fault["killed_at"] == pytest.approx(killed)
    other = [m for m in measured.values() if m.fault and m is not faulted]
    assert other and all(
        m.fault == {"error": "the phase ended before the kill time"} for m in other
    )
    env = store.run.environment
    assert env["tls"]["key"] == "ecdsa-p256" and env["tls"]["http2"] is True
    assert len(env["tls"]["ca_sha256"]) == 64
    assert env["replicas"] == {"count": 3, "balance": "round_robin"}
    assert "deployment_notes" not in env
    # A tester that could not watch: no handshake figure at all (never half of them), and the
    # run says why.
    done1["deployment"] = {
        "handshakes": None,
        "notes": ["tester 1: TLS handshakes not observed: no packet socket"],
    }
    bucket.write("gb", prefix + "t1/tester/load-done.json", json.dumps(done1))
    kills[str(fault_phase["index"])]["attempts"] = None
    kills[str(fault_phase["index"])]["note"] = (
        "connection attempts to the dead replica not observed: x"
    )
    bucket.write("gb", prefix + "tester/load-done.json", json.dumps(done0))
    ingest_run(bucket, store, "gb", run_id)
    assert {(m.tls_new, m.tls_resumed) for m in store.stored.values()} == {(None, None)}
    faulted = store.stored[faulted.key]
    assert faulted.fault is not None and faulted.fault["attempts"] is None
    assert faulted.fault["errors"] == 1  # what the requests say still holds
    assert store.run.environment["deployment_notes"] == [
        f"nginx (repetition {fault_phase['repetition']}): connection attempts to the dead "
        "replica not observed: x",
        "tester 1: TLS handshakes not observed: no packet socket",
    ]


def test_tls_replicas_and_a_fault_change_nothing_in_the_price_and_the_estimate_says_so() -> None:
    """docs/cloud.md: the replicas run on the one backend VM, TLS costs CPU on the VMs the run
    has; the estimate is the same figures, and says why."""
    from gatebench.core.cost import describe_cost, estimate_cost
    from gatebench.core.plan import load_plan
    from gatebench.core.spec import read_spec

    def estimate(spec: bytes) -> Any:
        return estimate_cost(load_plan(read_spec(spec, name="openapi.yaml")).to_dict())

    plain = yaml.safe_load(deployed_auction())
    for key in ("tls", "fault"):
        del plain["x-gatebench"][key]
    plain["x-gatebench"]["backend"] = {"builtin": "auction"}
    before = estimate(yaml.safe_dump(plain).encode())
    after = estimate(deployed_auction())
    assert after.lines == before.lines and after.vms == before.vms
    assert before.notes == ()
    assert after.notes == (
        "TLS, 3 backend replicas and a killed replica add nothing to this estimate: the "
        "replicas are processes on the one backend VM (n2-standard-2: they share its vCPUs; a "
        "larger backend_machine is priced as such); TLS costs CPU on the VMs the run has, not "
        "VMs or minutes; the fault is a request from the tester to the backend VM.",
    )
    assert describe_cost(after)[-1] == "  " + after.notes[0]


def test_every_gateway_with_an_image_renders_the_deployment_for_its_vm_or_says_why_not() -> None:
    """The cloud path renders the same deployment as the local path: each gateway reads the
    TLS files its VM makes under its folder and pools the backend VM's replicas, or is left
    out with the renderers' own reason (gatebench.core.renderers.deployment_exclusions)."""
    from gatebench.core.renderers import all_renderers, deployment_exclusions, deployment_needs

    names = [r.name for r in all_renderers() if r.cloud_image is not None]
    settings = deployment()
    spec = yaml.safe_load(deployed_auction(names))
    del spec["x-gatebench"]["fault"]
    rendered = render_run(yaml.safe_dump(spec).encode(), REF, settings, "gb")
    needs = deployment_needs(tls=True, http2=True, replicas=3)
    assert rendered.failures == deployment_exclusions(names, needs)
    assert set(rendered.configs) == set(names) - set(rendered.failures)
    assert {"kong", "tyk", "nginx", "haproxy"} <= set(rendered.configs)
    assert "krakend" in rendered.failures  # its pool balances at random on several cores
    host = f"gb-{REF.run_id}-backend.europe-central2-a.c.proj.internal"
    for name, files in rendered.configs.items():
        text = "\n".join(files.values())
        assert "/etc/gatebench/tls/" in text, name
        assert host in text, name
        for port in ("8080", "8081", "8082"):  # host:port, or Envoy's port_value
            assert port in text.replace(host, ""), (name, port)
        assert rendered.fleet["gateways"][name]["configure"][0][:2] == ["cloud", "gateway-tls"]
