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

``round`` is Python's, half to even, on the float64 product.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from aftertrain.core.validation import check_int


class Scope(enum.Enum):
    """Over what an unstructured pruner's count and threshold run."""

    GLOBAL = "global"
    PER_LAYER = "per-layer"


@dataclass(frozen=True)
class Unstructured:
    """Single weights by magnitude, over all matrices or per matrix."""

    scope: Scope

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValueError(f"scope must be a Scope ({[s.name for s in Scope]}), got {self.scope!r}")

    def __str__(self) -> str:
        return f"Unstructured({self.scope.name})"


@dataclass(frozen=True)
class Structured:
    """Whole slices along ``dim`` (0: rows, 1: columns) by their ``norm``-norm
    (1, 2 or inf, as ``ln_structured``'s ``n``)."""

    dim: int = 0
    norm: float = 2

    def __post_init__(self) -> None:
        if isinstance(self.dim, bool) or self.dim not in (0, 1):
            raise ValueError(f"dim must be 0 (rows) or 1 (columns), got {self.dim!r}")
        if isinstance(self.norm, bool) or self.norm not in (1, 2, math.inf):
            raise ValueError(f"norm must be 1, 2 or math.inf, got {self.norm!r}")

    def __str__(self) -> str:
        return f"Structured(dim={self.dim}, norm={self.norm})"

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
