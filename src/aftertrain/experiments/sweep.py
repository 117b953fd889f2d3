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
tables instead (a model whose suite has run is not measured again);
:func:`margins` turns them into one number per claim whose sign (against
:data:`THRESHOLDS`) says whether the claim holds. No printing, no global
seeding: the experiments seed their own generators.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import torch
from torch import nn

from aftertrain.claims import tables as TB
from aftertrain.core import tolerances as TOL
from aftertrain.core.validation import check_int
from aftertrain.core.weights import weight_matrices
from aftertrain.speculative.drafts import DraftKind

#: Bit widths of the bits table (Q4-Q6).
BITS = (8, 6, 4, 3, 2)
#: Pruning figures: the three methods at 30% (P1) and random at 5% (P2).
P1_SPARSITY = 0.3
P2_SPARSITY = 0.05
#: Acceptance of these drafts at these k (S4).
DRAFTS = (DraftKind.BIGRAM, DraftKind.INT8)
KS = (1, 8)
#: The matrices outside the blocks: Q7 compares tok against every block matrix,
#: and needs both embeddings ahead of every other matrix.
TOKEN_EMBEDDING = "tok.weight"
POSITION_EMBEDDING = "pos.weight"

#: margin name -> (claim, what it is, threshold, "above"/"below": where the claim holds).
THRESHOLDS: dict[str, tuple[str, str, float, str]] = {
    "q5_4bit_pc_minus_bigram": ("Q5", "4-bit per-channel loss minus the bigram's (nats)", 0.0, "below"),
    "q5_3bit_pc_minus_bigram": ("Q5", "3-bit per-channel loss minus the bigram's (nats)", 0.0, "above"),
    "q6_2bit_pc_minus_pt": ("Q6", "2-bit loss, per-channel minus per-tensor (nats)", 0.0, "above"),
    "q7_tok_over_block": ("Q7", "4-bit penalty of tok over the largest block matrix's (ratio)",
                          TOL.EMBEDDING_DOMINANCE, "above"),
    "q7_pos_minus_next": ("Q7", "4-bit penalty of pos minus the largest other matrix's but tok's "
                          "(nats)", 0.0, "above"),
    "p1_global_minus_layer_30": ("P1", "30% pruned loss, global minus per-layer magnitude (nats)",
                                 0.0, "below"),
    "p2_random5_minus_bigram": ("P2", "random 5% pruned loss minus the bigram's (nats)", 0.0, "above"),
    "s4_bigram_k8_minus_k1": ("S4", "bigram draft acceptance, k=8 minus k=1", 0.0, "below"),
    "s4_8bit_k8_minus_k1": ("S4", "8-bit draft acceptance, k=8 minus k=1", 0.0, "below"),
}


def _check_model(model: object) -> None:
    from aftertrain.lm.model import GPT

    if not isinstance(model, GPT):
        raise ValueError(f"model must be an aftertrain.lm.model.GPT, got {type(model).__name__}")


def _check_ints(name: str, values: object, low: int, high: int, need: Iterable[int] = ()) -> tuple:
    if isinstance(values, (int, str)) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a sequence of ints in [{low}, {high}], got {values!r}")
    values = tuple(values)
    if not values or any(not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high
                         for v in values):
        raise ValueError(f"{name} must be a non-empty sequence of ints in [{low}, {high}], "
                         f"got {values!r}")
    missing = [n for n in need if n not in values]
    if missing:
        raise ValueError(f"{name} must include {missing} (the figures the sweep reports), "
                         f"got {values!r}")
    return values


def key_figures(
    model: nn.Module,
    *,
    bits: Sequence[int] = BITS,
    names: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
    n_new: int | None = None,
    tokens: torch.Tensor | None = None,
) -> dict:
    """Measure the sweep's key figures on ``model``.

    ``bits`` (must include 2, 3, 4), ``names`` (the matrices tried one at a
    time at 4 bits; default all 2-D weights, must include ``tok.weight``,
    ``pos.weight`` and one block matrix), ``seeds`` (random pruning; default the suite's five),
    ``n_new`` (characters per acceptance run; default the suite's 200) and
    ``tokens`` (the evaluation split; default the validation split) exist so a
    test can run it small. Returns the tables in the ledger's shapes:
    ``{"val_loss", "bigram", "q4", "q7", "p1", "p2", "s4"}``.
    """
    from aftertrain.experiments import prune as EP
    from aftertrain.experiments import quant as EQ
    from aftertrain.experiments import speculative as XS
    from aftertrain.experiments.tables import record
    from aftertrain.lm.evaluation import val_loss
    from aftertrain.lm.ngram import Bigram
    from aftertrain.quant import Granularity
    from aftertrain.speculative.drafts import draft_model

    _check_model(model)
    bits = _check_ints("bits", bits, 2, 8, need=(2, 3, 4))
    seeds = EP.RANDOM_SEEDS if seeds is None else _check_ints("seeds", seeds, 0, 2**31 - 1)
    n_new = XS.N_NEW if n_new is None else n_new
    check_int("n_new", n_new, least=1)
    if names is not None:
        names = list(names)
        if (TOKEN_EMBEDDING not in names or POSITION_EMBEDDING not in names
                or not any(n.startswith("blocks.") for n in names)):
            raise ValueError(f"names must include {TOKEN_EMBEDDING!r}, {POSITION_EMBEDDING!r} and "
                             f"one block matrix ('blocks.…'), got {names!r}")

    def evaluate(m: nn.Module) -> float:
        return val_loss(m, tokens)

    rows = EQ.bits_table(model, bits, tokens)
    sens = EQ.sensitivity_table(model, 4, Granularity.PER_CHANNEL, tokens, names=names)
    curve = EP.LossCurve(model, evaluate)
    p1 = EP.loss_table(curve, (P1_SPARSITY,), seeds)
    p2 = EP.random_table(curve, (P2_SPARSITY,), seeds)
    drafts = {k.value: draft_model(k, model) for k in DRAFTS}
    s4 = XS.acceptance_table(model, drafts, KS, n_new)
    return {"val_loss": evaluate(model), "bigram": val_loss(Bigram.fit(), tokens),
            "q4": [r.to_record() for r in rows], "q7": record(TB.Q7, sens), "p1": record(TB.P1, p1),
            "p2": record(TB.P2, p2), "s4": record(TB.SPEC_ACCEPTANCE, s4)}


#: S6/S7 without a clock: the drafts and k of the article's speedup table, and
#: its measured draft costs c (a draft character over a target pass, S5).
SPEC_DRAFTS = ("bigram", "8-bit", "4-bit")
SPEC_KS = (2, 4, 8)


def speculative_figures(model: nn.Module, *, n_new: int | None = None) -> list[dict]:
    """What S6 and S7 rest on that needs no timing, per draft and k of
    :data:`SPEC_DRAFTS` x :data:`SPEC_KS` (one ``n_new``-character run each,
    :func:`aftertrain.experiments.speculative.acceptance_table`).

    Rows ``{"draft", "k", "acceptance", "chars_per_pass", "formula_article_c",
    "break_even_c"}``: ``formula_article_c = cpp / (1 + k c)`` is S7's formula
    with the article's measured cost ``c`` of that draft (so only the
    acceptance is this model's), and ``break_even_c = (cpp - 1) / k`` the
    largest draft cost at which the formula still predicts a speedup (> 1).
    The speedup itself is a timing and is not measured here.
    """
    from aftertrain.claims.catalogue import ARTICLE_TABLES
    from aftertrain.experiments import speculative as XS
    from aftertrain.speculative.drafts import DraftKind, draft_model

    _check_model(model)
    n_new = XS.N_NEW if n_new is None else n_new
    check_int("n_new", n_new, least=1)
    drafts = {d: draft_model(DraftKind(d), model) for d in SPEC_DRAFTS}
    rows = XS.acceptance_table(model, drafts, SPEC_KS, n_new)
    cost = {d: ARTICLE_TABLES["s5"][d][1] for d in SPEC_DRAFTS}
    return [{"draft": r.draft, "k": r.k, "acceptance": r.acceptance,
             "chars_per_pass": r.chars_per_pass,
             "formula_article_c": r.chars_per_pass / (1 + r.k * cost[r.draft]),
             "break_even_c": (r.chars_per_pass - 1) / r.k} for r in rows]


def fragility(model: nn.Module, q7: Sequence[Mapping]) -> dict:
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
    from aftertrain.experiments import quant as EQ

    _check_model(model)
    weights = {n: p.detach() for n, p in weight_matrices(model).items()}
    rms = {n: float(w.double().pow(2).mean().sqrt()) for n, w in weights.items()}
    block = torch.cat([w.flatten() for n, w in weights.items() if n.startswith("blocks.")])
    block_rms = float(block.double().pow(2).mean().sqrt())
    peak = max(weights, key=lambda n: float(weights[n].abs().max()))
    total = sum(r["penalty"] for r in q7)
    return {
        "weight_range": EQ.weight_range_ratios(model).to_record(),
        "activations": {site: peak.to_record()
                        for site, peak in EQ.activation_channel_ratios(model).items()},
        "rms": rms,
        "embedding_over_blocks": {n: rms[n] / block_rms
                                  for n in (TOKEN_EMBEDDING, POSITION_EMBEDDING)},
        "max_abs": {"name": peak, "value": float(weights[peak].abs().max())},
        "q7_share": {r["name"]: (r["penalty"] / total if total else math.nan) for r in q7},
    }


def figures_from_tables(tables: Mapping[str, object]) -> dict | None:
    """The key figures from a claims ledger's tables (the suite measured them
    already), or None when one of the tables is missing."""
    from aftertrain.experiments.tables import read

    q4, b1, q7 = read(TB.Q4, tables.get(TB.Q4)), tables.get(TB.B1), tables.get(TB.Q7)
    p1, p2, s4 = tables.get(TB.P1), tables.get(TB.P2), tables.get(TB.SPEC_ACCEPTANCE)
    if any(t is None for t in (q4, b1, q7, p1, p2, s4)):
        return None

    def near(rows, s):
        return [r for r in rows if math.isclose(r["sparsity"], s, abs_tol=1e-9)]

    p1, p2 = near(p1, P1_SPARSITY), near(p2, P2_SPARSITY)
    s4 = [r for r in s4 if r["draft"] in {d.value for d in DRAFTS} and r["k"] in KS]
    if not p1 or not p2 or len(s4) != len(DRAFTS) * len(KS):
        return None
    return {"val_loss": q4.float32, "bigram": b1["bigram"], "q4": [r.to_record() for r in q4.rows],
            "q7": q7, "p1": p1, "p2": p2, "s4": s4}


def margins(fig: Mapping) -> dict[str, float]:
    """One number per claim (keys of :data:`THRESHOLDS`): the claim holds on
    this model when the number lies on its side of the threshold."""
    bits = {r["bits"]: r for r in fig["q4"]}
    q7 = fig["q7"]
    tok = next(r["penalty"] for r in q7 if r["name"] == TOKEN_EMBEDDING)
    block = max(r["penalty"] for r in q7 if r["name"].startswith("blocks."))
    pos = next((r["penalty"] for r in q7 if r["name"] == POSITION_EMBEDDING), math.nan)
    others = [r["penalty"] for r in q7 if r["name"] not in (TOKEN_EMBEDDING, POSITION_EMBEDDING)]
    acc = {(r["draft"], r["k"]): r["acceptance"] for r in fig["s4"]}
    bigram, int8 = DraftKind.BIGRAM.value, DraftKind.INT8.value
    lo, hi = min(KS), max(KS)
    return {
        "q5_4bit_pc_minus_bigram": bits[4]["per_channel"] - fig["bigram"],
        "q5_3bit_pc_minus_bigram": bits[3]["per_channel"] - fig["bigram"],
        "q6_2bit_pc_minus_pt": bits[2]["per_channel"] - bits[2]["per_tensor"],
        "q7_tok_over_block": tok / block if block > 0 else math.inf,
        "q7_pos_minus_next": pos - max(others),
        "p1_global_minus_layer_30": fig["p1"][0]["global"] - fig["p1"][0]["layer"],
        "p2_random5_minus_bigram": fig["p2"][0]["mean"] - fig["bigram"],
        "s4_bigram_k8_minus_k1": acc[(bigram, hi)] - acc[(bigram, lo)],
        "s4_8bit_k8_minus_k1": acc[(int8, hi)] - acc[(int8, lo)],
    }


def holds(name: str, value: float) -> bool:
    """Whether margin ``name`` at ``value`` is on the claim's side."""
    if name not in THRESHOLDS:
        raise ValueError(f"name must be one of {', '.join(THRESHOLDS)}, got {name!r}")
    _, _, threshold, side = THRESHOLDS[name]
    return value > threshold if side == "above" else value < threshold


def sweep_point(model_name: str, val_loss: float, fig: Mapping, source: str,
                **extra: object) -> dict:
    """One checkpoint's entry of the sweep file: its name, validation loss,
    where its figures came from, the figures and their margins; ``extra``
    (the checkpoint's recipe and history, :func:`fragility`,
    :func:`speculative_figures`) is stored beside them."""
    return {"model": model_name, "val_loss": val_loss, "source": source,
            "figures": dict(fig), "margins": margins(fig), **extra}


def article_figures() -> dict:
    """The article's own key figures, in :func:`key_figures`' shapes, from its
    published tables (:data:`aftertrain.claims.catalogue.ARTICLE_TABLES`): its model's
    point on the sweep's plots. Its sensitivity table lists five matrices
    and the least harmful one; the largest block penalty among them is the
    largest it published (blocks.2.f1, +0.0184)."""
    from aftertrain.claims.catalogue import ARTICLE_TABLES as A
    from aftertrain.experiments.quant import BitsRow

    g, layer, r = A["p1"][P1_SPARSITY]
    return {
        "val_loss": A["b1"]["reference"], "bigram": A["b1"]["bigram"],
        "q4": [BitsRow(b, pt, pc).to_record() for b, (pt, pc) in A["q4"].items()],
        "q7": [{"name": n, "loss": math.nan, "penalty": p} for n, p in A["q7"].items()],
        "p1": [{"sparsity": P1_SPARSITY, "global": g, "layer": layer, "random": r}],
        "p2": [{"sparsity": P2_SPARSITY, "mean": A["p2"][P2_SPARSITY], "std": math.nan,
                "min": math.nan, "max": math.nan}],
        "s4": [{"draft": d.value, "k": k, "acceptance": A["s4"][(d.value, k)][0]}
               for d in DRAFTS for k in KS],
    }
