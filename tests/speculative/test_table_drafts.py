"""Table drafts (aftertrain.speculative.table_drafts): which drafts are tables,
their rows kept between runs and dropped when the model changes, bad input.
That drafting from a table gives the previous loop's output bit for bit is
tests/speculative/test_generator_fast_loop.py's."""

from __future__ import annotations

import pytest
import torch

from aftertrain.lm.ngram import Bigram
from aftertrain.speculative.drafters import TableDrafter, drafter
from aftertrain.speculative.table_drafts import TableDraft, table_draft

TABLES = ("bigram", "n-gram")


def test_bundled_tables_take_the_table_path_and_models_are_run(speculative_drafts):
    for kind, draft in speculative_drafts.items():
        assert isinstance(drafter(draft, 1.0), TableDrafter) == (kind.value in TABLES), kind


def test_a_table_is_kept_per_model_and_temperature_and_dropped_when_the_model_changes():
    """Rows are cached between runs, per temperature; an in-place change of
    the model's table starts a new one (the cache never serves stale rows)."""
    bigram = Bigram.fit()
    first = table_draft(bigram, 1.0)
    assert table_draft(bigram, 1.0) is first and table_draft(bigram, 0.5) is not first
    before = first.row((5,)).q.clone()
    with torch.no_grad():
        bigram.log_probs[5] = bigram.log_probs[5].roll(1)
    fresh = table_draft(bigram, 1.0)
    assert fresh is not first
    assert not torch.equal(fresh.row((5,)).q, before)


def test_table_draft_rejects_bad_input():
    with pytest.raises(ValueError, match="context must be an int >= 0"):
        TableDraft(Bigram.fit(), context=-1)
    with pytest.raises(ValueError, match="temperature"):
        TableDraft(Bigram.fit(), context=1, temperature=-1.0)


def test_the_rows_kept_are_bounded_and_a_dropped_row_comes_back_the_same(monkeypatch):
    """Past ROWS_MAX_VALUES the kept rows are dropped before one more is
    added (a large vocabulary's many contexts), and a row computed again is
    the same law, bit for bit. Teeth: without the bound all 5 rows stay."""
    from aftertrain.speculative import table_drafts

    bigram = Bigram.fit()
    table = TableDraft(bigram, 1)
    first = table.row((3,)).q.clone()
    monkeypatch.setattr(table_drafts, "ROWS_MAX_VALUES", 3 * bigram.config.vocab_size)
    for ctx in range(4, 8):
        table.row((ctx,))
    assert len(table._rows) <= 3
    assert torch.equal(table.row((3,)).q, first)
    monkeypatch.setattr(table_drafts, "ROWS_MAX_VALUES", 2**62)
    unbounded = TableDraft(bigram, 1)
    for ctx in range(3, 8):
        unbounded.row((ctx,))
    assert len(unbounded._rows) == 5
