"""Speculative decoding's verification rule (claim S1), as pure functions.

A cheap draft model proposes ``k`` characters ``x_1 .. x_k`` from its
distributions ``q_1 .. q_k``; the target scores all of them plus one more
position in a single cached pass, giving ``p_1 .. p_{k+1}``. Position ``i``
is accepted when ``u_i < p_i(x_i) / q_i(x_i)`` (``u_i`` uniform on [0, 1));
at the first rejection the next character is drawn from
``normalize(max(0, p_i - q_i))`` and the rest of the draft is discarded; if
all ``k`` are accepted a bonus character is drawn from ``p_{k+1}``.

Why the law is exactly the target's: at one position the emitted character
``y`` has probability ``q(y) min(1, p(y)/q(y)) + (1 - sum_x min(p(x), q(x)))
* max(0, p(y) - q(y)) / sum_x max(0, p(x) - q(x))``; both sums equal
``1 - TV(p, q)``, so this is ``min(p(y), q(y)) + max(0, p(y) - q(y)) = p(y)``.
Given acceptance, the next position repeats the argument with the target's
distribution for the longer text, so every emitted character follows the
target's next-character law for the text before it.

p and q are :func:`aftertrain.lm.decoding.probabilities` of the two models'
logits (the distributions plain sampling uses; one-hot at temperature 0).

Randomness. Every draw is an inverse-CDF draw from a float64 uniform of the
caller's ``torch.Generator``; :func:`verify_with_uniforms` is the rule as a
pure function of those uniforms, so tests can replay it exactly.
:func:`verify_unchecked` is the unchecked path for the generator and the experiments
inside this package, which build p and q themselves.
"""

from __future__ import annotations

import torch

from aftertrain.core.tolerances import SUM_TOLERANCE
from aftertrain.lm.decoding import check_torch_generator

__all__ = ["verify", "verify_batch", "verify_with_uniforms"]


# --- draws and the rule -------------------------------------------------------


def inverse_cdf_sample(dist: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF draws: row ``n`` gives the index ``i`` with
    ``cdf[i-1] <= x < cdf[i]``, ``x = v[n] * cdf[-1]``.

    ``dist`` (N, V) is non-negative with a positive sum per row (it need not
    be normalised: scaling ``v`` by the total is the normalisation). A cell of
    zero mass is an empty interval and is never drawn; ``x`` is kept strictly
    below the total (should ``v * total`` round up to it), so the draw always
    lands on a cell with mass.
    """
    cdf = dist.cumsum(-1)  # (N, V)
    total = cdf[:, -1:]
    x = torch.minimum(v.unsqueeze(-1) * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, x, right=True).squeeze(-1)


def _rule(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, u: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The verification rule on a batch, as a function of its uniforms.

    Shapes: p (N, k+1, V), q (N, k, V), drafts (N, k), u (N, k), v (N,).
    Returns (accepted (N,), token (N,)).
    """
    N, k = drafts.shape
    px = p[:, :k].gather(2, drafts.unsqueeze(2)).squeeze(2)  # (N, k)
    qx = q.gather(2, drafts.unsqueeze(2)).squeeze(2)  # (N, k)
    # u < p/q written without the division: no 0/0, and strict, so a
    # character with p(x) = 0 is never accepted, even at u = 0.
    ok = u * qx < px
    accepted = ok.long().cumprod(dim=1).sum(dim=1)  # leading acceptances
    rows = torch.arange(N)
    p_n = p[rows, accepted]  # (N, V): the target at the first rejection, or the bonus
    # q padded with a zero row at position k+1: the bonus residual is p itself.
    q_n = torch.cat([q, q.new_zeros(N, 1, q.shape[-1])], dim=1)[rows, accepted]
    residual = (p_n - q_n).clamp_min(0)
    # All zero only if p <= q everywhere, i.e. p == q up to rounding. Then the
    # rejection itself had probability sum max(0, q - p) = sum max(0, p - q)
    # = 0 up to float error (it happens only when u * q(x) rounds to p(x)),
    # so whatever is drawn here moves the law by at most that float error;
    # drawing from p keeps every draw inside p's support.
    empty = (residual.sum(-1) <= 0).unsqueeze(-1)
    residual = torch.where(empty, p_n, residual)
    return accepted, inverse_cdf_sample(residual, v)


def _draw_uniforms(n: int, k: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    # The documented draw order: all acceptance uniforms u (n, k), then v (n,).
    u = torch.rand(n, k, dtype=torch.float64, generator=generator)
    v = torch.rand(n, dtype=torch.float64, generator=generator)
    return u, v


def verify_unchecked(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rule on a batch without checking its arguments (the callers have):
    draws the uniforms in the documented order (all u (n, k), then v (n,))
    from ``generator`` and returns ``(accepted, token)`` per row, as
    :func:`verify` does."""
    u, v = _draw_uniforms(drafts.shape[0], drafts.shape[1], generator)
    return _rule(p, q, drafts, u, v)


# --- the public rule ------------------------------------------------------------


def verify_with_uniforms(
    p: torch.Tensor,
    q: torch.Tensor,
    drafts: torch.Tensor,
    u: torch.Tensor,
    v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The verification rule (S1) on a batch of N independent rounds, given its uniforms.

    Args:
        p: target distributions (N, k+1, V): row ``i`` for the position of
            draft ``i``, row ``k`` for the bonus position.
        q: draft distributions (N, k, V) the drafts were sampled from.
        drafts: drafted characters (N, k), each with ``q > 0``.
        u: acceptance uniforms (N, k) in [0, 1).
        v: uniforms (N,) in [0, 1) for the inverse-CDF draw of the next character.

    Returns:
        ``(accepted, token)``, each (N,) long: ``accepted`` = number of leading
        drafts with ``u_i * q_i(x_i) < p_i(x_i)``; ``token`` is drawn from
        ``normalize(max(0, p_a - q_a))`` at the first rejection ``a``, or from
        ``p_{k+1}`` when all ``k`` are accepted. ``token`` always lies in the
        support of the distribution it is drawn from (never NaN).

    Note:
        p = [0.5, 0.5], q = [1, 0], draft 0, u = 0.6: 0.6 * 1 >= 0.5, rejected;
        the residual is [0, 0.5], so the token is 1 whatever v is.
    """
    p, q, drafts = _check_rule_inputs(p, q, drafts)
    N, k = drafts.shape
    for name, x, shape in (("u", u, (N, k)), ("v", v, (N,))):
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape:
            raise ValueError(f"{name} must be a tensor of shape {shape}")
        if not bool(((x >= 0) & (x < 1)).all()):
            raise ValueError(f"{name} must lie in [0, 1)")
    return _rule(p, q, drafts, u.double(), v.double())


def verify_batch(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`verify_with_uniforms` with uniforms drawn from ``generator``
    (first ``u`` as ``rand(N, k)``, then ``v`` as ``rand(N)``, float64)."""
    p, q, drafts = _check_rule_inputs(p, q, drafts)
    check_torch_generator(generator)
    return verify_unchecked(p, q, drafts, generator)


def verify(
    p: torch.Tensor, q: torch.Tensor, drafts: torch.Tensor, generator: torch.Generator
) -> tuple[int, int]:
    """One round of the verification rule (S1): ``(accepted, next token)``.

    Args:
        p: target distributions (k+1, V) at the k drafted positions and the next.
        q: draft distributions (k, V) the drafts were sampled from.
        drafts: the k drafted characters (k,), each with ``q > 0``; k >= 0.
        generator: the source of the uniforms (drawn as by :func:`verify_batch`
            with N = 1).

    The round emits ``drafts[:accepted] + [token]``; each emitted character
    follows ``p`` at its position (module docstring).
    """
    if not isinstance(p, torch.Tensor) or p.dim() != 2:
        raise ValueError("p must be a 2-D tensor (k+1, V)")
    if not isinstance(q, torch.Tensor) or q.dim() != 2:
        raise ValueError("q must be a 2-D tensor (k, V)")
    if not isinstance(drafts, torch.Tensor) or drafts.dim() != 1:
        raise ValueError("drafts must be a 1-D tensor (k,)")
    accepted, token = verify_batch(p[None], q[None], drafts[None], generator)
    return int(accepted[0]), int(token[0])


def _check_rule_inputs(p, q, drafts):
    for name, x in (("p", p), ("q", q)):
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            raise ValueError(
                f"{name} must be a 3-D tensor, got {type(x).__name__}"
                f"{'' if not isinstance(x, torch.Tensor) else tuple(x.shape)}"
            )
    if not isinstance(drafts, torch.Tensor) or drafts.dim() != 2:
        raise ValueError("drafts must be a 2-D integer tensor (N, k)")
    N, k = drafts.shape
    V = p.shape[-1]
    if tuple(p.shape) != (N, k + 1, V) or V < 1:
        raise ValueError(f"p must have shape (N, k+1, V) = ({N}, {k + 1}, V), got {tuple(p.shape)}")
    if tuple(q.shape) != (N, k, V):
        raise ValueError(f"q must have shape (N, k, V) = ({N}, {k}, {V}), got {tuple(q.shape)}")
    if drafts.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8):
        raise ValueError(f"drafts must hold integer indices, got dtype {drafts.dtype}")
    drafts = drafts.long()
    if drafts.numel() and (drafts.min() < 0 or drafts.max() >= V):
        raise ValueError(f"drafts must lie in [0, {V})")
    p, q = p.double(), q.double()
    for name, x in (("p", p), ("q", q)):
        if x.numel() == 0:
            continue
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        if bool((x < 0).any()):
            raise ValueError(f"{name} must be >= 0 everywhere")
        worst = float((x.sum(-1) - 1).abs().max())
        if worst > SUM_TOLERANCE:
            raise ValueError(
                f"every row of {name} must sum to 1 within {SUM_TOLERANCE:g}; worst row is off by {worst:.3g}"
            )
    if k and bool((q.gather(2, drafts.unsqueeze(2)) <= 0).any()):
        raise ValueError("every drafted character must have q > 0 (it was drawn from q)")
    return p, q, drafts
