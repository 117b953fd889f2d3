"""The quantizer guarantees (aftertrain.checks.quant_guarantees) on the paths
only a misbehaving quantizer reaches, each on a hand-built matrix whose
figures are worked out in the docstring: a declared scale floor (judged at
the floor, its cost reported; a quantizer that ignores it fails), codes on
the grid but outside the mapping's code range, and a per-axis granularity
given as a negative axis."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from aftertrain.checks import Report
from aftertrain.checks.quant import FLOAT32_EPS, check_quantizer
from aftertrain.checks.schemes import (
    Mapping,
    PerAxis,
    PerGroup,
    PerTensor,
    QuantScheme,
    group_index,
    qparams,
    quantize_scheme,
)
from aftertrain.quant.primitives import SCALE_FLOOR
from tests.common.kit import failed_checks


def rows_named(report: Report, check: str) -> list:
    return [r for r in report.rows if r.check == check]


# Row 0 sets a normal scale; row 1's int8 SYMMETRIC scale 3e-9 / 127 = 2.4e-11
# lies below torchao's floor (float32 eps, 1.19e-7), so the floor is in force there.
TINY = torch.tensor([[1.0, -0.5, 0.25, 0.125], [1e-9, -2e-9, 3e-9, 0.0]])
FLOORED = QuantScheme(8, Mapping.SYMMETRIC, PerAxis(0), scale_floor=FLOAT32_EPS)


def test_a_declared_floor_judges_the_group_at_the_floor_and_reports_its_cost():
    """At the floor 1.19e-7 every |w| <= 3e-9 of row 1 rounds to code 0
    (w_hat 0), an error of 3e-9 = 254 x the unfloored half step
    (3e-9 / 127 / 2): the ``floor`` row passes with that cost as its value;
    the round trip is judged against floor / 2 and passes."""
    report = check_quantizer(quantize_scheme, schemes=[FLOORED], cases={"tiny": TINY})
    assert report.passed, str(report)
    [floor] = rows_named(report, "floor")
    assert floor.passed and floor.value == pytest.approx(3e-9 / (3e-9 / 127 / 2), rel=1e-6)
    assert "floored" not in failed_checks(report) and not rows_named(report, "edge")


def test_no_floor_row_where_no_group_is_floored():
    """Row 0 alone: its scale 1/127 is far above the floor, so nothing is
    floored and there is no ``floor`` row (a row on every case would hide
    which groups the floor touched)."""
    report = check_quantizer(quantize_scheme, schemes=[FLOORED], cases={"normal": TINY[:1]})
    assert report.passed and not rows_named(report, "floor")


def _without_the_floor(w: torch.Tensor, scheme: QuantScheme):
    """Claims ``scheme``'s floor, applies the smallest normal float32 instead."""
    return quantize_scheme(w, replace(scheme, scale_floor=SCALE_FLOOR))


@pytest.mark.teeth
def test_check_quantizer_catches_a_declared_floor_not_applied():
    """Without the floor row 1 keeps its own scale 2.4e-11: its w_hat (close
    to w) is off the floor's grid (3e-9 / 1.19e-7 = 0.025 steps) and its
    returned scale is not the floor: ``grid`` and ``scale`` fail; from w_hat
    alone, ``grid``."""
    assert failed_checks(check_quantizer(_without_the_floor, schemes=[FLOORED], cases={"tiny": TINY})) == {
        "grid",
        "scale",
    }
    w_hat_only = check_quantizer(
        lambda w, s: _without_the_floor(w, s)[0], schemes=[FLOORED], cases={"tiny": TINY}
    )
    assert failed_checks(w_hat_only) == {"grid"}, str(w_hat_only)


def test_a_declared_floor_judges_a_subnormal_group_that_the_default_leaves_to_edge():
    """A group of |w| ~ 1e-40 (a subnormal scale): with the default floor it
    is only held to the ``edge`` reach; with a declared floor it is judged
    (round trip, grid) at the floor and there is no ``edge`` row."""
    w = torch.tensor([[1.0, -0.5], [1e-40, -2e-40]])
    default = check_quantizer(
        quantize_scheme, schemes=[replace(FLOORED, scale_floor=SCALE_FLOOR)], cases={"sub": w}
    )
    declared = check_quantizer(quantize_scheme, schemes=[FLOORED], cases={"sub": w})
    assert default.passed and declared.passed
    assert rows_named(default, "edge") and not rows_named(declared, "edge")
    assert rows_named(declared, "floor") and not rows_named(default, "floor")


# int4 SYMMETRIC_FULL of [1.5, -0.75] (schemes.quantize_scheme's worked note):
# scale 1.5 / 7.5 = 0.2, 1.5 / 0.2 = 7.5 rounds to 8, clipped to qmax = 7.
FULL = QuantScheme(4, Mapping.SYMMETRIC_FULL, PerTensor())
TOP = torch.tensor([[1.5, -0.75]])


def _unclipped(w: torch.Tensor, scheme: QuantScheme):
    """Rounds to the grid but never clips: code 8 (w_hat 1.6) for 1.5."""
    p = qparams(w, scheme)
    s = p.scale.float()[p.index]
    q = torch.round(w / s)
    return q * s, q, p.scale.float(), None


def test_the_worked_note_passes():
    """The reference clips 1.5 to code 7 and the kit passes it."""
    report = check_quantizer(quantize_scheme, schemes=[FULL], cases={"top": TOP})
    assert report.passed, str(report)
    assert quantize_scheme(TOP, FULL)[1].tolist() == [[7.0, -4.0]]


@pytest.mark.teeth
def test_grid_check_catches_a_code_on_the_grid_outside_the_mapping_range():
    """Code 8 is on the grid (w_hat / s = 8 exactly) and within the round
    trip (|1.5 - 1.6| = s / 2), but outside [-8, 7]: ``grid`` fails naming
    the span the codes reach, ``codes`` fails on the returned codes, and
    ``extremes`` (1.5 must map to 7); the round trip does not."""
    report = check_quantizer(_unclipped, schemes=[FULL], cases={"top": TOP})
    assert failed_checks(report) == {"grid", "codes", "extremes"}, str(report)
    [grid] = rows_named(report, "grid")
    assert "outside [-8, 7] (codes reach [-4, 8])" in grid.detail
    w_hat_only = check_quantizer(lambda w, s: _unclipped(w, s)[0], schemes=[FULL], cases={"top": TOP})
    assert failed_checks(w_hat_only) == {"grid", "extremes"}


@pytest.mark.parametrize("shift, allowed", [(0, True), (8, True), (9, False), (-1, False)])
def test_asymmetric_codes_may_be_stored_signed_or_unsigned_and_nothing_else(shift, allowed):
    """ASYMMETRIC int4 codes are judged in [-8, 7] or, stored unsigned as
    quanto does, in [0, 15] (z shifted by 8, the same w_hat); a shift of 9
    puts code 7 at 16 and one of -1 puts -8 at -9: outside both."""
    scheme = QuantScheme(4, Mapping.ASYMMETRIC, PerTensor())
    w = torch.tensor([[-1.0, -0.3, 0.2, 0.7, 1.1]])

    def stored(w, scheme):
        w_hat, codes, scale, zero = quantize_scheme(w, scheme)
        return w_hat, codes + shift, scale, zero + shift

    codes = quantize_scheme(w, scheme)[1]
    assert codes.min() == -8 and codes.max() == 7  # both ends of the signed range are used
    report = check_quantizer(stored, schemes=[scheme], cases={"w": w})
    assert report.passed == allowed, str(report)
    if not allowed:
        assert failed_checks(report) == {"codes"}


@pytest.mark.teeth
def test_codes_check_catches_symmetric_codes_stored_unsigned():
    """Unsigned storage is asymmetric-only: SYMMETRIC int4 codes shifted by 8
    (span [1, 15]) are outside [-7, 7]."""
    scheme = QuantScheme(4, Mapping.SYMMETRIC, PerTensor())

    def shifted(w, scheme):
        w_hat, codes, scale, _ = quantize_scheme(w, scheme)
        return w_hat, codes + 8, scale, None

    report = check_quantizer(shifted, schemes=[scheme], cases={"w": TOP})
    assert "codes" in failed_checks(report), str(report)


def test_a_negative_axis_is_the_last_axis_of_a_2d_weight():
    """PerAxis(-1) is PerAxis(1): one group per column."""
    shape = (3, 5)
    index, n = group_index(shape, PerAxis(-1))
    assert n == 5 and torch.equal(index, torch.arange(5).expand(3, 5))
    assert torch.equal(index, group_index(shape, PerAxis(1))[0])
    assert str(PerAxis(-1)) == "PerAxis(-1)"
    with pytest.raises(ValueError, match="axis must be 0, 1 or -1"):
        PerAxis(-2)


def test_the_kit_passes_a_correct_quantizer_under_a_negative_axis():
    """quantize_scheme under PerAxis(-1) is bit for bit the per-column one, and
    the kit passes it on the default battery of that scheme."""
    w = torch.tensor([[0.9, -1.3, 0.05], [-0.1, 0.3, 2.0]])
    for mapping in Mapping:
        neg = QuantScheme(4, mapping, PerAxis(-1))
        assert all(
            torch.equal(a, b)
            for a, b in zip(
                quantize_scheme(w, neg), quantize_scheme(w, replace(neg, granularity=PerAxis(1))), strict=True
            )
        )
        report = check_quantizer(quantize_scheme, schemes=[neg])
        assert report.passed, str(report)


@pytest.mark.teeth
def test_check_quantizer_catches_a_negative_axis_read_as_rows():
    """A quantizer that takes -1 for axis 0, on [[0.9, -1.3], [-0.1, 0.3]]
    (row maxima 1.3, 0.3; column maxima 0.9, 1.3): its w_hat is off the
    per-column grid (``grid``, whose line says the output looks like
    PerAxis(0)) and its scales are not the columns' (``scale``)."""

    def rows(w, scheme):
        return quantize_scheme(w, replace(scheme, granularity=PerAxis(0)))

    scheme = QuantScheme(4, Mapping.SYMMETRIC, PerAxis(-1))
    report = check_quantizer(
        rows, schemes=[scheme], cases={"columns": torch.tensor([[0.9, -1.3], [-0.1, 0.3]])}
    )
    assert {"grid", "scale"} <= failed_checks(report), str(report)
    [grid] = rows_named(report, "grid")
    assert "; looks like PerAxis(0) (declare int4 SYMMETRIC PerAxis(0))" in grid.detail
    assert grid.severity == "mismatch" and grid.fits == "int4 SYMMETRIC PerAxis(0)"


# --- the output row: what a quantizer returns and what it may refuse ----------------------

SYM8 = QuantScheme(8, Mapping.SYMMETRIC, PerTensor())
ROWS = {"rows": torch.tensor([[1.0, -0.5, 0.25], [0.75, 0.0, -1.0]])}


def _refuses(w, scheme):
    raise ValueError("this quantizer takes nothing")


@pytest.mark.teeth
def test_output_check_catches_a_valueerror_on_whole_groups_taken_for_a_refusal():
    """Only a PerGroup whose group size does not divide the row may be
    refused (a ``refused`` row); a ValueError on any other input is an
    ``output`` failure, so a quantizer that refuses everything fails."""
    report = check_quantizer(_refuses, schemes=[SYM8], cases=ROWS)
    assert not report.passed
    assert failed_checks(report) == {"output"}, str(report)
    assert not rows_named(report, "refused")
    [row] = rows_named(report, "output")
    assert "raised ValueError: this quantizer takes nothing" in row.detail


@pytest.mark.teeth
def test_output_check_catches_a_tuple_other_than_three_or_four():
    """The protocol's tuple is (w_hat, codes, scale[, zero_point]): a pair
    (w_hat, codes) is refused by the output row, naming its length."""

    def pair(w, scheme):
        w_hat, codes, _, _ = quantize_scheme(w, scheme)
        return w_hat, codes

    report = check_quantizer(pair, schemes=[SYM8], cases=ROWS)
    assert failed_checks(report) == {"output"}, str(report)
    [row] = rows_named(report, "output")
    assert "returned a tuple of 2" in row.detail


@pytest.mark.teeth
def test_odd_row_catches_a_quantizer_that_returns_the_same_output_for_minus_w():
    """``quantize(-w) == -quantize(w)`` for SYMMETRIC: a quantizer that
    quantizes ``|sum(w)|``-signed input (w itself when sum(w) >= 0, else -w)
    gives the same w_hat for w and -w, of equal magnitude but not negated;
    on a case whose sum is positive only ``odd`` can see it."""

    def sign_blind(w, scheme):
        return quantize_scheme(w if float(w.sum()) >= 0 else -w, scheme)[0]

    report = check_quantizer(
        sign_blind, schemes=[SYM8], cases={"positive sum": torch.tensor([[1.0, -0.5, 0.25]])}
    )
    assert failed_checks(report) == {"odd"}, str(report)


# --- declared conventions: signed scale, free zero, low-precision input and scales ---

GAUSS = {"gaussian": torch.randn(4, 64, generator=torch.Generator().manual_seed(1))}


def _free_zero(shift: torch.Tensor | float):
    """hqq's form ``(q - z) * scale`` with min/max's scale and the zero moved by ``shift`` codes."""

    def quantize(w, scheme):
        p = qparams(w, replace(scheme, mapping=Mapping.ASYMMETRIC_FREE_ZERO))
        s, z = p.scale.float()[p.index], p.zero.float()[p.index] + shift
        return (torch.round(w / s + z).clamp(0, 2**scheme.bits - 1) - z) * s

    return quantize


FREE = QuantScheme(4, Mapping.ASYMMETRIC_FREE_ZERO, PerGroup(32))


def test_a_free_zero_moved_off_the_grid_passes_declared_and_is_named_undeclared():
    """hqq's optimised zero: moved 0.3 codes off min/max's, every element is
    still within half a step (the extremes land 0.3 steps inside), so
    ASYMMETRIC_FREE_ZERO passes; declared ASYMMETRIC_FLOAT_SHIFT its grid is
    0.3 off, a mismatch naming ASYMMETRIC_FREE_ZERO."""
    assert check_quantizer(_free_zero(0.3), schemes=FREE, cases=GAUSS).passed
    shift = replace(FREE, mapping=Mapping.ASYMMETRIC_FLOAT_SHIFT)
    report = check_quantizer(_free_zero(0.3), schemes=shift, cases=GAUSS)
    assert report.mismatches and all("looks like ASYMMETRIC_FREE_ZERO" in m for m in report.mismatches)


@pytest.mark.teeth
def test_round_trip_catches_a_free_zero_that_clips():
    """A zero moved 0.8 codes: the group's largest w maps to 15.8, clipped to
    15, 0.8 steps off: the round trip (half a step) fails."""
    report = check_quantizer(_free_zero(0.8), schemes=FREE, cases=GAUSS)
    assert "round-trip" in failed_checks(report), str(report)


@pytest.mark.teeth
def test_grid_catches_two_zero_points_in_one_group():
    """Even columns on one zero, odd ones on another 0.3 codes away: each
    element within half a step, but the group's w_hat is on no one grid."""
    shift = torch.tensor([0.3, 0.0]).repeat(32)
    report = check_quantizer(_free_zero(shift), schemes=FREE, cases=GAUSS)
    assert failed_checks(report) == {"grid"}, str(report)


SIGNED = QuantScheme(4, Mapping.SYMMETRIC_SIGNED_SCALE, PerAxis(0))


def test_a_signed_scale_output_declared_symmetric_full_is_named():
    """neural-compressor's full range (a negative scale where the larger
    extreme is positive) under SYMMETRIC_FULL: a mismatch naming it."""
    full = replace(SIGNED, mapping=Mapping.SYMMETRIC_FULL)
    report = check_quantizer(lambda w, s: quantize_scheme(w, SIGNED)[0], schemes=full, cases=GAUSS)
    assert report.mismatches and all("looks like SYMMETRIC_SIGNED_SCALE" in m for m in report.mismatches)


@pytest.mark.teeth
def test_round_trip_catches_a_signed_scale_never_negative():
    """The scale amax / 8 always positive: a row whose larger extreme is
    positive clips it to 7 steps, one step (not half) off."""

    def never_negative(w, scheme):
        s = w.abs().amax(1, keepdim=True) / 2 ** (scheme.bits - 1)
        return torch.round(w / s).clamp(-(2 ** (scheme.bits - 1)), 2 ** (scheme.bits - 1) - 1) * s

    w = torch.tensor([[1.0, -0.5, 0.25, 0.1], [-1.0, 0.5, 0.25, 0.1]])
    report = check_quantizer(never_negative, schemes=SIGNED, cases={"signs": w})
    assert "round-trip" in failed_checks(report), str(report)


INT8 = QuantScheme(8, Mapping.SYMMETRIC, PerAxis(0))


def _low_scales(dtype: torch.dtype):
    """neural-compressor's ``recover()``: codes from the float32 scale, w_hat from it rounded to dtype."""

    def quantize(w, scheme):
        p = qparams(w, INT8)
        s = p.scale.float()[p.index]
        return torch.round(w / s).clamp(-127, 127) * s.to(dtype).float()

    return quantize


def test_float16_scales_pass_declared_and_are_named_undeclared():
    """Dequantized with float16 scales, each w_hat moves by up to 127 x the
    scale's rounding (2**-11 relative): declared ``scale_dtype`` passes,
    undeclared a mismatch naming ``scale=float16``."""
    declared = replace(INT8, scale_dtype=torch.float16)
    assert check_quantizer(_low_scales(torch.float16), schemes=declared, cases=GAUSS).passed
    report = check_quantizer(_low_scales(torch.float16), schemes=INT8, cases=GAUSS)
    assert report.mismatches and all("scale=float16" in m for m in report.mismatches), str(report)


@pytest.mark.teeth
def test_round_trip_catches_bfloat16_scales_declared_float16():
    """bfloat16 rounds the scale 8 times coarser (2**-8): past float16's drift."""
    declared = replace(INT8, scale_dtype=torch.float16)
    report = check_quantizer(_low_scales(torch.bfloat16), schemes=declared, cases=GAUSS)
    assert "round-trip" in failed_checks(report), str(report)


def _from_copy(dtype: torch.dtype):
    """bitsandbytes' module path: the weight quantized from a copy in ``dtype``."""
    return lambda w, scheme: quantize_scheme(w.to(dtype).float(), INT8)[0]


def test_a_float16_copy_quantized_passes_declared_and_is_named_undeclared():
    declared = replace(INT8, input_dtype=torch.float16)
    assert check_quantizer(_from_copy(torch.float16), schemes=declared, cases=GAUSS).passed
    report = check_quantizer(_from_copy(torch.float16), schemes=INT8, cases=GAUSS)
    assert report.mismatches and all("input=float16" in m for m in report.mismatches), str(report)


@pytest.mark.teeth
def test_round_trip_catches_a_bfloat16_copy_declared_float16():
    """A bfloat16 copy errs up to 2**-9 |w|, past half a step of the float16
    copy's grid for some element of every row at 8 bits."""
    declared = replace(INT8, input_dtype=torch.float16)
    report = check_quantizer(_from_copy(torch.bfloat16), schemes=declared, cases=GAUSS)
    assert "round-trip" in failed_checks(report), str(report)


# --- classification: crashes, constant groups, the all-zero group, the floor hint ---


@pytest.mark.teeth
def test_output_catches_a_quantizer_raising_on_a_constant_row():
    """A constant row (the single element [[-0.75]], all-zero rows) is an
    ordinary input, not float32's edge: raising there is a failure, even
    with a message, and the report FAILS."""

    def refuses_constant(w, scheme):
        if bool((w.amax(1) == w.amin(1)).any()):
            raise ValueError("a constant row has no range")
        return quantize_scheme(w, scheme)

    scheme = QuantScheme(4, Mapping.ASYMMETRIC_FLOAT_SHIFT, PerAxis(0))
    report = check_quantizer(refuses_constant, schemes=scheme)
    rows = [r for r in report.rows if r.case.startswith("single element") and r.check == "output"]
    assert not report.passed and rows and rows[0].outcome == "failure", str(report)


def test_a_crash_on_a_ragged_row_fails_and_a_raise_is_a_refusal():
    """Rows of 48 under PerGroup(32): a reshape's RuntimeError (a crash in a
    tensor operation) is a failure; ``raise ValueError("rows of 48 ...")``
    a refusal, a passed row of class "refused"."""

    def crashes(w, scheme):
        groups = w.reshape(w.shape[0], -1, 32)
        return quantize_scheme(groups.reshape(w.shape), scheme)

    def refuses(w, scheme):
        if w.shape[1] % 32:
            raise ValueError(f"rows of {w.shape[1]} are not whole groups of 32")
        return quantize_scheme(w, scheme)

    scheme, cases = QuantScheme(4, Mapping.SYMMETRIC, PerGroup(32)), {"ragged": torch.randn(2, 48)}
    crash = check_quantizer(crashes, schemes=scheme, cases=cases)
    assert [r.outcome for r in crash.rows] == ["failure"] and "RuntimeError" in crash.failures[0]
    refusal = check_quantizer(refuses, schemes=scheme, cases=cases)
    assert refusal.passed and [r.outcome for r in refusal.rows] == ["refused"], str(refusal)


def test_a_declared_floor_never_judges_the_all_zero_group():
    """hqq returns scale 1.0 for an all-zero group (its output exactly 0):
    with its step floor 5e-5 declared the group is not judged at the floor,
    only held to 0 (``edge``), and every row passes."""
    scheme = replace(FREE, scale_floor=5e-5)

    def hqq_zero(w, s):
        w_hat, codes, scale, zero = quantize_scheme(w, s)
        return w_hat, codes, torch.where(qparams(w, s).amax == 0, 1.0, scale), zero

    w = torch.cat([torch.randn(1, 32), torch.zeros(1, 32)], dim=1)
    report = check_quantizer(hqq_zero, schemes=scheme, cases={"zero group": w})
    assert report.passed and {r.outcome for r in report.rows} == {"passed"}, str(report)


def test_the_floor_hint_names_the_step_floor_the_output_shows():
    """A step floored at 5e-5 (hqq's) on small-but-normal groups, declared
    without it: a mismatch reading "looks like a scale floor of 5e-05"."""
    shift = QuantScheme(4, Mapping.ASYMMETRIC_FLOAT_SHIFT, PerGroup(32))
    w = 1e-5 + 9e-5 * torch.rand(2, 64, generator=torch.Generator().manual_seed(2))
    w = torch.cat([w, torch.randn(2, 64)], dim=1)
    floored = replace(shift, scale_floor=5e-5)
    report = check_quantizer(lambda x, s: quantize_scheme(x, floored)[0], schemes=shift, cases={"small": w})
    assert report.mismatches and all("a scale floor of 5e-05" in m for m in report.mismatches), str(report)


def test_every_row_has_a_meaningful_class():
    """Every row's class is passed, refused, failure, edge or mismatch;
    a passed row's is "passed" (a refusal's "refused")."""
    report = check_quantizer(quantize_scheme, schemes=QuantScheme(4, Mapping.SYMMETRIC_FULL, PerGroup(32)))
    classes = {r.outcome for r in report.rows}
    assert classes <= {"passed", "refused", "failure", "edge", "mismatch"} and "passed" in classes
    assert all(r.outcome == "passed" for r in report.rows if r.passed and r.check != "refused")
    assert all(
        row["class"] == r.outcome for row, r in zip(report.as_dict()["rows"], report.rows, strict=True)
    )


def test_w_hat_returned_in_float16_passes_declared():
    """hqq dequantizes in its ``compute_dtype``, float16: each w_hat moves by
    up to half an ulp of max|w| + s there (2**-11 relative), which the
    declared ``output_dtype`` allows and the undeclared scheme does not."""
    declared = replace(FREE, output_dtype=torch.float16)
    assert check_quantizer(quantize_scheme, schemes=declared).passed
    report = check_quantizer(lambda w, s: quantize_scheme(w, declared), schemes=FREE, cases=GAUSS)
    assert report.mismatches and not report.passed, str(report)


@pytest.mark.teeth
def test_round_trip_catches_w_hat_in_bfloat16_declared_float16():
    """bfloat16 output rounds 8 times coarser (2**-8 relative): at 8 bits
    that is about 2 x half a step, past float16's slack."""
    declared = replace(INT8, output_dtype=torch.float16)
    report = check_quantizer(
        lambda w, s: quantize_scheme(w, INT8)[0].bfloat16().float(), schemes=declared, cases=GAUSS
    )
    assert "round-trip" in failed_checks(report), str(report)


def test_a_one_line_if_raise_is_a_refusal():
    """``if w.shape[1] % 32: raise ValueError(...)`` on one line: the raise
    after the colon is the statement that refuses, a refusal."""

    def refuses(w, scheme):
        if w.shape[1] % 32: raise ValueError(f"rows of {w.shape[1]} are not whole groups of 32")  # fmt: skip  # noqa: E701
        return quantize_scheme(w, scheme)

    scheme = QuantScheme(4, Mapping.SYMMETRIC, PerGroup(32))
    report = check_quantizer(refuses, schemes=scheme, cases={"ragged": torch.randn(2, 48)})
    assert report.passed and [r.outcome for r in report.rows] == ["refused"], str(report)


def test_a_subnormal_float16_scale_moves_the_end_codes_within_its_drift():
    """At 8 bits a group of max|w| about 1e-4 has a scale near 7.9e-7, in
    float16's subnormal range (kept to about 4%): codes from the float32
    scale times the float16 one read up to 132 steps of the exact scale.
    Declared ``scale_dtype=float16`` that is the scale's drift (127 x 4%),
    so the grid's code range widens by it and the case passes."""

    def recover(w, scheme):
        p = qparams(w, INT8)
        s = p.scale.float()[p.index]
        return torch.round(w / s).clamp(-127, 127) * s.half().float()

    w = 1e-5 + 9e-5 * torch.rand(4, 32, generator=torch.Generator().manual_seed(3))
    report = check_quantizer(recover, schemes=replace(INT8, scale_dtype=torch.float16), cases={"small": w})
    assert report.passed, str(report)
