"""Where an installed gatebench finds Gatling (gatebench.local._resources.gatling_files): the runner
image (cloudbuild/runner.Dockerfile) builds it once and names it with GATEBENCH_GATLING_CLASSES
and GATEBENCH_GATLING_CP; those are used before any source is looked for, and nothing is built
at first use on a tester VM (no Maven run, no download)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatebench.core.errors import RunError
from gatebench.local import _resources


def image_like_build(root: Path) -> tuple[Path, Path]:
    classes = root / "gatling" / "target" / "test-classes"
    (classes / "gatebench").mkdir(parents=True)
    (classes / "gatebench" / "GenericSimulation.class").write_bytes(b"\xca\xfe\xba\xbe")
    cp_file = root / "gatling" / "classpath.txt"
    cp_file.write_text("/opt/gatebench/m2/io/gatling/x.jar\n")
    return classes, cp_file


@pytest.fixture
def installed_elsewhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """An installation outside a checkout with an empty user cache and no sources; every build
    it would start is recorded (and refused)."""
    builds: list[list[str]] = []

    def no_sources(name: str) -> Path:
        raise RunError(f"gatebench's {name}/ sources are missing")

    def refuse(argv: list[str], *args: object) -> None:
        builds.append(argv)
        raise AssertionError(f"built at first use: {argv}")

    monkeypatch.setattr(_resources, "source_dir", no_sources)
    monkeypatch.setattr(_resources, "_checkout_cache", lambda: None)
    monkeypatch.setattr(_resources, "_run_build", refuse)
    monkeypatch.setenv(_resources.CACHE_ENV, str(tmp_path / "user-cache"))
    return builds


def test_the_image_build_is_used_before_any_source_is_looked_for(
    installed_elsewhere: list[list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    classes, cp_file = image_like_build(tmp_path / "opt")
    monkeypatch.setenv("GATEBENCH_GATLING_CLASSES", str(classes))
    monkeypatch.setenv("GATEBENCH_GATLING_CP", str(cp_file))
    assert _resources.gatling_files() == (classes, cp_file)
    assert installed_elsewhere == []  # no Maven at first use


def test_a_named_build_that_is_not_there_is_a_located_error(
    installed_elsewhere: list[list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    classes, cp_file = image_like_build(tmp_path / "opt")
    monkeypatch.setenv("GATEBENCH_GATLING_CLASSES", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GATEBENCH_GATLING_CP", str(cp_file))
    with pytest.raises(RunError) as raised:
        _resources.gatling_files()
    assert str(raised.value) == (
        f"$GATEBENCH_GATLING_CLASSES={tmp_path / 'nowhere'}: no compiled simulation there "
        f"(expected {tmp_path / 'nowhere' / 'gatebench' / 'GenericSimulation.class'}); unset it "
        "to build Gatling here"
    )
    monkeypatch.setenv("GATEBENCH_GATLING_CLASSES", str(classes))
    monkeypatch.setenv("GATEBENCH_GATLING_CP", str(tmp_path / "cp.txt"))
    with pytest.raises(RunError, match=r"GATEBENCH_GATLING_CP=.*cp\.txt: no such classpath file"):
        _resources.gatling_files()
    assert installed_elsewhere == []


def test_without_the_variables_the_sources_are_needed(
    installed_elsewhere: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GATEBENCH_GATLING_CLASSES", raising=False)
    monkeypatch.delenv("GATEBENCH_GATLING_CP", raising=False)
    with pytest.raises(RunError, match="gatling/ sources are missing"):
        _resources.gatling_files()
