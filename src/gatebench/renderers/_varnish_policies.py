"""Varnish's policies: its cache, the reason Varnish exists (no VMOD beyond the standard ones).

A cached route's ``return (pass)`` becomes ``return (hash)``: Varnish's built-in ``vcl_hash``
keys on the URL (path and query) and the host. Varnish never caches a request that carries
``Authorization`` in its built-in logic, and the rendered ``vcl_recv`` decides before it: the
header travels past the cache as ``X-Gatebench-Carried-Authorization`` and is restored in
``vcl_backend_fetch``; ``vcl_backend_response`` sets ``beresp.ttl`` to the policy's TTL (a
marker header names it). No JWT and no rate limit without third-party VMODs: a plan that asks
for either leaves Varnish out.
"""

from __future__ import annotations

from ..ir import Api
from ..policies import PolicySet
from ._routes import routes_for

_CARRIED = "X-Gatebench-Carried-Authorization"
_TTL = "X-Gatebench-Cache-Ttl"


def apply_varnish_policies(files: dict[str, str], api: Api, policies: PolicySet) -> dict[str, str]:
    text = files["default.vcl"]
    blocks = text.split("        return (pass);\n")
    routes = routes_for(api)
    assert len(blocks) == len(routes) + 1
    out = [blocks[0]]
    ttls: set[int] = set()
    for route, rest in zip(routes, blocks[1:], strict=True):
        cache = policies.for_operation(route.operation_id).cache
        if cache is not None and route.method in cache.methods:
            ttl = max(1, int(cache.ttl))
            ttls.add(ttl)
            out.append(
                f'        set req.http.{_TTL} = "{ttl}";\n'
                f"        if (req.http.Authorization) {{\n"
                f"            set req.http.{_CARRIED} = req.http.Authorization;\n"
                "            unset req.http.Authorization;\n"
                "        }\n"
                "        return (hash);\n"
            )
        else:
            out.append("        return (pass);\n")
        out.append(rest)
    text = "".join(out)
    checks = "".join(
        f'    if (bereq.http.{_TTL} == "{ttl}") {{\n        set beresp.ttl = {ttl}s;\n'
        "        set beresp.uncacheable = false;\n    }\n"
        for ttl in sorted(ttls)
    )
    text += (
        "\nsub vcl_backend_fetch {\n"
        f"    if (bereq.http.{_CARRIED}) {{\n"
        f"        set bereq.http.Authorization = bereq.http.{_CARRIED};\n"
        f"        unset bereq.http.{_CARRIED};\n"
        "    }\n"
        f"    unset bereq.http.{_TTL};\n"
        "}\n"
        "\nsub vcl_backend_response {\n" + checks + "}\n"
    )
    return {**files, "default.vcl": text}


__all__ = ["apply_varnish_policies"]
