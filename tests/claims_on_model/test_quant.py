"""The claims of part 3 (Q2-Q10) on the reference model.

Every model configuration is evaluated once per module (module-scoped
fixtures) through the library's experiment functions, the same ones the
report calls. Relations the article states (an order, a bound) are asserted;
values are reported with the ledger's ``claim_record`` and guarded against our stored
baselines (``baselines/quant_*``; regenerate with
``PYTHONPATH=src python -m pytest tests/claims_on_model/test_quant.py --force-regen``).

Baseline tolerances. A quantized model's weights are exact functions of the
stored float32 weights (the rule uses only max, division, round and a
product, all exactly rounded), so every configuration's weights are the same
bits on every machine; only the order of float32 sums in the forward pass can
move a loss, which we measured at <= 1e-6 (B1's baseline). Losses are guarded
at ``LOSS_ATOL`` = 1e-5 absolute (ten times that); counts and byte
figures exactly.

Teeth: each relation is also run on figures from a deliberately broken
quantizer (``tests/common/quant_bugs.py``) and must reject them. Thresholds and
tolerances come from :mod:`aftertrain.core.tolerances` (quantization section).
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable

import pytest
import torch

from aftertrain import quant as Q
from aftertrain.core import tolerances as TOL
from aftertrain.experiments import quant as EQ
from aftertrain.ledger.record import Shown, shown
from aftertrain.lm.anatomy import Anatomy, anatomy
from aftertrain.quant import Granularity
from tests.common import sampled_paths as SP
from tests.common.model_sizes import ModelSizes, has_article_architecture, model_sizes
from tests.common.preconditions import bigram_unmet, decide_only_past_the_bigram
from tests.common.quant_bugs import (
    clamp_past_qmax,
    floor_rounding,
    ignores_granularity,
    mean_scale,
    model_quantizer,
    skip_embeddings,
    unchanged,
    wrong_axis,
)

G = Granularity
MB = 2**20  # the article's MB


# --- figures, computed once ---------------------------------------------------


@pytest.fixture(scope="module")
def sensitivity(aftertrain_model, evaluations) -> list[EQ.SensitivityRow]:
    return EQ.sensitivity_table(aftertrain_model, 4, G.PER_CHANNEL, evaluate=evaluations)


def fmt_row(rows: EQ.BitsRow | list[EQ.BitsRow]) -> Shown:
    return shown(
        "{BitsRow.bits} bits: per-tensor {BitsRow.per_tensor:.4f}, per-channel {BitsRow.per_channel:.4f}",
        rows,
    )


def check_rejects(check: Callable[[], None], unmet: str | None) -> None:
    """Teeth: ``check()`` must raise AssertionError (the broken variant is
    rejected), as under ``pytest.raises``. ``unmet`` is None where the model
    meets the teeth's precondition, else why it cannot tell the broken
    variant from the real one, with the measured figures (a model that does
    not beat the bigram has nothing for a broken quantizer to lose). Only
    there does a check that lets the broken variant through skip, saying
    so; anywhere else it fails: a teeth test never passes without the check
    failing."""
    try:
        check()
    except AssertionError:
        return
    if unmet is not None:
        pytest.skip(unmet)
    pytest.fail("DID NOT RAISE AssertionError: the check let the broken variant through")


def unmet_unless_beats_bigram(model_val_loss: float, bigram_loss: float, broken: str) -> str | None:
    """The precondition of the quantizer teeth that compare losses: the
    model beats the bigram. None where it does; else the skip reason, with
    the model's, the bigram's and the broken variant's (``broken``) figures."""
    unmet = bigram_unmet(model_val_loss, bigram_loss)
    if unmet is None:
        return None
    return (
        f"precondition not met on this model: {unmet}, and {broken}: a model that has learned "
        f"less than the bigram cannot show the check failing"
    )


# --- Q1 at model level: every 2-D weight, nothing else -----------------------


def check_model_quantized(qmodel, model, bits, g):
    """Every 2-D weight of the copy equals fake_quantize of the original's;
    every 1-D parameter is the original's float32 tensor, bit for bit."""
    original = dict(model.named_parameters())
    for name, p in qmodel.named_parameters():
        assert p.dtype == torch.float32, name
        want = Q.fake_quantize(original[name], bits, g) if p.dim() == 2 else original[name]
        assert torch.equal(p, want), name


@pytest.mark.claim("Q1")
@pytest.mark.parametrize("g", list(Granularity), ids=lambda g: g.value)
def test_quantized_model_quantizes_every_2d_weight_and_nothing_else(aftertrain_model, g):
    """The article quantizes all 631,808 weights of the 15 matrices
    (embeddings included) and keeps the 1-D parameters float32; the original
    model is left untouched."""
    before = copy.deepcopy(aftertrain_model.state_dict())
    for bits in (8, 4, 2):
        check_model_quantized(Q.quantized_model(aftertrain_model, bits, g), aftertrain_model, bits, g)
    for k, v in aftertrain_model.state_dict().items():
        assert torch.equal(v, before[k]), k


@pytest.mark.claim("Q1")
@pytest.mark.parametrize(
    "broken",
    [
        skip_embeddings,
        model_quantizer(wrong_axis),
        model_quantizer(floor_rounding),
        model_quantizer(mean_scale),
        model_quantizer(clamp_past_qmax),
    ],
    ids=["skip_embeddings", "wrong_axis", "floor", "mean_scale", "clamp"],
)
@pytest.mark.teeth
def test_model_check_catches_broken_quantizers(aftertrain_model, broken):
    with pytest.raises(AssertionError):
        check_model_quantized(broken(aftertrain_model, 4, G.PER_CHANNEL), aftertrain_model, 4, G.PER_CHANNEL)


# --- Q2: int8 is nearly free ----------------------------------------------------


def check_int8_nearly_free(row: EQ.BitsRow, float_loss: float) -> None:
    for g in Granularity:
        assert row.loss(g) - float_loss < TOL.INT8_LOSS_MARGIN, (g, row.loss(g), float_loss)


@pytest.mark.claim("Q2")
def test_int8_loss_within_0p01_of_float32(bits_rows, model_val_loss, claim_record):
    """Article: 2.0272 -> 2.0290 per-tensor, 2.0280 per-channel (+0.0017,
    +0.0008). The claim's 0.01 nats is this suite's reading of "nearly free"
    (the third decimal); both granularities."""
    row = bits_rows[8]
    claim_record.measured(
        "float32 {float32:.4f}; {row} ({per_tensor:+.4f} / {per_channel:+.4f})",
        float32=model_val_loss,
        row=fmt_row(row),
        per_tensor=row.per_tensor - model_val_loss,
        per_channel=row.per_channel - model_val_loss,
    )
    check_int8_nearly_free(row, model_val_loss)


@pytest.mark.claim("Q2")
@pytest.mark.teeth
def test_int8_check_catches_a_mean_scale_quantizer(aftertrain_model, model_val_loss, bigram_loss):
    """Teeth: scales from the mean magnitude clip most of every matrix.
    Precondition (check_rejects): the model beats the bigram."""
    row = EQ.bits_table(aftertrain_model, (8,), quantize=model_quantizer(mean_scale))[0]
    check_rejects(
        lambda: check_int8_nearly_free(row, model_val_loss),
        unmet_unless_beats_bigram(
            model_val_loss, bigram_loss, f"the mean-scale int8 copy scores {fmt_row(row)}"
        ),
    )


# --- Q3: storage ----------------------------------------------------------------


def storage_figures(aftertrain_model) -> dict:
    out = {}
    for g in Granularity:
        for bits in (8, 4):
            out[f"{g.value}_{bits}"] = Q.storage_bytes(aftertrain_model, bits, g)
    return out


def check_int8_storage(s: dict, sizes: ModelSizes, scales: int) -> None:
    """int8 storage of every 2-D weight by the closed form from the model's
    own sizes (counted in the test, tests/common/model_sizes.py): 1 byte a
    weight, 4 bytes a float32 scale (``scales``: one per matrix per-tensor,
    one per row per-channel), 4 bytes every other parameter."""
    n, p = sizes.weights, sizes.parameters
    assert (s["weights"], s["parameters"]) == (n, p), (s, sizes)
    assert s["weights_fp32_bytes"] == 4 * n and s["parameters_fp32_bytes"] == 4 * p, (s, sizes)
    assert s["weight_code_bytes"] == n and s["scale_bytes"] == 4 * scales, (s, sizes)
    assert s["parameters_quantized_bytes"] == n + 4 * scales + 4 * (p - n), (s, sizes)


def check_article_storage(s: dict) -> None:
    """The article's figures, MB = 2**20 bytes rounded as it rounds them."""
    assert s["weights"] == 631_808 and s["parameters"] == 637_156
    assert round(s["weights_fp32_bytes"] / MB, 2) == 2.41
    assert round((s["weight_code_bytes"] + s["scale_bytes"]) / MB, 2) == 0.60
    assert round(s["parameters_fp32_bytes"] / MB, 2) == 2.43
    assert round(s["parameters_quantized_bytes"] / MB, 2) == 0.62
    cut = 1 - s["parameters_quantized_bytes"] / s["parameters_fp32_bytes"]
    assert round(100 * cut, 1) == 74.4


@pytest.mark.claim("Q3")
def test_int8_storage_is_the_articles_figures_exactly(
    aftertrain_model, claim_record, data_regression, baselines_dir
):
    """Exact byte accounting from real packed tensors: 631,808 weights,
    2.41 MB -> 0.60 MB; 637,156 parameters, 2.43 MB -> 0.62 MB, 74.4% cut.
    The article's figures hold counting one float32 scale per matrix (15
    scales, 60 bytes). Per-channel scales (3,784 rows, 15,136 bytes) give
    0.62 MB / 0.64 MB and 73.8%, so the article counted per-tensor scales
    or none. 4-bit codes pack two to a byte: 315,904 bytes.

    On any model the bytes are the closed forms of the model's own sizes,
    counted here from its parameters (check_int8_storage; 4-bit codes
    ``ceil(numel / 2)`` per matrix); the article's figures are asserted on
    a model of its architecture, and another model's record gives its own."""
    figs = storage_figures(aftertrain_model)
    sizes = model_sizes(aftertrain_model)
    pt, pc, pt4 = figs["per-tensor_8"], figs["per-channel_8"], figs["per-tensor_4"]
    check_int8_storage(pt, sizes, sizes.matrices)
    check_int8_storage(pc, sizes, sizes.rows)
    assert pt4["weight_code_bytes"] == sizes.int4_code_bytes, (pt4, sizes)
    cut_pc = 1 - pc["parameters_quantized_bytes"] / pc["parameters_fp32_bytes"]
    if has_article_architecture(aftertrain_model):
        assert sizes == ModelSizes(631_808, 15, 3_784, 637_156, 631_808 // 2, 631_808 // 8), sizes
        check_article_storage(pt)
        assert round(100 * cut_pc, 1) == 73.8
    claim_record.measured(
        "{weights} weights {weights_mb:.2f} MB -> {int8_mb:.2f} MB; {parameters} params "
        "{parameters_mb:.2f} -> {quantized_mb:.2f} MB (per-tensor scales); "
        "per-channel scales {per_channel_mb:.2f} MB, {cut_pc:.1f}%",
        weights=pt["weights"],
        weights_mb=pt["weights_fp32_bytes"] / MB,
        int8_mb=(pt["weight_code_bytes"] + pt["scale_bytes"]) / MB,
        parameters=pt["parameters"],
        parameters_mb=pt["parameters_fp32_bytes"] / MB,
        quantized_mb=pt["parameters_quantized_bytes"] / MB,
        per_channel_mb=pc["parameters_quantized_bytes"] / MB,
        cut_pc=100 * cut_pc,
    )
    claim_record.table({k: EQ.StorageRow(**v) for k, v in figs.items()})
    data_regression.check(figs, fullpath=baselines_dir / "quant_storage.yml")


@pytest.mark.claim("Q3")
@pytest.mark.teeth
def test_storage_check_catches_skipped_embeddings(aftertrain_model):
    """Teeth: leaving the embedding tables in float32 costs 3 bytes more per
    element of them (tok and pos: 3 x 28,928 bytes); the closed form and,
    on the article's architecture, its figures reject it."""
    embeddings = anatomy(aftertrain_model).embeddings
    names = [n for n in Q.weight_names(aftertrain_model) if n not in embeddings]
    s = Q.storage_bytes(aftertrain_model, 8, G.PER_TENSOR, names)
    sizes = model_sizes(aftertrain_model)
    with pytest.raises(AssertionError):
        check_int8_storage(s, sizes, sizes.matrices)
    if has_article_architecture(aftertrain_model):
        with pytest.raises(AssertionError):
            check_article_storage(s)


# --- Q4 / Q5: the bits table --------------------------------------------------------


@pytest.mark.claim("Q4")
def test_bits_table_matches_the_stored_baseline(
    bits_rows, model_val_loss, claim_record, num_regression, baselines_dir
):
    """Article (per-tensor / per-channel): 8: 2.0290/2.0280; 6: 2.0599/2.0387;
    4: 2.6380/2.3571; 3: 4.3960/3.4381; 2: 5.7894/6.3112. Ours are guarded
    at 1e-5 (module docstring). Loss rises monotonically as bits fall
    (asserted, both granularities, 8 to 3 bits)."""
    claim_record.measured(
        "float32 {float32:.4f}; {rows}",
        float32=model_val_loss,
        rows=fmt_row([bits_rows[b] for b in EQ.ARTICLE_BITS]),
    )
    claim_record.table(EQ.BitsTable(model_val_loss, tuple(bits_rows[b] for b in EQ.ARTICLE_BITS)))
    for g in Granularity:
        losses = [bits_rows[b].loss(g) for b in (8, 6, 4, 3)]
        assert losses == sorted(losses), (g, losses)
    num_regression.check(
        {k: [bits_rows[b].to_record()[k] for b in EQ.ARTICLE_BITS] for k in EQ.BitsRow.keys()},
        fullpath=baselines_dir / "quant_bits_table.csv",
        default_tolerance=dict(atol=TOL.LOSS_ATOL, rtol=0),
        tolerances={"bits": dict(atol=0, rtol=0)},
    )


def check_six_bits_hold(row: EQ.BitsRow, float_loss: float) -> None:
    for g in Granularity:
        assert row.loss(g) - float_loss < TOL.SIX_BIT_LOSS_MARGIN, (g, row.loss(g), float_loss)


@pytest.mark.claim("Q5")
def test_down_to_6_bits_within_0p05_of_float32(bits_rows, model_val_loss, claim_record):
    """Article: "down to 6 bits the loss moves only in the second decimal"
    (6-bit +0.0327 / +0.0115); 0.05 nats is this suite's bound, both
    granularities, at 8 and 6 bits."""
    claim_record.measured(
        "float32 {float32:.4f}; {rows}", float32=model_val_loss, rows=fmt_row([bits_rows[8], bits_rows[6]])
    )
    for b in (8, 6):
        check_six_bits_hold(bits_rows[b], model_val_loss)


@pytest.mark.claim("Q5")
@pytest.mark.teeth
def test_six_bit_check_catches_a_mean_scale_quantizer(aftertrain_model, model_val_loss, bigram_loss):
    """Teeth: scales from the mean magnitude clip the large weights. (Floor
    instead of round does not fail this check on our model: 6-bit floor
    costs only +0.007; the property tests catch it.) Precondition
    (check_rejects): the model beats the bigram."""
    row = EQ.bits_table(aftertrain_model, (6,), quantize=model_quantizer(mean_scale))[0]
    check_rejects(
        lambda: check_six_bits_hold(row, model_val_loss),
        unmet_unless_beats_bigram(
            model_val_loss, bigram_loss, f"the mean-scale 6-bit copy scores {fmt_row(row)}"
        ),
    )


def check_worse_than_bigram(row: EQ.BitsRow, bigram: float, granularities=tuple(Granularity)) -> None:
    for g in granularities:
        assert row.loss(g) > bigram, (g, row.loss(g), bigram)


@pytest.mark.claim("Q5")
def test_3_bit_per_tensor_is_worse_than_the_bigram(bits_rows, model_val_loss, bigram_loss, claim_record):
    """Article: 3 bits collapses (per-tensor 4.3960 against the bigram's
    2.6501). Asserted: 3-bit per-tensor loss above the bigram's, same split.
    Decided only on a model that beats the bigram (tests/common/preconditions.py)."""
    decide_only_past_the_bigram(model_val_loss, bigram_loss, "a 3-bit copy's loss")
    claim_record.measured("bigram {bigram:.4f}; {row}", bigram=bigram_loss, row=fmt_row(bits_rows[3]))
    check_worse_than_bigram(bits_rows[3], bigram_loss, (G.PER_TENSOR,))


@pytest.mark.claim("Q5")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "does not reproduce: 3-bit per-channel 1.7418 stays far below the bigram's 2.5365 "
        "(article 3.4381 vs 2.6501); our model (float32 1.5539) degrades more gently"
    ),
)
def test_3_bit_per_channel_is_worse_than_the_bigram(bits_rows, model_val_loss, bigram_loss, claim_record):
    """Article: 3-bit per-channel 3.4381, above the bigram's 2.6501. Decided
    only on a model that beats the bigram (tests/common/preconditions.py)."""
    decide_only_past_the_bigram(model_val_loss, bigram_loss, "a 3-bit copy's loss")
    claim_record.measured("bigram {bigram:.4f}; {row}", bigram=bigram_loss, row=fmt_row(bits_rows[3]))
    check_worse_than_bigram(bits_rows[3], bigram_loss, (G.PER_CHANNEL,))


@pytest.mark.claim("Q5")
def test_4_bit_per_channel_beats_the_bigram(bits_rows, model_val_loss, bigram_loss, claim_record):
    """Article: 4-bit per-channel (2.3571) "barely" beats the bigram (2.6501).
    Asserted: it beats it (by how much is reported: ours by far more).
    Decided only on a model that beats the bigram (tests/common/preconditions.py)."""
    decide_only_past_the_bigram(model_val_loss, bigram_loss, "a 4-bit copy's loss")
    claim_record.measured("bigram {bigram:.4f}; {row}", bigram=bigram_loss, row=fmt_row(bits_rows[4]))
    assert bits_rows[4].per_channel < bigram_loss


@pytest.mark.claim("Q5")
@pytest.mark.teeth
def test_3_bit_check_catches_an_unquantized_model(aftertrain_model, model_val_loss, bigram_loss, evaluations):
    """Teeth: a "quantizer" that leaves the weights float32 scores the
    model's own loss, below the bigram on a trained model. Precondition: the
    model beats the bigram; one already worse than it (a 100-step
    checkpoint) cannot show the check failing, and is skipped saying so."""
    if not model_val_loss < bigram_loss:
        pytest.skip(
            f"precondition not met on this model: its float32 loss "
            f"{model_val_loss:.4f} does not beat the bigram's {bigram_loss:.4f}, so an "
            f"unquantized model cannot show the check failing"
        )
    row = EQ.bits_table(aftertrain_model, (3,), quantize=unchanged, evaluate=evaluations)[0]
    with pytest.raises(AssertionError):
        check_worse_than_bigram(row, bigram_loss)


# --- Q6: per-channel wins down to 3 bits; at 2 bits reconstruction and loss part --


def check_per_channel_lower(rows: dict[int, EQ.BitsRow], widths) -> None:
    for b in widths:
        assert rows[b].per_channel < rows[b].per_tensor, fmt_row(rows[b])


@pytest.mark.claim("Q6")
def test_per_channel_has_the_lower_loss_from_8_to_3_bits(bits_rows, claim_record):
    """Article: per-channel is better in loss at 8, 6, 4 and 3 bits
    (2.0280 < 2.0290 ... 3.4381 < 4.3960). A strict order at each width."""
    claim_record.measured("{rows}", rows=fmt_row([bits_rows[b] for b in (8, 6, 4, 3)]))
    check_per_channel_lower(bits_rows, (8, 6, 4, 3))


@pytest.mark.claim("Q6")
@pytest.mark.claim("X7")
@pytest.mark.parametrize("broken", [wrong_axis, ignores_granularity])
@pytest.mark.teeth
def test_per_channel_order_catches_broken_per_channel_scales(bundled_reference, broken, evaluations):
    """Teeth (X7's "per-channel scales on the wrong axis"): one scale per
    input column instead of per output row loses the per-channel advantage
    at 6 bits (measured 1.5602 against per-tensor 1.5589); a "per-channel"
    that silently uses one scale ties with per-tensor.

    Always on the bundled reference, whatever ``--aftertrain-model`` says: a
    teeth test shows the check can fail, which must not depend on the model
    under test (on ``article`` the wrong axis happens to beat per-tensor at
    6 bits, so there it would show nothing)."""
    row = EQ.bits_table(bundled_reference, (6,), quantize=model_quantizer(broken), evaluate=evaluations)[0]
    with pytest.raises(AssertionError):
        check_per_channel_lower({6: row}, (6,))


@pytest.fixture(scope="module")
def bundled_reference():
    """The bundled reference, whatever model the claims run on (for teeth
    tests whose broken variant is shown to fail on this very model)."""
    from aftertrain.lm.registry import load_model

    return load_model("reference")[0]


#: The matrix the article reconstructs at 2 bits (Q6): our GPT's first
#: feed-forward input; another model's is its anatomy's first_ffn_input.
ARTICLE_F1 = "blocks.0.f1.weight"


def first_ffn_weight(model) -> str:
    """The parameter name of the first block's feed-forward input matrix
    (lm.anatomy): ``blocks.0.f1.weight`` in our GPT, e.g.
    ``hf.model.layers.0.mlp.gate_proj.weight`` in a Llama."""
    return anatomy(model).first_ffn_input + ".weight"


@pytest.fixture(scope="module")
def f1_name(aftertrain_model) -> str:
    return first_ffn_weight(aftertrain_model)


@pytest.fixture(scope="module")
def f1_reconstruction(aftertrain_model, f1_name) -> dict[str, EQ.Reconstruction]:
    return EQ.reconstruction_figures(dict(aftertrain_model.named_parameters())[f1_name], 2)


def check_per_channel_reconstructs_better(fig: dict[str, EQ.Reconstruction]) -> None:
    pt, pc = fig["per-tensor"], fig["per-channel"]
    assert pc.zero_fraction < pt.zero_fraction, fig
    assert pc.mean_abs_error < pt.mean_abs_error, fig


def fmt_reconstruction(fig: dict[str, EQ.Reconstruction], matrix: str = ARTICLE_F1) -> Shown:
    """The figures of ``fig``, said to be of ``matrix`` where it is not the
    article's blocks.0.f1."""
    if matrix != ARTICLE_F1:
        return shown(
            "{matrix!s} (the first feed-forward input): {rows}", matrix=matrix, rows=fmt_reconstruction(fig)
        )
    return shown(
        "{key!s} zeroes {Reconstruction.zero_fraction:.1%} MAE {Reconstruction.mean_abs_error:.4f}", fig
    )


@pytest.mark.claim("Q6")
def test_2_bit_per_channel_reconstructs_blocks_0_f1_better(
    f1_reconstruction, f1_name, claim_record, num_regression, baselines_dir
):
    """Article, blocks.0.f1 at 2 bits: per-tensor zeroes 95.2% of elements
    with mean absolute error 0.0519, per-channel 78.1% with 0.0419. Asserted:
    per-channel zeroes fewer and errs less. Figures guarded to 1e-12 absolute
    (a pure function of the stored weights; the mean is taken in double).
    On another model the matrix is its first block's feed-forward input
    (lm.anatomy), named in the record."""
    claim_record.measured("{rows}", rows=fmt_reconstruction(f1_reconstruction, f1_name))
    claim_record.table(f1_reconstruction)
    check_per_channel_reconstructs_better(f1_reconstruction)
    num_regression.check(
        {k: [f.to_record()[k] for f in f1_reconstruction.values()] for k in EQ.Reconstruction.keys()},
        fullpath=baselines_dir / "quant_q6_reconstruction.csv",
        default_tolerance=dict(atol=TOL.RECONSTRUCTION_ATOL, rtol=0),
    )


@pytest.mark.claim("Q6")
@pytest.mark.teeth
def test_reconstruction_check_catches_a_per_channel_that_ignores_rows(aftertrain_model):
    """Teeth: a "per-channel" that silently uses one scale reconstructs
    exactly as per-tensor does, so it is not better. (Column scales, the
    wrong axis, still beat per-tensor here: 89.2% zeroed, MAE 0.0347.)"""
    w = dict(aftertrain_model.named_parameters())[first_ffn_weight(aftertrain_model)].detach()
    fig = {}
    for g in Granularity:
        w_hat, q, _ = ignores_granularity(w, 2, g)
        err = (w.double() - w_hat.double()).abs()
        fig[g.value] = EQ.Reconstruction(
            zero_fraction=float((q == 0).double().mean()), mean_abs_error=float(err.mean())
        )
    with pytest.raises(AssertionError):
        check_per_channel_reconstructs_better(fig)


@pytest.mark.claim("Q6")
@pytest.mark.expectation_of(
    "reference", "article", reason=("at 2 bits per-channel keeps the lower loss on both bundled models")
)
def test_2_bit_per_channel_loss_on_our_model_is_the_lower(bits_rows, claim_record):
    """As it comes out on our model (the article's flip is the xfail below):
    at 2 bits per-channel still has the lower loss, 3.9503 against 4.0414."""
    claim_record.measured("{row}", row=fmt_row(bits_rows[2]))
    check_per_channel_lower(bits_rows, (2,))


@pytest.mark.claim("Q6")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "does not reproduce: at 2 bits per-channel keeps the lower loss, 3.9503 against "
        "per-tensor 4.0414 (article 6.3112 against 5.7894); reconstruction and loss do not "
        "part on our model"
    ),
)
def test_2_bit_per_channel_has_the_worse_loss_despite_better_reconstruction(
    bits_rows, f1_reconstruction, f1_name, claim_record
):
    """Article: at 2 bits per-channel has the worse loss (6.3112 vs 5.7894)
    although it reconstructs blocks.0.f1 better. Asserted as the article
    states it: better reconstruction (the test above) and worse loss."""
    claim_record.measured(
        "{row}; {reconstruction}",
        row=fmt_row(bits_rows[2]),
        reconstruction=fmt_reconstruction(f1_reconstruction, f1_name),
    )
    check_per_channel_reconstructs_better(f1_reconstruction)
    assert bits_rows[2].per_channel > bits_rows[2].per_tensor, fmt_row(bits_rows[2])


# --- Q7 / Q8: sensitivity, one matrix at a time, and compounding -----------------


def fmt_sensitivity(rows: list[EQ.SensitivityRow]) -> Shown:
    return shown("{SensitivityRow.name!s} {SensitivityRow.penalty:+.4f}", rows, sep=", ")


def edge_matrices(roles: Anatomy) -> set[str]:
    """What implementations keep in high precision, the article's conclusion
    of Q7: the embeddings and the output layer (tok, pos and head in our GPT)."""
    return {*roles.embeddings, roles.head}


def largest_block_penalty(rows: list[EQ.SensitivityRow], roles: Anatomy) -> float:
    """The largest penalty of a matrix inside a block: neither an embedding
    nor the output layer."""
    return max(r.penalty for r in rows if r.name not in edge_matrices(roles))


def check_embeddings_most_sensitive(rows: list[EQ.SensitivityRow], roles: Anatomy) -> None:
    """The article's reading (tok first, tok and pos the top two, tok more
    than five times any matrix inside a block), for any model: the token
    embedding first, the embedding tables on top, the token table more than
    five times any matrix inside a block."""
    token, tables = roles.embeddings[0], set(roles.embeddings)
    assert rows[0].name == token, fmt_sensitivity(rows[:3])
    assert {r.name for r in rows[: len(tables)]} == tables, fmt_sensitivity(rows[:3])
    block = largest_block_penalty(rows, roles)
    assert rows[0].penalty > TOL.EMBEDDING_DOMINANCE * block, (rows[0].penalty, block)


def check_edge_matrices_most_sensitive(rows: list[EQ.SensitivityRow], edge: set[str]) -> None:
    """The two most harmful matrices at 4 bits are embeddings or the output
    layer (the most harmful one, on a model whose only edge matrix is a token
    table tied to the head)."""
    assert {r.name for r in rows[: min(2, len(edge))]} <= edge, fmt_sensitivity(rows[:3])


@pytest.mark.claim("Q7")
def test_sensitivity_table_matches_the_stored_baseline(
    sensitivity, claim_record, num_regression, baselines_dir
):
    """Article (4 bits, one matrix at a time, rest float32): tok +0.0976,
    pos +0.0618, blocks.2.f1 +0.0184, blocks.0.f2 +0.0174, blocks.2.qkv
    +0.0132, ..., least blocks.2.f2 -0.0020. Every row guarded at 1e-5
    (module docstring); the order of names in the next test."""
    claim_record.measured("{rows}", rows=fmt_sensitivity(sensitivity))
    claim_record.table(sensitivity)
    num_regression.check(
        {
            "rank": list(range(1, len(sensitivity) + 1)),
            "loss": [r.loss for r in sensitivity],
            "penalty": [r.penalty for r in sensitivity],
        },
        fullpath=baselines_dir / "quant_sensitivity.csv",
        default_tolerance=dict(atol=TOL.LOSS_ATOL, rtol=0),
    )


def order_swaps(stored: list[str], stored_loss: list[float], measured: list[str]) -> list[str]:
    """Pairs the measured ranking puts the other way round from the stored
    one although their stored losses are more than 2 LOSS_ATOL apart (two
    losses within that of each other may rank either way on another
    machine: each may move by LOSS_ATOL)."""
    rank = {name: i for i, name in enumerate(measured)}
    return [
        f"{a} ({la:.6f}) before {b} ({lb:.6f})"
        for i, (a, la) in enumerate(zip(stored, stored_loss, strict=True))
        for b, lb in zip(stored[i + 1 :], stored_loss[i + 1 :], strict=True)
        if la - lb > 2 * TOL.LOSS_ATOL and rank[a] > rank[b]
    ]


@pytest.mark.claim("Q7")
def test_sensitivity_order_matches_the_stored_baseline(sensitivity, data_regression, baselines_dir, request):
    """The ranking of the 15 matrices as stored, up to pairs whose stored
    losses lie within 2 LOSS_ATOL of each other (order_swaps: the smallest
    gap on the reference is 6.6e-6, ranks 9 and 10). Written by
    --force-regen; a model without the file is handled as every baseline."""
    names = [r.name for r in sensitivity]
    path = baselines_dir / "quant_sensitivity_order.yml"
    regen = request.config.getoption("force_regen") or request.config.getoption("regen_all")
    if regen or not path.is_file():
        data_regression.check({"order": names}, fullpath=path)
        return
    import pandas as pd
    import yaml

    stored = yaml.safe_load(path.read_text())["order"]
    losses = pd.read_csv(baselines_dir / "quant_sensitivity.csv")["loss"].tolist()
    assert sorted(stored) == sorted(names), (stored, names)
    swaps = order_swaps(stored, losses, names)
    assert not swaps, f"ranked the other way round from {path}: {swaps}"


@pytest.mark.teeth
def test_sensitivity_order_check_catches_a_swap_beyond_the_tolerance():
    """Two names 1e-3 apart swapped fail; two within 2 LOSS_ATOL do not."""
    stored, loss = ["a", "b", "c"], [1.0, 0.999, 0.999 - TOL.LOSS_ATOL]
    assert order_swaps(stored, loss, ["b", "a", "c"]) == ["a (1.000000) before b (0.999000)"]
    assert order_swaps(stored, loss, ["a", "c", "b"]) == []


@pytest.mark.claim("Q7")
@pytest.mark.does_not_reproduce_on(
    "reference",
    reason=(
        "does not reproduce: head.weight ranks first (+0.0108), tok.weight second (+0.0096), "
        "pos.weight fourth (+0.0045, behind blocks.2.f1 +0.0045); tok is 2.1 times the largest "
        "block matrix, not more than 5 (article: tok +0.0976, pos +0.0618, blocks.2.f1 +0.0184)"
    ),
)
def test_token_embedding_is_the_most_sensitive_matrix_at_4_bits(aftertrain_model, sensitivity, claim_record):
    """Article: the two embeddings dominate; tok hurts more than five times
    any matrix inside a block (+0.0976 vs +0.0184). Asserted as stated: tok
    first, pos second, tok's penalty > 5 x the largest block matrix's (on
    another model: its token table first, its embedding tables on top,
    check_embeddings_most_sensitive)."""
    claim_record.measured("{rows}", rows=fmt_sensitivity(sensitivity[:5]))
    check_embeddings_most_sensitive(sensitivity, anatomy(aftertrain_model))


@pytest.mark.claim("Q7")
def test_most_sensitive_matrices_are_the_ones_kept_in_high_precision(
    aftertrain_model, sensitivity, claim_record
):
    """The article's conclusion from Q7: real implementations keep the
    embeddings and the output layer at higher precision because they hurt
    most. Asserted: the two largest 4-bit penalties belong to tok, pos or
    head (the model's embedding tables or output matrix, lm.anatomy)."""
    claim_record.measured("{rows}", rows=fmt_sensitivity(sensitivity[:3]))
    check_edge_matrices_most_sensitive(sensitivity, edge_matrices(anatomy(aftertrain_model)))


@pytest.mark.claim("Q7")
@pytest.mark.teeth
def test_sensitivity_check_catches_skipped_embeddings(aftertrain_model, sensitivity, evaluations):
    """Teeth: a quantizer that silently leaves tok and pos (the embedding
    tables) float32 gives them a penalty of exactly 0, so a block matrix
    joins head in the top two. Precondition (check_rejects): some matrix
    inside a block costs loss at 4 bits (a penalty above 0), else nothing
    can rank above an untouched table."""
    roles = anatomy(aftertrain_model)
    embeddings = list(roles.embeddings)
    broken = EQ.sensitivity_table(
        aftertrain_model, 4, G.PER_CHANNEL, quantize=skip_embeddings, names=embeddings, evaluate=evaluations
    )
    assert {r.penalty for r in broken} == {0.0}
    # The broken quantizer is the real one on every other matrix: reuse those rows.
    rows = sorted(
        broken + [r for r in sensitivity if r.name not in embeddings], key=lambda r: (-r.penalty, r.name)
    )
    block = largest_block_penalty(sensitivity, roles)
    unmet = (
        None
        if block > 0
        else (
            f"precondition not met on this model: no matrix inside a block costs loss at 4 bits "
            f"(largest penalty {block:+.4f}), so embeddings left float32 (penalty 0) rank no lower"
        )
    )
    check_rejects(lambda: check_edge_matrices_most_sensitive(rows, edge_matrices(roles)), unmet)
    check_rejects(lambda: check_embeddings_most_sensitive(rows, roles), unmet)


def check_penalties_compound(c: EQ.Compounding) -> None:
    assert c.all_at_once > c.sum_of_penalties, c


@pytest.mark.claim("Q8")
def test_all_at_once_costs_more_than_the_sum_of_single_penalties(
    sensitivity, bits_rows, model_val_loss, claim_record
):
    """Article: the 15 one-at-a-time 4-bit penalties sum to +0.2830; all at
    once costs +0.3299 (per-channel): the errors compound. Asserted: the
    all-at-once penalty exceeds the sum."""
    c = EQ.compounding(sensitivity, bits_rows[4].per_channel - model_val_loss)
    claim_record.measured(
        "sum of penalties {Compounding.sum_of_penalties:+.4f}, all at once "
        "{Compounding.all_at_once:+.4f}, excess {Compounding.excess:+.4f}",
        c,
    )
    claim_record.table(c)
    check_penalties_compound(c)


# --- Q9: same seed, same loss, different text --------------------------------------


@pytest.fixture(scope="module")
def diverged(aftertrain_model) -> EQ.Divergence:
    return EQ.divergence(aftertrain_model)


def check_parts_after_a_shared_prefix(d: EQ.Divergence, tokens_are_characters: bool = True) -> None:
    """The sampled tokens part after a shared first one (``position`` counts
    tokens); where tokens are our characters, the texts part exactly there.
    A tokenizer's texts are only compared whole: a token's text need not
    stand alone (a byte-level BPE splits characters across tokens)."""
    assert d.position is not None, "the texts never part"
    assert d.position > 1, "the texts differ from the first token"
    if not tokens_are_characters:
        assert d.float32 != d.quantized, "the token ids part but their texts do not"
        return
    n = d.position - 1
    assert d.float32[:n] == d.quantized[:n] and d.float32[n] != d.quantized[n]


def replay_q9_texts(
    reference,
    stored: dict,
    temperature: float = EQ.DIVERGENCE_TEMPERATURE,
    seed: int = EQ.DIVERGENCE_SEED,
    models=None,
) -> dict[str, SP.Replay]:
    """Q9's two stored texts replayed on this machine along themselves
    (tests/common/sampled_paths.py): AssertionError at a character sampled
    otherwise here by more than the cross-machine bound."""
    if models is None:
        models = {"float32": reference, "quantized": EQ.quantized_model(reference, 8, G.PER_TENSOR)}
    return {
        name: SP.replay_plain(
            models[name], EQ.DIVERGENCE_PROMPT, EQ.DIVERGENCE_LENGTH, temperature, seed, stored=stored[name]
        )
        for name in ("float32", "quantized")
    }


@pytest.mark.claim("Q9")
def test_int8_text_parts_from_float32_text_after_a_shared_prefix(
    aftertrain_model, diverged, claim_record, data_regression, baselines_dir, request
):
    """Article: with one seed, the int8 model's text departs from the
    float32 text at the 22nd character. Method: aftertrain.lm.decoding.generate,
    prompt "\\n", 200 characters, temperature 1.0, seed 0, a fresh
    torch.Generator per model, int8 per-tensor (the article's +0.0017
    model). Asserted: a shared prefix of at least one character, then a
    difference; the position and both texts guarded exactly (sampling is
    deterministic given the generator).

    The same on every machine: texts that differ from the stored ones are
    replayed here along the stored texts (tests/common/sampled_paths.py);
    they pass only if this machine samples a stored character otherwise at
    a near tie, within the derived cross-machine bound (core/tolerances.py,
    SAMPLED_LOGIT_DIFF); the tie is named in a warning and the live texts,
    another sample, are not compared. Any other difference fails, as a character
    sampled otherwise by more than the bound does."""
    from aftertrain.lm.hf import HFModel

    characters = not isinstance(aftertrain_model, HFModel)  # a tokenizer's position counts tokens
    # the texts around where they part (from 12 characters before), not their shared start
    shared = len(os.path.commonprefix([diverged.float32, diverged.quantized]))
    start = max(0, shared - 12) if diverged.position is not None else 0
    claim_record.measured(
        "parts at {unit!s} {Divergence.position} (float32 {float32!r}, int8 {int8!r})",
        diverged,
        unit="character" if characters else "token",
        float32=diverged.float32[start : start + 24],
        int8=diverged.quantized[start : start + 24],
    )
    claim_record.table(diverged)
    check_parts_after_a_shared_prefix(diverged, characters)
    path = baselines_dir / "quant_q9_divergence.yml"
    regen = request.config.getoption("force_regen") or request.config.getoption("regen_all")
    if regen or not path.is_file():
        data_regression.check(diverged.to_record(), fullpath=path)
        return
    import yaml

    stored = yaml.safe_load(path.read_text())
    parts = next(
        (
            i + 1
            for i, (x, y) in enumerate(zip(stored["float32"], stored["quantized"], strict=False))
            if x != y
        ),
        None,
    )
    assert stored["position"] == parts, f"{path}: the stored position is not where its texts part"
    if diverged.to_record() == stored:
        data_regression.check(diverged.to_record(), fullpath=path)
        return
    turned = [e for r in replay_q9_texts(aftertrain_model, stored).values() for e in r.excused]
    assert turned, (
        f"the texts differ from {path}, though this machine samples every stored character as stored"
    )
    warnings.warn(
        f"Q9: near tie taken otherwise on this machine, texts not compared: {turned[0]}", stacklevel=1
    )


@pytest.mark.claim("Q9")
@pytest.mark.teeth
@pytest.mark.parametrize("change", ["temperature 0.9", "seed 1", "the float32 model for the int8 one"])
def test_q9_replay_catches_a_real_change(aftertrain_model, baselines_dir, change):
    """Teeth of Q9's replay: a real change takes a character otherwise by far
    more than the cross-machine bound, and fails."""
    import yaml

    path = baselines_dir / "quant_q9_divergence.yml"
    if not path.is_file():
        pytest.skip(f"no stored texts for this model ({path})")
    stored = yaml.safe_load(path.read_text())
    kwargs = {
        "temperature 0.9": {"temperature": 0.9},
        "seed 1": {"seed": 1},
        "the float32 model for the int8 one": {
            "models": {"float32": aftertrain_model, "quantized": aftertrain_model}
        },
    }[change]
    with pytest.raises(AssertionError):
        replay_q9_texts(aftertrain_model, stored, **kwargs)


@pytest.mark.method
def test_q9_free_replay_is_the_generators_own_text(aftertrain_model):
    """The replay redoes generate's arithmetic (torch.multinomial's
    exponential draws): run free, it samples generate's text bit for bit.
    The replay reads our characters; it serves the stored texts of our
    models, which a transformers model does not have."""
    from aftertrain.lm.decoding import generate
    from aftertrain.lm.hf import HFModel

    if isinstance(aftertrain_model, HFModel):
        pytest.skip(
            "the Q9 replay (tests/common/sampled_paths.py) reads our character vocabulary; "
            "it replays stored texts, which only our bundled models have"
        )
    from aftertrain.lm.text import decode, encode

    out = generate(aftertrain_model, encode(EQ.DIVERGENCE_PROMPT), 200, 1.0, torch.Generator().manual_seed(0))
    assert SP.replay_plain(aftertrain_model, EQ.DIVERGENCE_PROMPT, 200, 1.0, 0).text == decode(out[1:])


@pytest.mark.claim("Q9")
@pytest.mark.teeth
def test_divergence_check_catches_a_quantizer_that_does_nothing(aftertrain_model):
    """Teeth: an unquantized copy samples the same text, which never parts."""
    with pytest.raises(AssertionError):
        check_parts_after_a_shared_prefix(EQ.divergence(aftertrain_model, quantize=unchanged))


# --- Q10: no outliers in this model ------------------------------------------------


@pytest.fixture(scope="module")
def activation_ratios(aftertrain_model) -> dict[str, EQ.ActivationPeak]:
    return EQ.activation_channel_ratios(aftertrain_model)


def check_no_outliers(weights: EQ.WeightRanges, activations: dict[str, EQ.ActivationPeak]) -> None:
    assert weights.worst < TOL.OUTLIER_RATIO, weights.worst
    for site, a in activations.items():
        assert a.ratio < TOL.OUTLIER_RATIO, (site, a)


@pytest.mark.claim("Q10")
def test_no_outlier_channels_in_weights_or_activations(
    aftertrain_model, activation_ratios, bits_rows, claim_record, num_regression, baselines_dir
):
    """Article: max/median of per-channel weight ranges, worst matrix 2.49,
    median 1.51; activation channels (max/median of per-channel max|x|):
    block 0 FFN input 1.50 (max 5.24), block 2 FFN input 1.54 (6.24), final
    residual 1.64 (6.67); 8-bit per-tensor vs per-channel differ by 0.0010.
    Asserted: every ratio below 10 (the low end of the "tens to a hundred"
    of large models) and the 8-bit gap below Q2's 0.01. Weight ratios
    guarded to 1e-6 relative (rows in weight_names order)."""
    weights = EQ.weight_range_ratios(aftertrain_model)
    gap = bits_rows[8].per_tensor - bits_rows[8].per_channel
    outliers = EQ.Outliers(weights, activation_ratios, gap)
    claim_record.measured(
        "weights worst {WeightRanges.worst:.2f} median {WeightRanges.median:.2f}; "
        "{activations}; 8-bit gap {Outliers.int8_granularity_gap:.4f}",
        weights,
        outliers,
        activations=shown(
            "{key!s} {ActivationPeak.ratio:.2f} (max {ActivationPeak.max:.2f})", activation_ratios
        ),
    )
    claim_record.table(outliers)
    check_no_outliers(weights, activation_ratios)
    assert abs(gap) < TOL.INT8_LOSS_MARGIN
    num_regression.check(
        {"ratio": list(weights.matrices.values())},
        fullpath=baselines_dir / "quant_q10_weight_ratios.csv",
        default_tolerance=dict(rtol=TOL.RATIO_RTOL, atol=0),
    )


@pytest.mark.claim("Q10")
def test_activation_ratios_match_the_stored_baseline(activation_ratios, num_regression, baselines_dir):
    """Per site (activation_sites order): max/median ratio and max, to 1e-6
    relative (activations pass through float32 sums)."""
    num_regression.check(
        {
            "ratio": [a.ratio for a in activation_ratios.values()],
            "max": [a.max for a in activation_ratios.values()],
        },
        fullpath=baselines_dir / "quant_q10_activation_ratios.csv",
        default_tolerance=dict(rtol=TOL.RATIO_RTOL, atol=0),
    )


@pytest.mark.claim("Q10")
@pytest.mark.teeth
def test_outlier_check_catches_a_model_with_an_outlier_channel(aftertrain_model):
    """Teeth: one output row of blocks.0.f1 and one LayerNorm gain of block
    2's ln2 scaled by 50 make a weight and an activation outlier (on any
    model: its first feed-forward input and its last block's last norm,
    lm.anatomy, whose output is the last feed-forward input)."""
    roles = anatomy(aftertrain_model)
    m = copy.deepcopy(aftertrain_model)
    with torch.no_grad():
        m.get_submodule(roles.first_ffn_input).weight[7] *= 50
        m.get_submodule(roles.last_block_norm).weight[3] *= 50
    weights, acts = EQ.weight_range_ratios(m), EQ.activation_channel_ratios(m)
    with pytest.raises(AssertionError):
        check_no_outliers(weights, acts)
    with pytest.raises(AssertionError):
        check_no_outliers(EQ.WeightRanges({}, worst=1.0, median=1.0), acts)


# --- the overfitted recipe: where Q5, Q6 and Q7 do reproduce ----------------------
# The recipe sweep (report/sweep.md) found one recipe choice that makes the
# article's fragile claims hold: no dropout and the last step of a run that
# overfits (training loss 0.60, validation 2.0739, the article's quality). Its
# checkpoint ships as the bundled `overfit`; these tests run the claims as the
# article states them on it, whatever model the rest of the run uses, so a
# change that makes them stop holding there fails the run. They are that
# model's outcome, reported beside the claims (on_model), never deciding them
# on the model under test: `--aftertrain-model overfit` decides them there.
# Thresholds are the claims' own (the bigram, per-tensor against per-channel,
# 5x): no tolerance.


@pytest.fixture(scope="module")
def overfit():
    from aftertrain.lm.registry import load_model

    return load_model("overfit")[0]


@pytest.fixture(scope="module")
def overfit_bits(overfit, evaluations) -> dict[int, EQ.BitsRow]:
    return {r.bits: r for r in EQ.bits_table(overfit, bits=(3, 2), evaluate=evaluations)}


@pytest.fixture(scope="module")
def character_bigram_loss() -> float:
    """The bigram of `overfit`'s own text, our characters (the session's
    ``bigram_loss`` is the model under test's, another text for a
    transformers model)."""
    from aftertrain.lm.evaluation import val_loss
    from aftertrain.lm.ngram import Bigram

    return val_loss(Bigram.fit())


@pytest.mark.claim("Q5")
@pytest.mark.on_model("overfit")
def test_3_bits_collapse_below_the_bigram_on_the_overfitted_recipe(
    overfit_bits, character_bigram_loss, claim_record
):
    """Article: 3-bit per-tensor 4.3960 and per-channel 3.4381, both above the
    bigram's 2.6501. On `overfit` (measured: per-tensor 3.9524, per-channel
    2.6660 against the bigram's 2.5365) both granularities are above it."""
    claim_record.measured(
        "overfit recipe: bigram {bigram:.4f}; {row}",
        bigram=character_bigram_loss,
        row=fmt_row(overfit_bits[3]),
    )
    check_worse_than_bigram(overfit_bits[3], character_bigram_loss)


@pytest.mark.claim("Q6")
@pytest.mark.on_model("overfit")
def test_2_bit_loss_and_reconstruction_part_on_the_overfitted_recipe(overfit, overfit_bits, claim_record):
    """Article: at 2 bits per-channel has the worse loss (6.3112 vs 5.7894)
    although it reconstructs blocks.0.f1 better. On `overfit` (measured:
    per-channel 4.4898 against per-tensor 4.2077; blocks.0.f1 per-channel
    zeroes 84.0% with MAE 0.0281, per-tensor 98.3% with 0.0338) both hold."""
    fig = EQ.reconstruction_figures(dict(overfit.named_parameters())[ARTICLE_F1], 2)
    claim_record.measured(
        "overfit recipe: {row}; {reconstruction}",
        row=fmt_row(overfit_bits[2]),
        reconstruction=fmt_reconstruction(fig),
    )
    check_per_channel_reconstructs_better(fig)
    assert overfit_bits[2].per_channel > overfit_bits[2].per_tensor, fmt_row(overfit_bits[2])


@pytest.mark.claim("Q7")
@pytest.mark.on_model("overfit")
def test_embeddings_dominate_the_4_bit_sensitivity_on_the_overfitted_recipe(
    overfit, evaluations, claim_record
):
    """Article: tok first, pos second, tok more than five times any block
    matrix (+0.0976 against +0.0184). On `overfit` (measured: tok +0.0497,
    pos +0.0148, tok 7.1 times the largest block matrix) the same. Its
    float32 loss is the session's (``evaluations``: overfit_bits scored it)."""
    rows = EQ.sensitivity_table(overfit, evaluate=evaluations)
    claim_record.measured("overfit recipe: {rows}", rows=fmt_sensitivity(rows[:4]))
    check_embeddings_most_sensitive(rows, anatomy(overfit))
