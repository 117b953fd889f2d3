"""``aftertrain report`` end to end on a checkout where a claim's test fails.

Every other test of the report hands it a finished ledger (``--claims-json``)
or a fake ``run_ledger``. Here the real path runs: the command checks the
checkout and the model, starts pytest in a subprocess on the checkout's own
configuration, reads the ledger that run wrote, renders the report and
returns its exit status. The checkout is a temporary one, a
``pyproject.toml`` and one test file, so the whole run takes a few seconds
on a bundled model.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from aftertrain.cli import main
from tests.common.inner_runs import outside_any_run

PYPROJECT = """
[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-p aftertrain.ledger -p aftertrain.ledger.model_under_test"
"""

CLAIM_TESTS = """
import pytest

@pytest.mark.claim("Q3")
def test_int8_cuts_weight_memory_to_a_quarter(claim_record):
    claim_record.measured("2.41 MB -> 1.20 MB")
    assert 1.20 <= 2.41 / 4 + 0.01, "int8 storage is 1.20 MB, not a quarter of 2.41 MB"

@pytest.mark.claim("Q2")
def test_int8_costs_at_most_0p01_nats():
    assert 0.5 <= 0.01, "int8 costs 0.5000 nats"

@pytest.mark.claim("Q1")
def test_rule(claim_record):
    claim_record.measured("qmax 127")

@pytest.mark.claim("Q5")
@pytest.mark.xfail(strict=True, reason="3 bits stay below the bigram here")
def test_three_bits_collapse():
    assert False
"""


@pytest.fixture
def checkout(tmp_path):
    """A source tree the report accepts: pyproject.toml and tests/."""
    root = tmp_path / "checkout"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tests" / "test_claims.py").write_text(CLAIM_TESTS)
    return root


def test_report_on_a_checkout_where_a_claims_test_fails_shows_it_broken_and_exits_1(
    checkout, tmp_path, capfd, monkeypatch, no_png
):
    """On the bundled article model (no pinned expectations): Q3's failure
    (a property of the storage format) is broken, with its message in the
    report; Q2's failed assertion (a quality claim) does not reproduce on
    that model; Q1 holds; Q5, a strict xfail, does not reproduce. The claims
    table and the reasons say so, the summary line counts them with pytest's
    exit status, and the command exits 1. The files it wrote (the ledger by
    the pytest subprocess, the report by the command) have the mode a plain
    write gives under the run's umask, 0o027 here: 0o640, neither a fixed
    0o644 nor mkstemp's 0o600."""
    out = tmp_path / "out"
    outside_any_run(monkeypatch)  # the inner run is no worker
    before = os.umask(0o027)
    try:
        status = main(["report", "--checkout", str(checkout), "--out", str(out), "--models", "article"])
    finally:
        os.umask(before)
    printed = capfd.readouterr().out
    assert status == 1
    assert "1 broken, 2 does not reproduce, 1 holds, 33 not covered" in printed
    assert "pytest exit status 1 (a test failed)" in printed

    ledger = json.loads((out / "claims.json").read_text())
    assert ledger["meta"]["model"] == "article"
    entries = {e["id"]: e for e in ledger["claims"]}
    assert {k: entries[k]["verdict"] for k in ("Q1", "Q2", "Q3", "Q5", "Q4")} == {
        "Q1": "holds",
        "Q2": "does not reproduce",
        "Q3": "broken",
        "Q5": "does not reproduce",
        "Q4": "not covered",
    }
    q3_reason = (
        "AssertionError: int8 storage is 1.20 MB, not a quarter of 2.41 MB\nassert 1.2 <= ((2.41 / 4) + 0.01)"
    )
    assert entries["Q3"]["reasons"] == [q3_reason]
    assert entries["Q2"]["reasons"] == [
        "does not reproduce on article: AssertionError: int8 costs 0.5000 nats"
    ]

    report = (out / "report.md").read_text()
    rows = {
        line.split("|")[1].strip(): line
        for line in report.splitlines()
        if line.startswith("| ") and line.count("|") > 3
    }
    assert rows["Q3"].rstrip().endswith("| **BROKEN** |") and "2.41 MB -> 1.20 MB" in rows["Q3"]
    assert rows["Q1"].rstrip().endswith("| holds |")
    assert "does not reproduce" in rows["Q2"] and "does not reproduce" in rows["Q5"]
    assert (
        "- **Q3** (memory) broken: AssertionError: int8 storage is 1.20 MB, not a quarter of 2.41 MB"
    ) in report

    for name in ("claims.json", "report.md"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o640, name


LOCK_TESTS = """
import json
import os
import time

import pytest

LOG = os.environ["AFTERTRAIN_E2E_LOG"]


def _log(kind, start):
    with open(LOG, "a") as f:
        f.write(json.dumps([os.getpid(), kind, start, time.time()]) + "\\n")


@pytest.mark.claim("Q1")
@pytest.mark.parametrize("i", range(4))
def test_untimed(i):
    start = time.time()
    time.sleep(0.15)
    _log("untimed", start)


@pytest.mark.claim("Q11")
@pytest.mark.parametrize("i", range(2))
def test_timed(benchmark, i):
    start = time.time()
    benchmark.pedantic(lambda: time.sleep(0.15), rounds=1, iterations=1)
    _log("timed", start)
"""


@pytest.mark.e2e
def test_two_models_side_by_side_never_time_while_the_other_runs_a_test(tmp_path, capfd, monkeypatch):
    """``--models reference,article --jobs 2``: two real pytest runs at once
    sharing the timing lock. Each test logs its pid and its start and end
    times: no test of one run overlaps a timed test of the other (their
    untimed tests may overlap each other), both ledgers are read into one
    report, and the progress names each run's log file."""
    root = tmp_path / "checkout"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tests" / "test_lock.py").write_text(LOCK_TESTS)
    log = tmp_path / "intervals.jsonl"
    monkeypatch.setenv("AFTERTRAIN_E2E_LOG", str(log))
    outside_any_run(monkeypatch)  # the inner runs are no workers: they time
    out = tmp_path / "out"
    status = main(
        ["report", "--checkout", str(root), "--out", str(out), "--models", "reference,article", "--jobs", "2"]
    )
    err = capfd.readouterr().err
    assert status == 0, err
    assert "running 2 models 2 at a time" in err and err.count("its output goes to") == 2
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    pids = {pid for pid, *_ in runs}
    assert len(pids) == 2 and len(runs) == 12
    for pid, kind, start, end in runs:
        if kind != "timed":
            continue
        others = [(s, e) for p, _, s, e in runs if p != pid]
        assert all(e <= start or s >= end for s, e in others), (start, end, others)
    assert (out / "claims.json").is_file() and (out / "claims-article.json").is_file()


@pytest.mark.e2e
def test_report_quick_on_the_reference_runs_this_checkouts_suite_and_exits_0(tmp_path, capfd, monkeypatch):
    """The README's ``aftertrain report --quick --models reference``, whole:
    this checkout's own suite in a child pytest with the quick variables
    set, so every test that starts a run of its own must clear them (an
    inner run that inherits ``AFTERTRAIN_QUICK=1`` times a third of the
    pairs it asks for and fails). Exit 0, and the report says it is quick."""
    outside_any_run(monkeypatch)
    out = tmp_path / "out"
    status = main(["report", "--quick", "--models", "reference", "--out", str(out)])
    err = capfd.readouterr().err
    assert status == 0, err[-4000:]
    report = (out / "report.md").read_text()
    assert "quick" in report.lower()
    assert json.loads((out / "claims.json").read_text())["claims"]
