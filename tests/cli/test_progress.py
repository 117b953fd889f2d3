"""A long command's progress lines (:mod:`aftertrain.cli.progress`): one
whenever nothing was written for the interval, naming the stage the work
is at, and none once the work has ended."""

from __future__ import annotations

import io
import re
import time

from aftertrain.cli.progress import heartbeat


def test_a_line_comes_each_interval_with_the_current_stage():
    stream = io.StringIO()
    with heartbeat("sample", "starting", stream=stream, every=0.05) as at:
        time.sleep(0.2)
        at("timing the speedup: run 3 of 18 (plain)")
        time.sleep(0.2)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 4, lines
    assert all(re.fullmatch(r"\[sample +\d+s\] .+", line) for line in lines), lines
    assert lines[0].endswith("] starting") and lines[-1].endswith("] timing the speedup: run 3 of 18 (plain)")
    ended = len(stream.getvalue())
    time.sleep(0.15)
    assert len(stream.getvalue()) == ended  # the thread stopped with the block


def test_work_shorter_than_the_interval_writes_nothing():
    stream = io.StringIO()
    with heartbeat("sample", "starting", stream=stream, every=5.0):
        pass
    assert stream.getvalue() == ""


def test_a_line_of_the_callers_own_starts_the_interval_again():
    """``at(stage, written=True)``: the caller has just written a line, so
    none comes until the interval has passed again."""
    stream = io.StringIO()
    with heartbeat("check rule", "starting", stream=stream, every=0.3) as at:
        for _ in range(6):
            time.sleep(0.1)
            at("check_rule: exact k=2", written=True)
    assert stream.getvalue() == ""
