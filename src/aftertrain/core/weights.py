"""The weights of a model that compression acts on: its 2-D parameters.

One selector serves quantization (:mod:`aftertrain.quant.api`), pruning
(:mod:`aftertrain.prune.masks`) and the experiments, the way torchao's
sparsity API shares the quantizer's "which weights" filter: a parameter is a
weight matrix when it has two dimensions (the embeddings, the attention and
FFN matrices, the head); 1-D parameters (biases, LayerNorms) never are.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn


def weight_matrices(model: nn.Module, names: Iterable[str] | None = None) -> dict[str, nn.Parameter]:
    """The 2-D parameters of ``model`` by name, in registration order.

    Args:
        model: any module; its 2-D parameters are the weight matrices.
        names: a subset of those names (default: all of them; empty selects
            none); the result keeps the model's order whatever the order of
            ``names``.

    Raises ``ValueError`` naming the argument when ``model`` is not a module
    or has no 2-D parameter, or when ``names`` is a string, not iterable, or
    names a parameter that is not a 2-D parameter of ``model``.
    Note: for the reference GPT these are 15 matrices, 631,808 weights.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    matrices = {n: p for n, p in model.named_parameters() if p.dim() == 2}
    if not matrices:
        raise ValueError(f"model must have at least one 2-D weight, got {type(model).__name__}")
    if names is None:
        return matrices
    if isinstance(names, str):
        raise ValueError(f"names must be an iterable of parameter names, not the string {names!r}")
    if not isinstance(names, Iterable):
        raise ValueError(f"names must be an iterable of parameter names, got {names!r}")
    chosen = list(names)
    unknown = [n for n in chosen if not isinstance(n, str) or n not in matrices]
    if unknown:
        raise ValueError(
            f"names holds {unknown}, not 2-D parameters of the model; valid names: {list(matrices)}"
        )
    return {n: p for n, p in matrices.items() if n in chosen}
