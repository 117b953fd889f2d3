"""The timing lock (aftertrain.timing.lock) and ``pytest --timing-lock``: no
test of one run runs while another run times. Two ``TimingLock`` objects on
one path conflict like two processes (flock locks belong to the open file),
so threads stand in for the runs. Waits use events with a 10 s timeout; a
"still waiting" check after 0.2 s can only pass wrongly if the lock works,
never fail because the machine is slow."""

from __future__ import annotations

import fcntl
import threading

import pytest

from aftertrain.timing.lock import TimingLock
from tests.common.inner_runs import outside_any_run
from tests.common.pytester_sources import FLOCK_PROBE

pytest_plugins = ["pytester"]


def _hold(lock_cm, entered: threading.Event, release: threading.Event) -> threading.Thread:
    def run() -> None:
        with lock_cm():
            entered.set()
            release.wait(10)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize(
    "first, second", [("shared", "exclusive"), ("exclusive", "shared"), ("exclusive", "exclusive")]
)
def test_a_timing_and_any_other_test_never_overlap(tmp_path, first, second):
    a, b = TimingLock(tmp_path / "t.lock"), TimingLock(tmp_path / "t.lock")
    a_in, a_out, b_in, b_out = (threading.Event() for _ in range(4))
    ta = _hold(getattr(a, first), a_in, a_out)
    assert a_in.wait(10)
    tb = _hold(getattr(b, second), b_in, b_out)
    assert not b_in.wait(0.2)  # blocked while a holds
    a_out.set()
    assert b_in.wait(10)
    b_out.set()
    ta.join(10), tb.join(10)


def test_untimed_tests_of_two_runs_go_side_by_side(tmp_path):
    a, b = TimingLock(tmp_path / "t.lock"), TimingLock(tmp_path / "t.lock")
    a_in, a_out, b_in, b_out = (threading.Event() for _ in range(4))
    _hold(a.shared, a_in, a_out)
    assert a_in.wait(10)
    _hold(b.shared, b_in, b_out)
    assert b_in.wait(10)  # both inside at once
    a_out.set(), b_out.set()


def test_a_run_waiting_to_time_goes_before_the_other_runs_next_test(tmp_path):
    """Writer preference: while b waits to time, a's next test waits behind it
    (a stream of short tests cannot starve a timing)."""
    a, b = TimingLock(tmp_path / "t.lock"), TimingLock(tmp_path / "t.lock")
    order = []
    a_in, a_out, b_in, b_out, a2_in, a2_out = (threading.Event() for _ in range(6))
    _hold(a.shared, a_in, a_out)
    assert a_in.wait(10)

    def timing() -> None:
        with b.exclusive():
            order.append("b times")
            b_in.set()
            b_out.wait(10)

    threading.Thread(target=timing, daemon=True).start()
    # b now holds the gate and waits for a's test to end
    for _ in range(100):
        probe = open(f"{tmp_path / 't.lock'}.gate", "a")  # noqa: SIM115
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(probe, fcntl.LOCK_UN)
            probe.close()
            threading.Event().wait(0.05)
        except BlockingIOError:
            probe.close()
            break
    else:
        pytest.fail("b never took the gate")
    a_out.set()  # a's test ends; its next one asks at once

    def next_test() -> None:
        with a.shared():
            order.append("a's next test")
            a2_in.set()
            a2_out.wait(10)

    threading.Thread(target=next_test, daemon=True).start()
    assert b_in.wait(10)
    assert not a2_in.wait(0.2)
    b_out.set()
    assert a2_in.wait(10)
    a2_out.set()
    assert order == ["b times", "a's next test"]


def test_a_folder_is_refused_naming_the_path(tmp_path):
    with pytest.raises(ValueError, match="path must be a file path, got the folder"):
        TimingLock(tmp_path)


RUN = """
import fcntl

from flock_probe import try_flock

LOCK = {lock!r}


def test_untimed():
    assert try_flock(LOCK, fcntl.LOCK_SH) == "free"      # held shared: others may share
    assert try_flock(LOCK, fcntl.LOCK_EX) == "blocked"   # but none may time


def test_timed(benchmark):
    assert try_flock(LOCK, fcntl.LOCK_SH) == "blocked"   # held alone
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
"""


def test_pytest_option_holds_the_lock_shared_or_alone_per_test(pytester, tmp_path, monkeypatch):
    # an xdist worker's variables would turn pytest-benchmark off in the inner run
    outside_any_run(monkeypatch)
    lock = tmp_path / "t.lock"
    pytester.makepyfile(test_lock_use=RUN.format(lock=str(lock)), flock_probe=FLOCK_PROBE)
    result = pytester.runpytest_subprocess(
        "-p", "aftertrain.ledger", f"--timing-lock={lock}", "-q", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)


def test_pytest_option_refuses_a_folder_with_one_line(pytester, tmp_path):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "aftertrain.ledger", f"--timing-lock={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--timing-lock: path must be a file path, got the folder*"])
