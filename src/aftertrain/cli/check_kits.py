"""``aftertrain check quantizer`` and ``aftertrain check pruner``: the
quantizer and pruner kits from the command line, beside ``check rule``
(:mod:`aftertrain.cli.check`, which registers them). ``--scheme`` and
``--pattern`` are parsed here without torch, so a usage error answers
before torch loads.

``--scheme`` reads as a :class:`~aftertrain.checks.schemes.QuantScheme`
prints: ``"int4 SYMMETRIC_FULL PerGroup(32)"``, ``"int8 SYMMETRIC PerAxis(0)"``,
``"int4 ASYMMETRIC_FLOAT_SHIFT PerGroup(None)"`` (the library picks the group
size), ``"NF4 PerGroup(64)"`` (a codebook), then optional ``floor=X`` (a float,
or ``eps`` for float32's machine epsilon, torchao's int8 floor),
``input=float16``, ``scale=float16`` and ``output=float16`` (or ``bfloat16``). ``--pattern``: ``N:M``
(e.g. ``2:4``), ``global``, ``per-layer``, ``rows`` or ``columns`` with an
optional norm (``rows:1``, ``columns:inf``; default 2), then the count's
convention if it is not the default: ``rounding=floor`` (``half_even``,
``half_up``, ``floor``, ``ceil``, ``kept_truncated``) and
``keep_at_least=1``, as the Python keywords: torch-pruning's rows are
``'rows:2 rounding=kept_truncated keep_at_least=1'``.
"""

from __future__ import annotations

import argparse
import math
import re
import sys

from aftertrain.cli.check_common import add_check, add_common, run_reports

#: --scheme's mapping names (aftertrain.checks.schemes.Mapping), repeated so
#: that a usage error needs no torch (tests/cli/test_check_kits.py keeps them equal).
MAPPINGS = (
    "SYMMETRIC",
    "SYMMETRIC_FULL",
    "SYMMETRIC_NO_CLIPPING_ERR",
    "ASYMMETRIC",
    "ASYMMETRIC_FLOAT_SHIFT",
    "SYMMETRIC_SIGNED_SCALE",
    "ASYMMETRIC_FREE_ZERO",
)
#: --scheme's codebook names (aftertrain.checks.codebooks.CODEBOOKS), repeated likewise.
CODEBOOK_NAMES = ("NF4", "FP4")
#: --scheme's precision names (aftertrain.checks.precision.LOW_PRECISION), repeated likewise.
PRECISIONS = ("float16", "bfloat16")
_GRANULARITY = re.compile(
    r"^(PerTensor)\(\)$|^(PerAxis)\((-1|0|1)\)$|^(PerGroup)\(([0-9]+|None)\)$|^(PerBlock)\(([0-9]+)\)$"
)
SCHEME_FORM = (
    "'int<bits> <MAPPING> <PerTensor()|PerAxis(0)|PerGroup(g)|PerGroup(None)> [floor=X] "
    "[input=float16|bfloat16] [scale=...] [output=...]' or 'NF4|FP4 <granularity> [input=...] [scale=...] "
    "[output=...]'"
)


def parse_scheme(text: str) -> tuple:
    """``(head, (kind, arg), options)`` of a ``--scheme`` value, as
    ``str(scheme)`` prints it: ``head`` is ``(bits, mapping name)`` or a
    codebook name, ``options`` a tuple of ``(key, value)``: ``floor`` (a
    float, or ``"eps"`` for float32's machine epsilon, torchao's int8
    floor), ``input``, ``scale`` and ``output`` (a precision name); an
    argparse.ArgumentTypeError naming what is allowed."""
    words = text.replace(",", " ").split()
    bad = argparse.ArgumentTypeError
    codebook = bool(words) and words[0].upper() in CODEBOOK_NAMES
    n_head = 1 if codebook else 2
    if len(words) < n_head + 1:
        raise bad(f"expected {SCHEME_FORM}, got {text!r}")
    if codebook:
        head = words[0].upper()
    else:
        m = re.fullmatch(r"int([0-9]+)", words[0])
        if not m or not 2 <= int(m.group(1)) <= 8:
            raise bad(f"bits must be int2 to int8 (or a codebook, NF4 or FP4), got {words[0]!r} in {text!r}")
        mapping = words[1].upper().replace("-", "_")
        if mapping not in MAPPINGS:
            raise bad(f"mapping must be one of {', '.join(MAPPINGS)}, got {words[1]!r}")
        head = (int(m.group(1)), mapping)
    granularity = _parse_granularity(words[n_head])
    if codebook and granularity == ("PerGroup", None):
        raise bad(f"a codebook's blocks must have a size, got {words[n_head]!r}")
    if not codebook and granularity[0] == "PerBlock":
        raise bad(f"PerBlock (blocks of the flattened weight) is a codebook's granularity, got {text!r}")
    return head, granularity, _parse_options(words[n_head + 1 :], codebook)


def _parse_granularity(word: str) -> tuple:
    g = _GRANULARITY.match(word)
    if not g:
        raise argparse.ArgumentTypeError(
            "granularity must be PerTensor(), PerAxis(0|1|-1), PerGroup(<size>), PerGroup(None) or "
            f"(a codebook's) PerBlock(<size>), got {word!r}"
        )
    if g.group(1):
        return ("PerTensor", None)
    if g.group(2):
        return ("PerAxis", int(g.group(3)))
    if g.group(6):
        kind, size = "PerBlock", int(g.group(7))
    else:
        kind, size = "PerGroup", None if g.group(5) == "None" else int(g.group(5))
    if size == 0:
        raise argparse.ArgumentTypeError(f"a group size must be at least 1, got {word!r}")
    return (kind, size)


def _parse_options(words: list[str], codebook: bool) -> tuple:
    """The ``key=value`` words after the granularity, each key at most once."""
    options: dict = {}
    keys = ("input", "scale", "output") if codebook else ("floor", "input", "scale", "output")
    for word in words:
        key, _, value = word.partition("=")
        if key not in keys or key in options:
            raise argparse.ArgumentTypeError(
                f"after the granularity: {', '.join(k + '=' for k in keys)} each at most once, got {word!r}"
            )
        if key == "floor":
            try:
                options[key] = "eps" if value == "eps" else float(value)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"the floor must be floor=<float> or floor=eps, got {word!r}"
                ) from None
        elif value in PRECISIONS:
            options[key] = value
        else:
            raise argparse.ArgumentTypeError(f"{key}= must be float16 or bfloat16, got {word!r}")
    return tuple(options.items())


def build_scheme(parsed: tuple):
    """The QuantScheme or CodebookScheme of :func:`parse_scheme`'s tuple (imports torch)."""
    import torch

    from aftertrain.checks import codebooks as C
    from aftertrain.checks import schemes as S
    from aftertrain.checks.precision import LOW_PRECISION

    head, (kind, arg), options = parsed
    granularity = {
        "PerTensor": lambda: S.PerTensor(),
        "PerAxis": lambda: S.PerAxis(arg),
        "PerGroup": lambda: S.PerGroup(arg),
        "PerBlock": lambda: S.PerBlock(arg),
    }[kind]()
    extra = {f"{key}_dtype": LOW_PRECISION[v] for key, v in options if key != "floor"}
    for key, v in options:
        if key == "floor":
            extra["scale_floor"] = torch.finfo(torch.float32).eps if v == "eps" else v
    if isinstance(head, str):
        return C.CodebookScheme(C.CODEBOOKS[head], granularity, **extra)
    bits, mapping = head
    return S.QuantScheme(bits, S.Mapping[mapping], granularity, **extra)


def battery_scheme(parsed: tuple):
    """The scheme of :func:`parse_scheme`'s tuple, one the command line
    can judge: a valid floor, and a group size the default battery holds
    (the command line has no cases of the user's own); ValueError naming
    the ``--scheme`` value and what is allowed (imports torch)."""
    from aftertrain.checks.quant_battery import MAX_BATTERY_GROUP

    head, (kind, arg), options = parsed
    text = f"{head} " if isinstance(head, str) else f"int{head[0]} {head[1]} "
    text += f"{kind}({'' if arg is None and kind == 'PerTensor' else arg})"
    text += "".join(f" {key}={value}" for key, value in options)
    try:
        scheme = build_scheme(parsed)
    except ValueError as err:
        raise ValueError(f"--scheme '{text}': {err}") from None
    if kind in ("PerGroup", "PerBlock") and arg is not None and arg > MAX_BATTERY_GROUP:
        raise ValueError(
            f"--scheme '{text}': a group size must be at most {MAX_BATTERY_GROUP:,} "
            f"(the largest the default battery is built for), got {arg:,}"
        )
    return scheme


#: --pattern's rounding names (aftertrain.checks.patterns.Rounding), repeated
#: so that a usage error needs no torch (tests/cli/test_check_kits.py keeps them equal).
ROUNDINGS = ("HALF_EVEN", "HALF_UP", "FLOOR", "CEIL", "KEPT_TRUNCATED")
PATTERN_FORM = (
    "N:M (e.g. 2:4), or global, per-layer, rows[:NORM] or columns[:NORM] (NORM 1, 2 or inf) "
    "followed by optional rounding=ROUNDING and keep_at_least=K"
)


def parse_pattern(text: str) -> tuple:
    """``("nm", n, m)``, ``("unstructured", scope, rounding, keep_at_least)``
    or ``("structured", dim, norm, rounding, keep_at_least)`` of a
    ``--pattern`` value: ``"rows:2 rounding=kept_truncated keep_at_least=1"``
    (``rounding`` a :data:`ROUNDINGS` name, any case, ``-`` for ``_``;
    ``keep_at_least`` ASCII digits; each at most once; default ``HALF_EVEN``
    and 0); argparse.ArgumentTypeError naming what is allowed."""
    bad = argparse.ArgumentTypeError
    first, *words = text.strip().lower().split() or [""]
    if re.fullmatch(r"[0-9]+:[0-9]+", first):
        n, m = (int(x) for x in first.split(":"))
        if not 1 <= n < m:
            raise bad(f"N:M needs 1 <= N < M, got {text!r}")
        if words:
            raise bad(f"N:M keeps exactly N of every M, no count to round: got {text!r}")
        return ("nm", n, m)
    s = re.fullmatch(r"(rows|columns)(?::(1|2|inf))?", first)
    if first not in ("global", "per-layer") and not s:
        raise bad(f"expected {PATTERN_FORM}, got {text!r}")
    given: dict = {}
    for word in words:
        key, _, value = word.partition("=")
        if key in given:
            raise bad(f"after the pattern: {key}= at most once, got it twice in {text!r}")
        if key == "rounding" and value.upper().replace("-", "_") in ROUNDINGS:
            given[key] = value.upper().replace("-", "_")
        elif key == "keep_at_least" and re.fullmatch(r"[0-9]+", value):
            given[key] = int(value)
        else:
            raise bad(
                f"after the pattern: rounding=<{'|'.join(r.lower() for r in ROUNDINGS)}> or "
                f"keep_at_least=<int >= 0>, got {word!r} in {text!r}"
            )
    tail = (given.get("rounding", "HALF_EVEN"), given.get("keep_at_least", 0))
    if not s:
        return ("unstructured", first, *tail)
    norm = math.inf if s.group(2) == "inf" else int(s.group(2) or 2)
    return ("structured", 0 if s.group(1) == "rows" else 1, norm, *tail)


def build_pattern(parsed: tuple):
    """The Pattern of :func:`parse_pattern`'s tuple (imports torch)."""
    from aftertrain.checks import patterns as P

    if parsed[0] == "nm":
        return P.NM(parsed[1], parsed[2])
    *head, rounding, keep = parsed
    counting = {"rounding": P.Rounding[rounding], "keep_at_least": keep}
    if head[0] == "unstructured":
        return P.Unstructured(P.Scope.GLOBAL if head[1] == "global" else P.Scope.PER_LAYER, **counting)
    return P.Structured(head[1], head[2], **counting)


def _sparsities(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(0 <= v <= 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated sparsities in [0, 1] (e.g. 0.5,0.9), got {text!r}"
        )
    return values


def add_parsers(sub) -> None:
    """Add ``quantizer`` and ``pruner`` to ``check``'s subparsers."""
    q = add_check(
        sub,
        "quantizer",
        help="a weight quantizer, against the scheme it claims",
        description="Judge quantize(w, scheme) (docs/checks.md, 'Quantizers') under each "
        "--scheme. Exit 0 passed (edge findings printed), 1 failed (with --strict "
        "also on an edge finding), 2 usage error.",
        target="the quantizer, quantize(w, scheme)",
    )
    q.add_argument(
        "--scheme",
        type=parse_scheme,
        action="append",
        required=True,
        metavar="'int4 SYMMETRIC_FULL PerGroup(32)'",
        help="a scheme the quantizer claims (repeat for several): bits, mapping, "
        "granularity (or NF4|FP4 and granularity), optional floor=X|eps, "
        "input=float16|bfloat16, scale=float16|bfloat16, output=float16|bfloat16",
    )
    q.add_argument(
        "--strict", action="store_true", help="edge findings (float32's max, subnormal scales) fail too"
    )
    add_common(q, cmd_quantizer, seed_help="seed of the default battery (default 0)")

    p = add_check(
        sub,
        "pruner",
        help="a pruner, against the sparsity pattern it claims",
        description="Judge prune(weights, sparsity) -> masks (docs/checks.md, 'Pruners') "
        "against --pattern. Exit 0 passed, 1 failed, 2 usage error.",
        target="the pruner, prune(weights, sparsity) -> masks",
    )
    p.add_argument(
        "--pattern",
        type=parse_pattern,
        required=True,
        metavar="PATTERN",
        help="N:M (e.g. 2:4), global, per-layer, rows[:NORM] or columns[:NORM], then optional "
        "rounding=half_even|half_up|floor|ceil|kept_truncated and keep_at_least=K",
    )
    p.add_argument(
        "--random",
        action="store_true",
        help="the pruner is not a magnitude pruner: check counts and structure only",
    )
    p.add_argument(
        "--sparsities",
        type=_sparsities,
        default=None,
        metavar="S1,S2,...",
        help="sparsities to run (default the kit's nine; not with N:M)",
    )
    add_common(p, cmd_pruner, seed_help="seed of the default battery (default 0)")


def cmd_quantizer(args: argparse.Namespace) -> int:
    """``aftertrain check quantizer``: run :func:`aftertrain.checks.quant.check_quantizer` on the
    function ``args.target`` names, at each ``--scheme``; print the report (or its JSON).
    Returns the exit status: 0 passed, 1 failed, 2 usage error."""

    try:  # before the user's module loads and the kit runs
        schemes = [battery_scheme(s) for s in args.scheme]
    except ValueError as err:
        print(f"aftertrain check quantizer: error: {err}", file=sys.stderr)
        return 2

    def reports_of(quantize, progress):
        from aftertrain.checks.quant import check_quantizer

        return [check_quantizer(quantize, schemes=schemes, seed=args.seed, strict=args.strict)]

    return run_reports(args, "aftertrain check quantizer", "w_hat", reports_of)


def cmd_pruner(args: argparse.Namespace) -> int:
    """``aftertrain check pruner``: run :func:`aftertrain.checks.prune.check_pruner` on the
    function ``args.target`` names, with ``--pattern``, ``--sparsities``, ``--seed`` and
    magnitude (or ``--random``) scoring; print the report (or its JSON). Returns the exit
    status: 0 passed, 1 failed, 2 usage error (``--sparsities`` with an N:M pattern: one line
    on standard error)."""
    if args.sparsities is not None and args.pattern[0] == "nm":
        print(
            "aftertrain check pruner: error: --sparsities does not apply to an N:M pattern "
            "(its sparsity is 1 - N/M)",
            file=sys.stderr,
        )
        return 2
    from aftertrain.checks.prune_battery import MAX_BATTERY_BLOCK

    if args.pattern[0] == "nm" and args.pattern[2] > MAX_BATTERY_BLOCK:
        print(
            f"aftertrain check pruner: error: --pattern {args.pattern[1]}:{args.pattern[2]}: M must be "
            f"at most {MAX_BATTERY_BLOCK:,} (the longest block the default battery is built for)",
            file=sys.stderr,
        )
        return 2

    def reports_of(prune, progress):
        from aftertrain.checks.prune import check_pruner

        return [
            check_pruner(
                prune,
                pattern=build_pattern(args.pattern),
                magnitude=not args.random,
                sparsities=args.sparsities,
                seed=args.seed,
            )
        ]

    return run_reports(args, "aftertrain check pruner", "masks", reports_of)
