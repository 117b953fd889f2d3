"""Every documented limit of every ``aftertrain`` command, given exactly,
one under and one over (aftertrain.cli, aftertrain.cli.check): a value at a
limit is accepted and reaches the command as given; one step past it is one
line on standard error naming the value, exit status 2, before any long
work. "One step" is 1 for a whole number and the next float64 for a real
one (``math.nextafter``), so a ``<`` written for ``<=`` shows."""

from __future__ import annotations

import math
import sys

import pytest

from aftertrain import cli
from aftertrain.cli.options import MAX_SEED
from aftertrain.cli.sample import MAX_SAMPLE_LENGTH
from aftertrain.cli.train import MAX_STEPS, MAX_THREADS


def _parse(argv: list[str], capsys) -> tuple[object, str]:
    """(the parsed namespace or the exit status, standard error)."""
    try:
        args = cli.build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code, capsys.readouterr().err
    return args, capsys.readouterr().err


def _below(x: float) -> str:
    return repr(math.nextafter(x, -math.inf))


def _above(x: float) -> str:
    return repr(math.nextafter(x, math.inf))


# (command, flag, attribute, lowest allowed, highest allowed): the whole-number options
WHOLE = [
    ("train", "--steps", "steps", 1, MAX_STEPS),
    ("train", "--seed", "seed", 0, MAX_SEED),
    ("train", "--threads", "threads", 1, MAX_THREADS),
    ("train", "--eval-every", "eval_every", 1, MAX_STEPS),
    ("train", "--stop-at", "stop_at", 1, MAX_STEPS),
    ("train", "--warmup", "warmup", 0, MAX_STEPS),
    ("sample", "--length", "length", 0, MAX_SAMPLE_LENGTH),
    ("sample", "--seed", "seed", 0, MAX_SEED),
]


def test_the_documented_limits_are_these():
    """The limits the help and the README state (sample --length at most
    2000, threads at most 256, a seed of 63 bits, a million steps)."""
    assert (MAX_SAMPLE_LENGTH, MAX_THREADS, MAX_SEED, MAX_STEPS) == (2000, 256, 2**63 - 1, 1_000_000)


@pytest.mark.parametrize("command, flag, attr, low, high", WHOLE, ids=[f"{c}{f}" for c, f, *_ in WHOLE])
def test_a_whole_number_option_takes_its_limits_and_refuses_one_past(command, flag, attr, low, high, capsys):
    """low, low + 1, high - 1 and high parse to themselves; low - 1 and
    high + 1 are one line naming the flag, the range and the value."""
    for value in (low, low + 1, high - 1, high):
        args, err = _parse([command, flag, str(value)], capsys)
        assert getattr(args, attr) == value and err == ""
    for value in (low - 1, high + 1):
        status, err = _parse([command, flag, str(value)], capsys)
        assert status == 2
        assert f"must be from {low} to {high}, got {value}" in err
        assert flag in err and len(err.strip().splitlines()) == 1, err


# (command, flag, attribute, the limit, whether the limit itself is allowed, which side is allowed)
REAL = [
    ("train", "--lr", "lr", 0.0, False, "above"),
    ("train", "--min-lr", "min_lr", 0.0, True, "above"),
    ("train", "--weight-decay", "weight_decay", 0.0, True, "above"),
    ("train", "--dropout", "dropout", 0.0, True, "above"),
    ("train", "--dropout", "dropout", 1.0, False, "below"),
    ("train", "--grad-clip", "grad_clip", 0.0, False, "above"),
    ("train", "--stop-below", "stop_below", 0.0, False, "above"),
    ("train", "--stop-rising-to", "stop_rising_to", 0.0, False, "above"),
    ("sample", "--temperature", "temperature", 0.0, True, "above"),
]


@pytest.mark.parametrize(
    "command, flag, attr, limit, inclusive, side", REAL, ids=[f"{c}{f}-{lim:g}" for c, f, _, lim, *_ in REAL]
)
def test_a_real_option_takes_its_limit_as_documented_and_one_ulp_inside(
    command, flag, attr, limit, inclusive, side, capsys
):
    """One ulp inside the limit parses; the limit itself as documented
    (``>= 0`` allowed, ``> 0`` or ``< 1`` not); one ulp outside is refused."""
    inside, outside = (_above(limit), _below(limit)) if side == "above" else (_below(limit), _above(limit))
    args, _ = _parse([command, f"{flag}={inside}"], capsys)  # "=": -5e-324 is not an option
    assert getattr(args, attr) == float(inside)
    for value, allowed in ((repr(limit), inclusive), (outside, False)):
        got, err = _parse([command, f"{flag}={value}"], capsys)
        if allowed:
            assert getattr(got, attr) == limit, value
        else:
            assert got == 2 and value in err and len(err.strip().splitlines()) == 1, (value, err)


def test_the_largest_finite_temperature_is_allowed_and_inf_is_not(capsys):
    """--temperature has no upper limit but finiteness."""
    args, _ = _parse(["sample", "--temperature", repr(sys.float_info.max)], capsys)
    assert args.temperature == sys.float_info.max
    assert _parse(["sample", "--temperature", "inf"], capsys)[0] == 2


class Reached(Exception):
    """The command got past its checks to the long work."""


@pytest.fixture
def train_config(monkeypatch):
    """The TrainConfig ``aftertrain train`` hands the trainer (which does not run)."""
    from aftertrain.lm import train as _train

    seen = []

    def stop(cfg, on_progress=None):
        seen.append(cfg)
        raise Reached

    monkeypatch.setattr(_train, "train", stop)
    return seen


def _main(argv: list[str], capsys) -> tuple[int | str, str]:
    try:
        status = cli.main(argv)
    except Reached:
        status = "reached"
    return status, capsys.readouterr().err


@pytest.mark.parametrize("steps", [1, 10])
def test_stop_at_may_be_the_steps_run_and_not_one_more(steps, train_config, capsys):
    """--stop-at at most --steps: equal reaches the trainer, one more is refused."""
    status, _ = _main(["train", "--steps", str(steps), "--stop-at", str(steps)], capsys)
    assert status == "reached" and train_config[-1].stop_at == steps
    assert _main(["train", "--steps", str(steps), "--stop-at", str(steps - 1 or 1)], capsys)[0] == "reached"
    status, err = _main(["train", "--steps", str(steps), "--stop-at", str(steps + 1)], capsys)
    assert status == 2
    assert f"--stop-at must be at most the steps run ({steps}), got {steps + 1}" in err
    assert len(err.strip().splitlines()) == 1


def test_eval_every_is_capped_at_the_steps_run(train_config, capsys):
    """--eval-every above --steps evaluates at the last step (min of the two)."""
    for every, want in ((9, 9), (10, 10), (11, 10)):
        assert _main(["train", "--steps", "10", "--eval-every", str(every)], capsys)[0] == "reached"
        assert train_config[-1].eval_every == want


def test_lr_may_equal_the_default_min_lr_and_not_go_below_it(train_config, capsys):
    """--lr without --min-lr must be at least the default min_lr (1e-4)."""
    from aftertrain.lm.train import TrainConfig

    floor = TrainConfig().min_lr
    status, _ = _main(["train", "--steps", "1", "--lr", repr(floor)], capsys)
    assert status == "reached" and train_config[-1].lr == floor
    status, err = _main(["train", "--steps", "1", "--lr", _below(floor)], capsys)
    assert status == 2 and "is below the default --min-lr" in err and "give --min-lr too" in err
    status, _ = _main(["train", "--steps", "1", "--lr", _below(floor), "--min-lr", "0"], capsys)
    assert status == "reached"


def test_report_jobs_takes_one_and_refuses_zero(tmp_path, capsys):
    """--jobs at least 1. --jobs is checked before --sweep's file is read, so
    with a missing sweep file 1 gets past it to the sweep's error, and 0
    stops at its own."""
    argv = ["report", "--out", str(tmp_path / "out"), "--sweep", str(tmp_path / "none.json")]
    status, err = _main([*argv, "--jobs", "1"], capsys)
    assert status == 2 and "--jobs" not in err and "none.json" in err
    status, err = _main([*argv, "--jobs", "0"], capsys)
    assert status == 2 and "--jobs must be a whole number >= 1, got 0" in err
    assert len(err.strip().splitlines()) == 1


@pytest.fixture
def rule_calls(monkeypatch, tmp_path):
    """``aftertrain check rule`` with the kit replaced by a recorder: the
    arguments each run would hand the checks."""
    from aftertrain.checks import assertions

    (tmp_path / "limit_rules.py").write_text("def rule(p, q, drafts):\n    return None\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []
    monkeypatch.setattr(assertions, "rule_reports", lambda rule, **kw: calls.append(kw) or [])
    return calls


def test_check_rule_n_takes_100_to_200000_and_refuses_99_and_200001(rule_calls, capsys):
    """--n from 100 to 200,000 (the upper bound: p and q of every round
    held at once, about 260 MB): both ends reach the kit, one under and one
    over are refused before it runs."""
    for n in (100, 200_000):
        assert _main(["check", "rule", "limit_rules:rule", "--n", str(n), "--quiet"], capsys)[0] == 0
        assert rule_calls[-1]["n"] == n
    for n in (99, 200_001):
        status, err = _parse(["check", "rule", "limit_rules:rule", "--n", str(n)], capsys)
        assert status == 2 and f"must be from 100 to 200,000, got {n}" in err, err
    assert len(rule_calls) == 2


def test_check_rule_seed_takes_0_and_refuses_minus_1(rule_calls, capsys):
    """--seed at least 0: 0 reaches the kit, -1 is an argparse error."""
    assert _main(["check", "rule", "limit_rules:rule", "--seed", "0", "--quiet"], capsys)[0] == 0
    assert rule_calls[-1]["seed"] == 0
    status, err = _parse(["check", "rule", "limit_rules:rule", "--seed", "-1"], capsys)
    assert status == 2 and "must be from 0 to 18,446,744,073,709,551,615, got -1" in err, err


@pytest.mark.parametrize("flag, chars, said", [("--length", 500, False), ("--length", 501, True)])
def test_a_long_sample_says_so_only_past_500_characters(flag, chars, said, monkeypatch, capsys):
    """The progress line comes for a length above 500 (one model step each),
    not at 500."""
    from aftertrain.lm import decoding as _decoding

    monkeypatch.setattr(_decoding, "sample_text", lambda net, prompt, n, t, seed: "x" * n)
    assert cli.main(["sample", "--prompt", "a", flag, str(chars)]) == 0
    err = capsys.readouterr().err
    assert (f"sampling {chars} characters" in err) == said, err


@pytest.mark.parametrize("chars, said", [(500, False), (501, True)])
def test_a_long_prompt_says_so_only_past_500_characters(chars, said, monkeypatch, capsys):
    """The prompt's progress line comes above 500 characters, not at 500."""
    from aftertrain.lm import decoding as _decoding

    monkeypatch.setattr(_decoding, "sample_text", lambda net, prompt, n, t, seed: "")
    assert cli.main(["sample", "--prompt", "a" * chars, "--length", "1"]) == 0
    assert (f"reading the {chars}-character prompt" in capsys.readouterr().err) == said


@pytest.mark.parametrize("name", ["float64", "float32", "bfloat16", "float16"])
def test_check_rule_hands_the_kit_the_dtype_named(name, rule_calls, capsys):
    """Each --dtype choice reaches the kit as that torch dtype (float64 when
    not given), with --exact passed through: the kit then draws the
    battery's uniforms from it (tests/checks/test_assertions.py)."""
    import torch

    assert _main(["check", "rule", "limit_rules:rule", "--dtype", name, "--exact", "--quiet"], capsys)[0] == 0
    assert rule_calls[-1]["dtype"] == getattr(torch, name) and rule_calls[-1]["exact"] is True
    assert _main(["check", "rule", "limit_rules:rule", "--quiet"], capsys)[0] == 0
    assert rule_calls[-1]["dtype"] == torch.float64 and rule_calls[-1]["exact"] is False


def test_check_rule_n_and_seed_take_their_largest_value_and_refuse_one_more(rule_calls, capsys):
    """--n at most 200,000 and --seed at most 2**64 - 1: each maximum reaches
    the kit, one more is a usage error (exit 2) naming the value."""
    from aftertrain.cli import check

    for flag, top in (("--n", check.MAX_N), ("--seed", check.MAX_SEED)):
        assert _main(["check", "rule", "limit_rules:rule", flag, str(top), "--quiet"], capsys)[0] == 0
        assert rule_calls[-1][flag.removeprefix("--")] == top
        status, err = _parse(["check", "rule", "limit_rules:rule", flag, str(top + 1)], capsys)
        assert status == 2 and f"got {top + 1}" in err


def test_warmup_may_be_the_steps_run_and_not_one_more(train_config, capsys):
    """--warmup at most --steps: equal reaches the trainer, one more is refused."""
    status, _ = _main(["train", "--steps", "10", "--warmup", "10"], capsys)
    assert status == "reached" and train_config[-1].warmup == 10
    status, err = _main(["train", "--steps", "10", "--warmup", "11"], capsys)
    assert status == 2 and "--warmup 11 is longer than the run: at most the steps run (10)" in err
