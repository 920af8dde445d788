"""The layers, seen from a fresh interpreter: what importing a package really loads.

import-linter (``make check``) proves no module *names* a forbidden one; these tests prove
the effect a deployment depends on: a Cloud Function that imports ``gatebench.cloud`` loads
neither the web server, the runner, a load engine nor a provisioner; the dashboard's functions,
importing ``gatebench.web``, load the Flask application but not the local server (waitress),
its run queue or process management; and the renderers load no process management.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _loaded_after(module: str, prefixes: tuple[str, ...] = ("gatebench",)) -> set[str]:
    code = (
        "import json, sys\n"
        f"import {module}\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout))


def _under(loaded: set[str], package: str) -> list[str]:
    return sorted(m for m in loaded if m == package or m.startswith(package + "."))


@pytest.mark.parametrize(
    "forbidden",
    [
        "gatebench.web",
        "gatebench.local.runner",
        "gatebench.run",
        "gatebench.local.engines",
        "gatebench.local.provisioners",
    ],
)
def test_importing_the_cloud_package_loads_no_edge(forbidden: str) -> None:
    loaded = _loaded_after("gatebench.cloud")
    assert "gatebench.cloud" in loaded
    assert _under(loaded, forbidden) == []


def test_importing_the_renderers_loads_no_process_management() -> None:
    loaded = _loaded_after("gatebench.core.renderers")
    assert (
        "gatebench.core.renderers.nginx" in loaded or "gatebench.core.renderers._registry" in loaded
    )
    assert [m for m in ("gatebench.local.procs", "gatebench.local.runner") if m in loaded] == []
    assert _under(loaded, "gatebench.local.provisioners") == []
    assert _under(loaded, "gatebench.local.engines") == []


def test_the_dashboard_functions_load_no_local_server() -> None:
    loaded = _loaded_after("gatebench.web", ("gatebench", "waitress", "flask"))
    assert "flask" in loaded and "gatebench.web._app" in loaded
    assert _under(loaded, "waitress") == []
    assert [m for m in ("gatebench.local.procs", "gatebench.local.runner") if m in loaded] == []
    assert [m for m in ("gatebench.web._local", "gatebench.local.queue") if m in loaded] == []
    # the local server's names are still the package's, loaded when first asked for
    code = "import sys, gatebench.web as w; w.build_server; print('waitress' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
