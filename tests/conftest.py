"""Shared test plumbing: golden files, markers by folder, paths."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from cloud.image import BuiltImage, build_runner_image, missing_stand_ins, podman_works
from paths import ROOT


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


class Golden:
    """Byte-exact comparison with ``tests/golden/...`` files.

    On a mismatch the actual output is written beside the expected file as ``*.actual``
    (gitignored) and the failure prints the command that accepts it.
    """

    def __init__(self, update: bool) -> None:
        self.update = update

    def check(self, expected_path: Path, actual: str | bytes) -> None:
        data = actual.encode() if isinstance(actual, str) else actual
        actual_path = expected_path.with_name(expected_path.name + ".actual")
        if self.update:
            expected_path.parent.mkdir(parents=True, exist_ok=True)
            expected_path.write_bytes(data)
            actual_path.unlink(missing_ok=True)
            return
        if not expected_path.exists():
            actual_path.parent.mkdir(parents=True, exist_ok=True)
            actual_path.write_bytes(data)
            pytest.fail(
                f"no golden file {expected_path.relative_to(ROOT)}; the output is in "
                f"{actual_path.relative_to(ROOT)}. Accept it with `make goldens`."
            )
        expected = expected_path.read_bytes()
        if expected == data:
            actual_path.unlink(missing_ok=True)
            return
        actual_path.write_bytes(data)
        diff = "".join(
            difflib.unified_diff(
                expected.decode(errors="replace").splitlines(keepends=True),
                data.decode(errors="replace").splitlines(keepends=True),
                fromfile=str(expected_path.relative_to(ROOT)),
                tofile=str(actual_path.relative_to(ROOT)),
                n=2,
            )
        )
        pytest.fail(
            f"{expected_path.relative_to(ROOT)} differs (actual output in "
            f"{actual_path.name}); if the change is intended run `make goldens`.\n{diff[:4000]}"
        )


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    return Golden(bool(request.config.getoption("--update-goldens")))


@pytest.fixture(scope="session")
def runner_image(tmp_path_factory: pytest.TempPathFactory) -> BuiltImage:
    """cloudbuild/runner.Dockerfile built once per test session with podman, over the source
    `gcloud builds submit` uploads, FROM the stand-in bases (tests/cloud/image.py)."""
    reason = podman_works()
    if reason is not None:
        pytest.fail(reason)
    missing = missing_stand_ins()
    if missing:
        pytest.fail(
            f"no stand-in for the base image(s) {', '.join(missing)}: run "
            "`scripts/setup.sh images` (`make test` does)"
        )
    return build_runner_image(tmp_path_factory.mktemp("runner-image"))
