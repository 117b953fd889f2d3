"""A model's sizes counted in the test, independently of the library: the
closed forms of the storage claims (Q3, P5) are checked against these, and
the article's printed figures only on a model of the article's architecture."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn


@dataclass(frozen=True)
class ModelSizes:
    """Counts over ``model.named_parameters()`` (a tied matrix counted once)."""

    #: elements of the 2-D parameters
    weights: int
    #: number of 2-D parameters
    matrices: int
    #: output rows of the 2-D parameters (one per-channel scale each)
    rows: int
    #: elements of every parameter
    parameters: int
    #: bytes of the 4-bit codes, two to a byte: ``ceil(numel / 2)`` per matrix
    int4_code_bytes: int
    #: bytes of one bit per weight (a bitmask), ``ceil(numel / 8)`` per matrix
    bit_bytes: int


def model_sizes(model: nn.Module) -> ModelSizes:
    """The :class:`ModelSizes` of ``model``, read off its parameters' shapes.
    Note: the reference GPT has 631,808 weights in 15 matrices with 3,784
    rows, 637,156 parameters."""
    matrices = [p for _, p in model.named_parameters() if p.dim() == 2]
    return ModelSizes(
        weights=sum(p.numel() for p in matrices),
        matrices=len(matrices),
        rows=sum(p.shape[0] for p in matrices),
        parameters=sum(p.numel() for p in model.parameters()),
        int4_code_bytes=sum((p.numel() + 1) // 2 for p in matrices),
        bit_bytes=sum((p.numel() + 7) // 8 for p in matrices),
    )


def has_article_architecture(model: nn.Module) -> bool:
    """Whether ``model`` is our GPT with the article's sizes (GPTConfig's
    defaults; dropout, a training setting, aside): the model whose figures
    the article prints (631,808 weights, 3,784 rows)."""
    from aftertrain.lm.model import GPT, GPTConfig

    if not isinstance(model, GPT):
        return False
    sizes = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd")
    return all(getattr(model.config, k) == getattr(GPTConfig(), k) for k in sizes)
