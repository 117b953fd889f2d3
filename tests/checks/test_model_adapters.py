"""What the model adapters (aftertrain.checks.model_adapters) hand the
user's code and read back, where the examples of docs/checks.md pass
whether or not it is done: :func:`from_logits_step` hands each round the
check's ``k`` and refuses a step that changed any token of the text it was
handed, the last one included; :func:`from_model_pruner` reads the mask from
``weight_mask`` where the pruner leaves one, so a weight that was 0 before
pruning and that the mask keeps is kept.

Why: the capability's own tests pass whether or not this is done, so
each test here is the one a broken variant fails (its mutant in
tools/mutants_generator_kit.py, docs/mutation.md "Capability campaigns")."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import prune as torch_prune

from aftertrain.checks import adapters
from aftertrain.checks.speculative import toy_models


def _greedy_step(seen: list[int]):
    """One round adding the target's argmax; records the ``k`` it is handed."""

    def step(target, draft, ids, k, temperature):
        seen.append(k)
        nxt = target(ids).logits[0, -1].argmax().reshape(1, 1)
        return torch.cat([ids, nxt], 1)

    return step


def test_from_logits_step_hands_every_round_the_checks_k():
    seen: list[int] = []
    target, draft = toy_models()
    generate = adapters.from_logits_step(_greedy_step(seen))
    out = generate(target, draft, torch.tensor([0, 1]), 4, 3, 0.0, torch.Generator())
    assert out.shape == (4,) and seen == [3, 3, 3, 3]


def test_from_logits_step_refuses_a_step_that_changed_the_last_token_it_was_handed():
    """Only the text's last token rewritten (a step that overwrites the token
    it was handed with its own) is a change of the text, a ValueError."""

    def step(target, draft, ids, k, temperature):
        return torch.cat([ids[:, :-1], (ids[:, -1:] + 1) % 4, ids[:, -1:]], 1)

    target, draft = toy_models()
    try:
        adapters.from_logits_step(step)(target, draft, torch.tensor([1, 2]), 4, 1, 1.0, torch.Generator())
    except ValueError as err:
        assert "changed the text it was handed" in str(err)
    else:
        raise AssertionError("a step rewriting the last token was accepted")


def test_from_model_pruner_reads_weight_mask_over_a_zero_weight_it_keeps():
    """torch's custom_from_mask keeping every weight: a weight that was 0 is
    kept (the mask says so), not read as removed by ``weight != 0``."""

    def keep_all(model, sparsity):
        for m in model.modules():
            if isinstance(m, nn.Linear):
                torch_prune.custom_from_mask(m, "weight", mask=torch.ones_like(m.weight))

    w = {"layer.weight": torch.tensor([[0.0, 1.0], [2.0, 3.0]])}
    masks = adapters.from_model_pruner(keep_all)(w, 0.0)
    assert masks["layer.weight"].tolist() == [[True, True], [True, True]]
