"""`gatebench validate`, `parse` and `plan`: output lines and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatebench.cli import main
from paths import EXAMPLES

AUCTION = str(EXAMPLES / "auction" / "openapi.yaml")


def test_validate_clean_example(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUCTION_TOKEN", "t")
    assert main(["validate", AUCTION]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "0 errors, 0 warnings; 3 operations; plan ok\n"


def test_validate_notes_a_credential_variable_this_shell_lacks(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan is sound (another machine may set the variable), but a run here would stop
    at once: validate said 'plan ok' and nothing more."""
    monkeypatch.delenv("AUCTION_TOKEN", raising=False)
    assert main(["validate", AUCTION]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "openapi.yaml:114:3: note: /x-gatebench/auth: environment variable AUCTION_TOKEN is not "
        "set; the plan's auth reads the credential from it when requests are sent (export "
        "AUCTION_TOKEN=...) (in this shell: gatebench run here would stop at once)"
    ]
    assert err == "0 errors, 0 warnings, 1 note; 3 operations; plan ok\n"


def test_validate_prints_one_line_per_problem_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text(
        "openapi: 3.0.3\n"
        "info: {title: t, version: 1.0}\n"
        "paths:\n"
        "  /bid/{id}:\n"
        "    post:\n"
        "      parameters:\n"
        "        - {name: auctionId, in: path, required: true, schema: {type: integer}}\n"
        "      responses: {'200': {description: ok}}\n"
        "    FETCH: {}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(spec)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "api.yaml:3:1: error: /paths: every operation is left out (2 problems above); there is nothing to benchmark",
        "api.yaml:2:18: warning: /info/version: expected a string, got 1.0",
        "api.yaml:7:11: warning: /paths/~1bid~1{id}/post/parameters/0: path parameter 'auctionId' is not in the path template '/bid/{id}' (its variables: id); the operation is left out",
        "api.yaml:9:5: warning: /paths/~1bid~1{id}/FETCH: unknown method 'FETCH'; expected one of get, put, post, delete, options, head, patch, trace; the operation is left out",
    ]
    assert err == "1 error, 3 warnings\n"


def test_validate_counts_notes_apart_from_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text(
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n"
        "webhooks:\n  ping:\n    post: {responses: {'200': {description: ok}}}\n"
        "paths:\n  /a:\n    get: {responses: {'200': {description: ok}}}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(spec)]) == 0
    out, err = capsys.readouterr()
    assert ": note: /webhooks: 1 webhook skipped" in out
    assert err == "0 errors, 0 warnings, 1 note; 1 operation\n"


def test_validate_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "api.json"
    spec.write_text(
        '{"openapi": "3.0.3", "paths": {"/a": {"$ref": "https://evil.example/x"}}}',
        encoding="utf-8",
    )
    assert main(["validate", str(spec), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == [
        {
            "pointer": "/paths",
            "message": "every operation is left out (1 problem above); there is nothing to benchmark",
            "severity": "error",
            "line": 1,
            "column": 22,
            "source": "api.json",
        }
    ]
    assert data["warnings"][-1] == {
        "pointer": "/paths/~1a/$ref",
        "message": "remote reference 'https://evil.example/x' is not fetched; put the file in the bundle (a folder or zip) and refer to it by a relative path; the operations of this path are left out",
        "severity": "warning",
        "line": 1,
        "column": 39,
        "source": "api.json",
    }


def test_validate_reports_plan_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        Path(AUCTION)
        .read_text(encoding="utf-8")
        .replace("[nginx, haproxy, caddy, envoy, apache, traefik]", "[nginx, kongg]")
    )
    spec = tmp_path / "api.yaml"
    spec.write_text(text, encoding="utf-8")
    assert main(["validate", str(spec), "-q"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("api.yaml:109:21:")
    assert line.endswith(
        ": error: /x-gatebench/gateways/1: unknown gateway 'kongg'; did you mean 'kong'? available: apache, caddy, envoy, google-api-gateway, haproxy, kong, krakend, nginx, spring-cloud-gateway, traefik, tyk, varnish, zuul"
    )


def test_parse_json_is_the_ir(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", AUCTION, "--json"]) == 0
    ir = json.loads(capsys.readouterr().out)
    assert [
        (o["operation_id"], o["method"], o["route_path"], o["security"]) for o in ir["operations"]
    ] == [
        ("createAuction", "POST", "/auctions", "bearer"),
        ("getAuction", "GET", "/auctions/{auctionId}", "bearer"),
        ("bid", "POST", "/bid/{auctionId}", "bearer"),
    ]
    assert ir["operations"][2]["path_params"]["auctionId"]["schema"] == {
        "type": "integer",
        "minimum": 1,
    }


def test_parse_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", AUCTION]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Auction service 1.0 (openapi-3.0.3): 3 operations",
        "OPERATION      METHOD  PATH                   AUTH",
        "createAuction  POST    /auctions              bearer",
        "getAuction     GET     /auctions/{auctionId}  bearer",
        "bid            POST    /bid/{auctionId}       bearer",
    ]


def test_parse_table_of_a_description_without_a_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "api.raml"
    spec.write_text(
        "#%RAML 1.0\ntitle: Notes\nx-gatebench:\n  workloads:\n"
        "    - {name: w, operation: GET /notes, injection: {at_once: 1}}\n/notes:\n  get:\n"
    )
    assert main(["parse", str(spec)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "Notes (raml-1.0): 1 operation"
    assert main(["plan", str(spec)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "Benchmark plan for 'Notes' (raml-1.0, 1 operation)"
    )


def test_parse_table_escapes_what_a_terminal_would_obey(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An operationId could colour the terminal and print a line of its own."""
    ok = {"200": {"description": "ok"}}
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"operationId": "x\x1b[31mRED\nFAKE: error", "responses": ok}}},
    }
    spec = tmp_path / "api.json"
    spec.write_text(json.dumps(doc))
    assert main(["parse", str(spec)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "t 1 (openapi-3.0.3): 1 operation",
        "OPERATION                  METHOD  PATH  AUTH",
        "x\\x1b[31mRED\\nFAKE: error  GET     /a    none",
    ]


def test_plan_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", AUCTION]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Benchmark plan for 'Auction service' (openapi-3.0.3, 3 operations)"
    assert (
        "    create-auction  POST /auctions             50 users at once             multipart image 8.6MB"
        in out
    )
    assert (
        "    bid             POST /bid/{auctionId}      ramp to 50 users over 250ms  json body; auctionId=1; amount counter from 1"
        in out
    )


def test_plan_errors_exit_1_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text(
        Path(AUCTION)
        .read_text(encoding="utf-8")
        .replace("operation: getAuction", "operation: getAuctions"),
        encoding="utf-8",
    )
    assert main(["plan", str(spec)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].endswith(
        "error: /x-gatebench/workloads/2/operation: no operation 'getAuctions' in the description; did you mean 'getAuction', 'createAuction'?"
    )


def test_max_bytes_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", AUCTION, "--max-bytes", "1kB"]) == 1
    assert "the limit is 1,000 (raise it with --max-bytes)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["validate", AUCTION, "--max-bytes", "lots"])
    assert info.value.code == 2


def test_validate_exits_1_only_when_a_workload_needs_what_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "openapi: 3.0.3\n"
        "info: {title: t, version: '1'}\n"
        "paths:\n"
        "  /ok:\n"
        "    get: {operationId: ok, responses: {'200': {description: ok}}}\n"
        "  /gone:\n"
        "    $ref: '#/components/pathItems/Gone'\n"
        "x-gatebench:\n"
        "  gateways: [nginx]\n"
        "  workloads:\n"
        "    - {name: w, operation: WORKLOAD, injection: {concurrent: 2, duration: 2s}}\n"
    )
    spec = tmp_path / "api.yaml"
    spec.write_text(text.replace("WORKLOAD", "ok"), encoding="utf-8")
    assert main(["validate", str(spec)]) == 0
    assert capsys.readouterr().err == "0 errors, 1 warning; 1 operation; plan ok\n"
    spec.write_text(text.replace("WORKLOAD", "GET /gone"), encoding="utf-8")
    assert main(["validate", str(spec), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "api.yaml:11:17: error: /x-gatebench/workloads/0/operation: operation 'GET /gone' is "
        "left out of the description: /paths/~1gone/$ref: cannot resolve "
        "'#/components/pathItems/Gone': no 'components' in /; fix the description to benchmark it"
    ]


def test_a_capacity_search_refuses_tls_at_its_line_before_a_run_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gatebench capacity`` of a plan with ``tls:`` stored a failed run and said where only
    by JSON pointer; now it stops before anything starts, at the key's line, as a plan error."""
    monkeypatch.setenv("AUCTION_TOKEN", "t")
    text = Path(AUCTION).read_text().replace("x-gatebench:\n", "x-gatebench:\n  tls: true\n", 1)
    spec = tmp_path / "openapi.yaml"
    spec.write_text(text)
    line = text.splitlines().index("  tls: true") + 1
    results = tmp_path / "results"
    assert main(["capacity", str(spec), "--quick", "--results", str(results)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"openapi.yaml:{line}:3: error: /x-gatebench/tls: the capacity search's ")
    assert not results.exists()


def test_a_live_run_names_a_wrong_gateway_at_the_option_and_notes_the_plans_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``change-under-load --gateways nosuch`` blamed the spec ('<spec>: error: /: no renderer
    for ...', cloud-only gateways listed); a plan with a misspelt key ran without a word."""
    monkeypatch.setenv("AUCTION_TOKEN", "t")
    text = Path(AUCTION).read_text().replace("x-gatebench:\n", "x-gatebench:\n  repetiton: 2\n", 1)
    spec = tmp_path / "openapi.yaml"
    spec.write_text(text)
    for kind in ("change-under-load", "scale"):
        code = main(
            [kind, str(spec), "--gateways", "nginx,nosuch", "--results", str(tmp_path / "r")]
        )
        assert code == 2
        note, refusal = capsys.readouterr().err.splitlines()
        assert note.startswith("gatebench: note: the benchmark section has 1 problem (")
        assert "unknown key 'repetiton'" in note and note.endswith("and goes on")
        assert refusal.startswith("gatebench: --gateways: 'nosuch' is not a gateway; here: ")
        assert "google-api-gateway" not in refusal
    assert not (tmp_path / "r").exists()
