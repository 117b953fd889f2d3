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

The last three live in :mod:`aftertrain.checks.model_adapters`, re-exported
here.
"""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import torch
from torch import nn

from aftertrain.checks.model_adapters import from_logits_loop, from_logits_step, from_model_pruner
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
