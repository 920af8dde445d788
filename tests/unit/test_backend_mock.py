"""The mock backend's routes file, rendered from the IR."""

from __future__ import annotations

from pathlib import Path

from gatebench.core.backend import mock_config
from gatebench.core.plan import Backend
from gatebench.core.spec import read_spec

ROOT = Path(__file__).resolve().parents[2]


def test_auction_routes_use_examples_then_schemas() -> None:
    api = read_spec(str(ROOT / "examples/auction/openapi.yaml")).api
    assert api is not None
    config = mock_config(api, Backend("mock", latency=0.005, response_size=512))
    assert config["latency_ms"] == 5.0
    assert config["response_size"] == 512
    routes = {(r["method"], r["path"]): r for r in config["routes"]}
    get = routes[("GET", "/auctions/{auctionId}")]
    assert get["status"] == 200
    assert get["content_type"] == "application/json"
    assert (
        get["body"]
        == '{"highestBid": 120.5, "id": 42, "images": ["/images/42/1.jpg"], "title": "Vintage camera"}'
    )
    create = routes[("POST", "/auctions")]
    assert create["status"] == 201
    assert (
        create["body"]
        == '{"description": "example", "highestBid": 1.0, "id": 1, "images": ["example"], "title": "example"}'
    )
    assert routes[("POST", "/bid/{auctionId}")]["status"] == 200


GONE = """
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /gone:
    get:
      responses:
        "410":
          description: this version is gone
          content: {application/json: {example: {error: gone}}}
        "503": {description: down}
  /go:
    get:
      responses:
        "302": {description: to the long URL}
        4XX: {description: refused}
  /refused:
    get:
      responses:
        5XX: {description: down}
        4XX: {description: refused}
  /anything:
    get:
      responses:
        default: {description: whatever it is}
        "404": {description: not found}
  /switch:
    get:
      responses:
        "101": {description: switching protocols}
"""


def test_an_operation_without_a_success_is_answered_as_the_description_says(
    tmp_path: Path,
) -> None:
    """The mock answered 200 where the description documents only 410 (or a redirect): a
    workload expecting 410 measured every answer as an error."""
    (tmp_path / "api.yaml").write_text(GONE)
    api = read_spec(str(tmp_path / "api.yaml")).api
    assert api is not None
    routes = {r["path"]: r for r in mock_config(api, Backend("mock"))["routes"]}
    assert (routes["/gone"]["status"], routes["/gone"]["body"]) == (410, '{"error": "gone"}')
    assert routes["/go"]["status"] == 302
    assert routes["/refused"]["status"] == 400
    assert (routes["/anything"]["status"], routes["/switch"]["status"]) == (200, 200)
