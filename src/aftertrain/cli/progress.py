"""Progress of a command's long work that has no steps of its own to show
(``sample``'s generation and its timed pairs): a line on standard error
whenever nothing was written for :data:`HEARTBEAT_S` seconds, saying how
long the work has run and what it is at.

The library reports where it is through a callback (``progress(stage)``,
a few words) and never prints; the line is written from a thread, so a
single model step or timed run longer than the interval shows too.
"""

from __future__ import annotations

import codecs
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import BinaryIO, TextIO

#: Seconds without a line after which one is written. The thread looks
#: four times as often, so on a busy machine a line still comes within
#: about 5 s (the promise every long command keeps).
HEARTBEAT_S = 4.0


@contextlib.contextmanager
def heartbeat(
    command: str,
    stage: str,
    stream: TextIO | None = None,
    every: float = HEARTBEAT_S,
    clock: Callable[[], float] = time.monotonic,
    poll: float | None = None,
) -> Iterator[Callable[..., None]]:
    """Yield ``at(stage, written=False)``, which sets what the work is at;
    while the block runs, ``[COMMAND Ns] STAGE`` is written to ``stream``
    (standard error) whenever nothing was written for ``every`` seconds of
    ``clock`` (starting at ``stage``), looked at every ``poll`` seconds
    (default ``every / 4``). ``at`` itself writes nothing: it is cheap
    enough to call inside timed code; ``written=True`` says the caller has
    just written a line of its own (the interval starts again)."""
    stream = sys.stderr if stream is None else stream
    poll = every / 4 if poll is None else poll
    t0 = clock()
    state = {"stage": stage, "written": t0}
    done = threading.Event()

    def beat() -> None:
        while not done.wait(poll):
            now = clock()
            if now - state["written"] >= every:
                stream.write(f"[{command} {now - t0:4.0f}s] {state['stage']}\n")
                stream.flush()
                state["written"] = now

    def at(text: str, written: bool = False) -> None:
        state["stage"] = text
        if written:
            state["written"] = clock()

    thread = threading.Thread(target=beat, name=f"aftertrain-{command}-progress", daemon=True)
    thread.start()
    try:
        yield at
    finally:
        done.set()
        thread.join()


def relay(source: BinaryIO, sink: TextIO | None, at: Callable[..., None], stage: str) -> None:
    """Copy a child process's output ``source`` (bytes, read as they come,
    decoded as UTF-8 across pieces) to ``sink`` until it ends, telling
    :func:`heartbeat`'s ``at`` after each piece that a line of the work's own
    was written (``stage`` stays what the work is at): a child that writes
    keeps the heartbeat quiet, a child silent for the interval (one slow
    test) gets a heartbeat line. Without a sink (standard error closed), or
    once it fails (a reader that went away), the output is read and dropped,
    so the child never blocks on a full pipe."""
    decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
    read = getattr(source, "read1", source.read)
    while chunk := read(65536):
        if sink is not None:
            try:
                sink.write(decode(chunk))
                sink.flush()
            except (OSError, ValueError):
                sink = None
        at(stage, written=True)
