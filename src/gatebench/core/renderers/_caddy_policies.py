"""Caddy's policies, with the matchers and handlers of the standard build (no plugin):

- API key: one named matcher per policy, ``@gb_api_keyN`` = the policy's routes (``vars
  {gatebench_route} ...``, the placeholder the route map sets) and ``not`` the header (``header NAME KEY`` per key: exact,
  case-sensitive, OR'ed) or query parameter (``query NAME=KEY`` per key); ``respond
  @gb_api_keyN 401`` comes right after the 404 of the unrouted, before ``reverse_proxy``. The
  keys are in the Caddyfile (Caddy compares no hash): a run's stored copy is redacted
  (``gatebench.core.api_keys``). Keys are ``A-Za-z0-9-._~`` only: no ``*`` (a header matcher's
  wildcard), brace, quote or space can reach a token.
- No JWT, rate limit or cache: Caddy 2.6 ships none of them without plugins.
"""

from __future__ import annotations

from gatebench.core.api_keys import checked_keys
from gatebench.core.ir import Api
from gatebench.core.policies import ApiKeyAuth, PolicySet
from gatebench.core.renderers._base import RenderTarget
from gatebench.core.renderers._routes import route_names, routes_for


def apply_caddy_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    text = files["Caddyfile"]
    routes = routes_for(api)
    names = route_names(routes)
    keyed: dict[ApiKeyAuth, list[str]] = {}
    for route in routes:
        auth = policies.for_operation(route.operation_id).auth
        if isinstance(auth, ApiKeyAuth):
            keyed.setdefault(auth, []).append(names[route.index])
    matchers: list[str] = []
    responds: list[str] = []
    for n, (auth, values) in enumerate(keyed.items()):
        keys = checked_keys(auth, "caddy")
        if auth.header is not None:
            valid = [f"\t\t\theader {auth.header} {k}" for k in keys]
        else:
            valid = [f"\t\t\tquery {auth.query}={k}" for k in keys]
        matchers += [
            f"\t@gb_api_key{n} {{",
            f"\t\tvars {{gatebench_route}} {' '.join(values)}",
            "\t\tnot {",
            *valid,
            "\t\t}",
            "\t}",
        ]
        responds.append(f"\t\trespond @gb_api_key{n} 401")
    unrouted = "\t@unrouted vars {gatebench_route} none\n"
    respond = "\t\trespond @unrouted 404\n"
    assert unrouted in text and respond in text
    text = text.replace(
        unrouted,
        unrouted
        + "\t# Policies (gatebench.core.policies): API keys.\n"
        + "\n".join(matchers)
        + "\n",
        1,
    )
    text = text.replace(respond, respond + "".join(line + "\n" for line in responds), 1)
    return {**files, "Caddyfile": text}


__all__ = ["apply_caddy_policies"]
