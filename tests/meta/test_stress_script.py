"""benchmarks/stress.py: what makes a stress run fail, and its arguments.

The runs themselves (minutes of pytest under load) are measured, not tested
here; docs/measurement.md says what the script runs and when it fails."""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "stress.py"


@pytest.fixture(scope="module")
def stress():
    spec = importlib.util.spec_from_file_location("stress", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def right_teeth(stress, n=10, wrong=0):
    """Teeth counts with ``wrong`` of ``n`` decisions given the wrong verdict."""
    flip = {"holds": "broken", "broken": "holds"}
    return {
        name: collections.Counter({want: n - wrong, flip[want]: wrong})
        for name, want in stress.TEETH_EXPECT.items()
    }


def test_clean_runs_and_teeth_pass(stress):
    assert stress.problems([(0, []), (0, [])], right_teeth(stress)) == []


def test_a_run_exiting_non_zero_or_breaking_a_claim_fails(stress):
    got = stress.problems([(0, []), (1, []), (0, ["S5", "X2"])], right_teeth(stress))
    assert got == ["run 2: exit 1", "run 3: exit 0, broken: S5, X2"]


def test_teeth_need_nine_of_ten(stress):
    assert stress.problems([(0, [])], right_teeth(stress, wrong=1)) == []
    got = stress.problems([(0, [])], right_teeth(stress, wrong=2))
    assert len(got) == 3 and all("8 of 10" in line for line in got)


def test_teeth_never_decided_fail(stress):
    empty = {name: collections.Counter() for name in stress.TEETH_EXPECT}
    assert len(stress.problems([], empty)) == 3


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--runs", "0"], "--runs must be >= 1"),
        (["--teeth-runs", "-1"], "--teeth-runs must be >= 0"),
        (["--suite", "--skip-spec"], "cannot be combined"),
        (["--conditions", "idle,busy"], "--conditions must name idle and/or loaded"),
    ],
)
def test_bad_arguments_stop_before_any_run(stress, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        stress.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_areas_sum_each_folders_setup_call_and_teardown(stress):
    """The per-area seconds of the suite table, from pytest's --durations lines."""
    out = """
============================= slowest durations =============================
2.50s setup    tests/claims_on_model/test_quant.py::test_a
1.25s call     tests/claims_on_model/test_quant.py::test_a
0.25s teardown tests/claims_on_model/test_prune.py::test_b[x-1]
3.00s call     benchmarks/test_spec_speedup.py::test_s5
0.50s call     tests/test_stats.py::test_c
(12 durations < 0.005s hidden.)
1 passed in 9.00s
"""
    assert stress.areas(out) == {"tests/claims_on_model": 4.0, "benchmarks": 3.0, "tests": 0.5}
