"""What `gatebench run`, `capacity` and `scale` print of a target that failed: its reason and
the last lines its process logged, where the cause usually is (a port already taken), with
nothing a log could write to the terminal."""

from __future__ import annotations

from pathlib import Path

from gatebench.cli._local import LOG_LINES_SHOWN, target_error_lines
from gatebench.core.model import RunRecord


def test_a_failed_gateway_is_printed_with_the_end_of_its_log() -> None:
    log = [f"line {i}" for i in range(12)] + [
        "",
        "nginx: [emerg] bind() to 127.0.0.1:21763 failed (98: Address already in use)\x1b[31m",
    ]
    record = RunRecord(
        "r",
        "file:///x",
        "0" * 64,
        target_errors={
            "nginx": "nginx exited with code 1 during the run; last log lines:\n" + "\n".join(log),
            "caddy": "caddy cannot apply the requested policies natively: rate limit\nmore",
        },
        environment={"left_out": {"caddy": "cannot apply the plan's policies"}},
    )
    lines = target_error_lines(record)
    assert lines[0] == "Left out: caddy cannot apply the requested policies natively: rate limit"
    assert lines[1] == "nginx: FAILED: nginx exited with code 1 during the run; last log lines:"
    assert len(lines) == 2 + LOG_LINES_SHOWN
    assert lines[-1] == (
        "    nginx: [emerg] bind() to 127.0.0.1:21763 failed (98: Address already in use)\\x1b[31m"
    )
    assert lines[2] == "    line 8"


def test_two_runs_of_one_spec_in_one_second_take_their_own_folders(tmp_path: Path) -> None:
    """The run id is the second and the spec's digest: a second run started in the same
    second into the same results folder shared the first's folder and record, and both
    failed with 'cannot move from parsed to parsed'."""
    from gatebench.local.runner import claim_run_id

    first = claim_run_id(tmp_path, "ab" * 32, now=1_000_000.0)
    second = claim_run_id(tmp_path, "ab" * 32, now=1_000_000.0)
    third = claim_run_id(tmp_path, "ab" * 32, now=1_000_000.0)
    assert (first, second, third) == (
        "19700112-134640-abababab",
        "19700112-134640-abababab-2",
        "19700112-134640-abababab-3",
    )
    assert all((tmp_path / run_id).is_dir() for run_id in (first, second, third))
