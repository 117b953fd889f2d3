"""Every tolerance carries its derivation (aftertrain.core.tolerances): a
``#:`` comment right above each constant, which Sphinx and a reader both
take for its documentation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aftertrain.core import tolerances

SOURCE = Path(tolerances.__file__).read_text()


def undocumented(source: str) -> list[str]:
    """Module-level constants with neither a ``#:`` line above nor a comment beside."""
    lines = source.splitlines()
    return [
        m.group(1)
        for i, line in enumerate(lines)
        if (m := re.match(r"^([A-Z][A-Z0-9_]*) = ", line))
        and "#" not in line
        and not (i and lines[i - 1].startswith("#:"))
    ]


def test_every_tolerance_has_a_doc_comment():
    assert undocumented(SOURCE) == []
    assert len(re.findall(r"^[A-Z][A-Z0-9_]* = ", SOURCE, re.M)) >= 30  # not vacuous


@pytest.mark.teeth
def test_doc_comment_check_catches_a_bare_constant():
    assert undocumented("#: why\nA = 1\n\nB = 2\n# plain comment\nC = 3\nD = 4  # beside\n") == ["B", "C"]


# --- each constant against the derivation its comment gives -----------------------


def test_alpha_is_the_house_standard_and_its_union_bound_holds():
    """'alpha <= 1e-6 per test', and the comment's arithmetic: a suite of 300
    statistical tests fails by chance less than once in a thousand runs."""
    assert tolerances.ALPHA <= 1e-6
    assert 300 * tolerances.ALPHA < 1e-3


def test_null_trials_make_the_null_means_error_a_small_part_of_the_margin():
    """NULL_TRIALS' comment: at the S2 size (n = 20,000, a Zipf law over 100
    cells) the standard error of the null's mean, sd / sqrt(trials), is under
    0.4% of the McDiarmid margin sqrt(ln(1/alpha) / 2n) that tv_threshold
    adds. sd measured here on 200 trials of that null: 0.0019, so 6.0e-5
    against 7.4e-5 at 1,000 trials (at 100 trials it would be 1.9e-4)."""
    import math

    import numpy as np

    from aftertrain import stats

    p = 1 / np.arange(1, 101)
    p /= p.sum()
    sd = stats.tv_null_distribution(p, 20_000, 200, 0).std(ddof=1)
    margin = math.sqrt(math.log(1 / tolerances.ALPHA) / (2 * 20_000))
    assert sd / math.sqrt(tolerances.NULL_TRIALS) < 0.004 * margin


def test_int8_margin_is_one_unit_of_the_second_decimal():
    """'int8 is nearly free' read as the third decimal: int8 may change the
    loss by less than what the article's second decimal would show (0.01
    nats); its own figures (+0.0017 per-tensor, +0.0008 per-channel, a 0.0010
    gap) lie well inside, and a change of 0.01 or more would show."""
    assert tolerances.INT8_LOSS_MARGIN == 10**-2
    assert max(0.0017, 0.0008, 0.0010) < tolerances.INT8_LOSS_MARGIN
