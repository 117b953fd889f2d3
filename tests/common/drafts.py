"""The drafts of the model under test as the tests take them
(``speculative_drafts``, the root conftest's fixture): a transformers
model's draft GPT is the user's ``--aftertrain-draft``, so a run without
one has no draft of that kind, and a test of it skips saying so."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from aftertrain.experiments import speculative as XS
from aftertrain.experiments.speedup import SPEEDUP_CHARS
from aftertrain.speculative import speculative_generate
from aftertrain.speculative.drafts import DraftKind

#: Why a transformers model's run has no draft GPT.
NO_DRAFT_GPT = (
    "no draft GPT: a transformers model's draft model is the user's (--aftertrain-draft PATH, "
    "a folder of the same tokenizer), and none was given"
)


def draft_of(drafts: dict[DraftKind, nn.Module], kind: DraftKind) -> nn.Module:
    """The draft of ``kind``; a skip naming the missing ``--aftertrain-draft``
    where the run has no draft GPT (the only kind a run may lack)."""
    if kind not in drafts:
        assert kind is DraftKind.GPT, f"the run has no {kind.value} draft"
        pytest.skip(NO_DRAFT_GPT)
    return drafts[kind]


def timed_run(target: nn.Module, draft: nn.Module, k: int):
    """What the public generator makes of the speedup experiment's timed run:
    SPEEDUP_CHARS after the model's prompt at ``k``, temperature 1, seed
    ``XS.SEED`` (the result of :func:`aftertrain.speculative.speculative_generate`)."""
    return speculative_generate(
        target,
        draft,
        XS.prompt_for(target),
        SPEEDUP_CHARS,
        k,
        1.0,
        torch.Generator().manual_seed(XS.SEED),
    )
