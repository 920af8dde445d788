"""The rule the timing-band tests share (tests/timing.py), on constructed attempts: what passes,
what is measured again, and what fails at once. The real measurements, and a real 2 ms error
caught on this shared machine, are in tests/integration/test_ground_truth.py."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from gatebench.core.measure import NOISY_OTHERS_PCT
from timing import Band, Meanwhile, Timed, judge, measure_within_bands, others_cpu_pct

QUIET = Meanwhile(others_cpu_pct=3.0, backend_late_ms=0.05)
BUSY = Meanwhile(others_cpu_pct=60.0, backend_late_ms=0.05)
LATE_BACKEND = Meanwhile(others_cpu_pct=3.0, backend_late_ms=1.8)


def p50(value: float) -> Band:
    return Band("p50 (ms)", value, 19.0, 21.0, busy="up")


def requests(value: float) -> Band:
    return Band("requests", value, 300, 505, busy="down")


class Script:
    """Attempts in order; counts the measurements and the waits for a quiet moment."""

    def __init__(
        self, *attempts: tuple[list[Band], Meanwhile], witnesses: Sequence[Band] = ()
    ) -> None:
        self._attempts: Iterator[tuple[list[Band], Meanwhile]] = iter(attempts)
        self.witnesses = witnesses
        self.measured = 0
        self.waits = 0

    def measure(self) -> Timed[int]:
        bands, meanwhile = next(self._attempts)
        self.measured += 1
        return Timed(self.measured, bands, meanwhile, self.witnesses)

    def wait(self) -> str:
        self.waits += 1
        return "waited 2 s for a quieter moment (others 4 %)"

    def run(self) -> int:
        return measure_within_bands(self.measure, wait_for_quiet=self.wait)


def test_inside_every_band_passes_on_the_first_measurement() -> None:
    script = Script(([p50(20.0), requests(480)], BUSY))
    assert script.run() == 1
    assert (script.measured, script.waits) == (1, 0)


def test_a_miss_on_a_quiet_machine_fails_at_once() -> None:
    script = Script(([p50(22.0)], QUIET), ([p50(20.0)], QUIET))
    with pytest.raises(pytest.fail.Exception) as failed:
        script.run()
    assert (script.measured, script.waits) == (1, 0)
    assert str(failed.value) == (
        "a miss on a machine that was not busy:\n"
        "  attempt 1: p50 (ms) = 22, expected [19, 21] (meanwhile others used 3 % of the CPU, "
        "the backend released its median response 0.050 ms late)"
    )


def test_a_miss_the_load_explains_is_measured_again_at_a_quieter_moment() -> None:
    script = Script(([p50(22.0), requests(290)], BUSY), ([p50(20.0), requests(470)], QUIET))
    assert script.run() == 2
    assert (script.measured, script.waits) == (1 + 1, 1)


def test_a_late_backend_explains_a_miss_too() -> None:
    script = Script(([p50(22.0)], LATE_BACKEND), ([p50(20.0)], QUIET))
    assert script.run() == 2


def test_a_miss_that_remains_fails_after_the_bounded_attempts() -> None:
    script = Script(*[([p50(22.0)], BUSY)] * 5)
    with pytest.raises(pytest.fail.Exception) as failed:
        script.run()
    assert (script.measured, script.waits) == (3, 2)
    text = str(failed.value)
    assert text.startswith(
        "the miss remains after 3 attempts, each explained by the machine's load:\n"
    )
    assert text.count("p50 (ms) = 22, expected [19, 21]") == 3
    assert text.count("then waited 2 s for a quieter moment") == 2


@pytest.mark.parametrize(
    "band",
    [
        p50(18.5),  # faster than the backend's hold: released early, whatever the load
        requests(520),  # more requests than 5 users can make in 2 s of 20 ms each
        Band("min (ms)", 19.0, low=20.0),
    ],
)
def test_a_miss_load_cannot_cause_fails_at_once_on_a_busy_machine(band: Band) -> None:
    script = Script(([band], BUSY), ([p50(20.0)], QUIET))
    with pytest.raises(pytest.fail.Exception) as failed:
        script.run()
    assert script.measured == 1
    assert str(failed.value).startswith("a miss the machine's load does not explain:\n")


def test_a_moved_witness_leaves_the_miss_unexplained() -> None:
    # the fastest request reads 22 ms too: the whole distribution moved, not its middle
    fastest = Band("min (ms)", 22.0, 20.0, 21.0)
    script = Script(([p50(22.0)], BUSY), ([p50(20.0)], QUIET), witnesses=[fastest])
    with pytest.raises(pytest.fail.Exception) as failed:
        script.run()
    assert str(failed.value) == (
        "a miss the machine's load does not explain:\n"
        "  attempt 1: p50 (ms) = 22, expected [19, 21]; and what load cannot move moved: "
        "min (ms) = 22, expected [20, 21] (meanwhile others used 60 % of the CPU, the backend "
        "released its median response 0.050 ms late)"
    )


def test_a_witness_in_its_band_lets_the_load_explain() -> None:
    fastest = Band("min (ms)", 20.0, 20.0, 21.0)
    assert judge(Timed(0, [p50(22.0)], BUSY, witnesses=[fastest])).explained


def test_one_unexplained_miss_is_enough_to_fail_at_once() -> None:
    script = Script(([p50(22.0), requests(520)], BUSY), ([p50(20.0)], QUIET))
    with pytest.raises(pytest.fail.Exception):
        script.run()
    assert script.measured == 1


def test_busy_means_what_the_product_flags_noisy() -> None:
    assert not Meanwhile(NOISY_OTHERS_PCT).busy
    assert Meanwhile(NOISY_OTHERS_PCT + 0.1).busy
    assert not Meanwhile(None).busy  # not measured: nothing explains a miss
    assert not judge(Timed(0, [p50(22.0)], Meanwhile(None))).explained


def test_the_share_of_other_processes_is_measured() -> None:
    # no figure to pin on a shared machine: a share of the whole machine, over a real window
    assert 0.0 <= others_cpu_pct(0.2) <= 100.0
