"""Part 8's claims on the reference model (P1-P6, P8, X5).

Each pruned configuration is evaluated once per session (``LossCurve``
memoizes), so the tables, the bisection and the comparisons share
evaluations. Values are guarded against our own ``baselines/prune_*.csv``;
relations (orders, bounds) are asserted. Loss tolerance for the baselines:
``aftertrain.core.tolerances.LOSS_ATOL`` (1e-5 nats, derivation there).
A real change of a mask (one weight more or less, another tie order) or of
the model moves the losses by far more.
"""

from __future__ import annotations

import math

import pytest

from aftertrain import prune as P
from aftertrain import quant as Q
from aftertrain.core import tolerances as TOL
from aftertrain.experiments import prune as EP
from aftertrain.experiments.article import ARTICLE
from aftertrain.ledger.record import shown
from tests.common.model_sizes import has_article_architecture, model_sizes
from tests.common.preconditions import decide_only_past_the_bigram

# The article's figures, from the one source the ledger and the report use.
ARTICLE_P1 = {r.sparsity: (r.global_, r.layer, r.random) for r in ARTICLE.p1}
ARTICLE_P2 = {r.sparsity: r.mean for r in ARTICLE.p2}
ARTICLE_P4 = {r.bits: r.sparsity for r in ARTICLE.p4}


@pytest.fixture(scope="session")
def curve(aftertrain_model, evaluations) -> EP.LossCurve:
    # evaluations: the unpruned point is the model's own loss, scored once
    return EP.LossCurve(aftertrain_model, evaluations)


@pytest.fixture(scope="session")
def loss_rows(curve):
    return EP.loss_table(curve)


@pytest.fixture(scope="session")
def random_rows(curve):
    return EP.random_table(curve)


@pytest.fixture(scope="session")
def quant_losses(aftertrain_model, evaluations) -> dict[int, float]:
    """Our own per-channel fake-quantized losses at 8/6/4 bits: the bits
    table's per-channel column (the same copies, aftertrain.quant.quantized_model,
    scored by the session's memo: where the bits table ran they are its
    figures; elsewhere only these three models are scored, not its ten)."""
    return {
        b: evaluations(Q.quantized_model(aftertrain_model, b, Q.Granularity.PER_CHANNEL)) for b in (8, 6, 4)
    }


@pytest.fixture(scope="session")
def matching(curve, quant_losses) -> dict[int, float]:
    """P4's matching sparsities; skipped, with the measured losses, on a
    model whose loss at 90% global magnitude stays below a quantized loss
    (pruning never costs what quantization does: nothing to match)."""
    top = curve(P.Method.GLOBAL, 0.9)
    short = {b: loss for b, loss in quant_losses.items() if top < loss}
    if short:
        pytest.skip(
            f"not decided here: pruning 90% of the weights (global magnitude) scores {top:.4f}, "
            f"below the per-channel quantized losses "
            f"{', '.join(f'{b}-bit {loss:.4f}' for b, loss in short.items())}: no sparsity "
            f"up to 90% matches them on this model"
        )
    return {b: EP.matching_sparsity(curve, loss) for b, loss in quant_losses.items()}


@pytest.fixture(scope="session")
def untrained_loss(aftertrain_model) -> float:
    """The loss of an untrained model, uniform over the vocabulary: ln(V),
    ln(100) = 4.6052 for our characters (the report's "untrained" line,
    aftertrain.experiments.prune.UNTRAINED_LOSS)."""
    return math.log(aftertrain_model.config.vocab_size)


def columns(rows, keys):
    return {k: [float(r.to_record()[k]) for r in rows] for k in keys}


# --- P1 -------------------------------------------------------------------------


@pytest.mark.claim("P1")
def test_loss_table_matches_stored_baseline(loss_rows, num_regression, baselines_dir, claim_record):
    claim_record.table(loss_rows)
    """Global / per-layer / random (mean of RANDOM_SEEDS) at 10..90%, ours
    beside the article's; guarded against baselines/prune_loss_table.csv."""
    claim_record.measured(
        "{LossRow.sparsity:.0%}: {LossRow.global_:.4f}/{LossRow.layer:.4f}/"
        "{LossRow.random:.4f} (article {article[0]:.4f}/{article[1]:.4f}/{article[2]:.4f})",
        loss_rows,
        article=lambda r: ARTICLE_P1[r.sparsity],
    )
    num_regression.check(
        columns(loss_rows, ["sparsity", "global", "layer", "random"]),
        fullpath=baselines_dir / "prune_loss_table.csv",
        default_tolerance={"atol": TOL.LOSS_ATOL, "rtol": 0},
    )


@pytest.mark.claim("P1")
def test_magnitude_loss_rises_with_sparsity(loss_rows):
    """Article: both magnitude columns rise strictly from 10% to 90% (the
    figures are P1's table, recorded by the table test above)."""
    for method in (P.Method.GLOBAL, P.Method.LAYER):
        losses = [r.loss(method) for r in loss_rows]
        assert all(a < b for a, b in zip(losses, losses[1:], strict=False)), (method, losses)


@pytest.mark.claim("P1")
def test_magnitude_pruning_beats_random_from_10_to_70pct(loss_rows, claim_record):
    """Article: at 10, 30, 50 and 70% both magnitude methods lose less than
    random (at 90% all three are past the untrained line and the order turns)."""
    rows = [r for r in loss_rows if r.sparsity <= 0.7]
    claim_record.measured(
        "{LossRow.sparsity:.0%}: max(magnitude) {magnitude:.4f} < random {LossRow.random:.4f}",
        rows,
        magnitude=lambda r: max(r.global_, r.layer),
    )
    for r in rows:
        assert max(r.global_, r.layer) < r.random, r


# --- P2 -------------------------------------------------------------------------


@pytest.mark.claim("P2")
def test_random_pruning_table_matches_stored_baseline(
    random_rows, num_regression, baselines_dir, claim_record
):
    """Random pruning at 1..20%, mean / std / min / max over RANDOM_SEEDS
    (5 seeds: the loss depends on which large weights a draw hits; the std
    shows how much), guarded against baselines/prune_random_table.csv."""
    claim_record.measured(
        "{RandomRow.sparsity:.0%}: {RandomRow.mean:.4f} +- {RandomRow.std:.4f} (article {article:.4f})",
        random_rows,
        article=lambda r: ARTICLE_P2[r.sparsity],
    )
    claim_record.table(random_rows)
    num_regression.check(
        columns(random_rows, ["sparsity", "mean", "std", "min", "max"]),
        fullpath=baselines_dir / "prune_random_table.csv",
        default_tolerance={"atol": TOL.LOSS_ATOL, "rtol": 0},
    )


@pytest.fixture(scope="session")
def random_rows_wide(curve, random_rows, loss_rows):
    """Random pruning over the P2 grid and the P1 grid together (1..90%),
    to find where random pruning first loses to the bigram."""
    return EP.random_table(curve, sorted(set(EP.RANDOM_SPARSITIES) | set(EP.TABLE_SPARSITIES)))


@pytest.mark.claim("P2")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "does not reproduce: random 5% gives 1.5784 (mean of 5 seeds, "
        "max 1.5865) against our bigram 2.5365; random pruning first loses to the bigram "
        "at 30% (2.7096; 20% gives 2.1375). Article: 5% 3.1419 vs bigram 2.6501"
    ),
)
def test_random_pruning_at_5pct_is_worse_than_the_bigram(
    random_rows_wide, model_val_loss, bigram_loss, claim_record
):
    """Article: random 5% 3.1419 > bigram 2.6501. We compare the mean over
    seeds with our bigram and report the first sparsity (of the P1 and P2
    grids) where the mean loses to it. Decided only on a model that beats
    the bigram (tests/common/preconditions.py)."""
    decide_only_past_the_bigram(model_val_loss, bigram_loss, "a randomly pruned copy's loss")
    first = EP.first_sparsity_above(random_rows_wide, "mean", bigram_loss)
    at5 = next(r for r in random_rows_wide if r.sparsity == 0.05)
    claim_record.measured(
        "random 5% {RandomRow.mean:.4f} (max over seeds {RandomRow.max:.4f}) vs "
        "bigram {bigram:.4f}; first worse at {first} (article 5%)",
        at5,
        bigram=bigram_loss,
        first=first,
    )
    assert at5.mean > bigram_loss


@pytest.mark.claim("P2")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "does not reproduce: random 20% gives 2.1375 (mean of 5 seeds), "
        "below the midpoint 3.5708 of our bigram 2.5365 and ln(100) 4.6052. "
        "Article: 4.2955"
    ),
)
def test_random_pruning_at_20pct_is_closer_to_untrained_than_to_bigram(
    random_rows, model_val_loss, bigram_loss, untrained_loss, claim_record
):
    """Article: 20% gives 4.2955, 'close to the untrained 4.6052'. Read as:
    nearer ln(100) (ln of the model's vocabulary) than the bigram, i.e.
    above their midpoint. Decided only on a model that beats the bigram
    (tests/common/preconditions.py)."""
    decide_only_past_the_bigram(model_val_loss, bigram_loss, "a randomly pruned copy's loss")
    at20 = next(r for r in random_rows if r.sparsity == 0.2)
    midpoint = (bigram_loss + untrained_loss) / 2
    claim_record.measured(
        "random 20% {RandomRow.mean:.4f}; midpoint bigram/untrained {midpoint:.4f}", at20, midpoint=midpoint
    )
    assert at20.mean > midpoint


@pytest.mark.claim("P2")
@pytest.mark.expectation_of(
    "reference",
    "article",
    reason=("the mean loss of random pruning rises at every step on both bundled models"),
)
def test_random_pruning_loses_more_with_every_step_of_sparsity(random_rows_wide, claim_record):
    """Our guard on the random column (the article's own is not monotone:
    30% 4.4976, 50% 4.4543): the mean over seeds rises at every step of the
    1..90% grid, so more random pruning always costs more here."""
    means = [r.mean for r in random_rows_wide]
    claim_record.measured("{RandomRow.sparsity:.0%} {RandomRow.mean:.4f}", random_rows_wide, sep=", ")
    assert all(a < b for a, b in zip(means, means[1:], strict=False)), means


# --- P3 -------------------------------------------------------------------------


@pytest.mark.claim("P3")
def test_global_magnitude_beats_per_layer_at_30pct(curve, claim_record):
    """Article: 2.2097 (global) < 2.3893 (per-layer) at 30%."""
    glob, layer = curve(P.Method.GLOBAL, 0.3), curve(P.Method.LAYER, 0.3)
    claim_record.measured(
        "global {glob:.4f} < per-layer {layer:.4f} (article 2.2097 < 2.3893)", glob=glob, layer=layer
    )
    assert glob < layer


# --- P4 -------------------------------------------------------------------------


@pytest.mark.claim("P4")
def test_sparsities_matching_quantization_losses(
    matching, quant_losses, curve, num_regression, baselines_dir, claim_record
):
    """Bisection to 0.1% on the global-magnitude curve. Checked: each answer
    is the crossing (loss at s >= target > loss at s - 0.1%, or s = 0 when
    the unpruned model already reaches the target); more bits, smaller
    sparsity; and at each matching sparsity the bitmask needs more bytes per
    element than the quantized weights (bits / 8): pruning to the same loss
    never stores as little. Guarded against baselines/prune_matching.csv to
    one grid step (a 1e-5 change of loss can move a crossing by 0.001)."""
    rows = [EP.MatchingRow(b, quant_losses[b], matching[b]) for b in (8, 6, 4)]
    claim_record.measured(
        "{MatchingRow.bits}-bit ({MatchingRow.loss:.4f}): {MatchingRow.sparsity:.1%} (article {article:.1%})",
        rows,
        article=lambda r: ARTICLE_P4[r.bits],
    )
    claim_record.table(rows)
    for b, s in matching.items():
        target = quant_losses[b]
        if s > 0:
            assert curve(P.Method.GLOBAL, s) >= target > curve(P.Method.GLOBAL, round(s - 0.001, 12))
        else:
            assert curve(P.Method.GLOBAL, 0.0) >= target
        assert 4 * (1 - s) + 1 / 8 > b / 8
    assert matching[8] <= matching[6] <= matching[4], shown(
        "{MatchingRow.bits}-bit {MatchingRow.sparsity:.1%}", rows
    )
    num_regression.check(
        {
            "bits": [8, 6, 4],
            "target": [quant_losses[b] for b in (8, 6, 4)],
            "sparsity": [matching[b] for b in (8, 6, 4)],
        },
        fullpath=baselines_dir / "prune_matching.csv",
        tolerances={
            "target": {"atol": TOL.LOSS_ATOL, "rtol": 0},
            "sparsity": {"atol": TOL.MATCHING_SPARSITY_ATOL, "rtol": 0},
        },
    )


# --- P5 -------------------------------------------------------------------------


@pytest.mark.claim("P5")
def test_bytes_per_element_table_is_exact(aftertrain_model, claim_record):
    """Bytes per element of the model's n weights (631,808 in the article's
    model) pruned by global magnitude: exact closed forms from the kept count
    z and the model's own sizes, counted here from its parameters
    (tests/common/model_sizes.py: 15 matrices, 3,784 rows in the article's):
    COO 8z/n, bitmask (n/8 + 4z)/n (n/8: each matrix's bits rounded up to
    whole bytes), CSR (12z + 8 * (rows + matrices))/n; on a model of the
    article's architecture also the article's figures as it prints them (cut
    to 2 decimals: 2.125 -> 2.12, 0.525 -> 0.52)."""
    rows = EP.bytes_table(aftertrain_model)
    sizes = model_sizes(aftertrain_model)
    n, n_rows = sizes.weights, sizes.rows
    article_model = has_article_architecture(aftertrain_model)
    article = {r.sparsity: (r.coo, r.bitmask) for r in ARTICLE.p5} if article_model else {}
    claim_record.measured(
        "{rows}; int8 {int8}",
        int8=EP.int8_bytes_per_element(aftertrain_model),
        rows=shown(
            "{BytesRow.sparsity:.0%}: dense {BytesRow.dense:.2f} "
            "COO {BytesRow.coo:.4f} bitmask {BytesRow.bitmask:.4f} "
            "CSR {BytesRow.csr:.4f}",
            rows,
        ),
    )
    claim_record.table(rows)
    for r in rows:
        z = n - round(r.sparsity * n)
        assert r.dense == 4.0
        assert r.coo == 8 * z / n
        assert r.bitmask == (sizes.bit_bytes + 4 * z) / n
        assert r.csr == (12 * z + 8 * (n_rows + sizes.matrices)) / n
        if r.sparsity in article:
            assert (math.floor(r.coo * 100) / 100, math.floor(r.bitmask * 100) / 100) == article[r.sparsity]
    # int8: 1 byte a value, plus one float32 scale per output row: 3,784 rows
    # (tok 100 + pos 128 + 3 x (qkv 384 + proj 128 + f1 512 + f2 128) + head 100),
    # the article's count of per-channel scales (Q3)
    if article_model:
        assert (n, n_rows, sizes.matrices) == (631_808, 3_784, 15), sizes
    assert EP.int8_bytes_per_element(aftertrain_model) == {"values": 1.0, "with_scales": 1 + 4 * n_rows / n}


# --- P6 -------------------------------------------------------------------------


@pytest.mark.claim("P6")
def test_int8_beats_75_and_50pct_sparse_bitmask_at_equal_or_better_compression(
    curve, quant_losses, num_regression, baselines_dir, claim_record
):
    """Article: int8 4.00x at 2.0280 vs 75% sparse 3.56x at 4.3935 and 50%
    sparse 1.88x at 3.1009. int8 must compress more AND lose less than both."""
    rows = EP.quantization_vs_pruning(curve, quant_losses[8])
    claim_record.measured(
        "{CompressionRow.name!s}: {CompressionRow.compression:.2f}x loss {CompressionRow.loss:.4f}", rows
    )
    claim_record.table(rows)
    int8, *sparse = rows
    for r in sparse:
        assert int8.compression > r.compression and int8.loss < r.loss, r
    assert [round(r.compression, 2) for r in sparse] == [3.56, 1.88]
    num_regression.check(
        columns(rows, ["compression", "loss"]),
        fullpath=baselines_dir / "prune_quant_vs_prune.csv",
        default_tolerance={"atol": TOL.LOSS_ATOL, "rtol": 0},
    )


# --- P8 / X5 --------------------------------------------------------------------


@pytest.fixture(scope="session")
def two_four(curve):
    return EP.two_four_comparison(curve)


@pytest.mark.claim("X5")
def test_two_four_pruning_loses_more_than_unstructured_50pct(
    two_four, num_regression, baselines_dir, claim_record
):
    """2:4 removes half of every matrix like per-layer 50%, under the extra
    constraint of groups; the price of the structure: its loss is above
    global 50% (unconstrained). Guarded against baselines/prune_two_four.csv."""
    claim_record.table(two_four)
    claim_record.measured(
        "2:4 {TwoFour.two_four:.4f}, global 50% {TwoFour.global_50:.4f}, "
        "per-layer 50% {TwoFour.layer_50:.4f}",
        two_four,
    )
    assert two_four.two_four > two_four.global_50
    num_regression.check(
        {k: [v] for k, v in two_four.to_record().items()},
        fullpath=baselines_dir / "prune_two_four.csv",
        default_tolerance={"atol": TOL.LOSS_ATOL, "rtol": 0},
    )


@pytest.mark.claim("P8")
@pytest.mark.claim("X5")
def test_two_four_storage_is_values_plus_2_bit_positions(two_four, claim_record):
    """Regular zeros need less bookkeeping: 2:4 stores 2 + 1/8 bytes per
    element (half the values + 2 bits per kept value), against COO's 4.00 at
    the same 50%; exactly the bitmask's 4(1 - 0.5) + 1/8."""
    claim_record.measured(
        "2:4 {TwoFour.bytes_two_four} B/elem, bitmask {TwoFour.bytes_bitmask}, COO {TwoFour.bytes_coo}",
        two_four,
    )
    assert two_four.bytes_two_four == 2.125 == two_four.bytes_bitmask
    assert two_four.bytes_coo == 4.0
