"""The cost account of every speculative cell: what share of the loop's
measured time its parts explain (docs/speculative.md, "The cost account").

For every draft and k of the speedup tables, each part of the loop (the
draft's steps and rollback, the target's verification, the rule, the
bookkeeping) is replayed over the seeded run's rounds and timed against the
loop as a paired ratio, in one sequential decision
(:func:`aftertrain.experiments.round_account.account_decisions`, one
thread, alpha 1e-6 over every ratio and look); printed per cell: each
part's share, the account ``A [lo, hi]`` and whether it lies in
0.95-1.05 with its interval inside 0.90-1.10; ``--method`` picks how a
part is timed: ``in-place`` (the default: a clock read around each part
inside the whole loop, the part as the loop runs it), ``alone`` (replayed
by itself, warm: what the parts leave each other cold is missed),
``knockout`` (what the loop saves without the part: that cold cost counted
twice) or ``all`` (one decision each). With ``--speedups`` the
claims' speedup decision runs first and each cell's round is put per target
pass in plain decoding's time per character beside what cpp / (1 + k c)
charges (:func:`aftertrain.experiments.round_account.round_costs`).

    python tools/account_spec.py [--model reference] [--budget 900] [--speedups]
        [--method in-place|alone|knockout|all] [--drafts 8-bit,4-bit] [--ks 2,4,8]

Every cell: 15 cells, 60 ratios, looks at about 30, 60, 120 and 240 pairs
until each cell's interval lies inside 0.90-1.10 (or wholly outside it);
a look of every ratio is about a minute per 30 pairs on an idle 2-core
machine, so 3-8 minutes a method, 10-25 for all; a busy machine reaches
fewer looks within ``--budget`` (docs/log.md). ``--speedups`` adds the
claims' decisions first (about a minute idle). Run it on an idle machine: the
figures are the point, and a busy one widens the intervals.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from aftertrain.experiments import round_account as RA
from aftertrain.experiments import speedup as XU
from aftertrain.experiments import speedup_rules as SR
from aftertrain.lm import registry
from aftertrain.speculative import drafts as D


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=registry.DEFAULT)
    parser.add_argument("--budget", type=float, default=900.0, help="seconds for the account's decision")
    parser.add_argument("--drafts", default=",".join(k.value for k in D.DraftKind))
    parser.add_argument("--ks", default=",".join(map(str, XU.SPEEDUP_KS)))
    parser.add_argument("--speedups", action="store_true", help="also the claims' decisions and round costs")
    parser.add_argument(
        "--method",
        choices=[m.value for m in RA.Method] + ["all"],
        default=RA.Method.IN_PLACE.value,
        help="parts timed in place in the loop (default), replayed alone, knocked out of the loop, "
        "or all three (one decision each)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    target, _ = registry.load_model(args.model)
    target.eval()
    kinds = {k.value: k for k in D.DraftKind}
    names = args.drafts.split(",")
    models = {name: D.draft_model(kinds[name], target) for name in kinds}
    cells = {(name, int(k)): models[name] for name in names for k in args.ks.split(",")}
    print(f"model {args.model}; load before {os.getloadavg()[0]:.2f}", flush=True)
    speedups = {}
    if args.speedups:
        decisions, cpp = XU.speedup_decisions(target, models, budget_s=args.budget / len(XU.RULES))
        timed = str(SR.RatioKey.speedup(names[0], int(args.ks.split(",")[0])))
        last = max(decisions.values(), key=lambda d: d.looks if timed in d.timings else -1)
        speedups = {(r.draft, r.k): r for r in XU.speedup_tables(last, cpp).speedups}
    methods = list(RA.Method) if args.method == "all" else [RA.Method(args.method)]
    for method in methods:
        start = time.perf_counter()
        decided = RA.account_decisions(target, cells, budget_s=args.budget, method=method)
        print(
            f"account, parts {method.value}: {time.perf_counter() - start:.0f} s, "
            f"load after {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for (name, k), decision in decided.items():
            _print_cell(decision, name, k, method, speedups.get((name, k)))


def _print_cell(decision, name: str, k: int, method: RA.Method, speedup) -> None:
    """One cell's account line, and its round costs when ``speedup`` (its SpeedupRow) is given."""
    if decision.looks == 0:
        print(f"{name} k={k}: not timed ({decision.note})")
        return
    row = RA.account_row(decision, name, k, method)
    parts = " ".join(f"{p.value} {row.shares[p]:.3f}" for p in RA.Part)
    print(
        f"{name} k={k}: accounted {row.accounted:.3f} [{row.low:.3f}, {row.high:.3f}] "
        f"{'explained' if row.explained else 'NOT explained'} ({parts}; look {row.looks}, "
        f"{row.pairs} pairs, {decision.verdict})"
    )
    if speedup is not None:
        cost = RA.round_costs(row, speedup)
        print(
            f"    per target pass in plain characters' time: verification {cost.verification:.2f} "
            f"(charged 1), drafting {cost.drafting:.2f} (charged k c {cost.charged_drafting:.2f}), "
            f"bookkeeping {cost.bookkeeping:.2f}, beyond the parts {cost.unaccounted:.2f}; overrates most: "
            f"{cost.overrates}; speedup "
            f"{speedup.speedup:.2f}, predicted {speedup.predicted:.2f}, with v_k {speedup.predicted_vk:.2f}"
        )


if __name__ == "__main__":
    main()
