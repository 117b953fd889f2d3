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
import aftertrain.timing.sequential  # noqa: F401  (loaded here: inner pytester runs must not re-import numpy)
from tests.common.inner_runs import outside_any_run

pytest_plugins = ["pytester"]

TESTS = """
import pytest

from aftertrain.experiments.tables import Baselines

@pytest.mark.claim("Q2")
def test_holds(claim_record):
    claim_record.measured("int8 +0.0012 nats")
    claim_record.table(Baselines(4.6052, 2.6501, 1.5551))

@pytest.mark.claim("Q3", "Q4")
def test_broken():
    assert False

@pytest.mark.claim("Q5")
@pytest.mark.xfail(strict=True, reason="3 bits stay below the bigram here")
def test_does_not_reproduce(claim_record):
    claim_record.measured("3-bit 1.74")
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
"""

EXPECTED = {
    "Q2": "holds",
    "Q3": "broken",
    "Q4": "broken",  # one test broken, one passing: broken wins
    "Q5": "does not reproduce",
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
    outside_any_run(monkeypatch)


def _ledger_lines(result: pytest.RunResult) -> dict[str, str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "claims ledger" in line)
    return {line.split()[0]: line for line in lines[start + 1 : start + 38]}


def _check_verdicts(result: pytest.RunResult, path: Path) -> None:
    lines = _ledger_lines(result)
    assert len(lines) == 37
    for claim_id, verdict in EXPECTED.items():
        assert lines[claim_id].split(None, 1)[1].startswith(verdict), lines[claim_id]
    assert "[int8 +0.0012 nats]" in lines["Q2"]
    assert "[3-bit 1.74]" in lines["Q5"]
    entries = {e["id"]: e for e in json.loads(path.read_text())["claims"]}
    assert list(entries) == list(lines)
    assert {k: entries[k]["verdict"] for k in EXPECTED} == EXPECTED
    q5 = entries["Q5"]
    assert q5["title"] == "where it breaks" and q5["measured"] == ["3-bit 1.74"]
    [test] = q5["tests"]
    assert test["nodeid"].endswith("::test_does_not_reproduce")
    assert test["outcome"] == "xfailed"
    assert "3 bits stay below the bigram here" in test["xfail_reason"]
    assert sorted(t["outcome"] for t in entries["Q4"]["tests"]) == ["failed", "passed"]
    assert [t["outcome"] for t in entries["K1"]["tests"]] == ["error"]
    assert entries["Q1"]["tests"] == []
    data = json.loads(path.read_text())
    assert data["tables"] == {"b1": {"uniform": 4.6052, "bigram": 2.6501, "reference": 1.5551}}
    assert entries["Q3"]["reasons"] == ["assert False"]
    assert entries["Q5"]["reasons"] == ["3 bits stay below the bigram here"]
    assert entries["P1"]["reasons"] == ["needs the reference model"]
    assert entries["K1"]["reasons"] == ["RuntimeError: setup fails"]
    assert entries["Q2"]["reasons"] == []
    assert set(data["meta"]) == {
        "date",
        "commit",
        "cpu",
        "torch",
        "threads",
        "load1",
        "model",
        "model_sha256",
        "quick",
        "worktree",
    }


def test_ledger_reports_each_verdict_and_writes_json(pytester: pytest.Pytester):
    pytester.makepyfile(test_claimed=TESTS)
    path = pytester.path / "out" / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(path))
    result.assert_outcomes(passed=2, failed=2, xfailed=1, skipped=1, errors=1)
    _check_verdicts(result, path)


EXPERIMENTS_ROW = "from aftertrain.experiments.tables import Baselines\n"
#: B1's row type as :mod:`aftertrain.experiments.tables` defines it, defined in
#: the test file: ``aftertrain.experiments`` imports torch and scipy, which
#: would cost each worker of a subprocess run seconds of CPU for nothing the
#: ledger does (the table is recorded and shipped to the controller the same way).
TORCH_FREE_ROW = """from dataclasses import dataclass

from aftertrain.claims import tables as TB
from aftertrain.claims.tables import Shape, TableRow, table


@table(TB.B1, ("B1",), Shape.ONE)
@dataclass(frozen=True)
class Baselines(TableRow):
    uniform: float
    bigram: float
    reference: float
"""


def test_ledger_under_xdist_is_built_on_the_controller(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """Two workers: verdicts and JSON as without xdist, and one ledger only.

    Three processes each start pytest and the ledger plugin (torch-free:
    the test file's table row is :data:`TORCH_FREE_ROW`)."""
    pytest.importorskip("xdist")
    assert EXPERIMENTS_ROW in TESTS
    src = str(Path(aftertrain.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    # Only the two plugins under test: the subprocess and its workers skip
    # loading hypothesis, pytest-benchmark and the like (seconds on a busy box).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_claimed=TESTS.replace(EXPERIMENTS_ROW, TORCH_FREE_ROW))
    path = pytester.path / "claims.json"
    result = pytester.runpytest_subprocess(
        "-p", "aftertrain.ledger", "-p", "xdist", "-n", "2", "--claims-json", str(path)
    )
    result.assert_outcomes(passed=2, failed=2, xfailed=1, skipped=1, errors=1)
    assert sum("claims ledger" in line for line in result.stdout.lines) == 1
    _check_verdicts(result, path)


def test_unknown_claim_id_is_a_collection_error(pytester: pytest.Pytester):
    pytester.makepyfile(
        test_unknown="""
        import pytest

        pytestmark = pytest.mark.claim("Q2")

        @pytest.mark.claim("Q99")
        def test_typo():
            pass

        def test_fine():
            pass
    """
    )
    result = pytester.runpytest("-p", "aftertrain.ledger")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR collecting test_unknown.py*", "*test_typo: unknown claim ID(s) 'Q99'*"]
    )


def test_module_pytestmark_ties_every_test(pytester: pytest.Pytester):
    pytester.makepyfile(
        test_module_mark="""
        import pytest

        pytestmark = pytest.mark.claim("B1")

        def test_one():
            pass

        def test_two():
            pass
    """
    )
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
    pytester.makepyfile(
        test_mixed="""
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
    """
    )
    path = pytester.path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(path))
    result.assert_outcomes(passed=2, skipped=1, xfailed=1, xpassed=1)
    verdicts = {e["id"]: e["verdict"] for e in json.loads(path.read_text())["claims"]}
    assert {k: verdicts[k] for k in ("Q5", "Q6", "Q7")} == {
        "Q5": "holds",
        "Q6": "does not reproduce",
        "Q7": "broken",
    }


TIMING_TESTS = """
import pytest

from aftertrain.timing import Decision, paired_timing


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def decision(verdict):
    clock = Clock()

    def tick():
        clock.now += 1.0

    timing = paired_timing(tick, tick, pairs=8, warmup=0, clock=clock)
    return Decision(verdict=verdict, timings={"ratio": timing},
                    rule="median ratio in [0.9, 1.1]", looks=8,
                    max_looks=8, alpha=1e-6, confidence=0.99, seconds=12.5, load1=4.2)


@pytest.mark.claim("Q11")
def test_undecided(claim_record):
    claim_record.measured("ratio 1.01 [0.85, 1.2]")
    claim_record.conclude(decision("inconclusive"))


@pytest.mark.claim("P7")
def test_decided(claim_record):
    claim_record.conclude(decision("holds"))


@pytest.mark.claim("X3")
def test_broken(claim_record):
    claim_record.conclude(decision("broken"))


@pytest.mark.claim("X4")
def test_untimed(claim_record):
    claim_record.require_timing()


@pytest.mark.claim("X4")
def test_untimed_teeth_passes():
    pass
"""


def _verdicts(path: Path) -> dict:
    return {e["id"]: e for e in json.loads(path.read_text())["claims"]}


def test_inconclusive_is_a_verdict_with_its_reason_and_not_a_failure(pytester: pytest.Pytester):
    """A decision that could not decide: the claim is inconclusive with the
    decision's reason (rule, pairs, seconds, load), shown at the end of the
    run, and pytest passes; the timed claims need timing: with it they are
    decided."""
    pytester.makepyfile(test_timing_claims=TIMING_TESTS.replace("def test_broken", "def _broken"))
    path = pytester.path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(path))
    assert result.ret == 0
    e = _verdicts(path)
    assert (e["Q11"]["verdict"], e["P7"]["verdict"], e["X4"]["verdict"]) == ("inconclusive", "holds", "holds")
    [reason] = e["Q11"]["reasons"]
    assert reason.startswith("inconclusive: median ratio in [0.9, 1.1]")
    assert "in 12.5 s, 1-minute load 4.20" in reason
    result.stdout.fnmatch_lines(
        [
            "Q11  inconclusive *[[]ratio 1.01 [[]0.85, 1.2]]",
            "Q11 inconclusive: inconclusive: median ratio in*",
        ]
    )


def test_timing_strict_makes_inconclusive_a_failure(pytester: pytest.Pytester):
    pytester.makepyfile(test_timing_claims=TIMING_TESTS)
    path = pytester.path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--timing-strict", "--claims-json", str(path))
    result.assert_outcomes(passed=3, failed=2)
    e = _verdicts(path)
    assert (e["Q11"]["verdict"], e["X3"]["verdict"]) == ("broken", "broken")
    assert "--timing-strict: inconclusive: median ratio" in e["Q11"]["reasons"][0]
    assert "AssertionError: broken: median ratio" in e["X3"]["reasons"][0]


def test_untimed_part_is_named_not_run_and_skipped_only_when_nothing_ran(pytester: pytest.Pytester):
    """With --benchmark-disable nothing is timed: X4's timed test, its
    defining part, did not run, and a passing teeth test decides nothing,
    so X4 is "not decided here", naming its timed part and why, and the
    teeth beside it; a claim whose only test is timed (X2) is skipped,
    since nothing of it ran."""
    pytester.makepyfile(
        test_timing_claims=TIMING_TESTS.replace(
            "def test_untimed_teeth_passes", "@pytest.mark.teeth\ndef test_untimed_teeth_passes"
        )
        + "\n\n@pytest.mark.claim('X2')\ndef test_only_timed(claim_record):\n"
        "    claim_record.require_timing()\n"
    )
    path = pytester.path / "claims.json"
    result = pytester.runpytest(
        "-p",
        "aftertrain.ledger",
        "--benchmark-disable",
        "-q",
        "-o",
        "markers=teeth: t",
        "--claims-json",
        str(path),
    )
    e = _verdicts(path)
    untimed = [{"part": "timed part", "what": "the timing", "reason": "not timed"}]
    assert (e["X4"]["verdict"], e["X4"]["undecided"], e["X4"]["not_run"]) == ("not decided here", untimed, [])
    assert e["X4"]["parts"] == {"timed part": "not run", "teeth": "holds"}
    assert e["X4"]["beside"] == {"teeth": {"passed": 1}}
    assert (e["X2"]["verdict"], e["X2"]["undecided"]) == ("skipped", untimed)
    result.stdout.fnmatch_lines(
        [
            "X4   not decided here   *",
            "X2 skipped: defining part not run: timed part, the timing: not timed",
            "X4 not decided here: defining part not run: timed part, the timing: not timed",
            "X4 beside the claim: method checked: 1 teeth pass",
        ]
    )
    assert result.ret == 1  # X3's broken decision still fails


PARTS = """
import pytest

from aftertrain.ledger.record import record_not_run
from aftertrain.ledger.state import Part


@pytest.mark.claim("Q4")
def test_q4_asserts_then_has_no_baseline(request):
    assert 1 + 1 == 2
    record_not_run(request.node, Part.BASELINE, "no baseline for this model")


@pytest.mark.claim("P6")
def test_p6_has_no_baseline_then_fails(request):
    record_not_run(request.node, Part.BASELINE, "no baseline for this model")
    assert 1 + 1 == 3


@pytest.mark.claim("Q5")
def test_q5_plain():
    pass
"""


def test_a_claim_holds_on_the_parts_that_ran_and_names_the_rest(pytester: pytest.Pytester):
    """Per-part verdicts: Q4's assertions passed and its baseline comparison
    did not run: ``holds``, the baseline part named not run, with ``-q`` too;
    a part not run never hides a failure (P6 broken); a plain pass prints
    no reason line."""
    pytester.makepyfile(test_parts=PARTS)
    path = pytester.path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "-q", "--claims-json", str(path))
    e = _verdicts(path)
    assert (e["Q4"]["verdict"], e["Q4"]["parts"], e["Q4"]["not_run"]) == (
        "holds",
        {"assertions": "holds", "baseline comparison": "not run"},
        [{"part": "baseline comparison", "reason": "no baseline for this model"}],
    )
    assert (e["P6"]["verdict"], e["P6"]["parts"]["assertions"]) == ("broken", "broken")
    assert (e["Q5"]["verdict"], e["Q5"]["not_run"]) == ("holds", [])
    result.stdout.fnmatch_lines(
        [
            "Q4   holds (part not run) *",
            "Q5   holds              *",
            "Q4 holds: not run: baseline comparison (no baseline for this model)",
            "P6 broken: assert (1 + 1) == 3",
            "P6 broken: not run: baseline comparison (no baseline for this model)",
            "not covered (no test of this run carries the ID): Q1, *",
        ]
    )
    assert not any(line.startswith("Q5 holds") for line in result.stdout.lines)


def test_record_not_run_takes_a_part_and_a_reason():
    from aftertrain.ledger.record import record_not_run
    from aftertrain.ledger.state import Part

    class Node:
        user_properties: list = []

    with pytest.raises(ValueError, match="part must be a Part"):
        record_not_run(Node(), "baseline comparison", "x")
    with pytest.raises(ValueError, match="reason must be a non-empty str"):
        record_not_run(Node(), Part.BASELINE, "")


def test_several_claim_markers_count_for_every_claim_once(pytester: pytest.Pytester):
    """Marker resolution: a test under a module mark, a class mark and its
    own marks counts toward every ID any of them names, each once, closest
    first; one failing test breaks all of them, and a claim named twice on
    one test lists the test once."""
    pytester.makepyfile(
        test_marks="""
        import pytest

        pytestmark = pytest.mark.claim("B1")

        @pytest.mark.claim("Q2", "Q3")
        class TestBoth:
            pytestmark = pytest.mark.claim("K1")

            @pytest.mark.claim("Q3")
            @pytest.mark.claim("Q5", "Q3")
            def test_fails(self):
                assert False

        @pytest.mark.claim("Q6")
        def test_passes():
            pass
    """
    )
    path = pytester.path / "claims.json"
    pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(path))
    e = _verdicts(path)
    [failing] = e["Q5"]["tests"]
    assert failing["nodeid"].endswith("TestBoth::test_fails")
    for cid in ("Q2", "Q3", "Q5", "K1"):
        assert e[cid]["verdict"] == "broken" and len(e[cid]["tests"]) == 1, cid
    # the module's mark covers both tests; the failing one breaks it
    assert e["B1"]["verdict"] == "broken"
    assert [t["nodeid"].split("::")[-1] for t in e["B1"]["tests"]] == ["test_fails", "test_passes"]
    assert e["Q6"]["verdict"] == "holds"


def test_claim_ids_order_closest_marker_first(pytester: pytest.Pytester):
    """The function's markers first (the decorator nearest the function
    first), then the module's; an ID named twice once, where first named."""
    from aftertrain.ledger import claim_ids

    pytester.makepyfile(
        test_order="""
        import pytest

        pytestmark = pytest.mark.claim("B1", "Q2")

        @pytest.mark.claim("Q3")
        @pytest.mark.claim("Q2", "Q4")
        def test_one():
            pass
    """
    )
    items, _ = pytester.inline_genitems("-p", "aftertrain.ledger")
    assert claim_ids(items[0]) == ("Q2", "Q4", "Q3", "B1")


def test_run_metadata_is_one_function_for_ledger_and_report(tmp_path: Path):
    """The ledger's meta and the report's render-time header come from
    :func:`aftertrain.core.runmeta.collect`: the same keys, None (never a
    spelling of "unknown") where a value is not known, the model passed in
    (not assumed), the load to 2 decimals."""
    from aftertrain.core import runmeta
    from aftertrain.report import meta

    here = runmeta.collect(tmp_path, model=None, model_sha256=None, quick=False)
    assert tuple(here) == runmeta.KEYS
    assert here["commit"] is None and here["model"] is None  # tmp_path is no checkout
    assert here["load1"] is None or here["load1"] == round(here["load1"], 2)
    report = meta.collect_for_model(tmp_path, "article")
    assert tuple(report) == runmeta.KEYS and report["model"] == "article"
    assert len(report["model_sha256"]) == 64 and report["commit"] is None
    head = runmeta.commit(Path(aftertrain.__file__).resolve().parents[2])
    assert head is None or len(head.split()[0]) == 40
