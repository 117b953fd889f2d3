"""Adapters for code written against a model rather than the kit's
protocols (re-exported by :mod:`aftertrain.checks.adapters`, the import
place):

- :func:`from_logits_loop` and :func:`from_logits_step`: a decoding loop
  ``loop(target, draft, ids, n_new, k, temperature)``, or one round of it
  ``step(target, draft, ids, k, temperature)``, calling each model as
  ``model(ids).logits`` and drawing from torch's global generator, as
  ``check_generator``'s ``generate``;
- :func:`from_model_pruner`: ``prune_model(model, sparsity)``, which prunes
  an ``nn.Module``'s linear layers in place, as ``check_pruner``'s
  ``prune(weights, sparsity) -> masks``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import torch
from torch import nn

__all__ = ["from_logits_loop", "from_logits_step", "from_model_pruner"]


class _LogitsOf:
    """``model`` answering as a transformers model does: ``wrapped(ids)`` or
    ``wrapped(input_ids=ids)`` gives an output whose ``.logits`` is
    ``model(ids)``; any other attribute is the model's (``config``)."""

    def __init__(self, model: Callable) -> None:
        self.model = model

    def __call__(self, input_ids: torch.Tensor, **kwargs) -> SimpleNamespace:
        return SimpleNamespace(logits=self.model(input_ids))

    def __getattr__(self, name: str):
        return getattr(self.__dict__["model"], name)


def from_logits_loop(loop: Callable) -> Callable:
    """``check_generator``'s ``generate`` from a decoding loop written as
    transformers code is: ``loop(target, draft, ids, n_new, k, temperature)
    -> ids``, where ``ids`` is int64 (1, L), each model is called as
    ``model(ids).logits`` (or ``model(input_ids=ids).logits``) giving (1, L,
    V), every draw comes from torch's global generator (``torch.rand``,
    ``rand_like``, ``multinomial``) and temperature 0 is greedy. It returns
    the prompt and the ``n_new`` tokens after it (1, L + n_new) or (L +
    n_new,), or those tokens alone, (n_new,).

    The global generator is seeded from the check's ``generator`` inside
    ``torch.random.fork_rng``, so each call is reproducible and the caller's
    global state is left as it was. Any other length returned is a
    ValueError (a failure line of the check)."""
    if not callable(loop):
        raise ValueError(f"loop must be callable, got {type(loop).__name__}")

    def generate(target, draft, prompt, n_new, k, temperature, generator):
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            out = loop(_LogitsOf(target), _LogitsOf(draft), prompt[None].clone(), n_new, k, temperature)
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{_name(loop)} must return a tensor of token ids, got {type(out).__name__}")
        out = out.reshape(-1)
        if out.numel() == prompt.numel() + n_new:
            if not torch.equal(out[: prompt.numel()].cpu(), prompt):
                raise ValueError(f"{_name(loop)} changed the prompt: {out[: prompt.numel()].tolist()}")
            out = out[prompt.numel() :]
        if out.numel() != n_new:
            raise ValueError(
                f"{_name(loop)} must return the prompt and {n_new} new tokens, or the {n_new} "
                f"alone, got {out.numel()} tokens after a prompt of {prompt.numel()}"
            )
        return out.long()

    generate.__name__ = f"from_logits_loop({_name(loop)})"
    return generate


def from_logits_step(step: Callable) -> Callable:
    """``check_generator``'s ``generate`` from one round of a decoding loop:
    ``step(target, draft, ids, k, temperature) -> ids`` extends ``ids``
    (int64 (1, L)) by at least one token (a speculative round: the accepted
    drafts and the token after them), calling each model as
    ``model(ids).logits`` and drawing from torch's global generator, as
    :func:`from_logits_loop` describes. Rounds are run until ``n_new``
    tokens follow the prompt; a last round's tokens past ``n_new`` are cut,
    which leaves the law of those before them as it was. A step that adds
    no token, or changes the text it was handed, is a ValueError (a
    failure line of the check)."""
    if not callable(step):
        raise ValueError(f"step must be callable, got {type(step).__name__}")

    def loop(target, draft, ids, n_new, k, temperature):
        end = ids.shape[1] + n_new
        while ids.shape[1] < end:
            out = step(target, draft, ids, k, temperature)
            if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[1] <= ids.shape[1]:
                what = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                raise ValueError(
                    f"{_name(step)} must return ids (1, L + m), m >= 1, for ids {tuple(ids.shape)}, "
                    f"got {what}"
                )
            if not torch.equal(out[:, : ids.shape[1]], ids):
                raise ValueError(f"{_name(step)} changed the text it was handed")
            ids = out
        return ids[:, :end]

    loop.__name__ = _name(step)
    generate = from_logits_loop(loop)
    generate.__name__ = f"from_logits_step({_name(step)})"
    return generate


def _host_model(weights: dict[str, torch.Tensor]) -> tuple[nn.Module, dict[str, nn.Linear]]:
    """A module holding one bias-free ``nn.Linear`` per weight, at the
    weight's dotted name (a trailing ``.weight`` dropped: ``blocks.0.qkv``),
    and those layers by weight name."""
    host, layers, paths = nn.Module(), {}, set()
    for name, w in weights.items():
        if w.dim() != 2:
            raise ValueError(f"a model pruner prunes 2-D weights, got {name!r} of shape {tuple(w.shape)}")
        path = name.removesuffix(".weight")
        *parents, last = path.split(".")
        above = {".".join(parents[:i]) for i in range(1, len(parents) + 1)}
        if path in paths or above & paths or any(p.startswith(path + ".") for p in paths):
            raise ValueError(f"weight names must not nest in one another, got {name!r}")
        paths.add(path)
        parent = host
        for part in parents:
            children = dict(parent.named_children())
            if part not in children:
                parent.add_module(part, nn.Module())
            parent = parent.get_submodule(part)
        layer = nn.Linear(w.shape[1], w.shape[0], bias=False)
        layer.weight = nn.Parameter(w.clone())
        parent.add_module(last, layer)
        layers[name] = layer
    return host, layers


def from_model_pruner(prune_model: Callable) -> Callable:
    """``check_pruner``'s ``prune(weights, sparsity) -> masks`` from a pruner
    of a whole model: ``prune_model(model, sparsity)`` prunes the
    ``nn.Linear`` layers of ``model`` in place (its return value is not
    read).

    Each weight becomes a bias-free ``nn.Linear`` at its dotted name (so
    ``model.named_modules()`` yields the names the kit gives); the mask is
    the layer's ``weight_mask`` where the pruner leaves one (as
    ``torch.nn.utils.prune`` does), else ``weight != 0``, which reads a
    weight that was 0 before pruning as removed (the structured battery
    holds none; the unstructured and N:M ones do). A pruner that shrinks
    or replaces a layer gives a mask of the wrong shape: a failed
    ``output`` row."""
    if not callable(prune_model):
        raise ValueError(f"prune_model must be callable, got {type(prune_model).__name__}")

    def prune(weights, sparsity):
        host, layers = _host_model(weights)
        prune_model(host, sparsity)
        masks = {}
        for name, layer in layers.items():
            mask = getattr(layer, "weight_mask", None)
            masks[name] = (layer.weight != 0 if mask is None else mask.bool()).detach()
        return masks

    prune.__name__ = f"from_model_pruner({_name(prune_model)})"
    return prune


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)
