# ruff: noqa: E501  (a mutant's snippet is quoted whole, as it stands in src/)
"""The cost account in place's bug set (``tools/mutate.py --set account``):
a speculative loop's parts timed by a clock read around each of them inside
the whole loop, and the timing of a side by the seconds it reports.

Written from ``src/`` alone (``timing/paired.py``'s :class:`Timed` and
:class:`Pairs`, ``experiments/round_replays.py``'s ``in_place`` and
``_timed_loop``, ``experiments/round_account.py``'s ``Method.IN_PLACE``,
its dispatch and ``part_share``) and ``docs/speculative.md``'s cost
account, before any of their test files was opened, by a helper who did
not write those tests. One module tag, ``account-inplace``:

- ``Timed``: its validation loosened (a negative ``seconds`` let through).
- ``Pairs``: the side's time from the wall instead of the seconds it
  reports, not divided by ``calls``, the refusal of a side returning
  :class:`Timed` in only some calls dropped, the walls not truncated
  with the pairs.
- ``_timed_loop``: the brackets (a part's seconds without its rollback,
  the verification counting the rule, the final rollbacks to the prompt not
  counted), the parts swapped in the spent index, the spent seconds reset
  each round, ``torch.no_grad`` dropped (equivalent).
- ``in_place``: ``REST`` timing the whole loop instead of the bookkeeping,
  the clock not forwarded to the timed loops.
- ``round_account``: the clock not forwarded to ``in_place``,
  ``Method.IN_PLACE`` dispatched to ``part_replays``, the ``method``
  validation dropped, ``part_share`` swapping the ends for ``IN_PLACE`` as
  for a knockout.

Same format as tools/mutants.py (:class:`mutants.Mutant`); ids ``acct-NN``;
``python tools/mutate.py --set account --list`` locates every snippet.
"""

from __future__ import annotations

from mutants import Mutant

M = Mutant
TAG = "account-inplace"

MUTANTS: tuple[Mutant, ...] = (
    # --- timing/paired.py: Timed -----------------------------------------------------------------
    M(
        "acct-01",
        TAG,
        "Timed's validation loosened: a negative seconds is let through",
        "and math.isfinite(self.seconds) and self.seconds >= 0):",
        "and math.isfinite(self.seconds)):",
    ),
    # --- timing/paired.py: Pairs ----------------------------------------------------------------
    M(
        "acct-02",
        TAG,
        "_time takes the calls' wall time even for a side returning Timed (its reported seconds ignored)",
        "return (math.fsum(own) if own else wall) / self.calls, wall",
        "return wall / self.calls, wall",
    ),
    M(
        "acct-03",
        TAG,
        "_time does not divide a Timed side's reported seconds by calls (the clock's time still per call)",
        "return (math.fsum(own) if own else wall) / self.calls, wall",
        "return (math.fsum(own) if own else wall / self.calls), wall",
    ),
    M(
        "acct-04",
        TAG,
        "the refusal of a side returning Timed in only some calls dropped (checks too many, never too few)",
        "if own and len(own) != self.calls:",
        "if own and len(own) > self.calls:",
    ),
    M(
        "acct-05",
        TAG,
        "truncate keeps the cut look's walls (the budget counts pairs that were dropped)",
        "del self.base[n:], self.cand[n:], self.walls[n:]",
        "del self.base[n:], self.cand[n:]",
    ),
    # --- experiments/round_replays.py: _timed_loop ------------------------------------------------
    M(
        "acct-06",
        TAG,
        "the draft's seconds miss its rollback (only its steps bracketed)",
        "spent[0] += (t1 - t0) + (t6 - t5)",
        "spent[0] += t1 - t0",
    ),
    M(
        "acct-07",
        TAG,
        "the verification's seconds miss the target's rollback",
        "spent[1] += (t2 - t1) + (t5 - t4)",
        "spent[1] += t2 - t1",
    ),
    M(
        "acct-08",
        TAG,
        "the verification's bracket runs on to the rule's end (the rule counted in the verification too)",
        "spent[1] += (t2 - t1) + (t5 - t4)",
        "spent[1] += (t3 - t1) + (t5 - t4)",
    ),
    M(
        "acct-09",
        TAG,
        "the final rollbacks to the prompt not counted (neither the target's nor the draft's)",
        "        spent[0] += t2 - t1\n        spent[1] += t1 - t0\n",
        "",
    ),
    M(
        "acct-10",
        TAG,
        "parts swapped in the spent index: draft reports the verification's seconds and vice versa",
        "which = RUN_PARTS.index(part)",
        "which = (Part.VERIFY, Part.DRAFT, Part.RULE).index(part)",
    ),
    M(
        "acct-11",
        TAG,
        "the spent seconds reset every round (only the last round's part reported, plus the final rollbacks)",
        "        spent = [0.0, 0.0, 0.0]  # draft, verify, rule: RUN_PARTS' order\n"
        "        with Uniforms(generator) as source:\n"
        "            while len(text) < end:\n",
        "        with Uniforms(generator) as source:\n"
        "            while len(text) < end:\n"
        "                spent = [0.0, 0.0, 0.0]  # draft, verify, rule: RUN_PARTS' order\n",
    ),
    M(
        "acct-12",
        TAG,
        "torch.no_grad dropped from the timed loop",
        "    @torch.no_grad()\n    def loop() -> Timed:",
        "    def loop() -> Timed:",
        equivalent=(
            "every tensor the loop makes comes out of Decoder.feed, itself under torch.no_grad "
            "(lm/decoding.py), so no tensor requires grad and no graph is built; the table "
            "drafter makes no tensor; the round rule works on those logits. Same values, "
            "same caches, same Timed result"
        ),
    ),
    # --- experiments/round_replays.py: in_place ---------------------------------------------------
    M(
        "acct-13",
        TAG,
        "in_place's REST times the whole loop (every part run) instead of the bookkeeping alone",
        "**{p: _timed_loop(replay, n_new, k, p, clock) for p in RUN_PARTS},\n"
        "        Part.REST: _loop(replay, rounds, n_new, k, frozenset()),",
        "**{p: _timed_loop(replay, n_new, k, p, clock) for p in RUN_PARTS},\n"
        "        Part.REST: _loop(replay, rounds, n_new, k, frozenset(RUN_PARTS)),",
    ),
    M(
        "acct-14",
        TAG,
        "in_place's clock not forwarded: the timed loops read time.perf_counter whatever clock is given",
        "**{p: _timed_loop(replay, n_new, k, p, clock) for p in RUN_PARTS},",
        "**{p: _timed_loop(replay, n_new, k, p, time.perf_counter) for p in RUN_PARTS},",
    ),
    # --- experiments/round_account.py -------------------------------------------------------------
    M(
        "acct-15",
        TAG,
        "account_decisions does not pass its clock to in_place (only to the decision)",
        "replays = in_place(target, draft, k, n_new, 1.0, **clocked)",
        "replays = in_place(target, draft, k, n_new, 1.0)",
    ),
    M(
        "acct-16",
        TAG,
        "Method.IN_PLACE dispatched to part_replays (its branch forgotten)",
        "        if method is Method.IN_PLACE:\n"
        "            replays = in_place(target, draft, k, n_new, 1.0, **clocked)\n"
        "        else:\n"
        "            replays = (part_replays if method is Method.ALONE else knockouts)(target, draft, k, n_new, 1.0)\n",
        "        replays = (knockouts if method is Method.KNOCKOUT else part_replays)(target, draft, k, n_new, 1.0)\n",
    ),
    M(
        "acct-17",
        TAG,
        "account_decisions' method validation dropped (a string such as 'in-place' runs as a knockout)",
        "if not isinstance(method, Method):",
        "if method is None:",
        file="experiments/round_account.py",
    ),
    M(
        "acct-18",
        TAG,
        "part_share swaps the ends for IN_PLACE as for a knockout (1 - ratio)",
        "if method is Method.KNOCKOUT and part in RUN_PARTS:",
        "if method is not Method.ALONE and part in RUN_PARTS:",
    ),
)
