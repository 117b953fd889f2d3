"""The cost account of a speculative call replays the loop's own work, part
by part, and its figures are the decision's ratios summed.

The replays (:func:`aftertrain.experiments.round_replays.part_replays`) are
checked against the loop itself: each returns what the loop made (the
drafts, the target's logits bit for bit, the rule's outcome, the text), and
feeds each model the same positions in the same passes (counted by a forward
hook), so the account times the loop's work and no other; a replay that
rolls its draft back one character too far (same text, one more position a
round) is caught. The account's figures are checked on a fake clock against
the medians of the recorded ratios, computed here. The runs start from the
model's own prompt (:func:`aftertrain.experiments.speculative.prompt_for`).
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
import torch

from aftertrain.experiments import round_account as RA
from aftertrain.experiments import speculative as XS
from aftertrain.experiments.speedup import SPEEDUP_CHARS
from aftertrain.experiments.speedup_tables import SpeedupRow
from aftertrain.lm.hf import HFModel
from aftertrain.speculative import drafts as D
from aftertrain.speculative.drafters import ModelDrafter
from aftertrain.timing import Timed
from tests.common.drafts import draft_of, timed_run
from tests.common.toys import toy_gpt

CELLS = [(kind, k) for kind in D.DraftKind for k in (2, 8)]


def _fed(run, *models) -> list[list[int]]:
    """The positions each of ``models`` is fed, pass by pass, while ``run()`` runs."""
    fed: list[list[int]] = [[] for _ in models]
    hooks = [
        m.register_forward_hook(lambda mod, args, out, i=i: fed[i].append(int(args[0].shape[-1])))
        for i, m in enumerate(models)
    ]
    try:
        run()
    finally:
        for h in hooks:
            h.remove()
    return fed


@pytest.mark.parametrize("kind, k", CELLS, ids=[f"{kind.value} k={k}" for kind, k in CELLS])
def test_each_part_replays_what_the_loop_made(aftertrain_model, speculative_drafts, kind, k):
    """Against the public generator with the timed run's seed: the drafts'
    count and accepted prefixes, the rule's outcomes, the target's logits
    the rule used (torch.equal) and the generated text; twice, so each
    replay leaves its decoders at the prefill."""
    draft = draft_of(speculative_drafts, kind)
    want = timed_run(aftertrain_model, draft, k)
    parts = RA.part_replays(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    for _ in range(2):
        drafts, logits = parts[RA.Part.DRAFT](), parts[RA.Part.VERIFY]()
        outcomes, text = parts[RA.Part.RULE](), parts[RA.Part.REST]()
        assert text == want.generated.tolist()
        assert sum(map(len, drafts)) == want.drafted and sum(n for n, _ in outcomes) == want.accepted
        assert len(drafts) == len(logits) == len(outcomes) == want.target_passes
        emitted = [x for d, (n, token) in zip(drafts, outcomes, strict=True) for x in (*d[:n], token)]
        assert emitted == text
        used = torch.cat([rows[: n + 1] for rows, (n, _) in zip(logits, outcomes, strict=True)])
        assert torch.equal(used, want.target_logits)


@pytest.mark.parametrize("kind", list(D.DraftKind), ids=lambda kind: kind.value)
def test_each_knocked_out_loop_makes_the_loops_text(aftertrain_model, speculative_drafts, kind):
    """The loop with a part's results looked up, and with none run, makes
    the timed loop's characters, call after call (k = 4; the replays'
    rounds at k = 2 and 8 are checked above)."""
    draft, k = draft_of(speculative_drafts, kind), 4
    want = XS.speculative_decoding(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)()
    loops = RA.knockouts(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    assert set(loops) == set(RA.Part)
    for _ in range(2):
        assert {p: run() for p, run in loops.items()} == dict.fromkeys(RA.Part, want)


@pytest.mark.parametrize("kind", [D.DraftKind.INT8, D.DraftKind.GPT], ids=lambda kind: kind.value)
def test_the_model_parts_feed_the_positions_the_loop_feeds(aftertrain_model, speculative_drafts, kind):
    """The draft replay feeds the draft, and the verification replay the
    target, the positions the loop feeds them, pass by pass (the draft's
    two characters after a fully accepted round included); the rule and the
    bookkeeping feed neither. Knocked out of the loop, a model part feeds
    its model nothing and the other's as the loop does."""
    draft, k = draft_of(speculative_drafts, kind), 4
    loop = XS.speculative_decoding(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    parts = RA.part_replays(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    target_fed, draft_fed = _fed(loop, aftertrain_model, draft)
    assert 2 in draft_fed, "no fully accepted round: the two-character feed is not exercised"
    assert _fed(parts[RA.Part.DRAFT], aftertrain_model, draft) == [[], draft_fed]
    assert _fed(parts[RA.Part.VERIFY], aftertrain_model, draft) == [target_fed, []]
    for part in (RA.Part.RULE, RA.Part.REST):
        assert _fed(parts[part], aftertrain_model, draft) == [[], []]
    without = RA.knockouts(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    assert _fed(without[RA.Part.DRAFT], aftertrain_model, draft) == [target_fed, []]
    assert _fed(without[RA.Part.VERIFY], aftertrain_model, draft) == [[], draft_fed]
    assert _fed(without[RA.Part.RULE], aftertrain_model, draft) == [target_fed, draft_fed]
    assert _fed(without[RA.Part.REST], aftertrain_model, draft) == [[], []]


class _Ticks:
    """A clock that moves one second at each read: a bracketed part's seconds
    count the reads around it."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return float(self.reads)


@pytest.mark.parametrize("kind", list(D.DraftKind), ids=lambda kind: kind.value)
def test_each_in_place_loop_makes_the_loops_text_and_brackets_each_part(
    aftertrain_model, speculative_drafts, kind
):
    """In place, every part's loop makes the timed loop's characters, call
    after call, and reports a part's seconds as the clock moved across its
    brackets: on a clock moving 1 s a read, over R rounds the draft's steps
    and rollbacks (2 a round, and the rollback to the prompt) and the
    target's pass and rollback (the same) take 2R + 1 s, the rule R s; R
    is the loop's target passes (the public generator's count). The rest is
    the bookkeeping replayed alone (not Timed)."""
    draft, k = draft_of(speculative_drafts, kind), 4
    want = timed_run(aftertrain_model, draft, k)
    rounds = want.target_passes
    loops = RA.in_place(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0, clock=_Ticks())
    assert set(loops) == set(RA.Part)
    seconds = {RA.Part.DRAFT: 2 * rounds + 1, RA.Part.VERIFY: 2 * rounds + 1, RA.Part.RULE: rounds}
    for _ in range(2):
        for part in RA.RUN_PARTS:
            timed = loops[part]()
            assert isinstance(timed, Timed) and timed.result == want.generated.tolist()
            assert timed.seconds == seconds[part], part
        assert loops[RA.Part.REST]() == want.generated.tolist()


@pytest.mark.parametrize("kind", [D.DraftKind.BIGRAM, D.DraftKind.INT8], ids=lambda kind: kind.value)
def test_each_in_place_part_is_charged_its_own_models_forwards(aftertrain_model, speculative_drafts, kind):
    """On the one-second-a-read clock, each target forward also moves it
    1,000 s and each draft forward 1,000,000 s: the target's forwards land
    in the verification's seconds alone and the draft's in the drafting's
    (a table draft runs none), so a part reported under another's name is
    caught."""
    draft, k = draft_of(speculative_drafts, kind), 4
    clock = _Ticks()
    forwards = {"target": 0, "draft": 0}

    def costs(name: str, seconds: int):
        def hook(module, args, out) -> None:
            forwards[name] += 1
            clock.reads += seconds

        return hook

    loops = RA.in_place(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0, clock=clock)
    hooks = [aftertrain_model.register_forward_hook(costs("target", 1_000))]
    if kind is not D.DraftKind.BIGRAM:
        hooks.append(draft.register_forward_hook(costs("draft", 1_000_000)))
    try:
        seconds = {}
        for part in RA.RUN_PARTS:
            forwards.update(target=0, draft=0)
            seconds[part] = loops[part]().seconds
    finally:
        for h in hooks:
            h.remove()
    rounds = seconds[RA.Part.RULE]  # one read either side of each round's rule (the test above)
    assert forwards["target"] >= rounds > 0 and (forwards["draft"] > 0) == (kind is not D.DraftKind.BIGRAM)
    assert seconds[RA.Part.VERIFY] == 2 * rounds + 1 + 1_000 * forwards["target"]
    assert seconds[RA.Part.DRAFT] == 2 * rounds + 1 + 1_000_000 * forwards["draft"]


@pytest.mark.parametrize("kind", [D.DraftKind.INT8, D.DraftKind.GPT], ids=lambda kind: kind.value)
def test_the_in_place_loops_feed_the_positions_the_loop_feeds(aftertrain_model, speculative_drafts, kind):
    """Each part's in-place loop is the whole loop: it feeds the target and
    the draft the positions the timed loop feeds them, pass by pass."""
    draft, k = draft_of(speculative_drafts, kind), 4
    loop = XS.speculative_decoding(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    fed = _fed(loop, aftertrain_model, draft)
    loops = RA.in_place(aftertrain_model, draft, k, SPEEDUP_CHARS, 1.0)
    for part in RA.RUN_PARTS:
        assert _fed(loops[part], aftertrain_model, draft) == fed, part
    assert _fed(loops[RA.Part.REST], aftertrain_model, draft) == [[], []]


@pytest.mark.teeth
def test_the_position_check_catches_a_draft_replay_that_rolls_back_too_far(
    aftertrain_model, speculative_drafts, monkeypatch
):
    """A drafter that keeps one character less after a rejection still
    drafts the same text (it feeds the character again) but feeds the
    draft one more position that round: the draft replay's positions
    differ from the loop's. The draft needs rejections (a rollback to cut
    back): our draft GPT rejects often; on a transformers model a tiny
    random GPT over its vocabulary does (its quantized copies, and a user's
    --aftertrain-draft, may accept every draft of the 30 tokens)."""
    if isinstance(aftertrain_model, HFModel):
        draft = toy_gpt(aftertrain_model.config.vocab_size, seed=2)
    else:
        draft = speculative_drafts[D.DraftKind.GPT]
    loop = XS.speculative_decoding(aftertrain_model, draft, 4, SPEEDUP_CHARS, 1.0)
    draft_fed = _fed(loop, draft)[0]

    def too_far(self, text):
        self.decoder.truncate(max(0, min(len(self.decoder), len(text) - 2)))

    monkeypatch.setattr(ModelDrafter, "rollback", too_far)
    parts = RA.part_replays(aftertrain_model, draft, 4, SPEEDUP_CHARS, 1.0)
    assert _fed(parts[RA.Part.DRAFT], draft)[0] != draft_fed


class _Clock:
    """A fake clock the fake sides advance: each call takes its seconds
    times a jitter of +-4% from a seeded generator."""

    def __init__(self) -> None:
        self.now, self.rng = 0.0, np.random.default_rng(11)

    def __call__(self) -> float:
        return self.now

    def side(self, seconds: float):
        def run() -> None:
            self.now += seconds * (1.0 + 0.04 * self.rng.uniform(-1.0, 1.0))

        return run

    def in_place(self, seconds: float):
        """A side taking the loop's time and reporting ``seconds`` of it as its part's."""

        def run() -> Timed:
            jitter = 1.0 + 0.04 * self.rng.uniform(-1.0, 1.0)
            self.now += LOOP_S * jitter
            return Timed(seconds * jitter)

        return run


LOOP_S = 0.010
#: Parts costing the loop's time: 0.62 + 0.34 + 0.03 + 0.01 = 1.
PARTS_S = {RA.Part.DRAFT: 0.0062, RA.Part.VERIFY: 0.0034, RA.Part.RULE: 0.0003, RA.Part.REST: 0.0001}


def _account(monkeypatch, parts_s=PARTS_S, method=RA.Method.ALONE):
    """account_decisions for one cell on toy models, every side a fake cost
    (for ``Method.KNOCKOUT`` a model part's side is the loop less the part)."""
    from aftertrain.lm.text import VOCAB_SIZE

    clock = _Clock()
    target, draft = toy_gpt(VOCAB_SIZE, seed=1), toy_gpt(VOCAB_SIZE, seed=2)
    monkeypatch.setattr(XS, "speculative_decoding", lambda t, d, k, n, temp: clock.side(LOOP_S))
    monkeypatch.setattr(
        RA, "part_replays", lambda t, d, k, n, temp: {p: clock.side(s) for p, s in parts_s.items()}
    )
    without = {p: LOOP_S - s if p in RA.RUN_PARTS else s for p, s in parts_s.items()}
    monkeypatch.setattr(
        RA, "knockouts", lambda t, d, k, n, temp: {p: clock.side(s) for p, s in without.items()}
    )
    monkeypatch.setattr(
        RA,
        "in_place",
        lambda t, d, k, n, temp, clock: {
            p: clock.in_place(s) if p in RA.RUN_PARTS else clock.side(s) for p, s in parts_s.items()
        },
    )
    return RA.account_decisions(
        target, {("8-bit", 2): draft}, budget_s=1e4, alpha=1e-6, method=method, clock=clock
    )


TAKEN_AS_RATIOS = [RA.Method.ALONE, RA.Method.IN_PLACE]


@pytest.mark.parametrize("method", TAKEN_AS_RATIOS, ids=lambda m: m.value)
def test_an_account_of_the_loops_whole_time_is_explained_and_sums_the_medians(monkeypatch, method):
    """Parts costing the loop's time (alone: sides taking the part's time;
    in place: sides taking the loop's time and reporting the part's, as
    :class:`Timed`): holds; the row's shares are the medians of the recorded
    ratios, its figure their sum and its interval the sums of the ends,
    each computed here from the decision's pairs."""
    decision = _account(monkeypatch, method=method)[("8-bit", 2)]
    assert decision.verdict == "holds"
    row = RA.account_row(decision, "8-bit", 2, method)
    timings = {p: decision.timings[RA.part_key("8-bit", 2, p)] for p in RA.Part}
    for p, t in timings.items():
        assert row.shares[p] == statistics.median(t.ratios)
        assert row.shares[p] == pytest.approx(PARTS_S[p] / LOOP_S, rel=0.05)
    assert row.accounted == pytest.approx(
        sum(statistics.median(t.ratios) for t in timings.values()), rel=1e-12
    )
    assert row.low == pytest.approx(sum(t.ci_low for t in timings.values()), rel=1e-12)
    assert row.high == pytest.approx(sum(t.ci_high for t in timings.values()), rel=1e-12)
    assert row.low <= row.accounted <= row.high and row.explained
    assert row.pairs == len(timings[RA.Part.DRAFT].ratios) and row.looks == decision.looks


def test_a_knocked_out_account_takes_each_model_parts_share_as_what_the_loop_saves(monkeypatch):
    """Sides costing the loop less each model part: a part's share is 1 -
    the median of without / loop, its interval 1 - the interval's ends
    swapped; the rest's its own ratio; computed here from the pairs."""
    decision = _account(monkeypatch, method=RA.Method.KNOCKOUT)[("8-bit", 2)]
    row = RA.account_row(decision, "8-bit", 2, RA.Method.KNOCKOUT)
    timings = {p: decision.timings[RA.part_key("8-bit", 2, p)] for p in RA.Part}
    ends = []
    for p, t in timings.items():
        m = statistics.median(t.ratios)
        share = (1 - m, 1 - t.ci_high, 1 - t.ci_low) if p in RA.RUN_PARTS else (m, t.ci_low, t.ci_high)
        assert row.shares[p] == pytest.approx(share[0], abs=1e-12)
        assert row.shares[p] == pytest.approx(PARTS_S[p] / LOOP_S, abs=0.03)
        ends.append(share)
    assert (row.accounted, row.low, row.high) == pytest.approx(
        tuple(map(sum, zip(*ends, strict=True))), abs=1e-12
    )
    assert decision.verdict == "holds" and row.explained and row.method is RA.Method.KNOCKOUT


@pytest.mark.teeth
@pytest.mark.parametrize("method", TAKEN_AS_RATIOS, ids=lambda m: m.value)
@pytest.mark.parametrize(
    "missing, verdict",
    [(0.25, "broken"), (0.07, None)],
    ids=["a quarter of the loop unaccounted", "7% unaccounted"],
)
def test_explained_check_catches_an_account_that_misses_part_of_the_loop(
    monkeypatch, missing, verdict, method
):
    """The loop costing ``missing`` of its time beyond its parts (a part the
    account does not replay, or work outside every bracket): a quarter is
    ``broken`` (interval wholly below 0.90); 7% leaves the median below
    0.95, so the row is not explained whatever the decision says."""
    parts = {**PARTS_S, RA.Part.DRAFT: PARTS_S[RA.Part.DRAFT] - missing * LOOP_S}
    decision = _account(monkeypatch, parts, method)[("8-bit", 2)]
    row = RA.account_row(decision, "8-bit", 2, method)
    assert row.accounted == pytest.approx(1.0 - missing, abs=0.03)
    assert not row.explained
    if verdict:
        assert decision.verdict == verdict and row.high < RA.EXPLAINED[0]


def _speedup_row(**changes) -> SpeedupRow:
    base = dict(
        draft="8-bit",
        k=2,
        chars_per_pass=3.0,
        speedup=0.8,
        speedup_min=0.7,
        speedup_max=0.9,
        predicted=1.0,
        predicted_vk=0.95,
        c=1.0,
        v_k=1.1,
    )
    return SpeedupRow(**{**base, **changes})


def _row(shares, draft="8-bit", k=2) -> RA.AccountRow:
    total = math.fsum(shares.values())
    return RA.AccountRow(draft, k, RA.Method.ALONE, shares, total, total - 0.02, total + 0.02, 1, 28)


def test_round_costs_put_each_part_per_target_pass_in_plain_steps():
    """The docstring's worked case: cpp 3 and speedup 0.8 make a pass cost
    3.75 plain characters' time; shares 0.6 / 0.36 / 0.04 are 2.25 / 1.35 /
    0.15 of it, against the formula's 2 (k c) and 1: the verification
    exceeds its charge the most; parts summing to 0.9 leave 0.375 of a pass
    unaccounted, the largest excess then."""
    shares = {RA.Part.DRAFT: 0.6, RA.Part.VERIFY: 0.35, RA.Part.RULE: 0.01, RA.Part.REST: 0.04}
    cost = RA.round_costs(_row(shares), _speedup_row())
    assert (cost.drafting, cost.verification, cost.bookkeeping) == pytest.approx((2.25, 1.35, 0.15))
    assert cost.charged_drafting == 2.0
    assert cost.unaccounted == pytest.approx(0.0, abs=1e-12)
    assert cost.excess == pytest.approx(
        {"verification": 0.35, "drafting": 0.25, "bookkeeping": 0.15, "loop beyond its parts": 0.0}
    )
    assert cost.overrates == "verification"
    dearer_drafts = {**shares, RA.Part.DRAFT: 0.7, RA.Part.VERIFY: 0.25}
    assert RA.round_costs(_row(dearer_drafts), _speedup_row()).overrates == "drafting"
    # a tenth of the loop outside the parts: 0.1 x 3.75 = 0.375 per pass, the largest excess
    missing = {**shares, RA.Part.DRAFT: 0.5, RA.Part.VERIFY: 0.35}
    cost = RA.round_costs(_row(missing), _speedup_row())
    assert cost.unaccounted == pytest.approx(0.375) and cost.overrates == "loop beyond its parts"


def test_round_costs_need_the_same_cell():
    shares = dict.fromkeys(RA.Part, 0.25)
    with pytest.raises(ValueError, match="same cell"):
        RA.round_costs(_row(shares, k=4), _speedup_row())


@pytest.mark.parametrize("method", list(RA.Method), ids=lambda m: m.value)
def test_each_method_times_its_own_replays_with_the_decisions_clock(monkeypatch, method):
    """``account_decisions`` builds the sides of ``method`` and no other:
    ``part_replays`` alone, ``knockouts`` knocked out, ``in_place`` in place
    (handed the decision's clock, so its brackets read the clock the budget
    reads)."""
    from aftertrain.lm.text import VOCAB_SIZE

    called = []
    clock = _Clock()
    monkeypatch.setattr(XS, "speculative_decoding", lambda t, d, k, n, temp: clock.side(LOOP_S))

    def factory(name):
        def make(t, d, k, n, temp, **kw):
            called.append((name, kw))
            return {p: clock.side(s) for p, s in PARTS_S.items()}

        return make

    for name in ("part_replays", "knockouts", "in_place"):
        monkeypatch.setattr(RA, name, factory(name))
    target, draft = toy_gpt(VOCAB_SIZE, seed=1), toy_gpt(VOCAB_SIZE, seed=2)
    RA.account_decisions(target, {("8-bit", 2): draft}, budget_s=1e4, method=method, clock=clock)
    want = {RA.Method.ALONE: "part_replays", RA.Method.KNOCKOUT: "knockouts", RA.Method.IN_PLACE: "in_place"}
    assert [name for name, _ in called] == [want[method]]
    if method is RA.Method.IN_PLACE:
        assert called[0][1]["clock"] is clock


@pytest.mark.parametrize("method", ["in-place", None, "ALONE"])
def test_a_method_that_is_not_a_method_is_refused(method):
    from aftertrain.lm.text import VOCAB_SIZE

    target, draft = toy_gpt(VOCAB_SIZE, seed=1), toy_gpt(VOCAB_SIZE, seed=2)
    with pytest.raises(ValueError, match=r"method must be one of \['ALONE', 'KNOCKOUT', 'IN_PLACE'\]"):
        RA.account_decisions(target, {("8-bit", 2): draft}, budget_s=1.0, method=method)


def test_account_row_names_a_missing_ratio(monkeypatch):
    decision = _account(monkeypatch)[("8-bit", 2)]
    with pytest.raises(ValueError, match="lacks the ratios"):
        RA.account_row(decision, "4-bit", 2)
