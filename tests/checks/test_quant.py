"""aftertrain.checks.quant: the kit passes aftertrain's quantizer and rejects
each broken variant (passed as the parameter, no monkeypatching), with the
check that should catch it among the failures."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks import Report
from aftertrain.checks.quant import battery, check_quantizer, reference_quantizer
from aftertrain.quant import Granularity, fake_quantize
from tests.common.quant_bugs import (
    affine_zero_point,
    clamp_past_qmax,
    floor_rounding,
    ignores_granularity,
    mean_scale,
    wrong_axis,
    zero_scale,
)

G = Granularity


def failed_checks(report: Report) -> set[str]:
    return {r.check for r in report.rows if not r.passed}


def test_kit_passes_aftertrains_quantizer_and_reports_every_row():
    report = check_quantizer(reference_quantizer)
    assert report.passed, str(report)
    assert {r.check for r in report.rows} >= {"output", "round-trip", "grid", "codes", "extremes",
                                               "zero", "edge", "odd", "idempotent"}
    assert "PASSED" in str(report)
    report.raise_for_failures()


def test_kit_accepts_a_quantizer_that_returns_only_w_hat():
    """The short protocol: ``quantize(w, bits, g) -> w_hat``."""
    report = check_quantizer(fake_quantize)
    assert report.passed, str(report)
    assert "codes" not in {r.check for r in report.rows}


TEETH = [
    (mean_scale, {"round-trip", "extremes", "idempotent"}),
    (wrong_axis, {"round-trip", "extremes", "grid"}),
    (floor_rounding, {"round-trip", "odd"}),
    (clamp_past_qmax, {"codes", "grid"}),
    (ignores_granularity, {"round-trip", "extremes"}),
    (affine_zero_point, {"grid", "codes"}),
    (zero_scale, {"output"}),
]


@pytest.mark.claim("X7")
@pytest.mark.parametrize("broken, caught_by", TEETH, ids=[b.__name__ for b, _ in TEETH])
@pytest.mark.teeth
def test_kit_catches_broken_quantizer(broken, caught_by):
    """Each broken variant fails the checks named, and the report says so in
    one line per failure and raises on request."""
    report = check_quantizer(broken)
    assert not report.passed
    assert caught_by <= failed_checks(report), (caught_by, failed_checks(report))
    with pytest.raises(AssertionError, match=broken.__name__):
        report.raise_for_failures()


@pytest.mark.claim("X7")
@pytest.mark.parametrize("broken, caught_by", [(wrong_axis, {"round-trip", "extremes"}),
                                               (clamp_past_qmax, {"grid"})],
                         ids=["wrong_axis", "clamp_past_qmax"])
@pytest.mark.teeth
def test_kit_catches_broken_quantizer_from_w_hat_alone(broken, caught_by):
    """Without codes the grid check still sees a code past qmax: w_hat is off
    the article's grid max|w| / qmax."""
    def w_hat_only(w, bits, g):
        return broken(w, bits, g)[0]
    assert caught_by <= failed_checks(check_quantizer(w_hat_only))


@pytest.mark.claim("X7")
@pytest.mark.teeth
def test_kit_catches_wrong_axis_per_channel_scales():
    """X7's teeth claim: scales per input column instead of per output row
    fail the error bound and the largest-maps-to-qmax check on a 2 x 2 matrix
    whose row maxima (1.3, 0.3) differ from its column maxima (0.9, 1.3)."""
    w = torch.tensor([[0.9, -1.3], [-0.1, 0.3]])
    report = check_quantizer(wrong_axis, bits=[4], granularities=[G.PER_CHANNEL],
                             cases={"columns": w})
    assert {"round-trip", "extremes"} <= failed_checks(report), str(report)
    assert check_quantizer(reference_quantizer, bits=[4], granularities=[G.PER_CHANNEL],
                           cases={"columns": w}).passed


def test_a_quantizer_that_raises_or_returns_garbage_is_a_failure_not_a_crash():
    def raises(w, bits, g):
        raise RuntimeError("boom")

    def wrong_shape(w, bits, g):
        return w.reshape(-1)

    assert "raised RuntimeError: boom" in str(check_quantizer(raises, bits=[8]))
    assert failed_checks(check_quantizer(wrong_shape, bits=[8])) == {"output"}


def test_battery_is_deterministic_and_float32():
    a, b = battery(4, seed=0), battery(4, seed=0)
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == torch.float32 and a[name].dim() == 2
        assert torch.equal(a[name], b[name]), name


def test_docs_checks_example_runs():
    """The Quantizers example of docs/checks.md runs as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text()
    body = text.split("## Quantizers", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL)
    exec(compile(code, "docs/checks.md (Quantizers)", "exec"), {})


def test_round_trip_bound_is_the_derived_slack():
    """Pinned threshold: the round-trip row's bound is scale/2 (1 + 8 qmax u)
    + 2**-149 with u = 2**-24 (derivation in aftertrain.core.tolerances), so at 8
    bits the relative slack is 8 x 127 x 2**-24 = 6.06e-5. A tie (w = scale/2,
    rounded to 0 half to even) has error exactly scale/2 and passes."""
    from aftertrain.core import tolerances as TOL

    assert TOL.QUANT_ROUND_TRIP_SLACK_ULPS * 127 * TOL.FLOAT32_UNIT_ROUNDOFF == pytest.approx(
        6.0558e-5, rel=1e-4)
    scale = torch.tensor(1.0 / 127, dtype=torch.float32)
    w = torch.tensor([[1.0, float(scale / 2)]])
    report = check_quantizer(reference_quantizer, bits=[8], granularities=[Granularity.PER_TENSOR],
                             cases={"tie": w})
    assert report.passed, str(report)


@pytest.mark.teeth
def test_round_trip_check_catches_an_error_just_beyond_its_slack():
    """Just beyond the threshold: a quantizer whose error on the tie element is
    scale/2 (1 + 12 qmax u), between the bound's slack (8 qmax u) and twice it
    (16 qmax u), fails the round-trip row; a check whose slack loosened by a
    factor of two would pass it."""
    qmax, u = 127, 2.0**-24
    scale = 1.0 / 127
    w = torch.tensor([[1.0, float(torch.tensor(scale, dtype=torch.float32) / 2)]])

    def just_beyond(x, bits, granularity):
        w_hat, codes, s = reference_quantizer(x, bits, granularity)
        w_hat = w_hat.clone()
        w_hat[0, 1] = -scale / 2 * 12 * qmax * u  # away from w: the error grows by 12 qmax u
        return w_hat, codes, s

    report = check_quantizer(just_beyond, bits=[8], granularities=[Granularity.PER_TENSOR],
                             cases={"tie": w})
    rows = [r for r in report.rows if r.check == "round-trip"]
    assert rows and not rows[0].passed, str(report)
    assert 1 < rows[0].value <= (1 + 16 * qmax * u) / (1 + 8 * qmax * u), rows[0]
