"""The ratio compare with a stored benchmark run (:mod:`aftertrain.timing.compare`)
on a fake clock: a deliberate 2x slowdown on the same machine is called
``regressed``; the same figures from another machine are ``not comparable``
(no failure); a run whose own timing decision was inconclusive never calls a
regression. Cost: well under 0.1 CPU s.
"""

from __future__ import annotations

import pytest

from aftertrain.timing import Decision, paired_timing
from aftertrain.timing.compare import RatioStatus, compare_ratios, machine, machine_difference, store_ratios
from tests.common.inner_runs import saved_benchmark_run

pytest_plugins = ["pytester"]

MACHINE = {
    "cpu": {"brand_raw": "Xeon A", "count": 2, "flags": ["avx2", "avx512f", "sse4_2"]},
    "aftertrain": {"torch": "2.13.0", "threads": 1},
}
OTHER = {
    "cpu": {"brand_raw": "Xeon A", "count": 2, "flags": ["avx2", "sse4_2"]},
    "aftertrain": {"torch": "2.13.0", "threads": 1},
}


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class Bench:
    def __init__(self) -> None:
        self.extra_info: dict = {}


def _timed(slowdown: float, verdict: str = "holds") -> dict:
    """A benchmark's extra_info after a decision on a fake clock: the
    candidate takes ``0.5 * slowdown`` s a call, the baseline 1 s."""
    clock = Clock()

    def cost(seconds):
        def run():
            clock.now += seconds

        return run

    timing = paired_timing(cost(1.0), cost(0.5 * slowdown), pairs=40, warmup=0, clock=clock)
    bench = Bench()
    store_ratios(
        bench,
        Decision(
            verdict=verdict,
            timings={"int8 / float": timing},
            rule="r",
            looks=1,
            max_looks=1,
            alpha=1e-6,
            confidence=timing.confidence,
            seconds=80.0,
            load1=0.1,
        ),
    )
    return {"bench[128]": bench.extra_info}


def test_a_2x_slowdown_on_the_same_machine_is_regressed():
    [change] = compare_ratios(_timed(2.0), _timed(1.0), machines=(machine(MACHINE), machine(MACHINE)))
    assert change.status == RatioStatus.REGRESSED and change.now[0] == 1.0 and change.stored[0] == 0.5


def test_the_same_timing_is_same():
    [change] = compare_ratios(_timed(1.0), _timed(1.0), machines=(machine(MACHINE), machine(MACHINE)))
    assert change.status == RatioStatus.SAME


def test_another_machine_is_not_comparable_and_says_how():
    [change] = compare_ratios(_timed(2.0), _timed(1.0), machines=(machine(MACHINE), machine(OTHER)))
    assert change.status == RatioStatus.NOT_COMPARABLE
    assert change.note == "stored on flags +avx512f, now fewer flags"
    assert "not comparable (stored on flags +avx512f" in change.line()


def test_an_inconclusive_decision_of_this_run_never_calls_a_regression():
    [change] = compare_ratios(
        _timed(2.0, verdict="inconclusive"), _timed(1.0), machines=(machine(MACHINE), machine(MACHINE))
    )
    assert change.status == RatioStatus.INCONCLUSIVE


@pytest.mark.parametrize(
    "stored, now, expected",
    [
        ({**MACHINE, "aftertrain": {}}, MACHINE, None),  # a stored run without torch's record
        (
            MACHINE,
            {**MACHINE, "aftertrain": {"torch": "2.14.0", "threads": 1}},
            "stored on torch 2.13.0, now torch 2.14.0",
        ),
        (MACHINE, {**MACHINE, "cpu": {**MACHINE["cpu"], "count": 8}}, "stored on cores 2, now cores 8"),
    ],
)
def test_machine_difference_names_what_differs(stored, now, expected):
    assert machine_difference(machine(stored), machine(now)) == expected


@pytest.mark.teeth
def test_compare_catches_a_slowdown_only_on_the_same_machine():
    """Teeth of the machine gate: with the machines left out the 2x slowdown
    is called regressed; with them, not comparable, so the gate is what
    changed the status."""
    now, stored = _timed(2.0), _timed(1.0)
    assert compare_ratios(now, stored)[0].status == RatioStatus.REGRESSED
    assert (
        compare_ratios(now, stored, machines=(machine(MACHINE), machine(OTHER)))[0].status
        == RatioStatus.NOT_COMPARABLE
    )


def test_a_stored_run_of_another_machine_is_one_line_and_exit_0(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """End to end through pytest-benchmark: the stored run's CPU had a flag
    this one lacks; a doubled ratio is then "not comparable" (exit 0), the
    difference is one line, and pytest-benchmark's dump of both machine
    records does not appear."""
    import json

    store = saved_benchmark_run(pytester, monkeypatch)
    [saved] = (pytester.path / "store").rglob("*.json")
    data = json.loads(saved.read_text())
    assert set(data["machine_info"]["aftertrain"]) == {"torch", "threads"}
    data["machine_info"]["cpu"]["flags"] = [*data["machine_info"]["cpu"].get("flags", []), "avx512_imaginary"]
    saved.write_text(json.dumps(data))
    monkeypatch.setenv("RATIO", "2.0")
    result = pytester.runpytest("-p", "aftertrain.ledger", store, "--benchmark-compare")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "not comparable across machines: stored on flags +avx512_imaginary, now fewer flags; *",
            "*test_bench  r *not comparable",
        ]
    )
    output = result.stdout.str() + result.stderr.str()
    assert "machine_info is different" not in output and "RATIO REGRESSION" not in output
