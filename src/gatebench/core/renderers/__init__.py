"""Gateway renderers: one IR in, a complete gateway configuration out, one module per gateway.

Public surface (what the engine, the CLI and the cloud functions use)::

    get_renderer("kong")            -> Renderer   (aliases accepted, case-insensitive;
                                                   unknown → RenderError listing the known)
    gateway_names()                 -> every registered gateway, sorted
    gateway_aliases()               -> {alias: name}
    local_gateway_names()           -> the fast native gateways a plan selects by default
    all_renderers()                 -> one instance per registered gateway
    renderer.render(api, target)    -> {relative file name: text}   (pure, deterministic)

Rendering starts no process: booting a rendered gateway (write, check, start, readiness) is
the provisioners' (``gatebench.local.provisioners.boot_gateway``).

The contract of a gateway module (``renderers/<name with _>.py``), checked for every registry
entry by ``tests/golden/test_contract.py``:

1. One :class:`Renderer` subclass with declarative metadata: ``name`` (lower case, the
   registry key), ``aliases``, ``description`` (one line), ``gateway_version`` (what the
   output targets and is tested with), ``output_files`` (relative POSIX paths, main config
   first), ``runs_here`` (a native process on this machine), ``cloud_image`` (a pinned
   official image for the cloud path; ``None`` only for a managed service),
   ``check_command`` / ``run_command`` (argv templates with ``{workdir}``, ``{listen_port}``,
   ``{listen_address}``, ``{admin_port}``, ``{workers}`` placeholders; element 0 is the
   program, found by :meth:`Renderer.find_program`), ``readiness_timeout``. The engine calls
   ``check_argv(workdir, target)`` / ``run_argv(workdir, target)`` (``None``: no checker /
   cannot run here) and ``cloud_argv(target)``. A gateway run from a built artefact (a JVM
   jar) overrides ``run_argv`` and ``env``; ``check_command = None`` means booting is its
   check (``provisioners.boot_gateway`` then skips straight to the start and the readiness probe).
2. ``render(api, target)`` returns exactly ``output_files``: LF line ends, one final newline
   (``as_files``), byte-identical for the same input. It takes routes from
   :meth:`Renderer.render_routes` (validated, in priority order) and never lets a spec string
   reach the output unescaped: regexes come from :meth:`Route.regex` (``\\xHH`` escapes), names
   from :func:`identifier`, and structured formats (YAML/JSON) are written by a serialiser.
3. Identical semantics (docs/gateways.md, and ``_routes``'s docstring): a request is
   forwarded iff an operation has its method and its template matches the path; everything
   else gets 404; path, query, every header (``Authorization`` too, ``Host`` kept where the
   gateway allows) and bodies of any size are forwarded unchanged over keep-alive
   connections. What a gateway cannot express raises
   :class:`~gatebench.core.errors.UnsupportedFeature` with one located problem per operation
   (:func:`unsupported`), never a silent drop.
4. Everything the gateway writes at run time (pid, logs, temporary files, caches) lives in
   ``target.workdir``, so several instances can run at once.
5. One golden folder ``tests/golden/<name>/`` with a ``README.md`` stating the mapping rules in
   prose and one folder per shared case (``make goldens`` writes them). A gateway that runs
   here is also checked by its own checker and by route replay
   (``tests/integration/test_route_replay.py``).

6. The gateway as deployed (``renderers/_deployment.py``): ``render`` starts with
   ``render_routes(api, target)``, which first refuses what the gateway cannot deploy; TLS (``target.tls``) and a pool of replicas
   (``target.replicas``, ``target.balance``) are rendered as the gateway's own TLS termination
   and upstream pool, with the shared health-check settings; ``deployment_gaps`` says what a
   renderer lacks and why, and it renders the rest (``supported_deployment``, derived). ``tests/golden/test_deployment_goldens.py``
   holds every renderer to it.

Adding a gateway: the module, one line in ``_registry.RENDERERS``, ``make goldens``, the
README beside the goldens, a section in docs/gateways.md.
"""

from __future__ import annotations

from gatebench.core.renderers._base import (
    RESTART,
    LiveChange,
    Renderer,
    RenderTarget,
    as_files,
    finish_text,
)
from gatebench.core.renderers._deployment import deployment_needs
from gatebench.core.renderers._deployment_support import deployment_exclusions, deployment_matrix
from gatebench.core.renderers._live import live_change_table
from gatebench.core.renderers._parity import RULES as PARITY_RULES
from gatebench.core.renderers._parity import Parity, VendorPage
from gatebench.core.renderers._parity_table import parity_table
from gatebench.core.renderers._policies import (
    policy_exclusions,
    render_with_policies,
    support_matrix,
)
from gatebench.core.renderers._registry import (
    RENDERERS,
    UnknownGateway,
    all_renderers,
    gateway_aliases,
    gateway_names,
    get_renderer,
    jit_warmups,
    local_gateway_names,
    rewrites_request_target,
)
from gatebench.core.renderers._routes import (
    Piece,
    Route,
    Segment,
    encode_literal,
    escape_regex_char,
    identifier,
    priority_key,
    routes_for,
    split_template,
    unsupported,
)

__all__ = [
    "PARITY_RULES",
    "RENDERERS",
    "RESTART",
    "LiveChange",
    "Parity",
    "Piece",
    "RenderTarget",
    "Renderer",
    "Route",
    "Segment",
    "UnknownGateway",
    "VendorPage",
    "all_renderers",
    "as_files",
    "deployment_exclusions",
    "deployment_matrix",
    "deployment_needs",
    "encode_literal",
    "escape_regex_char",
    "finish_text",
    "gateway_aliases",
    "gateway_names",
    "get_renderer",
    "identifier",
    "jit_warmups",
    "live_change_table",
    "local_gateway_names",
    "parity_table",
    "policy_exclusions",
    "priority_key",
    "render_with_policies",
    "rewrites_request_target",
    "routes_for",
    "split_template",
    "support_matrix",
    "unsupported",
]
