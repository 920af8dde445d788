"""``gatebench render`` with a plan's deployment (``tls``, ``backend.replicas``): the files are
a plain proxy to ``--backend``, and the warnings say what they leave out and which gateways a
run of the plan would leave out for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatebench.cli import main

SPEC = """\
openapi: 3.0.3
info: {title: deployed, version: "1.0"}
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        "200": {description: ok}
x-gatebench:
  tls: {key: ecdsa-p256, http2: true, resumption: true}
  backend: {mock: true, replicas: 3, balance: least_conn}
  workloads:
    - name: get
      operation: getItem
      params: {id: 1}
      injection: {constant_rate: {rate: 100, duration: 6s}}
"""


def test_render_says_what_of_the_deployment_the_files_leave_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "deployed.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    code = main(["render", str(spec), "--gateway", "nginx,varnish", "--out", str(out)])
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    # the files are one plain proxy to --backend ...
    conf = (out / "nginx" / "nginx.conf").read_text()
    assert "ssl" not in conf and "127.0.0.1:9000" in conf
    # ... and the warnings, located at the plan's keys, say so
    tls = [line for line in err if "leave out tls" in line]
    assert len(tls) == 1
    assert tls[0].startswith("deployed.yaml:12:3: warning: /x-gatebench/tls:")
    assert "h2 by ALPN" in tls[0]
    pool = [line for line in err if "leave out backend.replicas" in line]
    assert len(pool) == 1
    assert pool[0].startswith("deployed.yaml:13:")
    assert "warning: /x-gatebench/backend/replicas:" in pool[0]
    assert "(3)" in pool[0] and "backend.balance (least_conn)" in pool[0]
    # a run of the plan leaves Varnish out (no TLS); nginx renders all of it
    varnish = [line for line in err if "leaves varnish out" in line]
    assert len(varnish) == 1 and "TLS termination" in varnish[0]
    assert not any("leaves nginx out" in line for line in err)


def test_render_of_a_plain_plan_warns_of_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "plain.yaml"
    spec.write_text(
        SPEC.replace("  tls: {key: ecdsa-p256, http2: true, resumption: true}\n", "").replace(
            ", replicas: 3, balance: least_conn", ""
        )
    )
    code = main(["render", str(spec), "--gateway", "nginx,varnish", "--out", str(tmp_path / "o")])
    assert code == 0
    assert capsys.readouterr().err == ""
