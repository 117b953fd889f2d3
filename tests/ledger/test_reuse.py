"""``--model-free-from`` (aftertrain.ledger.reuse): a run on a second model
runs only the tests that read the model, and its ledger takes the earlier
run's outcomes of the others, deciding each claim from both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.claims.verdicts import BROKEN, HOLDS
from aftertrain.core import runmeta
from aftertrain.ledger import reuse
from aftertrain.ledger.model_under_test import MODEL_FIXTURES
from aftertrain.ledger.state import Ledger
from tests.common.inner_runs import commit_all, git, outside_any_run

pytest_plugins = ["pytester"]


# Each test leaves a file named after it (and the model it ran on) in RAN_DIR,
# so the test below sees which ran in which run. test_free_fails fails when
# FREE_FAILS is set: the earlier run's failure must reach the later ledger.
_SUITE = """
import os, pathlib
import pytest


def ran(name, what=""):
    pathlib.Path(os.environ["RAN_DIR"], name).write_text(what)


@pytest.mark.claim("S1")
def test_free(claim_record):
    ran("test_free")
    claim_record.measured("free figure 1.5")


@pytest.mark.claim("S1")
def test_reads_the_model(model_identity, claim_record):
    ran("test_reads_the_model", model_identity.name)
    claim_record.measured("model figure of {name!s}", name=model_identity.name)


@pytest.mark.claim("Q1")
def test_free_fails():
    ran("test_free_fails")
    assert not os.environ.get("FREE_FAILS")


@pytest.mark.claim("Q1")
@pytest.mark.does_not_reproduce_on("nothing", reason="an expectation per model")
def test_marked_per_model():
    ran("test_marked_per_model")


def test_plain_free():
    ran("test_plain_free")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, tmp_path, monkeypatch):
    outside_any_run(monkeypatch)
    ran = tmp_path / "ran"
    ran.mkdir()
    monkeypatch.setenv("RAN_DIR", str(ran))
    pytester.makepyfile(test_suite=_SUITE)
    committed(pytester.path)
    return ran


def committed(root: Path) -> None:
    """``root`` as a git checkout with one commit (the earlier ledger must be
    of this checkout's tracked code)."""
    git(root, "init", "-q")
    commit_all(root, "suite")


def _run(pytester, *args):
    """In this process, with the model plugin (the reference unless told)."""
    return pytester.runpytest(
        "-p",
        "aftertrain.ledger",
        "-p",
        "aftertrain.ledger.model_under_test",
        "-p",
        "no:cacheprovider",
        "-n",
        "0",
        *args,
    )


def _tests(path: Path) -> dict[str, dict]:
    data = json.loads(path.read_text())
    return {t["nodeid"].split("::")[-1]: {**t, "claim": c["id"]} for c in data["claims"] for t in c["tests"]}


def test_a_second_model_runs_only_what_reads_the_model(pytester, suite, tmp_path, monkeypatch):
    monkeypatch.setenv("FREE_FAILS", "1")
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    _run(pytester, f"--claims-json={first}").assert_outcomes(passed=4, failed=1)
    recorded = _tests(first)
    assert {n: t["reads_model"] for n, t in recorded.items()} == {
        "test_free": False,
        "test_reads_the_model": True,
        "test_free_fails": False,
        "test_marked_per_model": True,
    }
    for f in suite.iterdir():
        f.unlink()

    monkeypatch.delenv("FREE_FAILS")  # would pass now: the earlier outcome must stand
    result = _run(
        pytester, "--aftertrain-model=article", f"--claims-json={second}", f"--model-free-from={first}"
    )
    result.assert_outcomes(passed=2, deselected=3)
    assert sorted(f.name for f in suite.iterdir()) == ["test_marked_per_model", "test_reads_the_model"]
    assert (suite / "test_reads_the_model").read_text() == "article"
    result.stdout.fnmatch_lines(
        [
            f"not run here: 2 claim tests that do not read the model; "
            f"their outcomes are those of {first.name} (model reference*"
        ]
    )

    data = json.loads(second.read_text())
    verdicts = {c["id"]: c for c in data["claims"]}
    assert verdicts["S1"]["verdict"] == HOLDS
    # this run's figures first, then the earlier run's
    assert verdicts["S1"]["measured"] == ["model figure of article", "free figure 1.5"]
    assert verdicts["Q1"]["verdict"] == BROKEN  # the earlier run's failure
    assert data["meta"]["model"] == "article"
    assert data["meta"]["model_free_from"] == {
        "ledger": first.name,
        "model": "reference",
        "model_sha256": json.loads(first.read_text())["meta"]["model_sha256"],
        "commit": json.loads(first.read_text())["meta"]["commit"],
        "tests": 2,
    }
    later = _tests(second)
    assert later["test_free_fails"]["outcome"] == "failed" and not later["test_free_fails"]["reads_model"]


# Under xdist the workers deselect and the controller takes the earlier
# outcomes. A conftest fixture named model_identity stands for the model
# plugin's (reads_model goes by fixture names), so no process loads torch.
_XDIST_CONFTEST = """
import os
import types
import pytest


@pytest.fixture
def model_identity():
    return types.SimpleNamespace(name=os.environ["FAKE_MODEL"])
"""


@pytest.mark.e2e
def test_under_xdist_the_workers_deselect_and_the_controller_takes(pytester, suite, tmp_path, monkeypatch):
    pytester.makeconftest(_XDIST_CONFTEST)
    pytester.makepyfile(test_suite=_SUITE)
    committed(pytester.path)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    monkeypatch.setenv("FAKE_MODEL", "one")
    pytester.runpytest(
        "-p", "aftertrain.ledger", "-p", "no:cacheprovider", "-n", "0", f"--claims-json={first}"
    ).assert_outcomes(passed=5)
    for f in suite.iterdir():
        f.unlink()
    monkeypatch.setenv("FAKE_MODEL", "two")
    result = pytester.runpytest_subprocess(
        "-p",
        "aftertrain.ledger",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        f"--claims-json={second}",
        f"--model-free-from={first}",
    )
    result.assert_outcomes(passed=2)
    assert sorted(f.name for f in suite.iterdir()) == ["test_marked_per_model", "test_reads_the_model"]
    assert (suite / "test_reads_the_model").read_text() == "two"
    data = json.loads(second.read_text())
    s1 = {c["id"]: c for c in data["claims"]}["S1"]
    assert s1["measured"] == ["model figure of two", "free figure 1.5"]
    assert data["meta"]["model_free_from"]["tests"] == 2


def test_a_claim_test_missing_from_the_earlier_ledger_runs_here(pytester, suite, tmp_path):
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    _run(pytester, f"--claims-json={first}", "-k", "not test_free_fails").assert_outcomes(
        passed=4, deselected=1
    )
    for f in suite.iterdir():
        f.unlink()
    _run(pytester, f"--claims-json={second}", f"--model-free-from={first}").assert_outcomes(
        passed=3, deselected=2
    )
    assert sorted(f.name for f in suite.iterdir()) == [
        "test_free_fails",
        "test_marked_per_model",
        "test_reads_the_model",
    ]


def _ledger(
    tmp_path: Path, *, reads=(False, True), tree="abc", quick=False, extra=None, outcome="passed"
) -> Path:
    tests = [{"nodeid": f"t.py::test_{i}", "outcome": outcome, "reads_model": r} for i, r in enumerate(reads)]
    meta = {"commit": "c1", "worktree": tree, "quick": quick, "model": "reference", **(extra or {})}
    path = tmp_path / "earlier.json"
    path.write_text(
        json.dumps({"format": 2, "meta": meta, "claims": [{"id": "S1", "verdict": "holds", "tests": tests}]})
    )
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        ({"reads": (False, None)}, "does not say which tests read the model"),
        ({"reads": ()}, "does not say which tests read the model"),
        (
            {"tree": "other"},
            r"is of other code \(commit c1, tracked-code fingerprint other\) than "
            r"this checkout \(commit c2, fingerprint abc\)",
        ),
        ({"outcome": "sort of"}, r"test outcomes \['sort of'\] are not outcomes; allowed: error, "),
        ({"quick": True}, "is of a quick run, this is a full run"),
        (
            {"extra": {"model_free_from": {"ledger": "third.json"}}},
            "took its own model-free outcomes from third.json",
        ),
    ],
)
def test_an_earlier_ledger_that_cannot_stand_for_this_run_is_refused(tmp_path, monkeypatch, change, message):
    monkeypatch.setattr(runmeta, "worktree", lambda root: "abc")
    monkeypatch.setattr(runmeta, "commit", lambda root: "c2")
    assert reuse.read(str(_ledger(tmp_path)), tmp_path, quick=False)  # the unchanged one is taken
    with pytest.raises(ValueError, match=f"--model-free-from .*{message}"):
        reuse.read(str(_ledger(tmp_path, **change)), tmp_path, quick=False)


def test_a_full_runs_ledger_is_refused_for_a_quick_run(tmp_path, monkeypatch):
    """The run kind must match both ways: a full run's ledger cannot stand
    for a quick run's tests (fewer examples, fewer timing pairs), nor the
    reverse (the row above); a quick ledger is taken by a quick run."""
    monkeypatch.setattr(runmeta, "worktree", lambda root: "abc")
    with pytest.raises(ValueError, match="is of a full run, this is a quick run"):
        reuse.read(str(_ledger(tmp_path, quick=False)), tmp_path, quick=True)
    assert reuse.read(str(_ledger(tmp_path, quick=True)), tmp_path, quick=True)


def test_outside_a_git_checkout_nothing_is_taken(tmp_path):
    with pytest.raises(
        ValueError,
        match=f"cannot tell whether the ledger is of this checkout's "
        f"code \\({tmp_path} is not a git checkout with a commit\\)",
    ):
        reuse.read(str(_ledger(tmp_path)), tmp_path, quick=False)


@pytest.mark.parametrize(
    "content", [None, "not json", '{"claims": 1}', "[" * 100_000 + "]" * 100_000, '{"claims": [NaN]}']
)
def test_an_unreadable_earlier_ledger_is_refused(tmp_path, content):
    path = tmp_path / "earlier.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=f"--model-free-from {path}"):
        reuse.read(str(path), tmp_path, quick=False)


def test_a_refused_ledger_is_a_one_line_usage_error(pytester, suite, tmp_path):
    result = _run(pytester, f"--model-free-from={tmp_path / 'missing.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--model-free-from {tmp_path / 'missing.json'} does not exist*"])


def test_without_the_ledger_the_flag_is_a_usage_error(pytester, tmp_path):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-n", "0", f"--model-free-from={tmp_path / 'x.json'}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*--model-free-from {tmp_path / 'x.json'}: the claims ledger is "
            f"off in this run; switch it on with -p aftertrain.ledger*"
        ]
    )


def test_reuse_takes_only_model_free_tests_and_tables():
    earlier = LedgerFile.from_json(
        {
            "format": 2,
            "meta": {"model": "reference", "commit": "abc"},
            "claims": [
                {
                    "id": "S1",
                    "verdict": "holds",
                    "tests": [
                        {"nodeid": "a::free", "outcome": "passed", "measured": ["1.5"], "reads_model": False},
                        {"nodeid": "a::model", "outcome": "passed", "reads_model": True},
                    ],
                },
                {
                    "id": "Q1",
                    "verdict": "broken",
                    "tests": [
                        {"nodeid": "a::free", "outcome": "passed", "measured": ["1.5"], "reads_model": False},
                        {"nodeid": "a::fails", "outcome": "failed", "reason": "boom", "reads_model": False},
                    ],
                },
            ],
            "tables": {"x4": {"rows": 1}, "p1": {"rows": 2}},
            "model_free_tables": ["x4"],
        }
    )
    ledger = Ledger()
    assert ledger.reuse(earlier, "earlier.json") == 2
    assert set(ledger.tests) == {"a::free", "a::fails"}
    assert ledger.claims_of["a::free"] == ("S1", "Q1")
    assert ledger.tables == {"x4": {"rows": 1}} and ledger.model_free_tables == ["x4"]
    entries = {e.id: e for e in ledger.entries()}
    assert entries["Q1"].verdict == BROKEN and entries["Q1"].reasons == ("boom",)
    assert entries["S1"].verdict == HOLDS and entries["S1"].measured == ("1.5",)
    written = ledger.ledger_file({"model": "article"})
    assert written.meta["model_free_from"] == {
        "ledger": "earlier.json",
        "model": "reference",
        "model_sha256": None,
        "commit": "abc",
        "tests": 2,
    }
    assert written.model_free_tables == ("x4",)


# How code reads the model under test without asking pytest for it (found
# with ast, so strings handed to an inner pytest do not count): the option
# or its variable, the model plugin's stash keys, the baseline folder of the
# model, or a model fixture fetched by name. A test or fixture doing so must
# request a fixture that reads the model, or its tests would be taken for
# model-free and not run again on a later model.
_OPTION_NAMES = {"aftertrain_model", "AFTERTRAIN_MODEL"}
_MODEL_NAMES = {"MODEL_KEY", "_NET"}
_MODEL_CALLS = {"baseline_folder", "_StoredOnly", "selected"}
_READS = MODEL_FIXTURES | {"baselines_dir"}
#: Helpers (neither tests nor fixtures) that consult the model: their callers
#: are fixtures that request it.
_HELPERS = {
    "conftest.py::baseline_folder": "called by baselines_dir and _StoredOnly.check",
    "conftest.py::check": "_StoredOnly.check, behind num_regression/data_regression",
}


def _consults_the_model(func) -> bool:
    import ast

    for node in ast.walk(func):
        if isinstance(node, ast.Name) and node.id in _MODEL_NAMES:
            return True
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if name in _MODEL_CALLS:
                return True
            if name in ("getoption", "get", "getenv") and _OPTION_NAMES & set(args):
                return True
            if name == "getfixturevalue" and _READS & set(args):
                return True
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value in _OPTION_NAMES
        ):
            return True
    return False


def _functions(path: Path):
    import ast

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef):
            fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
            yield node, fixture


def test_every_test_or_fixture_that_consults_the_model_requests_it():
    root = Path(__file__).resolve().parents[2]
    files = [root / "conftest.py", *root.glob("tests/**/*.py"), *root.glob("benchmarks/*.py")]
    wrong, helpers = [], set()
    for path in files:
        for func, fixture in _functions(path):
            if not _consults_the_model(func):
                continue
            where = f"{path.relative_to(root)}::{func.name}"
            params = {a.arg for a in func.args.args}
            if fixture or func.name.startswith("test_"):
                if not params & _READS:
                    wrong.append(where)
            elif where in _HELPERS:
                helpers.add(where)
            else:
                wrong.append(f"{where} (a helper: list it with its callers in _HELPERS)")
    assert not wrong, f"consult the model without requesting it: {wrong}"
    assert helpers == set(_HELPERS)  # every listed helper still consults the model


def test_the_scan_sees_each_way_of_reading_the_model(tmp_path):
    import ast

    ways = [
        'config.getoption("aftertrain_model")',
        "config.getoption('aftertrain_model')",
        'os.environ["AFTERTRAIN_MODEL"]',
        'os.environ.get("AFTERTRAIN_MODEL")',
        "config.stash[MODEL_KEY]",
        'request.getfixturevalue("aftertrain_model")',
        "baseline_folder(config)",
    ]
    for way in ways:
        func = ast.parse(f"def f(config, request):\n    return {way}\n").body[0]
        assert _consults_the_model(func), way
    inner = ast.parse('def f(pytester):\n    pytester.runpytest("--aftertrain-model", "x")\n')
    assert not _consults_the_model(inner.body[0])


_QUALITY = """
import os
import pytest


@pytest.mark.claim("Q8")
def test_free_quality():
    assert not os.environ.get("QUALITY_FAILS"), "a finding"
"""


def test_a_finding_the_model_made_lenient_is_not_taken(pytester, tmp_path, monkeypatch):
    """On a model without pinned expectations a failed quality assertion is
    "does not reproduce on MODEL": that outcome names the model, so a later
    run on the pinned reference runs the test again (and it fails there)."""
    outside_any_run(monkeypatch)
    monkeypatch.setenv("QUALITY_FAILS", "1")
    pytester.makepyfile(test_quality=_QUALITY)
    committed(pytester.path)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    _run(pytester, "--aftertrain-model=article", f"--claims-json={first}").assert_outcomes(xfailed=1)
    [test] = _tests(first).values()
    assert test["reads_model"] is True and test["outcome"] == "xfailed"
    result = _run(pytester, f"--claims-json={second}", f"--model-free-from={first}")
    result.assert_outcomes(failed=1)
    assert {c["id"]: c["verdict"] for c in json.loads(second.read_text())["claims"]}["Q8"] == BROKEN


def _teardown(nodeid: str, reads: bool, table: str) -> pytest.TestReport:
    from aftertrain.ledger.model_under_test import READS_MODEL_PROPERTY
    from aftertrain.ledger.state import TABLE_PROPERTY

    return pytest.TestReport(
        nodeid=nodeid,
        location=("t.py", 1, nodeid),
        keywords={},
        outcome="passed",
        longrepr=None,
        when="teardown",
        user_properties=[(READS_MODEL_PROPERTY, reads), (TABLE_PROPERTY, (table, [{"n": 1}]))],
    )


def test_a_table_is_model_free_when_its_last_writer_does_not_read_the_model():
    ledger = Ledger()
    ledger.add(_teardown("t.py::free", False, "x4"))
    ledger.add(_teardown("t.py::model", True, "p1"))
    assert ledger.model_free_tables == ["x4"] and set(ledger.tables) == {"x4", "p1"}
    ledger.add(_teardown("t.py::model", True, "x4"))  # now the model's rows
    assert ledger.model_free_tables == []
    ledger.add(_teardown("t.py::free", False, "p1"))
    assert ledger.model_free_tables == ["p1"]
