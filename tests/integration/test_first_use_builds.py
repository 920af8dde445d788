"""What gatebench builds on first use outside a checkout's .cache (gatebench.local._resources): a
JVM gateway's jar from its Maven project, into an empty build folder, announced on the
``gatebench.build`` logger, and not rebuilt while its sources are unchanged. (The Go
backend and Gatling are built the same way by tests/integration/test_wheel_install.py.)
Maven resolves from the user's ~/.m2, as `make setup-all` left it."""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

import pytest

from gatebench.local import _resources

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_zuul_is_built_on_first_use_then_reused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(_resources.CACHE_ENV, str(tmp_path))
    monkeypatch.delenv("GATEBENCH_ZUUL_JAR", raising=False)
    caplog.set_level(logging.INFO, logger="gatebench.build")
    assert not _resources.jvm_gateway_jar("zuul", build=False).exists()
    jar = _resources.jvm_gateway_jar("zuul")
    assert jar == tmp_path / "jvm-gateways" / "zuul.jar"
    with zipfile.ZipFile(jar) as archive:
        manifest = archive.read("META-INF/MANIFEST.MF").decode()
        assert "Main-Class: org.springframework.boot.loader" in manifest
        assert any(n.endswith("GatebenchZuul.class") for n in archive.namelist())
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith(f"building zuul into {jar} (mvn package;")
    assert messages[1].startswith("built zuul in ")
    caplog.clear()
    assert _resources.jvm_gateway_jar("zuul") == jar
    assert caplog.records == []  # fresh: the digest of its sources matches
