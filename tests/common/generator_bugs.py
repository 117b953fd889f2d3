"""Deliberately broken decoding loops (never in src/) that
``check_generator`` must reject, following its protocol ``generate(target,
draft, prompt, n_new, k, temperature, generator) -> tokens``."""

from __future__ import annotations

import torch


def _dist(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature == 0:
        return torch.nn.functional.one_hot(torch.argmax(logits, -1), logits.shape[-1]).double()
    return torch.softmax(logits.double() / temperature, dim=-1)


@torch.no_grad()
def capped_generate(target, draft, prompt, n_new, k, temperature, generator):
    """Broken twice, as a speculative package's "capped" variant: it draws
    every acceptance of the vocabulary at once, ``bernoulli(min(1, p / q))``
    with the cap written ``where(p < q, p / q, q / q)``, which raises
    wherever ``q = 0`` (``q / q`` is NaN there: any temperature-0 draft, and
    the toys' q = 0 entries); and it builds the residual at drafted
    position ``i`` against the first position's ``q`` (``max(0, p_i -
    q_0)``), right at ``i = 0`` and wrong from ``k = 2``."""
    text = prompt.tolist()
    end = len(text) + n_new
    while len(text) < end:
        kk = min(k, end - len(text) - 1)
        drafts, qs = [], []
        for _ in range(kk):
            q = _dist(draft(torch.tensor([text + drafts]))[0, -1], temperature)
            drafts.append(int(torch.multinomial(q, 1, generator=generator)))
            qs.append(q)
        p = _dist(target(torch.tensor([text + drafts]))[0, -(kk + 1) :], temperature)
        accepted, token = 0, None
        for i, x in enumerate(drafts):
            cap = torch.where(p[i] < qs[i], p[i] / qs[i], qs[i] / qs[i])  # NaN where q = 0
            accept = torch.bernoulli(cap, generator=generator)
            if not accept[x]:
                residual = (p[i] - qs[0]).clamp(min=0)  # the bug: q_0, not q_i
                if residual.sum() <= 0:
                    residual = p[i]
                token = int(torch.multinomial(residual, 1, generator=generator))
                break
            accepted += 1
        if token is None:
            token = int(torch.multinomial(p[kk], 1, generator=generator))
        text += drafts[:accepted] + [token]
    return torch.tensor(text[len(prompt) :][:n_new], dtype=torch.long)
