"""JMeter test plans (``.jmx``) as gatebench workloads.

What is read, and what it becomes (docs/input.md, "From your traffic"):

- **Thread groups** (``ThreadGroup``): threads, ramp-up, loops or a scheduled duration. Each
  HTTP sampler of a group becomes a workload with the group's threads as concurrent users and
  its request count (threads × loops) or duration. gatebench measures one operation at a
  time, so each sampler meets all the group's users (JMeter spreads them over its samplers).
  The longest ramp-up becomes the plan's warm-up (excluded from the statistics).
- **HTTP samplers** (``HTTPSamplerProxy``): method, path (a full URL keeps its path: the
  target is each gateway), arguments (the query of a GET, a form body otherwise), a raw body.
  Matched to the description's operations like any request.
- **CSV data sets** (``CSVDataSet``): their columns give the ``${variables}`` of the samplers
  values, in file order (JMeter's default); the file is read beside the plan, never elsewhere.
- **Constant timers** and **constant throughput timers**: a sampler under a pause or a target
  throughput becomes an open-model constant rate: threads / (the pauses of one pass over the
  group's samplers), or the throughput timer's target (per thread or shared, as its mode says),
  divided over the group's samplers. The response time, unknown before the run, is not
  subtracted: JMeter's own rate is that much lower.
- ``TestPlan`` user-defined variables are substituted where the samplers use them.

Every other element (controllers, header and cookie managers, assertions, extractors,
listeners, other samplers...) is listed with its name and place and left out with everything
inside it, never guessed. The XML is read with expat; a document type or an entity
declaration is refused (JMeter writes neither), so nothing is ever expanded or fetched.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.parsers.expat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urlsplit

from gatebench.core.errors import Problem
from gatebench.core.ir import Api, Operation
from gatebench.core.plan import OTHERS_PREFIX
from gatebench.core.stats import counted
from gatebench.core.synth import dereferenced, numbered, numbered_value
from gatebench.core.traffic._match import Matched, Matcher
from gatebench.core.traffic._plan import KeepValues, PlanResult, workload_name
from gatebench.core.traffic._stats import is_secret_name
from gatebench.core.traffic._yaml import one_line

MAX_JMX_BYTES = 64 * 1024 * 1024
MAX_ELEMENTS = 1_000_000
MAX_DEPTH = 256
MAX_CSV_BYTES = 16 * 1024 * 1024
MAX_CSV_VALUES = 10_000
_VAR = re.compile(r"\$\{([^{}]*)\}")
_PROPERTY_FUNCTION = re.compile(r"^\$\{__(?:P|property)\(\s*[^,()]*\s*,\s*([^,()]*?)\s*\)\}$")
SUPPORTED = (
    "TestPlan",
    "ThreadGroup",
    "HTTPSamplerProxy",
    "CSVDataSet",
    "ConstantTimer",
    "ConstantThroughputTimer",
)
_SCOPED = ("CSVDataSet", "ConstantTimer", "ConstantThroughputTimer")
"""What applies to every sampler of the level it stands in (``_Scope``)."""


class JmxError(ValueError):
    def __init__(self, pointer: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.message = message
        self.line = line


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Node] = field(default_factory=list)
    text: str = ""

    @property
    def name(self) -> str:
        return self.attrs.get("testname", self.tag)

    def props(self) -> dict[str, str]:
        """This element's simple properties: ``stringProp``, ``boolProp``, ``intProp``,
        ``longProp`` by their ``name``; ``doubleProp`` by its ``name`` child."""
        out: dict[str, str] = {}
        for child in self.children:
            if child.tag in ("stringProp", "boolProp", "intProp", "longProp", "floatProp"):
                out[child.attrs.get("name", "")] = child.text
            elif child.tag == "doubleProp":
                name = next((c.text for c in child.children if c.tag == "name"), "")
                value = next((c.text for c in child.children if c.tag == "value"), "")
                out[name] = value
        return out

    def element(self, name: str) -> Node | None:
        return next(
            (c for c in self.children if c.tag == "elementProp" and c.attrs.get("name") == name),
            None,
        )

    def collection(self, name: str) -> list[Node]:
        found = next(
            (c for c in self.children if c.tag == "collectionProp" and c.attrs.get("name") == name),
            None,
        )
        return [c for c in found.children if c.tag == "elementProp"] if found else []


def parse_xml(data: bytes) -> Node:
    """The document's element tree with line numbers; :class:`JmxError` for anything but
    plain XML within the limits."""
    parser = xml.parsers.expat.ParserCreate()
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    root: list[Node] = []
    stack: list[Node] = []
    count = [0]

    def refuse(*_args: Any) -> None:
        raise JmxError(
            "",
            "the document declares a document type or an entity; a JMeter plan has neither, "
            "and gatebench expands no entity",
            parser.CurrentLineNumber,
        )

    def start(tag: str, attrs: dict[str, str]) -> None:
        count[0] += 1
        if count[0] > MAX_ELEMENTS or len(stack) >= MAX_DEPTH:
            raise JmxError(
                "",
                f"more than {MAX_ELEMENTS:,} elements or {MAX_DEPTH} levels",
                parser.CurrentLineNumber,
            )
        node = Node(tag, dict(attrs), parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(_tag: str) -> None:
        stack.pop()

    def text(data: str) -> None:
        if stack:
            stack[-1].text += data

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse  # type: ignore[assignment]
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise JmxError(
            "", f"not XML: {xml.parsers.expat.errors.messages[exc.code]}", exc.lineno
        ) from None
    if not root or root[0].tag != "jmeterTestPlan":
        raise JmxError(
            "",
            f"not a JMeter plan: the root element is <{root[0].tag if root else ''}>, expected "
            "<jmeterTestPlan>",
            root[0].line if root else 1,
        )
    return root[0]


@dataclass(frozen=True)
class Unsupported:
    tag: str
    name: str
    line: int
    where: str
    inside: int
    """Elements inside it, left out with it."""
    reason: str = "not supported"

    def describe(self) -> str:
        more = f" and the {counted(self.inside, 'element')} inside it" if self.inside else ""
        return f"line {self.line}: {self.tag} {self.name!r} in {self.where}{more}: {self.reason}, left out"


@dataclass
class DataSet:
    """A CSV data set's columns (variable → values in file order)."""

    name: str
    line: int
    columns: dict[str, list[str]]


@dataclass
class Sampler:
    name: str
    line: int
    where: str
    method: str
    path: str
    arguments: list[tuple[str, str]]
    raw_body: str | None
    timers: list[tuple[str, float]]
    """("constant", delay s) or ("throughput", per minute, mode)."""
    throughput: tuple[float, int] | None
    data_sets: list[DataSet]


@dataclass
class Group:
    name: str
    line: int
    threads: int
    ramp_up: float
    loops: int | None
    """None: forever (the duration ends it)."""
    duration: float | None
    samplers: list[Sampler] = field(default_factory=list)


@dataclass(frozen=True)
class _Scope:
    """What applies to the samplers below a level of the plan (the plan, a thread group, a
    sampler): its constant timers' pauses, its data sets, and its throughput timer (an inner
    one replaces an outer one)."""

    timers: tuple[float, ...] = ()
    data_sets: tuple[DataSet, ...] = ()
    throughput: tuple[float, int] | None = None


@dataclass
class TestPlan:
    groups: list[Group]
    unsupported: list[Unsupported]
    notes: list[str]
    variables: dict[str, str]


def read_jmx(path: Path) -> TestPlan:
    data = path.read_bytes() if path.stat().st_size <= MAX_JMX_BYTES else None
    if data is None:
        raise JmxError("", f"the file holds more than {MAX_JMX_BYTES // 2**20} MB")
    root = parse_xml(data)
    return _Walker(path.parent).walk(root)


def _count(tree: Node) -> int:
    """The elements in a hashTree, and in theirs."""
    return sum(1 + (_count(sub) if sub is not None else 0) for _, sub in _elements(tree))


def _elements(tree: Node) -> list[tuple[Node, Node | None]]:
    """A hashTree's elements, each with the hashTree of its children."""
    out: list[tuple[Node, Node | None]] = []
    children = tree.children
    i = 0
    while i < len(children):
        node = children[i]
        subtree = (
            children[i + 1] if i + 1 < len(children) and children[i + 1].tag == "hashTree" else None
        )
        out.append((node, subtree))
        i += 2 if subtree is not None else 1
    return out


def _number(text: str, where: str, what: str, notes: list[str]) -> float:
    text = text.strip()
    function = _PROPERTY_FUNCTION.match(text)
    if function:
        notes.append(f"{where}: {what} is {text}: its default {function.group(1)!r} is used")
        text = function.group(1)
    try:
        return float(text) if text else 0.0
    except ValueError:
        raise JmxError("", f"{where}: {what} {text!r} is not a number") from None


class _Walker:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.unsupported: list[Unsupported] = []
        self.notes: list[str] = []
        self.variables: dict[str, str] = {}

    def walk(self, root: Node) -> TestPlan:
        top = next((c for c in root.children if c.tag == "hashTree"), None)
        if top is None:
            raise JmxError(
                "", "the plan holds no test plan (no hashTree under jmeterTestPlan)", root.line
            )
        groups: list[Group] = []
        for node, subtree in _elements(top):
            if node.tag != "TestPlan":
                self._leave_out(node, subtree, "the plan's root")
                continue
            self._variables(node)
            children = _elements(subtree) if subtree is not None else []
            scope = self._inner(_Scope(), children, "Test Plan")
            for child, below in children:
                if child.tag == "ThreadGroup" and self._enabled(child, "Test Plan"):
                    groups.append(self._group(child, below, scope))
                elif child.tag not in _SCOPED:
                    self._leave_out(child, below, "Test Plan")
        return TestPlan(groups, self.unsupported, self.notes, self.variables)

    def _enabled(self, node: Node, where: str) -> bool:
        if node.attrs.get("enabled", "true") == "false":
            self.notes.append(f"line {node.line}: {node.tag} {node.name!r} in {where} is disabled")
            return False
        return True

    def _leave_out(
        self, node: Node, subtree: Node | None, where: str, reason: str = "not supported"
    ) -> None:
        if node.tag == "hashTree":
            return
        if node.attrs.get("enabled", "true") == "false":
            self.notes.append(f"line {node.line}: {node.tag} {node.name!r} in {where} is disabled")
            return
        inside = _count(subtree) if subtree is not None else 0
        self.unsupported.append(Unsupported(node.tag, node.name, node.line, where, inside, reason))

    def _variables(self, plan: Node) -> None:
        udv = plan.element("TestPlan.user_defined_variables")
        if udv is None:
            return
        for arg in udv.collection("Arguments.arguments"):
            props = arg.props()
            name = props.get("Argument.name") or arg.attrs.get("name", "")
            if name:
                self.variables[name] = props.get("Argument.value", "")

    def _inner(
        self,
        outer: _Scope,
        elements: list[tuple[Node, Node | None]],
        where: str,
        *,
        leave_out_others: bool = False,
    ) -> _Scope:
        """``outer`` with the timers and data sets among ``elements`` (a level's) added; the
        other elements left out here too when ``leave_out_others`` (a sampler's)."""
        timers, data_sets, throughput = list(outer.timers), list(outer.data_sets), outer.throughput
        for child, below in elements:
            found = self._scoped(child, below, where)
            if found is None:
                if leave_out_others and child.tag not in _SCOPED:
                    self._leave_out(child, below, where)
                continue
            kind, value = found
            if kind == "timer":
                timers.append(value)
            elif kind == "throughput":
                throughput = value
            else:
                data_sets.append(value)
        return _Scope(tuple(timers), tuple(data_sets), throughput)

    def _scoped(self, node: Node, subtree: Node | None, where: str) -> tuple[str, Any] | None:
        """A timer or data set that applies to its scope, or None."""
        if node.tag in _SCOPED and not self._enabled(node, where):
            return None
        props = node.props()
        if node.tag == "ConstantTimer":
            delay = _number(
                props.get("ConstantTimer.delay", "0"), f"line {node.line}", "the delay", self.notes
            )
            return "timer", delay / 1000.0
        if node.tag == "ConstantThroughputTimer":
            per_minute = _number(
                props.get("throughput", "0"), f"line {node.line}", "the throughput", self.notes
            )
            mode = int(
                _number(props.get("calcMode", "0"), f"line {node.line}", "calcMode", self.notes)
            )
            return "throughput", (per_minute, mode)
        if node.tag == "CSVDataSet":
            return "data", self._data_set(node, props)
        return None

    def _data_set(self, node: Node, props: dict[str, str]) -> DataSet:
        where = f"line {node.line}: CSVDataSet {node.name!r}"
        name = props.get("filename", "")
        if not name or "${" in name:
            raise JmxError("", f"{where}: its filename {name!r} is not a file name", node.line)
        relative = PurePosixPath(name.replace("\\", "/"))
        if relative.is_absolute() or ".." in relative.parts or re.match(r"^[A-Za-z]:", name):
            raise JmxError(
                "",
                f"{where}: {name!r} is outside the plan's folder; gatebench reads a data set "
                "only beside the .jmx (copy it there)",
                node.line,
            )
        path = self.folder.joinpath(*relative.parts)
        try:
            resolved = path.resolve(strict=True)
            resolved.relative_to(self.folder.resolve())
        except (OSError, ValueError):
            raise JmxError("", f"{where}: no file {name!r} beside the plan", node.line) from None
        if resolved.stat().st_size > MAX_CSV_BYTES:
            raise JmxError(
                "", f"{where}: {name!r} holds more than {MAX_CSV_BYTES // 2**20} MB", node.line
            )
        text = resolved.read_bytes().decode(props.get("fileEncoding") or "utf-8", "replace")
        delimiter = props.get("delimiter", ",") or ","
        delimiter = "\t" if delimiter == "\\t" else delimiter[0]
        quoted = props.get("quotedData", "false") == "true"
        rows = list(
            csv.reader(
                io.StringIO(text),
                delimiter=delimiter,
                quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
            )
        )
        names_text = props.get("variableNames", "")
        if names_text:
            names = [n.strip() for n in names_text.split(delimiter if delimiter != "\t" else ",")]
            if props.get("ignoreFirstLine", "false") == "true":
                rows = rows[1:]
        else:
            names = [n.strip() for n in (rows[0] if rows else [])]
            rows = rows[1:]
        columns = {n: [r[i] for r in rows if i < len(r)] for i, n in enumerate(names) if n}
        return DataSet(node.name, node.line, columns)

    def _group(
        self,
        node: Node,
        subtree: Node | None,
        scope: _Scope,
    ) -> Group:
        props = node.props()
        where = f"line {node.line}: ThreadGroup {node.name!r}"
        threads = int(
            _number(props.get("ThreadGroup.num_threads", "1"), where, "the threads", self.notes)
        )
        ramp = _number(props.get("ThreadGroup.ramp_time", "0"), where, "the ramp-up", self.notes)
        loops: int | None = 1
        controller = node.element("ThreadGroup.main_controller")
        if controller is not None:
            cp = controller.props()
            if cp.get("LoopController.continue_forever") == "true" and cp.get(
                "LoopController.loops", "-1"
            ) in ("-1", ""):
                loops = None
            else:
                value = int(
                    _number(cp.get("LoopController.loops", "1"), where, "the loops", self.notes)
                )
                loops = None if value < 0 else value
        duration = None
        if props.get("ThreadGroup.scheduler") == "true":
            seconds = _number(
                props.get("ThreadGroup.duration", "0"), where, "the duration", self.notes
            )
            duration = seconds or None
        if props.get("ThreadGroup.delay", "").strip() not in ("", "0"):
            self.notes.append(f"{where}: its start-up delay is left out (phases start when ready)")
        if loops is None and duration is None:
            raise JmxError(
                "",
                f"{where}: it loops forever without a scheduled duration; give loops or a duration",
                node.line,
            )
        group = Group(node.name, node.line, max(1, threads), ramp, loops, duration)
        group_where = f"Test Plan › {node.name}"
        elements = _elements(subtree) if subtree is not None else []
        group_scope = self._inner(scope, elements, group_where)
        for child, below in elements:
            if child.tag == "HTTPSamplerProxy":
                if self._enabled(child, group_where):
                    group.samplers.append(self._sampler(child, below, group_where, group_scope))
            elif child.tag not in _SCOPED:
                self._leave_out(child, below, group_where)
        return group

    def _sampler(
        self,
        node: Node,
        subtree: Node | None,
        where: str,
        scope: _Scope,
    ) -> Sampler:
        props = node.props()
        elements = _elements(subtree) if subtree is not None else []
        own = self._inner(scope, elements, f"{where} › {node.name}", leave_out_others=True)
        arguments = []
        args = node.element("HTTPsampler.Arguments")
        for arg in args.collection("Arguments.arguments") if args is not None else []:
            ap = arg.props()
            arguments.append(
                (ap.get("Argument.name", arg.attrs.get("name", "")), ap.get("Argument.value", ""))
            )
        raw = None
        if props.get("HTTPSampler.postBodyRaw") == "true":
            raw = "".join(value for _, value in arguments)
            arguments = []
        if node.element("HTTPsampler.Files") is not None and node.element(
            "HTTPsampler.Files"
        ).collection("HTTPFileArgs.files"):  # type: ignore[union-attr]
            self.notes.append(
                f"line {node.line}: {node.name!r} uploads files: the description's body is sent instead"
            )
        path = self._substitute(props.get("HTTPSampler.path", "") or "/")
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
            split = urlsplit(path)
            path = (split.path or "/") + (f"?{split.query}" if split.query else "")
        if not path.startswith("/"):
            path = "/" + path
        return Sampler(
            name=node.name,
            line=node.line,
            where=where,
            method=(props.get("HTTPSampler.method") or "GET").upper(),
            path=path,
            arguments=[(self._substitute(n), self._substitute(v)) for n, v in arguments],
            raw_body=self._substitute(raw) if raw is not None else None,
            timers=[("constant", t) for t in own.timers],
            throughput=own.throughput,
            data_sets=list(own.data_sets),
        )

    def _substitute(self, text: str) -> str:
        """The test plan's own variables replaced by their values (others stay ``${name}``)."""
        return _VAR.sub(lambda m: self.variables.get(m.group(1), m.group(0)), text)


# -- the plan --------------------------------------------------------------------------------


def _placeholder_path(path: str) -> tuple[str, dict[str, str]]:
    """The path with each ``${var}`` replaced by a token a route parameter matches, and
    token → variable."""
    tokens: dict[str, str] = {}

    def token(m: re.Match[str]) -> str:
        key = f"gbvar{len(tokens)}x"
        tokens[key] = m.group(1)
        return key

    return _VAR.sub(token, path), tokens


def _column(sampler: Sampler, variable: str) -> list[str] | None:
    for data_set in reversed(sampler.data_sets):
        if variable in data_set.columns:
            return data_set.columns[variable]
    return None


def _generator(
    values: list[str], name: str, keep: KeepValues, schema: dict[str, Any] | None = None
) -> Any:
    """A CSV column as a generator: its values in file order when kept, else synthetic values
    with its cardinality (1..n in order; with repeats, weighted), valid for the ``schema`` of
    the parameter it feeds where a numbered form is (``synth.numbered``: ``AAA-0001``...)."""
    if len(values) > MAX_CSV_VALUES:
        values = values[:MAX_CSV_VALUES]
    if keep.allows(name):
        typed: list[Any] = [int(v) if re.fullmatch(r"-?\d{1,15}", v) else v for v in values]
        return {"list": typed} if len(set(values)) > 1 else typed[0]
    counts = Counter(values)
    form = numbered(schema, len(counts), OTHERS_PREFIX) if schema else None
    if form is None or form == (1, None, 0):
        if len(counts) == 1:
            return 1
        if all(c == 1 for c in counts.values()):
            return {"range": [1, len(values)]}
        ranked = counts.most_common()
        return {"list": list(range(1, len(ranked) + 1)), "weights": [c for _, c in ranked]}
    start, prefix, width = form
    synthetic = [numbered_value(start + i, prefix, width) for i in range(len(counts))]
    if len(counts) == 1:
        return synthetic[0]
    if all(c == 1 for c in counts.values()):
        return {"list": synthetic}
    return {"list": synthetic, "weights": [c for _, c in counts.most_common()]}


def jmx_section(
    api: Api,
    matcher: Matcher,
    plan: TestPlan,
    keep: KeepValues,
    *,
    spec_ref: str | None,
    source: str,
) -> tuple[PlanResult, list[Problem]]:
    section: dict[str, Any] = {}
    if spec_ref is not None:
        section["spec"] = spec_ref
    samplers = [s for g in plan.groups for s in g.samplers]
    matched = 0
    result = PlanResult(section)
    problems: list[Problem] = []
    taken: set[str] = set()
    workloads: list[dict[str, Any]] = []
    labels: set[str] = set()
    ramp = 0.0
    for group in plan.groups:
        ramp = max(ramp, group.ramp_up)
        cycle = sum(sum(t for _, t in s.timers) for s in group.samplers)
        for sampler in group.samplers:
            built = _workload(api, matcher, group, sampler, cycle, keep, taken, result)
            if built is None:
                problems.append(
                    Problem(
                        "",
                        f"HTTP sampler {sampler.name!r} ({sampler.method} "
                        f"{one_line(sampler.path.partition('?')[0])}) matches no "
                        "operation of the description; left out",
                        "warning",
                        line=sampler.line,
                        source=source,
                    )
                )
                continue
            matched += 1
            workload, op = built
            workloads.append(workload)
            labels.update(p for p in op.security_label.split("+") if p != "none")
    section["traffic"] = {
        "files": [source],
        "format": "jmx",
        "requests": len(samplers),
        "matched": matched,
    }
    if ramp > 0:
        section["warmup"] = {"duration": f"{ramp:g}s"}
        result.notes.append(
            f"the thread groups' ramp-up ({ramp:g} s at most) is the warm-up: gatebench measures "
            "after it, as JMeter's ramp-up exists to bring the server up gradually"
        )
    section["workloads"] = workloads
    from gatebench.core.traffic._plan import _auth

    auth = _auth(labels)
    if auth:
        section["auth"] = auth
    result.notes.extend(plan.notes)
    for item in plan.unsupported:
        result.notes.append(item.describe())
    return result, problems


def _workload(
    api: Api,
    matcher: Matcher,
    group: Group,
    sampler: Sampler,
    cycle: float,
    keep: KeepValues,
    taken: set[str],
    result: PlanResult,
) -> tuple[dict[str, Any], Operation] | None:
    path, tokens = _placeholder_path(sampler.path)
    query_text = ""
    body_args = sampler.method in ("POST", "PUT", "PATCH") and sampler.raw_body is None
    if "?" in path:
        path, _, query_text = path.partition("?")
    found = matcher.resolve(f"{sampler.method} {path}".encode("latin-1", "replace"))
    if not isinstance(found, Matched):
        return None
    op = matcher.operations[found.operation]
    name = workload_name(op.operation_id, taken)
    workload: dict[str, Any] = {"name": name, "operation": op.operation_id}
    params: dict[str, Any] = {}
    comments = [
        # the route, not the sampler's path: its query may hold a token (?access_token=...)
        f"{sampler.method} {op.route_path}: HTTP sampler {sampler.name!r} (line {sampler.line}) "
        f"of thread group {group.name!r}"
    ]
    schemas = {p.name: dereferenced(p.schema, api.schemas) for p in op.path_params}
    for pname, value in zip(matcher.param_names[found.operation], found.params, strict=True):
        _value(pname, value, tokens, sampler, keep, params, comments, schemas.get(pname))
    query = [(n, v) for n, v in (p.partition("=")[::2] for p in query_text.split("&") if p)]
    if not body_args:
        query += sampler.arguments
    declared = {p.name: dereferenced(p.schema, api.schemas) for p in op.query_params}
    for qname, value in query:
        if qname not in declared:
            comments.append(f"{qname}: not a parameter of the description; left out")
            continue
        _value(qname, value, {}, sampler, keep, params, comments, declared[qname])
    body = _sampler_body(op, sampler, body_args, keep, params, comments)
    if body is not None:
        workload["body"] = body
    if params:
        workload["params"] = params
    workload["injection"] = _injection(group, sampler, cycle, comments)
    result.comments[name] = comments
    return workload, op


def _value(
    name: str,
    value: str,
    tokens: dict[str, str],
    sampler: Sampler,
    keep: KeepValues,
    params: dict[str, Any],
    comments: list[str],
    schema: dict[str, Any] | None = None,
) -> None:
    variable = tokens.get(value)
    whole = _VAR.fullmatch(value)
    if variable is None and whole is not None:
        variable = whole.group(1)
    if variable is None:
        if "${" in value:
            comments.append(
                f"{name}: {value!r} mixes text and variables; the description's example is sent"
            )
            return
        if is_secret_name(name):
            comments.append(f"{name}: named like a secret; left out")
            return
        params[name] = int(value) if re.fullmatch(r"-?\d{1,15}", value) else value
        return
    if variable.startswith("__"):
        comments.append(
            f"{name}: ${{{variable}}} is a JMeter function; the description's example is sent"
        )
        return
    if is_secret_name(name) or is_secret_name(variable):
        comments.append(f"{name}: ${{{variable}}} is named like a secret; never kept")
        return
    column = _column(sampler, variable)
    if column is None or not column:
        comments.append(
            f"{name}: ${{{variable}}} comes from no CSV data set read here; the description's example is sent"
        )
        return
    params[name] = _generator(column, variable, keep, schema)
    kept = "its values" if keep.allows(variable) else "synthetic values, the same count"
    comments.append(
        f"{name}: ${{{variable}}} from a CSV data set, {len(set(column)):,} distinct: {kept}"
    )


def _sampler_body(
    op: Operation,
    sampler: Sampler,
    form: bool,
    keep: KeepValues,
    params: dict[str, Any],
    comments: list[str],
) -> dict[str, Any] | None:
    if sampler.raw_body is None and not (form and sampler.arguments):
        return None
    variables = set(_VAR.findall(sampler.raw_body or "")) | {
        v for _, value in sampler.arguments for v in _VAR.findall(value)
    }
    secret = [v for v in variables if is_secret_name(v)]
    if form:
        names = [n for n, _ in sampler.arguments]
        if any(is_secret_name(n) for n in names) or secret:
            comments.append(
                "body: its form holds fields named like secrets; the description's body is sent"
            )
            return None
        for _name, value in sampler.arguments:
            whole = _VAR.fullmatch(value)
            if whole:
                _placeholder(whole.group(1), sampler, keep, params, comments)
        text = "&".join(
            f"{quote(n, safe='')}={value if _VAR.fullmatch(value) else quote(value, safe='')}"
            for n, value in sampler.arguments
        )
        return {"text": text, "media_type": "application/x-www-form-urlencoded"}
    raw = sampler.raw_body or ""
    if secret:
        comments.append(
            "body: it uses variables named like secrets; the description's body is sent"
        )
        return None
    for variable in variables:
        _placeholder(variable, sampler, keep, params, comments)
    if any(v not in params for v in variables):
        comments.append("body: a variable has no value here; the description's body is sent")
        return None
    marked = _VAR.sub(
        lambda m: f'"\\u0000{m.group(1)}\\u0000"', re.sub(r'"\$\{([^{}]*)\}"', r"${\1}", raw)
    )
    try:
        value = json.loads(marked)
    except ValueError:
        media = (
            op.request_body.content[0].media_type
            if op.request_body and op.request_body.content
            else "text/plain"
        )
        return {"text": raw, "media_type": media}
    if _secret_keys(value):
        comments.append("body: it holds fields named like secrets; the description's body is sent")
        return None
    return {"json": _unmark(value)}


def _placeholder(
    variable: str, sampler: Sampler, keep: KeepValues, params: dict[str, Any], comments: list[str]
) -> None:
    column = _column(sampler, variable)
    if column:
        params[variable] = _generator(column, variable, keep)


def _secret_keys(value: Any) -> bool:
    if isinstance(value, dict):
        return any(is_secret_name(str(k)) or _secret_keys(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_secret_keys(v) for v in value)
    return False


def _unmark(value: Any) -> Any:
    if isinstance(value, str):
        return re.sub(r"\x00([^\x00]*)\x00", r"${\1}", value)
    if isinstance(value, dict):
        return {k: _unmark(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmark(v) for v in value]
    return value


def _injection(group: Group, sampler: Sampler, cycle: float, comments: list[str]) -> dict[str, Any]:
    """The group's load on one sampler (module doc)."""
    samplers = max(1, len(group.samplers))
    requests = group.threads * group.loops if group.loops is not None else None
    rate = None
    if sampler.throughput is not None and sampler.throughput[0] > 0:
        per_minute, mode = sampler.throughput
        total = per_minute * (group.threads if mode == 0 else 1) / 60.0
        rate = total / samplers
        why = f"a constant throughput timer of {per_minute:g}/min ({'per thread' if mode == 0 else 'shared'})"
    elif cycle > 0:
        rate = group.threads / cycle
        why = f"{group.threads} threads pausing {cycle * 1000:g} ms per pass over the group's samplers"
    if rate is not None:
        duration = group.duration if group.duration is not None else (requests or 1) / rate
        comments.append(f"an open-model rate of {rate:.4g}/s from {why}")
        return {"constant_rate": {"rate": round(rate, 6), "duration": f"{duration:g}s"}}
    out: dict[str, Any] = {"concurrent": group.threads}
    if group.duration is not None:
        out["duration"] = f"{group.duration:g}s"
    if requests is not None:
        out["requests"] = requests
    comments.append(
        f"{group.threads} concurrent users"
        + (f", {requests:,} requests" if requests is not None else "")
        + (f", for {group.duration:g} s" if group.duration is not None else "")
    )
    return out


__all__ = ["SUPPORTED", "JmxError", "TestPlan", "jmx_section", "parse_xml", "read_jmx"]
