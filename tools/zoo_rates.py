"""Measure the speculative kit's detection rate on the bug zoo and its
false-alarm rate on correct implementations, over many seeds.

    PYTHONPATH=src python tools/zoo_rates.py [--seeds 20] [--jobs 2] [--rules-only]

Each seed runs the check that must catch the variant (aftertrain.checks.zoo.ZOO)
at its default settings and dtype with that seed; the correct rule
(aftertrain's verify_with_uniforms in float64, the zoo's correct rule handed
float32 and bfloat16 numbers, drawing float32 uniforms) goes through
check_rule and check_rule_exact (whose seed draws its batches), aftertrain's
generator through check_generator. Prints a Markdown table (docs/checks.md
keeps the last one) and the CPU seconds per run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from multiprocessing import Pool

#: (row label, check, dtype name, expected to pass) for the correct implementations.
CORRECT = [
    ("correct rule (float64)", "check_rule", "float64"),
    ("correct rule (float64)", "check_rule_exact", "float64"),
    ("correct rule (float32)", "check_rule", "float32"),
    ("correct rule (float32)", "check_rule_exact", "float32"),
    ("correct rule (bfloat16)", "check_rule", "bfloat16"),
    ("correct rule (bfloat16)", "check_rule_exact", "bfloat16"),
    ("correct generator", "check_generator", "float64"),
]
#: The u = 0 bug through the statistical battery: no sample size shows it.
SEEN_BY_RULE = ("zoo: accept u <= p/q", "check_rule", "float64")


def _one(job):
    import torch

    torch.set_num_threads(1)
    from aftertrain import speculative as S
    from aftertrain.checks import speculative as CS
    from aftertrain.checks import zoo

    (label, check, dtype_name), seed = job
    dtype = getattr(torch, dtype_name)
    t = time.process_time()
    if label == "correct generator":

        def generate(*args):
            return S.speculative_generate(*args).generated

        report = CS.check_generator(generate, seed=seed)
    elif label.startswith("correct rule"):
        rule = S.verify_with_uniforms if dtype == torch.float64 else zoo.make_rule()
        # A low-precision sampler's uniforms are float32 (zoo.Variant.uniforms).
        uniforms = torch.promote_types(dtype, torch.float32)
        report = (
            CS.check_rule(CS.drawing_uniforms(rule, dtype=uniforms), seed=seed, dtype=dtype)
            if check == "check_rule"
            else CS.check_rule_exact(rule, seed=seed, dtype=dtype)
        )
    elif (label, check, dtype_name) == SEEN_BY_RULE:
        report = CS.check_rule(CS.drawing_uniforms(zoo.make_rule(zoo.RuleBug.ACCEPT_U_LE)), seed=seed)
    elif label.startswith("power"):  # "power runs=R: bug"
        runs, bug = label.removeprefix("power runs=").split(": ", 1)
        generate = zoo.make_generator(bug or None)
        report = CS.check_generator(generate, runs=int(runs), seed=seed)
    else:
        report = zoo.detect(label.removeprefix("zoo: "), seed=seed)
    first = report.failures[0] if report.failures else ""
    return (label, check, dtype_name), seed, report.passed, time.process_time() - t, first


def main() -> None:
    from aftertrain.checks import zoo

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rules-only", action="store_true", help="skip the generator rows")
    ap.add_argument(
        "--generator-power",
        metavar="RUNS,...",
        default="",
        help="instead: check_generator's detection rate of each generator bug "
        "(and the correct loop's pass rate) at these numbers of runs",
    )
    ap.add_argument("--only", default="", help="run the rows whose label, check or dtype contains this")
    args = ap.parse_args()
    if args.seeds < 1 or args.jobs < 1:
        ap.error("--seeds and --jobs must be >= 1")
    bugs = [
        (f"zoo: {v.name}", v.caught_by.value, str(v.dtype).removeprefix("torch.")) for v in zoo.ZOO.values()
    ]
    rows = CORRECT + bugs + [SEEN_BY_RULE]
    if args.rules_only:
        rows = [r for r in rows if r[1] != "check_generator"]
    if args.generator_power:
        rows = [
            (f"power runs={int(r)}: {b}", "check_generator", "float64")
            for r in args.generator_power.split(",")
            for b in ["", *(g.value for g in zoo.GeneratorBug)]
        ]
    rows = [r for r in rows if any(args.only in field for field in r)]
    jobs = [(r, s) for r in rows for s in range(args.seeds)]
    with Pool(args.jobs) as pool:
        results = pool.map(_one, jobs, chunksize=1)
    print("| implementation | check | dtype | result | seeds | median CPU s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        got = [r for r in results if r[0] == row]
        passed = sum(r[2] for r in got)
        secs = statistics.median(r[3] for r in got)
        if row[0].startswith("correct") or row[0].endswith(": "):
            verdict = f"passes {passed}/{len(got)}"
        else:
            note = " (not expected to see it)" if row == SEEN_BY_RULE else ""
            verdict = f"rejected {len(got) - passed}/{len(got)}{note}"
        print(f"| {row[0]} | {row[1]} | {row[2]} | {verdict} | {len(got)} | {secs:.1f} |")
    for row, seed, ok, _, first in results:
        if (row[0].startswith("correct") or row[0].endswith(": ") or row == SEEN_BY_RULE) != ok:
            print(f"\nunexpected: {row} seed {seed}: {'passed' if ok else first}")


if __name__ == "__main__":
    main()
