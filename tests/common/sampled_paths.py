"""Sampled paths replayed along stored ones (S4's acceptance table, Q9's texts).

A sampled character is a discrete function of float32 logits, which another
kernel path sums in another order; a uniform nearer its boundary than that
difference picks another character there, and the rest of a free rerun
differs. The claims tests compare a rerun with its stored path exactly and,
only where they differ, replay the stored path here: the replays below redo
a generation's arithmetic exactly (same Decoder feeds, same float64
distributions, same uniforms from the same seed, drawn in the same order)
but follow the stored path: at each decision they compute this machine's
choice, and where it differs from the stored one the decision must be a
near tie by :data:`aftertrain.core.tolerances.SAMPLED_LOGIT_DIFF`
(derivation there), else AssertionError names it. Without a stored path
they run free and return the path they took, which is the product's own
path (tests/claims check that bit for bit) and what --force-regen stores.

Two generators are replayed: plain sampling (:func:`aftertrain.lm.decoding.generate`:
``torch.multinomial``, which on CPU draws ``argmax_i p_i / E_i`` from
``E = empty_like(p).exponential_(1, generator)``) and speculative decoding
(:func:`aftertrain.speculative.speculative_generate`: a float64 uniform per
drafted character, then ``u`` (1, k) and ``v`` (1,) per round).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from aftertrain.core.tolerances import SAMPLED_FLOAT64_SLACK, SAMPLED_LOGIT_DIFF
from aftertrain.lm.decoding import Decoder, probabilities
from aftertrain.lm.text import decode, encode
from aftertrain.speculative.rule import inverse_cdf_sample


def log_bound(temperature: float) -> float:
    """How far apart two machines may put ln(a / b) of two probabilities: 4 d / T."""
    return 4 * SAMPLED_LOGIT_DIFF / temperature + SAMPLED_FLOAT64_SLACK


def relative_bound(temperature: float) -> float:
    """How far (relative) two machines may put one probability: expm1(2 d / T)."""
    return math.expm1(2 * SAMPLED_LOGIT_DIFF / temperature)


def _boundaries(dist: torch.Tensor, err: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    # C_j = cumsum(d)_j / S and how far each can move, b_j (cdf_reaches); None if unbounded
    d, e = dist.double(), err.double()
    S, A = float(d.sum()), float(e.sum())
    if A >= S:
        return None
    C = d.cumsum(0) / S
    return C, (e.cumsum(0) + C * A) / (S - A) + SAMPLED_FLOAT64_SLACK


def cdf_reaches(dist: torch.Tensor, err: torch.Tensor, v: float, index: int) -> bool:
    """Could :func:`inverse_cdf_sample` draw ``index`` from ``dist`` (V,) at
    uniform ``v`` if each cell moved by at most ``err`` (V,)?

    With S = sum(d), C_j = cumsum(d)_j / S and A = sum(err), a cell's
    boundary moves by at most b_j = (cumsum(err)_j + C_j A) / (S - A); the
    draw lands on ``index`` for some such move iff C_{index-1} - b_{index-1}
    <= v < C_index + b_index. When A >= S (a residual p - q that rounding can
    empty) any cell is reachable.
    """
    cb = _boundaries(dist, err)
    if cb is None:
        return True
    C, b = cb
    lower = 0.0 if index == 0 else float(C[index - 1] - b[index - 1])
    return lower <= v < float(C[index] + b[index])


def cdf_near(dist: torch.Tensor, err: torch.Tensor, v: float, index: int) -> bool:
    """Is the draw of ``index`` at ``v`` within the moves above of one of its cell's ends?"""
    cb = _boundaries(dist, err)
    if cb is None:
        return True
    C, b = cb
    return (index > 0 and v - float(C[index - 1]) <= float(b[index - 1])) or (
        index < len(C) - 1 and float(C[index]) - v <= float(b[index])
    )


@dataclass
class Replay:
    """One replayed path: its characters and what the replay saw on the way."""

    tokens: list[int]  # the generated characters (the stored ones when replaying)
    decisions: int = 0  # random decisions taken
    near: int = 0  # of those, within the cross-machine bound of their boundary
    excused: list[str] = field(default_factory=list)  # taken otherwise here, at a near tie

    @property
    def text(self) -> str:
        return decode(torch.tensor(self.tokens, dtype=torch.long))


def _differs(what: str, where: int, here, stored, margin: float, bound: float) -> str:
    return _differs_because(
        what, where, here, stored, f"margin {margin:.3g} against the cross-machine bound {bound:.3g}"
    )


def _differs_because(what: str, where: int, here, stored, why: str) -> str:
    return (
        f"{what} at generated character {where}: this machine takes {here!r}, "
        f"the stored path {stored!r}; {why}"
    )


# --- plain sampling (aftertrain.lm.decoding.generate) -------------------------------------


@torch.no_grad()
def replay_plain(
    model, prompt: str, n_new: int, temperature: float, seed: int, stored: str | None = None
) -> Replay:
    """Plain sampling's ``n_new`` characters after ``prompt``, free or along ``stored``."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for a replay, got {temperature!r}")
    want = None if stored is None else encode(stored).tolist()
    if want is not None and len(want) != n_new:
        raise ValueError(f"stored must hold n_new = {n_new} characters, got {len(want)}")
    g = torch.Generator().manual_seed(seed)
    dec = Decoder(model)
    logits = dec.feed(encode(prompt))[-1]
    out = Replay([])
    bound = log_bound(temperature)
    for t in range(n_new):
        p = probabilities(logits, temperature)
        score = (p / torch.empty_like(p).exponential_(1, generator=g)).log()
        here = int(score.argmax())
        top2 = score.topk(2).values
        out.decisions += 1
        out.near += float(top2[0] - top2[1]) <= bound
        x = here
        if want is not None and want[t] != here:
            margin = float(score[here] - score[want[t]])
            msg = _differs("sampled character", t + 1, decode([here]), decode([want[t]]), margin, bound)
            if margin > bound:
                raise AssertionError(msg)
            out.excused.append(msg)
            x = want[t]
        out.tokens.append(x)
        logits = dec.feed([x])[-1]
    return out


# --- speculative decoding (aftertrain.speculative.speculative_generate) ---------------------


@dataclass(frozen=True)
class SpecPath:
    """A speculative run's path: every drafted character in order, the
    accepted count of each round (one digit: k <= 9), the generated text."""

    drafts: str
    accepted: str
    text: str

    def counts(self) -> tuple[int, int, int]:
        """(drafted, accepted, target passes)."""
        return len(self.drafts), sum(int(c) for c in self.accepted), len(self.accepted)


@torch.no_grad()
def replay_speculative(
    target,
    draft,
    prompt: str,
    n_new: int,
    k: int,
    temperature: float,
    seed: int,
    stored: SpecPath | None = None,
) -> tuple[SpecPath, Replay]:
    """A speculative run, free or along ``stored``: (its path, what the replay saw)."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for a replay, got {temperature!r}")
    if not 1 <= k <= 9:
        raise ValueError(f"k must lie in [1, 9] (one digit per round), got {k!r}")
    s_drafts = None if stored is None else encode(stored.drafts).tolist()
    s_acc = None if stored is None else [int(c) for c in stored.accepted]
    s_text = None if stored is None else encode(stored.text).tolist()
    g = torch.Generator().manual_seed(seed)
    lb, eps = log_bound(temperature), relative_bound(temperature)
    prompt_ids = encode(prompt).tolist()
    tdec, ddec = Decoder(target, name="target"), Decoder(draft, name="draft")
    text = list(prompt_ids)
    if len(text) > 1:
        tdec.feed(text[:-1])
        ddec.feed(text[:-1])
    end = len(text) + n_new
    V = tdec.vocab_size
    drafted: list[int] = []
    accepted: list[int] = []
    out = Replay([])

    def draw(dist, err, v, what, stored_index):
        here = int(inverse_cdf_sample(dist[None], v)[0])
        out.decisions += 1
        out.near += cdf_near(dist, err, float(v[0]), here)
        if stored_index is None or stored_index == here:
            return here
        where = len(text) - len(prompt_ids) + 1
        if not cdf_reaches(dist, err, float(v[0]), stored_index):
            raise AssertionError(
                _differs_because(
                    what,
                    where,
                    decode([here]),
                    decode([stored_index]),
                    f"its uniform {float(v[0]):.6g} is farther from the stored cell than the cross-machine "
                    f"bound allows",
                )
            )
        out.excused.append(
            _differs_because(what, where, decode([here]), decode([stored_index]), "a near tie")
        )
        return stored_index

    rnd = 0
    while len(text) < end:
        if s_acc is not None and rnd >= len(s_acc):
            raise AssertionError(f"the stored path ends after {len(s_acc)} rounds; this run needs more")
        kk = min(k, end - len(text) - 1)
        drafts: list[int] = []
        qs = []
        if kk:
            logits = ddec.feed(text[len(ddec) :])[-1]
            for i in range(kk):
                q = probabilities(logits, temperature)
                v = torch.rand(1, dtype=torch.float64, generator=g)
                j = len(drafted) + len(drafts)
                want = None
                if s_drafts is not None:
                    if j >= len(s_drafts):
                        raise AssertionError(
                            f"the stored path drafts {len(s_drafts)} characters; this run drafts more"
                        )
                    want = s_drafts[j]
                x = draw(q, eps * q, v, "drafted character", want)
                drafts.append(x)
                qs.append(q)
                if i < kk - 1:
                    logits = ddec.feed([x])[-1]
        q = torch.stack(qs) if qs else torch.zeros(0, V, dtype=torch.float64)
        logits = tdec.feed(text[len(tdec) :] + drafts)[-(kk + 1) :]
        p = probabilities(logits, temperature)
        u = torch.rand(1, kk, dtype=torch.float64, generator=g)[0]
        v = torch.rand(1, dtype=torch.float64, generator=g)
        idx = torch.tensor(drafts, dtype=torch.long)
        px, qx = p[:kk].gather(1, idx[:, None])[:, 0], q.gather(1, idx[:, None])[:, 0]
        ok = (u * qx < px).tolist()
        n_here = next((i for i, a in enumerate(ok) if not a), kk)
        n = n_here if s_acc is None else s_acc[rnd]
        if n > kk:
            raise AssertionError(f"round {rnd + 1}: the stored path accepts {n} of {kk} drafts")
        for i in range(min(n + 1, kk)):  # the decisions the rule reads: n acceptances, one rejection
            out.decisions += 1
            gap = abs(math.log(float(u[i] * qx[i])) - math.log(float(px[i]))) if u[i] > 0 else math.inf
            out.near += gap <= lb
            if ok[i] != (i < n):
                msg = _differs(
                    f"acceptance of draft {i + 1} of round {rnd + 1}",
                    len(text) - len(prompt_ids) + i + 1,
                    ok[i],
                    i < n,
                    gap,
                    lb,
                )
                if gap > lb:
                    raise AssertionError(msg)
                out.excused.append(msg)
        p_n = p[n]
        q_n = q[n] if n < kk else torch.zeros_like(p_n)
        residual = (p_n - q_n).clamp_min(0)
        if float(residual.sum()) <= 0:
            residual = p_n
        want = None
        if s_text is not None:
            at = len(text) - len(prompt_ids) + n
            if at >= len(s_text):
                raise AssertionError(f"the stored text ends at {len(s_text)} characters; this run goes on")
            want = s_text[at]
        token = draw(residual, eps * (p_n + q_n), v, "drawn character", want)
        drafted += drafts
        accepted.append(n)
        text += drafts[:n] + [token]
        rnd += 1
        for dec in (tdec, ddec):
            dec.truncate(min(len(dec), len(text) - 1))
    path = SpecPath(decode(drafted), "".join(str(a) for a in accepted), decode(text[len(prompt_ids) :]))
    if stored is not None and path != stored:
        raise AssertionError(
            f"the replay along the stored path ends elsewhere: drafted "
            f"{path.counts()} against the stored {stored.counts()}"
        )
    out.tokens = text[len(prompt_ids) :]
    return path, out
