"""The imported plan as YAML a person reads: a header saying where it came from and how to run
it, each workload preceded by comments on what its traffic looked like (requests, peak,
statuses, sizes, what each parameter keeps), lists of numbers on one line.

Text read from the traffic (a query parameter's name, a status, a JMeter sampler's name) is
the log's writer's, not ours: it reaches a comment or the console only through
:func:`one_line`, and the plan is read back before it is handed out (:func:`checked`), so no
line of a log can add a line to the plan.
"""

from __future__ import annotations

from typing import Any

import yaml

from gatebench.core.errors import Problem, TrafficError, printable
from gatebench.core.traffic._plan import PlanResult

_BREAKS_AND_NONCHARACTERS = {
    # what printable leaves: the Unicode line and paragraph separators (YAML and
    # str.splitlines break lines at them), and what YAML refuses to read
    0x2028: "\\u2028",
    0x2029: "\\u2029",
    0xFEFF: "\\ufeff",
    0xFFFE: "\\ufffe",
    0xFFFF: "\\uffff",
    **{i: f"\\u{i:04x}" for i in range(0xD800, 0xE000)},
}
ONE_LINE_LIMIT = 2000


def one_line(text: str, limit: int = ONE_LINE_LIMIT) -> str:
    """Text from the traffic as one line that a YAML comment and a terminal show as it is:
    every line break ``str.splitlines`` knows (``\\r``, ``\\x85``, ``\\u2028`` ...), every C0
    and C1 control (terminal escapes) and bidirectional override escaped, long runs
    shortened."""
    return printable(text, limit).translate(_BREAKS_AND_NONCHARACTERS)


class _Dumper(yaml.SafeDumper):
    """Mappings in the order built; lists of scalars on one line."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(not isinstance(item, dict | list) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def dump(value: Any, indent: int = 0) -> str:
    text = yaml.dump(
        value,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )
    pad = " " * indent
    return "".join(pad + line if line.strip() else line for line in text.splitlines(True))


def _comment(text: str, indent: int) -> str:
    return " " * indent + "# " + one_line(text) + "\n"


def plan_text(result: PlanResult, command: str) -> str:
    """The benchmark file: ``x-gatebench`` with every key, workloads commented."""
    section = result.section
    out = [
        "# A benchmark plan written by `" + one_line(command) + "`\n",
        '# from recorded traffic (docs/input.md, "From your traffic"). Each workload replays one\n',
        "# operation's recorded arrival curve, open model; `scale` multiplies its counts, `speed`\n",
        "# replays it faster. Run it: gatebench run THIS_FILE (or gatebench run SPEC --plan THIS_FILE).\n",
    ]
    for note in result.notes:
        out.append(_comment("note: " + note, 0))
    for op, why in result.left_out:
        out.append(_comment(f"left out: {op}: {why}", 0))
    head = {k: v for k, v in section.items() if k != "workloads"}
    out.append("x-gatebench:\n")
    out.append(dump(head, 2))
    out.append("  workloads:\n")
    for workload in section.get("workloads", []):
        for line in result.comments.get(workload["name"], []):
            out.append(_comment(line, 4))
        out.append(_workload_text(workload))
    return "".join(out)


def checked(text: str, result: PlanResult) -> str:
    """``text`` when it reads back (with the parser ``gatebench run`` uses) as the workloads
    built, the same number with the same names; else :class:`TrafficError`, and nothing is
    written. :func:`one_line` keeps the traffic's text out of the plan's structure; this says
    so of every plan before it reaches the disk."""
    from gatebench.core.spec import DEFAULT_LIMITS
    from gatebench.core.spec._yaml import load_yaml

    built = [w["name"] for w in result.section.get("workloads", [])]
    try:
        data, _ = load_yaml(text, "plan", DEFAULT_LIMITS)
    except Exception as exc:  # SpecSyntaxError: located problems
        problems = getattr(exc, "problems", None)
        found = problems[0].format() if problems else str(exc)
        raise TrafficError(
            [
                Problem(
                    "",
                    f"the plan as written does not read back ({found}); nothing written: "
                    "report it with the traffic file",
                )
            ]
        ) from None
    section = data.get("x-gatebench") if isinstance(data, dict) else None
    workloads = section.get("workloads") if isinstance(section, dict) else None
    names = [
        w.get("name") if isinstance(w, dict) else None
        for w in (workloads if isinstance(workloads, list) else [])
    ]
    if names != built:
        raise TrafficError(
            [
                Problem(
                    "",
                    f"the plan as written reads back as {len(names)} workloads "
                    f"({one_line(', '.join(map(str, names)), 300)}), not the {len(built)} built "
                    f"({', '.join(built)}); nothing written: report it with the traffic file",
                )
            ]
        )
    return text


_COUNTS = "__gatebench_counts__"


def _workload_text(workload: dict[str, Any]) -> str:
    """One workload; its arrival counts (thousands of numbers) written directly, a flow list
    of numbers being the same text in YAML as in JSON."""
    arrivals = workload.get("injection", {}).get("arrivals")
    if arrivals is None or "counts" not in arrivals:
        return dump([workload], 4)
    counts = arrivals["counts"]
    shown = {
        **workload,
        "injection": {**workload["injection"], "arrivals": {**arrivals, "counts": _COUNTS}},
    }
    text = dump([shown], 4)
    line = next(line for line in text.splitlines() if _COUNTS in line)
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return text.replace(_COUNTS, _flow(counts, indent))


def _flow(numbers: list[int], indent: str, width: int = 100) -> str:
    """``[1, 2, 3, ...]`` wrapped at ``width`` characters, continuation lines indented."""
    lines: list[str] = []
    current = "["
    for i, n in enumerate(numbers):
        item = str(n) + (", " if i + 1 < len(numbers) else "]")
        if len(current) + len(item) > width - len(indent) and current.strip() != "[":
            lines.append(current.rstrip())
            current = ""
        current += item
    lines.append(current)
    return ("\n" + indent).join(lines)


__all__ = ["ONE_LINE_LIMIT", "checked", "dump", "one_line", "plan_text"]
