"""Codebook schemes (aftertrain.checks.codebooks): bitsandbytes' NF4 and FP4
tables, the reference codebook quantizer passing its own battery, a teeth
test per guarantee (table, nearest, codes and scale, an all-zero block), and
the mismatch line naming the table an output fits."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks.codebooks import CODEBOOKS, FP4, NF4, Codebook, CodebookScheme, quantize_codebook
from aftertrain.checks.quant import (
    Mapping,
    PerAxis,
    PerBlock,
    PerGroup,
    PerTensor,
    QuantScheme,
    check_quantizer,
    quantize_scheme,
)
from tests.common.kit import failed_checks

NF4_64 = CodebookScheme(NF4, PerGroup(64))


def test_builtin_tables_are_bitsandbytes_nf4_and_fp4():
    """Pinned from bitsandbytes 0.50.2's ``get_4bit_type``: NF4 holds -1, 0
    and 1 with 7 negative and 8 positive values; FP4 is (0, 0.0625, 2, 3, 4, 6,
    8, 12) / 12 with both signs (its -0 is 0)."""
    assert len(NF4.values) == 16 and NF4.values[0] == -1.0 and NF4.values[7] == 0.0 and NF4.values[-1] == 1.0
    assert NF4.values[8] == 0.07958029955625534
    assert sorted({abs(v) * 12 for v in FP4.values}) == pytest.approx([0, 0.0625, 2, 3, 4, 6, 8, 12])
    assert CODEBOOKS == {"NF4": NF4, "FP4": FP4}


@pytest.mark.parametrize("granularity", [PerGroup(64), PerAxis(0), PerTensor()])
@pytest.mark.parametrize("book", [NF4, FP4])
def test_the_reference_codebook_quantizer_passes_every_case(book, granularity):
    """quantize_codebook (nearest entry of w / amax, times amax, float32)
    passes the default battery; codes and absmax are checked too."""
    report = check_quantizer(quantize_codebook, schemes=CodebookScheme(book, granularity))
    assert report.passed and not report.edges, str(report)
    assert {"table", "nearest", "zero", "codes", "codes match w_hat", "scale", "edge"} <= {
        r.check for r in report.rows
    }


@pytest.mark.teeth
def test_table_catches_values_off_the_table():
    """w_hat shrunk by 3%: 0.03 of amax off the nearest NF4 value at the
    block's extreme (1.0 -> 0.97), far past the slack 2 u."""
    report = check_quantizer(lambda w, s: quantize_codebook(w, s)[0] * 0.97, schemes=NF4_64)
    assert not report.passed and "table" in failed_checks(report), str(report)


@pytest.mark.teeth
def test_nearest_catches_the_entry_below():
    """Every w / amax rounded down to the table entry below it (floor, not
    nearest): on the table, so only ``nearest`` can see it."""

    def floor_nf4(w, scheme):
        t = scheme.codebook.table().float()
        amax = w.reshape(-1, 64).abs().amax(-1, keepdim=True)
        x = (w.reshape(-1, 64) / amax.clamp_min(1e-38)).unsqueeze(-1)
        below = torch.where(t <= x + 1e-7, t, -2.0).amax(-1)
        return (below * amax).reshape(w.shape)

    report = check_quantizer(floor_nf4, schemes=NF4_64, cases={"gaussian": torch.randn(2, 128)})
    assert failed_checks(report) == {"nearest"}, str(report)


@pytest.mark.teeth
def test_scale_catches_an_absmax_from_the_next_block():
    """The returned absmax rolled by one block: w_hat is still right, the
    codes and scales are not each other's or the blocks'."""

    def rolled(w, scheme):
        w_hat, codes, amax, _ = quantize_codebook(w, scheme)
        return w_hat, codes, amax.roll(1), None

    cases = {"scales": torch.randn(2, 128) * torch.tensor([1e-3, 1e3]).repeat_interleave(64)}
    report = check_quantizer(rolled, schemes=NF4_64, cases=cases)
    assert {"scale", "codes match w_hat"} <= failed_checks(report), str(report)


@pytest.mark.teeth
def test_edge_catches_an_all_zero_block_made_nonzero():
    """An all-zero block is not judged by the table (its amax is 0) but must
    stay 0: a quantizer adding 1e-3 there fails ``edge``."""

    def shifted(w, scheme):
        w_hat = quantize_codebook(w, scheme)[0]
        return torch.where(w == 0, torch.full_like(w, 1e-3), w_hat)

    w = torch.cat([torch.randn(1, 64), torch.zeros(1, 64)], dim=1)
    assert "edge" in failed_checks(check_quantizer(shifted, schemes=NF4_64, cases={"zero block": w}))


@pytest.mark.teeth
def test_zero_catches_a_sign_flip_and_says_which_under_a_codebook():
    """A codebook output whose first value has the wrong sign fails ``zero``
    with the integer schemes' wording, "a sign flipped" (one row, one
    wording for both kinds of scheme), and the all-zero block's ``edge`` row
    carries its bound, half float32's smallest subnormal."""

    def flipped(w, scheme):
        w_hat = quantize_codebook(w, scheme)[0].clone()
        w_hat[0, 0] = -w_hat[0, 0]
        return w_hat

    w = torch.cat([torch.randn(1, 64, generator=torch.Generator().manual_seed(0)), torch.zeros(1, 64)], dim=1)
    w[0, 0] = 0.5
    report = check_quantizer(flipped, schemes=NF4_64, cases={"zero block": w})
    [zero] = [r for r in report.rows if r.check == "zero"]
    [edge] = [r for r in report.rows if r.check == "edge"]
    assert not zero.passed and zero.detail == "a sign flipped", str(report)
    assert edge.passed and edge.bound == 2.0**-149, str(report)


def test_an_fp4_output_declared_nf4_is_a_mismatch_naming_fp4():
    """Undeclared conventions are named: FP4's output under NF4 reads
    "looks like FP4 PerGroup(64) (declare FP4 PerGroup(64))"."""
    report = check_quantizer(lambda w, s: quantize_codebook(w, CodebookScheme(FP4))[0], schemes=NF4_64)
    assert report.mismatches and all("declare FP4 PerGroup(64)" in m for m in report.mismatches), str(report)


def test_an_nf4_output_declared_as_an_integer_scheme_names_the_codebook():
    out = CodebookScheme(NF4, PerGroup(32))
    report = check_quantizer(
        lambda w, s: quantize_codebook(w, out)[0], schemes=QuantScheme(4, Mapping.SYMMETRIC, PerGroup(32))
    )
    assert report.mismatches and all("declare NF4 PerGroup(32)" in m for m in report.mismatches), str(report)


def test_a_float16_copy_quantized_passes_only_declared():
    """bitsandbytes' module path quantizes a float16 copy: declared
    (``input_dtype=torch.float16``) it passes, undeclared it is a mismatch
    naming the declaration."""
    fp16 = CodebookScheme(NF4, PerGroup(64), input_dtype=torch.float16)

    def from_half(w, scheme):
        return quantize_codebook(w, fp16)[0]

    cases = {"gaussian": torch.randn(2, 128), "small": 1e-3 * torch.randn(2, 128)}
    assert check_quantizer(from_half, schemes=fp16, cases=cases).passed
    # bitsandbytes' module path also returns w_hat in float16: declared, the reference passes
    both = CodebookScheme(NF4, PerGroup(64), input_dtype=torch.float16, output_dtype=torch.float16)
    assert check_quantizer(quantize_codebook, schemes=both, cases=cases).passed
    report = check_quantizer(from_half, schemes=NF4_64, cases=cases)
    assert report.mismatches and all("input=float16" in m for m in report.mismatches), str(report)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: Codebook("T", (0.5, 0.25)), ["max |value| == 1"]),
        (lambda: Codebook("T", (1.0, 1.0)), ["at least 2 distinct"]),
        (lambda: Codebook("no name", (1.0, -1.0)), ["identifier"]),
        (lambda: CodebookScheme(NF4, PerGroup(None)), ["PerGroup(blocksize)"]),
        (lambda: CodebookScheme("NF4"), ["codebook must be a Codebook"]),
        (lambda: CodebookScheme(NF4, input_dtype=torch.float32), ["input_dtype", "float16"]),
    ],
)
def test_bad_codebooks_raise_value_error_naming_the_argument(make, words):
    with pytest.raises(ValueError) as err:
        make()
    assert all(w in str(err.value) for w in words), str(err.value)


@pytest.mark.parametrize(
    ("w", "words"),
    [
        (torch.tensor([[0.5, float("nan")]]), ["finite", "1 NaN or inf values"]),
        (torch.ones(8), ["2-D float32", "torch.float32 (8,)"]),
        ("w", ["2-D float32", "got str"]),
        (torch.ones(2, 4, dtype=torch.int64), ["2-D float32", "torch.int64 (2, 4)"]),
    ],
    ids=["NaN", "1-D", "a str", "int64"],
)
@pytest.mark.parametrize(
    ("quantize", "scheme"),
    [(quantize_codebook, NF4_64), (quantize_scheme, QuantScheme(4, Mapping.SYMMETRIC, PerGroup(64)))],
    ids=["quantize_codebook", "quantize_scheme"],
)
def test_the_reference_quantizers_raise_value_error_naming_a_bad_w(quantize, scheme, w, words):
    """Both reference quantizers take what the kit's protocol hands a
    quantizer, a finite non-empty 2-D float32 tensor, and name anything else
    (a NaN came back as NaN, a 1-D weight failed to unpack its shape)."""
    with pytest.raises(ValueError, match="^w must be a finite, non-empty 2-D float32 tensor") as err:
        quantize(w, scheme)
    assert all(word in str(err.value) for word in words), str(err.value)


def _flat_nf4(w, scheme):
    """bitsandbytes' ``quantize_4bit``: blocks of 64 of the flattened weight."""
    return quantize_codebook(w, CodebookScheme(NF4, PerBlock(64)))[0]


def test_blocks_of_the_flattened_weight_pass_as_per_block_and_are_named_per_group():
    """Rows of 96 at block size 64 (the battery's rows of 1.5 blocks): a block
    straddles two rows. Declared ``PerBlock(64)`` every case passes; declared
    ``PerGroup(64)`` the straddling case is a mismatch naming ``PerBlock(64)``."""
    assert check_quantizer(_flat_nf4, schemes=CodebookScheme(NF4, PerBlock(64))).passed
    report = check_quantizer(_flat_nf4, schemes=NF4_64)
    assert report.mismatches and all("declare NF4 PerBlock(64)" in m for m in report.mismatches), str(report)
    assert all(m.startswith("group size does not divide the row") for m in report.mismatches), str(report)


@pytest.mark.teeth
def test_table_catches_per_row_blocks_declared_per_block():
    """The converse: blocks that restart at every row claimed as blocks of
    the flattened weight: on rows of 96 the second block's absmax is another."""
    report = check_quantizer(
        lambda w, s: quantize_codebook(w, NF4_64)[0],
        schemes=CodebookScheme(NF4, PerBlock(64)),
        cases={"rows of 96": torch.randn(4, 96) * torch.tensor([[1.0], [10.0], [0.1], [3.0]])},
    )
    assert "table" in failed_checks(report), str(report)
