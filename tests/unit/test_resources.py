"""Where the package finds its non-Python sources and builds (gatebench._resources), and what
it says when a build tool is missing. The wheel itself: tests/integration/test_wheel_install.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gatebench import _resources
from gatebench.cli import main
from gatebench.errors import MissingTool
from paths import EXAMPLES, ROOT


def test_a_checkout_finds_its_top_level_folders() -> None:
    assert _resources.checkout_root() == ROOT
    for name in _resources.SOURCES:
        assert _resources.source_dir(name) == ROOT / name


def test_the_build_folder_is_overridable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(_resources.CACHE_ENV, str(tmp_path / "c"))
    assert _resources.build_dir() == tmp_path / "c"
    monkeypatch.delenv(_resources.CACHE_ENV)
    assert _resources.build_dir() == ROOT / ".cache"


def test_the_user_cache_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _resources.user_cache_dir() == tmp_path / "gatebench"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _resources.user_cache_dir() == tmp_path / "home" / ".cache" / "gatebench"


@pytest.fixture
def no_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty build folder and a PATH with no go, java or mvn."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv(_resources.CACHE_ENV, str(tmp_path / "cache"))
    for name in ("GATEBENCH_BACKEND_BIN", "GATEBENCH_GATLING_CLASSES", "GATEBENCH_GATLING_CP"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache"


def test_a_missing_go_is_named_with_its_install_command(no_tools: Path) -> None:
    with pytest.raises(MissingTool) as caught:
        _resources.backend_binary()
    assert caught.value.tool == "go"
    assert str(caught.value) == (
        "'go' is missing: the Go backend (backend/) is built with it on first use; "
        "install Go 1.22 or newer (Debian: apt-get install golang-go; or https://go.dev/dl/)"
    )
    assert not (no_tools / "bin" / "gatebench-backend").exists()


def test_missing_java_and_mvn_are_named(no_tools: Path) -> None:
    with pytest.raises(
        MissingTool, match=r"^'java' is missing: Gatling runs on it; install a JDK 17"
    ):
        _resources.gatling_files()
    with pytest.raises(MissingTool) as caught:
        _resources.jvm_gateway_jar("zuul")
    assert str(caught.value) == (
        "'java' is missing: zuul runs on it and is built with it; "
        "install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
    )


def test_run_without_java_is_one_line_naming_it(
    no_tools: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "run",
            str(EXAMPLES / "petstore" / "openapi.yaml"),
            "--quick",
            "--results",
            str(tmp_path / "results"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 3
    missing = [line for line in err.splitlines() if "missing" in line]
    assert missing == [
        "gatebench: 'java' is missing: Gatling runs on it; "
        "install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
    ]


def test_a_stale_build_outside_a_checkout_is_redone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Outside the checkout's .cache, a build is fresh only when its digest matches."""
    monkeypatch.setenv(_resources.CACHE_ENV, str(tmp_path))
    out = tmp_path / "bin" / "gatebench-backend"
    out.parent.mkdir()
    out.write_text("old")
    stamp = out.with_name(".gatebench-backend.digest")
    stamp.write_text(_resources.tree_digest(ROOT / "backend") + "\n")
    assert _resources.backend_binary(build=True) == out  # fresh: not rebuilt
    assert out.read_text() == "old"
    stamp.write_text("0" * 64 + "\n")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(MissingTool):  # stale: a rebuild is attempted
        _resources.backend_binary(build=True)


SELF_CONTAINED = ("src", "tests", "scripts", "benchmarks", "Makefile", "setup.py")


def _text_files() -> list[Path]:
    files: list[Path] = []
    for name in SELF_CONTAINED:
        path = ROOT / name
        if path.is_file():
            files.append(path)
            continue
        for p in path.rglob("*"):
            if (
                p.is_file()
                and p.suffix in (".py", ".sh", ".toml", ".cfg", "")
                and "data" not in p.relative_to(ROOT).parts[:2]
            ):
                files.append(p)
    return files


def test_nothing_reads_outside_the_repository() -> None:
    """No ../shared (or any sibling of the checkout) at build, test or run time."""
    pattern = re.compile(r"\.\./shared|parent\s*/\s*[\"']shared[\"']|/work/shared")
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in _text_files()
        if p != Path(__file__)
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def test_the_package_never_climbs_out_of_itself() -> None:
    """Only _resources knows the checkout's layout, and it climbs by name, not parents[N]."""
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in (ROOT / "src" / "gatebench").rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"parents\[\d\]", line)
    ]
    assert hits == []
