"""Argument checks that every public function calls (hypothesis's
``internal/validation.py`` pattern): one wording for one kind of mistake.

Each check returns the value it accepted (so ``n = check_int("n", n, least=1)``
reads as a declaration) and raises :class:`ValueError` naming the argument,
the allowed range and the value it got, e.g.
``ValueError: n must be an int >= 1, got 0``. ``bool`` is never a number here
(``True`` is an ``int`` to Python, and always a mistake as a count or a
bound); numpy and torch scalars count where their Python kind would.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: The largest seed ``torch.Generator.manual_seed`` takes (an unsigned 64-bit
#: integer; 2**64 raises "Overflow when unpacking long long").
MAX_SEED = 2**64 - 1


def is_int(value: object) -> bool:
    """True for integers (Python, numpy, torch) that are not ``bool``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    """True for real numbers (ints and floats of any library) that are not ``bool``."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    return f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"


def check_int(
    name: str, value: object, *, least: int | None = None, most: int | None = None, why: str = ""
) -> int:
    """``value`` as an int in ``[least, most]`` (either end optional).

    The message says ``an int >= least`` (or ``<= most``, or ``in [least,
    most]`` when both are given), followed by ``why`` (e.g. ``" for
    confidence 0.99"``) where the bound needs a reason.
    """
    if not is_int(value) or (least is not None and value < least) or (most is not None and value > most):
        if least is not None and most is not None:
            allowed = (
                f"an int in [{least:,}, {most:,}]"
                if max(abs(least), abs(most)) >= 10_000
                else f"an int in [{least}, {most}]"
            )
        elif least is not None:
            allowed = f"an int >= {least}"
        elif most is not None:
            allowed = f"an int <= {most:,}"
        else:
            allowed = "an int"
        raise ValueError(f"{name} must be {allowed}{why}, got {value!r}")
    return int(value)


def check_seed(value: object, name: str = "seed") -> int:
    """A seed: an int in ``[0, 2**64)`` (what ``torch.Generator.manual_seed`` takes)."""
    if not is_int(value) or not 0 <= value <= MAX_SEED:
        raise ValueError(f"{name} must be an int in [0, 2**64), got {value!r}")
    return int(value)


def check_real(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    what: str = "a number",
) -> float:
    """``value`` as a finite float in the interval from ``low`` to ``high``.

    Open ends with ``low_open`` / ``high_open``; with one end the message says
    ``a finite number > low`` (or ``>=``, ``<``, ``<=``); ``what`` names the
    quantity (``"a sparsity"``, ``"a finite loss"``).
    """
    ok = is_real(value) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        if low is not None and high is not None:
            allowed = f"{what} in {_interval(low, high, low_open, high_open)}"
        elif low is not None:
            allowed = f"a finite {what.removeprefix('a ')} {'>' if low_open else '>='} {low}"
        elif high is not None:
            allowed = f"a finite {what.removeprefix('a ')} {'<' if high_open else '<='} {high}"
        else:
            allowed = what if "finite" in what else f"a finite {what.removeprefix('a ')}"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return float(value)


def check_probability(name: str, value: object) -> float:
    """A significance level or similar: a number strictly inside ``(0, 1)``."""
    return check_real(name, value, low=0, high=1, low_open=True, high_open=True)


def check_type(name: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """``value`` when it is an instance of ``kind``; the message names
    ``what`` is allowed (``"an exception (a BaseException)"``) and the type
    it got."""
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def check_callable(name: str, value: Any) -> Any:
    """A callable (a function, a bound method, an object with ``__call__``)."""
    if not callable(value):
        raise ValueError(f"{name} must be callable, got {type(value).__name__}")
    return value


def check_weight(name: str, value: object) -> torch.Tensor:
    """A weight a quantizer takes: a finite, non-empty 2-D float32 tensor.
    (torch is imported here, not with the module: the argument checks load
    before a command sets torch's thread policy.)"""
    import torch

    if not isinstance(value, torch.Tensor):
        got = type(value).__name__
    elif value.dtype != torch.float32 or value.dim() != 2 or value.numel() == 0:
        got = f"{value.dtype} {tuple(value.shape)}"
    elif not bool(torch.isfinite(value).all()):
        got = f"{int((~torch.isfinite(value)).sum())} NaN or inf values"
    else:
        return value
    raise ValueError(f"{name} must be a finite, non-empty 2-D float32 tensor, got {got}")


def check_tokens(name: str, value: object, vocab_size: int | None = None, *, least: int = 2) -> torch.Tensor:
    """A token sequence: a 1-D integer tensor (not bool) of at least
    ``least`` indices, each in ``[0, vocab_size)`` when ``vocab_size`` is
    given, returned as int64 (the tensor itself when it is int64 already).
    The range message names the smallest and largest index it got, e.g.
    ``tokens must lie in [0, 100) (the vocabulary), got indices from 1 to 150``."""
    import torch

    if vocab_size is not None:
        check_int("vocab_size", vocab_size, least=1)
    if (
        not isinstance(value, torch.Tensor)
        or value.dim() != 1
        or value.numel() < least
        or value.is_floating_point()
        or value.is_complex()
        or value.dtype == torch.bool
    ):
        is_tensor = isinstance(value, torch.Tensor)
        got = f"{value.dtype} {tuple(value.shape)}" if is_tensor else type(value).__name__
        raise ValueError(f"{name} must be a 1-D integer tensor of at least {least} tokens, got {got}")
    if vocab_size is not None and value.numel():
        low, high = int(value.min()), int(value.max())
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"{name} must lie in [0, {vocab_size}) (the vocabulary), got indices from {low} to {high}"
            )
    return value.long()
