"""tools/same_verdicts.py: what .ci/run's kernel-path reruns are judged by.

Two ledgers agree when every deterministic claim test that ran in both has
the same outcome and the same measured figures; timed parts and tests that
did not run are left out. Each kind of difference must be reported (exit 1),
and the left-out kinds must not be."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.common.tools import load_tool

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    yield from load_tool("same_verdicts")


@pytest.fixture(scope="module")
def ledger() -> dict:
    """The committed reference ledger: real records of every kind of test."""
    return json.loads((ROOT / "report" / "claims.json").read_text())


def _test(data: dict, predicate) -> dict:
    return next(t for c in data["claims"] for t in c["tests"] if predicate(t))


def _run(tool, tmp_path, aftertrain_model: dict, other: dict, capsys) -> tuple[int, str]:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(aftertrain_model))
    b.write_text(json.dumps(other))
    status = tool.main([str(a), str(b)])
    return status, capsys.readouterr().out


def test_a_ledger_agrees_with_itself_and_counts_what_it_compared(tool, ledger, tmp_path, capsys):
    status, out = _run(tool, tmp_path, ledger, ledger, capsys)
    compared = len({t["nodeid"] for c in ledger["claims"] for t in c["tests"] if tool.comparable(t)})
    assert status == 0 and f"agrees with {tmp_path / 'a.json'}: {compared} tests" in out, out
    assert compared > 100


CHANGES = {
    "a figure": (
        lambda t: t["measured"] and t["part"] == "assertions",
        lambda t: t["measured"].__setitem__(0, t["measured"][0].replace("1", "2", 1)),
    ),
    "an outcome": (
        lambda t: t["outcome"] == "passed" and t["part"] == "assertions",
        lambda t: t.__setitem__("outcome", "failed"),
    ),
    "a missing test": (lambda t: t["outcome"] == "passed" and t["part"] == "teeth", None),
}


@pytest.mark.teeth
@pytest.mark.parametrize("change", CHANGES)
def test_same_verdicts_catches_a_changed_deterministic_result(change, tool, ledger, tmp_path, capsys):
    other = copy.deepcopy(ledger)
    predicate, edit = CHANGES[change]
    target = _test(other, predicate)
    if edit is None:
        for claim in other["claims"]:
            claim["tests"] = [t for t in claim["tests"] if t["nodeid"] != target["nodeid"]]
    else:
        edit(target)
    status, out = _run(tool, tmp_path, ledger, other, capsys)
    assert status == 1 and target["nodeid"] in out, out


@pytest.mark.parametrize("change", ["a timing figure", "an untimed timed test", "a skipped test"])
def test_what_is_not_deterministic_or_did_not_run_is_left_out(change, tool, ledger, tmp_path, capsys):
    other = copy.deepcopy(ledger)
    if change == "a timing figure":
        target = _test(other, lambda t: t["part"] == "timed part" and t["measured"])
        target["measured"] = ["median 9.99 in [9.0, 11.0]"]
    elif change == "an untimed timed test":
        target = _test(other, lambda t: t["part"] == "timed part")
        target.update(outcome="untimed", measured=[])
    else:
        target = _test(other, lambda t: t["part"] == "assertions" and t["outcome"] == "passed")
        target.update(outcome="skipped", measured=[])
    status, out = _run(tool, tmp_path, ledger, other, capsys)
    assert status == 0, out


def test_a_file_that_is_not_a_ledger_is_a_usage_error(tool, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert tool.main([str(bad), str(bad)]) == 2
    assert "is not a claims ledger" in capsys.readouterr().err
    assert tool.main([str(bad)]) == 2


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("chi2 p 0.963", "chi2 p 0.962", True),  # one unit of the last printed digit
        ("chi2 p 0.963", "chi2 p 0.961", False),  # two units
        ("loss 1.5539", "loss 1.5549", False),
        ("43 failures of 108 checks", "44 failures of 108 checks", False),  # counts exact
        ("max |diff| = 1.34e-05 over 300", "max |diff| = 1.72e-05 over 300", True),  # a rounding magnitude
        ("ratio 1.34e-02", "ratio 1.72e-02", False),  # e-notation, not a rounding magnitude
        ("bigram TV 0.0119", "n-gram TV 0.0119", False),  # other words
    ],
)
def test_a_figure_is_compared_as_printed(tool, a, b, same):
    """same_figure: words and counts exact, a printed decimal within one unit
    of its last digit (0.963 against 0.962 seen between AVX-512 and AVX2
    kernels: S2's chi-square p-value), rounding magnitudes below 1e-3 left
    to their test's outcome (K1's max |cached - recomputed|: 1.34e-05 native,
    1.72e-05 under avx2)."""
    assert tool.same_figure(a, b) is same
