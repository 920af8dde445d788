"""Pinning a run's images by digest (gatebench.cloud._images), against a recording stand-in
of the registry's HTTP answers; tests/integration/test_pipeline.py does it against a real
registry (CNCF distribution). Terraform's side of the rule (where a Docker Hub image is pulled
from) is compared in tests/unit/test_terraform_templates.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import hcl2
import pytest

from gatebench.cloud import RequestError
from gatebench.cloud._images import EMULATOR_ENV, mirror_of, pin_images

ROOT = Path(__file__).resolve().parents[2]
MIRROR = "europe-central2-docker.pkg.dev/proj/gb-dockerhub"
RUNNER = "europe-central2-docker.pkg.dev/proj/gb-gatebench/runner:0.1.0"


class Registry:
    def __init__(self, digests: dict[str, str]) -> None:
        self.digests = digests
        self.asked: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
        self.asked.append((url, headers))
        digest = self.digests.get(url)
        return (200, {"Docker-Content-Digest": digest}) if digest else (404, {})


def digest(n: int) -> str:
    return "sha256:" + f"{n:02x}" * 32


def values() -> dict[str, Any]:
    tyk = {
        "image": "tykio/tyk-gateway:v5.8.0",
        "sidecars": [{"name": "redis", "image": "redis:7.4.1", "args": []}],
    }
    nginx = {"image": "nginx:1.22.1", "sidecars": []}
    return {"runner_image": RUNNER, "gateways": {"nginx": nginx, "tyk": tyk}}


def test_every_image_is_pinned_where_the_vms_pull_it_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_ENV, raising=False)
    registry = Registry(
        {
            "https://europe-central2-docker.pkg.dev/v2/proj/gb-gatebench/runner/manifests/0.1.0": digest(
                1
            ),
            "https://europe-central2-docker.pkg.dev/v2/proj/gb-dockerhub/library/nginx/manifests/1.22.1": digest(
                2
            ),
            "https://europe-central2-docker.pkg.dev/v2/proj/gb-dockerhub/tykio/tyk-gateway/manifests/v5.8.0": digest(
                3
            ),
            "https://europe-central2-docker.pkg.dev/v2/proj/gb-dockerhub/library/redis/manifests/7.4.1": digest(
                4
            ),
        }
    )
    out = pin_images(values(), MIRROR, transport=registry, token="tok")
    assert out["runner_image"] == f"{RUNNER}@{digest(1)}"
    assert out["gateways"]["nginx"]["image"] == f"nginx:1.22.1@{digest(2)}"
    assert out["gateways"]["tyk"]["image"] == f"tykio/tyk-gateway:v5.8.0@{digest(3)}"
    assert out["gateways"]["tyk"]["sidecars"][0]["image"] == f"redis:7.4.1@{digest(4)}"
    assert len(registry.asked) == 4
    for _, headers in registry.asked:
        assert headers["Authorization"] == "Bearer tok"
        assert "application/vnd.oci.image.index.v1+json" in headers["Accept"]
    # A pinned reference is asked nothing; infra/vms's validations take the pinned forms.
    again = pin_images(out, MIRROR, transport=Registry({}), token="tok")
    assert again == out
    with (ROOT / "infra" / "vms" / "variables.tf").open() as fh:
        declared = {
            k.strip('"'): v for block in hcl2.load(fh)["variable"] for k, v in block.items()
        }
    gateway_rule = re.search(
        r'regex\("(\^\[a-z0-9\]\[a-z0-9\./_-\]\*[^"]*)"', str(declared["gateways"]["validation"])
    )
    runner_rule = re.search(r'regex\("([^"]*)"', str(declared["runner_image"]["validation"]))
    assert gateway_rule and runner_rule
    for reference in ("nginx:1.22.1@" + digest(2), "tykio/tyk-gateway:v5.8.0@" + digest(3)):
        assert re.fullmatch(gateway_rule.group(1).replace("\\\\", "\\"), reference), reference
    assert re.fullmatch(runner_rule.group(1).replace("\\\\", "\\"), out["runner_image"])


def test_a_tag_the_registry_does_not_know_stops_provisioning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(EMULATOR_ENV, "127.0.0.1:5999")
    registry = Registry(
        {"http://127.0.0.1:5999/v2/proj/gb-gatebench/runner/manifests/0.1.0": digest(1)}
    )
    with pytest.raises(RequestError) as raised:
        pin_images(values(), MIRROR, transport=registry, token=None)
    (problem,) = raised.value.problems
    assert problem.message == (
        "nginx:1.22.1: cannot pin it by digest: the registry answered 404 "
        "(http://127.0.0.1:5999/v2/proj/gb-dockerhub/library/nginx/manifests/1.22.1)"
    )
    assert all("Authorization" not in h for _, h in registry.asked)  # the emulator: no token


def test_the_mirror_is_the_deployments_docker_hub_repository() -> None:
    settings = {"runner_image": RUNNER, "project": "proj", "prefix": "gb"}
    assert mirror_of(settings) == MIRROR
    main = (ROOT / "infra" / "vms" / "main.tf").read_text()
    assert 'docker_hub = "${local.registry}/${var.project}/${var.prefix}-dockerhub"' in main
