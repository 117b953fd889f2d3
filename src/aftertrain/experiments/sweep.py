"""The quality sweep: the key figures of Q4-Q7, P1/P2 and S4
on checkpoints of one training run at several validation losses.

The README explains the claims that do not reproduce on the reference by its
quality ("our model is much better than the article's, so it degrades more
gently"). The sweep measures that: the same figures on the run's checkpoints
after 250, 950 (``article``), 1,250 and 3,750 (``reference``) steps, so a plot
against validation loss shows where each claim flips.

:func:`key_figures` measures one model with the experiments of
:mod:`aftertrain.experiments.quant`, :mod:`.prune` and :mod:`.speculative`;
:func:`figures_from_tables` takes the same figures from a claims ledger's
tables instead (a model whose suite has run is not measured again); both
return :class:`KeyFigures`, the experiments' own rows (the sweep's row types
and enums are in :mod:`aftertrain.experiments.sweep_points`). :func:`margins` turns
them into one number per :class:`Margin` whose side of its threshold
(:data:`THRESHOLDS`, a :class:`Side`) says whether the claim holds, and a
:class:`SweepPoint` is one checkpoint's line of the sweep file. No printing,
no global seeding: the experiments seed their own generators.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch
from torch import nn

from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.core.validation import check_int
from aftertrain.core.weights import weight_matrices
from aftertrain.experiments import prune as EP
from aftertrain.experiments import quant as EQ
from aftertrain.experiments import speculative as XS
from aftertrain.experiments import tables as ET
from aftertrain.experiments.article import ARTICLE

# The sweep's typed points, importable from here as before (``sweep.SweepPoint``).
from aftertrain.experiments.sweep_points import (  # noqa: F401 (re-exported)
    POSITION_EMBEDDING,
    THRESHOLDS,
    TOKEN_EMBEDDING,
    EmbeddingRms,
    Fragility,
    KeyFigures,
    LargestWeight,
    Margin,
    Side,
    SpeculativeFigure,
    SweepPoint,
    Threshold,
    Training,
)
from aftertrain.lm.evaluation import val_loss
from aftertrain.lm.model import GPT
from aftertrain.lm.ngram import Bigram
from aftertrain.quant import Granularity
from aftertrain.speculative.drafts import DraftKind, draft_model

#: Bit widths of the bits table (Q4-Q6).
BITS = (8, 6, 4, 3, 2)
#: Pruning figures: the three methods at 30% (P1) and random at 5% (P2).
P1_SPARSITY = 0.3
P2_SPARSITY = 0.05
#: Acceptance of these drafts at these k (S4).
DRAFTS = (DraftKind.BIGRAM, DraftKind.INT8)
KS = (1, 8)


def _check_model(model: object) -> None:
    if not isinstance(model, GPT):
        raise ValueError(f"model must be an aftertrain.lm.model.GPT, got {type(model).__name__}")


def _check_ints(name: str, values: object, low: int, high: int, need: Iterable[int] = ()) -> tuple:
    if isinstance(values, (int, str)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a sequence of ints in [{low}, {high}], got {values!r}")
    values = tuple(values)
    if not values or any(
        not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high for v in values
    ):
        raise ValueError(f"{name} must be a non-empty sequence of ints in [{low}, {high}], got {values!r}")
    missing = [n for n in need if n not in values]
    if missing:
        raise ValueError(f"{name} must include {missing} (the figures the sweep reports), got {values!r}")
    return values


def key_figures(
    model: nn.Module,
    *,
    bits: Sequence[int] = BITS,
    names: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    n_new: int | None = None,
    tokens: torch.Tensor | None = None,
) -> KeyFigures:
    """Measure the sweep's key figures on ``model``.

    ``bits`` (must include 2, 3, 4), ``names`` (the matrices tried one at a
    time at 4 bits; default all 2-D weights, must include ``tok.weight``,
    ``pos.weight`` and one block matrix), ``seeds`` (random pruning; default the suite's five),
    ``n_new`` (characters per acceptance run; default the suite's 200) and
    ``tokens`` (the evaluation split; default the validation split) exist so a
    test can run it small.
    """
    _check_model(model)
    bits = _check_ints("bits", bits, 2, 8, need=(2, 3, 4))
    seeds = EP.RANDOM_SEEDS if seeds is None else _check_ints("seeds", seeds, 0, 2**31 - 1)
    n_new = XS.N_NEW if n_new is None else n_new
    check_int("n_new", n_new, least=1)
    if names is not None:
        names = list(names)
        if (
            TOKEN_EMBEDDING not in names
            or POSITION_EMBEDDING not in names
            or not any(n.startswith("blocks.") for n in names)
        ):
            raise ValueError(
                f"names must include {TOKEN_EMBEDDING!r}, {POSITION_EMBEDDING!r} and "
                f"one block matrix ('blocks.…'), got {names!r}"
            )

    def evaluate(m: nn.Module) -> float:
        return val_loss(m, tokens)

    rows = EQ.bits_table(model, bits, tokens)
    sens = EQ.sensitivity_table(model, 4, Granularity.PER_CHANNEL, tokens, names=names)
    curve = EP.LossCurve(model, evaluate)
    p1 = EP.loss_table(curve, (P1_SPARSITY,), seeds)
    p2 = EP.random_table(curve, (P2_SPARSITY,), seeds)
    drafts = {k.value: draft_model(k, model) for k in DRAFTS}
    s4 = XS.acceptance_table(model, drafts, KS, n_new)
    return KeyFigures(
        evaluate(model),
        val_loss(Bigram.fit(), tokens),
        tuple(rows),
        tuple(sens),
        tuple(p1),
        tuple(p2),
        tuple(s4),
    )


#: S6/S7 without a clock: the drafts and k of the article's speedup table, and
#: its measured draft costs c (a draft character over a target pass, S5).
SPEC_DRAFTS = (DraftKind.BIGRAM, DraftKind.INT8, DraftKind.INT4)
SPEC_KS = (2, 4, 8)


def speculative_figures(model: nn.Module, *, n_new: int | None = None) -> tuple[SpeculativeFigure, ...]:
    """What S6 and S7 rest on that needs no timing, per draft and k of
    :data:`SPEC_DRAFTS` x :data:`SPEC_KS` (one ``n_new``-character run each,
    :func:`aftertrain.experiments.speculative.acceptance_table`).

    ``formula_article_c = cpp / (1 + k c)`` is S7's formula with the
    article's measured cost ``c`` of that draft (so only the acceptance is
    this model's), and ``break_even_c = (cpp - 1) / k`` the largest draft
    cost at which the formula still predicts a speedup (> 1). The speedup
    itself is a timing and is not measured here.
    """
    _check_model(model)
    n_new = XS.N_NEW if n_new is None else n_new
    check_int("n_new", n_new, least=1)
    drafts = {d.value: draft_model(d, model) for d in SPEC_DRAFTS}
    rows = XS.acceptance_table(model, drafts, SPEC_KS, n_new)
    cost = {a.draft: a.c for a in ARTICLE.s5}
    return tuple(
        SpeculativeFigure(
            r.draft,
            r.k,
            r.acceptance,
            r.chars_per_pass,
            r.chars_per_pass / (1 + r.k * cost[r.draft]),
            (r.chars_per_pass - 1) / r.k,
        )
        for r in rows
    )


def fragility(model: nn.Module, q7: Sequence[EQ.SensitivityRow]) -> Fragility:
    """What could make a model fragile under rounding and pruning.

    - ``weight_range``: Q10's max / median of the rows' ranges ``max|w|``,
      per 2-D weight (``matrices``), the worst and the median;
    - ``activations``: Q10's activation sites, max / median over channels of
      ``max|x|`` (``ratio``) and the largest ``|x|`` (``max``);
    - ``rms``: the root mean square of each 2-D weight, and
      ``embedding_over_blocks``: tok's and pos's RMS over the RMS of all the
      blocks' 2-D weights together;
    - ``max_abs``: the largest ``|w|`` of the model and the matrix holding it;
    - ``q7_share``: each matrix's 4-bit penalty (``q7``, rows of
      :func:`aftertrain.experiments.quant.sensitivity_table`) over the sum of
      all the penalties: the fraction of the summed 4-bit loss
      change it makes (noisy where the sum is near 0: penalties can be negative).
    """
    _check_model(model)
    weights = {n: p.detach() for n, p in weight_matrices(model).items()}
    rms = {n: float(w.double().pow(2).mean().sqrt()) for n, w in weights.items()}
    block = torch.cat([w.flatten() for n, w in weights.items() if n.startswith("blocks.")])
    block_rms = float(block.double().pow(2).mean().sqrt())
    peak = max(weights, key=lambda n: float(weights[n].abs().max()))
    total = sum(r.penalty for r in q7)
    return Fragility(
        weight_range=EQ.weight_range_ratios(model),
        activations=EQ.activation_channel_ratios(model),
        rms=rms,
        embedding_over_blocks=EmbeddingRms(
            rms[TOKEN_EMBEDDING] / block_rms, rms[POSITION_EMBEDDING] / block_rms
        ),
        max_abs=LargestWeight(peak, float(weights[peak].abs().max())),
        q7_share={r.name: (r.penalty / total if total else math.nan) for r in q7},
    )


def _near(rows, sparsity: float) -> tuple:
    return tuple(r for r in rows if math.isclose(r.sparsity, sparsity, abs_tol=1e-9))


def figures_from_tables(ledger: LedgerFile) -> KeyFigures | None:
    """The key figures from a claims ledger's tables (the suite measured them
    already), or None when one of the tables is missing."""
    q4, b1, q7 = ledger.table(ET.Q4), ledger.table(ET.B1), ledger.table(ET.Q7)
    p1, p2, s4 = ledger.table(ET.P1), ledger.table(ET.P2), ledger.table(ET.SPEC_ACCEPTANCE)
    if any(t is None for t in (q4, b1, q7, p1, p2, s4)):
        return None
    p1, p2 = _near(p1, P1_SPARSITY), _near(p2, P2_SPARSITY)
    s4 = tuple(r for r in s4 if r.draft in {d.value for d in DRAFTS} and r.k in KS)
    if not p1 or not p2 or len(s4) != len(DRAFTS) * len(KS):
        return None
    return KeyFigures(q4.float32, b1.bigram, q4.rows, tuple(q7), p1, p2, s4)


def margins(fig: KeyFigures) -> dict[Margin, float]:
    """One number per claim (:class:`Margin`): the claim holds on this model
    when the number lies on its side of the threshold (:data:`THRESHOLDS`)."""
    bits = {r.bits: r for r in fig.q4}
    tok = next(r.penalty for r in fig.q7 if r.name == TOKEN_EMBEDDING)
    block = max(r.penalty for r in fig.q7 if r.name.startswith("blocks."))
    pos = next((r.penalty for r in fig.q7 if r.name == POSITION_EMBEDDING), math.nan)
    others = [r.penalty for r in fig.q7 if r.name not in (TOKEN_EMBEDDING, POSITION_EMBEDDING)]
    acc = {(DraftKind(r.draft), r.k): r.acceptance for r in fig.s4}
    bigram, int8 = DraftKind.BIGRAM, DraftKind.INT8
    lo, hi = min(KS), max(KS)
    return {
        Margin.Q5_4BIT: bits[4].per_channel - fig.bigram,
        Margin.Q5_3BIT: bits[3].per_channel - fig.bigram,
        Margin.Q6_2BIT: bits[2].per_channel - bits[2].per_tensor,
        Margin.Q7_TOK: tok / block if block > 0 else math.inf,
        Margin.Q7_POS: pos - max(others),
        Margin.P1_GLOBAL: fig.p1[0].global_ - fig.p1[0].layer,
        Margin.P2_RANDOM: fig.p2[0].mean - fig.bigram,
        Margin.S4_BIGRAM: acc[(bigram, hi)] - acc[(bigram, lo)],
        Margin.S4_INT8: acc[(int8, hi)] - acc[(int8, lo)],
    }


def holds(margin: Margin, value: float) -> bool:
    """Whether ``margin`` at ``value`` is on the claim's side."""
    if not isinstance(margin, Margin):
        raise ValueError(f"margin must be a Margin ({', '.join(m.name for m in Margin)}), got {margin!r}")
    return THRESHOLDS[margin].holds(value)


def sweep_point(model_name: str, fig: KeyFigures, source: str, **extra: object) -> SweepPoint:
    """One checkpoint's entry of the sweep file: its name, validation loss
    (the figures'), where its figures came from, the figures and their
    margins; ``extra`` (``sha256``, ``training``, ``fragility``,
    ``speculative``: the checkpoint's recipe and history, :func:`fragility`,
    :func:`speculative_figures`) is stored beside them."""
    return SweepPoint(model_name, fig.val_loss, fig, margins(fig), source, **extra)


def article_figures() -> KeyFigures:
    """The article's own key figures from its published tables
    (:data:`aftertrain.experiments.article.ARTICLE`): its model's point on the
    sweep's plots. Its sensitivity table lists five matrices and the least
    harmful one; the largest block penalty among them is the largest it
    published (blocks.2.f1, +0.0184); its S4 rows are the published ones
    (acceptance without the drafted counts)."""
    return KeyFigures(
        ARTICLE.b1.reference,
        ARTICLE.b1.bigram,
        ARTICLE.q4.rows,
        ARTICLE.q7,
        _near(ARTICLE.p1, P1_SPARSITY),
        _near(ARTICLE.p2, P2_SPARSITY),
        tuple(r for d in DRAFTS for k in KS for r in ARTICLE.s4 if r.draft == d.value and r.k == k),
    )
