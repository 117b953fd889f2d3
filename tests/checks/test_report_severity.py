"""The classes of a failed row (aftertrain.checks.report: failure, edge
finding, mismatch) and refusals, on quantizers and pruners built to land in
each class, and their broken twins that must land in the other."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks.prune import NM, assert_pruner, check_pruner, nm_battery
from aftertrain.checks.quant import (
    Mapping,
    PerAxis,
    PerGroup,
    QuantScheme,
    Report,
    Row,
    assert_quantizer,
    check_quantizer,
    quantize_scheme,
)
from aftertrain.quant.primitives import FLOAT32_MAX

SYM = QuantScheme(8, Mapping.SYMMETRIC, PerAxis(0))
#: Row 0 reaches float32's max (an edge group), row 1 is ordinary.
HUGE = {"huge row": torch.tensor([[FLOAT32_MAX, -1e38, 3.0], [0.5, -0.25, 1.0]])}
#: Row 0 has a subnormal scale (an edge group), row 1 is ordinary.
TINY = {"tiny row": torch.tensor([[1e-40, -3e-41, 0.0], [0.5, -0.25, 1.0]])}


def nan_at(*rows: int):
    """The reference quantizer with w_hat[row, 0] NaN in each of ``rows``."""

    def quantize(w, scheme):
        w_hat = quantize_scheme(w, scheme)[0].clone()
        w_hat[list(rows), 0] = float("nan")
        return w_hat

    return quantize


def garbage_at(*rows: int):
    """The reference quantizer with each of ``rows`` replaced by 5 x w."""

    def quantize(w, scheme):
        w_hat = quantize_scheme(w, scheme)[0].clone()
        w_hat[list(rows)] = 5 * w[list(rows)]
        return w_hat

    return quantize


def classes(report: Report) -> set[str]:
    return {r.severity for r in report.rows if not r.passed}


@pytest.mark.teeth
def test_severity_catches_a_nan_off_float32s_edge_as_a_failure():
    edge = check_quantizer(nan_at(0), schemes=[SYM], cases=HUGE)
    assert edge.passed and classes(edge) == {"edge"}, str(edge)
    assert str(edge).splitlines()[0].startswith(f"{edge.subject}: PASSED, ")
    assert edge.verdict() == f"PASSED, {len(edge.edges)} edge findings" and not edge.failures
    strict = check_quantizer(nan_at(0), schemes=[SYM], cases=HUGE, strict=True)
    assert not strict.passed and strict.verdict() == "FAILED" and strict.failures
    broken = check_quantizer(nan_at(1), schemes=[SYM], cases=HUGE)
    assert not broken.passed and "failure" in classes(broken), str(broken)


@pytest.mark.teeth
def test_severity_catches_garbage_off_a_subnormal_group_as_a_failure():
    edge = check_quantizer(garbage_at(0), schemes=[SYM], cases=TINY)
    assert edge.passed and classes(edge) == {"edge"}, str(edge)
    with pytest.raises(AssertionError, match="FAILED"):
        assert_quantizer(garbage_at(0), schemes=[SYM], cases=TINY, strict=True)
    assert assert_quantizer(garbage_at(0), schemes=[SYM], cases=TINY) is None
    broken = check_quantizer(garbage_at(1), schemes=[SYM], cases=TINY)
    assert not broken.passed and "failure" in classes(broken), str(broken)


@pytest.mark.parametrize(
    "quantize, cases", [(nan_at(0, 1), HUGE), (garbage_at(0, 1), TINY)], ids=["nan", "garbage"]
)
@pytest.mark.teeth
def test_severity_catches_a_row_wrong_at_the_edge_and_off_it_as_a_failure(quantize, cases):
    """One check failing in an edge group (float32's max, a subnormal scale)
    and in an ordinary group of the same case is a failure, not an edge
    finding: the ordinary group is a weight a trained model has. Each row
    alone is classed right above; here both are wrong at once."""
    report = check_quantizer(quantize, schemes=[SYM], cases=cases)
    assert not report.passed and "failure" in classes(report), str(report)


@pytest.mark.teeth
def test_severity_catches_a_nan_zero_row_as_a_failure():
    """A zero row is a weight a trained (pruned) model has: NaN there fails."""
    zero = {"zero row": torch.tensor([[0.0, 0.0, 0.0], [0.5, -0.25, 1.0]])}
    report = check_quantizer(nan_at(0), schemes=[SYM], cases=zero)
    assert not report.passed and "failure" in classes(report), str(report)


@pytest.mark.teeth
def test_mismatch_catches_another_schemes_output_and_not_floor_rounding():
    """SYMMETRIC_FULL's correct output declared as SYMMETRIC: every failed
    row is a mismatch whose ``fits`` is the scheme to declare; the report
    fails. Floor rounding fits no scheme: failures."""
    full = QuantScheme(8, Mapping.SYMMETRIC_FULL, PerAxis(0))

    def symmetric_full(w, scheme):
        return quantize_scheme(w, full)

    report = check_quantizer(symmetric_full, schemes=[SYM])
    mismatched = [r for r in report.rows if not r.passed and r.severity == "mismatch"]
    assert not report.passed and mismatched and report.mismatches, str(report)
    assert {r.fits for r in mismatched} == {str(full)}, str(report)
    assert all(f.startswith("mismatch: ") for f in report.failures if "looks like" in f)

    def floor_rounding(w, scheme):
        s = w.abs().amax(1, keepdim=True).clamp_min(1e-30) / 127
        return torch.floor(w / s).clamp(-127, 127) * s

    broken = check_quantizer(floor_rounding, schemes=[SYM])
    assert "failure" in classes(broken) and "mismatch" not in classes(broken), str(broken)


RAGGED = QuantScheme(4, Mapping.SYMMETRIC_FULL, PerGroup(4))
ROWS_OF_6 = {"rows of 6": torch.randn(2, 6, generator=torch.Generator().manual_seed(0))}


@pytest.mark.parametrize(
    "exc",
    [
        AssertionError("48 not divisible by 32"),
        RuntimeError("shape '[2, -1, 4]' is invalid"),
        ValueError("group size must divide the row"),
    ],
    ids=repr,
)
def test_any_exception_with_a_message_on_an_undefined_input_is_a_refusal(exc):
    def refuses(w, scheme):
        raise exc

    report = check_quantizer(refuses, schemes=[RAGGED], cases=ROWS_OF_6)
    [row] = report.rows
    assert report.passed and row.check == "refused", str(report)
    assert row.detail == f"refused ({type(exc).__name__}: {exc})"


@pytest.mark.teeth
def test_refusal_catches_a_crash_on_a_defined_input_or_without_a_message():
    def refuses(w, scheme):
        raise AssertionError("no")

    defined = {"rows of 8": torch.randn(2, 8, generator=torch.Generator().manual_seed(0))}
    assert not check_quantizer(refuses, schemes=[RAGGED], cases=defined).passed

    def silent(w, scheme):
        raise AssertionError

    assert not check_quantizer(silent, schemes=[RAGGED], cases=ROWS_OF_6).passed


def two_four(raise_on_ragged: type[Exception] | None):
    def prune(weights, sparsity):
        out = {}
        for name, w in weights.items():
            if w.shape[-1] % 4 and raise_on_ragged is not None:
                raise raise_on_ragged(f"rows of {w.shape[-1]} are not whole blocks of 4")
            if w.shape[-1] % 4 == 0 and raise_on_ragged is AssertionError and w.numel() == 4:
                raise AssertionError("a single block")  # a crash on a defined input
            blocks = w.abs().reshape(-1, 4)
            keep = torch.zeros_like(blocks, dtype=torch.bool)
            keep.scatter_(1, blocks.topk(2, dim=1).indices, True)
            out[name] = keep.reshape(w.shape)
        return out

    return prune


@pytest.mark.teeth
def test_pruner_refusal_catches_a_crash_on_whole_blocks():
    pattern = NM(2, 4)
    report = check_pruner(two_four(RuntimeError), pattern=pattern)
    assert report.passed and any(
        r.detail.startswith("refused (RuntimeError: ") for r in report.rows if r.check == "refused"
    ), str(report)
    assert assert_pruner(two_four(ValueError), pattern=pattern) is None
    whole = {k: v for k, v in nm_battery(pattern).items() if k == "single block"}
    with pytest.raises(AssertionError, match="raised AssertionError: a single block"):
        assert_pruner(two_four(AssertionError), pattern=pattern, cases=whole)


def test_the_library_picks_the_group_size_and_the_kit_reads_it():
    """``PerGroup(None)``: read from the returned scale, else searched from
    w_hat alone; an output that fits no group size fails the ``group size``
    row (teeth: a per-tensor scale on rows of several groups)."""
    chosen = QuantScheme(4, Mapping.ASYMMETRIC, PerGroup(None))

    def by_rows(w, scheme):  # 16 if it divides the row, else the whole row
        g = 16 if w.shape[1] % 16 == 0 else w.shape[1]
        return quantize_scheme(w, QuantScheme(4, Mapping.ASYMMETRIC, PerGroup(g)))

    w = {"rows of 64": torch.randn(3, 64, generator=torch.Generator().manual_seed(1))}
    for quantize in (by_rows, lambda w, s: by_rows(w, s)[0]):
        report = check_quantizer(quantize, schemes=[chosen], cases=w)
        [size] = [r for r in report.rows if r.check == "group size"]
        assert report.passed and size.value == 16, str(report)

    def per_tensor(w, scheme):  # one scale for all 3 rows: no group size along a row
        one = QuantScheme(4, Mapping.ASYMMETRIC, PerGroup(w.numel()))
        return quantize_scheme(w.reshape(1, -1), one)[0].reshape(w.shape)

    report = check_quantizer(per_tensor, schemes=[chosen], cases=w)
    assert not report.passed and [r.check for r in report.rows] == ["group size"], str(report)


def test_a_row_has_a_known_severity_and_a_report_says_each_class():
    with pytest.raises(ValueError, match="severity must be one of"):
        Row("case", "check", False, severity="warning")
    report = Report("subject")
    report.add(Row("a", "grid", False, detail="off", severity="edge"))
    report.add(Row("b", "grid", False, detail="off", severity="mismatch", fits="x"))
    assert report.edges == ["a: grid failed: off"] and report.mismatches == ["b: grid failed: off"]
    assert report.failures == ["mismatch: b: grid failed: off"]
    data = report.as_dict()
    assert data["verdict"] == "FAILED" and data["rows"][1]["fits"] == "x"
