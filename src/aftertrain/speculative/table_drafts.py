"""Table drafts: a draft that reads only the last few characters, sampled
from rows computed once per context.

The bigram reads the last character, the n-gram of order ``n`` the last
``n - 1``: their next-character law is a function of a short context, so
the fast loop (:mod:`aftertrain.speculative.generator`) drafts from them
without a model call: per drafted character one dictionary look-up, one
uniform and a bisection of the row's cumulative sums. A row is the draft's
own forward pass on the context alone, turned into
:func:`aftertrain.lm.decoding.probabilities` at the run's temperature, so it
is bit for bit the ``q`` the draft would give inside a
:class:`aftertrain.lm.decoding.Decoder` (whose window always holds at
least 65 characters, more than any table reads).

:func:`table_draft` wraps the bundled table models (``Bigram``, ``NGram``);
:class:`TableDraft` wraps any model the caller knows to read only its last
``context`` characters (the kit's toy tables in the tests). The rows of a
model are kept between runs (:func:`table_draft` caches them per model and
temperature, and drops them when the model's tensors change in place).
"""

from __future__ import annotations

import bisect
import itertools
import math
import weakref
from dataclasses import dataclass

import torch
import torch.nn as nn

from aftertrain.core.validation import check_int
from aftertrain.lm.decoding import check_logits, check_temperature, probabilities
from aftertrain.lm.ngram import Bigram, NGram
from aftertrain.lm.protocol import check_model

__all__ = ["TableDraft", "table_context", "table_draft"]


#: Most row values a table keeps (a row holds its V values three times, as
#: a tensor and two lists, about 72 bytes each: 2**22 values are about
#: 300 MB); the rows are dropped when one more would pass it, which only a
#: vocabulary of thousands of tokens over many contexts reaches (our 100
#: characters: 41,943 contexts).
ROWS_MAX_VALUES = 2**22


@dataclass(frozen=True)
class ContextLaw:
    """One context's draft law: ``q`` (float64 tensor, V), the same as a
    list, its cumulative sums for the inverse-CDF draw, and the draw's
    bounds (the total and the largest float below it), computed once."""

    q: torch.Tensor
    q_list: list[float]
    cdf: list[float]
    total: float
    below_total: float

    def draw(self, v: float) -> int:
        """The inverse-CDF draw of :func:`aftertrain.speculative.rule.inverse_cdf_sample`
        for the uniform ``v``, in plain floats (the same float64 arithmetic):
        :func:`draw_from_cdf` with the row's bounds precomputed."""
        x = v * self.total
        return bisect.bisect_right(self.cdf, x if x < self.below_total else self.below_total)


def draw_from_cdf(cdf: list[float], v: float) -> int:
    """Index ``i`` with ``cdf[i-1] <= x < cdf[i]``, ``x = v * cdf[-1]`` kept
    strictly below the total: ``inverse_cdf_sample`` for one row."""
    total = cdf[-1]
    return bisect.bisect_right(cdf, min(v * total, math.nextafter(total, 0.0)))


def cumulative(values: list[float]) -> list[float]:
    """The running sums of ``values``, left to right in float64: what
    ``torch.cumsum`` gives for a 1-D float64 tensor on the CPU (it adds in
    order, in float64), without a tensor."""
    return list(itertools.accumulate(values))


def row_of(q: torch.Tensor) -> ContextLaw:
    """The :class:`ContextLaw` of the float64 distribution ``q`` (V,)."""
    cdf = q[None].cumsum(-1)[0].tolist()
    return ContextLaw(q, q.tolist(), cdf, cdf[-1], math.nextafter(cdf[-1], 0.0))


class TableDraft:
    """``model``, known to read only its last ``context`` characters, as a
    table of rows at ``temperature`` (filled as contexts are met).

    ``row(ctx)`` is the law after a text ending in ``ctx`` (the last
    ``context`` characters, or the whole text if shorter). Wrapping a model
    that reads more than ``context`` characters drafts from the wrong law;
    the rule then still keeps the output exact (it corrects any q it is
    told), but the acceptance falls.
    """

    def __init__(self, model: nn.Module, context: int, temperature: float = 1.0) -> None:
        self.model = check_model(model, "draft")
        check_int("context", context, least=0)
        self.context = context
        self.temperature = check_temperature(temperature)
        self.config = model.config
        self._rows: dict[tuple[int, ...], ContextLaw] = {}

    def at(self, temperature: float) -> TableDraft:
        """This table at ``temperature`` (itself when it is the same)."""
        if temperature == self.temperature:
            return self
        return TableDraft(self.model, self.context, temperature)

    def key(self, text: list[int]) -> tuple[int, ...]:
        """The last ``context`` characters of ``text`` (all of it if shorter)."""
        return tuple(text[max(0, len(text) - self.context) :]) if self.context else ()

    def row(self, ctx: tuple[int, ...]) -> ContextLaw:
        """The draft's law after the context ``ctx`` (a :meth:`key`), computed
        by one forward of the draft the first time and kept."""
        hit = self._rows.get(ctx)
        return self._fill(ctx) if hit is None else hit

    @torch.no_grad()
    def _fill(self, ctx: tuple[int, ...]) -> ContextLaw:
        # the empty text: the model has no row for it; one position is the least
        # any draft reads, so this only happens with context 0 and no prompt
        logits = self.model(torch.tensor([list(ctx) or [0]]))[0, -1]
        check_logits(logits, "draft's logits")
        if (len(self._rows) + 1) * logits.numel() > ROWS_MAX_VALUES:
            self._rows.clear()  # a large vocabulary: recompute rather than grow without bound
        hit = self._rows[ctx] = row_of(probabilities(logits, self.temperature))
        return hit


def table_context(model: nn.Module) -> int | None:
    """How many last characters a bundled table model reads (the bigram 1,
    the n-gram of order n: n - 1), or None for any other model."""
    if isinstance(model, Bigram):
        return 1
    if isinstance(model, NGram):
        return model.order - 1
    return None


# model -> (fingerprint of its tensors, {temperature: TableDraft})
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _fingerprint(model: nn.Module) -> tuple:
    return tuple((t.data_ptr(), t._version) for t in (*model.buffers(), *model.parameters()))


def table_draft(draft: nn.Module | TableDraft, temperature: float) -> TableDraft | None:
    """The :class:`TableDraft` of ``draft`` at ``temperature``: ``draft``
    itself (at that temperature) if it is one, the cached table of a bundled
    table model, or None for a draft that must be run (a GPT)."""
    if isinstance(draft, TableDraft):
        return draft.at(temperature)
    context = table_context(draft)
    if context is None:
        return None
    stamp = _fingerprint(draft)
    entry = _CACHE.get(draft)
    if entry is None or entry[0] != stamp:
        entry = _CACHE[draft] = (stamp, {})
    tables = entry[1]
    if temperature not in tables:
        tables[temperature] = TableDraft(draft, context, temperature)
    return tables[temperature]
