"""aftertrain's own code as a peer of the kit: the public checks run on the
project's rule, loop, quantizers and pruners, each through the adapter a
user would write, in the scheme and pattern it claims.

- The fast loop's rule (:func:`aftertrain.speculative.rounds.round_rule`,
  one round on plain floats: the target's logits, the draft's rows as
  lists) through :func:`~aftertrain.checks.speculative.sequential`, in
  ``check_rule_exact``'s protocol (its uniforms given) and, with them drawn
  (:func:`~aftertrain.checks.speculative.drawing_uniforms`), in
  ``check_rule``'s. The adapter hands ``log p`` as the logits and the
  draft's rows either as the kit hands them or as the loop makes them, the
  softmax of their logs; ``renormalise`` declares that softmax, so with the
  rows as the loop makes them the kit's searched probe leaves an all-zero
  residual as the rule computes it. With the rows as handed, the fixed
  probes of a draft outside p's support leave one where the softmax gives
  p back exactly (a matter of the softmax kernel's rounding; where it
  rounds up the residual is a few ulps and the probe judges an ordinary
  draw, which a correct rule passes too).
- The loop's fall-back after an all-zero residual, driven in
  :func:`~aftertrain.speculative.generator.verify_round` and in
  :func:`~aftertrain.speculative.speculative_generate` (its uniforms forced)
  with a target and a draft whose laws are equal but for one cell an ulp up
  in the draft, against the exact inverse-CDF draw from p: the kit's
  searched probe has p > 0 everywhere, so a fall-back to the whole
  vocabulary passes it; these pin the law drawn from.
- ``check_generator`` on ``speculative_generate`` with every draft kind of
  :class:`~aftertrain.speculative.drafts.DraftKind`, built over the kit's
  4-symbol toy target as the loop meets each kind: the bigram and the
  n-gram as table drafts of the last one and two symbols, the 8- and 4-bit
  drafts as :func:`~aftertrain.speculative.drafts.draft_model` makes them
  (a GPT fake-quantized per channel, here a toy GPT), the draft GPT as a
  toy GPT run through its key/value cache.
- ``check_quantizer`` on :mod:`aftertrain.quant` as the article's scheme,
  SYMMETRIC ``PerTensor()`` and ``PerAxis(0)`` at every width, with its
  codes and scales from the packed form; ``check_pruner`` on
  :mod:`aftertrain.prune`'s masks as global, per-layer, random (one seed:
  nested) and 2:4 pruners.

The statistical checks run at the kit's alpha, 1e-6 per check (Bonferroni
inside each), with quick sizes: ``check_rule`` at n = 2,000 (a TV bias of
about 0.08 is seen), ``check_generator`` at 300 runs and one k per draft.
"""

from __future__ import annotations

import pytest
import torch

from aftertrain import prune as P
from aftertrain import quant as Q
from aftertrain import speculative as S
from aftertrain.checks.prune import NM, Scope, check_pruner
from aftertrain.checks.quant import Mapping, PerAxis, PerTensor, QuantScheme, check_quantizer
from aftertrain.checks.speculative import (
    ToyTable,
    check_generator,
    check_rule,
    check_rule_exact,
    drawing_uniforms,
    sequential,
)
from aftertrain.lm.decoding import Decoder, probabilities_unchecked
from aftertrain.speculative import drafts as D
from aftertrain.speculative.drafters import Uniforms
from aftertrain.speculative.generator import round_rule, verify_round
from aftertrain.speculative.table_drafts import TableDraft, cumulative, draw_from_cdf
from aftertrain.stats import ALPHA
from tests.common.toys import TOY_PROMPT, TOY_V, toy_gpt, toy_target

# --- the fast loop's rule -----------------------------------------------------------


def softmax_of_logs(r: torch.Tensor) -> torch.Tensor:
    """What the loop makes of a law it is handed as logits ``log r``."""
    return probabilities_unchecked(r.double().log(), 1.0)


def fast_loop_rule(q_rows):
    """``round_rule`` in the kit's one-round protocol with its uniforms:
    ``log p`` as the target's logits (temperature 1), the draft's rows as
    ``q_rows(q)`` makes them, u and v as floats."""

    def rule(p, q, drafts, u, v):
        d, rows = drafts.tolist(), q_rows(q).tolist()
        return round_rule(
            p.double().log(), d, rows, [rows[i][x] for i, x in enumerate(d)], u.tolist(), float(v), 1.0
        )

    return sequential(rule)


Q_ROWS = {"q as handed": lambda q: q.double(), "q as the loop makes it": softmax_of_logs}


@pytest.mark.parametrize("q_rows", Q_ROWS.values(), ids=Q_ROWS.keys())
def test_fast_loop_rule_passes_the_forced_uniform_probes(q_rows):
    """The kit's 63 exact probes on the fast loop's rule (false-alarm rate
    0): u = 0 with p(x) = 0, u a margin either side of p/q, the bonus from
    p_{k+1}, the renormalised residual, the forced rejections whose residual
    is all zero (fixed rows, and the pair searched with the rule's own
    softmax: ``renormalise``), the batch with one all-zero-residual round and
    the batch against the rounds one by one."""
    report = check_rule_exact(fast_loop_rule(q_rows), renormalise=softmax_of_logs)
    assert report.passed, str(report)


def test_fast_loop_rule_passes_the_statistical_battery():
    """The kit's battery (the law of every position, the exact acceptance
    rate, support) on the fast loop's rule with its uniforms drawn in
    float64, at n = 2,000 rounds per case, alpha 1e-6 for the battery."""
    report = check_rule(drawing_uniforms(fast_loop_rule(softmax_of_logs)), n=2000, alpha=ALPHA, seed=0)
    assert report.passed, str(report)


# --- the loop after an all-zero residual ----------------------------------------------

#: Logits of a target with p = [0, 1/3, 1/3, 1/3] (exactly fl(1/3) in every
#: cell, whatever order a softmax adds in: every exp is 1) and of a draft
#: with its last cell 2**-52 higher: its q is p with that cell one ulp up
#: (fl(1/3) + 2**-54), so p <= q in every cell, a rejection leaves an
#: all-zero residual, and the largest uniform below 1 rejects that cell.
TARGET_LOGITS = [float("-inf"), 0.0, 0.0, 0.0]
DRAFT_LOGITS = [float("-inf"), 0.0, 0.0, 2.0**-52]
RAISED = 3
U_REJECTS = 1 - 2.0**-53
#: Uniforms v of the next character around each cumulative sum of p: a
#: fall-back to any other law (the whole vocabulary, the draft's) or an
#: index past the vocabulary differs at one of them.
VS = (0.1, 0.3, 0.4, 0.6, 0.7, 0.9)


def _constant(logits: list[float]) -> ToyTable:
    """A toy model whose logits are ``logits`` after any text (float64)."""
    model = ToyTable(len(logits), seed=0, order=1)
    model.table = torch.tensor(logits, dtype=torch.float64).expand_as(model.table).clone()
    return model


def _draft_q() -> torch.Tensor:
    """The draft's row as the loop makes it (one row's softmax)."""
    return probabilities_unchecked(torch.tensor(DRAFT_LOGITS, dtype=torch.float64), 1.0)


def _zero_residual_draw(p: torch.Tensor, q: torch.Tensor, v: float) -> int:
    """The inverse-CDF draw from ``p`` at ``v`` (the documented fall-back),
    once it is checked that ``p <= q`` in every cell (else the pair no
    longer reaches the fall-back with this softmax)."""
    assert bool((p <= q).all()) and not U_REJECTS * float(q[RAISED]) < float(p[RAISED]), (p, q)
    return draw_from_cdf(cumulative(p.tolist()), v)


@pytest.mark.parametrize("v", VS)
def test_verify_round_after_an_all_zero_residual_draws_from_p(v):
    """One cached target pass and a forced rejection whose residual
    max(0, p - q) is all zero: the token is the inverse-CDF draw from p at
    v, exactly (never 0, where p is 0, nor an index past the vocabulary)."""
    q = _draft_q()
    target = Decoder(_constant(TARGET_LOGITS), name="target")
    n, token, logits = verify_round(
        target, [0], [RAISED], [q.tolist()], [float(q[RAISED])], [U_REJECTS], v, 1.0
    )
    assert n == 0 and token == _zero_residual_draw(probabilities_unchecked(logits, 1.0)[0], q, v)


def _forced(values: list[float]):
    """``Uniforms.take`` handing out ``values`` in order (the caller's
    generator is then advanced past them as usual)."""
    queue = list(values)

    def take(self, n):
        out = queue[:n]
        del queue[:n]
        self.taken += n
        return out

    return take


@pytest.mark.parametrize("v", VS)
def test_speculative_generate_after_an_all_zero_residual_draws_from_p(v, monkeypatch):
    """The whole loop with its uniforms forced (the draft's, the acceptance
    one, the next character's): the draft draws its raised cell, the
    largest uniform below 1 rejects it with an all-zero residual, and the
    character emitted is the inverse-CDF draw from the target's p at v."""
    monkeypatch.setattr(Uniforms, "take", _forced([0.9, U_REJECTS, v, 0.5]))
    out = S.speculative_generate(_constant(TARGET_LOGITS), _constant(DRAFT_LOGITS), torch.tensor([0]), 2, 1)
    p = probabilities_unchecked(out.target_logits[:1], 1.0)[0]
    assert (out.drafted, out.accepted) == (1, 0)
    assert int(out.generated[0]) == _zero_residual_draw(p, _draft_q(), v)


# --- the loop, every draft kind -----------------------------------------------------------


def loop(target, draft, prompt, n_new, k, temperature, generator):
    """``speculative_generate`` in ``check_generator``'s protocol."""
    return S.speculative_generate(target, draft, prompt, n_new, k, temperature, generator).generated


def draft_of(kind: D.DraftKind) -> torch.nn.Module | TableDraft:
    """The draft of ``kind`` over the toys' 4 symbols, as the loop meets it."""
    if kind is D.DraftKind.BIGRAM:
        return TableDraft(ToyTable(TOY_V, seed=12, order=1), context=1)
    if kind is D.DraftKind.NGRAM:
        return TableDraft(ToyTable(TOY_V, seed=13, order=2), context=2)
    if kind is D.DraftKind.GPT:
        return toy_gpt(TOY_V, seed=2)
    return D.draft_model(kind, toy_gpt(TOY_V, seed=1))


@pytest.mark.parametrize("kind", list(D.DraftKind), ids=lambda k: k.value)
def test_speculative_generate_passes_check_generator_with_every_draft_kind(kind):
    """The joint law of the first 3 symbols (64 cells, chi-square at alpha
    1e-6) over 300 runs at k = 2, temperature 1 (where a draft reported
    unfiltered shows), and greedy output equal to plain greedy decoding."""
    report = check_generator(
        loop, toy_target(), draft_of(kind), runs=300, ks=(2,), temperatures=(1.0,), prompt=TOY_PROMPT.tolist()
    )
    assert report.passed, str(report)


# --- quantizers and pruners -----------------------------------------------------------------


def article_quantizer(w: torch.Tensor, scheme: QuantScheme):
    """aftertrain's quantizer in the scheme protocol: ``fake_quantize``'s
    ``w_hat``, the codes unpacked from :class:`aftertrain.quant.QuantizedTensor`
    and its scales (zero point 0)."""
    g = Q.Granularity.PER_TENSOR if scheme.granularity == PerTensor() else Q.Granularity.PER_CHANNEL
    packed = Q.QuantizedTensor.from_float(w, scheme.bits, g)
    return Q.fake_quantize(w, scheme.bits, g), packed.codes(), packed.scales, None


def test_aftertrain_quantizer_passes_the_kit_as_symmetric_per_tensor_and_per_row():
    """Every width 2..8, per tensor and per row, on the kit's default
    battery: round trip, grid, codes, scale, extremes, zero, odd symmetry,
    idempotence and the edges, no edge finding either."""
    schemes = [
        QuantScheme(bits, Mapping.SYMMETRIC, g)
        for bits in range(Q.MIN_BITS, Q.MAX_BITS + 1)
        for g in (PerTensor(), PerAxis(0))
    ]
    report = check_quantizer(article_quantizer, schemes=schemes, strict=True)
    assert report.passed, str(report)


def seeded_random(weights, sparsity):
    return P.random_masks(weights, sparsity, torch.Generator().manual_seed(0))


PRUNERS = {
    "global magnitude": (P.global_magnitude_masks, dict(scope=Scope.GLOBAL)),
    "per-layer magnitude": (P.layer_magnitude_masks, dict(scope=Scope.PER_LAYER)),
    "random, one seed": (seeded_random, dict(scope=Scope.GLOBAL, magnitude=False, nested=True)),
    "2:4": (lambda weights, sparsity: P.two_four_masks(weights), dict(pattern=NM(2, 4))),
}


@pytest.mark.parametrize("name", PRUNERS)
def test_aftertrain_pruners_pass_the_kit_in_their_pattern(name):
    """Each of aftertrain's masks on the kit's battery for its pattern: the
    output, exact counts (half to even), magnitude order (not for random),
    nesting (random too: one seed, one permutation), 2:4 blocks (rows of 6
    refused with a message)."""
    prune, pattern = PRUNERS[name]
    report = check_pruner(prune, **pattern)
    assert report.passed, str(report)
