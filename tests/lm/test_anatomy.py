"""The roles the claims name, found by structure (aftertrain.lm.anatomy):
our GPT's names at every depth, and the refusals of a model without the
structure. A transformers model's roles: tests/lm/test_hf.py."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from aftertrain.lm.anatomy import anatomy
from aftertrain.lm.model import GPT, GPTConfig


@pytest.mark.parametrize("n_layer", [1, 3, 5])
def test_our_gpts_roles_are_its_names_at_its_depth(n_layer):
    torch.manual_seed(0)
    roles = anatomy(GPT(GPTConfig(n_layer=n_layer, n_embd=32, n_head=4)))
    last = n_layer - 1
    assert roles.embeddings == ("tok.weight", "pos.weight") and roles.head == "head.weight"
    assert (roles.first_ffn_input, roles.last_ffn_input) == ("blocks.0.f1", f"blocks.{last}.f1")
    assert (roles.last_block_norm, roles.final_norm) == (f"blocks.{last}.ln2", "ln")


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.up = nn.Linear(4, 8)


class _Tiny(nn.Module):
    """A transformers-like shape: embeddings, a block list, a final norm, a head."""

    def __init__(self, final_norm: bool = True) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.layers = nn.ModuleList([_Block(), _Block()])
        if final_norm:
            self.final = nn.LayerNorm(4)
        self.head = nn.Linear(4, 10, bias=False)

    def get_output_embeddings(self) -> nn.Module:
        return self.head


def test_the_feed_forward_input_skips_attention_and_the_norms_are_the_last_ones():
    roles = anatomy(_Tiny())
    assert roles.embeddings == ("embed.weight",) and roles.head == "head.weight"
    assert roles.first_ffn_input == "layers.0.up" and roles.last_ffn_input == "layers.1.up"
    assert roles.last_block_norm == "layers.1.norm" and roles.final_norm == "final"


@pytest.mark.parametrize(
    "model, match",
    [
        (nn.Linear(2, 2), "no embedding table or no list of blocks"),
        (_Tiny(final_norm=False), "no normalization in its last block or after the blocks"),
        ("gpt", "must be a torch.nn.Module"),
    ],
    ids=["no structure", "no final norm", "not a module"],
)
def test_a_model_without_the_structure_is_refused(model, match):
    with pytest.raises(ValueError, match=match):
        anatomy(model)
