"""Source files that pytester-based tests write into their temporary projects."""

#: A benchmark whose stored paired ratio is the RATIO environment variable
#: (interval +-2%): the compare's end-to-end tests store one run and compare another.
BENCH = """
import os

def test_bench(benchmark):
    r = float(os.environ["RATIO"])
    benchmark.extra_info["ratios"] = {"r": {"median": r, "ci": [0.98 * r, 1.02 * r]}}
    benchmark.pedantic(lambda: None, rounds=2)
"""


#: ``try_flock(path, how)``: "free" when a lock of kind ``how`` (``fcntl.LOCK_SH``
#: or ``LOCK_EX``) on the file ``path`` could be taken now, else "blocked".
#: flock locks belong to the open file, so the test's own process conflicts
#: with the lock its pytest run holds.
FLOCK_PROBE = """
import fcntl


def try_flock(path, how):
    with open(path, "a") as f:
        try:
            fcntl.flock(f, how | fcntl.LOCK_NB)
        except BlockingIOError:
            return "blocked"
        fcntl.flock(f, fcntl.LOCK_UN)
        return "free"
"""
