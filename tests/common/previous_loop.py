"""The generator as it was before the fast loop, kept as the tests' oracle.

One draft forward per drafted character through a Decoder (also for the
table drafts), the rule batched on tensors (``verify_unchecked``), one
``torch.rand`` call per drafted character and two per round for the rule.
The fast loop (:func:`aftertrain.speculative.speculative_generate`) draws
the same uniforms in the same order in one call per round, so with the same
generator both must emit the same text with the same statistics, bit for
bit: that equality carries every law test of the old loop over to the new
one. Not part of the product (an importable helper, not a test module).
"""

from __future__ import annotations

import torch

from aftertrain.lm.decoding import Decoder, probabilities
from aftertrain.speculative.generator import SpeculativeResult, prompt_tokens
from aftertrain.speculative.rule import inverse_cdf_sample, verify_unchecked


def draft_tokens(decoder, pending, k, temperature, generator):
    logits = decoder.feed(pending)[-1]
    drafts, qs = [], []
    for i in range(k):
        q = probabilities(logits, temperature)
        x = int(inverse_cdf_sample(q[None], torch.rand(1, dtype=torch.float64, generator=generator))[0])
        drafts.append(x)
        qs.append(q)
        if i < k - 1:
            logits = decoder.feed([x])[-1]
    return drafts, torch.stack(qs)


@torch.no_grad()
def previous_generate(target, draft, prompt, n_new, k, temperature=1.0, generator=None):
    V = target.config.vocab_size
    prompt_ids = prompt_tokens(prompt, V)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    tdec, ddec = Decoder(target, name="target"), Decoder(draft, name="draft")
    text = list(prompt_ids)
    if len(text) > 1:
        tdec.feed(text[:-1])
        ddec.feed(text[:-1])
    end = len(text) + n_new
    drafted = accepted = passes = draft_passes = 0
    used = []
    while len(text) < end:
        kk = min(k, end - len(text) - 1)
        if kk:
            drafts, q = draft_tokens(ddec, text[len(ddec) :], kk, temperature, generator)
            draft_passes += kk
        else:
            drafts, q = [], torch.zeros(0, V, dtype=torch.float64)
        logits = tdec.feed(text[len(tdec) :] + drafts)[-(kk + 1) :]
        p = probabilities(logits, temperature)
        n, token = verify_unchecked(p[None], q[None], torch.tensor([drafts], dtype=torch.long), generator)
        n, token = int(n[0]), int(token[0])
        passes += 1
        drafted += kk
        accepted += n
        used.append(logits[: n + 1])
        text += drafts[:n] + [token]
        for dec in (tdec, ddec):
            dec.truncate(min(len(dec), len(text) - 1))
    target_logits = torch.cat(used) if used else torch.zeros(0, V)
    return SpeculativeResult(
        torch.tensor(text, dtype=torch.long),
        len(prompt_ids),
        drafted,
        accepted,
        passes,
        draft_passes,
        target_logits,
    )
