"""``gatebench serve``'s command line: exporting the site for a bucket, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatebench.cli import main
from gatebench.web import SiteConfig, default_frontend_dir, export_site, is_loopback


def test_export_writes_the_site_with_a_gcp_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "site"
    code = main(
        [
            "serve",
            "--export",
            str(dest),
            "--api",
            "https://europe-central2-p.cloudfunctions.net/gb-read/",
            "--upload-endpoint",
            "https://europe-central2-p.cloudfunctions.net/gb-upload/",
        ]
    )
    assert code == 0
    config = json.loads((dest / "config.json").read_text())
    assert SiteConfig.from_dict(config) == SiteConfig(
        mode="gcp",
        api="https://europe-central2-p.cloudfunctions.net/gb-read/",
        upload_endpoint="https://europe-central2-p.cloudfunctions.net/gb-upload/",
        upload_method="signed-url",
    )
    assert (dest / "index.html").is_file()
    out = capsys.readouterr().out
    assert out.startswith("gatebench serve: wrote ")
    assert out.rstrip().endswith(f"files to {dest}/ (config.json: gcp)")


def test_export_allows_plain_http_endpoints_by_exact_origin(tmp_path: Path) -> None:
    frontend_policy = "connect-src 'self' https:;"
    https_site, http_site = tmp_path / "https", tmp_path / "http"
    export_site(default_frontend_dir(), https_site, SiteConfig("gcp", "https://a.example/r/"))
    assert frontend_policy in (https_site / "index.html").read_text()
    config = SiteConfig("gcp", "http://127.0.0.1:8081/", "http://127.0.0.1:8082/up/")
    export_site(default_frontend_dir(), http_site, config)
    html = (http_site / "index.html").read_text()
    origins = "http://127.0.0.1:8081 http://127.0.0.1:8082;"
    assert f"connect-src 'self' https: {origins}" in html
    # the API's report of a scale or change run is framed by the page
    assert f"frame-src 'self' https: {origins}" in html
    assert (
        html.replace(f"connect-src 'self' https: {origins}", frontend_policy).replace(
            f"frame-src 'self' https: {origins}", "frame-src 'self' https:;"
        )
        == (default_frontend_dir() / "index.html").read_text()
    )


def test_export_needs_both_endpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--export", str(tmp_path / "x"), "--api", "https://a.example/"]) == 2
    assert capsys.readouterr().err == (
        "gatebench serve --export: give --api URL and --upload-endpoint URL (or --site-config FILE)\n"
    )


def test_a_bad_endpoint_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "serve",
            "--export",
            str(tmp_path / "x"),
            "--api",
            "ftp://a.example/",
            "--upload-endpoint",
            "https://a.example/up/",
        ]
    )
    assert code == 1
    assert capsys.readouterr().err == (
        "the command line: error: /api: expected a relative path or an http(s) URL ending in "
        "'/', got 'ftp://a.example/'\n"
    )


def test_a_missing_frontend_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--frontend", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"gatebench serve: {tmp_path}/index.html not found; pass --frontend DIR\n"
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.com", False),
    ],
)
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--max-queued", "0", "expected a whole number of at least 1, got '0'"),
        ("--max-parses", "²", "expected a whole number of at least 1, got '²'"),
        ("--max-connections", "-3", "expected a whole number of at least 1, got '-3'"),
        ("--read-timeout", "0", "expected a number above 0, got '0'"),
        ("--read-timeout", "nan", "expected a number above 0, got 'nan'"),
    ],
)
def test_bounds_must_be_positive(
    flag: str, value: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", flag, value])
    assert exited.value.code == 2
    assert f"argument {flag}: {expected}" in capsys.readouterr().err


def test_the_bounds_are_shown_with_their_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "more uploads get 429 with Retry-After (default 10)" in text
    assert "the others wait for a slot (default 2)" in text
    assert "more get 503 (default 32)" in text
    assert "at 64 KiB/s (default 10)" in text
