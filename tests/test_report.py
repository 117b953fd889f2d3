"""The claims report: built from a ledger, every table and plot present,
a broken claim shown as broken and in the exit status.

The full report runs the whole suite (``aftertrain report``); running it
inside the suite would run the suite twice. These tests instead build the
report from ledgers: the committed report's own ledger
(``report/claims.json``, written by the committed code's test run), and a
ledger produced here by pytester from a claim made to fail.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from aftertrain import report as R
from aftertrain.claims import CLAIMS
from aftertrain.cli import main

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "report"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PLOTS = ("quant_bits", "quant_sensitivity", "prune_sparsity", "prune_bytes", "spec_acceptance",
         "spec_speedup")
TABLE_TITLES = (
    "Validation loss of the baselines", "Cached decoding against full recomputation",
    "Validation loss by bit width", "Storage of int8", "2 bits on blocks.0.f1",
    "One matrix at a time at 4 bits", "Penalties compound", "Same seed, float32 against int8",
    "No outlier channels", "Fake-quantized forward against float32", "Dynamic int8 Linear",
    "Validation loss by sparsity", "Random pruning", "Global-magnitude sparsity with the loss",
    "Bytes per element", "At equal size", "Dense (128x128)@(128x512) with zeros",
    "CSR sparse matmul against dense", "2:4 structured pruning",
    "TV distance of 20,000 first characters", "Acceptance follows draft quality",
    "Acceptance at k=8 predicted from k=1", "Cost c of one draft character",
    "Verification pass over k+1 positions", "Speedup over plain cached decoding",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A --quick report rendered from the committed ledger into a temporary folder."""
    out = tmp_path_factory.mktemp("report")
    status = main(["report", "--quick", "--claims-json", str(COMMITTED / "claims.json"),
                   "--out", str(out)])
    assert status == 0
    return out


def test_report_has_every_table_of_the_articles(built):
    text = (built / "report.md").read_text()
    for title in TABLE_TITLES:
        assert f"**{title}" in text, title
    assert "*No figures for" not in text
    assert "**Quick run**" in text


def test_report_lists_every_claim_with_its_verdict(built):
    text = (built / "report.md").read_text()
    ledger = R.read_ledger(COMMITTED / "claims.json")
    for cid, claim in CLAIMS.items():
        assert f"| {cid} | {claim.title}:" in text, cid
    for cid in CLAIMS:
        if ledger.verdict(cid) == R.DOES_NOT_REPRODUCE:
            assert f"- **{cid}** ({CLAIMS[cid].title}):" in text


def test_report_plots_are_valid_png_files_linked_from_the_report(built):
    text = (built / "report.md").read_text()
    for name in PLOTS:
        path = built / f"{name}.png"
        data = path.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 10_000, name
        assert f"]({name}.png)" in text


def test_committed_report_is_the_rendering_of_its_committed_ledger(tmp_path):
    """The committed report.md equals what the committed code renders from
    the committed ledger: nobody edited one without the other."""
    R.build(R.read_ledger(COMMITTED / "claims.json"), tmp_path)
    assert (tmp_path / "report.md").read_text() == (COMMITTED / "report.md").read_text()


def test_readme_claims_table_is_the_committed_reports(built):
    """The README's table at the top is the report's "All claims" table."""
    readme = (ROOT / "README.md").read_text()
    ledger = R.read_ledger(COMMITTED / "claims.json")
    assert R.claims_table(ledger) in readme


FAILING = '''
import pytest

@pytest.mark.claim("Q2")
def test_int8_loss_within_0p01_of_float32(record_property):
    record_property("measured", "int8 +0.2000 nats")
    assert 0.2 < 0.01

@pytest.mark.claim("P7")
def test_zeros_do_not_speed_up_a_dense_matmul():
    pass
'''


def test_a_claim_made_to_fail_shows_as_broken_in_report_and_exit_status(pytester, tmp_path,
                                                                        capsys, monkeypatch):
    """Through the ledger: a pytest run whose Q2 test fails writes a ledger;
    the report built from it marks Q2 BROKEN and exits with status 1."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_made_to_fail=FAILING)
    ledger_path = tmp_path / "claims.json"
    result = pytester.runpytest("-p", "aftertrain.ledger", "--claims-json", str(ledger_path))
    result.assert_outcomes(passed=1, failed=1)
    out = tmp_path / "out"
    status = main(["report", "--claims-json", str(ledger_path), "--out", str(out)])
    assert status == 1
    text = (out / "report.md").read_text()
    assert "| Q2 | int8 is nearly free:" in text and "**BROKEN**" in text
    assert "int8 +0.2000 nats" in text
    assert "1 broken" in capsys.readouterr().out


def test_report_without_a_ledger_explains_what_to_give(tmp_path, capsys):
    status = main(["report", "--claims-json", str(tmp_path / "missing.json"),
                   "--out", str(tmp_path / "out")])
    assert status == 2
    assert "claims ledger" in capsys.readouterr().err


def test_report_rejects_a_file_that_is_not_a_ledger(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"something": 1}))
    with pytest.raises(R.ReportError, match="not a claims ledger"):
        R.read_ledger(bad)


def test_report_rejects_a_checkout_without_tests(tmp_path):
    args = argparse.Namespace(out=str(tmp_path / "out"), quick=True, claims_json=None,
                              checkout=str(tmp_path))
    with pytest.raises(R.ReportError, match="aftertrain source tree"):
        R.main(args)


def test_update_readme_rewrites_only_the_table_between_its_markers(tmp_path):
    ledger = R.read_ledger(COMMITTED / "claims.json")
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n{R.README_BEGIN}\nold table\n{R.README_END}\n## after\n")
    R.update_readme(readme, ledger)
    text = readme.read_text()
    assert text.startswith("# title\n") and text.endswith(f"{R.README_END}\n## after\n")
    assert "old table" not in text and R.claims_table(ledger) in text
    readme.write_text("# no markers\n")
    with pytest.raises(R.ReportError, match="no claims-table markers"):
        R.update_readme(readme, ledger)
