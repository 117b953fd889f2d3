"""Where the microseconds of the speculative loop go (docs/speculative.md).

Times, on one thread, the pieces of the three steps the speedup experiment
times against each other (:func:`aftertrain.experiments.speculative.plain_step`,
``draft_step``, ``verify_step``): a drafted character from a table, a plain
cached step, a verification pass over k+1 positions; and the model's cached
forward over T = 1..9 new positions, fitted as ``a + b T``. Each figure is the
median of ``--repeats`` single calls (``perf_counter_ns``), the pieces of a
step interleaved round-robin so a drift in load touches them alike.

    python tools/profile_spec.py [--model reference] [--repeats 3000] [--ops]
    python tools/profile_spec.py --only round [--repeats 300]
    python tools/profile_spec.py --only blocks [--repeats 224] [--calls 1,2,4,8,16]
    python tools/profile_spec.py --only decision [--configs 1:112,2:56,4:28] [--runs 3]

``--only round`` times the speedup's two timed calls
(:func:`aftertrain.experiments.speculative.plain_decoding` and
``speculative_decoding``: the decoding after the prompt, 30 characters)
against the steps the formula charges run back to back (:func:`round_pieces`),
and v_k strictly alternating, as the cost decision times it, and back to
back; ``--only blocks`` times the cost decision's ratios as paired blocks of
``m`` calls (``--calls``) and every cell's share with the costs of each
``m`` (:func:`cost_blocks`); ``--only decision`` runs the cost decision
itself at ``calls=m`` (:func:`cost_decisions`);
``--chars`` sets the characters (default: the experiment's).

Absolute microseconds are this machine's; the docs quote them with the
machine and the load (``uptime``), and the ratios between them.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np
import torch

from aftertrain.experiments import speculative as XS
from aftertrain.lm import registry
from aftertrain.lm import text as _text
from aftertrain.lm.decoding import Decoder, check_logits, probabilities, sample_token
from aftertrain.speculative import drafts as D
from aftertrain.speculative.drafters import drafter
from aftertrain.speculative.generator import round_rule, verify_round
from aftertrain.speculative.table_drafts import draw_from_cdf


def interleaved(pieces: dict, repeats: int, warmup: int) -> dict[str, list[int]]:
    """Nanoseconds of each call of each piece, ``repeats`` rounds interleaved
    round-robin after ``warmup`` untimed calls of each."""
    clock = time.perf_counter_ns
    times = {name: [] for name in pieces}
    for fn in pieces.values():
        for _ in range(warmup):
            fn()
    for _ in range(repeats):
        for name, fn in pieces.items():
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    return times


def medians(pieces: dict, repeats: int) -> dict[str, float]:
    """Median microseconds of one call of each piece, interleaved round-robin."""
    times = interleaved(pieces, repeats, warmup=50)
    return {name: statistics.median(t) / 1000 for name, t in times.items()}


def show(title: str, figures: dict[str, float]) -> None:
    print(f"\n## {title}")
    for name, us in figures.items():
        print(f"  {us:9.2f} us  {name}")


def draft_pieces(model, ids: list[int], repeats: int) -> None:
    for kind in (D.DraftKind.BIGRAM, D.DraftKind.NGRAM):
        draft = D.draft_model(kind, model)
        got = one_draft(draft, ids, repeats)
        show(f"a drafted character, {kind.value} (context {drafter(draft, 1.0).table.context})", got)


def one_draft(draft, ids: list[int], repeats: int) -> dict[str, float]:
    d = drafter(draft, 1.0)
    table = d.table
    g = torch.Generator().manual_seed(0)
    key = table.key(ids)
    row = table.row(key)
    u1, u8 = [0.5], [0.5] * 8
    pieces = {
        "nothing (the clock's own cost)": lambda: None,
        "draft_step (as timed: rand(1) + draft + rollback)": XS.draft_step(draft, 1.0),
        "torch.rand(1, float64).tolist()": lambda: torch.rand(1, dtype=torch.float64, generator=g).tolist(),
        "drafter.draft(ids, 1, u)": lambda: d.draft(ids, 1, u1),
        "key + row look-up": lambda: table.row(table.key(ids)),
        "draw_from_cdf (min, nextafter, bisect)": lambda: draw_from_cdf(row.cdf, 0.5),
        "drafter.draft(ids, 8, u*8) / 8": lambda: d.draft(ids, 8, u8),
    }
    got = medians(pieces, repeats)
    got["drafter.draft(ids, 8, u*8) / 8"] /= 8
    return got


def plain_pieces(model, ids: list[int], repeats: int) -> dict[str, float]:
    dec = Decoder(model)
    logits = dec.feed(ids)[-1]
    n = len(ids)
    g = torch.Generator().manual_seed(0)
    cache = dec.cache
    x1 = torch.tensor([[ids[-1]]])

    def feed_one():
        dec.feed([ids[-1]])
        dec.truncate(n)

    def forward_one():
        model(x1, cache=cache)
        cache.truncate(n)

    pieces = {
        "plain_step (as timed)": XS.plain_step(model, 1.0),
        "sample_token (checks, softmax float64, multinomial)": lambda: sample_token(logits, 1.0, g),
        "probabilities(logits, 1.0)": lambda: probabilities(logits, 1.0),
        "check_logits": lambda: check_logits(logits),
        "Decoder.feed([t]) + truncate": feed_one,
        "model(x, cache) + cache.truncate": forward_one,
        "cache.truncate alone": lambda: cache.truncate(n),
    }
    got = medians(pieces, repeats)
    show("a plain step", got)
    return got


def verify_pieces(model, ids: list[int], repeats: int) -> None:
    rows = {}
    for k in (2, 4, 8):
        step = XS.verify_step(model, k, 1.0)
        dec = Decoder(model)
        dec.feed(ids[:-1])
        drafts = ids[-k - 1 : -1]
        n = len(ids) - 1
        x = torch.tensor([ids[-1:] + drafts])
        logits = dec.feed(ids[-1:] + drafts)
        dec.truncate(n)
        p = probabilities(logits, 1.0)
        q = [p[i].tolist() for i in range(k)]
        qx = [r[t] for r, t in zip(q, drafts, strict=True)]
        u = [0.0] * (k - 1) + [math.nextafter(1.0, 0.0)]

        def feed(dec=dec, drafts=drafts, n=n):
            dec.feed(ids[-1:] + drafts)
            dec.truncate(n)

        def forward(x=x, n=n, cache=dec.cache):
            model(x, cache=cache)
            cache.truncate(n)

        def rule(logits=logits, drafts=drafts, q=q, qx=qx, u=u):
            return round_rule(logits, drafts, q, qx, u, 0.5, 1.0)

        pieces = {
            f"verify_step k={k} (as timed)": step,
            f"Decoder.feed(k+1) + truncate k={k}": feed,
            f"model(x, cache) k+1={k + 1} + truncate": forward,
            f"distributions + rule (round_rule) k={k}": rule,
            f"verify_round k={k} + truncate": lambda dec=dec, drafts=drafts, q=q, qx=qx, u=u, n=n: (
                verify_round(dec, ids, drafts, q, qx, u, 0.5, 1.0),
                dec.truncate(n),
            ),
        }
        rows[k] = medians(pieces, repeats)
        show(f"a verification pass, k={k}", rows[k])


def forward_fit(model, ids: list[int], repeats: int) -> None:
    """The cached forward over T new positions after len(ids) - 9 cached ones, T = 1..9."""
    n = len(ids) - 9
    cache = model.new_cache()
    model(torch.tensor([ids[:n]]), cache=cache)
    pieces = {}
    for T in range(1, 10):
        x = torch.tensor([ids[n : n + T]])

        def fwd(x=x):
            model(x, cache=cache)
            cache.truncate(n)

        pieces[T] = fwd
    got = medians(pieces, repeats)
    T = np.array(list(got), dtype=float)
    y = np.array(list(got.values()))
    b, a = np.polyfit(T, y, 1)
    show("cached forward over T positions", {f"T={t}": v for t, v in got.items()})
    print(
        f"  fit: a = {a:.1f} us per call, b = {b:.2f} us per position; "
        f"floor of v_k = (a + b (k+1)) / (a + b): "
        + ", ".join(f"k={k} {(a + b * (k + 1)) / (a + b):.3f}" for k in (2, 4, 8))
    )


def round_pieces(model, repeats: int, chars: int) -> None:
    """Is a timed call of the speedup the sum of the steps the formula
    charges? Per draft and k, four calls alternate in one process: the timed
    plain call (:func:`aftertrain.experiments.speculative.plain_decoding`),
    ``chars`` plain steps back to back, the timed speculative call
    (``speculative_decoding``), and its rounds' steps back to back (``passes``
    verification steps of k+1 positions and ``drafted`` drafted
    characters); each ratio is the median of the per-repeat ratios. Then v_k
    as the cost decision times it (single calls alternating with a plain
    step) against v_k back to back (blocks of ten calls of each step in a
    row, alternating, the median of the block ratios)."""
    from aftertrain.speculative import speculative_generate

    prompt = XS.prompt_text()
    plain, step = XS.plain_decoding(model, chars, 1.0), XS.plain_step(model, 1.0)
    clock = time.perf_counter_ns
    print(
        f"\n## the timed calls ({chars} characters) against their steps back to back "
        f"(medians of {repeats} paired ratios)"
    )
    print("  draft      k  passes drafted  plain/steps  spec/steps  speedup  steps' speedup  share of it")
    for kind in (D.DraftKind.BIGRAM, D.DraftKind.NGRAM, D.DraftKind.GPT):
        draft = D.draft_model(kind, model)
        dstep = XS.draft_step(draft, 1.0)
        for k in (2, 4, 8):
            r = speculative_generate(
                model, draft, prompt, chars, k, 1.0, torch.Generator().manual_seed(XS.SEED)
            )
            spec, verify = XS.speculative_decoding(model, draft, k, chars, 1.0), XS.verify_step(model, k, 1.0)

            def steps(n=chars):
                for _ in range(n):
                    step()

            def rounds(r=r, verify=verify, dstep=dstep):
                for _ in range(r.target_passes):
                    verify()
                for _ in range(r.drafted):
                    dstep()

            times = interleaved(
                {"plain": plain, "steps": steps, "spec": spec, "rounds": rounds}, repeats, warmup=1
            )

            def ratio(a, b, times=times):
                return statistics.median([x / y for x, y in zip(times[a], times[b], strict=True)])

            print(
                f"  {kind.value:9s} {k:2d}  {r.target_passes:6d} {r.drafted:7d}  "
                f"{ratio('plain', 'steps'):11.3f} {ratio('spec', 'rounds'):11.3f}  "
                f"{ratio('plain', 'spec'):7.2f}  {ratio('steps', 'rounds'):14.2f}  "
                f"{ratio('plain', 'spec') / ratio('steps', 'rounds'):11.2f}"
            )
    from aftertrain.timing.paired import Pairs

    vk = {}
    for k in (2, 4, 8):
        verify = XS.verify_step(model, k, 1.0)
        alternating = [], []  # step, verify, step, verify, ...: strictly alternating single calls
        for _ in range(repeats * 10):
            for side, fn in zip(alternating, (step, verify), strict=True):
                t0 = clock()
                fn()
                side.append(clock() - t0)
        pairs = Pairs(step, verify, 1, time.perf_counter)  # as the cost decision times it
        pairs.extend(repeats * 10)
        blocks = [], []  # ten calls of a step in a row, then ten of the other: paired blocks
        for _ in range(repeats):
            for side, fn in zip(blocks, (step, verify), strict=True):
                t0 = clock()
                for _ in range(10):
                    fn()
                side.append(clock() - t0)
        vk[k] = (
            statistics.median([v / s for s, v in zip(*alternating, strict=True)]),
            statistics.median([v / s for s, v in zip(pairs.base, pairs.cand, strict=True)]),
            statistics.median([v / s for s, v in zip(*blocks, strict=True)]),
        )
    print(
        "  v_k strictly alternating single calls / as the cost decision times it (Pairs, "
        "calls=1: pairs b c, c b, ...) / back to back (blocks of ten): "
        + ", ".join(f"k={k} {a:.3f} / {p:.3f} / {b:.3f}" for k, (a, p, b) in vk.items())
    )


def cost_blocks(model, repeats: int, calls: tuple[int, ...], chars: int) -> None:
    """How should c and v_k be timed for ``cpp / (v_k + k c)`` to predict the
    loop? The cost decision's eight ratios (each draft's step against a plain
    step: c; a verification pass over k+1 positions against a plain step:
    v_k) timed as paired blocks of ``m`` calls a side for each ``m`` of
    ``calls`` (:class:`aftertrain.timing.paired.Pairs`, as the decision times
    them with ``calls=m``), and the speedup of every cell (plain call /
    speculative call, ``chars`` characters), all in one process, a pair of
    each in turn per round so a drift in load touches them alike. Prints the
    medians of c and v_k per ``m`` and each cell's share ``speedup /
    (cpp / (v_k + k c))`` with the costs of each ``m``; and the seconds a
    pair of the eight cost ratios took at each ``m``."""
    import gc

    from aftertrain.experiments.speedup import SPEEDUP_KS
    from aftertrain.speculative import speculative_generate
    from aftertrain.timing.paired import Pairs

    prompt = XS.prompt_text()
    clock = time.perf_counter
    drafts = {kind.value: D.draft_model(kind, model) for kind in D.DraftKind}
    sides = {f"c:{n}": (XS.plain_step(model, 1.0), XS.draft_step(d, 1.0)) for n, d in drafts.items()}
    sides |= {f"v:{k}": (XS.plain_step(model, 1.0), XS.verify_step(model, k, 1.0)) for k in SPEEDUP_KS}
    costs = {(m, n): Pairs(b, c, m, clock) for m in calls for n, (b, c) in sides.items()}
    plain = XS.plain_decoding(model, chars, 1.0)
    cells = {
        (n, k): Pairs(plain, XS.speculative_decoding(model, d, k, chars, 1.0), 1, clock)
        for n, d in drafts.items()
        for k in SPEEDUP_KS
    }
    cpp = {
        (n, k): speculative_generate(
            model, d, prompt, chars, k, 1.0, torch.Generator().manual_seed(XS.SEED)
        ).chars_per_pass
        for n, d in drafts.items()
        for k in SPEEDUP_KS
    }
    runs = list(costs.values()) + list(cells.values())
    seconds = dict.fromkeys(calls, 0.0)
    gc.disable()
    try:
        for run in runs:
            run.warm(2)
        for i in range(repeats):
            for (m, _), run in costs.items():
                t0 = clock()
                run.extend(i + 1)
                seconds[m] += clock() - t0
            for run in cells.values():
                run.extend(i + 1)
    finally:
        gc.enable()

    def med(run: Pairs) -> float:
        return float(np.median(np.asarray(run.cand) / np.asarray(run.base)))

    def iqr(run: Pairs) -> float:
        q1, q3 = np.percentile(np.asarray(run.cand) / np.asarray(run.base), [25, 75])
        return float(q3 - q1)

    print(
        f"\n## the costs as paired blocks of m calls a side ({repeats} pairs each, medians; "
        f"load {os.getloadavg()[0]:.2f} at the end)"
    )
    print("  m  " + "  ".join(f"{n:>14s}" for n in sides) + "   s/pair of all 8")
    for m in calls:
        print(
            f"  {m:2d} "
            + "  ".join(f"{med(costs[m, n]):6.3f} iqr{iqr(costs[m, n]):5.3f}" for n in sides)
            + f"   {seconds[m] / repeats:.4f}"
        )
    from aftertrain.core.tolerances import TIMING_ALPHA, TIMING_LOOKS
    from aftertrain.timing.paired import median_interval, min_pairs

    confidence = 1.0 - TIMING_ALPHA / 2 / (TIMING_LOOKS * len(sides))  # the cost decision's
    n1 = 4 * min_pairs(confidence)  # the default first look (COST_CALLS = 1, COST_FIRST_LOOKS = 4)
    print(
        f"\n## each ratio's interval at the cost decision's confidence, at the pairs that cost "
        f"what {n1} single pairs cost (n = {n1} / m, at least {min_pairs(confidence)}) and at "
        f"twice that (the first {n1 // calls[0]} pairs of each m)"
    )
    print("  m  n  " + "  ".join(f"{n:>13s}" for n in sides))
    for m in calls:
        for n in (max(n1 // m, min_pairs(confidence)), 2 * max(n1 // m, min_pairs(confidence))):
            if n > repeats:
                continue
            line = []
            for name in sides:
                r = costs[m, name]
                lo, hi, _ = median_interval(np.asarray(r.cand[:n]) / np.asarray(r.base[:n]), confidence)
                line.append(f"{lo:6.3f}-{hi:6.3f}")
            print(f"  {m:2d} {n:3d} " + "  ".join(line))
    print(
        f"\n## each cell's share of cpp / (v_k + k c) with the costs of each m "
        f"(speedup: plain / speculative, {chars} characters, {repeats} pairs)"
    )
    print("  draft      k   cpp  speedup  " + "  ".join(f"m={m:<3d}" for m in calls))
    for (n, k), run in cells.items():
        s = float(np.median(np.asarray(run.base) / np.asarray(run.cand)))
        shares = [s * (med(costs[m, f"v:{k}"]) + k * med(costs[m, f"c:{n}"])) / cpp[n, k] for m in calls]
        print(f"  {n:9s} {k:2d}  {cpp[n, k]:4.2f}  {s:7.3f}  " + "  ".join(f"{x:5.3f}" for x in shares))


def cost_decisions(model, configs: tuple[tuple[int, int], ...], runs: int) -> None:
    """The cost decision exactly as :func:`aftertrain.experiments.speedup.speedup_decisions`
    runs it (its eight ratios, S5 and X8's cost rule at alpha / 2, every
    ratio every look) at ``calls=m`` and a first look of ``first`` pairs for
    each ``(m, first)`` of ``configs``, ``runs`` times, alternating: its
    seconds, verdicts, looks and the medians and intervals it ends on."""
    from aftertrain.core.tolerances import TIMING_ALPHA
    from aftertrain.experiments import speedup as XU
    from aftertrain.experiments.speedup_rules import COST_RULES, RULES, Cells
    from aftertrain.timing import Judgement, sequential_decisions

    drafts = {kind.value: D.draft_model(kind, model) for kind in D.DraftKind}
    cpp = {(d, k): 1.0 for d in drafts for k in XU.SPEEDUP_KS}  # the cost rules read only the ks
    print(f"\n## the cost decision at calls=m, first look of `first` pairs ({runs} runs, alternating)")
    for run in range(runs):
        for m, first in configs:
            judgements = {
                n: Judgement(RULES[n][0], lambda t, f=RULES[n][1]: f(Cells(t, cpp))) for n in COST_RULES
            }
            t0 = time.perf_counter()
            got = sequential_decisions(
                XU._cost_ratios(model, drafts),
                judgements,
                calls=m,
                alpha=TIMING_ALPHA / 2,
                budget_s=120.0 * len(COST_RULES),
                every_ratio=True,
                first=first,
            )
            seconds = time.perf_counter() - t0
            t = max(got.values(), key=lambda d: d.looks).timings
            print(
                f"  run {run} m={m} first={first}: {seconds:.2f} s, load "
                f"{os.getloadavg()[0]:.2f}; "
                + ", ".join(f"{n} {d.verdict} at look {d.looks}" for n, d in got.items())
            )
            print(
                "    "
                + "  ".join(f"{n} {p.median:.3f} [{p.ci_low:.3f}, {p.ci_high:.3f}]" for n, p in t.items())
            )


def op_profile(model, ids: list[int]) -> None:
    from torch.profiler import ProfilerActivity, profile

    n = len(ids) - 9
    for T in (1, 5, 9):
        cache = model.new_cache()
        model(torch.tensor([ids[:n]]), cache=cache)
        x = torch.tensor([ids[n : n + T]])
        for _ in range(50):
            model(x, cache=cache)
            cache.truncate(n)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(500):
                model(x, cache=cache)
                cache.truncate(n)
        print(f"\n## ops of the cached forward, T={T} (500 calls; self CPU totals)")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="reference")
    ap.add_argument("--repeats", type=int, default=3000)
    ap.add_argument("--ops", action="store_true", help="also torch.profiler's per-op table")
    ap.add_argument(
        "--only", default=None, choices=("draft", "plain", "verify", "fit", "round", "blocks", "decision")
    )
    ap.add_argument(
        "--chars",
        type=int,
        default=None,
        help="characters of the timed calls (--only round; default SPEEDUP_CHARS)",
    )
    ap.add_argument("--calls", default="1,2,4,8,16", help="block sizes m of the cost ratios (--only blocks)")
    ap.add_argument(
        "--configs", default="1:112,2:56,4:28", help="m:first of each cost decision (--only decision)"
    )
    ap.add_argument("--runs", type=int, default=3, help="runs of each (--only decision)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, _ = registry.load_model(args.model)
    ids = _text.encode(XS.prompt_text()).tolist()
    print(
        f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}, 1 thread, "
        f"load {os.getloadavg()[0]:.2f}, {args.repeats} repeats, medians"
    )
    with torch.no_grad():
        if args.only in (None, "draft"):
            draft_pieces(model, ids, args.repeats)
        if args.only in (None, "plain"):
            plain_pieces(model, ids, args.repeats)
        if args.only in (None, "verify"):
            verify_pieces(model, ids, args.repeats)
        if args.only in (None, "fit"):
            forward_fit(model, ids, args.repeats)
        if args.only in (None, "round"):
            from aftertrain.experiments.speedup import SPEEDUP_CHARS

            round_pieces(model, args.repeats, args.chars or SPEEDUP_CHARS)
        if args.only == "blocks":
            from aftertrain.experiments.speedup import SPEEDUP_CHARS

            calls = tuple(int(m) for m in args.calls.split(","))
            cost_blocks(model, args.repeats, calls, args.chars or SPEEDUP_CHARS)
        if args.only == "decision":
            configs = tuple(tuple(int(x) for x in c.split(":")) for c in args.configs.split(","))
            cost_decisions(model, configs, args.runs)
        if args.ops:
            op_profile(model, ids)


if __name__ == "__main__":
    main()
