"""Tests of the claims ledger plugin, run on small test files with pytester.

pytester runs in a temporary directory with no project configuration, so
each run switches the plugin on with ``-p aftertrain.ledger`` as this
project's ``addopts`` does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import aftertrain

pytest_plugins = ["pytester"]

TESTS = '''
import pytest

@pytest.mark.claim("Q2")
def test_holds(record_property):
    record_property("measured", "int8 +0.0012 nats")
    record_property("table:int8", [{"granularity": "per-tensor", "loss": 1.5551}])

@pytest.mark.claim("Q3", "Q4")
def test_broken():
    assert False

@pytest.mark.claim("S6")
@pytest.mark.xfail(strict=True, reason="8-bit draft is slower here")
def test_does_not_reproduce(record_property):
    record_property("measured", "speedup 0.71")
    assert False

@pytest.mark.claim("Q4")
def test_q4_also_passes():
    pass

@pytest.mark.claim("P1")
@pytest.mark.skip(reason="needs the reference model")
def test_skipped():
    pass

@pytest.mark.claim("S8")
@pytest.mark.xfail(strict=True, reason="expected to fail")
def test_strict_xpass():
    pass

class TestErrors:
    pytestmark = pytest.mark.claim("K1")

    @pytest.fixture
    def broken_fixture(self):
        raise RuntimeError("setup fails")

    def test_setup_error(self, broken_fixture):
        pass
'''

EXPECTED = {
    "Q2": "holds",
    "Q3": "broken",
    "Q4": "broken",  # one test broken, one passing: broken wins
    "S6": "does not reproduce",
    "P1": "skipped",
    "S8": "broken",  # a strict xfail that passed
    "K1": "broken",  # error in setup
    "Q1": "not covered",
}


@pytest.fixture(autouse=True)
def _not_an_xdist_worker(monkeypatch: pytest.MonkeyPatch):
    """When this file runs under ``pytest -n 2`` the inner runs are not
    workers; without this pytest-benchmark in them would warn that xdist is
    active."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def _ledger_lines(result: pytest.RunResult) -> dict[str, str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "claims ledger" in line)
    return {line.split()[0]: line for line in lines[start + 1: start + 38]}


def _check_verdicts(result: pytest.RunResult, path: Path) -> None:
    lines = _ledger_lines(result)
    assert len(lines) == 37
    for claim_id, verdict in EXPECTED.items():
        assert lines[claim_id].split(None, 1)[1].startswith(verdict), lines[claim_id]
    assert "[int8 +0.0012 nats]" in lines["Q2"]
    assert "[speedup 0.71]" in lines["S6"]
    entries = {e["id"]: e for e in json.loads(path.read_text())["claims"]}
    assert list(entries) == list(lines)
    assert {k: entries[k]["verdict"] for k in EXPECTED} == EXPECTED
    s6 = entries["S6"]
    assert s6["title"] == "measured speedup" and s6["measured"] == ["speedup 0.71"]
    [test] = s6["tests"]
    assert test["nodeid"].endswith("::test_does_not_reproduce")
    assert test["outcome"] == "xfailed"
    assert "8-bit draft is slower here" in test["xfail_reason"]
    assert sorted(t["outcome"] for t in entries["Q4"]["tests"]) == ["failed", "passed"]
    assert [t["outcome"] for t in entries["K1"]["tests"]] == ["error"]
    assert entries["Q1"]["tests"] == []
    assert json.loads(path.read_text())["tables"] == {
        "int8": [{"granularity": "per-tensor", "loss": 1.5551}]}


def test_ledger_reports_each_verdict_and_writes_json(pytester: pytest.Pytester):
    pytester.makepyfile(test_claimed=TESTS)
    path = pytester.path / "out" / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(path))
    result.assert_outcomes(passed=2, failed=2, xfailed=1, skipped=1, errors=1)
    _check_verdicts(result, path)


@pytest.mark.slow
def test_ledger_under_xdist_is_built_on_the_controller(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch):
    """Two workers: verdicts and JSON as without xdist, and one ledger only.

    Slow (5-20 s, by the machine's load): three processes each import
    aftertrain, whose ``__init__`` imports torch."""
    pytest.importorskip("xdist")
    src = str(Path(aftertrain.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    # Only the two plugins under test: the subprocess and its workers skip
    # loading hypothesis, pytest-benchmark and the like (seconds on a busy box).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_claimed=TESTS)
    path = pytester.path / "claims.json"
    result = pytester.runpytest_subprocess(
        "-p", "aftertrain.ledger", "-p", "xdist", "-n", "2", "--claims-json", str(path)
    )
    result.assert_outcomes(passed=2, failed=2, xfailed=1, skipped=1, errors=1)
    assert sum("claims ledger" in line for line in result.stdout.lines) == 1
    _check_verdicts(result, path)


def test_unknown_claim_id_is_a_collection_error(pytester: pytest.Pytester):
    pytester.makepyfile(test_unknown='''
        import pytest

        pytestmark = pytest.mark.claim("Q2")

        @pytest.mark.claim("Q99")
        def test_typo():
            pass

        def test_fine():
            pass
    ''')
    result = pytester.runpytest("-p", "aftertrain.ledger")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting test_unknown.py*",
                                 "*test_typo: unknown claim ID(s) 'Q99'*"])


def test_module_pytestmark_ties_every_test(pytester: pytest.Pytester):
    pytester.makepyfile(test_module_mark='''
        import pytest

        pytestmark = pytest.mark.claim("B1")

        def test_one():
            pass

        def test_two():
            pass
    ''')
    path = pytester.path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(path))
    result.assert_outcomes(passed=2)
    [b1] = [e for e in json.loads(path.read_text())["claims"] if e["id"] == "B1"]
    assert b1["verdict"] == "holds" and len(b1["tests"]) == 2


def test_without_the_plugin_nothing_changes(pytester: pytest.Pytester):
    """Installed but not switched on: no ledger, no option."""
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert not any("claims ledger" in line for line in result.stdout.lines)


def test_verdict_precedence_for_mixed_outcomes_of_one_claim(pytester: pytest.Pytester):
    """The documented precedence on claims whose tests disagree: a skipped
    test beside a passing one leaves the claim ``holds`` (skipped ones aside);
    an xfail beside a passing test gives ``does not reproduce``; a non-strict
    xfail that passes (pytest's ``xpassed``) is ``broken``, never ``holds``."""
    pytester.makepyfile(test_mixed='''
        import pytest

        @pytest.mark.claim("Q5")
        def test_q5_passes():
            pass

        @pytest.mark.claim("Q5")
        @pytest.mark.skip(reason="not here")
        def test_q5_skipped():
            pass

        @pytest.mark.claim("Q6")
        def test_q6_passes():
            pass

        @pytest.mark.claim("Q6")
        @pytest.mark.xfail(strict=True, reason="measured otherwise")
        def test_q6_xfails():
            assert False

        @pytest.mark.claim("Q7")
        @pytest.mark.xfail(strict=False, reason="expected to fail")
        def test_q7_xpasses():
            pass
    ''')
    path = pytester.path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(path))
    result.assert_outcomes(passed=2, skipped=1, xfailed=1, xpassed=1)
    verdicts = {e["id"]: e["verdict"] for e in json.loads(path.read_text())["claims"]}
    assert {k: verdicts[k] for k in ("Q5", "Q6", "Q7")} == {
        "Q5": "holds", "Q6": "does not reproduce", "Q7": "broken"}
