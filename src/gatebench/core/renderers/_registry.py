"""The registry: the one explicit, sorted list of gateways gatebench knows.

Adding a gateway is one module in this package, one import and one line in ``RENDERERS``
below, and one golden folder (``tests/golden/<name>/``); the contract test in
``tests/golden/test_contract.py`` says what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from gatebench.core.errors import RenderError
from gatebench.core.renderers._base import Renderer
from gatebench.core.renderers.apache import ApacheRenderer
from gatebench.core.renderers.caddy import CaddyRenderer
from gatebench.core.renderers.envoy import EnvoyRenderer
from gatebench.core.renderers.google_api_gateway import GoogleApiGatewayRenderer
from gatebench.core.renderers.haproxy import HaproxyRenderer
from gatebench.core.renderers.kong import KongRenderer
from gatebench.core.renderers.krakend import KrakendRenderer
from gatebench.core.renderers.nginx import NginxRenderer
from gatebench.core.renderers.spring_cloud_gateway import SpringCloudGatewayRenderer
from gatebench.core.renderers.traefik import TraefikRenderer
from gatebench.core.renderers.tyk import TykRenderer
from gatebench.core.renderers.varnish import VarnishRenderer
from gatebench.core.renderers.zuul import ZuulRenderer

# Sorted by name; the contract test keeps it so. One line per gateway.
RENDERERS: tuple[type[Renderer], ...] = (
    ApacheRenderer,
    CaddyRenderer,
    EnvoyRenderer,
    GoogleApiGatewayRenderer,
    HaproxyRenderer,
    KongRenderer,
    KrakendRenderer,
    NginxRenderer,
    SpringCloudGatewayRenderer,
    TraefikRenderer,
    TykRenderer,
    VarnishRenderer,
    ZuulRenderer,
)

# Gateways that run here as fast native processes: what a plan selects by default.
LOCAL_DEFAULT: tuple[str, ...] = ("apache", "caddy", "envoy", "haproxy", "nginx", "traefik")


class UnknownGateway(RenderError):
    """A gateway name that is neither a registered name nor an alias."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.message = f"no renderer for {name!r}; available: {', '.join(gateway_names())}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


@cache
def _instances() -> dict[str, Renderer]:
    return {cls.name: cls() for cls in RENDERERS}


def gateway_names() -> tuple[str, ...]:
    """Canonical names of every registered gateway, sorted."""
    return tuple(cls.name for cls in RENDERERS)


def gateway_aliases() -> dict[str, str]:
    """Alias → canonical name (``httpd`` → ``apache``)."""
    return {alias: cls.name for cls in RENDERERS for alias in cls.aliases}


def local_gateway_names() -> tuple[str, ...]:
    """The gateways a plan selects by default: fast ones that run here as processes."""
    known = set(gateway_names())
    return tuple(name for name in LOCAL_DEFAULT if name in known)


def all_renderers() -> tuple[Renderer, ...]:
    return tuple(_instances().values())


def get_renderer(name: str) -> Renderer:
    """The renderer for a name or alias (case-insensitive); an unknown name lists the known."""
    key = name.strip().lower()
    key = gateway_aliases().get(key, key)
    renderer = _instances().get(key)
    if renderer is None:
        raise UnknownGateway(name)
    return renderer


def rewrites_request_target(target: str) -> bool:
    """Whether a gateway forwards a request's path or query rebuilt rather than as the client
    sent it (it declares :meth:`Renderer.forwarded_path` or :meth:`Renderer.forwarded_query`:
    KrakenD, Traefik): the engines then do not hold the backend's receipt of the request target
    to what they sent (docs/trust.md, "Right answers under load"). The baseline and the ceiling
    target rewrite nothing."""
    renderer = _instances().get(target)
    if renderer is None:
        return False
    kind = type(renderer)
    return (
        kind.forwarded_path is not Renderer.forwarded_path
        or kind.forwarded_query is not Renderer.forwarded_query
    )


def jit_warmups(targets: Iterable[str]) -> dict[str, float]:
    """Target → the warm-up a gateway that compiles its code at run time needs after it
    starts (``Renderer.jit_warmup_s``), for the gateways among ``targets`` that need one (the
    baseline and the native gateways do not)."""
    out = {}
    for target in targets:
        renderer = _instances().get(target)
        if renderer is not None and renderer.jit_warmup_s > 0:
            out[target] = renderer.jit_warmup_s
    return out
