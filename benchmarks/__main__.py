"""Run the benchmarks and rewrite their sections of docs/benchmarks.md."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import time
from pathlib import Path

from ._machine import describe_machine

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Every figure here comes from `make bench` (or `python -m benchmarks NAME` for one section),
run on the machine named in its section. The machine is shared with other work, so each
section says how busy the rest of the machine was while it measured, and repeats what it
measures. Rerun the command to check a figure.
"""


def main(argv: list[str]) -> int:
    names = sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if m.name.startswith("bench_")
    )
    wanted = argv or names
    unknown = [n for n in wanted if n not in names]
    if unknown:
        print(f"unknown benchmark {unknown[0]!r}; available: {', '.join(names)}", file=sys.stderr)
        return 2
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    for name in wanted:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"== {name}: {module.TITLE}", flush=True)
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        body = module.run()
        section = (
            f"<!-- bench:{name} -->\n## {module.TITLE}\n\n"
            f"Command: `python -m benchmarks {name}` (part of `make bench`), {started}, "
            f"{describe_machine()}.\n\n{body.strip()}\n<!-- /bench:{name} -->"
        )
        pattern = re.compile(
            rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.DOTALL
        )
        if pattern.search(text):
            text = pattern.sub(lambda _m, s=section: s, text)
        else:
            text = text.rstrip() + "\n\n" + section + "\n"
        print(body.strip(), flush=True)
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text.rstrip() + "\n", encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
