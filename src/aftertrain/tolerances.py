"""Every tolerance and threshold behind a verdict, each with its derivation.

Tests, checks and the report read them from here, so the report can print
the threshold each verdict used and nothing is twinned under two names.
A tolerance comes from a bound, a measured noise level or an alpha, never
from "what made it pass". Sections by area; keep each constant's reason
in the comment above it.
"""

from __future__ import annotations

# --- statistics ---------------------------------------------------------------



# --- model, decoding, cache ---------------------------------------------------



# --- quantization -------------------------------------------------------------



# --- pruning ------------------------------------------------------------------



# --- speculative decoding -----------------------------------------------------



# --- timing -------------------------------------------------------------------

# Total error of one timing decision (aftertrain.timing.sequential_decision):
# the house alpha. Split by Bonferroni over the scheduled looks and the ratios
# of the decision, so each interval is at 1 - alpha / (looks * ratios).
TIMING_ALPHA = 1e-6
# Scheduled looks: first, 2x, 4x ... 128x the first round's pairs. Eight
# looks take a 25-pair first look to 3200 pairs (the Q11 step: ~2 s idle, ~8 s
# at load 7, where 768 pairs left its interval at [0.874, 1.153]) while costing
# only log2(8) = 3 bits of the per-look alpha (min_pairs 25 instead of 21).
TIMING_LOOKS = 8
# Seconds one decision may spend before it is inconclusive (the pytest option
# --timing-budget overrides it). Idle, every decision but the speculative
# speedups decides within its first two looks (well under a second to a few
# seconds); 20 s bounds a loaded run's ~15 decisions to ~5 extra minutes.
TIMING_BUDGET_S = 20.0

# Q11 and P7: equivalence band of "no difference" for the median ratio. A real
# change of arithmetic (integer kernels, an extra pass, skipping zeros) moves
# the ratio by tens of percent or 2x; 10% is no speedup worth the name, and the
# median of a few hundred pairs is known to a few percent even on a loaded box.
SAME_SPEED_BAND = (0.9, 1.1)
# S5: a quantized draft does the target's float32 arithmetic plus the draft
# loop's bookkeeping (distribution, draw: ~5-10% of a step measured here), so
# c lies in [0.8, 1.3] unless quantization changed the arithmetic (Q11).
SAME_WORK_BAND = (0.8, 1.3)
# S5: a table-lookup draft (bigram, n-gram) costs the loop's bookkeeping only:
# ~50-100 us against a ~700-1000 us target step; c <= 0.25 is "a small
# fraction of a pass" with room for a loaded machine.
CHEAP_DRAFT = 0.25
# S6: a quantized draft's speedup is below 0.95 (c ~ 1 bounds it by
# (k + 1) / (1 + k) = 1 before verification costs anything extra, X8); 5%
# below 1 so that "slower" is not a tie.
QUANTIZED_SPEEDUP_BELOW = 0.95
# X2 and S6 (bigram): a "real speedup" is at least 1.2x; X2's cheap draft must
# beat the bigram's best by 10%. Decided on intervals, so no noise slack.
REAL_SPEEDUP = 1.2
BETTER_THAN_BIGRAM = 1.1
# S7: the article's prediction may overrate but not underrate the measured
# speedup: measured <= 1.1 x predicted (10% for c's timing, which the
# prediction reads at its median).
FORMULA_SLACK = 1.1
# S7 (strict xfail): the article's "match to about 0.05".
ARTICLE_MATCH = 0.05
# X4: at 99.9% zeros CSR is at least 2x faster than dense, far below the 1000x
# reduction of work, leaving room for the kernel's fixed costs.
CSR_MIN_SPEEDUP = 2.0
# S8 teeth: twice the work against once gives a median ratio in [1.5, 2.6]
# (below 2: the second matmul finds its operands in cache and the Python
# overhead is shared; above 2: preemptions land in the longer side more often).
DOUBLE_WORK_BAND = (1.5, 2.6)
# Compare with a stored run (--benchmark-compare): a paired ratio regressed
# when its interval now lies wholly above the stored interval's upper end
# times 1.1 (10%: the same-speed band's width; ratios of one code on two
# machines differ by a few percent, absolute times by 1.8x).
RATIO_REGRESSION = 1.1


# --- end ----------------------------------------------------------------------
