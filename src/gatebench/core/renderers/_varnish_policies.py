"""Varnish's policies: its cache, the reason Varnish exists (no VMOD beyond the standard ones).

A cached route's ``return (pass)`` becomes ``return (hash)``: Varnish's built-in ``vcl_hash``
keys on the URL (path and query) and the host. Varnish never caches a request that carries
``Authorization`` in its built-in logic, and the rendered ``vcl_recv`` decides before it: the
header travels past the cache as ``X-Gatebench-Carried-Authorization`` and is restored in
``vcl_backend_fetch``; ``vcl_backend_response`` sets ``beresp.ttl`` to the policy's TTL (a
marker header names it). A cache policy whose key ignores the query or varies on request
headers gets its own branch in ``vcl_hash`` (the URL without its query, each header's value,
then the host as the built-in does), chosen by another marker header.

API key: the route's block first refuses with ``synth(401)`` unless the header equals one of
the keys (string equality) or the URL carries ``NAME=KEY`` as a query parameter (a regex);
the keys are in the VCL (Varnish compares no hash without a third-party VMOD): a run's stored
copy is redacted (``gatebench.core.api_keys``). No JWT and no rate limit without third-party VMODs: a plan that asks
for either leaves Varnish out.
"""

from __future__ import annotations

from gatebench.core.api_keys import checked_keys
from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.policies import ApiKeyAuth, Cache, PolicySet
from gatebench.core.renderers._base import RenderTarget
from gatebench.core.renderers._routes import routes_for

_CARRIED = "X-Gatebench-Carried-Authorization"
_TTL = "X-Gatebench-Cache-Ttl"
_KEY = "X-Gatebench-Cache-Key"


def _header(name: str) -> str:
    """``req.http.NAME``: VCL header names take letters, digits, '-' and '_'."""
    if "." in name:
        raise UnsupportedFeature(
            [
                Problem(
                    "/x-gatebench/policies",
                    f"varnish cannot read the header {name!r}: VCL header names take "
                    "letters, digits, '-' and '_'",
                )
            ]
        )
    return f"req.http.{name}"


def _api_key_check(auth: ApiKeyAuth) -> str:
    keys = checked_keys(auth, "varnish")
    if auth.header is not None:
        header = _header(auth.header)
        valid = " || ".join(f'{header} == "{k}"' for k in keys)
    else:
        assert auth.query is not None
        # Keys and names are A-Za-z0-9-._~ (gatebench.core.api_keys, the plan): '.' is the one
        # regex character; VCL strings have no escapes, so the backslash reaches PCRE.
        alternatives = "|".join(k.replace(".", "\\.") for k in keys)
        name = auth.query.replace(".", "\\.")
        valid = f'req.url ~ "[?&]{name}=(?:{alternatives})(?:&|$)"'
    return f'        if (!({valid})) {{\n            return (synth(401, "Unauthorized"));\n        }}\n'


def _hash_branch(n: int, cache: Cache) -> str:
    url = "req.url" if "query" in cache.vary else 'regsub(req.url, "\\?.*$", "")'
    lines = [f'    if (req.http.{_KEY} == "{n}") {{', f"        hash_data({url});"]
    for part in cache.vary:
        if part.startswith("header:"):
            lines.append(f'        hash_data("{part}=" + {_header(part[len("header:") :])});')
    lines += [
        "        if (req.http.host) {",
        "            hash_data(req.http.host);",
        "        } else {",
        "            hash_data(server.ip);",
        "        }",
        "        return (lookup);",
        "    }",
    ]
    return "\n".join(lines) + "\n"


def apply_varnish_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    text = files["default.vcl"]
    blocks = text.split("        return (pass);\n")
    routes = routes_for(api)
    assert len(blocks) == len(routes) + 1
    out = [blocks[0]]
    ttls: set[int] = set()
    keyed: dict[Cache, int] = {}
    for route, rest in zip(routes, blocks[1:], strict=True):
        p = policies.for_operation(route.operation_id)
        cache = p.cache
        if isinstance(p.auth, ApiKeyAuth):
            out.append(_api_key_check(p.auth))
        if cache is not None and route.method in cache.methods:
            ttl = max(1, int(cache.ttl))
            ttls.add(ttl)
            if cache.vary != ("path", "query"):
                n = keyed.setdefault(cache, len(keyed))
                out.append(f'        set req.http.{_KEY} = "{n}";\n')
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
        + (f"    unset bereq.http.{_KEY};\n" if keyed else "")
        + "}\n"
        "\nsub vcl_backend_response {\n" + checks + "}\n"
    )
    if keyed:
        text += (
            "\nsub vcl_hash {\n"
            + "".join(_hash_branch(n, cache) for cache, n in keyed.items())
            + "}\n"
        )
    return {**files, "default.vcl": text}


__all__ = ["apply_varnish_policies"]
