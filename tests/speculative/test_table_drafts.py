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
