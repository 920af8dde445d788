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
