"""The drafters of the speculative loop (:mod:`aftertrain.speculative.generator`)
and the uniforms it draws.

A drafter proposes ``k`` characters from ``k`` uniforms and says which rows
``q`` it drew them from: a table draft (the bigram, the n-gram) by a row
look-up and a bisection (:class:`TableDrafter`), any other by running it, one
cached forward per character (:class:`ModelDrafter`). :class:`Uniforms` hands
a run's uniforms out as floats, drawn a chunk at a time, in the generator's
order.
"""

from __future__ import annotations

import torch

from aftertrain.lm.decoding import Decoder, check_temperature, probabilities_unchecked
from aftertrain.lm.protocol import NextTokenModel
from aftertrain.speculative.table_drafts import TableDraft, row_of, table_draft

__all__ = ["ModelDrafter", "TableDrafter", "Uniforms", "drafter"]


class ModelDrafter:
    """A draft that must be run (a GPT, the quantized references): one
    cached forward per drafted character through a :class:`Decoder`."""

    def __init__(self, model: NextTokenModel, temperature: float) -> None:
        self.decoder = Decoder(model, name="draft")
        self.temperature = check_temperature(temperature)

    def prefill(self, ids: list[int]) -> None:
        """Feed the prompt ``ids`` to the draft's cache before the first round."""
        self.decoder.feed(ids)

    def draft(
        self, text: list[int], k: int, u: list[float]
    ) -> tuple[list[int], list[list[float]], list[float]]:
        """``k >= 1`` characters after ``text`` from the uniforms ``u``: the
        drafts, the rows ``q`` they were drawn from (float64, as lists), and
        each draft's ``q``.

        The draft is fed the text it has not seen and the first k - 1
        drafts: k forward calls. The rows are the very values the rule is
        then given (a draft scored with a distribution other than the one it
        was sampled from breaks the law)."""
        dec = self.decoder
        logits = dec.feed(text[len(dec) :])[-1]
        drafts, qs, qx = [], [], []
        for i in range(k):
            # unchecked: Decoder.feed has checked these logits, the caller the temperature
            row = row_of(probabilities_unchecked(logits, self.temperature))
            x = row.draw(u[i])
            drafts.append(x)
            qs.append(row.q_list)
            qx.append(row.q_list[x])
            if i < k - 1:
                logits = dec.feed([x])[-1]
        return drafts, qs, qx

    def rollback(self, text: list[int]) -> None:
        """Keep what was fed of ``text``, minus its last character (fed next round)."""
        dec = self.decoder
        dec.truncate(min(len(dec), len(text) - 1))
        assert dec.tokens == text[: len(dec)], "the draft holds text that was not emitted"


class TableDrafter:
    """A table draft (:class:`aftertrain.speculative.table_drafts.TableDraft`):
    per drafted character a row look-up, one uniform and a bisection; no
    model call once the context's row is known."""

    def __init__(self, table: TableDraft) -> None:
        self.table = table

    def prefill(self, ids: list[int]) -> None:
        """Nothing: a table draft reads its context from the text each round."""

    def draft(
        self, text: list[int], k: int, u: list[float]
    ) -> tuple[list[int], list[list[float]], list[float]]:
        """As :meth:`ModelDrafter.draft`, from the table's rows: per
        character a dictionary look-up by the last ``context`` characters
        and a bisection (:meth:`aftertrain.speculative.table_drafts.ContextLaw.draw`),
        no tensor."""
        table = self.table
        c = table.context
        key = table.key(text)
        drafts, qs, qx = [], [], []
        for i in range(k):
            row = table.row(key)
            x = row.draw(u[i])
            drafts.append(x)
            q = row.q_list
            qs.append(q)
            qx.append(q[x])
            if c:
                key = (*key, x)[-c:]
        return drafts, qs, qx

    def rollback(self, text: list[int]) -> None:
        """Nothing: a table draft keeps no cache to cut back to ``text``."""


class Uniforms:
    """The float64 uniforms of a run, in the generator's order, without a
    tensor per round: drawn :data:`CHUNK` at a time from a copy of the
    generator and handed out as floats (torch's CPU generator gives
    ``rand(n)`` as n successive ``rand(1)``, so chunks change no value).
    :meth:`settle` (at the end of a ``with`` block) then advances the
    caller's generator by exactly the uniforms taken, as drawing them one
    round at a time would have."""

    CHUNK = 1024

    def __init__(self, generator: torch.Generator) -> None:
        self.generator = generator
        self.source = torch.Generator()
        self.source.set_state(generator.get_state())
        self.buffer: list[float] = []
        self.next = 0
        self.taken = 0

    def take(self, n: int) -> list[float]:
        """The next ``n`` uniforms."""
        if self.next + n > len(self.buffer):
            self.buffer = (
                self.buffer[self.next :]
                + torch.rand(max(self.CHUNK, n), dtype=torch.float64, generator=self.source).tolist()
            )
            self.next = 0
        out = self.buffer[self.next : self.next + n]
        self.next += n
        self.taken += n
        return out

    def __enter__(self) -> Uniforms:
        return self

    def __exit__(self, *exc: object) -> None:
        self.settle()

    def settle(self) -> None:
        """Advance the caller's generator past the uniforms taken (once, at the end)."""
        left, self.taken = self.taken, 0
        while left:
            n = min(left, 1 << 20)
            torch.rand(n, dtype=torch.float64, generator=self.generator)
            left -= n


def drafter(draft: NextTokenModel | TableDraft, temperature: float) -> ModelDrafter | TableDrafter:
    """The drafter of ``draft``: from tables when it reads a short context
    (:func:`aftertrain.speculative.table_drafts.table_draft`), else by running it."""
    table = table_draft(draft, temperature)
    return ModelDrafter(draft, temperature) if table is None else TableDrafter(table)
