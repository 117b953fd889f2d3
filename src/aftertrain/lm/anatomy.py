"""Where a model keeps what the claims name: its embeddings, its output
matrix, the first and last block's feed-forward input and the final norm.

The articles name our GPT's parameters (``tok.weight``, ``blocks.0.f1``,
``ln``); a transformers model calls the same roles by its architecture's
names (``model.embed_tokens``, ``model.layers.0.mlp.gate_proj``,
``model.norm``; ``transformer.wte``, ``transformer.h.0.mlp.c_fc``,
``transformer.ln_f``). :func:`anatomy` finds them by structure, not by name:

- the **embeddings** are the weights of the ``nn.Embedding`` modules (the
  token table, and the position table where there is one);
- the **head** is the output matrix (``get_output_embeddings()``; for our
  GPT ``head``); tied to the token table, it is that one parameter;
- the **blocks** are the longest ``nn.ModuleList`` (the decoder layers);
  a block's **feed-forward input** is its first module with a 2-D weight
  outside its attention (a module whose name holds ``attn`` or
  ``attention``); its **last norm** is its last normalization module;
- the **final norm** is the last normalization module outside the blocks.

Every name is a module or parameter name of the model as given (an
:class:`aftertrain.lm.hf.HFModel`'s start with ``hf.``).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from aftertrain.lm.model import GPT


@dataclass(frozen=True)
class Anatomy:
    """The roles of :func:`anatomy` (module docstring), by name."""

    #: parameter names of the embedding tables (token first)
    embeddings: tuple[str, ...]
    #: parameter name of the output matrix
    head: str
    #: module names of the first and last block's feed-forward input
    first_ffn_input: str
    last_ffn_input: str
    #: module name of the last block's last normalization
    last_block_norm: str
    #: module name of the final normalization
    final_norm: str


def _is_norm(module: nn.Module) -> bool:
    return "norm" in type(module).__name__.lower()


def _param_name(model: nn.Module, param: nn.Parameter) -> str:
    for name, p in model.named_parameters():
        if p is param:
            return name
    raise ValueError("the output matrix is not a parameter of the model")  # pragma: no cover


def anatomy(model: nn.Module) -> Anatomy:
    """The roles of ``model`` (our GPT or an :class:`aftertrain.lm.hf.HFModel`);
    ValueError naming what is missing for a model whose structure has no
    embedding, no block list or no final norm."""
    if isinstance(model, GPT):
        last = model.config.n_layer - 1
        return Anatomy(
            ("tok.weight", "pos.weight"),
            "head.weight",
            "blocks.0.f1",
            f"blocks.{last}.f1",
            f"blocks.{last}.ln2",
            "ln",
        )
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    modules = dict(model.named_modules())
    embeddings = tuple(f"{n}.weight" for n, m in modules.items() if isinstance(m, nn.Embedding))
    lists = [(n, m) for n, m in modules.items() if isinstance(m, nn.ModuleList) and len(m)]
    if not embeddings or not lists:
        raise ValueError(f"model {type(model).__name__} has no embedding table or no list of blocks")
    blocks_name, blocks = max(lists, key=lambda nm: len(nm[1]))
    hf = getattr(model, "hf", model)
    out = hf.get_output_embeddings() if hasattr(hf, "get_output_embeddings") else None
    if out is None or getattr(out, "weight", None) is None:
        raise ValueError(f"model {type(model).__name__} has no output matrix (get_output_embeddings())")
    head = _param_name(model, out.weight)

    def ffn_input(i: int) -> str:
        prefix = f"{blocks_name}.{i}"
        for n, m in blocks[i].named_modules():
            w = getattr(m, "weight", None)
            if (
                isinstance(w, nn.Parameter)
                and w.dim() == 2
                and not any(a in n for a in ("attn", "attention"))
            ):
                return f"{prefix}.{n}"
        raise ValueError(f"block {prefix} has no feed-forward matrix outside its attention")

    norms = [n for n, m in blocks[-1].named_modules() if _is_norm(m)]
    finals = [n for n, m in modules.items() if _is_norm(m) and not n.startswith(blocks_name + ".")]
    if not norms or not finals:
        raise ValueError(
            f"model {type(model).__name__} has no normalization in its last block or after the blocks"
        )
    last = len(blocks) - 1
    return Anatomy(
        embeddings, head, ffn_input(0), ffn_input(last), f"{blocks_name}.{last}.{norms[-1]}", finals[-1]
    )
