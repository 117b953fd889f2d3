"""aftertrain: executable claims about compressing a small character-level GPT.

Submodules load on first use (``aftertrain.lm.model``, ``aftertrain.quant``...),
so the pytest ledger plugin (``-p aftertrain.ledger``) does not import torch.
"""

import importlib

__version__ = "0.1.0"

_SUBMODULES = {"text", "model", "decoding", "evaluation", "checkpoint", "protocol", "train",
               "bigram", "drafts", "timing", "stats", "claims", "ledger", "quant", "prune",
               "speculative", "report", "cli"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"aftertrain.{name}")
    raise AttributeError(f"module 'aftertrain' has no attribute {name!r}")
