"""Every tolerance and threshold behind a verdict, each with its derivation.

Tests, checks and the report read them from here, so the report can print
the threshold each verdict used and nothing is twinned under two names.
A tolerance comes from a bound, a measured noise level or an alpha, never
from "what made it pass". Sections by area; keep each constant's reason
in the comment above it.
"""

from __future__ import annotations

# --- statistics ---------------------------------------------------------------

#: False-alarm rate of every statistical test (chi-square p-value, TV
#: threshold). A suite of a few hundred such tests then fails by chance less
#: than once in a thousand runs (union bound: 300 * 1e-6 = 3e-4).
ALPHA: float = 1e-6
#: |sum(p) - 1| allowed in a probability vector. A float32 softmax row
#: carries a rounding error of a few 1e-7 in its sum (float32's unit roundoff
#: is 6e-8; stats' tests use a row off by 5e-7), which must pass; a lost or
#: doubled cell moves the sum by that cell's mass, far more for any cell a
#: test can notice. The float64 laws of aftertrain sum to 1 within 1e-15.
SUM_TOLERANCE: float = 1e-6
#: Trials of the same-sample-size TV null whose mean estimates E[TV]: its
#: standard error is sd / sqrt(trials) = 0.0021 / 31.6 = 7e-5 at the S2 size
#: (n = 20,000, Zipf law over 100 cells), under 0.4% of the McDiarmid margin
#: 0.0186 that tv_threshold adds.
NULL_TRIALS: int = 1000
#: Smallest expected count of a chi-square cell (Cochran's rule of thumb):
#: smaller cells are pooled so the chi-square law of the statistic holds.
MIN_EXPECTED: float = 5.0



# --- model, decoding, cache ---------------------------------------------------



# --- quantization -------------------------------------------------------------



# --- pruning ------------------------------------------------------------------



# --- speculative decoding -----------------------------------------------------



# --- timing -------------------------------------------------------------------



# --- end ----------------------------------------------------------------------
