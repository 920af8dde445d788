"""The renderer contract, checked for every registry entry (see ``gatebench.core.renderers``).

Each failure says what to add, so a new gateway is one module, one registry line, one golden
folder with its README, and one section in docs/gateways.md.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path, PurePosixPath

import pytest
from _cases import CASES, ERRORS_FILE, GOLDEN, ROOT, golden_target, render_case

from gatebench.core import renderers
from gatebench.core.errors import RenderError
from gatebench.core.renderers import (
    RENDERERS,
    Renderer,
    UnknownGateway,
    all_renderers,
    gateway_aliases,
    gateway_names,
    get_renderer,
    local_gateway_names,
)

NAMES = [cls.name for cls in RENDERERS]
DOCS = ROOT / "docs" / "gateways.md"


def test_registry_is_sorted_and_unique() -> None:
    assert NAMES == sorted(NAMES), "keep RENDERERS in _registry.py sorted by name"
    assert len(set(NAMES)) == len(NAMES), "a gateway name is registered twice"
    aliases = [a for cls in RENDERERS for a in cls.aliases]
    assert len(set(aliases)) == len(aliases), "an alias is used by two renderers"
    clash = sorted(set(aliases) & set(NAMES))
    assert not clash, f"aliases {clash} are also gateway names"


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownGateway) as info:
        get_renderer("kongg")
    assert str(info.value) == f"no renderer for 'kongg'; available: {', '.join(NAMES)}"
    assert isinstance(info.value, RenderError)


def test_local_defaults_are_registered_and_run_here() -> None:
    for name in local_gateway_names():
        assert get_renderer(name).runs_here, f"{name} is a local default but does not run here"
    assert gateway_names() == tuple(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_metadata(name: str) -> None:
    renderer = get_renderer(name)
    cls = type(renderer)
    assert re.fullmatch(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*", name), f"bad gateway name {name!r}"
    module = name.replace("-", "_")
    assert cls.__module__ == f"gatebench.core.renderers.{module}", (
        f"renderer {name!r} must live in src/gatebench/core/renderers/{module}.py"
    )
    assert importlib.import_module(cls.__module__).__doc__, (
        f"src/gatebench/core/renderers/{module}.py needs a module docstring with its mapping rules"
    )
    assert renderer.description and "\n" not in renderer.description
    assert renderer.gateway_version, f"renderer {name!r}: set gateway_version"
    assert renderer.output_files, f"renderer {name!r}: declare output_files"
    for file in renderer.output_files:
        path = PurePosixPath(file)
        assert not path.is_absolute() and ".." not in path.parts, f"{file!r} must be relative"
    if renderer.cloud_image is not None:
        assert re.fullmatch(r"[a-z0-9./-]+:[A-Za-z0-9._-]+", renderer.cloud_image), (
            f"renderer {name!r}: cloud_image must be an image with a pinned tag"
        )
        assert not renderer.cloud_image.endswith(":latest")
    if renderer.runs_here:
        assert renderer.run_command or type(renderer).run_argv is not Renderer.run_argv, (
            f"renderer {name!r} runs here: declare run_command (or override run_argv)"
        )
        assert renderer.readiness_timeout > 0
    else:
        assert renderer.run_argv("/tmp") is None
    for alias in renderer.aliases:
        assert get_renderer(alias) is renderer
        assert gateway_aliases()[alias] == name
    assert get_renderer(name.upper()) is renderer


@pytest.mark.parametrize("name", NAMES)
def test_golden_folder_exists(name: str) -> None:
    folder = GOLDEN / name
    assert folder.is_dir(), (
        f"renderer {name!r} has no golden folder; create tests/golden/{name}/ and run `make goldens`"
    )
    readme = folder / "README.md"
    assert readme.is_file() and readme.read_text().strip(), (
        f"renderer {name!r} has no tests/golden/{name}/README.md; write its mapping rules in prose"
    )
    for case in sorted(CASES):
        assert (folder / case).is_dir(), (
            f"renderer {name!r} has no golden case {case!r}; run `make goldens`"
        )


@pytest.mark.parametrize("name", NAMES)
def test_documented(name: str) -> None:
    text = DOCS.read_text() if DOCS.is_file() else ""
    assert re.search(rf"^## {re.escape(name)}\b", text, re.MULTILINE), (
        f"renderer {name!r} has no section in docs/gateways.md; add '## {name}' (version, how "
        "it runs here and on the cloud path, limitations)"
    )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_render_returns_declared_files(name: str, case: str) -> None:
    renderer = get_renderer(name)
    files = render_case(renderer, case)
    if ERRORS_FILE in files:
        assert files[ERRORS_FILE].strip(), "an UnsupportedFeature must carry its problems"
        return
    assert tuple(files) == renderer.output_files, (
        f"renderer {name!r} must return exactly output_files {renderer.output_files}, in order"
    )
    for file, text in files.items():
        assert "\r" not in text and text.endswith("\n") and not text.endswith("\n\n"), (
            f"{name}/{case}/{file}: use as_files() (LF, one final newline)"
        )


def test_every_gateway_module_is_registered_once() -> None:
    """One module per gateway, one Renderer subclass in it, one registry line for it: a module
    that is not in RENDERERS (or a registry line without its module) fails here."""
    package = Path(renderers.__file__).parent
    modules = sorted(p.stem for p in package.glob("*.py") if not p.name.startswith("_"))
    registered = sorted(cls.__module__.rsplit(".", 1)[1] for cls in RENDERERS)
    assert modules == registered, (
        "every src/gatebench/core/renderers/<gateway>.py needs one line in RENDERERS "
        f"(_registry.py): modules {modules}, registered {registered}"
    )
    for name in modules:
        module = importlib.import_module(f"gatebench.core.renderers.{name}")
        defined = [
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj)
            and issubclass(obj, Renderer)
            and obj.__module__ == module.__name__
            and not inspect.isabstract(obj)
        ]
        assert len(defined) == 1 and defined[0] in RENDERERS, (
            f"renderers/{name}.py must define exactly one registered Renderer; found {defined}"
        )
    assert [type(r) for r in all_renderers()] == list(RENDERERS)
