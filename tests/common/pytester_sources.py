"""Source files that pytester-based tests write into their temporary projects."""

#: A benchmark whose stored paired ratio is the RATIO environment variable
#: (interval +-2%): the compare's end-to-end tests store one run and compare another.
BENCH = '''
import os

def test_bench(benchmark):
    r = float(os.environ["RATIO"])
    benchmark.extra_info["ratios"] = {"r": {"median": r, "ci": [0.98 * r, 1.02 * r]}}
    benchmark.pedantic(lambda: None, rounds=2)
'''
