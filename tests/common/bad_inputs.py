"""The runner of the table-driven bad-input tests (``tests/<package>/test_bad_inputs.py``,
``tests/test_stats_bad_inputs.py``).

Each of those modules holds a table of cases ``(fn, kwargs, words)``: calling
``fn(**kwargs)`` raises ValueError whose message contains ``words`` (one
string, or a list of strings that must all appear). An argument that needs
a model or other fixture-built object is a :class:`Lazy`, built from the
module's fixture when the case runs, so nothing is built at import time.
"""

from __future__ import annotations

import pytest


class Lazy:
    """An argument (or the callable itself) built from a fixture's value when
    the case runs."""

    def __init__(self, build):
        self.build = build

    def __call__(self, env):
        return self.build(env)


def case_id(case) -> str:
    """``function-arg1-arg2``: the test id of a case."""
    fn, kwargs, _ = case
    name = "lazy" if isinstance(fn, Lazy) else getattr(fn, "__qualname__", str(fn))
    return f"{name}-{'-'.join(kwargs)}"


def check_raises_naming(fn, kwargs: dict, words, env=None) -> None:
    """``fn(**kwargs)`` (Lazy parts built from ``env``) raises ValueError
    whose message contains ``words`` (a string, or every string of a list)."""
    fn = fn(env) if isinstance(fn, Lazy) else fn
    kwargs = {k: v(env) if isinstance(v, Lazy) else v for k, v in kwargs.items()}
    with pytest.raises(ValueError) as err:
        fn(**kwargs)
    for word in [words] if isinstance(words, str) else words:
        assert word in str(err.value), (word, str(err.value))
