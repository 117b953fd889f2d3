"""The toy models check_generator runs a decoding loop on
(aftertrain.checks.generator_toys): full support by default, so a loop
that crashes on q = 0 shows its law bug on them, and the zero-probability
toys as cases of their own, where that crash shows."""

from __future__ import annotations

import pytest
import torch

from aftertrain.checks.generator_battery import ZERO_PROBES
from aftertrain.checks.generator_toys import ZERO_FRACTION, toy_models
from aftertrain.checks.speculative import check_generator
from tests.common.generator_bugs import capped_generate


def test_the_default_toys_have_full_support_and_the_zero_probes_do_not():
    """Every entry of the default tables is finite (p > 0 and q > 0 at any
    temperature); with ``ZERO_FRACTION`` some are -inf, never a row's top."""
    for model in toy_models():
        assert torch.isfinite(model.table).all()
    for model in toy_models(zero_fraction=ZERO_FRACTION):
        table = model.table
        assert torch.isinf(table).any() and torch.isfinite(table.amax(-1)).all()


@pytest.mark.teeth
def test_check_generator_catches_a_capped_loops_law_bug_behind_its_crash_on_q_zero():
    """The capped loop (tests/common/generator_bugs.py) raises wherever
    q = 0 and is not lossless at k = 2. Default toys: the k = 2 joint laws
    fail their chi-square (the law bug shows), the k = 1 ones pass, and
    the zero probes fail on the exception. On the zero toys alone every
    joint law is the crash, and the law bug never shows."""
    report = check_generator(capped_generate)
    failed = {(r.case, r.check) for r in report.rows if not r.passed and r.case.startswith("joint law")}
    assert failed == {
        ("joint law T=0.3 k=2 n_new=3", "chi-square"),
        ("joint law T=1 k=2 n_new=3", "chi-square"),
        (f"joint law T=1 k=1 n_new=3{ZERO_PROBES}", "no exception"),
        (f"joint law T=1 k=2 n_new=3{ZERO_PROBES}", "no exception"),
    }, str(report)
    zeros = check_generator(capped_generate, *toy_models(zero_fraction=ZERO_FRACTION))
    assert {r.check for r in zeros.rows if r.case.startswith("joint law")} == {"no exception"}
