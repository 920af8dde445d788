"""Where gatebench finds what travels beside its Python code, and what it builds from it.

Five source trees are not Python: ``frontend/`` (the web page), ``gatling/`` (the Maven project
of the generic simulation), ``backend/`` (the Go server), ``loadgen/`` (the Go open-model load
generator of the capacity search) and ``gateways/<name>/`` (the Maven projects of the JVM
gateways). They live at the top of the repository; the wheel carries a
copy under ``gatebench/_data/`` (``setup.py`` copies them at build time). :func:`source_dir`
looks in the installed package first, then in the checkout this package runs from (an
editable install): this module is the only place that knows either layout.

Four things are built from those sources: the backend and load generator binaries (``go build``), the Gatling
classpath and compiled simulation (``mvn``) and the JVM gateway jars (``mvn package``).
They live in the build folder (:func:`build_dir`): ``$GATEBENCH_CACHE_DIR`` when set, else
the checkout's ``.cache/`` (where ``scripts/setup.d`` builds them), else
``$XDG_CACHE_HOME/gatebench`` (``~/.cache/gatebench``). Whatever is missing there is built on
first use, announced through the ``gatebench.build`` logger (the CLI prints it); a missing
``go``, ``java`` or ``mvn`` is a :class:`~gatebench.core.errors.MissingTool` naming the tool and
how to install it. Outside a checkout a build is redone when the packaged sources change
(a hash of them is kept beside it); in a checkout ``make setup-all`` keeps them fresh.

Layout of a build folder::

    bin/gatebench-backend              the Go backend
    bin/gatebench-loadgen              the Go load generator (capacity search)
    gatling/classpath.txt              Gatling's test classpath (one line)
    gatling/project/target/test-classes  the compiled simulation (outside a checkout)
    jvm-gateways/<name>.jar            Spring Cloud Gateway, Zuul 1
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from gatebench.core._locations import (
    CACHE_ENV,
    JVM_GATEWAYS,
    PACKAGE_DIR,
    SOURCES,
    SourceName,
    build_dir,
    checkout_root,
    jvm_gateway_jar_location,
    jvm_gateway_jar_override,
    packaged_data_dir,
    source_dir,
    user_cache_dir,
)
from gatebench.core.errors import MissingTool, RunError

INSTALL_HINTS = {
    "go": "install Go 1.22 or newer (Debian: apt-get install golang-go; or https://go.dev/dl/)",
    "java": "install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)",
    "mvn": "install Maven (Debian: apt-get install maven)",
}
"""The command that installs each build tool, quoted in every MissingTool."""

log = logging.getLogger("gatebench.build")


def require_tool(tool: str, purpose: str) -> str:
    """The absolute path of ``tool`` on PATH, or MissingTool saying what needs it."""
    found = shutil.which(tool)
    if found is None:
        raise MissingTool(tool, f"'{tool}' is missing: {purpose}; {INSTALL_HINTS[tool]}")
    return found


def tree_digest(root: Path) -> str:
    """sha256 over every file's relative path and bytes (build outputs excluded)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _checkout_cache() -> Path | None:
    """The checkout's ``.cache`` when it is the build folder (scripts/setup.d builds there)."""
    root = checkout_root()
    return root / ".cache" if root is not None and build_dir() == root / ".cache" else None


def _fresh(artifacts: list[Path], stamp: Path, sources: Path) -> bool:
    if not all(p.exists() for p in artifacts):
        return False
    if _checkout_cache() is not None:
        return True  # `make setup-all` keeps the checkout's builds fresh, with its own stamps
    return stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == tree_digest(sources)


def _run_build(argv: list[str], cwd: Path, log_file: Path, what: str) -> None:
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("w", encoding="utf-8") as out:
        done = subprocess.run(
            argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False, env=_build_env()
        )
    if done.returncode != 0:
        tail = log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        raise RunError(
            f"building {what} failed ({' '.join(argv[:2])} exited {done.returncode}; "
            f"log: {log_file}): " + " | ".join(tail)
        )


def _build_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CGO_ENABLED", "0")
    return env


def _copy_sources(src: Path, dest: Path) -> None:
    """A writable copy of a packaged source tree (site-packages may be read-only)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("target", "__pycache__"))


def backend_binary(*, build: bool = True) -> Path:
    """The Go backend: ``$GATEBENCH_BACKEND_BIN``, else the build folder's, built if needed."""
    return _go_binary(
        "backend", "gatebench-backend", "GATEBENCH_BACKEND_BIN", "the Go backend", build
    )


def loadgen_binary(*, build: bool = True) -> Path:
    """The Go load generator (the capacity search's open-model engine): ``$GATEBENCH_LOADGEN_BIN``,
    else the build folder's, built if needed."""
    return _go_binary(
        "loadgen", "gatebench-loadgen", "GATEBENCH_LOADGEN_BIN", "the Go load generator", build
    )


def _go_binary(source: SourceName, name: str, env: str, what: str, build: bool) -> Path:
    override = os.environ.get(env)
    if override:
        return Path(override)
    out = build_dir() / "bin" / name
    sources = source_dir(source)
    stamp = out.with_name(f".{name}.digest")
    if _fresh([out], stamp, sources) or not build:
        return out
    go = require_tool("go", f"{what} ({source}/) is built with it on first use")
    started = time.monotonic()
    log.info("building %s into %s (go build, first use)", what, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _run_build(
        [go, "build", "-trimpath", "-mod=mod", "-o", str(out), "."],
        sources,
        out.parent / f"build-{source}.log",
        what,
    )
    stamp.write_text(tree_digest(sources) + "\n", encoding="utf-8")
    log.info("built %s in %.0f s", what, time.monotonic() - started)
    return out


def gatling_files(*, build: bool = True) -> tuple[Path, Path]:
    """(compiled simulation classes, classpath file), built on first use.

    ``$GATEBENCH_GATLING_CLASSES`` and ``$GATEBENCH_GATLING_CP`` together name a build made
    elsewhere (the runner image's, cloudbuild/runner.Dockerfile): they are used as they are,
    before any source is looked for, and never rebuilt; a missing file there is a RunError
    naming the variable. One of them alone overrides that file of the build made here."""
    overrides = _gatling_overrides()
    if overrides is not None:
        return overrides
    cache = build_dir() / "gatling"
    checkout_cache = _checkout_cache()
    # A checkout compiles in place (gatling/target) into its own Maven repository, as
    # scripts/setup.d/40-gatling.sh does; elsewhere a writable copy of the project is built.
    project = source_dir("gatling") if checkout_cache else cache / "project"
    classes = Path(os.environ.get(GATLING_CLASSES_ENV, project / "target" / "test-classes"))
    cp_file = Path(os.environ.get(GATLING_CP_ENV, cache / "classpath.txt"))
    marker = classes / "gatebench" / "GenericSimulation.class"
    sources = source_dir("gatling")
    if _fresh([marker, cp_file], cache / "stamp.digest", sources) or not build:
        return classes, cp_file
    require_tool("java", "Gatling runs on it")
    mvn = require_tool("mvn", "Gatling's classpath is resolved with it on first use")
    started = time.monotonic()
    log.info(
        "setting up Gatling in %s (mvn: resolves ~65 MB into the Maven repository the first "
        "time, then compiles the simulation)",
        cache,
    )
    if checkout_cache is None:
        _copy_sources(sources, project)
    cache.mkdir(parents=True, exist_ok=True)
    repo = [f"-Dmaven.repo.local={checkout_cache / 'm2'}"] if checkout_cache else []
    _run_build(
        [
            mvn,
            "-q",
            "-B",
            *repo,
            "dependency:build-classpath",
            "-Dmdep.includeScope=test",
            f"-Dmdep.outputFile={cp_file}",
            "test-compile",
        ],
        project,
        cache / "build.log",
        "the Gatling simulation",
    )
    (cache / "stamp.digest").write_text(tree_digest(sources) + "\n", encoding="utf-8")
    log.info("Gatling set up in %.0f s", time.monotonic() - started)
    return classes, cp_file


GATLING_CLASSES_ENV = "GATEBENCH_GATLING_CLASSES"
GATLING_CP_ENV = "GATEBENCH_GATLING_CP"


def _gatling_overrides() -> tuple[Path, Path] | None:
    """Both variables set: their (classes, classpath file), checked; else None."""
    classes_text = os.environ.get(GATLING_CLASSES_ENV)
    cp_text = os.environ.get(GATLING_CP_ENV)
    if not (classes_text and cp_text):
        return None
    classes, cp_file = Path(classes_text), Path(cp_text)
    marker = classes / "gatebench" / "GenericSimulation.class"
    if not marker.is_file():
        raise RunError(
            f"${GATLING_CLASSES_ENV}={classes}: no compiled simulation there "
            f"(expected {marker}); unset it to build Gatling here"
        )
    if not cp_file.is_file():
        raise RunError(
            f"${GATLING_CP_ENV}={cp_file}: no such classpath file; unset it to build Gatling here"
        )
    return classes, cp_file


def jvm_gateway_jar(name: str, *, build: bool = True) -> Path:
    """The runnable jar of a JVM gateway (``GATEBENCH_<NAME>_JAR`` overrides), built on
    first use with ``mvn package``."""
    override = jvm_gateway_jar_override(name)
    if override is not None:
        return override
    jar = jvm_gateway_jar_location(name)
    out_dir = jar.parent
    sources = source_dir("gateways") / name
    if _fresh([jar], out_dir / f".{name}.digest", sources) or not build:
        return jar
    require_tool("java", f"{name} runs on it and is built with it")
    mvn = require_tool("mvn", f"{name} is built with it on first use (gateways/{name})")
    started = time.monotonic()
    log.info(
        "building %s into %s (mvn package; the first build downloads its dependencies into "
        "the Maven repository)",
        name,
        jar,
    )
    project = out_dir / "src" / name
    _copy_sources(sources, project)
    target = out_dir / "build" / name
    _run_build(
        [mvn, "-q", "-B", "-DskipTests", f"-Dgatebench.buildDirectory={target}", "package"],
        project,
        out_dir / "build" / f"{name}.log",
        name,
    )
    shutil.copyfile(target / f"{name}.jar", jar.with_suffix(".jar.tmp"))
    jar.with_suffix(".jar.tmp").replace(jar)
    (out_dir / f".{name}.digest").write_text(tree_digest(sources) + "\n", encoding="utf-8")
    log.info("built %s in %.0f s", name, time.monotonic() - started)
    return jar


__all__ = [
    "CACHE_ENV",
    "INSTALL_HINTS",
    "JVM_GATEWAYS",
    "PACKAGE_DIR",
    "SOURCES",
    "backend_binary",
    "build_dir",
    "checkout_root",
    "gatling_files",
    "jvm_gateway_jar",
    "loadgen_binary",
    "packaged_data_dir",
    "require_tool",
    "source_dir",
    "tree_digest",
    "user_cache_dir",
]
