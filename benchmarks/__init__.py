"""``make bench``: measurements with the command that made them, written to docs/benchmarks.md.

Each ``benchmarks/bench_<name>.py`` defines ``TITLE`` and ``run() -> str`` (the markdown body
of its section). ``python -m benchmarks [name ...]`` runs all of them or the named ones and
rewrites only their sections of docs/benchmarks.md, between ``<!-- bench:name -->`` markers.
"""
