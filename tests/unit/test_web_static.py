"""Static files never leave the site's folder (resolve_static); the site's config.json is
checked field by field; the exported site holds the frontend and its config, nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gatebench.web import SiteConfig, SiteConfigError, export_site, resolve_static
from paths import ROOT

FRONTEND = ROOT / "frontend"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "js").mkdir(parents=True)
    (root / "index.html").write_text("<!DOCTYPE html>", encoding="utf-8")
    (root / "js" / "app.js").write_text("// app", encoding="utf-8")
    (root / "notes.sh").write_text("echo", encoding="utf-8")
    (root / ".env").write_text("SECRET=1", encoding="utf-8")
    (tmp_path / "secret.json").write_text('{"secret": 1}', encoding="utf-8")
    os.symlink(tmp_path / "secret.json", root / "out.json")
    os.symlink(root / "js" / "app.js", root / "alias.js")
    os.symlink(tmp_path, root / "up")
    return root


def test_site_files_resolve(site: Path) -> None:
    assert resolve_static(site, "/") == (site / "index.html").resolve()
    assert resolve_static(site, "/index.html?x=1#top") == (site / "index.html").resolve()
    assert resolve_static(site, "/js/app.js") == (site / "js" / "app.js").resolve()
    assert resolve_static(site, "/js/%61pp.js") == (site / "js" / "app.js").resolve()


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.json",
        "/js/../../secret.json",
        "/%2e%2e/secret.json",
        "/%2E%2E/secret.json",
        "/%2e%2e%2fsecret.json",
        "/js/%2e%2e/%2e%2e/secret.json",
        "/%252e%252e/secret.json",
        "/..%5csecret.json",
        "/js\\..\\..\\secret.json",
        "//etc/passwd",
        "/etc/passwd",
        "/" + "%2f" + "etc/passwd",
        "/index.html%00.js",
        "/./index.html",
        "/js/./app.js",
        "/js/",
        "/js",
        "/C:/Windows/win.ini",
        "/%ff%fe.html",
        "/out.json",
        "/alias.js",
        "/up/secret.json",
        "/up/site/index.html",
        "/.env",
        "/notes.sh",
        "index.html",
        "http://evil.example/index.html",
    ],
)
def test_nothing_outside_the_site_and_no_symlink_resolves(site: Path, path: str) -> None:
    assert resolve_static(site, path) is None


def test_site_config_round_trip_and_problems(tmp_path: Path) -> None:
    gcp = SiteConfig(
        mode="gcp",
        api="https://europe-central2-p.cloudfunctions.net/gb-read/",
        upload_endpoint="https://europe-central2-p.cloudfunctions.net/gb-upload/",
        upload_method="signed-url",
    )
    assert SiteConfig.from_dict(gcp.to_dict()) == gcp
    assert gcp.origins() == ["https://europe-central2-p.cloudfunctions.net"]
    assert SiteConfig().origins() == []
    with pytest.raises(SiteConfigError) as bad:
        SiteConfig.from_dict(
            {
                "mode": "cloud",
                "api": "javascript:alert(1)/",
                "upload": {"endpoint": "//evil.example/", "method": "ftp", "extra": 1},
                "poll_ms": 10,
                "colour": "red",
            },
            source="config.json",
        )
    assert [p.format() for p in bad.value.problems] == [
        "config.json: error: /colour: unknown key; known: api, format, max_bytes, mode, poll_ms, upload",
        "config.json: error: /mode: expected 'local' or 'gcp', got 'cloud'",
        "config.json: error: /api: expected a relative path or an http(s) URL ending in '/', got 'javascript:alert(1)/'",
        "config.json: error: /upload/extra: unknown key; known: endpoint, method",
        "config.json: error: /upload/endpoint: expected a relative path or an http(s) URL ending in '/', got '//evil.example/'",
        "config.json: error: /upload/method: expected 'direct' or 'signed-url', got 'ftp'",
        "config.json: error: /poll_ms: expected milliseconds from 200 to 60000, got 10",
    ]
    path = tmp_path / "config.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(SiteConfigError, match="not JSON"):
        SiteConfig.read(path)


def test_the_shipped_config_is_the_local_default() -> None:
    assert SiteConfig.read(FRONTEND / "config.json") == SiteConfig()


def test_export_writes_the_frontend_and_its_config(tmp_path: Path) -> None:
    dest = tmp_path / "dist"
    config = SiteConfig(
        mode="gcp",
        api="https://r.example/read/",
        upload_endpoint="https://r.example/upload/",
        upload_method="signed-url",
    )
    written = export_site(FRONTEND, dest, config)
    names = sorted(p.relative_to(dest).as_posix() for p in written)
    shipped = sorted(
        p.relative_to(FRONTEND).as_posix()
        for p in FRONTEND.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )
    assert names == shipped
    assert "index.html" in names
    assert "js/app.js" in names
    assert json.loads((dest / "config.json").read_text()) == config.to_dict()
    for name in names:
        if name != "config.json":
            assert (dest / name).read_bytes() == (FRONTEND / name).read_bytes()


def test_the_frontend_fetches_nothing_from_elsewhere() -> None:
    """Offline by construction: no http(s) URL in any page, script or style sheet, and
    every module import is relative."""
    for path in FRONTEND.rglob("*"):
        if path.suffix not in (".html", ".js", ".css"):
            continue
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if "http://" in line or "https://" in line:
                # The only absolute URL allowed is the SVG namespace (an identifier, never fetched).
                assert "http://www.w3.org/2000/svg" in line, f"{path}: {line.strip()}"
            if line.startswith("import "):
                assert 'from "./' in line, f"{path}: {line.strip()}"
