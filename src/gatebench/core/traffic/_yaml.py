"""The imported plan as YAML a person reads: a header saying where it came from and how to run
it, each workload preceded by comments on what its traffic looked like (requests, peak,
statuses, sizes, what each parameter keeps), lists of numbers on one line."""

from __future__ import annotations

from typing import Any

import yaml

from gatebench.core.traffic._plan import PlanResult


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
    return " " * indent + "# " + text.replace("\n", " ") + "\n"


def plan_text(result: PlanResult, command: str) -> str:
    """The benchmark file: ``x-gatebench`` with every key, workloads commented."""
    section = result.section
    out = [
        "# A benchmark plan written by `" + command.replace("\n", " ") + "`\n",
        '# from recorded traffic (docs/input.md, "From your traffic"). Each workload replays one\n',
        "# operation's recorded arrival curve, open model; `scale` multiplies its counts, `speed`\n",
        "# replays it faster. Run it: gatebench run THIS_FILE (or gatebench run SPEC --plan THIS_FILE).\n",
    ]
    for note in result.notes:
        out.append("# note: " + note.replace("\n", " ") + "\n")
    for op, why in result.left_out:
        out.append(f"# left out: {op}: {why}\n")
    head = {k: v for k, v in section.items() if k != "workloads"}
    out.append("x-gatebench:\n")
    out.append(dump(head, 2))
    out.append("  workloads:\n")
    for workload in section.get("workloads", []):
        for line in result.comments.get(workload["name"], []):
            out.append(_comment(line, 4))
        out.append(_workload_text(workload))
    return "".join(out)


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


__all__ = ["dump", "plan_text"]
