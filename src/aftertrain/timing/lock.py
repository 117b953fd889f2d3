"""One timing at a time across processes: a lock file shared by pytest runs.

Runs that share a lock file (``pytest --timing-lock=PATH``; ``aftertrain
report`` gives its parallel model runs one) take it around every test:
a test that times takes it exclusively, any other test shared. So untimed
tests of several runs go on side by side, and while one run times, no
other run's test is running: the timing sees the machine as a run on its
own would (the deterministic tests wait, they do not share the cores).

A writer-preferring lock from two ``flock`` files: the gate is taken
exclusively by a run that wants to time (and held while it times), and
passed through (taken and released) by every other test before it takes
the main lock shared, so a run waiting to time is never starved by the
stream of short tests of another run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the lock is refused at construction
    fcntl = None


def available() -> bool:
    """Whether this system has the lock's means (POSIX ``flock``)."""
    return fcntl is not None


class TimingLock:
    """The lock file ``path`` (and ``path`` + ``.gate``), created when missing.

    :meth:`exclusive` while timing, :meth:`shared` around any other work."""

    def __init__(self, path: str | os.PathLike) -> None:
        if fcntl is None:
            raise ValueError("path: a timing lock needs POSIX flock, which this system lacks")
        if not isinstance(path, (str, os.PathLike)):
            raise ValueError(f"path must be a file path, got {path!r}")
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"path must be a file path, got the folder {self.path}")
        try:
            self._main = open(self.path, "a")  # noqa: SIM115 - held for the lock's life
            self._gate = open(f"{self.path}.gate", "a")  # noqa: SIM115
        except OSError as err:
            raise ValueError(f"path {self.path}: cannot open the lock file ({err.strerror})") from None

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Held by this process alone: every other run's test has ended and
        none starts until this ends."""
        fcntl.flock(self._gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._main, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._main, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Held alongside other runs' untimed tests, never during a timing."""
        fcntl.flock(self._gate, fcntl.LOCK_EX)  # wait while a run times or waits to
        fcntl.flock(self._gate, fcntl.LOCK_UN)
        fcntl.flock(self._main, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close both lock files (releasing anything held)."""
        self._main.close()
        self._gate.close()
