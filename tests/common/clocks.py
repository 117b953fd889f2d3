"""A fake clock for the paired timing's tests: time moves only when the
fake work says so, so a timing's ratios are the work's, exactly."""

from __future__ import annotations


class FakeClock:
    """A clock that only the fake work moves: ``clock()`` is the time now."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def work(self, seconds_per_call: list[float]):
        """A callable whose i-th call takes ``seconds_per_call[i]`` seconds."""
        calls = iter(seconds_per_call)

        def run() -> None:
            self.now += next(calls)

        return run
