"""How check_generator (aftertrain.checks.generator_battery) calls a
decoding loop, where a correct loop passes either way: at one torch thread
(the caller's count restored), with a progress line within a joint law
every :data:`PROGRESS_EVERY_S` seconds (2 s: neither more nor less often,
on a fake clock), and through :func:`assert_generator` on the target and
draft it was given.

Why: the capability's own tests pass whether or not this is done, so
each test here is the one a broken variant fails (its mutant in
tools/mutants_generator_kit.py, docs/mutation.md "Capability campaigns")."""

from __future__ import annotations

import re
from types import SimpleNamespace

import torch

from aftertrain.checks import generator_battery
from aftertrain.checks.speculative import assert_generator, check_generator, toy_models


def _sampler(record=None):
    """A plain sampler of the target under check_generator's protocol (greedy
    at temperature 0); ``record(target, draft)`` is called on each call."""

    def generate(target, draft, prompt, n_new, k, temperature, generator):
        if record is not None:
            record(target, draft)
        text = prompt.clone()
        for _ in range(n_new):
            logits = target(text[None])[0, -1].double()
            if temperature == 0:
                nxt = logits.argmax().reshape(1)
            else:
                nxt = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator)
            text = torch.cat([text, nxt])
        return text[prompt.numel() :]

    return generate


SMALL = {"runs": 10, "ks": (1,), "temperatures": (1.0,), "greedy_tokens": 2}


def test_check_generator_calls_generate_at_one_thread_and_restores_the_count():
    threads: list[int] = []
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        check_generator(_sampler(lambda t, d: threads.append(torch.get_num_threads())), **SMALL)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert threads and set(threads) == {1}, threads


def test_a_progress_line_comes_every_two_seconds_within_a_joint_law(monkeypatch):
    """On a fake clock where each call takes 1 s: within each joint law of
    10 runs a line before runs 2, 4, 6 and 8 (every 2 s, not after each run)."""
    clock = [0.0]
    monkeypatch.setattr(generator_battery, "time", SimpleNamespace(perf_counter=lambda: clock[0]))

    def tick(target, draft):
        clock[0] += 1.0

    lines: list[str] = []
    check_generator(_sampler(tick), progress=lines.append, **SMALL)
    within = [int(m.group(1)) for line in lines if (m := re.search(r"(\d+)/10 runs", line))]
    laws = sum(", 10 runs, " in line for line in lines)  # each joint law's closing line
    assert generator_battery.PROGRESS_EVERY_S == 2.0
    assert laws >= 1 and within == [2, 4, 6, 8] * laws, lines


def test_assert_generator_runs_the_loop_on_the_target_and_draft_it_is_given():
    target, draft = toy_models(vocab_size=3)
    seen = set()
    assert assert_generator(_sampler(lambda t, d: seen.add((id(t), id(d)))), target, draft, **SMALL) is None
    assert seen == {(id(target), id(draft))}
