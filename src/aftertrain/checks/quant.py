"""Check a weight quantizer against the scheme it claims (Q1 and the ecosystem's schemes).

The protocol. ``quantize(w, scheme)`` takes ``w``, a finite float32 tensor of
shape ``(rows, cols)``, and a :class:`~aftertrain.checks.schemes.QuantScheme`
(bits, mapping, granularity, scale floor: formulas in
:mod:`aftertrain.checks.schemes`), and returns the dequantized ``w_hat``
(floating point, ``w``'s shape) or ``(w_hat, codes, scale, zero_point)``:
integer-valued ``codes`` of ``w``'s shape, and ``scale`` and ``zero_point``
(None for 0; ASYMMETRIC_FLOAT_SHIFT: the shift, ``w_hat = codes * scale -
shift``, quanto's form) either with one entry per group (numbered row-major, as
:func:`~aftertrain.checks.schemes.group_index`) or broadcastable to ``w``.

The article's protocol still works: without ``schemes``,
``check_quantizer(quantize)`` calls ``quantize(w, bits, granularity)`` with
an :class:`aftertrain.quant.Granularity` (``PER_TENSOR`` or ``PER_CHANNEL``,
one scale per row) returning ``w_hat`` or ``(w_hat, codes, scales)``, and
judges it as SYMMETRIC ``PerTensor()`` / ``PerAxis(0)``.

The guarantees, per case of the battery and scheme, with the reference scale
``s`` and zero point ``z`` of each group in float64, ``u = 2**-24`` and ``R``
the group's ``max|w|`` (symmetric) or ``4 max|w|`` (asymmetric: the range
``hi - lo`` and the shift each reach ``2 max|w|``):

* ``output``: no exception, shape kept, every value finite (a group size
  that does not divide the row, undefined for the scheme, may be refused by
  :mod:`aftertrain.checks.refusals`' rule: a ``raise`` or ``assert`` of the
  judged code with a message is a passed ``refused`` row, a crash in a
  tensor operation a failure; a constant row is an ordinary case);
* ``group size`` (``PerGroup(None)``, the library picks): the group size
  the output shows (the returned scale's entries per row, else the smallest
  dividing the row that ``w_hat`` fits), 1 for a longer row failing;
* ``round-trip``: ``|w - w_hat| <= s/2 + 4 u R + 2**-149`` (for SYMMETRIC
  exactly the article's ``s/2 (1 + 8 qmax u) + 2**-149``, derivation in
  :mod:`aftertrain.core.tolerances`); a group whose scale is the declared floor is
  judged at the floor and its cost (the error over the unfloored half step)
  is the row's value (``floor``);
* ``grid``: ``w_hat / s + z`` is an integer in the mapping's code range up
  to ``4 u R / s + 2**-149 / s``;
* ``codes``: returned codes are integers in the code range (asymmetric: the
  signed ``[qmin, qmax]`` or the unsigned ``[0, 2**bits - 1]``) and
  ``w_hat == (codes - z) * scale`` (``codes * scale - shift``); ``scale``: a returned scale equals its
  own group's reference scale within ``4 u``; ``zero point``: ASYMMETRIC's
  is an integer;
* ``extremes``: the smallest and largest ``w`` of each group map to the
  nearest code in range of ``w / s + z`` (either neighbour at a tie);
* ``zero``: where the mapping keeps zero, 0 stays 0 and no sign flips;
* ``odd``: SYMMETRIC only, ``quantize(-w) == -quantize(w)`` exactly;
* ``idempotent``: where the mapping says so, quantizing ``w_hat`` keeps its codes;
* ``edge``: in a group whose scale would be subnormal (and no floor above
  that is declared), ``|w - w_hat| <= max|w|`` of the group (symmetric: 0
  is allowed, garbage is not) or ``2 max|w|`` (asymmetric: any value of the
  group's range).

An element held at +-float32 max because its code's value lies past it
(SYMMETRIC_FULL's ``qmin * s`` at ``w = -3.4e38``) is exempt from the grid.

The declared conventions (:class:`~aftertrain.checks.schemes.QuantScheme`'s
``input_dtype`` and ``scale_dtype``, the mappings SYMMETRIC_SIGNED_SCALE and
ASYMMETRIC_FREE_ZERO) and the codebook schemes
(:mod:`aftertrain.checks.codebooks`, NF4 and FP4) are judged by the same
rows, widened or replaced as their docstrings say.

Each failed row is classed (:mod:`aftertrain.checks.report`): an edge
finding when it fails only on groups at float32's edge (``max|w|`` above
float32's max / 4, or a scale that would be subnormal; a value or scale past
a declared low precision's largest; an exception on a case holding such a
group: a constant group is no edge), a mismatch when the case's output passes every
row judging it alone under another scheme (the line says "looks like
SYMMETRIC_FULL (declare ...)"), else a failure. Edge findings fail the
report only with ``strict``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from collections.abc import Mapping as MappingABC

import torch

from aftertrain.checks.codebooks import FP4, NF4, Codebook, CodebookScheme, quantize_codebook
from aftertrain.checks.quant_battery import battery, group_battery, scheme_battery
from aftertrain.checks.quant_guarantees import check_case
from aftertrain.checks.quant_reference import FLOAT32_EPS
from aftertrain.checks.report import EDGE, FAILURE, MISMATCH, Report, Row
from aftertrain.checks.schemes import (
    Mapping,
    PerAxis,
    PerBlock,
    PerGroup,
    PerTensor,
    QuantScheme,
    quantize_scheme,
)
from aftertrain.core.validation import check_seed, check_weight
from aftertrain.quant.primitives import Granularity, check_bits, fake_quantize, quantize_codes

#: The kit's one import place: ``from aftertrain.checks.quant import
#: QuantScheme, Mapping, PerGroup, check_quantizer, assert_quantizer``.
__all__ = [
    "EDGE",
    "FAILURE",
    "FLOAT32_EPS",
    "FP4",
    "MISMATCH",
    "NF4",
    "Codebook",
    "PerBlock",
    "CodebookScheme",
    "Mapping",
    "PerAxis",
    "PerGroup",
    "PerTensor",
    "QuantScheme",
    "Report",
    "Row",
    "assert_quantizer",
    "battery",
    "check_quantizer",
    "group_battery",
    "quantize_codebook",
    "quantize_scheme",
    "reference_quantizer",
    "scheme_battery",
]

QuantizerOutput = torch.Tensor | tuple[torch.Tensor, ...]
Quantizer = Callable[[torch.Tensor, QuantScheme], QuantizerOutput]
ArticleQuantizer = Callable[[torch.Tensor, int, Granularity], QuantizerOutput]
DEFAULT_BITS = (2, 3, 4, 5, 6, 7, 8)
#: The article's granularities as schemes' granularities.
ARTICLE_GRANULARITY = {Granularity.PER_TENSOR: PerTensor(), Granularity.PER_CHANNEL: PerAxis(0)}


def reference_quantizer(w: torch.Tensor, bits: int, granularity: Granularity) -> QuantizerOutput:
    """aftertrain's own quantizer in the article's protocol: ``(w_hat, codes, scales)``."""
    codes, s = quantize_codes(w, bits, granularity)
    return fake_quantize(w, bits, granularity), codes, s


def check_quantizer(
    quantize: Quantizer | ArticleQuantizer,
    *,
    schemes: Iterable[QuantScheme] | None = None,
    bits: Iterable[int] | None = None,
    granularities: Iterable[Granularity] | None = None,
    cases: MappingABC[str, torch.Tensor] | None = None,
    seed: int = 0,
    name: str | None = None,
    strict: bool = False,
) -> Report:
    """Run the battery (or ``cases``) through ``quantize`` under every scheme
    and check every guarantee of the module docstring; a :class:`Report`.

    Every failed row is classed (:mod:`aftertrain.checks.report`): a failure,
    an edge finding (only on groups near float32's max or of subnormal
    scale: the report still passes unless ``strict``), or a mismatch (the
    output is another scheme's: the line names it).

    Args:
        quantize: ``quantize(w, scheme)`` with ``schemes``; without, the
            article's ``quantize(w, bits, granularity)``.
        schemes: the :class:`QuantScheme` values the quantizer claims (one
            scheme alone is a list of one).
        bits: article protocol only: widths in 2..8 (default all).
        granularities: article protocol only: :class:`Granularity` values
            (default both).
        cases: ``{name: finite 2-D float32 tensor}`` replacing the default
            battery (e.g. matrices drawn by hypothesis); the default's
            ``PerGroup`` cases are built for groups of at most
            :data:`~aftertrain.checks.quant_battery.MAX_BATTERY_GROUP`, a larger
            group needs ``cases``.
        seed: seed of the default battery.
        name: the subject named in the report (default ``quantize``'s name).
        strict: edge findings fail the report too.
    """
    schemes, quantize = _schemes(quantize, schemes, bits, granularities)
    check_seed(seed)
    if not isinstance(strict, bool):
        raise ValueError(f"strict must be a bool, got {strict!r}")
    if cases is not None:
        _check_cases(cases)
    # every scheme's cases before the first call: a battery too large is refused first
    batteries = [scheme_battery(s, seed) if cases is None else cases for s in schemes]
    report = Report(name or getattr(quantize, "__name__", repr(quantize)), strict=strict)
    for scheme, battery_ in zip(schemes, batteries, strict=True):
        for case, w in battery_.items():
            check_case(report, quantize, f"{case}, {scheme}", w, scheme)
    return report


def _schemes(quantize, schemes, bits, granularities) -> tuple[list[QuantScheme], Quantizer]:
    """The schemes to run and ``quantize`` in the scheme protocol (the
    article's protocol adapted when ``schemes`` is None), each validated."""
    if not callable(quantize):
        raise ValueError(f"quantize must be a callable (w, scheme) -> w_hat, got {quantize!r}")
    if schemes is None:
        schemes, quantize = _article_schemes(quantize, bits, granularities)
    elif bits is not None or granularities is not None:
        raise ValueError("pass either schemes or the article's bits and granularities, not both")
    given = schemes
    try:
        schemes = [schemes] if isinstance(schemes, QuantScheme | CodebookScheme) else list(schemes)
    except TypeError:
        schemes = []
    if not schemes or not all(isinstance(s, QuantScheme | CodebookScheme) for s in schemes):
        raise ValueError(
            f"schemes must be a QuantScheme or a non-empty list of them (QuantScheme or "
            f"CodebookScheme), got {given!r}"
        )
    return schemes, quantize


def _article_schemes(quantize: ArticleQuantizer, bits, granularities):
    """The article's protocol as SYMMETRIC schemes and a scheme-protocol adapter."""
    bits = list(DEFAULT_BITS if bits is None else bits)
    if not bits:
        raise ValueError("bits must hold at least one width in [2, 8]")
    for b in bits:
        check_bits(b)
    granularities = list(Granularity if granularities is None else granularities)
    if not granularities or not all(isinstance(g, Granularity) for g in granularities):
        raise ValueError(f"granularities must be a non-empty list of Granularity, got {granularities!r}")
    article = {ARTICLE_GRANULARITY[g]: g for g in granularities}

    @functools.wraps(quantize)
    def adapter(w: torch.Tensor, scheme: QuantScheme) -> QuantizerOutput:
        return quantize(w, scheme.bits, article[scheme.granularity])

    return [
        QuantScheme(b, Mapping.SYMMETRIC, ARTICLE_GRANULARITY[g]) for b in bits for g in granularities
    ], adapter


def _check_cases(cases) -> None:
    if not isinstance(cases, MappingABC) or not cases:
        raise ValueError("cases must be a non-empty dict of name -> tensor")
    for case, w in cases.items():
        check_weight(f"cases: {case!r}", w)


def assert_quantizer(quantize: Quantizer | ArticleQuantizer, **kwargs) -> None:
    """:func:`check_quantizer` with the same arguments (``schemes=...``,
    ``strict=...``), raising AssertionError with the report (its verdict
    first, one line per failure) when it fails; None when it passes (edge
    findings are then only in the report, ``strict=True`` fails on them)."""
    check_quantizer(quantize, **kwargs).raise_for_failures()
