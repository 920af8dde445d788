"""The smallest interpreter of the Cloud Workflows constructs that ``workflows/benchmark.yaml``
uses, so the workflow file itself runs in tests. No Workflows emulator exists.

It is strict on purpose: a construct, operator, function or connector it does not know is an
:class:`UnsupportedConstruct` naming it, never a silent no-op. What it implements follows
Google's syntax reference (steps, assign, switch, for, try/retry/except, raise, return, next,
subworkflows with params and defaults, call with args/result; expressions ``${...}`` with the
documented operator precedence) and the standard library functions listed in ``FUNCTIONS``.

Blocking calls (``http.*``, ``sys.log``, ``sys.sleep``, connectors) are only allowed in ``call``
steps, as in Workflows. HTTP calls are real HTTP requests; connectors (``googleapis.*``) are
looked up in the ``connectors`` mapping the caller passes, so each test decides what stands in
for Firestore, Cloud Build and BigQuery. Time (``sys.now``, retry backoff, ``sys.sleep``) goes
through an injectable clock so retry tests do not wait.

Connectors are held to Google's connector reference (``CONNECTORS``): a method missing from
the table, an argument the method does not take, a required argument left out, or an unknown
``connector_params`` key is refused before the stand-in is called. Their built-in retries are
modelled as documented: GET methods retry with the idempotent policy, every other method with
the non-idempotent one (429 and 503 only), 5 retries on ``retry.default_backoff``.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

# -- errors -----------------------------------------------------------------------------------


class UnsupportedConstruct(Exception):
    """The workflow uses something this interpreter does not implement (or that is invalid)."""


class WorkflowError(Exception):
    """An error raised inside the workflow: ``payload`` is what ``except: as: e`` binds."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload
        super().__init__(payload if isinstance(payload, str) else json.dumps(payload, default=str))


def error(tag: str, message: str, **extra: Any) -> WorkflowError:
    tags = [tag]
    if tag == "ConnectionFailedError":
        tags.append("ConnectionError")
    return WorkflowError({"message": message, "tags": tags, **extra})


def tags_of(payload: Any) -> list[str]:
    if isinstance(payload, dict) and isinstance(payload.get("tags"), list):
        return [str(t) for t in payload["tags"]]
    return []


# -- control flow signals ---------------------------------------------------------------------


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Jump(Exception):
    """``next: <step>`` to a step outside the current step list (resolved by an outer list)."""

    def __init__(self, target: str) -> None:
        self.target = target


class _LoopControl(Exception):
    def __init__(self, kind: str) -> None:
        self.kind = kind  # "break" or "continue"


class _End(Exception):
    """``next: end``: the current (sub)workflow ends, returning null."""


# -- expressions ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<number>\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?|\.\d+)
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>//|==|!=|<=|>=|[-+*/%<>()\[\]{},.:])
    )""",
    re.VERBOSE,
)

_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}


@dataclass
class _Tok:
    kind: str
    value: str


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise UnsupportedConstruct(f"cannot read expression {text!r} at {text[pos:]!r}")
        pos = match.end()
        kind = match.lastgroup
        assert kind is not None
        value = match.group(kind)
        if kind == "name" and value.lower() in _KEYWORDS:
            lowered = value.lower()
            # Keywords are lower or upper case, never mixed; booleans may also be capitalised.
            spellings = {lowered, lowered.upper()}
            if lowered in ("true", "false"):
                spellings.add(lowered.capitalize())
            if value not in spellings:
                raise UnsupportedConstruct(f"mixed-case keyword {value!r} in {text!r}")
            tokens.append(_Tok("kw", lowered))
        else:
            tokens.append(_Tok(kind, value))
    return tokens


# AST nodes are tuples: ("lit", v), ("var", name), ("attr", obj, name), ("index", obj, key),
# ("call", dotted_name, [args]), ("unary", op, x), ("bin", op, a, b), ("list", [..]), ("map", [(k, v)])


class _Parser:
    """Precedence (Workflows syntax reference, most binding first): () . [] ; not ; unary - ;
    * / // % ; + - ; < <= >= > == != in ; and ; or."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def parse(self) -> Any:
        node = self.or_expr()
        if self.pos != len(self.tokens):
            raise UnsupportedConstruct(
                f"unexpected {self.tokens[self.pos].value!r} in expression {self.text!r}"
            )
        return node

    def peek(self) -> _Tok | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> _Tok:
        tok = self.peek()
        if tok is None or (value is not None and tok.value != value):
            raise UnsupportedConstruct(f"expected {value or 'more'} in expression {self.text!r}")
        self.pos += 1
        return tok

    def at(self, *values: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind in ("op", "kw") and tok.value in values

    def or_expr(self) -> Any:
        node = self.and_expr()
        while self.at("or"):
            self.take()
            node = ("bin", "or", node, self.and_expr())
        return node

    def and_expr(self) -> Any:
        node = self.comparison()
        while self.at("and"):
            self.take()
            node = ("bin", "and", node, self.comparison())
        return node

    def comparison(self) -> Any:
        node = self.additive()
        while self.at("<", "<=", ">", ">=", "==", "!=", "in"):
            op = self.take().value
            node = ("bin", op, node, self.additive())
        return node

    def additive(self) -> Any:
        node = self.multiplicative()
        while self.at("+", "-"):
            op = self.take().value
            node = ("bin", op, node, self.multiplicative())
        return node

    def multiplicative(self) -> Any:
        node = self.unary_minus()
        while self.at("*", "/", "//", "%"):
            op = self.take().value
            node = ("bin", op, node, self.unary_minus())
        return node

    def unary_minus(self) -> Any:
        if self.at("-"):
            self.take()
            return ("unary", "-", self.unary_minus())
        return self.unary_not()

    def unary_not(self) -> Any:
        if self.at("not"):
            self.take()
            return ("unary", "not", self.unary_not())
        return self.postfix()

    def postfix(self) -> Any:
        node = self.primary()
        while True:
            if self.at("."):
                self.take()
                name = self.take()
                if name.kind != "name":
                    raise UnsupportedConstruct(f"expected a name after '.' in {self.text!r}")
                node = ("attr", node, name.value)
            elif self.at("["):
                self.take()
                key = self.or_expr()
                self.take("]")
                node = ("index", node, key)
            elif self.at("("):
                dotted = _dotted_name(node)
                if dotted is None:
                    raise UnsupportedConstruct(f"only named functions can be called: {self.text!r}")
                self.take()
                args = []
                if not self.at(")"):
                    args.append(self.or_expr())
                    while self.at(","):
                        self.take()
                        args.append(self.or_expr())
                self.take(")")
                node = ("call", dotted, args)
            else:
                return node

    def primary(self) -> Any:
        tok = self.take()
        if tok.kind == "number":
            is_double = any(c in tok.value for c in ".eE")
            return ("lit", float(tok.value) if is_double else int(tok.value))
        if tok.kind == "string":
            return ("lit", json.loads(tok.value))
        if tok.kind == "kw":
            if tok.value in ("true", "false"):
                return ("lit", tok.value == "true")
            if tok.value == "null":
                return ("lit", None)
            raise UnsupportedConstruct(f"unexpected {tok.value!r} in {self.text!r}")
        if tok.kind == "name":
            return ("var", tok.value)
        if tok.value == "(":
            node = self.or_expr()
            self.take(")")
            return node
        if tok.value == "[":
            items = []
            if not self.at("]"):
                items.append(self.or_expr())
                while self.at(","):
                    self.take()
                    items.append(self.or_expr())
            self.take("]")
            return ("list", items)
        if tok.value == "{":
            pairs = []
            if not self.at("}"):
                while True:
                    key = self.or_expr()
                    self.take(":")
                    pairs.append((key, self.or_expr()))
                    if not self.at(","):
                        break
                    self.take()
            self.take("}")
            return ("map", pairs)
        raise UnsupportedConstruct(f"unexpected {tok.value!r} in expression {self.text!r}")


def _dotted_name(node: Any) -> str | None:
    if node[0] == "var":
        return str(node[1])
    if node[0] == "attr":
        inner = _dotted_name(node[1])
        return None if inner is None else f"{inner}.{node[2]}"
    return None


_EXPR = re.compile(r"^\$\{(?P<body>.*)\}$", re.DOTALL)


def is_expression(value: Any) -> bool:
    return isinstance(value, str) and bool(_EXPR.match(value.strip()))


# -- values -----------------------------------------------------------------------------------


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Function):
        return "function"
    return type(value).__name__


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Function:
    """A reference to a function (a retry predicate, a subworkflow) used as a value."""

    name: str


# -- the interpreter --------------------------------------------------------------------------

HttpTransport = Callable[
    [str, str, dict[str, str], bytes | None, float], tuple[int, dict[str, str], bytes]
]
Connector = Callable[[dict[str, Any]], Any]


@dataclass
class Clock:
    """Real time by default; tests replace ``sleep`` to record backoff instead of waiting."""

    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


@dataclass
class Execution:
    state: str  # SUCCEEDED or FAILED
    result: Any = None
    error: Any = None
    steps: list[str] = field(default_factory=list)
    """Names of the steps executed, in order (subworkflow steps prefixed by their name)."""
    logs: list[Any] = field(default_factory=list)
    peak_data_bytes: int = 0
    """The most its variables took at once (:data:`DATA_BYTES`)."""


_DEFAULT_BACKOFF = {"initial_delay": 1.0, "max_delay": 60.0, "multiplier": 1.25}
_CONNECTOR_MAX_RETRIES = 5
_IDEMPOTENT_CODES = (429, 502, 503, 504)
_NON_IDEMPOTENT_CODES = (429, 503)
_MAX_HTTP_TIMEOUT = 1800
DATA_BYTES = 512_000
"""Workflows' "Data size" limit: 512 KB, "the cumulative maximum size of variables, arguments
and events" (cloud.google.com/workflows/quotas, Limits); an HTTP response stored in a variable
counts too. Counted here as the JSON of every variable of every running (sub)workflow, after
each assignment and each stored result, in kB of 1,000 bytes (the stricter reading)."""


class Interpreter:
    def __init__(
        self,
        source: str | dict[str, Any] | list[Any],
        *,
        env: Mapping[str, str] | None = None,
        connectors: Mapping[str, Connector] | None = None,
        http_transport: HttpTransport | None = None,
        clock: Clock | None = None,
        max_steps: int = 100_000,
    ) -> None:
        doc = yaml.safe_load(source) if isinstance(source, str) else source
        if isinstance(doc, list):
            doc = {"main": {"steps": doc}}
        if not isinstance(doc, dict) or "main" not in doc:
            raise UnsupportedConstruct("a workflow is a list of steps or a map with 'main'")
        self.workflows: dict[str, dict[str, Any]] = {}
        for name, body in doc.items():
            if not isinstance(body, dict) or set(body) - {"params", "steps"} or "steps" not in body:
                raise UnsupportedConstruct(f"subworkflow {name!r} must have 'steps' (and 'params')")
            self.workflows[str(name)] = body
        self.env = dict(env or {})
        self.connectors = dict(connectors or {})
        self.http_transport = http_transport or urllib_transport
        self.clock = clock or Clock()
        self.max_steps = max_steps
        self._count = 0
        self._trace: list[str] = []
        self._logs: list[Any] = []
        self._scopes: list[dict[str, Any]] = []
        self.peak_data_bytes = 0

    # -- entry point

    def run(self, argument: Any = None) -> Execution:
        self._count = 0
        self._trace = []
        self._logs = []
        self._scopes = []
        self.peak_data_bytes = 0
        main = self.workflows["main"]
        params = main.get("params") or []
        if len(params) > 1:
            raise UnsupportedConstruct("main takes at most one parameter (the runtime argument)")
        args = {}
        if params:
            name = params[0] if isinstance(params[0], str) else next(iter(params[0]))
            args[name] = argument
        try:
            result = self._run_workflow("main", args, [])
        except WorkflowError as exc:
            return Execution(
                "FAILED",
                error=exc.payload,
                steps=self._trace,
                logs=self._logs,
                peak_data_bytes=self.peak_data_bytes,
            )
        return Execution(
            "SUCCEEDED",
            result=result,
            steps=self._trace,
            logs=self._logs,
            peak_data_bytes=self.peak_data_bytes,
        )

    # -- subworkflows

    def _run_workflow(self, name: str, args: dict[str, Any], positional: list[Any]) -> Any:
        body = self.workflows[name]
        scope: dict[str, Any] = {}
        declared = body.get("params") or []
        for param in declared:
            if isinstance(param, str):
                pname, has_default, default = param, False, None
            elif isinstance(param, dict) and len(param) == 1:
                pname, default = next(iter(param.items()))
                has_default = True
            else:
                raise UnsupportedConstruct(f"bad parameter {param!r} in {name}")
            if pname in args:
                scope[pname] = args.pop(pname)
            elif has_default:
                scope[pname] = default
            else:
                raise error("TypeError", f"{name}: missing argument {pname!r}")
        if args:
            raise error("TypeError", f"{name}: unexpected argument(s) {sorted(args)}")
        prefix = "" if name == "main" else f"{name}."
        self._scopes.append(scope)
        self._check_data()
        try:
            self._run_steps(body["steps"], scope, prefix)
        except _Return as ret:
            return ret.value
        except _End:
            return None
        except _Jump as jump:
            raise UnsupportedConstruct(f"next: {jump.target!r}: no such step in {name}") from None
        except _LoopControl as ctl:
            raise UnsupportedConstruct(f"next: {ctl.kind} outside a for loop in {name}") from None
        finally:
            self._scopes.pop()
        return None

    def data_bytes(self) -> int:
        """What the running (sub)workflows' variables take, as :data:`DATA_BYTES` counts."""
        return sum(len(json.dumps(s, default=str, separators=(",", ":"))) for s in self._scopes)

    def _check_data(self) -> None:
        used = self.data_bytes()
        self.peak_data_bytes = max(self.peak_data_bytes, used)
        if used > DATA_BYTES:
            raise error(
                "ResourceLimitError",
                f"Memory usage limit exceeded: variables take {used:,} bytes, above {DATA_BYTES:,}",
            )

    # -- steps

    def _run_steps(self, steps: Any, scope: dict[str, Any], prefix: str) -> None:
        if not isinstance(steps, list) or not steps:
            raise UnsupportedConstruct(f"'steps' must be a non-empty list, got {steps!r}")
        names = []
        for step in steps:
            if not isinstance(step, dict) or len(step) != 1:
                raise UnsupportedConstruct(f"a step is a one-key map {{name: body}}, got {step!r}")
            names.append(next(iter(step)))
        if len(set(names)) != len(names):
            raise UnsupportedConstruct(f"duplicate step names in {names}")
        index = 0
        while index < len(steps):
            name = names[index]
            body = steps[index][name]
            try:
                target = self._run_step(str(name), body, scope, prefix)
            except _Jump as jump:
                if jump.target in names:
                    index = names.index(jump.target)
                    continue
                raise
            if target is None:
                index += 1
            elif target == "end":
                raise _End()
            elif target in ("break", "continue"):
                raise _LoopControl(target)
            elif target in names:
                index = names.index(target)
            else:
                raise _Jump(target)

    _STEP_KINDS = ("assign", "call", "switch", "for", "try", "raise", "return", "steps", "parallel")

    def _run_step(self, name: str, body: Any, scope: dict[str, Any], prefix: str) -> str | None:
        """Runs one step; returns the ``next`` target, if any."""
        self._count += 1
        if self._count > self.max_steps:
            raise error("ResourceLimitError", f"more than {self.max_steps} steps")
        self._trace.append(prefix + name)
        if not isinstance(body, dict):
            raise UnsupportedConstruct(f"step {name!r}: body must be a map")
        kinds = [k for k in body if k in self._STEP_KINDS]
        allowed_extra = {
            "assign": {"next"},
            "call": {"args", "result", "next"},
            "switch": {"next"},
            "for": set(),
            "try": {"retry", "except", "next"},
            "raise": set(),
            "return": set(),
            "steps": {"next"},
        }
        if not kinds:
            if set(body) == {"next"}:
                return str(body["next"])
            raise UnsupportedConstruct(f"step {name!r}: unknown step kind {sorted(body)}")
        if len(kinds) > 1:
            raise UnsupportedConstruct(f"step {name!r}: more than one step kind {kinds}")
        kind = kinds[0]
        if kind == "parallel":
            raise UnsupportedConstruct(f"step {name!r}: 'parallel' is not supported")
        extra = set(body) - {kind} - allowed_extra[kind]
        if extra:
            raise UnsupportedConstruct(
                f"step {name!r}: unsupported keys {sorted(extra)} for {kind}"
            )
        nxt = body.get("next")
        if kind == "assign":
            self._assign(body["assign"], scope)
        elif kind == "call":
            self._call_step(name, body, scope)
        elif kind == "switch":
            target = self._switch(name, body["switch"], scope, prefix)
            if target is not None:
                return target
        elif kind == "for":
            self._for(name, body["for"], scope, prefix)
        elif kind == "try":
            self._try(name, body, scope, prefix)
        elif kind == "raise":
            raise WorkflowError(self.evaluate(body["raise"], scope))
        elif kind == "return":
            raise _Return(self.evaluate(body["return"], scope))
        elif kind == "steps":
            self._run_steps(body["steps"], scope, prefix)
        return None if nxt is None else str(nxt)

    def _assign(self, assignments: Any, scope: dict[str, Any]) -> None:
        if not isinstance(assignments, list):
            raise UnsupportedConstruct("'assign' takes a list of one-key maps")
        for item in assignments:
            if not isinstance(item, dict) or len(item) != 1:
                raise UnsupportedConstruct(f"bad assignment {item!r}")
            target, raw = next(iter(item.items()))
            value = self.evaluate(raw, scope)
            self._store(str(target), value, scope)
            self._check_data()

    def _store(self, target: str, value: Any, scope: dict[str, Any]) -> None:
        """``name``, ``name.key``, ``name[expr]`` and chains of them."""
        parser = _Parser(target)
        node = parser.parse()
        if node[0] == "var":
            scope[node[1]] = value
            return
        if node[0] not in ("attr", "index"):
            raise UnsupportedConstruct(f"cannot assign to {target!r}")
        container = self._eval_node(node[1], scope)
        key = node[2] if node[0] == "attr" else self._eval_node(node[2], scope)
        if isinstance(container, dict) and isinstance(key, str):
            container[key] = value
        elif isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool):
            if not -len(container) <= key < len(container):
                raise error("IndexError", f"list index {key} out of range in {target!r}")
            container[key] = value
        else:
            raise error("TypeError", f"cannot assign {target!r} on a {type_name(container)}")

    def _switch(self, name: str, cases: Any, scope: dict[str, Any], prefix: str) -> str | None:
        if not isinstance(cases, list) or not cases:
            raise UnsupportedConstruct(f"step {name!r}: 'switch' takes a non-empty list")
        for case in cases:
            if not isinstance(case, dict) or "condition" not in case:
                raise UnsupportedConstruct(f"step {name!r}: each switch case needs 'condition'")
            actions = set(case) - {"condition"}
            if len(actions) != 1 or not actions <= {"next", "steps", "return", "raise"}:
                raise UnsupportedConstruct(
                    f"step {name!r}: a switch case takes exactly one of next/steps/return/raise, got {sorted(actions)}"
                )
            condition = self.evaluate(case["condition"], scope)
            if not isinstance(condition, bool):
                raise error(
                    "TypeError", f"step {name!r}: condition is {type_name(condition)}, not boolean"
                )
            if not condition:
                continue
            if "next" in case:
                return str(case["next"])
            if "steps" in case:
                self._run_steps(case["steps"], scope, prefix)
            elif "return" in case:
                raise _Return(self.evaluate(case["return"], scope))
            else:
                raise WorkflowError(self.evaluate(case["raise"], scope))
            return None
        return None

    def _for(self, name: str, spec: Any, scope: dict[str, Any], prefix: str) -> None:
        if not isinstance(spec, dict) or "value" not in spec or "steps" not in spec:
            raise UnsupportedConstruct(f"step {name!r}: 'for' needs value and steps")
        extra = set(spec) - {"value", "index", "in", "range", "steps"}
        if extra or ("in" in spec) == ("range" in spec):
            raise UnsupportedConstruct(
                f"step {name!r}: 'for' takes 'in' or 'range' (got {sorted(spec)})"
            )
        if "in" in spec:
            items = self.evaluate(spec["in"], scope)
            if isinstance(items, dict):
                raise error("TypeError", f"step {name!r}: iterate over keys(map), not a map")
            if not isinstance(items, list):
                raise error("TypeError", f"step {name!r}: cannot iterate over {type_name(items)}")
            items = list(items)
        else:
            bounds = self.evaluate(spec["range"], scope)
            if not (
                isinstance(bounds, list) and len(bounds) == 2 and all(_number(b) for b in bounds)
            ):
                raise error("TypeError", f"step {name!r}: range is [start, end]")
            items = list(range(int(bounds[0]), int(bounds[1]) + 1))
        before = set(scope)
        loop_vars = {spec["value"], *([spec["index"]] if "index" in spec else [])}
        try:
            for position, item in enumerate(items):
                scope[spec["value"]] = item
                if "index" in spec:
                    scope[spec["index"]] = position
                try:
                    self._run_steps(spec["steps"], scope, prefix)
                except _LoopControl as ctl:
                    if ctl.kind == "break":
                        break
        finally:
            # Variables created inside the loop do not exist after it (Workflows scoping).
            for var in set(scope) - before:
                del scope[var]
            for var in loop_vars - before:
                scope.pop(var, None)

    def _try(self, name: str, body: dict[str, Any], scope: dict[str, Any], prefix: str) -> None:
        block = body["try"]
        policy = self._retry_policy(name, body.get("retry"), scope)
        handler = body.get("except")
        if handler is not None and (
            not isinstance(handler, dict)
            or set(handler) - {"as", "steps"}
            or "steps" not in handler
        ):
            raise UnsupportedConstruct(f"step {name!r}: 'except' takes 'as' and 'steps'")
        attempt = 0
        while True:
            try:
                if isinstance(block, dict) and "steps" in block and len(block) == 1:
                    self._run_steps(block["steps"], scope, prefix)
                elif isinstance(block, dict) and "call" in block:
                    if set(block) - {"call", "args", "result"}:
                        raise UnsupportedConstruct(f"step {name!r}: try takes steps or one call")
                    self._call_step(name, block, scope)
                else:
                    raise UnsupportedConstruct(f"step {name!r}: try takes 'steps' or a 'call'")
                return
            except WorkflowError as exc:
                if (
                    policy is not None
                    and attempt < policy["max_retries"]
                    and self._predicate(policy["predicate"], exc.payload)
                ):
                    delay = min(
                        policy["initial_delay"] * policy["multiplier"] ** attempt,
                        policy["max_delay"],
                    )
                    attempt += 1
                    self.clock.sleep(delay)
                    continue
                if handler is None:
                    raise
                if "as" in handler:
                    scope[str(handler["as"])] = exc.payload
                self._run_steps(handler["steps"], scope, prefix)
                return

    def _retry_policy(self, name: str, raw: Any, scope: dict[str, Any]) -> dict[str, Any] | None:
        if raw is None:
            return None
        if is_expression(raw):
            value = self.evaluate(raw, scope)
            if not isinstance(value, dict):
                raise UnsupportedConstruct(
                    f"step {name!r}: retry policy must be a policy, got {value!r}"
                )
            return value
        if not isinstance(raw, dict) or set(raw) - {"predicate", "max_retries", "backoff"}:
            raise UnsupportedConstruct(
                f"step {name!r}: retry takes predicate, max_retries, backoff"
            )
        backoff = raw.get("backoff") or {}
        if set(backoff) - set(_DEFAULT_BACKOFF):
            raise UnsupportedConstruct(f"step {name!r}: backoff takes {sorted(_DEFAULT_BACKOFF)}")
        predicate = self.evaluate(raw["predicate"], scope)
        if not isinstance(predicate, Function):
            raise UnsupportedConstruct(f"step {name!r}: retry predicate must be a function")
        max_retries = self.evaluate(raw.get("max_retries", 0), scope)
        return {
            "predicate": predicate,
            "max_retries": int(max_retries),
            **{
                k: float(self.evaluate(backoff.get(k, v), scope))
                for k, v in _DEFAULT_BACKOFF.items()
            },
        }

    def _predicate(self, predicate: Function, payload: Any) -> bool:
        if predicate.name in _PREDICATES:
            return _PREDICATES[predicate.name](payload)
        if predicate.name in self.workflows:
            params = self.workflows[predicate.name].get("params") or []
            if len(params) != 1:
                raise UnsupportedConstruct(f"predicate {predicate.name} must take one parameter")
            pname = params[0] if isinstance(params[0], str) else next(iter(params[0]))
            result = self._run_workflow(predicate.name, {pname: payload}, [])
            if not isinstance(result, bool):
                raise error("TypeError", f"predicate {predicate.name} returned {type_name(result)}")
            return result
        raise UnsupportedConstruct(f"unknown retry predicate {predicate.name!r}")

    # -- calls

    def _call_step(self, name: str, body: dict[str, Any], scope: dict[str, Any]) -> None:
        target = body["call"]
        if not isinstance(target, str):
            raise UnsupportedConstruct(f"step {name!r}: 'call' takes a function name")
        raw_args = body.get("args") or {}
        if not isinstance(raw_args, dict):
            raise UnsupportedConstruct(f"step {name!r}: 'args' must be a map")
        args = {str(k): self.evaluate(v, scope) for k, v in raw_args.items()}
        if target in self.workflows:
            value = self._run_workflow(target, args, [])
        elif target.startswith("http."):
            value = self._http(target, args)
        elif target == "sys.log":
            self._logs.append(args.get("data", args.get("text", args.get("json"))))
            value = None
        elif target == "sys.sleep":
            self.clock.sleep(float(args["seconds"]))
            value = None
        elif target.startswith("googleapis."):
            spec = CONNECTORS.get(target)
            if spec is None:
                raise UnsupportedConstruct(
                    f"step {name!r}: {target} is not in this interpreter's connector table "
                    "(add it from Google's connector reference)"
                )
            spec.check(name, target, args)
            connector = self.connectors.get(target)
            if connector is None:
                raise UnsupportedConstruct(
                    f"step {name!r}: no stand-in for connector {target}; available: "
                    + (", ".join(sorted(self.connectors)) or "none")
                )
            value = self._with_connector_retries(spec, connector, args)
        elif target in FUNCTIONS:
            value = FUNCTIONS[target](self, *args.values()) if args else FUNCTIONS[target](self)
        else:
            raise UnsupportedConstruct(f"step {name!r}: unknown function {target!r}")
        if "result" in body:
            scope[str(body["result"])] = value
            self._check_data()

    def _with_connector_retries(
        self, spec: ConnectorSpec, connector: Connector, args: dict[str, Any]
    ) -> Any:
        """A connector call with the retries every connector applies on its own ("Understand
        connectors", cloud.google.com/workflows/docs/connectors, Retries): the idempotent policy
        (``http.default_retry``) for GET requests, the non-idempotent one
        (``http.default_retry_non_idempotent``: 429, 503 and ConnectionFailedError) for every
        other method; both 5 retries with ``retry.default_backoff``. Only what is still failing
        after them reaches the workflow (the reference pages: "HttpError If the response status
        is >= 400 (excluding 429 and 503)")."""
        predicate = (
            _http_retry_predicate if spec.method == "GET" else _http_retry_predicate_non_idempotent
        )
        attempt = 0
        while True:
            try:
                return connector(args)
            except WorkflowError as exc:
                if attempt >= _CONNECTOR_MAX_RETRIES or not predicate(exc.payload):
                    raise
                delay = min(
                    _DEFAULT_BACKOFF["initial_delay"] * _DEFAULT_BACKOFF["multiplier"] ** attempt,
                    _DEFAULT_BACKOFF["max_delay"],
                )
                attempt += 1
                self.clock.sleep(delay)

    def _http(self, target: str, args: dict[str, Any]) -> dict[str, Any]:
        """One HTTP request. Unlike connectors, ``http.*`` calls have no retries of their own:
        a step retries only under its ``retry`` policy (Google's "Retry steps" reference), which
        ``_try`` applies."""
        methods = {
            "http.get": "GET",
            "http.post": "POST",
            "http.put": "PUT",
            "http.patch": "PATCH",
            "http.delete": "DELETE",
        }
        allowed = {"url", "headers", "body", "query", "auth", "timeout"}
        if target == "http.request":
            allowed.add("method")
            method = str(args.get("method", "GET")).upper()
        elif target in methods:
            method = methods[target]
        else:
            raise UnsupportedConstruct(f"unknown HTTP function {target!r}")
        extra = set(args) - allowed
        if extra:
            raise UnsupportedConstruct(f"{target}: unsupported args {sorted(extra)}")
        url = args.get("url")
        if not isinstance(url, str) or not url:
            raise error("TypeError", f"{target}: url must be a non-empty string")
        timeout = args.get("timeout", _MAX_HTTP_TIMEOUT)
        if not _number(timeout) or not 0 < timeout <= _MAX_HTTP_TIMEOUT:
            raise error("ValueError", f"{target}: timeout must be 1..{_MAX_HTTP_TIMEOUT} seconds")
        headers = {str(k): str(v) for k, v in (args.get("headers") or {}).items()}
        query = args.get("query")
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(
                {k: v if isinstance(v, str) else json.dumps(v) for k, v in query.items()}
            )
        auth = args.get("auth")
        if auth is not None:
            if not isinstance(auth, dict) or auth.get("type") not in ("OIDC", "OAuth2"):
                raise UnsupportedConstruct(f"{target}: auth.type must be OIDC or OAuth2")
            audience = auth.get("audience", args["url"])
            # Stand-in for the token Workflows mints for its service account.
            headers["Authorization"] = f"Bearer local-{auth['type'].lower()}-token aud={audience}"
        data: bytes | None = None
        if "body" in args and args["body"] is not None:
            body = args["body"]
            if isinstance(body, bytes):
                data = body
            else:
                data = json.dumps(body).encode()
                headers.setdefault("Content-Type", "application/json; charset=utf-8")
        code, resp_headers, raw = self.http_transport(method, url, headers, data, float(timeout))
        lowered = {k.lower(): v for k, v in resp_headers.items()}
        content_type = lowered.get("content-type", "")
        body_value: Any
        if "json" in content_type and raw:
            body_value = json.loads(raw)
        elif content_type.startswith("text/") or not raw:
            body_value = raw.decode("utf-8", errors="replace")
        else:
            body_value = raw
        if code >= 400:
            raise error(
                "HttpError",
                f"HTTP server responded with error code {code}",
                code=code,
                headers=lowered,
                body=body_value,
            )
        return {"code": code, "headers": lowered, "body": body_value}

    # -- expressions

    def evaluate(self, raw: Any, scope: dict[str, Any]) -> Any:
        """Evaluates a value from the YAML: expressions, and maps/lists holding them."""
        if isinstance(raw, str):
            match = _EXPR.match(raw.strip())
            if match:
                return self._eval_node(_Parser(match.group("body")).parse(), scope)
            if "${" in raw:
                raise UnsupportedConstruct(
                    f"{raw!r}: an expression must be the whole value, e.g. '${{\"a\" + b}}'"
                )
            return raw
        if isinstance(raw, dict):
            return {str(k): self.evaluate(v, scope) for k, v in raw.items()}
        if isinstance(raw, list):
            return [self.evaluate(v, scope) for v in raw]
        return raw

    def _eval_node(self, node: Any, scope: dict[str, Any]) -> Any:
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "var":
            name = node[1]
            if name in scope:
                return scope[name]
            if name in self.workflows:
                return Function(name)
            raise error("KeyError", f"variable {name!r} is not defined")
        if kind == "attr":
            dotted = _dotted_name(node)
            if (
                dotted is not None
                and dotted.split(".")[0] not in scope
                and (dotted in _PREDICATES or dotted in _POLICIES)
            ):
                return _POLICIES[dotted]() if dotted in _POLICIES else Function(dotted)
            base = self._eval_node(node[1], scope)
            if not isinstance(base, dict):
                raise error("TypeError", f"cannot read .{node[2]} of a {type_name(base)}")
            if node[2] not in base:
                raise error("KeyError", f"key {node[2]!r} not found")
            return base[node[2]]
        if kind == "index":
            base = self._eval_node(node[1], scope)
            key = self._eval_node(node[2], scope)
            if isinstance(base, dict):
                if not isinstance(key, str):
                    raise error("TypeError", f"map keys are strings, got {type_name(key)}")
                if key not in base:
                    raise error("KeyError", f"key {key!r} not found")
                return base[key]
            if isinstance(base, list):
                if not isinstance(key, int) or isinstance(key, bool):
                    raise error("TypeError", f"list index must be an integer, got {type_name(key)}")
                if not -len(base) <= key < len(base):
                    raise error("IndexError", f"list index {key} out of range")
                return base[key]
            raise error("TypeError", f"cannot index a {type_name(base)}")
        if kind == "call":
            name = node[1]
            if name in FUNCTIONS:
                args = [self._eval_node(a, scope) for a in node[2]]
                return FUNCTIONS[name](self, *args)
            if name in BLOCKING or name.startswith("googleapis.") or name in self.workflows:
                raise UnsupportedConstruct(f"{name} is a blocking call: use it in a call step")
            raise UnsupportedConstruct(f"unknown function {name!r}")
        if kind == "list":
            return [self._eval_node(n, scope) for n in node[1]]
        if kind == "map":
            out = {}
            for key_node, value_node in node[1]:
                key = self._eval_node(key_node, scope)
                if not isinstance(key, str):
                    raise error("TypeError", "map keys must be strings")
                out[key] = self._eval_node(value_node, scope)
            return out
        if kind == "unary":
            value = self._eval_node(node[2], scope)
            if node[1] == "not":
                if not isinstance(value, bool):
                    raise error("TypeError", f"'not' needs a boolean, got {type_name(value)}")
                return not value
            if not _number(value):
                raise error("TypeError", f"unary '-' needs a number, got {type_name(value)}")
            return -value
        if kind == "bin":
            return self._binary(node[1], node[2], node[3], scope)
        raise UnsupportedConstruct(f"unknown expression node {kind}")

    def _binary(self, op: str, left_node: Any, right_node: Any, scope: dict[str, Any]) -> Any:
        left = self._eval_node(left_node, scope)
        if op in ("and", "or"):
            if not isinstance(left, bool):
                raise error("TypeError", f"'{op}' needs booleans, got {type_name(left)}")
            if (op == "and" and not left) or (op == "or" and left):
                return left  # short-circuit
            right = self._eval_node(right_node, scope)
            if not isinstance(right, bool):
                raise error("TypeError", f"'{op}' needs booleans, got {type_name(right)}")
            return right
        right = self._eval_node(right_node, scope)
        if op == "in":
            if isinstance(right, list):
                return any(_equal(left, item) for item in right)
            if isinstance(right, dict):
                if not isinstance(left, str):
                    raise error("TypeError", "'in' a map needs a string key")
                return left in right
            raise error("TypeError", f"'in' needs a list or map, got {type_name(right)}")
        if op in ("==", "!="):
            same = _equal(left, right)
            return same if op == "==" else not same
        if op in ("<", "<=", ">", ">="):
            if not (
                (_number(left) and _number(right))
                or (isinstance(left, str) and isinstance(right, str))
            ):
                raise error("TypeError", f"cannot compare {type_name(left)} and {type_name(right)}")
            return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[
                op
            ]
        if op == "+":
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if _number(left) and _number(right):
                return left + right
            raise error("TypeError", f"cannot add {type_name(left)} and {type_name(right)}")
        if not (_number(left) and _number(right)):
            raise error(
                "TypeError", f"'{op}' needs numbers, got {type_name(left)} and {type_name(right)}"
            )
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if right == 0:
            raise error("ZeroDivisionError", f"division by zero in '{op}'")
        if op == "/":
            return left / right
        if op == "//":
            return (
                math.floor(left / right)
                if isinstance(left, float) or isinstance(right, float)
                else left // right
            )
        return (
            math.fmod(left, right)
            if isinstance(left, float) or isinstance(right, float)
            else left % right
        )


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _number(left) and _number(right):
        return bool(left == right)
    if type(left) is not type(right):
        return False
    return bool(left == right)


# -- HTTP -------------------------------------------------------------------------------------


def urllib_transport(
    method: str, url: str, headers: dict[str, str], data: bytes | None, timeout: float
) -> tuple[int, dict[str, str], bytes]:
    """Real HTTP with the standard library; errors become Workflows error payloads."""
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise error("TimeoutError", f"{method} {url}: timed out") from None
        raise error("ConnectionFailedError", f"{method} {url}: {exc.reason}") from None
    except TimeoutError:
        raise error("TimeoutError", f"{method} {url}: timed out") from None
    except ConnectionError as exc:
        raise error("ConnectionError", f"{method} {url}: {exc}") from None


# -- standard library -------------------------------------------------------------------------


def _http_retry_predicate(payload: Any) -> bool:
    tags = tags_of(payload)
    if {"ConnectionError", "ConnectionFailedError", "TimeoutError"} & set(tags):
        return True
    return "HttpError" in tags and payload.get("code") in _IDEMPOTENT_CODES


def _http_retry_predicate_non_idempotent(payload: Any) -> bool:
    tags = tags_of(payload)
    if "ConnectionFailedError" in tags:
        return True
    return "HttpError" in tags and payload.get("code") in _NON_IDEMPOTENT_CODES


_PREDICATES: dict[str, Callable[[Any], bool]] = {
    "http.default_retry_predicate": _http_retry_predicate,
    "http.default_retry_predicate_non_idempotent": _http_retry_predicate_non_idempotent,
    "retry.always": lambda payload: True,
    "retry.never": lambda payload: False,
}

_POLICIES: dict[str, Callable[[], dict[str, Any]]] = {
    "http.default_retry": lambda: {
        "predicate": Function("http.default_retry_predicate"),
        "max_retries": 5,
        **_DEFAULT_BACKOFF,
    },
    "http.default_retry_non_idempotent": lambda: {
        "predicate": Function("http.default_retry_predicate_non_idempotent"),
        "max_retries": 5,
        **_DEFAULT_BACKOFF,
    },
}

BLOCKING = {
    "http.get",
    "http.post",
    "http.put",
    "http.patch",
    "http.delete",
    "http.request",
    "sys.log",
    "sys.sleep",
}


_CONNECTOR_PARAMS = {"timeout", "polling_policy", "skip_polling", "scopes"}
_POLLING_POLICY = {"initial_delay", "multiplier", "max_delay"}


@dataclass(frozen=True)
class ConnectorSpec:
    """One connector method as Google's connector reference lists it
    (cloud.google.com/workflows/docs/reference/googleapis/SERVICE/VERSION/RESOURCE/METHOD):
    its arguments, the required ones, and the HTTP method behind it (which decides its
    built-in retry policy). ``connector_params`` is allowed on every connector call."""

    method: str
    arguments: frozenset[str]
    required: frozenset[str]

    def check(self, step: str, target: str, args: dict[str, Any]) -> None:
        unknown = sorted(set(args) - self.arguments - {"connector_params"})
        if unknown:
            raise UnsupportedConstruct(
                f"step {step!r}: {target} has no argument {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(sorted(self.arguments))} (and connector_params)"
            )
        missing = sorted(self.required - set(args))
        if missing:
            raise UnsupportedConstruct(
                f"step {step!r}: {target} needs {', '.join(map(repr, missing))}"
            )
        params = args.get("connector_params")
        if params is None:
            return
        if not isinstance(params, dict) or set(params) - _CONNECTOR_PARAMS:
            extra = sorted(set(params) - _CONNECTOR_PARAMS) if isinstance(params, dict) else params
            raise UnsupportedConstruct(
                f"step {step!r}: connector_params takes {', '.join(sorted(_CONNECTOR_PARAMS))}; "
                f"got {extra!r}"
            )
        policy = params.get("polling_policy")
        if policy is not None and (not isinstance(policy, dict) or set(policy) - _POLLING_POLICY):
            raise UnsupportedConstruct(
                f"step {step!r}: polling_policy takes {', '.join(sorted(_POLLING_POLICY))}; "
                f"got {policy!r}"
            )


def _connector(method: str, required: str, optional: str = "") -> ConnectorSpec:
    req = frozenset(required.split())
    return ConnectorSpec(method, req | frozenset(optional.split()), req)


_FIRESTORE = "googleapis.firestore.v1.projects.databases.documents"

CONNECTORS: dict[str, ConnectorSpec] = {
    # bigquery/v2/jobs/insert
    "googleapis.bigquery.v2.jobs.insert": _connector("POST", "projectId body"),
    # cloudbuild/v1/projects.locations.builds/create
    "googleapis.cloudbuild.v1.projects.locations.builds.create": _connector(
        "POST", "parent projectId body"
    ),
    # firestore/v1/projects.databases.documents/{createDocument,get,patch}
    f"{_FIRESTORE}.createDocument": _connector(
        "POST", "parent collectionId body", "documentId mask.fieldPaths"
    ),
    f"{_FIRESTORE}.get": _connector("GET", "name", "mask.fieldPaths readTime transaction"),
    f"{_FIRESTORE}.patch": _connector(
        "PATCH",
        "name body",
        "currentDocument.exists currentDocument.updateTime mask.fieldPaths updateMask.fieldPaths",
    ),
}
"""The connector methods this interpreter knows, with their arguments from Google's reference."""


def _need(name: str, value: Any, *kinds: type) -> None:
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise error("TypeError", f"{name}: expected {expected}, got {type_name(value)}")


def _default(it: Interpreter, value: Any, fallback: Any) -> Any:
    return fallback if value is None else value


def _len(it: Interpreter, value: Any) -> int:
    _need("len", value, str, list, dict)
    return len(value)


def _keys(it: Interpreter, value: Any) -> list[str]:
    _need("keys", value, dict)
    return list(value)


def _int(it: Interpreter, value: Any) -> int:
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise error("ValueError", f"int: cannot convert {value!r}") from None
    _need("int", value, int, float)
    return int(value)


def _double(it: Interpreter, value: Any) -> float:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise error("ValueError", f"double: cannot convert {value!r}") from None
    _need("double", value, int, float)
    return float(value)


def _string(it: Interpreter, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    _need("string", value, str, int, float)
    return str(value)


def _map_get(it: Interpreter, mapping: Any, keys: Any) -> Any:
    path = keys if isinstance(keys, list) else [keys]
    current = mapping
    for key in path:
        _need("map.get key", key, str)
        if current is None:
            return None
        _need("map.get", current, dict)
        current = current.get(key)
    return current


def _map_merge(it: Interpreter, first: Any, second: Any) -> dict[str, Any]:
    _need("map.merge", first, dict)
    _need("map.merge", second, dict)
    return {**first, **second}


def _list_concat(it: Interpreter, items: Any, value: Any) -> list[Any]:
    _need("list.concat", items, list)
    return [*items, value]


def _match_regex(it: Interpreter, source: Any, pattern: Any) -> bool:
    _need("text.match_regex", source, str)
    _need("text.match_regex", pattern, str)
    return re.search(pattern, source) is not None


def _url_encode(it: Interpreter, source: Any) -> str:
    _need("text.url_encode", source, str)
    return urllib.parse.quote(source, safe="")


def _json_decode(it: Interpreter, data: Any) -> Any:
    _need("json.decode", data, str, bytes)
    try:
        return json.loads(data)
    except ValueError as exc:
        raise error("ValueError", f"json.decode: {exc}") from None


def _json_encode_to_string(it: Interpreter, value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


_NO_DEFAULT = object()


def _get_env(it: Interpreter, name: Any, default: Any = _NO_DEFAULT) -> str:
    """The named variable, else ``default`` (Google's reference: "the string value to return
    if the named variable is not set"; a TypeError when either is not a string). Without a
    default an unset variable is an error here: benchmark.yaml must not read one it lacks."""
    _need("sys.get_env", name, str)
    if default is not _NO_DEFAULT:
        _need("sys.get_env default", default, str)
    if name in it.env:
        return it.env[name]
    if default is not _NO_DEFAULT:
        return str(default)
    raise error("KeyError", f"sys.get_env: environment variable {name!r} is not set")


def _now(it: Interpreter) -> float:
    return it.clock.now()


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "default": _default,
    "double": _double,
    "int": _int,
    "json.decode": _json_decode,
    "json.encode_to_string": _json_encode_to_string,
    "keys": _keys,
    "len": _len,
    "list.concat": _list_concat,
    "map.get": _map_get,
    "map.merge": _map_merge,
    "string": _string,
    "sys.get_env": _get_env,
    "sys.now": _now,
    "text.match_regex": _match_regex,
    "text.url_encode": _url_encode,
}
"""The standard library functions this interpreter knows (usable in expressions)."""
