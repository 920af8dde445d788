"""KrakenD CE 2.x: one endpoint per operation, ``no-op`` proxying, everything forwarded.

Mapping rules (tests/golden/krakend/README.md says the same in prose):

- Config ``version: 3``; one endpoint per operation with its method, the path in decoded
  form with ``{placeholders}``, and one backend whose ``url_pattern`` is the same path.
- ``output_encoding`` and the backend ``encoding`` are ``no-op``: bodies and status codes
  pass unchanged (KrakenD would otherwise parse and re-encode JSON).
- KrakenD forwards nothing by default: ``input_headers: ["*"]`` and
  ``input_query_strings: ["*"]`` forward every header (``Authorization`` too) and every
  query parameter. It does not forward them unchanged, and no setting makes it: it sends its
  own ``Host``, rebuilds the query (:func:`rebuilt_query`) and the path (:func:`rebuilt_path`),
  answers 400 itself for a parameter holding an escaped ``?``, ``#`` or ``%``
  (:data:`REFUSED_IN_PARAMETERS`; its router's check against double-encoded parameters, kept
  on) and routes an empty parameter followed by more of the path (``/a//c``). The renderer
  declares each of these (``Renderer.forwarded_query`` and the rest), route replay expects
  exactly them, and a workload whose query repeats a parameter excludes KrakenD
  (:meth:`KrakendRenderer.query_problem`).
- KrakenD's router (gin) panics when two paths put differently named parameters at the same
  place (``/users/{id}/a`` beside ``/users/{userId}/b``): parameter names are made to agree
  by position (``shared_param_names``), in the endpoint and the ``url_pattern`` alike, and
  reduced to ``[A-Za-z0-9_]``.
- Router options: no redirects for trailing slashes or case, no 405 (wrong methods get 404
  like everything else), no health endpoint (``/__health`` would be a route the API lacks).
- Refused with a located ``UnsupportedFeature`` (KrakenD cannot express them): a parameter
  sharing a segment with text (``/files/{name}.json``), methods other than GET, POST, PUT,
  PATCH and DELETE, a path with ``*``, ``?``, ``&``, ``%``, ``:`` or an encoded ``/`` once
  decoded (the official schema's pattern and KrakenD's documented limits) or a backslash
  (its router reads one as an escape and panics at start), an empty segment (``//``: its
  router never routes a request there; a trailing slash is fine), and paths
  reserved by KrakenD (``/__health``, ``/__debug``, ``/__echo``, ``/__catchall``,
  ``/__stats``).
- The file is JSON written by a serialiser; tests validate it against the official schema.
  Here KrakenD runs when installed (``krakend`` on PATH or ``GATEBENCH_KRAKEND_BIN``), always
  with ``USAGE_DISABLE=1`` (it reports usage to an outside host otherwise), checked with
  ``krakend check -c`` (never ``-l``, which downloads a schema) and booted, since its checker
  accepts paths its router refuses at start; on the cloud path it runs in the official image.
- TLS (``target.tls``): the root ``tls`` object with the run's chain and key, TLS 1.2 to 1.3
  and ``gatebench.core.tls``'s cipher suites by code point. KrakenD's Go server offers ``h2`` by
  ALPN whenever TLS is on (no setting turns it off: the engine then keeps to HTTP/1.1 when
  the plan does not ask for HTTP/2) and has no setting for session tickets.
- Replicas: refused. KrakenD CE balances a backend's ``host`` list round robin only when it
  runs on one core (``GOMAXPROCS=1``) and picks a host at random otherwise (lura's default
  balancer; seen with KrakenD CE 2.13.8: 2/0/4 of 6 requests), and has no health checks and
  no least-connections balancer; a pool the plan asks for is refused with that reason rather
  than balanced otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import unquote, unquote_to_bytes

from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._base import Renderer, RenderTarget, as_files
from gatebench.core.renderers._json_out import dump_json
from gatebench.core.renderers._parity import CONNECT_TIMEOUT_S, IDLE_TIMEOUT_S, Parity, VendorPage
from gatebench.core.renderers._routes import (
    Route,
    distinct_paths,
    encode_literal,
    shared_param_names,
    unsupported,
)
from gatebench.core.tls import CIPHER_CODES, SERVER_CERT, SERVER_KEY, TLS12_CIPHERS, TLS13_CIPHERS

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Go's url.URL.EscapedPath leaves these bytes of a path as they are, and takes a path made of
# these plus ``!'()*[]`` as already encoded (net/url: escape(..., encodePath), validEncoded).
_PATH_SAFE = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~$&+,/:;=@"
)
_PATH_VALID = _PATH_SAFE | frozenset(b"!'()*[]")
# A parameter value holding one of these once decoded gets 400 from KrakenD itself (its
# router's parameter check: "encoded url params").
REFUSED_IN_PARAMETERS = "?#%"
# Go's url.QueryEscape leaves these bytes as they are.
_QUERY_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
_HEX_DIGITS = frozenset("0123456789ABCDEFabcdef")
# The schema's pattern and KrakenD's documented limits, and a backslash: KrakenD's router
# (gin) reads it as an escape and panics at start ("invalid escape string in path").
_FORBIDDEN = "*?&%:\\"
# A component KrakenD could not set up is logged at these levels while it keeps running.
_LOG_PROBLEM = re.compile(r"KRAKEND (?:ERROR|CRITICAL)")
_RESERVED = ("/__health", "/__debug", "/__echo", "/__catchall", "/__stats")


class KrakendRenderer(Renderer):
    name = "krakend"
    description = (
        "KrakenD CE 2.x: one no-op endpoint per operation, all headers and query forwarded"
    )
    gateway_version = "2.13"
    output_files = ("krakend.json",)
    runs_here = True
    vendor_installed = True
    cloud_image = "krakend:2.13.1"
    run_command = ("krakend", "run", "-c", "{workdir}/krakend.json")
    # Never `-l`: it downloads the schema from krakend.io.
    check_command = ("krakend", "check", "-c", "{workdir}/krakend.json")
    install_hint = (
        "install KrakenD CE 2.13 from its vendor (https://www.krakend.io/download/: Debian "
        "package, generic Linux tarball or Homebrew), or name the binary in GATEBENCH_KRAKEND_BIN"
    )
    boot_check = True
    # KrakenD reports usage to an outside host at start unless told not to.
    fixed_env: ClassVar[Mapping[str, str]] = {"USAGE_DISABLE": "1"}
    cores_env = "GOMAXPROCS"
    forwards_host = False
    routes_empty_parameters = True

    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {"auth.jwt", "auth.jwt.jwks", "rate_limit.address", "rate_limit.header"}
    )

    parity = Parity(
        cores="`GOMAXPROCS` = cores",
        pools="`max_idle_connections_per_host` = concurrency (default 250), "
        "`max_idle_connections` 0 (no limit)",
        keepalive="`idle_timeout 60s` to clients, `idle_connection_timeout 60s` to the "
        "backend; no request limit",
        timeouts="`dialer_timeout 10s`, `timeout 300s`",
        bodies="streamed (`no-op` encoding)",
        logs="`disable_access_log`; no telemetry configured; `USAGE_DISABLE=1` on both paths",
        routes="one endpoint per operation in its router's radix tree (no route is tried in turn)",
        retries="none: it renders no pool of replicas (a plan with replicas leaves it out), "
        "so there is nowhere else to send a request",
        pages=(
            VendorPage(
                "HTTP Server Settings",
                "https://www.krakend.io/docs/service-settings/http-server-settings/",
            ),
            VendorPage(
                "HTTP Global Client settings",
                "https://www.krakend.io/docs/service-settings/http-transport-settings/",
            ),
        ),
    )

    def boot_problems(self, log: str) -> list[str]:
        return [line for line in log.splitlines() if _LOG_PROBLEM.search(line)]

    def forwarded_query(self, raw: str) -> str:
        return rebuilt_query(raw)

    def forwarded_path(self, raw: str) -> str:
        return rebuilt_path(raw)

    def answers_itself(self, raw_path: str) -> int | None:
        decoded = unquote_to_bytes(raw_path)
        return 400 if any(ch.encode() in decoded for ch in REFUSED_IN_PARAMETERS) else None

    def query_problem(self, names: Sequence[str]) -> str | None:
        repeated = sorted({n for n in names if names.count(n) > 1})
        if not repeated:
            return None
        return (
            f"it sends {', '.join(repr(n) for n in repeated)} more than once in the query, and "
            "KrakenD rebuilds the query (names sorted, each name's values together: "
            "docs/gateways.md), so the backend would not get the parameters in the order sent"
        )

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        from gatebench.core.renderers._krakend_policies import (
            JWKS_FILE,
            endpoint_policies,
            jwks_text,
        )

        config = json.loads(files["krakend.json"])
        routes = self.routes(api)
        names = shared_param_names(routes)
        by_endpoint = {
            (route.method, self._path(route, names[route.index], [])): route.operation_id
            for route in routes
        }
        used = []
        for endpoint in config["endpoints"]:
            p = policies.for_operation(by_endpoint[endpoint["method"], endpoint["endpoint"]])
            used.append(p)
            extra = endpoint_policies(p, target.path(JWKS_FILE))
            if extra:
                endpoint["extra_config"] = extra
        try:
            jwks = jwks_text(used)
        except ValueError as exc:
            raise UnsupportedFeature(
                [Problem("/x-gatebench/policies", f"krakend: {exc}")]
            ) from None
        out = {**files, "krakend.json": dump_json(config)}
        if jwks is not None:
            out[JWKS_FILE] = jwks
        return as_files(out)

    http2_always = True
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls.no_resumption": "KrakenD's tls settings have none for session tickets",
        "pool.round_robin": "KrakenD CE picks one of a backend's hosts at random when it runs "
        "on more than one core (lura's balancer goes round robin only with GOMAXPROCS=1, which "
        "would hold the gateway to one core)",
        "pool.least_conn": "KrakenD CE balances a backend's hosts round robin (one core) or at "
        "random, never by connections",
    }

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        names = shared_param_names(routes)
        problems: list[Problem] = []
        endpoints: list[dict[str, Any]] = []
        for route, path in distinct_paths(
            routes, lambda r: self._path(r, names[r.index], problems), self.name, problems
        ):
            endpoints.append(
                {
                    "endpoint": path,
                    "method": route.method,
                    "output_encoding": "no-op",
                    "input_headers": ["*"],
                    "input_query_strings": ["*"],
                    "timeout": "300s",
                    "backend": [
                        {
                            "url_pattern": path,
                            "host": [target.backend_origin],
                            "encoding": "no-op",
                        }
                    ],
                }
            )
        self.fail_unsupported(problems)
        config = {
            "$schema": "https://www.krakend.io/schema/v2.13/krakend.json",
            "version": 3,
            "name": "gatebench",
            "port": target.listen_port,
            "listen_ip": target.listen_host,
            "timeout": "300s",
            "idle_timeout": f"{IDLE_TIMEOUT_S}s",
            "dialer_timeout": f"{CONNECT_TIMEOUT_S}s",
            "idle_connection_timeout": f"{IDLE_TIMEOUT_S}s",
            "max_idle_connections": 0,
            "max_idle_connections_per_host": target.concurrency,
            "disable_rest": False,
            "extra_config": {
                "router": {
                    "disable_redirect_trailing_slash": True,
                    "disable_redirect_fixed_path": True,
                    "disable_handle_method_not_allowed": True,
                    "disable_health": True,
                    "disable_access_log": True,
                    "auto_options": False,
                    "return_error_msg": False,
                }
            },
            "endpoints": endpoints,
        }
        if target.tls is not None:
            config["tls"] = {
                "keys": [
                    {
                        "public_key": target.tls.path(SERVER_CERT),
                        "private_key": target.tls.path(SERVER_KEY),
                    }
                ],
                "min_version": "TLS12",
                "max_version": "TLS13",
                "cipher_suites": [CIPHER_CODES[c] for c in (*TLS13_CIPHERS, *TLS12_CIPHERS)],
            }
        return as_files({"krakend.json": dump_json(config)})

    def _path(self, route: Route, names: tuple[str, ...], problems: list[Problem]) -> str | None:
        if route.method not in METHODS:
            problems.append(
                unsupported(route, self.name, f"KrakenD endpoints take only {', '.join(METHODS)}")
            )
            return None
        if route.has_partial_segments:
            problems.append(
                unsupported(
                    route,
                    self.name,
                    "a parameter must fill its whole path segment (KrakenD cannot build words from variables)",
                )
            )
            return None
        if any(seg.is_literal and not seg.literal for seg in route.segments[:-1]):
            problems.append(
                unsupported(
                    route,
                    self.name,
                    "an empty segment ('//'): KrakenD's router never routes a request to it",
                )
            )
            return None
        renamed = iter(names)
        parts = []
        for segment in route.segments:
            if segment.is_whole_param:
                parts.append("{" + next(renamed) + "}")
                continue
            text = unquote(encode_literal(segment.literal))
            bad = sorted({ch for ch in text if ch in _FORBIDDEN or ch == "/"})
            if bad or any(ord(ch) < 0x20 or ch == "\x7f" for ch in text):
                shown = " ".join(repr(ch) for ch in bad) or "a control character"
                problems.append(
                    unsupported(
                        route,
                        self.name,
                        f"the path may not contain {shown} (KrakenD endpoint paths exclude * ? & % : \\ and encoded '/')",
                    )
                )
                return None
            parts.append(text)
        path = "/" + "/".join(parts)
        for reserved in _RESERVED:
            if path == reserved or path.startswith(reserved + "/"):
                problems.append(unsupported(route, self.name, f"{reserved} is reserved by KrakenD"))
                return None
        return path


def rebuilt_query(raw: str) -> str:
    """The query KrakenD sends the backend for a client's ``raw`` query (``input_query_strings:
    ["*"]``): Go's ``url.ParseQuery`` then ``url.Values.Encode``, byte for byte.

    - pairs split on ``&``; a pair holding ``;`` is dropped, an empty one skipped, a pair
      with a malformed escape (``%`` not followed by two hex digits) dropped;
    - each name and value decoded (``+`` is a space, ``%XX`` a byte), a pair without ``=``
      has the empty value;
    - names sorted (by bytes), the values of one name in the order sent; every name and value
      encoded again: ``A-Za-z0-9-_.~`` as they are, a space as ``+``, every other byte as
      ``%XX`` (upper case); each pair written ``name=value``, joined by ``&``.
    """
    values: dict[bytes, list[bytes]] = {}
    for pair in raw.split("&"):
        if ";" in pair or not pair:
            continue
        name, _, value = pair.partition("=")
        key, val = _query_unescape(name), _query_unescape(value)
        if key is None or val is None:
            continue
        values.setdefault(key, []).append(val)
    return "&".join(
        f"{_query_escape(key)}={_query_escape(val)}"
        for key in sorted(values)
        for val in values[key]
    )


def _query_unescape(text: str) -> bytes | None:
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%":
            if text[i + 1 : i + 2] not in _HEX_DIGITS or text[i + 2 : i + 3] not in _HEX_DIGITS:
                return None
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
            continue
        out += b" " if ch == "+" else ch.encode("utf-8")
        i += 1
    return bytes(out)


def _query_escape(data: bytes) -> str:
    return "".join(chr(b) if b in _QUERY_SAFE else "+" if b == 0x20 else f"%{b:02X}" for b in data)


def rebuilt_path(raw: str) -> str:
    """The path KrakenD sends the backend for a client's ``raw`` path it routes: the path is
    decoded (parameter values and literals alike), then written again the way Go's
    ``net/url`` writes it: as it is when every byte is one of ``A-Za-z0-9-._~$&+,/:;=@!'()*[]``,
    else with every byte outside ``A-Za-z0-9-._~$&+,/:;=@`` as ``%XX`` (upper case), so
    ``(a)'!*`` become ``%28a%29%27%21%2A`` once anything else in the path needs escaping
    (a space, a non-ASCII character)."""
    decoded = unquote_to_bytes(raw)
    if all(b in _PATH_VALID for b in decoded):
        return decoded.decode("ascii")
    return "".join(chr(b) if b in _PATH_SAFE else f"%{b:02X}" for b in decoded)
