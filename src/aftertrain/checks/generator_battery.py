"""Whole-loop checks of a speculative generator (:func:`check_generator`) and
the toy models they run on."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from aftertrain import stats
from aftertrain.checks import rule_battery
from aftertrain.checks.generator_toys import ZERO_FRACTION, toy_models
from aftertrain.checks.report import Report, Row
from aftertrain.core.validation import check_int, is_int, is_real
from aftertrain.stats import ALPHA

#: The label of the joint laws run on the zero-probability toys.
ZERO_PROBES = " (toys with p = 0 and q = 0 entries)"
#: Seconds of runs between two progress lines within one joint law, so a
#: slow generator still shows it is alive (the command promises a line at
#: least every 5 s; one run of the toys takes milliseconds).
PROGRESS_EVERY_S = 2.0


def _probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.softmax(logits.double() / temperature, dim=-1)


@torch.no_grad()
def exact_prefix_law(target, prompt: torch.Tensor, length: int, temperature: float) -> np.ndarray:
    """P(first ``length`` generated tokens = s) for every s, in base-V order,
    by enumeration over whole-text forward passes of ``target``."""
    V = int(target(prompt[None]).shape[-1])
    law = np.zeros(V**length)
    for i, seq in enumerate(itertools.product(range(V), repeat=length)):
        text = torch.cat([prompt, torch.tensor(seq[:-1], dtype=torch.long)])
        probs = _probs(target(text[None])[0, len(prompt) - 1 :], temperature)
        law[i] = float(np.prod([float(probs[j, s]) for j, s in enumerate(seq)]))
    return law


@torch.no_grad()
def greedy(target, prompt: torch.Tensor, n_new: int) -> torch.Tensor:
    """Plain greedy decoding of ``target`` (argmax, first index on ties)."""
    text = prompt.clone()
    for _ in range(n_new):
        nxt = torch.argmax(target(text[None])[0, -1]).reshape(1)
        text = torch.cat([text, nxt])
    return text[len(prompt) :]


def _generated(report, case, generate, args, n_new):
    try:
        out = generate(*args)
    except Exception as exc:
        report.add(
            Row(case, "no exception", False, detail=f"generate raised {rule_battery.describe_exception(exc)}")
        )
        return None
    if not isinstance(out, torch.Tensor) or out.dtype != torch.int64 or tuple(out.shape) != (n_new,):
        what = f"{out.dtype} {tuple(out.shape)}" if isinstance(out, torch.Tensor) else type(out).__name__
        report.add(
            Row(case, "outputs", False, detail=f"generate must return an int64 tensor ({n_new},), got {what}")
        )
        return None
    return out


def _check_arguments(generate, runs, ks, length, n_new, temperatures, greedy_tokens, alpha, seed) -> None:
    """ValueError naming the first argument of :func:`check_generator` that
    is not what it must be."""
    if not callable(generate):
        raise ValueError(f"generate must be callable, got {type(generate).__name__}")
    for label, x, lo in (("runs", runs, 10), ("length", length, 1), ("greedy_tokens", greedy_tokens, 1)):
        check_int(label, x, least=lo)
    if (
        isinstance(ks, (str, bytes))
        or not isinstance(ks, Sequence)
        or not ks
        or any(not is_int(k) or k < 1 for k in ks)
    ):
        raise ValueError(f"ks must be a non-empty sequence of ints >= 1, got {ks!r}")
    if n_new is not None:
        check_int("n_new", n_new, least=length)
        if max(ks) > n_new - 1:
            raise ValueError(
                f"ks must be at most n_new - 1 = {n_new - 1} (a round drafts at most "
                f"the tokens left to generate but one, the token the target "
                f"adds), got k = {max(ks)}; raise n_new to {max(ks) + 1} or more"
            )
    if (
        isinstance(temperatures, (str, bytes))
        or not isinstance(temperatures, Sequence)
        or not temperatures
        or any(not is_real(t) or not 0 < t < float("inf") for t in temperatures)
    ):
        raise ValueError(
            f"temperatures must be a non-empty sequence of finite numbers > 0, got {temperatures!r}"
        )
    rule_battery.check_common(1, alpha, seed)


def _models_and_prompt(target, draft, prompt) -> tuple[nn.Module, nn.Module, torch.Tensor, int]:
    if target is None and draft is None:
        target, draft = toy_models()
    elif target is None or draft is None:
        raise ValueError("target and draft must be given together (or neither, for the toys)")
    prompt_t = torch.as_tensor(list(prompt), dtype=torch.long)
    if prompt_t.dim() != 1 or prompt_t.numel() < 1:
        raise ValueError(f"prompt must be a non-empty sequence of token ids, got {prompt!r}")
    V = int(target(torch.zeros(1, 1, dtype=torch.long)).shape[-1])  # token 0 exists
    if int(prompt_t.min()) < 0 or int(prompt_t.max()) >= V:
        raise ValueError(f"prompt ids must lie in [0, {V})")
    return target, draft, prompt_t, V


def _joint_law(
    report: Report,
    generate,
    target,
    draft,
    prompt: torch.Tensor,
    *,
    k: int,
    temperature: float,
    runs: int,
    length: int,
    n_new: int,
    alpha: float,
    generator: torch.Generator,
    V: int,
    say: Callable[[str], None],
    label: str = "",
) -> None:
    """Rows "support" and "chi-square" of the first ``length`` tokens of
    ``runs`` calls against the target's exact joint law (the case named
    with ``label`` after it); ``say`` gets a line at least every
    :data:`PROGRESS_EVERY_S` seconds of runs."""
    law = exact_prefix_law(target, prompt, length, temperature)
    case = f"joint law T={temperature:g} k={k} n_new={n_new}{label}"
    weights = V ** np.arange(length - 1, -1, -1)
    codes = []
    start = last = time.perf_counter()
    for i in range(runs):
        if time.perf_counter() - last >= PROGRESS_EVERY_S:
            last = time.perf_counter()
            say(f"check_generator: joint law T={temperature:g} k={k}, {i}/{runs} runs, {last - start:.1f} s")
        out = _generated(
            report, case, generate, (target, draft, prompt.clone(), n_new, k, temperature, generator), n_new
        )
        if out is None:
            return
        first = out[:length].numpy()
        if first.min() < 0 or first.max() >= V:
            report.add(Row(case, "outputs", False, detail=f"token out of [0, {V}): {first}"))
            return
        codes.append(int(first @ weights))
    _judge_joint(report, case, np.array(codes), law, length, alpha)


def _judge_joint(
    report: Report, case: str, codes: np.ndarray, law: np.ndarray, length: int, alpha: float
) -> None:
    """Rows "support" and "chi-square" of the prefixes ``codes`` (each of the
    first ``length`` tokens as one base-V number) against their exact law."""
    runs = codes.size
    impossible = int((law[codes] == 0).sum())
    report.add(
        Row(
            case,
            "support",
            impossible == 0,
            n=runs,
            value=float(impossible),
            detail=f"{impossible} of {runs} prefixes have target probability 0",
        )
    )
    fit = stats.chisquare_gof(codes, law)
    report.add(
        Row(
            case,
            "chi-square",
            fit.pvalue >= alpha,
            statistic=fit.statistic,
            dof=fit.dof,
            p_value=fit.pvalue,
            n=runs,
            bound=alpha,
            detail=f"joint law of the first {length} tokens differs from the "
            f"target's: chi2 {fit.statistic:.1f} on {fit.dof} dof, "
            f"p-value {fit.pvalue:.3g} < {alpha:.3g}",
        )
    )


def _greedy(
    report: Report, generate, target, draft, prompt: torch.Tensor, k: int, tokens: int, seed: int
) -> None:
    case = f"greedy k={k} prompt={prompt.tolist()}"
    want = greedy(target, prompt, tokens)
    got = _generated(
        report,
        case,
        generate,
        (target, draft, prompt.clone(), tokens, k, 0.0, torch.Generator().manual_seed(seed)),
        tokens,
    )
    if got is not None:
        diff = (got != want).nonzero()
        report.add(
            Row(
                case,
                "greedy",
                diff.numel() == 0,
                n=tokens,
                detail=(
                    f"differs from plain greedy decoding at token {int(diff[0])}" if diff.numel() else ""
                ),
            )
        )


def check_generator(
    generate: Callable,
    target: nn.Module | None = None,
    draft: nn.Module | None = None,
    *,
    runs: int = 600,
    ks: Sequence[int] = (1, 2),
    length: int = 3,
    n_new: int | None = None,
    temperatures: Sequence[float] = (0.3, 1.0),
    prompt: Sequence[int] = (0,),
    greedy_tokens: int = 40,
    alpha: float = ALPHA,
    seed: int = 0,
    name: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Judge a whole speculative decoding loop on small models.

    Protocol: ``generate(target, draft, prompt, n_new, k, temperature,
    generator) -> tokens``, where ``prompt`` is a 1-D int64 tensor, ``n_new``
    and ``k`` ints (tokens to generate, tokens drafted per round),
    ``temperature`` a float >= 0 (0 is greedy) and ``generator`` a seeded
    ``torch.Generator`` for every random draw; it returns the ``n_new``
    generated tokens as a 1-D int64 tensor. ``target`` and ``draft`` are
    :class:`~aftertrain.checks.generator_toys.ToyTable` models by default
    (:func:`~aftertrain.checks.generator_toys.toy_models`, full support):
    ``model(idx (1, L)) -> logits (1, L, V)``, plus aftertrain's Decoder
    interface.

    Checks, for every k in ``ks``:

    - joint law, at every temperature of ``temperatures`` (0.3: far from 1,
      where a temperature applied to one model only shows; 1: where the
      draft is spread, so a draft sampled from a filtered q shows): over
      ``runs`` calls generating ``n_new`` tokens each (default ``max(length,
      k + 1)``, so the first round drafts k tokens; a k above ``n_new - 1``
      is a ValueError), the first ``length`` generated tokens (the horizon)
      follow the target's exact joint law at that temperature, enumerated
      from the target's logits (V**length cells; Pearson chi-square, cells
      pooled to expected >= 5);
    - zero probes (the default toys only): the joint law again at the
      largest temperature for every k, on toys with 20% of their entries at
      probability 0 (:data:`ZERO_PROBES` in the case name): a loop that
      emits a p = 0 token, or crashes on q = 0, fails these cases apart from
      the law on the full-support toys;
    - greedy: at temperature 0, ``greedy_tokens`` tokens after the prompt
      (and after a 5-token prompt) equal plain greedy decoding of the
      target (argmax, first index on ties) token for token;
    - outputs: int64, shape (n_new,), no exception (a failure line names
      the exception, its message and the innermost frame of the user's code).

    Error rate: the chi-square tests run at ``alpha`` over the number of
    joint laws each (Bonferroni), so a correct generator fails
    with probability <= alpha; the greedy and output checks are exact.
    ``progress`` is called with one line after each joint law and greedy
    run, and within a joint law every :data:`PROGRESS_EVERY_S` seconds.
    ``generate`` runs with one torch thread (restored afterwards): a call
    on the toys is tiny tensor operations, which several threads on a busy
    machine slow many times over.

    Long: this docstring is the protocol a generator is judged by and the
    list of its checks (the kit's reference for this check); the body is
    one loop over the joint laws and one over the greedy runs.
    """
    _check_arguments(generate, runs, ks, length, n_new, temperatures, greedy_tokens, alpha, seed)
    say = rule_battery.check_progress(progress)
    toys = target is None and draft is None
    target, draft, prompt_t, V = _models_and_prompt(target, draft, prompt)
    # (target, draft, temperature, its index in the seed, k, label) of every joint law
    laws = [(target, draft, t, ti, k, "") for (ti, t), k in itertools.product(enumerate(temperatures), ks)]
    if toys:
        zeros = toy_models(V, zero_fraction=ZERO_FRACTION)
        laws += [(*zeros, max(temperatures), len(temperatures), k, ZERO_PROBES) for k in ks]
    report = Report(
        name
        or f"check_generator({getattr(generate, '__name__', 'generate')}, "
        f"runs={runs}, ks={tuple(ks)}, T={tuple(temperatures)}, seed={seed})"
    )
    per_test = alpha / len(laws)
    with rule_battery.one_torch_thread():
        for law_target, law_draft, temperature, ti, k, label in laws:
            start = time.perf_counter()
            _joint_law(
                report,
                generate,
                law_target,
                law_draft,
                prompt_t,
                k=k,
                temperature=temperature,
                runs=runs,
                length=length,
                n_new=n_new or max(length, k + 1),
                alpha=per_test,
                generator=torch.Generator().manual_seed(seed * 1009 + 31 * ti + k),
                V=V,
                say=say,
                label=label,
            )
            say(
                f"check_generator: joint law T={temperature:g} k={k}{label}, {runs} runs, "
                f"{time.perf_counter() - start:.1f} s"
            )
        for k in ks:
            start = time.perf_counter()
            for pr in (prompt_t, torch.arange(5) % V):
                _greedy(report, generate, target, draft, pr, k, greedy_tokens, seed)
            say(f"check_generator: greedy k={k}, {time.perf_counter() - start:.1f} s")
    return report
