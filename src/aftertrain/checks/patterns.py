"""Sparsity patterns as typed values: what a pruner claims to remove.

* :class:`Unstructured` (``Scope.GLOBAL`` or ``Scope.PER_LAYER``): single
  weights, the smallest ``|w|`` first, ``round(s * N)`` of them over all
  weights or ``round(s * n_i)`` per matrix (``torch.nn.utils.prune``'s
  ``global_unstructured`` / ``l1_unstructured``);
* :class:`Structured` (``dim``, ``norm``): whole slices along ``dim`` of
  every 2-D matrix (``dim=0``: rows, a Linear's output features), the
  smallest ``norm``-norm first, ``round(s * size(dim))`` per matrix
  (``ln_structured(module, "weight", s, n=norm, dim=dim)``);
* :class:`NM` (``n``, ``m``): in every ``m`` consecutive weights along the
  input dimension (the last axis) exactly ``n`` kept, the largest ``|w|``;
  2:4 is semi-structured sparsity (torchao's ``mask_creator``,
  ``WeightNormSparsifier(sparse_block_shape=(1, 4), zeros_per_block=2)``).
  Its sparsity is ``1 - n/m``, fixed.

The count of an unstructured or structured pattern is its ``rounding`` of
the float64 product ``s * n`` (:class:`Rounding`; by default Python's
``round``, half to even, as ``torch.nn.utils.prune``), at most
``n - keep_at_least`` of ``n``: torch-pruning's ``n - int(n * (1 - s))``
is ``rounding=Rounding.KEPT_TRUNCATED``, a pruner that never removes a
layer's last slice ``keep_at_least=1``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from aftertrain.core.validation import check_int


class Rounding(enum.Enum):
    """How a pruner turns the sparsity ``s`` of ``n`` weights or slices into
    the count it removes, on the float64 product, as the code reads.

    Note: at ``n = 10``, ``s = 0.9``: HALF_EVEN, HALF_UP, FLOOR and CEIL
    remove 9; KEPT_TRUNCATED keeps ``int(10 * (1 - 0.9)) =
    int(0.9999999999999998) = 0`` and removes all 10. At ``n = 5``,
    ``s = 0.5``: HALF_EVEN 2, HALF_UP 3, FLOOR 2, CEIL 3.
    """

    HALF_EVEN = "half_even"  #: ``round(s * n)``: Python's, torch.nn.utils.prune's
    HALF_UP = "half_up"  #: ``floor(s * n + 0.5)``
    FLOOR = "floor"  #: ``int(s * n)``, ``math.floor(s * n)``
    CEIL = "ceil"  #: ``math.ceil(s * n)``
    KEPT_TRUNCATED = "kept_truncated"  #: ``n - int(n * (1 - s))``: torch-pruning's

    def removed(self, s: float, n: int) -> int:
        """The count of ``n`` this rounding removes at sparsity ``s``."""
        if self is Rounding.HALF_EVEN:
            return round(s * n)
        if self is Rounding.HALF_UP:
            return math.floor(s * n + 0.5)
        if self is Rounding.FLOOR:
            return math.floor(s * n)
        if self is Rounding.CEIL:
            return math.ceil(s * n)
        return n - int(n * (1 - s))

    def formula(self, s: float, n: int) -> str:
        """The count as the code computes it: ``"round(0.9 * 10) = 9"``."""
        text = {
            Rounding.HALF_EVEN: f"round({s} * {n})",
            Rounding.HALF_UP: f"floor({s} * {n} + 0.5)",
            Rounding.FLOOR: f"floor({s} * {n})",
            Rounding.CEIL: f"ceil({s} * {n})",
            Rounding.KEPT_TRUNCATED: f"{n} - int({n} * (1 - {s}))",
        }[self]
        return f"{text} = {self.removed(s, n)}"


@dataclass(frozen=True)
class Counting:
    """The count rule of a pattern that counts (:class:`Unstructured`,
    :class:`Structured`): its :class:`Rounding` and the least it keeps."""

    rounding: Rounding = Rounding.HALF_EVEN
    keep_at_least: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.rounding, Rounding):
            raise ValueError(
                f"rounding must be a Rounding ({[r.name for r in Rounding]}), got {self.rounding!r}"
            )
        check_int("keep_at_least", self.keep_at_least, least=0)

    def removed(self, s: float, n: int) -> int:
        """``rounding``'s count at sparsity ``s`` of ``n``, at most ``n - keep_at_least``."""
        return min(self.rounding.removed(s, n), max(n - self.keep_at_least, 0))

    def formula(self, s: float, n: int) -> str:
        """The count as the code computes it (``round(0.9 * 10) = 9``, then the least kept)."""
        text = self.rounding.formula(s, n)
        want = self.removed(s, n)
        if want != self.rounding.removed(s, n):
            text += f", at most {n} - {self.keep_at_least} = {want} (keep_at_least={self.keep_at_least})"
        return text

    def words(self) -> str:
        """The keywords that differ from the default: ``", rounding=Rounding.FLOOR, keep_at_least=1"``."""
        out = "" if self.rounding is Rounding.HALF_EVEN else f", rounding=Rounding.{self.rounding.name}"
        return out + ("" if not self.keep_at_least else f", keep_at_least={self.keep_at_least}")


class Scope(enum.Enum):
    """Over what an unstructured pruner's count and threshold run."""

    GLOBAL = "global"
    PER_LAYER = "per-layer"


@dataclass(frozen=True)
class Unstructured:
    """Single weights by magnitude, over all matrices or per matrix;
    ``rounding`` and ``keep_at_least`` are the count's (:class:`Counting`)."""

    scope: Scope
    rounding: Rounding = Rounding.HALF_EVEN
    keep_at_least: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValueError(f"scope must be a Scope ({[s.name for s in Scope]}), got {self.scope!r}")
        Counting(self.rounding, self.keep_at_least)  # checks both

    def __str__(self) -> str:
        return f"Unstructured({self.scope.name}{self.counting.words()})"

    @property
    def counting(self) -> Counting:
        """The count rule: ``rounding`` of ``s * n``, at most ``n - keep_at_least``."""
        return Counting(self.rounding, self.keep_at_least)


@dataclass(frozen=True)
class Structured:
    """Whole slices along ``dim`` (0: rows, 1: columns) by their ``norm``-norm
    (1, 2 or inf, as ``ln_structured``'s ``n``); ``rounding`` and
    ``keep_at_least`` are the slice count's (:class:`Counting`)."""

    dim: int = 0
    norm: float = 2
    rounding: Rounding = Rounding.HALF_EVEN
    keep_at_least: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.dim, bool) or self.dim not in (0, 1):
            raise ValueError(f"dim must be 0 (rows) or 1 (columns), got {self.dim!r}")
        if isinstance(self.norm, bool) or self.norm not in (1, 2, math.inf):
            raise ValueError(f"norm must be 1, 2 or math.inf, got {self.norm!r}")
        Counting(self.rounding, self.keep_at_least)  # checks both

    def __str__(self) -> str:
        return f"Structured(dim={self.dim}, norm={self.norm}{self.counting.words()})"

    @property
    def counting(self) -> Counting:
        """The count rule: ``rounding`` of ``s * size(dim)``, at most ``size(dim) - keep_at_least``."""
        return Counting(self.rounding, self.keep_at_least)

    def slice_norms(self, w: torch.Tensor) -> torch.Tensor:
        """float64 norm of every slice along ``dim``: ``(w.shape[dim],)``."""
        return torch.linalg.vector_norm(w.double(), ord=self.norm, dim=1 - self.dim)


@dataclass(frozen=True)
class NM:
    """``n`` of every ``m`` consecutive weights along the last axis kept."""

    n: int = 2
    m: int = 4

    def __post_init__(self) -> None:
        for label, v in (("n", self.n), ("m", self.m)):
            check_int(label, v, least=1)
        if self.n >= self.m:
            raise ValueError(f"n must be below m, got n={self.n}, m={self.m}")

    def __str__(self) -> str:
        return f"NM({self.n}:{self.m})"

    @property
    def sparsity(self) -> float:
        """``1 - n/m``: 0.5 for 2:4."""
        return 1 - self.n / self.m

    def blocks(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (rows, cols), cols a multiple of ``m``, as (rows * cols/m, m) blocks."""
        return x.reshape(x.shape[0], -1, self.m).reshape(-1, self.m)


Pattern = Unstructured | Structured | NM
