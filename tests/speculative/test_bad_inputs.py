"""Bad inputs to speculative decoding (the rule, the generator, the
experiments): each raises ValueError whose message names the argument and
what is allowed, before any work.

One row per (callable, keyword arguments, words the message must hold);
``Lazy`` arguments are built from the ``env`` fixture when the case runs.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from aftertrain.experiments import speculative as XS
from aftertrain.speculative import speculative_generate, verify, verify_batch, verify_with_uniforms
from tests.common.bad_inputs import Lazy, case_id, check_raises_naming
from tests.common.toys import ToyTable, toy_gpt

NAN, INF = math.nan, math.inf


@pytest.fixture(scope="module")
def env():
    nan_draft = toy_gpt(100, seed=2)
    with torch.no_grad():
        nan_draft.head.bias.fill_(NAN)
    return SimpleNamespace(
        target=toy_gpt(100, seed=1), draft=toy_gpt(100, seed=2), nan_draft=nan_draft, toy=ToyTable(4, seed=0)
    )


TARGET, DRAFT = Lazy(lambda e: e.target), Lazy(lambda e: e.draft)
G = Lazy(lambda e: torch.Generator())

# One valid round: V = 2, k = 1.
P = torch.tensor([[0.5, 0.5], [0.3, 0.7]], dtype=torch.float64)
Q = torch.tensor([[0.6, 0.4]], dtype=torch.float64)
X = torch.tensor([0])
ROUND = dict(p=P, q=Q, drafts=X)
BATCH = dict(p=P[None], q=Q[None], drafts=X[None])
UNIFORMS = dict(u=torch.tensor([[0.5]], dtype=torch.float64), v=torch.tensor([0.5], dtype=torch.float64))
RUN = dict(target=TARGET, draft=DRAFT, prompt=torch.tensor([1, 2]), n_new=5, k=2)


def with_(base: dict, **changes) -> dict:
    return {**base, **changes}


CASES = [
    # --- the rule
    (verify, with_(ROUND, p=P[0], generator=G), "p must be a 2-D tensor"),
    (verify, with_(ROUND, q=Q[None], generator=G), "q must be a 2-D tensor"),
    (verify, with_(ROUND, drafts=X[None], generator=G), "drafts must be a 1-D tensor"),
    (verify, with_(ROUND, p=P.clone().fill_(NAN), generator=G), "p must be finite"),
    (
        verify,
        with_(ROUND, q=torch.tensor([[INF, 0.0]], dtype=torch.float64), generator=G),
        "q must be finite",
    ),
    (
        verify,
        with_(ROUND, p=torch.tensor([[1.5, -0.5], [0.3, 0.7]], dtype=torch.float64), generator=G),
        "p must be >= 0",
    ),
    (verify, with_(ROUND, p=P * 1.1, generator=G), "every row of p must sum to 1"),
    (verify, with_(ROUND, drafts=torch.tensor([2]), generator=G), "drafts must lie in [0, 2)"),
    (verify, with_(ROUND, drafts=torch.tensor([0.0]), generator=G), "drafts must hold integer"),
    (
        verify,
        with_(ROUND, q=torch.tensor([[0.0, 1.0]], dtype=torch.float64), generator=G),
        "every drafted character must have q > 0",
    ),
    (verify, with_(ROUND, generator=None), "generator must be a torch.Generator"),
    (verify_batch, with_(BATCH, p=P, generator=G), "p must be a 3-D tensor"),
    (verify_batch, with_(BATCH, p=P[None, :1], generator=G), "p must have shape (N, k+1, V)"),
    (
        verify_batch,
        with_(BATCH, q=torch.ones(1, 1, 3, dtype=torch.float64) / 3, generator=G),
        "q must have shape (N, k, V)",
    ),
    (verify_with_uniforms, with_(BATCH, **with_(UNIFORMS, u=torch.ones(1, 1))), "u must lie in [0, 1)"),
    (
        verify_with_uniforms,
        with_(BATCH, **with_(UNIFORMS, u=torch.full((1, 1), NAN))),
        "u must lie in [0, 1)",
    ),
    (
        verify_with_uniforms,
        with_(BATCH, **with_(UNIFORMS, v=torch.zeros(2))),
        "v must be a tensor of shape (1,)",
    ),
    (verify_with_uniforms, with_(BATCH, **with_(UNIFORMS, u=[[0.5]])), "u must be a tensor of shape (1, 1)"),
    # --- the generator
    (speculative_generate, with_(RUN, draft=Lazy(lambda e: e.nan_draft)), "draft's logits must be finite"),
    (speculative_generate, with_(RUN, target=Lazy(lambda e: e.nan_draft)), "target's logits must be finite"),
    (speculative_generate, with_(RUN, target=torch.nn.Linear(2, 2)), "target must implement"),
    (speculative_generate, with_(RUN, draft="bigram"), "draft must implement"),
    (speculative_generate, with_(RUN, draft=Lazy(lambda e: e.toy)), "must share a vocabulary"),
    (speculative_generate, with_(RUN, prompt="caf\u00e9"), "outside the vocabulary"),
    (speculative_generate, with_(RUN, prompt=""), "prompt must hold at least one character"),
    (
        speculative_generate,
        with_(RUN, prompt=torch.tensor([1.0])),
        "prompt must be a string or a 1-D integer",
    ),
    (
        speculative_generate,
        with_(RUN, prompt=torch.tensor([True])),
        "prompt must be a string or a 1-D integer",
    ),
    (speculative_generate, with_(RUN, prompt=torch.tensor([0, 100])), "prompt indices must lie in [0, 100)"),
    (speculative_generate, with_(RUN, n_new=-1), "n_new must be an int in [0, "),
    (speculative_generate, with_(RUN, n_new=2.0), "n_new must be an int in [0, "),
    (speculative_generate, with_(RUN, k=0), "k must be an int >= 1"),
    (speculative_generate, with_(RUN, k=True), "k must be an int >= 1"),
    (speculative_generate, with_(RUN, temperature=-1.0), "temperature must be a finite number >= 0"),
    (speculative_generate, with_(RUN, temperature=NAN), "temperature must be a finite number >= 0"),
    (speculative_generate, with_(RUN, generator=3), "generator must be a torch.Generator"),
    (
        speculative_generate,
        with_(RUN, target=Lazy(lambda e: e.toy), draft=Lazy(lambda e: e.toy), prompt="ab"),
        "a string prompt needs the project vocabulary",
    ),
    # --- the experiments
    (XS.predicted_acceptance, dict(a1=1.5, k=2), "a1 must be a number in [0, 1]"),
    (XS.predicted_acceptance, dict(a1=NAN, k=2), "a1 must be a number in [0, 1]"),
    (XS.predicted_acceptance, dict(a1=0.5, k=0), "k must be an int >= 1"),
    (
        XS.first_token_samples,
        dict(target=TARGET, draft=DRAFT, context="ab", n=0, temperature=1.0, generator=G),
        "n must be an int >= 1",
    ),
    (
        XS.first_token_samples,
        dict(target=TARGET, draft=DRAFT, context="a" * 128, n=5, temperature=1.0, generator=G),
        "context must be shorter than the block size",
    ),
    (
        XS.first_token_samples,
        dict(target=TARGET, draft=DRAFT, context="ab", n=5, temperature=1.0, generator=None),
        "generator must be a torch.Generator",
    ),
    (
        XS.first_token_samples,
        dict(
            target=TARGET, draft=Lazy(lambda e: e.nan_draft), context="ab", n=5, temperature=1.0, generator=G
        ),
        "draft's logits must be finite",
    ),
    (XS.acceptance_table, dict(target=TARGET, drafts={}), "drafts must be a non-empty dict"),
    (
        XS.acceptance_table,
        dict(target=TARGET, drafts=Lazy(lambda e: {"d": e.draft}), ks=(0,)),
        "every k in ks must be an int >= 1",
    ),
    (
        XS.acceptance_table,
        dict(target=TARGET, drafts=Lazy(lambda e: {"d": e.draft}), n_new=0),
        "n_new must be an int >= 1",
    ),
    (
        XS.acceptance_table,
        dict(target=TARGET, drafts=Lazy(lambda e: {"toy": e.toy})),
        "drafts['toy'] must share the target's vocabulary",
    ),
    (
        XS.first_token_table,
        dict(target=TARGET, drafts=Lazy(lambda e: {"d": e.draft}), null_trials=0),
        "null_trials must be an int >= 1",
    ),
    (XS.plain_step, dict(target=object(), temperature=1.0), "target must implement"),
    (XS.draft_step, dict(draft=TARGET, temperature=-1.0), "temperature"),
    (XS.verify_step, dict(target=TARGET, k=0, temperature=1.0), "k must be an int in [1, "),
    # --- inputs that once failed silently or obscurely
    (
        speculative_generate,
        with_(RUN, n_new=10**12),
        "n_new must be an int in [0, 1,000,000], got 1000000000000",
    ),
    (
        XS.first_token_samples,
        dict(target=TARGET, draft=DRAFT, context="", n=10, temperature=1.0, generator=G),
        "context must hold at least one character",
    ),
    (
        XS.first_token_samples,
        dict(target=TARGET, draft=DRAFT, context="\u2603", n=10, temperature=1.0, generator=G),
        "context holds characters",
    ),
]


@pytest.mark.parametrize("fn, kwargs, words", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises_value_error_naming_the_argument(env, fn, kwargs, words):
    check_raises_naming(fn, kwargs, words, env)
