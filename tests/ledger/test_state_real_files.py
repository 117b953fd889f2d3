"""The rule of :mod:`aftertrain.claims.parts` on this project's own test
files, run as a user runs them (a pytest in the repository's root, with its
configuration): tests of the method alone decide no claim.

The heavier cases (the claims of part 3 on the bundled ``overfit`` model
and on a 100-step checkpoint) are ``slow``: each evaluates every quantized
configuration of a model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.common.inner_runs import outside_any_run

ROOT = Path(__file__).resolve().parents[2]


def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """``python -m pytest ARGS`` in the repository's root, in one process,
    with its ledger in ``tmp_path``; the process and the ledger's claims by ID."""
    outside_any_run(monkeypatch)
    ledger = tmp_path / "claims.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "0",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--claims-json={ledger}",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert ledger.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, {c["id"]: c for c in json.loads(ledger.read_text())["claims"]}


@pytest.mark.e2e
def test_the_speedup_rules_self_tests_alone_decide_no_timing_claim(tmp_path, monkeypatch):
    """The decision rules' teeth and self-tests check the rules, nothing is
    timed: S5, S6, S7, X2 and X8 are not decided here (their timing did not
    run), never ``holds``, and the run passes; X7, whose claim the teeth are,
    holds."""
    proc, claims = _run(
        tmp_path, monkeypatch, "tests/experiments/test_speedup_rules.py", "--aftertrain-model", "article"
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    for claim_id in ("S5", "S6", "S7", "X2", "X8"):
        c = claims[claim_id]
        assert c["verdict"] == "not decided here", (claim_id, c["verdict"])
        assert [u["part"] for u in c["undecided"]] == ["timed part"]
        assert c["beside"] and set(c["beside"]) <= {"teeth", "method"}
    assert claims["X7"]["verdict"] == "holds"


@pytest.mark.slow
def test_on_the_overfit_model_the_articles_assertions_decide_q5_to_q7(tmp_path, monkeypatch):
    """report/sweep.md: the overfit recipe reproduces Q5, Q6 and Q7. On it,
    without pins, the article's assertions alone decide them: all three
    hold; our reference's pinned figures are skipped beside them."""
    proc, claims = _run(
        tmp_path, monkeypatch, "tests/claims_on_model/test_quant.py", "--aftertrain-model", "overfit"
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert {c: claims[c]["verdict"] for c in ("Q5", "Q6", "Q7")} == dict.fromkeys(("Q5", "Q6", "Q7"), "holds")
    assert claims["Q6"]["beside"]["expectation of our model"] == {"skipped": 1}
