"""``aftertrain sample --draft NAME --k K``: one speculative run, its
figures, and its speedup over plain decoding timed as paired ratios
(:func:`aftertrain.timing.paired_timing`: the same run and plain decoding of
the same length and seed, alternating, on one thread; never an absolute time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from aftertrain.core.validation import check_int
from aftertrain.lm import text as _text
from aftertrain.lm.protocol import NextTokenModel
from aftertrain.speculative.generator import SpeculativeResult, speculative_generate

#: Alternating pairs of plain and speculative runs behind ``aftertrain sample --draft``'s
#: speedup (the fewest for a 99% interval of the median).
SAMPLE_PAIRS = 8


@dataclass(frozen=True)
class SampleRun:
    """A speculative run's text and figures, and its speedup timed as
    paired ratios (plain / speculative time for the same characters and seed;
    ``speedup_low``/``speedup_high``: the 99% interval of the median)."""

    text: str
    chars_per_pass: float | None
    acceptance: float | None
    speedup: float
    speedup_low: float
    speedup_high: float
    pairs: int


def sample_run(
    target: NextTokenModel,
    draft: NextTokenModel,
    prompt: str,
    length: int,
    k: int,
    temperature: float = 1.0,
    seed: int = 0,
    pairs: int = SAMPLE_PAIRS,
    progress: Callable[[str], None] | None = None,
) -> SampleRun:
    """``length`` characters after ``prompt`` by speculative decoding with
    ``draft`` at ``k`` (seeded by ``seed``), and the speedup of that run:
    the same run and plain decoding of the same length and seed, timed
    alternately in ``pairs`` pairs on one thread (:func:`aftertrain.timing.paired_timing`).
    ``progress(stage)`` is told each run as it starts (a few words: it is
    called inside the timed runs, so it must only note them)."""
    from aftertrain.lm.decoding import generate
    from aftertrain.timing import paired_timing

    check_int("length", length, least=1)
    check_int("k", k, least=1)
    check_int("seed", seed, least=0)

    def spec() -> SpeculativeResult:
        return speculative_generate(
            target, draft, prompt, length, k, temperature, torch.Generator().manual_seed(seed)
        )

    note = progress or (lambda stage: None)
    note(f"the speculative run ({length} characters, k={k})")
    r = spec()
    ids = _text.encode(prompt)
    warmup = 1
    runs = 2 * (pairs + warmup)
    done = [0]

    def counted(fn: Callable[[], object], what: str) -> Callable[[], None]:
        def run() -> None:
            done[0] += 1
            note(f"timing the speedup: run {done[0]} of {runs} ({what})")
            fn()

        return run

    def plain() -> None:
        generate(target, ids, length, temperature, torch.Generator().manual_seed(seed))

    t = paired_timing(counted(plain, "plain"), counted(spec, "speculative"), pairs=pairs, warmup=warmup)
    return SampleRun(
        r.text, r.chars_per_pass, r.acceptance_rate, 1.0 / t.median, 1.0 / t.ci_high, 1.0 / t.ci_low, pairs
    )


#: ``aftertrain sample --draft NAME``: the drafts by their command-line names.
DRAFT_NAMES = {"bigram": "BIGRAM", "n-gram": "NGRAM", "8-bit": "INT8", "4-bit": "INT4", "gpt": "GPT"}


def sample_with_draft(
    target: NextTokenModel,
    name: str,
    prompt: str,
    length: int,
    k: int,
    temperature: float,
    seed: int,
    progress: Callable[[str], None] | None = None,
) -> tuple[str, str]:
    """``aftertrain sample --draft NAME --k K``: the generated text and one
    line of its figures (characters per target pass, acceptance, the speedup
    measured on the run, :func:`sample_run`, told ``progress``)."""
    from aftertrain.speculative import drafts as D

    if name not in DRAFT_NAMES:
        raise ValueError(f"draft must be one of {sorted(DRAFT_NAMES)}, got {name!r}")
    draft = D.draft_model(D.DraftKind[DRAFT_NAMES[name]], target)
    if length == 0:
        return "", f"speculative ({name} draft, k={k}): no characters asked for, nothing timed"
    r = sample_run(target, draft, prompt, length, k, temperature, seed, progress=progress)
    acc = "n/a" if r.acceptance is None else f"{r.acceptance:.3f}"
    cpp = "n/a" if r.chars_per_pass is None else f"{r.chars_per_pass:.2f}"
    return r.text, (
        f"speculative ({name} draft, k={k}): {cpp} characters per target pass, "
        f"acceptance {acc}; speedup over plain decoding on this run {r.speedup:.2f}x "
        f"(99% interval {r.speedup_low:.2f}-{r.speedup_high:.2f}, {r.pairs} "
        f"alternating pairs, one thread)"
    )
