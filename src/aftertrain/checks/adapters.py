"""Adapters from the ecosystem's samplers to the kit's protocols.

HuggingFace transformers (imported only when an adapter is called):

- :func:`transformers_rule` and :func:`transformers_rule_with_uniforms`:
  ``transformers.generation.utils._speculative_sampling`` (the rule of
  assisted generation) as the batched protocol of ``check_rule`` and the
  forced-uniform protocol of ``check_rule_exact``;
- :class:`CausalLM`: a transformers causal LM as ``model(idx (1, L)) ->
  logits (1, L, V)``, the model interface of ``check_generator``;
- :func:`assisted_generate`: ``target.generate(..., assistant_model=draft)``
  as ``check_generator``'s ``generate``.

Exponential-race samplers (gpt-fast, vLLM draw ``argmax(probs / E)`` with
``E`` i.i.d. Exponential(1)): :func:`exponential_race` is that draw and
:func:`inverse_cdf` its with-uniforms stand-in, equal in law (the race's
winner is ``i`` with probability ``probs_i / sum(probs)``).

Code written against ``model(ids).logits`` and torch's global generator:

- :func:`forced_uniforms`: while active, ``torch.rand_like`` and
  ``torch.multinomial`` draw the forced ``u`` and ``v``, so a rule that
  draws its own uniforms runs under ``check_rule_exact``;
- :func:`from_logits_loop` and :func:`from_logits_step`: a decoding loop
  ``loop(target, draft, ids, n_new, k, temperature)``, or one round of it
  ``step(target, draft, ids, k, temperature)``, as ``check_generator``'s
  ``generate``;
- :func:`from_model_pruner`: ``prune_model(model, sparsity)``, which prunes
  an ``nn.Module``'s linear layers in place, as ``check_pruner``'s
  ``prune(weights, sparsity) -> masks``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from types import SimpleNamespace
from unittest import mock

import torch
from torch import nn

from aftertrain.checks.speculative import sequential

__all__ = [
    "CausalLM",
    "assisted_generate",
    "exponential_race",
    "forced_uniforms",
    "from_logits_loop",
    "from_logits_step",
    "from_model_pruner",
    "inverse_cdf",
    "transformers_rule",
    "transformers_rule_with_uniforms",
]


def _check_probs(probs: object, name: str = "probs") -> torch.Tensor:
    """``probs``, a 2-D floating-point tensor of finite weights >= 0 with a
    positive sum per row; else ValueError naming the argument and the row."""
    if (
        not isinstance(probs, torch.Tensor)
        or probs.dim() != 2
        or not probs.is_floating_point()
        or probs.shape[1] == 0
    ):
        raise ValueError(
            f"{name} must be a 2-D floating-point tensor (N, V), V >= 1, got "
            f"{type(probs).__name__}"
            f"{tuple(probs.shape) if isinstance(probs, torch.Tensor) else ''}"
        )
    bad = ~torch.isfinite(probs).all(-1) | (probs < 0).any(-1) | ~(probs.double().sum(-1) > 0)
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        raise ValueError(
            f"{name} must hold finite weights >= 0 with a positive sum in every "
            f"row, got row {row}: {probs[row, :8].tolist()}"
            f"{'...' if probs.shape[1] > 8 else ''}"
        )
    return probs


def inverse_cdf(probs: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The first index ``i`` with ``cumsum(probs)_i > v * sum(probs)`` per
    row: ``probs`` (N, V) >= 0 with a positive sum, ``v`` (N,) in [0, 1);
    int64 (N,). Accumulated in float64; never a cell of zero mass. Other
    inputs (a row of zeros, a negative weight, NaN, ``v`` outside [0, 1))
    raise ValueError."""
    _check_probs(probs)
    if not isinstance(v, torch.Tensor) or v.shape != probs.shape[:1] or not bool(((v >= 0) & (v < 1)).all()):
        raise ValueError(
            f"v must be a tensor of shape ({probs.shape[0]},) with every value in "
            f"[0, 1), got {v if not isinstance(v, torch.Tensor) else v[:8].tolist()}"
        )
    cdf = probs.double().cumsum(-1)
    total = cdf[:, -1:]
    x = torch.minimum(v.double().unsqueeze(-1) * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, x, right=True).squeeze(-1)


def exponential_race(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """``argmax_i probs_i / E_i`` per row, ``E_i`` i.i.d. Exponential(1)
    (from ``generator``, else torch's global one): index ``i`` wins with
    probability ``probs_i / sum(probs)``, the law of :func:`inverse_cdf`.
    ``probs`` (N, V): finite, >= 0, a positive sum per row (else ValueError)."""
    _check_probs(probs)
    e = torch.empty_like(probs, dtype=torch.float64).exponential_(generator=generator)
    return torch.argmax(probs.double() / e, dim=-1)


def _speculative_sampling():
    from transformers.generation.utils import _speculative_sampling as rule

    return rule


def _hf_round(p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor) -> tuple[int, int]:
    """One round of transformers' rule: it takes logits, so it gets ``log p``
    and ``log q`` in the dtype handed (its softmax gives p and q back)."""
    k = drafts.shape[0]
    tokens, n = _speculative_sampling()(drafts[None], q.log()[None], k, p.log()[None])
    return int(n), int(tokens[0, -1])


def transformers_rule():
    """transformers' ``_speculative_sampling`` as ``rule(p, q, drafts) ->
    (accepted, token)`` (one call per round, through
    :func:`aftertrain.checks.speculative.sequential`)."""
    rule = sequential(_hf_round)
    rule.__name__ = "transformers _speculative_sampling"
    return rule


@contextmanager
def forced_uniforms(u: torch.Tensor, v: torch.Tensor):
    """While active, ``torch.rand_like`` returns ``u`` and
    ``torch.multinomial`` first validates its input with the real one (so it
    raises where torch would), then draws by :func:`inverse_cdf` at ``v``.

    A batched rule ``rule(p, q, drafts)`` that draws its acceptance uniforms
    as one ``torch.rand_like(x)`` with ``x`` of ``u``'s shape (N, k) and its
    token as ``torch.multinomial(r, 1)`` with ``r`` (N, V) runs under
    ``check_rule_exact`` as ``rule_u(p, q, drafts, u, v)``, whose body is
    ``with forced_uniforms(u, v): return rule(p, q, drafts)``
    (docs/checks.md, "A rule that draws its own uniforms")."""
    real_multinomial = torch.multinomial

    def rand_like(x, *args, **kwargs):
        return u.to(x.dtype).reshape(x.shape)

    def multinomial(probs, num_samples, *args, **kwargs):
        real_multinomial(probs, num_samples)
        return inverse_cdf(probs.reshape(-1, probs.shape[-1]), v.reshape(-1)).reshape(*probs.shape[:-1], 1)

    with (
        mock.patch.object(torch, "rand_like", rand_like),
        mock.patch.object(torch, "multinomial", multinomial),
    ):
        yield


def _hf_round_u(p, q, drafts, u, v):
    with forced_uniforms(u, v):
        return _hf_round(p, q, drafts)


def transformers_rule_with_uniforms():
    """transformers' rule as ``rule(p, q, drafts, u, v)`` for
    ``check_rule_exact``: ``torch.rand_like`` (its acceptance uniforms) and
    ``torch.multinomial`` (its draw) replaced by the forced u and v
    (:func:`forced_uniforms`) for the duration of each call."""
    rule = sequential(_hf_round_u)
    rule.__name__ = "transformers _speculative_sampling (forced uniforms)"
    # what HF compares: the softmax of the logits it is handed, in their dtype
    # (check_rule_exact searches its zero-residual probe with it)
    rule.renormalise = lambda r: r.log().softmax(-1)
    return rule


class CausalLM(nn.Module):
    """A transformers causal LM as ``model(idx (1, L)) -> logits (1, L, V)``
    (float64), the model interface of ``check_generator``; ``hf`` is the
    wrapped model, for :func:`assisted_generate`."""

    def __init__(self, hf_model: nn.Module) -> None:
        super().__init__()
        if not hasattr(hf_model, "generate"):
            raise ValueError(
                f"hf_model must be a transformers model with generate(), got {type(hf_model).__name__}"
            )
        self.hf = hf_model.eval()

    @torch.no_grad()
    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """The wrapped model's logits for ``idx`` (int64, (1, L)), as float64 (1, L, V); no
        gradient."""
        return self.hf(input_ids=idx).logits.double()


@torch.no_grad()
def assisted_generate(
    target: CausalLM,
    draft: CausalLM,
    prompt: torch.Tensor,
    n_new: int,
    k: int,
    temperature: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """``check_generator``'s protocol through transformers' assisted
    generation: ``target.hf.generate(prompt, assistant_model=draft.hf,
    max_new_tokens=min_new_tokens=n_new)`` with ``k`` assistant tokens per
    round (constant schedule), sampling at ``temperature`` (no top-k or
    top-p filter) or greedy at 0. transformers draws from torch's global
    generator; it is seeded from ``generator`` inside ``fork_rng``, so the
    caller's global state is left as it was."""
    for name, m in (("target", target), ("draft", draft)):
        if not isinstance(m, CausalLM):
            raise ValueError(
                f"{name} must be a CausalLM (aftertrain.checks.adapters), got {type(m).__name__}"
            )
    cfg = draft.hf.generation_config
    cfg.num_assistant_tokens, cfg.num_assistant_tokens_schedule = k, "constant"
    cfg.assistant_confidence_threshold = 0.0
    sample = (
        {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
        if temperature > 0
        else {"do_sample": False}
    )
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        # The mask is explicit: inferred from pad_token_id it would hide a
        # prompt token equal to it.
        out = target.hf.generate(
            prompt[None],
            attention_mask=torch.ones_like(prompt[None]),
            assistant_model=draft.hf,
            max_new_tokens=n_new,
            min_new_tokens=n_new,
            pad_token_id=0,
            **sample,
        )
    return out[0, prompt.shape[0] :].long()


class _LogitsOf:
    """``model`` answering as a transformers model does: ``wrapped(ids)`` or
    ``wrapped(input_ids=ids)`` gives an output whose ``.logits`` is
    ``model(ids)``."""

    def __init__(self, model: Callable) -> None:
        self.model = model

    def __call__(self, input_ids: torch.Tensor, **kwargs) -> SimpleNamespace:
        return SimpleNamespace(logits=self.model(input_ids))


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
