"""The TV threshold each position of the rule battery is judged against
(:func:`aftertrain.checks.rule_battery.judge_case`), at the number of rounds
that reached that position.

Position j of a verification round is reached only by the rounds that
accepted the j drafts before it, so its characters are m_j <= n samples,
and the TV they are judged against is that of m_j direct draws: the null's
mean falls as 1 / sqrt(m), so a null or a margin taken at n rounds would set
the limit far too low at a late position. Here the rounds are laid out by
hand (1,000 rounds, 100 reach position 1, 50 position 2, 20 the bonus), and
each row's threshold is checked against the exact E[TV] at m_j (binomial
sums, not sampling) plus McDiarmid's margin at m_j.
"""

from __future__ import annotations

import math

import pytest
import torch

from aftertrain import stats
from aftertrain.checks.report import Report
from aftertrain.checks.rule_battery import FIXED_P, FIXED_Q, TV_NULL_TRIALS, Case, judge_case
from tests.common.oracles import exact_mean_tv

ALPHA = 1e-3
#: Rounds that accepted 0, 1, 2 and all 3 drafts: m_j = 1000, 100, 50, 20.
ACCEPTED = [0] * 900 + [1] * 50 + [2] * 30 + [3] * 20
REACHED = {0: 1000, 1: 100, 2: 50, 3: 20}


def test_each_positions_tv_threshold_is_taken_at_the_rounds_that_reached_it():
    """Row j's threshold = E[TV at m_j] + sqrt(ln(1/alpha) / (2 m_j)), the
    expectation exact, within 6 standard errors of the null's mean over its
    200 trials (a two-sided normal tail of 2e-9; the standard error measured
    on the null itself, 6e-4 to 4e-3 here). E[TV] is 0.016, 0.054, 0.072 and
    0.109 at m = 1000, 100, 50, 20: a null drawn at n = 1000 rounds for
    every position lowers positions 1-3 by 0.037 to 0.083, 3 to 4 times the
    tolerance; a margin at n lowers them by 0.13 to 0.36."""
    case = Case("fixed V=4 k=3", torch.from_numpy(FIXED_P.copy()), torch.from_numpy(FIXED_Q.copy()))
    n = len(ACCEPTED)
    accepted = torch.tensor(ACCEPTED, dtype=torch.int64)
    # Symbol 2 has p > 0 at every position, so every position gets its TV row.
    drafts = torch.full((n, 3), 2, dtype=torch.int64)
    token = torch.full((n,), 2, dtype=torch.int64)
    report = Report("test")
    judge_case(case, drafts, accepted, token, ALPHA, 0, report)
    rows = {r.position: r for r in report.rows if r.check == "tv"}
    assert sorted(rows) == [0, 1, 2, 3]
    for j, m in REACHED.items():
        assert rows[j].n == m
        spread = stats.tv_null_distribution(FIXED_P[j], m, TV_NULL_TRIALS, j).std()
        tolerance = 6 * spread / math.sqrt(TV_NULL_TRIALS)
        margin = math.sqrt(math.log(1 / ALPHA) / (2 * m))
        assert rows[j].tv_threshold == pytest.approx(exact_mean_tv(FIXED_P[j], m) + margin, abs=tolerance), j
