"""The argument checks every public function calls (aftertrain.core.validation):
what each accepts, the one wording of each refusal, and that bool is never a number."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aftertrain.core.validation import (
    MAX_SEED,
    check_callable,
    check_int,
    check_probability,
    check_real,
    check_seed,
    check_tokens,
    check_type,
    check_weight,
    is_int,
    is_real,
)


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, True),
        (-3, True),
        (np.int64(2), True),
        (True, False),
        (False, False),
        (2.0, False),
        ("2", False),
        (None, False),
    ],
)
def test_is_int_takes_integers_of_any_library_but_not_bool(value, expected):
    assert is_int(value) is expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, True),
        (0.5, True),
        (np.float32(0.5), True),
        (float("nan"), True),
        (True, False),
        ("0.5", False),
        (torch.tensor(0.5), False),
    ],
)
def test_is_real_takes_numbers_but_not_bool(value, expected):
    assert is_real(value) is expected


@pytest.mark.parametrize(
    "kwargs, value, message",
    [
        (dict(least=1), 0, "n must be an int >= 1, got 0"),
        (dict(least=1), True, "n must be an int >= 1, got True"),
        (dict(least=1), 1.0, "n must be an int >= 1, got 1.0"),
        (dict(least=2, most=8), 9, "n must be an int in [2, 8], got 9"),
        (dict(least=0, most=100_000), -1, "n must be an int in [0, 100,000], got -1"),
        (dict(most=5), 6, "n must be an int <= 5, got 6"),
        (dict(), "3", "n must be an int, got '3'"),
        (dict(least=8, why=" for confidence 0.99"), 7, "n must be an int >= 8 for confidence 0.99, got 7"),
    ],
)
def test_check_int_names_the_argument_the_range_and_the_value(kwargs, value, message):
    with pytest.raises(ValueError) as err:
        check_int("n", value, **kwargs)
    assert str(err.value) == message


def test_check_int_returns_a_python_int_at_both_ends():
    assert check_int("n", 2, least=2, most=8) == 2
    assert check_int("n", np.int64(8), least=2, most=8) == 8
    assert type(check_int("n", np.int64(8))) is int


def test_check_seed_takes_what_a_torch_generator_takes():
    assert check_seed(MAX_SEED) == MAX_SEED
    torch.Generator().manual_seed(MAX_SEED)  # the bound is torch's own
    with pytest.raises(ValueError, match="Overflow"):
        torch.Generator().manual_seed(MAX_SEED + 1)
    for bad in (MAX_SEED + 1, -1, True, 1.0):
        with pytest.raises(ValueError) as err:
            check_seed(bad, "order_seed")
        assert str(err.value) == f"order_seed must be an int in [0, 2**64), got {bad!r}"


@pytest.mark.parametrize(
    "kwargs, value, message",
    [
        (dict(low=0, high=1), 1.5, "s must be a number in [0, 1], got 1.5"),
        (dict(low=0, high=1, what="a sparsity"), -0.1, "s must be a sparsity in [0, 1], got -0.1"),
        (dict(low=0, high=1, low_open=True, high_open=True), 0.0, "s must be a number in (0, 1), got 0.0"),
        (dict(low=0.0, low_open=True), 0.0, "s must be a finite number > 0.0, got 0.0"),
        (dict(low=0.0), float("inf"), "s must be a finite number >= 0.0, got inf"),
        (dict(high=1.0, high_open=True), 1.0, "s must be a finite number < 1.0, got 1.0"),
        (dict(), float("nan"), "s must be a finite number, got nan"),
        (dict(what="a finite loss"), True, "s must be a finite loss, got True"),
    ],
)
def test_check_real_names_the_argument_the_interval_and_the_value(kwargs, value, message):
    with pytest.raises(ValueError) as err:
        check_real("s", value, **kwargs)
    assert str(err.value) == message


def test_check_real_accepts_closed_ends_and_refuses_open_ones():
    assert check_real("s", 0, low=0, high=1) == 0.0
    assert check_real("s", 1, low=0, high=1) == 1.0
    assert check_probability("alpha", 1e-6) == 1e-6
    for edge in (0, 1):
        with pytest.raises(ValueError, match=r"alpha must be a number in \(0, 1\)"):
            check_probability("alpha", edge)


def test_check_callable_names_the_type_it_got():
    assert check_callable("f", len) is len
    with pytest.raises(ValueError, match="f must be callable, got int"):
        check_callable("f", 3)


def test_check_type_names_what_is_allowed_and_the_type_it_got():
    error = ValueError("x")
    assert check_type("error", error, BaseException, "an exception") is error
    with pytest.raises(ValueError, match="error must be an exception, got NoneType"):
        check_type("error", None, BaseException, "an exception")


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ([[1.0]], "got list"),
        (torch.ones(2, 2, dtype=torch.float64), r"got torch.float64 \(2, 2\)"),
        (torch.ones(4), r"got torch.float32 \(4,\)"),
        (torch.ones(0, 3), r"got torch.float32 \(0, 3\)"),
        (torch.tensor([[1.0, float("inf"), float("nan")]]), "got 2 NaN or inf values"),
    ],
    ids=["a list", "float64", "1-D", "empty", "not finite"],
)
def test_check_weight_takes_a_finite_non_empty_2d_float32_tensor(value, got):
    w = torch.ones(2, 3)
    assert check_weight("w", w) is w
    with pytest.raises(ValueError, match=f"w must be a finite, non-empty 2-D float32 tensor, {got}"):
        check_weight("w", value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1, 2], "must be a 1-D integer tensor of at least 2 tokens, got list"),
        (torch.tensor([1.0, 2.0]), r"be a 1-D integer tensor .*, got torch.float32 \(2,\)"),
        (torch.tensor([True, False]), r"be a 1-D integer tensor .*, got torch.bool \(2,\)"),
        (torch.tensor([[1, 2]]), r"be a 1-D integer tensor .*, got torch.int64 \(1, 2\)"),
        (torch.tensor([3]), r"be a 1-D integer tensor of at least 2 tokens, got torch.int64 \(1,\)"),
        (torch.tensor([1, 10]), r"must lie in \[0, 10\) \(the vocabulary\), got indices from 1 to 10"),
        (torch.tensor([-1, 2]), r"must lie in \[0, 10\) \(the vocabulary\), got indices from -1 to 2"),
    ],
    ids=["a list", "float", "bool", "2-D", "too short", "past the end", "negative"],
)
def test_check_tokens_takes_a_1d_integer_tensor_inside_the_vocabulary(value, message):
    ok = torch.tensor([0, 9], dtype=torch.int32)
    assert torch.equal(check_tokens("tokens", ok, 10), ok.long())
    assert check_tokens("tokens", ok.long(), 10).dtype == torch.int64
    with pytest.raises(ValueError, match="tokens must " + message.removeprefix("must ")):
        check_tokens("tokens", value, 10)
    with pytest.raises(ValueError, match="vocab_size must be an int >= 1, got 0"):
        check_tokens("tokens", ok, 0)
