"""What a model must show before a claim or a teeth test can say anything
on it, measured, and the skip that says so where it does not.

The article's quantization and pruning claims compare a degraded copy with
the bigram ("3 bits is worse than the bigram", "random 5% is worse than
the bigram"). On a model whose own loss does not beat the bigram (an
untrained or barely trained one) such a comparison holds or fails before
anything is quantized or pruned, so it decides nothing there."""

from __future__ import annotations

import pytest


def bigram_unmet(model_loss: float, bigram_loss: float) -> str | None:
    """None where the model's float32 loss beats the bigram's; else the
    reason it does not, with both figures."""
    if model_loss < bigram_loss:
        return None
    return f"the model's float32 loss {model_loss:.4f} does not beat the bigram's {bigram_loss:.4f}"


def decide_only_past_the_bigram(model_loss: float, bigram_loss: float, compared: str) -> None:
    """Skip as "not decided here" on a model that does not beat the bigram:
    ``compared`` (what the claim sets against the bigram) is then on the
    bigram's wrong side before the copy is made."""
    unmet = bigram_unmet(model_loss, bigram_loss)
    if unmet is not None:
        pytest.skip(
            f"not decided here: {unmet}, so {compared} against the bigram says nothing of what "
            f"the degradation costs"
        )
