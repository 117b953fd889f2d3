"""The article's published tables, as the rows our experiments return.

The figures are those of the claims' ``article`` texts
(:data:`aftertrain.claims.catalogue.CLAIMS`, copied from CLAIMS.md), so the
report reads the article's figure and ours by the same field name
(``ARTICLE.q4.rows[i].per_channel`` beside ``q4.rows[i].per_channel``).
Units are ours: validation loss in nats, sparsity and acceptance as
fractions, times in microseconds. A float the article did not publish (a
spread over seeds, an interval, a loss it did not print) is ``nan``; where
it published a figure our row cannot hold without inventing another (the
storage in MB without the byte counts, the acceptance without the drafted
count, verification times in milliseconds without the plain step's
interval), a row of its own below says what it published.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aftertrain.claims.tables import TableRow
from aftertrain.experiments import prune as EP
from aftertrain.experiments import quant as EQ
from aftertrain.experiments import speculative as XS
from aftertrain.experiments import speedup as XU
from aftertrain.experiments.tables import Baselines, DenseZeros
from aftertrain.quant import Granularity
from aftertrain.speculative.drafts import DraftKind

#: A figure the article did not publish.
NAN = math.nan


@dataclass(frozen=True)
class PublishedStorage(TableRow):
    """Q3 as published: the counts, and the sizes in MB (2**20 bytes) with the cut."""

    weights: int
    weights_fp32_mb: float
    weights_int8_mb: float
    parameters: int
    parameters_fp32_mb: float
    parameters_int8_mb: float
    cut: float


@dataclass(frozen=True)
class PublishedAcceptance(TableRow):
    """S4 as published: one draft (a DraftKind value) at ``k`` (no drafted or
    accepted counts)."""

    draft: str
    k: int
    acceptance: float
    chars_per_pass: float
    target_passes: int


@dataclass(frozen=True)
class PublishedTruncation(TableRow):
    """X1 as published: one draft's k=1 acceptance, the prediction at k=8 from
    it, and the acceptance measured at k=8."""

    draft: str
    acceptance_1: float
    predicted_8: float
    measured_8: float


@dataclass(frozen=True)
class PublishedVerify(TableRow):
    """X8 as published: milliseconds per pass over ``positions`` positions (one thread)."""

    positions: int
    ms: float


@dataclass(frozen=True)
class Article(TableRow):
    """Every published table, by the name of our table it stands beside."""

    b1: Baselines
    #: K1: the largest |cached - recomputed| logit difference
    k1_max_diff: float
    q3: PublishedStorage
    q4: EQ.BitsTable
    q6: dict[Granularity, EQ.Reconstruction]
    q7: tuple[EQ.SensitivityRow, ...]
    q8: EQ.Compounding
    #: Q9: the 1-based position of the first differing character
    q9_position: int
    q10: EQ.Outliers
    s2: tuple[XS.FirstTokenRow, ...]
    s4: tuple[PublishedAcceptance, ...]
    s5: tuple[XU.CostRow, ...]
    #: S6: the measured speedups, median with min and max over runs
    s6: tuple[XU.SpeedupRow, ...]
    #: S7: the formula's prediction beside the measured median
    s7: tuple[XU.SpeedupRow, ...]
    p1: tuple[EP.LossRow, ...]
    p2: tuple[EP.RandomRow, ...]
    p4: tuple[EP.MatchingRow, ...]
    #: P5: COO and bitmask per sparsity, dense float32 in each row
    p5: tuple[EP.BytesRow, ...]
    #: P5: bytes per element of int8 dense storage
    p5_int8: float
    p6: tuple[EP.CompressionRow, ...]
    #: P7: median ratio and quartiles (the article's dense matmul took 73.4 us)
    p7: tuple[DenseZeros, ...]
    x1: tuple[PublishedTruncation, ...]
    x8: tuple[PublishedVerify, ...]


def _s6(draft: str, k: int, median: float, low: float, high: float) -> XU.SpeedupRow:
    return XU.SpeedupRow(draft, k, NAN, median, low, high, NAN, NAN, NAN, NAN)


def _s7(draft: str, k: int, predicted: float, measured: float) -> XU.SpeedupRow:
    return XU.SpeedupRow(draft, k, NAN, measured, NAN, NAN, predicted, NAN, NAN, NAN)


_BIGRAM, _INT8, _INT4 = DraftKind.BIGRAM.value, DraftKind.INT8.value, DraftKind.INT4.value

#: The article's tables.
ARTICLE = Article(
    b1=Baselines(uniform=4.6052, bigram=2.6501, reference=2.0272),
    k1_max_diff=9.06e-06,
    q3=PublishedStorage(
        weights=631_808,
        weights_fp32_mb=2.41,
        weights_int8_mb=0.60,
        parameters=637_156,
        parameters_fp32_mb=2.43,
        parameters_int8_mb=0.62,
        cut=0.744,
    ),
    q4=EQ.BitsTable(
        2.0272,
        (
            EQ.BitsRow(8, 2.0290, 2.0280),
            EQ.BitsRow(6, 2.0599, 2.0387),
            EQ.BitsRow(4, 2.6380, 2.3571),
            EQ.BitsRow(3, 4.3960, 3.4381),
            EQ.BitsRow(2, 5.7894, 6.3112),
        ),
    ),
    q6={
        Granularity.PER_TENSOR: EQ.Reconstruction(zero_fraction=0.952, mean_abs_error=0.0519),
        Granularity.PER_CHANNEL: EQ.Reconstruction(zero_fraction=0.781, mean_abs_error=0.0419),
    },
    q7=tuple(
        EQ.SensitivityRow(name, NAN, penalty)
        for name, penalty in (
            ("tok.weight", 0.0976),
            ("pos.weight", 0.0618),
            ("blocks.2.f1.weight", 0.0184),
            ("blocks.0.f2.weight", 0.0174),
            ("blocks.2.qkv.weight", 0.0132),
            ("blocks.2.f2.weight", -0.0020),
        )
    ),
    q8=EQ.Compounding(sum_of_penalties=0.2830, all_at_once=0.3299, excess=NAN),
    q9_position=22,
    q10=EQ.Outliers(
        EQ.WeightRanges({}, worst=2.49, median=1.51),
        {
            "block0_ffn_input": EQ.ActivationPeak(1.50, 5.24),
            "block2_ffn_input": EQ.ActivationPeak(1.54, 6.24),
            "final_residual": EQ.ActivationPeak(1.64, 6.67),
        },
        int8_granularity_gap=0.0010,
    ),
    s2=(
        XS.FirstTokenRow(_BIGRAM, 0.0158, NAN, 0.0134, NAN, NAN, NAN),
        XS.FirstTokenRow(_INT4, 0.0095, NAN, 0.0134, NAN, NAN, NAN),
    ),
    s4=(
        PublishedAcceptance(_BIGRAM, 1, 0.290, 1.29, 155),
        PublishedAcceptance(_BIGRAM, 8, 0.059, 1.47, 136),
        PublishedAcceptance(_INT8, 1, 0.896, 1.89, 106),
        PublishedAcceptance(_INT8, 8, 0.610, 5.88, 34),
        PublishedAcceptance(_INT4, 1, 0.653, 1.65, 121),
        PublishedAcceptance(_INT4, 8, 0.351, 3.77, 53),
    ),
    s5=tuple(
        XU.CostRow(d, c, NAN, NAN, 1235.0, us)
        for d, us, c in ((_BIGRAM, 5.0, 0.004), (_INT8, 1307.0, 1.059), (_INT4, 1276.0, 1.034))
    ),
    s6=(
        _s6(_BIGRAM, 4, 1.30, 1.19, 1.47),
        _s6(_BIGRAM, 8, 1.26, 1.08, 1.36),
        _s6(_INT8, 4, 0.80, 0.79, 0.91),
        _s6(_INT8, 8, 0.56, 0.50, 0.66),
        _s6(_INT4, 8, 0.41, 0.38, 0.47),
    ),
    s7=(
        _s7(_BIGRAM, 2, 1.36, 1.10),
        _s7(_BIGRAM, 4, 1.37, 1.30),
        _s7(_INT8, 2, 0.87, 0.87),
        _s7(_INT8, 4, 0.83, 0.80),
        _s7(_INT8, 8, 0.62, 0.56),
        _s7(_INT4, 2, 0.67, 0.67),
        _s7(_INT4, 4, 0.49, 0.46),
        _s7(_INT4, 8, 0.41, 0.41),
    ),
    p1=tuple(
        EP.LossRow(s, g, layer, r)
        for s, g, layer, r in (
            (0.1, 2.0358, 2.0397, 3.7873),
            (0.3, 2.2097, 2.3893, 4.4976),
            (0.5, 3.1009, 3.3498, 4.4543),
            (0.7, 4.0908, 4.4716, 4.5714),
            (0.9, 5.0523, 5.0089, 4.6292),
        )
    ),
    p2=tuple(
        EP.RandomRow(s, mean, NAN, NAN, NAN)
        for s, mean in ((0.01, 2.2862), (0.02, 2.4815), (0.05, 3.1419), (0.10, 3.7873), (0.20, 4.2955))
    ),
    p4=(EP.MatchingRow(8, NAN, 0.018), EP.MatchingRow(6, NAN, 0.103), EP.MatchingRow(4, NAN, 0.355)),
    p5=tuple(
        EP.BytesRow(s, 4.00, coo, bitmask, NAN)
        for s, coo, bitmask in ((0.5, 4.00, 2.12), (0.75, 2.00, 1.12), (0.9, 0.80, 0.52))
    ),
    p5_int8=1.00,
    p6=(
        EP.CompressionRow("int8", 4.00, 2.0280),
        EP.CompressionRow("75% sparse (bitmask)", 3.56, 4.3935),
        EP.CompressionRow("50% sparse (bitmask)", 1.88, 3.1009),
    ),
    p7=tuple(
        DenseZeros(s, median, (NAN, NAN), q1, q3)
        for s, median, q1, q3 in (
            (0.5, 1.010, 0.957, 1.105),
            (0.9, 1.013, 0.924, 1.147),
            (0.99, 1.005, 0.850, 1.142),
        )
    ),
    x1=(PublishedTruncation(_INT8, 0.896, 0.629, 0.610), PublishedTruncation(_BIGRAM, 0.290, 0.051, 0.059)),
    x8=(
        PublishedVerify(1, 1.09),
        PublishedVerify(2, 1.41),
        PublishedVerify(5, 1.63),
        PublishedVerify(9, 1.83),
    ),
)
