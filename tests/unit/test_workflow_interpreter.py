"""The Workflows interpreter (tests/cloud/workflows_interpreter.py) on its own: each construct
benchmark.yaml relies on, the documented operator precedence, error maps, retry policies and
backoff, real HTTP calls against a local server, and strictness about what it does not know."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from cloud.workflows_interpreter import Clock, Interpreter, UnsupportedConstruct


def run(source: str, argument: Any = None, **kwargs: Any) -> Any:
    execution = Interpreter(source, **kwargs).run(argument)
    assert execution.state == "SUCCEEDED", execution.error
    return execution.result


def fail(source: str, argument: Any = None, **kwargs: Any) -> Any:
    execution = Interpreter(source, **kwargs).run(argument)
    assert execution.state == "FAILED", execution.result
    return execution.error


def expr(text: str, **variables: Any) -> Any:
    assigns = "".join(f"\n          - {k}: {json.dumps(v)}" for k, v in variables.items())
    head = f"- init:\n    assign:{assigns or chr(10) + '          - unused: 0'}\n"
    return run(head + f"- out:\n    return: {json.dumps(text)}\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${1 + 2 * 3}", 7),
        ("${(1 + 2) * 3}", 9),
        ("${7 // 2}", 3),
        ("${7 / 2}", 3.5),
        ("${7 % 3}", 1),
        ("${-2 + 5}", 3),
        ('${"a" + "b" + string(1)}', "ab1"),
        ("${1 < 2 and 2 < 3}", True),
        ("${1 > 2 or not false}", True),
        ("${1 > 2 OR NOT False}", True),
        ("${2 in [1, 2]}", True),
        ('${"k" in {"k": 1}}', True),
        ("${1 == 1.0}", True),
        ('${1 == "1"}', False),
        ("${null == null}", True),
        ('${len("abc") + len([1]) + len({"a": 1})}', 5),
        ('${default(null, "x")}', "x"),
        ('${map.get({"a": {"b": 2}}, ["a", "b"])}', 2),
        ('${map.get({"a": 1}, "zz")}', None),
        ('${map.merge({"a": 1, "b": 1}, {"b": 2})}', {"a": 1, "b": 2}),
        ("${list.concat([1], 2)}", [1, 2]),
        ('${text.match_regex("specs/a.yaml", "^specs/")}', True),
        ('${text.url_encode("a/b c")}', "a%2Fb%20c"),
        ('${json.decode("{\\"a\\": [1]}").a[0]}', 1),
        ('${json.encode_to_string({"a": 1})}', '{"a":1}'),
        ('${int("42") + int(2.9)}', 44),
        ('${double("2.5")}', 2.5),
        ('${keys({"x": 1})}', ["x"]),
    ],
)
def test_expressions(text: str, expected: Any) -> None:
    assert expr(text) == expected


def test_not_binds_tighter_than_comparison_as_documented() -> None:
    # Workflows' precedence table puts `not` above `==`: `not true == false` is `(not true) == false`.
    assert expr("${not true == false}") is True


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ('${1 + "a"}', "TypeError"),
        ("${missing}", "KeyError"),
        ('${{"a": 1}.b}', "KeyError"),
        ("${[1][3]}", "IndexError"),
        ("${1 / 0}", "ZeroDivisionError"),
        ('${not "x"}', "TypeError"),
        ('${1 < "a"}', "TypeError"),
        ('${int("x")}', "ValueError"),
    ],
)
def test_expression_errors_are_tagged_error_maps(text: str, tag: str) -> None:
    error = fail(f"- out:\n    return: {json.dumps(text)}\n")
    assert error["tags"] == [tag]
    assert error["message"]


def test_unknown_function_and_partial_expression_are_refused_by_name() -> None:
    with pytest.raises(UnsupportedConstruct, match=r"unknown function 'text\.nope'"):
        Interpreter("- a:\n    return: ${text.nope(1)}\n").run()
    with pytest.raises(UnsupportedConstruct, match="must be the whole value"):
        Interpreter('- a:\n    return: "x-${1}"\n').run()
    with pytest.raises(UnsupportedConstruct, match="mixed-case keyword 'Not'"):
        Interpreter("- a:\n    return: ${Not true}\n").run()


def test_unknown_step_kind_and_parallel_are_refused() -> None:
    with pytest.raises(UnsupportedConstruct, match="unknown step kind"):
        Interpreter("- a:\n    wait: 1\n").run()
    with pytest.raises(UnsupportedConstruct, match="'parallel' is not supported"):
        Interpreter("- a:\n    parallel:\n      branches: []\n").run()
    with pytest.raises(UnsupportedConstruct, match="unsupported keys"):
        Interpreter("- a:\n    assign:\n      - x: 1\n    result: y\n").run()


def test_blocking_calls_are_not_allowed_in_expressions() -> None:
    with pytest.raises(UnsupportedConstruct, match="blocking call"):
        Interpreter('- a:\n    return: ${http.get("http://127.0.0.1:9")}\n').run()


def test_assign_into_maps_and_lists_with_computed_keys() -> None:
    source = """
- init:
    assign:
      - times: {}
      - status: parsed
      - times[status]: 1.5
      - nested: {"a": [0, 0]}
      - nested.a[1]: 7
- out:
    return: ${[times, nested]}
"""
    assert run(source) == [{"parsed": 1.5}, {"a": [0, 7]}]


def test_switch_next_return_and_fallthrough() -> None:
    source = """
main:
  params: [args]
  steps:
    - choose:
        switch:
          - condition: ${args.n > 10}
            return: big
          - condition: ${args.n > 5}
            next: medium
          - condition: ${args.n < 0}
            raise: negative
    - small:
        return: small
    - medium:
        return: medium
"""
    assert run(source, {"n": 11}) == "big"
    assert run(source, {"n": 6}) == "medium"
    assert run(source, {"n": 1}) == "small"
    assert fail(source, {"n": -1}) == "negative"


def test_for_loop_break_continue_and_scoping() -> None:
    source = """
- init:
    assign:
      - total: 0
- loop:
    for:
      value: v
      index: i
      in: [1, 2, 3, 4, 5]
      steps:
        - skip_two:
            switch:
              - condition: ${v == 2}
                next: continue
              - condition: ${v == 5}
                next: break
        - add:
            assign:
              - total: ${total + v}
              - inner: ${i}
- out:
    return: '${[total, map.get({"seen": default(null, "no inner")}, "seen")]}'
"""
    assert run(source) == [8, "no inner"]
    error = fail(source.replace('default(null, "no inner")', "inner"))
    assert error["tags"] == ["KeyError"]  # `inner` does not survive the loop


def test_range_loop() -> None:
    source = """
- init:
    assign:
      - seen: []
- loop:
    for:
      value: n
      range: [1, 3]
      steps:
        - add:
            assign:
              - seen: ${list.concat(seen, n)}
- out:
    return: ${seen}
"""
    assert run(source) == [1, 2, 3]


def test_subworkflow_params_defaults_and_result() -> None:
    source = """
main:
  steps:
    - call_it:
        call: greet
        args:
          name: ada
        result: greeting
    - out:
        return: ${greeting}
greet:
  params: [name, punctuation: "!"]
  steps:
    - build:
        return: ${"hello " + name + punctuation}
"""
    assert run(source) == "hello ada!"
    error = fail(source.replace("name: ada", "nme: ada"))
    assert error["tags"] == ["TypeError"]


def test_try_except_binds_the_error_map_and_raise_rethrows() -> None:
    source = """
- attempt:
    try:
      steps:
        - boom:
            raise:
              code: 409
              message: exists
    except:
      as: e
      steps:
        - known:
            switch:
              - condition: ${e.code == 409}
                return: ${"caught " + e.message}
        - rethrow:
            raise: ${e}
"""
    assert run(source) == "caught exists"
    assert fail(source.replace("code: 409", "code: 500")) == {"code": 500, "message": "exists"}


def test_retry_with_custom_predicate_subworkflow_and_backoff() -> None:
    delays: list[float] = []
    source = """
main:
  steps:
    - init:
        assign:
          - attempts: 0
    - flaky:
        try:
          steps:
            - count:
                assign:
                  - attempts: ${attempts + 1}
            - maybe_fail:
                switch:
                  - condition: ${attempts < 3}
                    raise:
                      code: 503
        retry:
          predicate: ${only_503}
          max_retries: 5
          backoff:
            initial_delay: 2
            max_delay: 3
            multiplier: 2
    - out:
        return: ${attempts}
only_503:
  params: [e]
  steps:
    - check:
        return: ${e.code == 503}
"""
    assert run(source, clock=Clock(sleep=delays.append)) == 3
    assert delays == [2.0, 3.0]  # 2, then 4 capped at max_delay 3


def test_retry_gives_up_after_max_retries_then_except_runs() -> None:
    delays: list[float] = []
    source = """
- flaky:
    try:
      steps:
        - fail:
            raise:
              tags: [ConnectionError]
              message: refused
    retry: ${http.default_retry}
    except:
      as: e
      steps:
        - out:
            return: ${e.message}
"""
    assert run(source, clock=Clock(sleep=delays.append)) == "refused"
    assert len(delays) == 5  # http.default_retry: max_retries 5, backoff 1s x1.25
    assert delays[0] == 1.0
    assert delays[1] == pytest.approx(1.25)


def test_non_idempotent_predicate_does_not_retry_502() -> None:
    delays: list[float] = []
    source = """
- once:
    try:
      steps:
        - fail:
            raise:
              tags: [HttpError]
              code: 502
    retry: ${http.default_retry_non_idempotent}
"""
    assert fail(source, clock=Clock(sleep=delays.append))["code"] == 502
    assert delays == []


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"null")
        _Handler.seen.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        status = 400 if self.path.startswith("/bad") else 200
        payload = json.dumps({"echo": body, "errors": [{"pointer": "/x", "message": "no"}]})
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_http_post_over_real_http_with_oidc_and_http_error(server: str) -> None:
    _Handler.seen.clear()
    source = """
main:
  params: [args]
  steps:
    - ok:
        call: http.post
        args:
          url: ${args.base + "/ok"}
          auth:
            type: OIDC
          body:
            run: ${args.run}
          query:
            v: "1"
        result: good
    - bad:
        try:
          call: http.post
          args:
            url: ${args.base + "/bad"}
            body: {}
        except:
          as: e
          steps:
            - out:
                return: ${[good.code, good.body.echo.run, e.code, e.tags, e.body.errors[0].pointer]}
"""
    result = run(source, {"base": server, "run": "r-1"})
    assert result == [200, "r-1", 400, ["HttpError"], "/x"]
    assert _Handler.seen[0]["path"] == "/ok?v=1"
    assert _Handler.seen[0]["auth"].startswith("Bearer local-oidc-token aud=" + server + "/ok")
    assert _Handler.seen[1]["auth"] is None


def test_connection_refused_is_a_connection_failed_error() -> None:
    source = """
- call:
    try:
      call: http.get
      args:
        url: http://127.0.0.1:9/nothing
        timeout: 5
    except:
      as: e
      steps:
        - out:
            return: ${e.tags}
"""
    assert run(source) == ["ConnectionFailedError", "ConnectionError"]


def test_connectors_come_from_the_registry_and_unknown_ones_are_named() -> None:
    calls: list[dict[str, Any]] = []

    def fake_get(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"name": args["name"]}

    source = """
- get:
    call: googleapis.firestore.v1.projects.databases.documents.get
    args:
      name: ${"projects/p/databases/(default)/documents/runs/" + "r1"}
    result: doc
- out:
    return: ${doc.name}
"""
    connectors = {"googleapis.firestore.v1.projects.databases.documents.get": fake_get}
    assert run(source, connectors=connectors).endswith("/runs/r1")
    assert calls == [{"name": "projects/p/databases/(default)/documents/runs/r1"}]
    with pytest.raises(
        UnsupportedConstruct, match=r"no stand-in for connector googleapis\.firestore"
    ):
        Interpreter(source).run()


def test_sys_get_env_is_strict_and_next_end_stops() -> None:
    source = """
- a:
    assign:
      - v: ${sys.get_env("GATEBENCH_X")}
    next: end
- never:
    return: unreachable
"""
    execution = Interpreter(source, env={"GATEBENCH_X": "1"}).run()
    assert execution.state == "SUCCEEDED"
    assert execution.result is None
    assert execution.steps == ["a"]
    assert fail(source)["tags"] == ["KeyError"]


def test_step_budget_stops_runaway_loops() -> None:
    source = """
- a:
    next: b
- b:
    next: a
"""
    error = Interpreter(source, max_steps=50).run().error
    assert error["tags"] == ["ResourceLimitError"]


def test_sys_get_env_with_a_default_returns_it_when_unset() -> None:
    source = """
- a:
    return: ${[sys.get_env("GATEBENCH_X", "fallback"), sys.get_env("GATEBENCH_Y", "unused")]}
"""
    assert run(source, env={"GATEBENCH_Y": "set"}) == ["fallback", "set"]
    wrong = '- a:\n    return: ${sys.get_env("GATEBENCH_X", 5)}\n'
    error = fail(wrong)
    assert error["tags"] == ["TypeError"]
    assert error["message"] == "sys.get_env default: expected str, got integer"


PATCH = "googleapis.firestore.v1.projects.databases.documents.patch"
GET = "googleapis.firestore.v1.projects.databases.documents.get"


def connector_call(target: str, args: str) -> str:
    return f"""
- write:
    call: {target}
    args:
{args}
    result: out
- done:
    return: ${{out}}
"""


def test_connector_arguments_are_checked_against_the_reference() -> None:
    def patch(args: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("refused calls never reach the stand-in")

    connectors = {PATCH: patch}
    misspelled = connector_call(
        PATCH, "      name: runs/r1\n      updateMask: [status]\n      body: {fields: {}}"
    )
    with pytest.raises(UnsupportedConstruct) as caught:
        Interpreter(misspelled, connectors=connectors).run()
    assert str(caught.value) == (
        f"step 'write': {PATCH} has no argument 'updateMask'; it takes body, "
        "currentDocument.exists, currentDocument.updateTime, mask.fieldPaths, name, "
        "updateMask.fieldPaths (and connector_params)"
    )
    missing = connector_call(PATCH, "      name: runs/r1")
    with pytest.raises(UnsupportedConstruct, match=f"step 'write': {PATCH} needs 'body'$"):
        Interpreter(missing, connectors=connectors).run()
    params = connector_call(
        PATCH, "      name: r\n      body: {}\n      connector_params: {timeout: 5, retries: 3}"
    )
    with pytest.raises(UnsupportedConstruct, match=r"connector_params takes .*got \['retries'\]"):
        Interpreter(params, connectors=connectors).run()
    unknown = connector_call("googleapis.firestore.v1.projects.databases.documents.delete", "")
    with pytest.raises(UnsupportedConstruct, match="not in this interpreter's connector table"):
        Interpreter(unknown.replace("    args:\n\n", ""), connectors=connectors).run()


class Flaky:
    """A connector stand-in answering ``codes`` in turn (an HTTP error each), then success."""

    def __init__(self, *codes: int) -> None:
        self.codes = list(codes)
        self.calls = 0

    def __call__(self, args: dict[str, Any]) -> Any:
        from cloud.standins import http_error

        self.calls += 1
        if self.codes:
            raise http_error(self.codes.pop(0), "flaky", "UNAVAILABLE")
        return "written"


@pytest.mark.parametrize(
    ("target", "codes", "calls", "delays", "outcome"),
    [
        # Non-GET connector calls retry 429 and 503 only (the non-idempotent policy).
        (PATCH, [503, 429], 3, [1.0, 1.25], "written"),
        (PATCH, [502], 1, [], 502),
        (PATCH, [500], 1, [], 500),
        (PATCH, [503] * 6, 6, [1.0, 1.25, 1.5625, 1.953125, 2.44140625], 503),
        # GET retries 502 and 504 as well (the idempotent policy), never 500 or 404.
        (GET, [502, 504], 3, [1.0, 1.25], "written"),
        (GET, [500], 1, [], 500),
        (GET, [404], 1, [], 404),
    ],
)
def test_connectors_retry_as_documented(
    target: str, codes: list[int], calls: int, delays: list[float], outcome: Any
) -> None:
    flaky = Flaky(*codes)
    slept: list[float] = []
    args = "      name: runs/r1\n      body: {fields: {}}" if target == PATCH else "      name: r"
    execution = Interpreter(
        connector_call(target, args),
        connectors={target: flaky},
        clock=Clock(sleep=slept.append),
    ).run()
    assert flaky.calls == calls
    assert slept == delays
    if outcome == "written":
        assert execution.result == "written"
    else:
        assert execution.state == "FAILED"
        assert execution.error["code"] == outcome


def test_variables_above_workflows_data_limit_fail_as_workflows_fails_them() -> None:
    """Workflows keeps at most 512 KB of variables (its quotas page, "Data size"): the stand-in
    refuses what the service refuses, a subworkflow's variables counted with its caller's."""
    from cloud.workflows_interpreter import DATA_BYTES

    def grows(size: int) -> str:
        return f"""
    - grow:
        assign:
          - big: {"x" * size}
    - done:
        return: ${{len(big)}}
"""

    interpreter = Interpreter("main:\n  steps:" + grows(DATA_BYTES - 1000))
    assert interpreter.run().state == "SUCCEEDED"
    assert DATA_BYTES - 1000 < interpreter.peak_data_bytes <= DATA_BYTES
    refused = fail("main:\n  steps:" + grows(DATA_BYTES + 1))
    assert refused["tags"] == ["ResourceLimitError"] and "Memory usage limit" in refused["message"]
    # Half in main's variables, the other half and more in a subworkflow's.
    nested = (
        f"main:\n  steps:\n    - keep:\n        assign:\n          - mine: {'y' * (DATA_BYTES // 2)}"
        "\n    - inner:\n        call: sub\n        result: n\n    - out:\n        return: ${n}"
        "\nsub:\n  steps:" + grows(DATA_BYTES // 2 + 100)
    )
    assert fail(nested)["tags"] == ["ResourceLimitError"]
    assert run(nested.replace("y" * (DATA_BYTES // 2), "y")) == DATA_BYTES // 2 + 100
