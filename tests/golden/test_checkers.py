"""Every golden through the gateway's own checker (integration tier: needs the gateways).

The goldens are rendered for a fixed workdir (``/srv/gatebench/<gateway>``); here each case is
rendered again for a temporary workdir, shown to equal the golden once the workdir is
substituted (so what is checked is the golden), written there and checked. KrakenD and Tyk
are checked where installed (PATH or GATEBENCH_KRAKEND_BIN / GATEBENCH_TYK_BIN) and skipped,
with the reason, elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _cases import CASES, ERRORS_FILE, GOLDEN, LARGE, case_api, golden_target, render_case
from booted import skip_unless_installed

from gatebench.local.provisioners import check_config, write_files
from gatebench.core.renderers import RenderTarget, all_renderers
from gatebench.core.renderers._leave_out import render_leaving_out

pytestmark = pytest.mark.integration

CHECKED = [r.name for r in all_renderers() if r.runs_here and r.check_command]
PAIRS = [(g, c) for g in CHECKED for c in sorted(CASES)]


@pytest.mark.parametrize(("gateway", "case"), PAIRS, ids=[f"{g}-{c}" for g, c in PAIRS])
def test_golden_passes_the_gateway_checker(gateway: str, case: str, tmp_path: Path) -> None:
    from gatebench.core.renderers import get_renderer

    skip_unless_installed(gateway)
    renderer = get_renderer(gateway)
    fixed = golden_target(gateway)
    workdir = tmp_path / gateway
    target = RenderTarget(
        workdir=str(workdir),
        listen_host=fixed.listen_host,
        listen_port=fixed.listen_port,
        backend_url=fixed.backend_url,
        admin_port=fixed.admin_port,
    )
    files = render_case(renderer, case, target)
    if ERRORS_FILE in files:
        if renderer.vendor_installed and (GOLDEN / gateway / case / ERRORS_FILE).is_file():
            pytest.skip(f"{gateway} refuses case {case!r} (its golden errors.txt says why)")
        pytest.fail(f"{gateway} refuses case {case!r}, which every native gateway must accept")
    for name, text in files.items():
        golden = (GOLDEN / gateway / case / name).read_text()
        assert text == golden.replace(fixed.workdir, str(workdir)), (
            f"{gateway}/{case}/{name} differs from its golden beyond the workdir; run `make goldens`"
        )
    write_files(files, workdir)
    output = check_config(renderer, workdir, target)
    assert output is not None


LARGE_PAIRS = [(g, c) for g in CHECKED for c in sorted(LARGE)]


@pytest.mark.parametrize(("gateway", "case"), LARGE_PAIRS, ids=[f"{g}-{c}" for g, c in LARGE_PAIRS])
def test_large_specs_pass_the_gateway_checker(gateway: str, case: str, tmp_path: Path) -> None:
    """Hundreds of operations, odd characters, three input formats: the checker accepts (the
    routes a gateway cannot express left out, as a run leaves them out)."""
    from gatebench.core.renderers import get_renderer

    skip_unless_installed(gateway)
    renderer = get_renderer(gateway)
    target = RenderTarget(workdir=str(tmp_path / gateway), listen_port=8080, admin_port=8081)
    rendered = render_leaving_out(renderer, case_api(case), target)
    if not renderer.vendor_installed:
        assert not rendered.left_out, [p.message for p in rendered.left_out[:20]]
    write_files(rendered.files, target.workdir)
    assert check_config(renderer, target.workdir, target) is not None
