"""infra/ read with python-hcl2 (terraform itself cannot run here): every reference resolves,
IAM roles come from an allow-list and are each explained in infra/README.md, nothing is
public, firewalls never open to the internet, and the workflow's environment matches what
workflows/benchmark.yaml reads. tests/unit/test_terraform_tools.py runs hclfmt and tflint."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
# Every folder of infra/ holding Terraform files: the root, infra/vms and every module.
CONFIGS = sorted({tf.parent for tf in INFRA.rglob("*.tf")})

# Every role the deployment grants, with the one reason it is needed (infra/README.md says
# the same, per grant). Anything broader (owner, editor, *.admin of a service) is refused.
ALLOWED_ROLES = {
    "roles/artifactregistry.reader": "pull the runner image",
    "roles/artifactregistry.writer": "push the runner image",
    "roles/bigquery.dataEditor": "load rows into the results dataset",
    "roles/bigquery.dataViewer": "read the results dataset",
    "roles/bigquery.jobUser": "run load and query jobs",
    "roles/cloudbuild.builds.editor": "start the per-run builds",
    "roles/datastore.user": "read and write run documents (one database, by condition)",
    "roles/datastore.viewer": "read run documents (one database, by condition)",
    "roles/eventarc.eventReceiver": "receive events as a trigger's identity",
    "roles/iam.serviceAccountTokenCreator": "sign upload URLs as itself (no key)",
    "roles/iam.serviceAccountUser": "attach a service account to builds and VMs",
    "roles/logging.logWriter": "write logs",
    "roles/pubsub.publisher": "Cloud Storage publishes object events for Eventarc",
    "roles/run.invoker": "invoke a function",
    "roles/secretmanager.secretAccessor": "tester VMs read the JWT signing key (one secret)",
    "roles/storage.objectAdmin": "write run artefacts (one bucket)",
    "roles/storage.objectCreator": "upload specs, raw logs (one bucket)",
    "roles/storage.objectUser": "rewrite the tester's own markers (by object condition)",
    "roles/storage.objectViewer": "read objects (one bucket)",
    "roles/workflows.invoker": "start the workflow from the trigger",
}


def unquote(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if str(key).startswith("__"):  # python-hcl2's own keys (comments, block markers)
                continue
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@dataclass
class Config:
    """One Terraform root or module: its blocks by kind, as python-hcl2 reads them."""

    path: Path
    resources: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    data: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    modules: dict[str, dict[str, Any]] = field(default_factory=dict)
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    locals: dict[str, Any] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> Config:
        config = cls(path)
        for tf in sorted(path.glob("*.tf")):
            with tf.open() as fh:
                doc = hcl2.load(fh)
            config.texts.extend(strings(doc))
            for block in doc.get("resource", []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        config.resources[(unquote(rtype), unquote(name))] = body
            for block in doc.get("data", []):
                for rtype, named in block.items():
                    for name, body in named.items():
                        config.data[(unquote(rtype), unquote(name))] = body
            for block in doc.get("module", []):
                for name, body in block.items():
                    config.modules[unquote(name)] = body
            for block in doc.get("variable", []):
                for name, body in block.items():
                    config.variables[unquote(name)] = body
            for block in doc.get("output", []):
                for name, body in block.items():
                    config.outputs[unquote(name)] = body
            for block in doc.get("locals", []):
                config.locals.update(block)
        return config


CONFIG = {path: Config.load(path) for path in CONFIGS}
DASHBOARD = INFRA / "modules" / "dashboard"


def ids(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", CONFIGS, ids=ids)
def test_every_reference_resolves(path: Path) -> None:
    config = CONFIG[path]
    text = "\n".join(config.texts)
    problems = []
    for name in set(re.findall(r"\bvar\.([A-Za-z0-9_]+)", text)):
        if name not in config.variables:
            problems.append(f"var.{name} is not declared")
    for name in set(re.findall(r"\blocal\.([A-Za-z0-9_]+)", text)):
        if name not in config.locals:
            problems.append(f"local.{name} is not defined")
    for rtype, name in set(
        re.findall(r"(?<![.\w])((?:google|time)_[a-z0-9_]+)\.([a-z0-9_]+)", text)
    ):
        if (rtype, name) not in config.resources:
            problems.append(f"{rtype}.{name} is not a resource of {ids(path)}")
    for rtype, name in set(re.findall(r"\bdata\.(google_[a-z0-9_]+)\.([a-z0-9_]+)", text)):
        if (rtype, name) not in config.data:
            problems.append(f"data.{rtype}.{name} is not declared")
    for module, output in set(re.findall(r"\bmodule\.([a-z0-9_-]+)\.([a-z0-9_]+)", text)):
        if module not in config.modules:
            problems.append(f"module.{module} is not declared")
            continue
        source = unquote(config.modules[module]["source"])
        child = CONFIG[(path / source).resolve()]
        if output not in child.outputs:
            problems.append(f"module.{module}.{output}: {source} has no output {output!r}")
    assert problems == []


@pytest.mark.parametrize("path", CONFIGS, ids=ids)
def test_module_calls_pass_exactly_the_declared_variables(path: Path) -> None:
    config = CONFIG[path]
    meta = {"source", "depends_on", "for_each", "count", "providers"}
    for name, body in config.modules.items():
        child = CONFIG[(path / unquote(body["source"])).resolve()]
        passed = {k for k in body if not k.startswith("__")} - meta
        required = {v for v, spec in child.variables.items() if "default" not in spec}
        assert passed <= set(child.variables), (
            f"module.{name}: unknown inputs {passed - set(child.variables)}"
        )
        assert required <= passed, f"module.{name}: missing inputs {required - passed}"


def all_roles() -> set[str]:
    roles: set[str] = set()
    for config in CONFIG.values():
        for text in config.texts:
            roles.update(re.findall(r"roles/[A-Za-z0-9_.]+", text))
    return roles


def test_iam_roles_come_from_the_allow_list() -> None:
    roles = all_roles()
    assert roles, "no IAM role found: the parser reads nothing?"
    assert roles <= set(ALLOWED_ROLES), (
        f"roles outside the allow-list: {sorted(roles - set(ALLOWED_ROLES))}"
    )


def test_every_role_is_explained_in_the_readme() -> None:
    readme = (INFRA / "README.md").read_text()
    documented = set(re.findall(r"^\| `(roles/[A-Za-z0-9_.]+)` \|", readme, re.MULTILINE))
    assert documented == all_roles()


def test_iam_members_are_never_public() -> None:
    for path, config in CONFIG.items():
        for (rtype, name), body in config.resources.items():
            if rtype.endswith("_iam_member") or rtype.endswith("_iam_binding"):
                member = unquote(body.get("member", ""))
                public = {"allUsers", "allAuthenticatedUsers"} & set(re.split(r"\W+", member))
                assert not public, f"{ids(path)}: {rtype}.{name} grants to {member}"
            assert not rtype.endswith("_iam_policy"), (
                f"{rtype}.{name}: use *_iam_member, never replace policies"
            )

    # The one public grant: the dashboard's functions, each behind its own opt-in variable
    # (default off). Nowhere else is a public principal a value (descriptions may name one;
    # the bucket module's validation refuses them).
    def public_values(config: Config) -> list[str]:
        return [
            text
            for text in config.texts
            if text in ("allUsers", "allAuthenticatedUsers")
            or (re.search(r'"(allUsers|allAuthenticatedUsers)"', text) and "!contains(" not in text)
        ]

    for path, config in CONFIG.items():
        if path != DASHBOARD:
            assert public_values(config) == [], ids(path)
    assert len(public_values(CONFIG[DASHBOARD])) == 1
    dashboard = CONFIG[DASHBOARD]
    assert "allAuthenticatedUsers" not in "\n".join(dashboard.texts)
    functions = dashboard.locals["functions"]
    assert {name: unquote(f["public"]) for name, f in functions.items()} == {
        "read": "${var.public_read}",
        "upload": "${var.public_upload}",
    }
    public = unquote(dashboard.locals["invokers"])
    assert 'member = "allUsers"} if f.public})' in public, public
    root = CONFIG[INFRA]
    for name in ("public_read", "public_upload"):
        assert root.variables[name]["default"] is False
        assert root.modules["dashboard"][name] == f"${{var.{name}}}"


def test_buckets_are_private_and_uniform() -> None:
    buckets = [
        body
        for config in CONFIG.values()
        for (rtype, _), body in config.resources.items()
        if rtype == "google_storage_bucket"
    ]
    assert buckets
    for body in buckets:
        assert unquote(body["public_access_prevention"]) == "enforced"
        assert body["uniform_bucket_level_access"] is True
    root = CONFIG[INFRA]
    runs = root.modules["runs"]["lifecycle_rules"][0]
    assert runs["suffixes"] == ['"/simulation.log"'] or runs["suffixes"] == ["/simulation.log"]
    assert "cors" in root.modules["uploads"]


def test_firewalls_never_open_to_the_internet_and_only_between_roles() -> None:
    firewalls = {
        name: body
        for config in CONFIG.values()
        for (rtype, name), body in config.resources.items()
        if rtype == "google_compute_firewall"
    }
    assert set(firewalls) == {
        "tester_to_gateway",
        "to_backend",
        "tester_to_backend",
        "tester_to_tester",
    }
    for name, body in firewalls.items():
        assert "source_ranges" not in body, f"{name}: sources are network tags, never ranges"
        assert body.get("source_tags"), name
        assert body.get("target_tags"), name
        assert unquote(body["direction"]) == "INGRESS"
    assert "0.0.0.0/0" not in json.dumps([c.texts for c in CONFIG.values()])


def test_each_firewall_opens_one_port_the_vms_listen_on() -> None:
    """The network's rules open exactly the ports gatebench.cloud._layout gives each role:
    tester → gateway; gateway and tester → every replica's port of the backend; tester →
    the backend's TLS listener and the fault's control (no gateway reaches those); and
    tester → tester only on tester 0's phase barrier. A change under load's second backend is
    among the replicas' ports (gatebench.cloud._live); a gateway VM's management port (its
    loopback) is in no rule."""
    from gatebench.cloud._layout import (
        BACKEND_CONTROL_PORT,
        BACKEND_PORT,
        BACKEND_TLS_PORT,
        BARRIER_PORT,
        GATEWAY_PORT,
        MAX_BACKEND_PORTS,
    )
    from gatebench.cloud._live import ADMIN_PORT, CHANGED_BACKEND_PORT
    from gatebench.core.plan import MAX_REPLICAS

    network = CONFIG[INFRA / "modules" / "network"]
    defaults = dict(
        re.findall(r"(\w+) = optional\(number, (\d+)\)", network.variables["ports"]["type"])
    )
    assert MAX_BACKEND_PORTS == MAX_REPLICAS
    assert {k: int(v) for k, v in defaults.items()} == {
        "gateway": GATEWAY_PORT,
        "backend": BACKEND_PORT,
        "backend_last": BACKEND_PORT + MAX_BACKEND_PORTS - 1,
        "backend_tls": BACKEND_TLS_PORT,
        "backend_control": BACKEND_CONTROL_PORT,
        "barrier": BARRIER_PORT,
    }
    assert ADMIN_PORT not in {int(v) for v in defaults.values()}
    assert BACKEND_PORT < CHANGED_BACKEND_PORT <= BACKEND_PORT + MAX_BACKEND_PORTS - 1
    rules = {
        name: (body["source_tags"], body["target_tags"], body["allow"][0]["ports"])
        for (rtype, name), body in network.resources.items()
        if rtype == "google_compute_firewall"
    }
    assert rules == {
        "tester_to_gateway": (
            ["${local.tags.tester}"],
            ["${local.tags.gateway}"],
            ["${tostring(var.ports.gateway)}"],
        ),
        "to_backend": (
            ["${local.tags.gateway}", "${local.tags.tester}"],
            ["${local.tags.backend}"],
            ['"${var.ports.backend}-${var.ports.backend_last}"'],
        ),
        "tester_to_backend": (
            ["${local.tags.tester}"],
            ["${local.tags.backend}"],
            ["${tostring(var.ports.backend_tls)}", "${tostring(var.ports.backend_control)}"],
        ),
        "tester_to_tester": (
            ["${local.tags.tester}"],
            ["${local.tags.tester}"],
            ["${tostring(var.ports.barrier)}"],
        ),
    }


def test_vms_have_no_external_address_and_delete_themselves() -> None:
    vms = CONFIG[INFRA / "vms"]
    instances = [
        body for (rtype, _), body in vms.resources.items() if rtype == "google_compute_instance"
    ]
    assert len(instances) == 3
    for body in instances:
        (interface,) = body["network_interface"]
        assert "access_config" not in interface
        (scheduling,) = body["scheduling"]
        assert unquote(scheduling["instance_termination_action"]) == "DELETE"
        assert scheduling["max_run_duration"]


def test_functions_accept_only_internal_traffic() -> None:
    functions = CONFIG[INFRA / "modules" / "functions"]
    (body,) = [
        b for (t, _), b in functions.resources.items() if t == "google_cloudfunctions2_function"
    ]
    (service,) = body["service_config"]
    assert unquote(service["ingress_settings"]) == "ALLOW_INTERNAL_ONLY"


def test_no_credentials_in_variables() -> None:
    for path, config in CONFIG.items():
        for name in config.variables:
            assert not re.search(r"(key|secret|password|token|credential)", name), (
                f"{ids(path)}: variable {name!r} looks like a credential"
            )


def test_the_workflow_gets_every_environment_variable_it_reads() -> None:
    workflow = (ROOT / "workflows" / "benchmark.yaml").read_text()
    read = set(re.findall(r'sys\.get_env\("(GATEBENCH_[A-Z0-9_]+)"\)', workflow))
    read |= set(re.findall(r"config: (GATEBENCH_[A-Z0-9_]+)", workflow))
    env = CONFIG[INFRA].modules["workflow"]["env"]
    assert set(env) == read
    assert len(env) <= 20  # Workflows' limit on user environment variables


def test_build_substitutions_are_all_provided_by_the_workflow() -> None:
    workflow = yaml.safe_load((ROOT / "workflows" / "benchmark.yaml").read_text())
    (prepare,) = [s for s in workflow["run_build"]["steps"] if "prepare" in s]
    assigned = [a for a in prepare["prepare"]["assign"] if "build.substitutions" in a]
    provided = set(assigned[0]["build.substitutions"])
    for name in ("provision", "load", "teardown"):
        text = (ROOT / "cloudbuild" / f"{name}.yaml").read_text()
        used = set(re.findall(r"\$\{?(_[A-Z0-9_]+)", text))
        assert used <= provided, f"cloudbuild/{name}.yaml uses {sorted(used - provided)}"
        config = yaml.safe_load(text)
        assert name in config["tags"]
        assert config["options"]["logging"] == "CLOUD_LOGGING_ONLY"  # required with a user SA
        # Build configs travel as workflow environment variables: 4 KiB each at most.
        assert len(json.dumps(config, separators=(",", ":"))) < 4096


def test_bigquery_table_uses_the_report_schema_and_the_view_its_columns() -> None:
    from gatebench.core.report import column_names

    results = CONFIG[INFRA / "modules" / "results-store"]
    table = results.resources[("google_bigquery_table", "measurements")]
    assert "src/gatebench/core/report/bigquery_schema.json" in table["schema"]
    path = (
        INFRA
        / "modules"
        / "results-store"
        / "../../../src/gatebench/core/report/bigquery_schema.json"
    )
    assert [c["name"] for c in json.loads(path.read_text())] == list(column_names())
    sql = (INFRA / "modules" / "results-store" / "summary.sql.tftpl").read_text()
    selected = re.findall(r"^\s+([a-z_]+),?$", sql.split("FROM")[0], re.MULTILINE)
    assert selected
    assert set(selected) <= set(column_names())
    assert "repetition IS NULL" in sql


def test_dashboard_functions_get_the_least_privilege_they_need() -> None:
    """upload: sign as itself, create objects in the uploads bucket; read: view the results
    database (by condition); both: nothing else, anywhere in infra/."""
    dashboard = CONFIG[DASHBOARD]
    grants = {
        (rtype, name): {k: unquote(v) for k, v in body.items() if not k.startswith("__")}
        for (rtype, name), body in dashboard.resources.items()
        if rtype.endswith("_iam_member")
    }
    upload_sa = '${google_service_account.this["upload"]'
    read_sa = '${google_service_account.this["read"]'
    assert grants == {
        ("google_service_account_iam_member", "upload_signs_as_itself"): {
            "service_account_id": f"{upload_sa}.name}}",
            "role": "roles/iam.serviceAccountTokenCreator",
            "member": f"{upload_sa}.member}}",
        },
        ("google_storage_bucket_iam_member", "upload_creates_specs"): {
            "bucket": "${var.uploads_bucket}",
            "role": "roles/storage.objectCreator",
            "member": f"{upload_sa}.member}}",
        },
        ("google_project_iam_member", "read_views_results"): {
            "project": "${var.project_id}",
            "role": "roles/datastore.viewer",
            "member": f"{read_sa}.member}}",
            "condition": [
                {
                    "title": '"${var.prefix}-dashboard-results-only"',
                    "expression": '"resource.name == \\"${var.firestore_database_id}\\""',
                    "__is_block__": True,
                }
            ],
        },
        ("google_cloud_run_v2_service_iam_member", "invokers"): {
            "for_each": "${local.invokers}",
            "project": "${var.project_id}",
            "location": "${var.region}",
            "name": "${google_cloudfunctions2_function.this[each.value.function]"
            ".service_config[0].service}",
            "role": "roles/run.invoker",
            "member": "${each.value.member}",
        },
    }
    root = CONFIG[INFRA]
    assert root.modules["dashboard"]["firestore_database_id"] == (
        "${module.results.firestore_database_id}"
    )
    assert root.modules["dashboard"]["users"] == "${var.users}"
    # Their accounts get no other grant: nothing outside the module names them.
    for path, config in CONFIG.items():
        if path != DASHBOARD:
            assert not any("module.dashboard.service_account" in t for t in config.texts), ids(path)
    # Each function runs as its own account; browsers reach them (IAM decides who may call).
    (function,) = [
        b for (t, _), b in dashboard.resources.items() if t == "google_cloudfunctions2_function"
    ]
    (service,) = function["service_config"]
    assert unquote(service["ingress_settings"]) == "ALLOW_ALL"
    assert service["service_account_email"] == "${google_service_account.this[each.key].email}"
    # The uploads bucket lets the site's origin PUT with exactly the headers the URL signs.
    cors = root.modules["uploads"]["cors"]
    assert [unquote(m) for m in cors["methods"]] == ["PUT"]
    assert [unquote(h) for h in cors["headers"]] == ["Content-Type", "x-goog-meta-gatebench"]
    assert root.modules["dashboard"]["origins"] == cors["origins"] == "${var.upload_origins}"


def test_dashboard_functions_get_every_setting_they_read() -> None:
    from gatebench.web import _app

    read = set(re.findall(r"\"(GATEBENCH_[A-Z_]+)\"", Path(_app.__file__).read_text()))
    functions = CONFIG[DASHBOARD].locals["functions"]
    common = {"GATEBENCH_PROJECT", "GATEBENCH_ORIGINS"}
    (function,) = [
        b
        for (t, _), b in CONFIG[DASHBOARD].resources.items()
        if t == "google_cloudfunctions2_function"
    ]
    env = function["service_config"][0]["environment_variables"]
    assert all(f"{name} = " in env for name in common), env
    given = {name: set(f["env"]) | common for name, f in functions.items()}
    assert given == {
        "read": {"GATEBENCH_FIRESTORE_DATABASE", *common},
        "upload": {"GATEBENCH_UPLOADS_BUCKET", "GATEBENCH_SPEC_PREFIX", *common},
    }
    assert read == given["read"] | given["upload"]
    # Each function folder exists with the entry point Terraform names.
    for name in functions:
        main = (ROOT / "functions" / name / "main.py").read_text()
        assert f"def {name}(request):" in main
