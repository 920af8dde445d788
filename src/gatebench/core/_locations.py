"""Where gatebench finds what travels beside its Python code, and where builds of it live.

Pure path logic, no process: the renderers ask here for a JVM gateway's jar without building
it; ``gatebench.local._resources`` builds what is missing (on first use) into the same places. The
layout of both the wheel (``gatebench/_data/``) and the checkout is known only here and there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from gatebench.core.errors import RunError

SourceName = Literal["backend", "frontend", "gateways", "gatling", "loadgen"]
SOURCES: tuple[SourceName, ...] = ("backend", "frontend", "gateways", "gatling", "loadgen")
CACHE_ENV = "GATEBENCH_CACHE_DIR"
JVM_GATEWAYS = ("spring-cloud-gateway", "zuul")
PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The installed ``gatebench`` package folder."""
_MARKERS = {
    "backend": "go.mod",
    "frontend": "index.html",
    "gateways": "zuul/pom.xml",
    "gatling": "pom.xml",
    "loadgen": "go.mod",
}


def packaged_data_dir() -> Path:
    """``gatebench/_data`` of this installation (present in a wheel, absent in a checkout)."""
    return PACKAGE_DIR / "_data"


def checkout_root() -> Path | None:
    """The repository this package runs from (``src/gatebench`` inside it), or None."""
    src = PACKAGE_DIR.parent
    if src.name != "src":
        return None
    root = src.parent
    if (root / "pyproject.toml").is_file() and (root / "gatling" / "pom.xml").is_file():
        return root
    return None


def source_dir(name: SourceName) -> Path:
    """The folder of one non-Python source tree: packaged copy first, then the checkout."""
    for base in (packaged_data_dir(), checkout_root()):
        if base is not None and (base / name / _MARKERS[name]).is_file():
            return base / name
    raise RunError(
        f"gatebench's {name}/ sources are missing: neither {packaged_data_dir()} nor a "
        "checkout holds them; reinstall gatebench from its wheel"
    )


def build_dir() -> Path:
    """``$GATEBENCH_CACHE_DIR``, else the checkout's ``.cache``, else the user cache folder."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser().resolve()
    root = checkout_root()
    if root is not None and not packaged_data_dir().is_dir():
        return root / ".cache"
    return user_cache_dir()


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/gatebench``, else ``~/.cache/gatebench``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gatebench"


def jvm_gateway_jar_override(name: str) -> Path | None:
    """The user's own jar for a JVM gateway, ``GATEBENCH_<NAME>_JAR`` (never rebuilt)."""
    env_name = "GATEBENCH_" + "".join(c if c.isalnum() else "_" for c in name.upper()) + "_JAR"
    override = os.environ.get(env_name)
    return Path(override) if override else None


def jvm_gateway_jar_location(name: str) -> Path:
    """Where the runnable jar of a JVM gateway is, built or not: the override, else the build
    folder's (:func:`gatebench.local._resources.jvm_gateway_jar` builds it there)."""
    return jvm_gateway_jar_override(name) or build_dir() / "jvm-gateways" / f"{name}.jar"


__all__ = [
    "CACHE_ENV",
    "JVM_GATEWAYS",
    "PACKAGE_DIR",
    "SOURCES",
    "SourceName",
    "build_dir",
    "checkout_root",
    "jvm_gateway_jar_location",
    "jvm_gateway_jar_override",
    "packaged_data_dir",
    "source_dir",
    "user_cache_dir",
]
