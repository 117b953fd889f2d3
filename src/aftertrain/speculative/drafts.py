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
  committed as ``data/draft.pt`` (X2).
"""

from __future__ import annotations

import enum
from importlib import resources
from pathlib import Path

import torch.nn as nn

from aftertrain.lm.checkpoint import load_checkpoint
from aftertrain.lm.model import GPT
from aftertrain.lm.ngram import Bigram, NGram

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


def draft_model(kind: DraftKind, reference: GPT) -> nn.Module:
    """The draft of ``kind`` for target ``reference`` (eval mode, not shared with it)."""
    if not isinstance(kind, DraftKind):
        raise ValueError(f"kind must be a DraftKind ({[k.name for k in DraftKind]}), got {kind!r}")
    if not isinstance(reference, GPT):
        raise ValueError(f"reference must be an aftertrain.lm.model.GPT, got {type(reference).__name__}")
    if kind is DraftKind.BIGRAM:
        return Bigram.fit().eval()
    if kind in (DraftKind.INT8, DraftKind.INT4):
        from aftertrain import quant

        bits = 8 if kind is DraftKind.INT8 else 4
        return quant.quantized_model(reference, bits, quant.Granularity.PER_CHANNEL).eval()
    if kind is DraftKind.NGRAM:
        return NGram.fit().eval()
    return load_draft_gpt()


def draft_path() -> Path:
    """Where the bundled draft GPT checkpoint lives (``data/draft.pt``)."""
    return Path(str(resources.files("aftertrain") / "data" / DRAFT_FILE))


def load_draft_gpt() -> GPT:
    """The committed trained draft GPT (``data/draft.pt``), in eval mode."""
    return load_checkpoint(draft_path(), rebuild=DRAFT_REBUILD_HINT)
