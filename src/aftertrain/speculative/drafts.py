"""Draft models for speculative decoding, behind one small interface.

Every draft is an ``nn.Module`` implementing
:class:`aftertrain.lm.protocol.NextTokenModel`, as the reference does, so
:class:`aftertrain.lm.decoding.Decoder` drives drafts and target alike and rolls
back each one's cache. :func:`draft_model` builds
each kind by name:

- ``BIGRAM``: the previous character only (S3).
- ``INT8``, ``INT4``: the reference with every 2-D weight fake-quantized
  per channel to 8 and 4 bits (S3, part 3's rule).
- ``NGRAM``: an interpolated Witten-Bell character n-gram fitted on the
  training split (X2: cheap and better than the bigram).
- ``GPT``: a 1-layer GPT trained by ``aftertrain train --draft`` and
  committed as ``data/draft.pt`` (X2); for a transformers target, the
  user's draft model of the same tokenizer (``--aftertrain-draft``).

For a transformers target the tables read its own text and vocabulary
(:func:`draft_model`).
"""

from __future__ import annotations

import enum
from importlib import resources
from pathlib import Path

import torch.nn as nn

from aftertrain.lm.checkpoint import load_checkpoint
from aftertrain.lm.hf import HFModel, check_same_vocabulary
from aftertrain.lm.model import GPT
from aftertrain.lm.ngram import Bigram, NGram
from aftertrain.lm.protocol import TableConfig

DRAFT_FILE = "draft.pt"
DRAFT_REBUILD_HINT = "aftertrain train --draft --out src/aftertrain/data/draft.pt"


class DraftKind(enum.Enum):
    """The drafts of the articles and ours, by the name the tables and the
    command line use (``--draft``): the bigram, the 8- and 4-bit quantized
    target, the n-gram and the small draft GPT."""

    BIGRAM = "bigram"
    INT8 = "8-bit"
    INT4 = "4-bit"
    NGRAM = "n-gram"
    GPT = "draft GPT"


def draft_model(kind: DraftKind, reference: GPT | HFModel, draft: HFModel | None = None) -> nn.Module:
    """The draft of ``kind`` for target ``reference`` (eval mode, not shared with it).

    For a transformers model (:class:`aftertrain.lm.hf.HFModel`) the tables
    are fitted on its text's training split over its vocabulary, the
    quantized drafts are its own copies, and the ``GPT`` kind is ``draft``,
    a model of the same tokenizer the user gives (ValueError without one)."""
    if not isinstance(kind, DraftKind):
        raise ValueError(f"kind must be a DraftKind ({[k.name for k in DraftKind]}), got {kind!r}")
    if isinstance(reference, HFModel):
        return _transformers_draft(kind, reference, draft)
    if draft is not None:
        raise ValueError("draft is for a transformers target; our GPT's draft GPT is the bundled one")
    if not isinstance(reference, GPT):
        raise ValueError(f"reference must be an aftertrain.lm.model.GPT, got {type(reference).__name__}")
    if kind is DraftKind.BIGRAM:
        return Bigram.fit().eval()
    if kind in (DraftKind.INT8, DraftKind.INT4):
        return _quantized(kind, reference)
    if kind is DraftKind.NGRAM:
        return NGram.fit().eval()
    return load_draft_gpt()


def _quantized(kind: DraftKind, target: nn.Module) -> nn.Module:
    """The 8- or 4-bit draft: ``target`` with every 2-D weight fake-quantized per channel."""
    from aftertrain import quant

    bits = 8 if kind is DraftKind.INT8 else 4
    return quant.quantized_model(target, bits, quant.Granularity.PER_CHANNEL).eval()


def _transformers_draft(kind: DraftKind, target: HFModel, draft: HFModel | None) -> nn.Module:
    V, T = target.config.vocab_size, target.config.block_size
    if kind in (DraftKind.BIGRAM, DraftKind.NGRAM):
        table = (Bigram if kind is DraftKind.BIGRAM else NGram).fit(target.text.train, vocab_size=V)
        table.config = TableConfig(V, T)  # decoded in the target's window
        table.text = target.text  # scored on the target's text (aftertrain.lm.hf.model_text)
        return table.eval()
    if kind in (DraftKind.INT8, DraftKind.INT4):
        return _quantized(kind, target)
    if draft is None:
        raise ValueError(
            "draft: the draft GPT of a transformers target is a model the user gives "
            "(--aftertrain-draft PATH: a folder of the same tokenizer); none was given"
        )
    check_same_vocabulary(target, draft)
    return draft


def draft_path() -> Path:
    """Where the bundled draft GPT checkpoint lives (``data/draft.pt``)."""
    return Path(str(resources.files("aftertrain") / "data" / DRAFT_FILE))


def load_draft_gpt() -> GPT:
    """The committed trained draft GPT (``data/draft.pt``), in eval mode."""
    return load_checkpoint(draft_path(), rebuild=DRAFT_REBUILD_HINT)
