"""Gateway renderers: one module per gateway, in an explicit sorted registry."""

from __future__ import annotations

# name, aliases, runs on this machine as a native process
_CATALOG: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("apache", ("httpd", "apache2"), True),
    ("caddy", (), True),
    ("envoy", (), True),
    ("google-api-gateway", ("gcp-api-gateway", "api-gateway"), False),
    ("haproxy", (), True),
    ("kong", (), False),
    ("krakend", (), False),
    ("nginx", (), True),
    ("spring-cloud-gateway", ("scg", "spring"), True),
    ("traefik", (), False),
    ("tyk", (), False),
    ("varnish", (), True),
    ("zuul", (), True),
)


def gateway_names() -> tuple[str, ...]:
    return tuple(name for name, _, _ in _CATALOG)


def gateway_aliases() -> dict[str, str]:
    return {alias: name for name, aliases, _ in _CATALOG for alias in aliases}


def local_gateway_names() -> tuple[str, ...]:
    """The gateways a plan selects by default: those that run here as processes (fast ones)."""
    return ("apache", "caddy", "envoy", "haproxy", "nginx")
