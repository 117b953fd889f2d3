"""A long command's progress lines (:mod:`aftertrain.cli.progress`): one
whenever nothing was written for the interval, naming the stage the work
is at, and none once the work has ended."""

from __future__ import annotations

import io
import re
import time

from aftertrain.cli.progress import HEARTBEAT_S, heartbeat, relay


class FakeClock:
    """A clock the test moves by hand: the heartbeat's interval is read on
    it, so what a test asserts does not depend on how busy the machine is
    (the thread only looks every ``POLL`` real seconds)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


POLL = 0.005


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def _wait_for(stream: io.StringIO, n: int) -> list[str]:
    """The stream's lines once it has ``n`` (at most 30 s of waiting for the thread)."""
    deadline = time.monotonic() + 30
    while len(_lines(stream)) < n and time.monotonic() < deadline:
        time.sleep(POLL)
    return _lines(stream)


def _settle() -> None:
    """Long enough for the thread to look many times."""
    time.sleep(40 * POLL)


def test_a_line_comes_each_interval_with_the_current_stage():
    stream, clock = io.StringIO(), FakeClock()
    with heartbeat("sample", "starting", stream=stream, every=4.0, clock=clock, poll=POLL) as at:
        clock.now = 3.9
        _settle()
        assert _lines(stream) == []
        clock.now = 4.0
        assert _wait_for(stream, 1) == ["[sample    4s] starting"]
        at("timing the speedup: run 3 of 18 (plain)")
        clock.now = 8.5
        lines = _wait_for(stream, 2)
    assert lines == ["[sample    4s] starting", "[sample    8s] timing the speedup: run 3 of 18 (plain)"]
    assert all(re.fullmatch(r"\[sample +\d+s\] .+", line) for line in lines)
    clock.now = 100.0
    _settle()
    assert len(_lines(stream)) == 2  # the thread stopped with the block


def test_work_shorter_than_the_interval_writes_nothing():
    stream = io.StringIO()
    with heartbeat("sample", "starting", stream=stream, every=5.0):
        pass
    assert stream.getvalue() == ""


def test_the_interval_promised_leaves_room_within_5_s():
    """Every long command promises a line at least every 5 s: the interval
    and the thread's look (a quarter of it) add up to 5 s at most."""
    assert HEARTBEAT_S + HEARTBEAT_S / 4 <= 5.0


def test_a_line_of_the_callers_own_starts_the_interval_again():
    """``at(stage, written=True)``: the caller has just written a line, so
    none comes until the interval has passed again."""
    stream, clock = io.StringIO(), FakeClock()
    with heartbeat("check rule", "starting", stream=stream, every=4.0, clock=clock, poll=POLL) as at:
        for now in (3.0, 6.0, 9.0):
            clock.now = now
            at("check_rule: exact k=2", written=True)
            _settle()
        assert _lines(stream) == []
        clock.now = 13.0
        assert _wait_for(stream, 1) == ["[check rule   13s] check_rule: exact k=2"]


def test_relay_copies_a_childs_output_and_quiets_the_heartbeat_after_each_piece():
    """Each piece the child writes goes to the sink as it comes and counts
    as a line of the work's own (``written=True``), so the heartbeat speaks
    only when the child is silent for the interval."""
    source = io.BufferedReader(io.BytesIO(b"....F..\nx" * 3), buffer_size=4)
    sink, calls = io.StringIO(), []
    relay(source, sink, lambda stage, written=False: calls.append((stage, written)), "pytest running")
    assert sink.getvalue() == "....F..\nx" * 3
    assert calls and set(calls) == {("pytest running", True)}


class _GoneReader(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError("the reader went away")


def test_relay_keeps_draining_when_its_sink_fails_or_is_closed():
    """A sink that fails (``| head`` gone) or none at all (standard error
    closed): the child's output is still read to the end, so the child
    never blocks on a full pipe; a character split across pieces decodes whole."""
    text = "é" * 50_000
    for sink in (_GoneReader(), None):
        source = io.BufferedReader(io.BytesIO(text.encode()), buffer_size=3)
        relay(source, sink, lambda stage, written=False: None, "pytest running")
        assert source.read() == b""
    whole = io.StringIO()
    relay(io.BufferedReader(io.BytesIO(text.encode()), buffer_size=3), whole, lambda *a, **k: None, "x")
    assert whole.getvalue() == text
