"""The imported plan as YAML a person reads: a header saying where it came from and how to run
it, each workload preceded by comments on what its traffic looked like (requests, peak,
statuses, sizes, what each parameter keeps), lists of numbers on one line."""

from __future__ import annotations

from typing import Any

import yaml

from ._plan import PlanResult


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
        body = dump([workload], 4)
        out.append(body)
    return "".join(out)


__all__ = ["dump", "plan_text"]
