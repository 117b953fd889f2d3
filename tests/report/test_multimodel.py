"""The report over several models: a verdict column per
model, the overlay plots, "Does a model of the article's quality reproduce
them?" (a claim flipping, one not flipping, one lost), the README table with
a column per model, the command line's model options, and the sweep section.
All rendered from small hand-made ledgers (edited copies of the committed
one) and a hand-made sweep file: no test run here."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from aftertrain import report as R
from aftertrain.claims import tables as TB
from aftertrain.claims import verdicts as V
from aftertrain.cli import main
from aftertrain.core import runmeta
from aftertrain.experiments import sweep as ESW
from aftertrain.experiments.article import ARTICLE
from aftertrain.report import multimodel as MM
from aftertrain.report import sweep as SW
from aftertrain.report.markdown import read_table
from tests.common.committed import COMMITTED, ROOT, committed_data
from tests.common.figures import plots_without_png, png_only_for


def _set(data: dict, cid: str, verdict: str, measured: str | None = None) -> None:
    for c in data["claims"]:
        if c["id"] == cid:
            c["verdict"] = verdict
            if measured is not None:
                c["measured"] = [measured]


@pytest.fixture(scope="module")
def ledgers() -> tuple[R.LedgerFile, R.LedgerFile]:
    """The reference (Q5, Q6 do not reproduce, Q4 holds) and an "article"
    where Q5 flips to holding, Q6 does not, and Q4 stops holding."""
    ref = committed_data()
    ref["meta"] = {"model": "reference"}
    _set(ref, "Q5", V.DOES_NOT_REPRODUCE, "ref-q5 2.7000")
    _set(ref, "Q6", V.DOES_NOT_REPRODUCE, "ref-q6 1.1111")
    _set(ref, "Q4", V.HOLDS)
    art = copy.deepcopy(ref)
    art["meta"] = {"model": "article"}
    _set(art, "Q5", V.HOLDS, "art-q5 2.9000")
    _set(art, "Q6", V.DOES_NOT_REPRODUCE, "art-q6 2.2222")
    _set(art, "Q4", V.DOES_NOT_REPRODUCE, "art-q4 3.3333")
    for t in art["tables"][TB.Q4]["rows"]:
        t["per_channel"] += 0.5
    return R.LedgerFile.from_json(ref, "claims.json"), R.LedgerFile.from_json(art, "claims-article.json")


@pytest.fixture(scope="module")
def doc(ledgers):
    """The two ledgers' document, plots drawn and read back as series but
    not saved (the command's PNGs: :func:`test_cli_reads_several_ledgers_and_exits_zero`)."""
    ref, art = ledgers
    with plots_without_png():
        return R.render(ref, others={"article": art})


def test_claims_table_has_a_figure_and_verdict_column_per_model(doc, ledgers):
    header = MM.claims_header(["reference", "article"])
    assert header[3:] == ["ours (reference)", "verdict (reference)", "ours (article)", "verdict (article)"]
    rows = {r[0]: r for r in read_table(doc.markdown(), header)}
    # each verdict first, what ran beside the claim after "; "
    assert rows["Q5"][4].split("; ")[0] == "**does not reproduce**"
    assert rows["Q5"][6].split("; ")[0] == "holds"
    assert "ref-q5 2.7000" in rows["Q5"][3] and "art-q5 2.9000" in rows["Q5"][5]


def test_flip_section_says_which_claims_reproduce_on_the_article_model(doc):
    md = doc.markdown()
    assert f"## {MM.FLIP_TITLE}" in md
    flip = md.split(f"## {MM.FLIP_TITLE}", 1)[1]
    rows = {
        r[0]: r
        for r in read_table(
            flip,
            [
                "ID",
                "claim",
                "article",
                "ours (reference)",
                "ours (article)",
                "verdict (article)",
                "reproduces",
            ],
        )
    }
    assert rows["Q5"][-1] == "**yes**" and "art-q5 2.9000" in rows["Q5"][4]
    assert rows["Q6"][-1] == "no" and "ref-q6 1.1111" in rows["Q6"][3]
    assert "Q4" not in rows  # it holds on the reference
    lost = read_table(
        flip, ["ID", "claim", "article", "ours (reference)", "ours (article)", "verdict (article)"]
    )
    assert [r[0] for r in lost] == ["Q4"] and "art-q4 3.3333" in lost[0][4]


def test_flips_reads_the_primary_ledgers_verdicts_not_a_fixed_list(ledgers):
    ref, art = ledgers
    not_on_ref, lost = MM.flips(ref, art)
    assert {"Q5", "Q6"} <= set(not_on_ref) and "Q4" not in not_on_ref
    assert lost == ["Q4"]
    assert MM.flips(art, ref)[1] == ["Q5"]  # the other way round


def test_overlay_plots_have_one_line_per_model_and_the_articles_points(doc, ledgers):
    ref, art = ledgers
    bits = doc.plots["models_quant_bits"].series
    assert bits["per-channel (reference)"]["y"] == [r["per_channel"] for r in ref.tables[TB.Q4]["rows"]]
    assert bits["per-channel (article)"]["y"] == [r["per_channel"] for r in art.tables[TB.Q4]["rows"]]
    assert bits["per-channel (published)"]["y"] == [a.per_channel for a in ARTICLE.q4.rows]
    sparsity = doc.plots["models_prune_sparsity"].series
    for m in ("reference", "article"):
        assert sparsity[f"random ({m})"]["y"] == [r["random"] for r in ref.tables[TB.P1]]


def test_single_model_report_has_no_multimodel_section(ledgers, no_png):
    md = R.render(ledgers[0]).markdown()
    assert MM.FLIP_TITLE not in md and "verdict (article)" not in md


def test_model_label_from_meta_path_or_file():
    base = {"format": 2, "claims": []}
    assert (
        MM.model_label(R.LedgerFile.from_json({**base, "meta": {"model": "article"}}, "x.json")) == "article"
    )
    assert (
        MM.model_label(R.LedgerFile.from_json({**base, "meta": {"model": "/tmp/my_run.pt"}}, "x.json"))
        == "my_run"
    )
    assert MM.model_label(R.LedgerFile.from_json(base, "out/claims-sweep-250.json")) == "sweep-250"
    assert MM.model_label(R.LedgerFile.from_json(base, "report/claims.json")) == "reference"


def test_readme_table_gets_a_verdict_column_per_model(tmp_path, ledgers):
    ref, art = ledgers
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{R.README_BEGIN}\nold\n{R.README_END}\n")
    R.update_readme(readme, ref, {"article": art})
    header = ["ID", "claim", "on any model", "verdict (reference)", "verdict (article)"]
    rows = read_table(readme.read_text(), header)
    assert {r[0]: r[4] for r in rows}["Q5"] == "holds"
    assert {r[0]: r[3] for r in rows}["Q5"] == R.assemble.verdict_mark(ref.verdict("Q5"))


def _write(path: Path, ledger: R.LedgerFile, data_from: dict) -> Path:
    path.write_text(json.dumps(data_from))
    return path


def test_cli_reads_several_ledgers_and_exits_zero(tmp_path, ledgers):
    ref = committed_data()
    ref["meta"] = {"model": "reference"}
    art = copy.deepcopy(ref)
    art["meta"] = {"model": "article"}
    (tmp_path / "r.json").write_text(json.dumps(ref))
    (tmp_path / "a.json").write_text(json.dumps(art))
    out = tmp_path / "out"
    with png_only_for("models_quant_bits"):  # the PNG read below; the others' bytes: test_assemble
        assert (
            main(
                ["report", "--claims-json", f"{tmp_path / 'r.json'},{tmp_path / 'a.json'}", "--out", str(out)]
            )
            == 0
        )
    md = (out / "report.md").read_text()
    assert "verdict (article)" in md and MM.FLIP_TITLE in md
    assert (out / "models_quant_bits.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["report", "--models", "no-such-model", "--out", "{tmp}/o"], "--models"),
        (["report", "--models", "article", "--claims-json", "{ledger}", "--out", "{tmp}/o"], "--models"),
        (["report", "--claims-json", "{ledger},{ledger}", "--out", "{tmp}/o"], "same model"),
        (
            ["report", "--claims-json", "{ledger}", "--sweep", "{tmp}/missing.json", "--out", "{tmp}/o"],
            "sweep file",
        ),
        (["sweep", "--models", "no-such-model", "--out", "{tmp}/o"], "--models"),
        (["sweep", "--models", "article,article", "--out", "{tmp}/o"], "twice"),
    ],
)
def test_cli_model_options_refuse_bad_input_in_one_line(tmp_path, capsys, argv, message):
    fill = {"tmp": str(tmp_path), "ledger": str(COMMITTED / "claims.json")}
    assert main([a.format(**fill) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


# --- the sweep section ---------------------------------------------------------------


def _point(model: str, loss: float, q6: float, ratio: float) -> ESW.SweepPoint:
    fig = {
        "val_loss": loss,
        "bigram": 2.6,
        "q4": [
            {"bits": b, "per_tensor": loss + 0.1 * (9 - b), "per_channel": loss + 0.05 * (9 - b)}
            for b in (8, 6, 4, 3)
        ]
        + [{"bits": 2, "per_tensor": 5.0, "per_channel": 5.0 + q6}],
        "q7": [
            {"name": "tok.weight", "loss": loss + 0.1 * ratio, "penalty": 0.1 * ratio},
            {"name": "pos.weight", "loss": loss + 0.2, "penalty": 0.2},
            {"name": "blocks.0.f1.weight", "loss": loss + 0.1, "penalty": 0.1},
        ],
        "p1": [{"sparsity": 0.3, "global": loss + 0.1, "layer": loss + 0.2, "random": 4.0}],
        "p2": [{"sparsity": 0.05, "mean": 3.0, "std": 0.1, "min": 2.9, "max": 3.1}],
        "s4": [
            {
                "draft": d,
                "k": k,
                "drafted": 100,
                "accepted": round(100 * a),
                "target_passes": 50,
                "acceptance": a,
                "chars_per_pass": 2.0,
                "predicted_acceptance": a,
            }
            for d, k, a in (("bigram", 1, 0.3), ("bigram", 8, 0.1), ("8-bit", 1, 0.9), ("8-bit", 8, 0.7))
        ],
    }
    return ESW.sweep_point(model, ESW.KeyFigures.from_record(fig), "measured")


SWEEP = [_point("worse", 2.5, +0.3, 8.0), _point("better", 1.55, -0.2, 2.0)]


def test_sweep_section_marks_where_each_claim_flips(tmp_path, no_png):
    (tmp_path / "sweep.json").write_text(SW.sweep_json(SWEEP))
    points = SW.read_sweep(tmp_path / "sweep.json")
    assert [p.model for p in points] == ["better", "worse"]  # best first
    doc = R.render(R.read_ledger(COMMITTED / "claims.json"), sweep=points)
    md = doc.markdown()
    assert f"## {SW.TITLE}" in md
    q6 = ESW.Margin.Q6_2BIT
    assert "+0.3000 ✓" in md and "-0.2000 ✗" in md  # Q6 holds on the worse model only
    series = doc.plots["sweep_loss_margins"].series
    label = next(k for k in series if k.startswith("Q6"))
    assert series[label]["x"] == [1.55, 2.5] and series[label]["y"] == pytest.approx([-0.2, 0.3])
    assert series["threshold 0"]["y"] == [0.0, 0.0]
    ratio = doc.plots["sweep_q7_ratio"].series
    assert ratio["threshold 5"]["y"] == [5.0, 5.0]
    assert ESW.holds(q6, 0.3) and not ESW.holds(q6, -0.2)


def test_report_renders_the_sweep_file_of_its_output_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "sweep.json").write_text(SW.sweep_json(SWEEP))
    with png_only_for("sweep_loss_margins"):  # the PNG read below; the others' bytes: test_assemble
        assert main(["report", "--claims-json", str(COMMITTED / "claims.json"), "--out", str(out)]) == 0
    assert SW.TITLE in (out / "report.md").read_text()
    assert (out / "sweep_loss_margins.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json", "not valid JSON"),
        ('{"version": 99, "points": []}', "version"),
        ('{"version": 1, "points": [{"model": "x"}]}', "malformed point"),
        (
            re.sub(r'"val_loss": [-+.0-9e]+', '"val_loss": NaN', SW.sweep_json(SWEEP), count=1),
            "holds the number NaN, not finite",
        ),
        ("[" * 100 + "]" * 100, "nested more than 32 deep"),
    ],
)
def test_read_sweep_refuses_a_bad_file(tmp_path, content, message):
    """A sweep file is read as a claims ledger is (core.io.read_json): a
    point whose validation loss is NaN is refused, not sorted and drawn."""
    path = tmp_path / "sweep.json"
    path.write_text(content)
    with pytest.raises(R.ReportError, match=message):
        SW.read_sweep(path)


def test_read_sweep_refuses_a_named_pipe_without_waiting(tmp_path):
    """A named pipe would block the read until a writer comes: refused from its stat."""
    os.mkfifo(tmp_path / "sweep.json")
    with pytest.raises(R.ReportError, match="sweep file .* is a named pipe"):
        SW.read_sweep(tmp_path / "sweep.json")


@pytest.mark.parametrize("jobs", [None, 1, 2])  # None: the default, one model at a time
@pytest.mark.parametrize("status, expected", [(0, 0), (1, 1)])
def test_report_runs_each_model_and_fails_when_a_test_fails_on_any(
    tmp_path, monkeypatch, capsys, status, expected, jobs, no_png
):
    """Without --claims-json the report runs the suite once per model (here
    a stand-in for the run), says which model is running, writes each ledger
    to its own file, and exits 1 when pytest failed on any model (CI's
    README command 1 then fails). With --jobs 2 the runs go side by side,
    sharing one timing lock, each writing its output to its own log file,
    whose last line (pytest's summary) the progress shows. One at a time,
    the second model's run takes the first's ledger as --model-free-from
    (its tests that do not read the model are not run again); side by side
    no run does. Outside a git checkout (a source tarball) the checkout's
    code has no fingerprint, so the later run is whole and says why."""
    from dataclasses import replace

    from aftertrain.cli import suite

    calls, locks, earlier = [], [], {}
    tree = runmeta.worktree(ROOT)

    def fake_run(
        checkout,
        json_path,
        quick,
        log,
        meta=None,
        model=None,
        *,
        timing_lock=None,
        output=None,
        model_free_from=None,
    ):
        calls.append((model, Path(json_path).name))
        locks.append(timing_lock)
        earlier[model] = (model_free_from, json_path)
        if output is not None:
            output.write_text(f"...\n1 passed ({model})\n")
        data = committed_data()
        data["meta"] = {"model": model, "worktree": tree}
        json_path.write_text(json.dumps(data))
        return replace(R.read_ledger(json_path), pytest_status=status if model == "article" else 0)

    monkeypatch.setattr(suite, "run_ledger", fake_run)
    out = tmp_path / "out"
    assert (
        main(
            ["report", "--out", str(out), "--checkout", str(ROOT)]
            + ([] if jobs is None else ["--jobs", str(jobs)])
        )
        == expected
    )

    assert sorted(calls) == [("article", "claims-article.json"), ("reference", "claims.json")]
    err = capsys.readouterr().err
    assert "model 1 of 2: reference" in err and "model 2 of 2: article" in err
    if jobs == 2:
        assert locks[0] is not None and locks == [locks[0]] * 2
        assert "model article: 1 passed (article) (all of it: " in err
        logs = locks[0].parent  # removed when every run passed, kept when one failed
        assert logs.is_dir() == (status != 0)
        assert (f"logs and lock ({logs}) removed" in err) == (status == 0)
        assert (f"whole log is kept in {logs}" in err) == (status != 0)
        if status != 0:
            shutil.rmtree(logs)
        assert earlier["reference"][0] is None and earlier["article"][0] is None
    elif tree is None:  # a copy without .git (a source tarball): nothing can be taken
        assert locks == [None, None]
        assert earlier["reference"][0] is None and earlier["article"][0] is None
        assert f"{ROOT} is not a git checkout with a commit: article's run runs every test" in err
    else:
        assert locks == [None, None]
        assert earlier["reference"][0] is None
        assert earlier["article"][0] == earlier["reference"][1]
        assert "do not read the model ran on reference" in err
    assert "verdict (article)" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    "status, accepted", [(0, True), (1, True), (2, False), (3, False), (4, False), (5, False)]
)
def test_only_a_run_that_ran_its_tests_gives_a_ledger(tmp_path, monkeypatch, status, accepted):
    """pytest's status 0 (all passed) and 1 (some failed) are runs whose
    ledger is whole; 2 (interrupted), 3 (internal error), 4 (usage error) and
    5 (nothing collected) are not, even when a ledger file was left behind:
    the report refuses them, naming the status, instead of rendering a part."""
    import subprocess

    from aftertrain.cli import suite
    from aftertrain.report import ReportError

    json_path = tmp_path / "claims.json"

    def fake_run(cmd, **kwargs):
        json_path.write_text(json.dumps(committed_data()))
        return subprocess.CompletedProcess(cmd, status)

    monkeypatch.setattr(suite.subprocess, "run", fake_run)
    run = lambda: suite.run_ledger(ROOT, json_path, False, lambda msg: None)  # noqa: E731
    if accepted:
        assert run().pytest_status == status
    else:
        with pytest.raises(ReportError, match=f"pytest exited with status {status}"):
            run()


def test_a_run_that_took_its_model_free_outcomes_says_so():
    """A later model's run (``--model-free-from``): a claim none of whose
    tests read the model is marked in its verdict column with the run its
    outcomes came from; the section names how many tests and which claims."""
    reference = R.LedgerFile.from_json(committed_data(), "claims.json")
    data = committed_data()
    data["meta"]["model"] = "article"
    data["meta"]["model_free_from"] = {
        "ledger": "claims.json",
        "model": "reference",
        "model_sha256": "0",
        "commit": "c",
        "tests": 3,
    }
    for c in data["claims"]:
        for n, t in enumerate(c["tests"]):
            # S1 wholly model-free; Q1 partly; every other claim reads the model
            t["reads_model"] = not (c["id"] == "S1" or (c["id"] == "Q1" and n == 0))
    article = R.LedgerFile.from_json(data, "claims-article.json")
    assert article.taken_whole("S1") and not article.taken_whole("Q1")
    assert not reference.taken_whole("S1")  # no reads_model in the committed ledger
    rows = {r[0]: r for r in MM.claims_rows_per_model({"reference": reference, "article": article})}
    assert rows["S1"][-1].endswith("(reference's run: no test of it reads the model)")
    assert "reference's run" not in rows["Q1"][-1] and "reference's run" not in rows["S1"][-3]
    text = MM.model_free_text("article", article)
    assert "The 3 claim tests" in text and "every test of S1;" in text
    del data["meta"]["model_free_from"]  # a whole run: nothing taken
    assert not R.LedgerFile.from_json(data, "x.json").taken_whole("S1")


def test_a_claim_with_no_tests_is_not_taken_from_the_earlier_run():
    """In a run that took its model-free outcomes (``--model-free-from``), a
    claim with no test at all (not covered) was decided by no test of the
    earlier run: its verdict cell reads as in a whole run, without the
    earlier run's note, and the section's "every test of ..." lists only
    the claims whose every test was taken (S1 here)."""
    data = committed_data()
    data["meta"]["model"] = "article"
    for c in data["claims"]:
        for t in c["tests"]:
            t["reads_model"] = c["id"] != "S1"
        if c["id"] == "Q4":
            c.update(tests=[], verdict="not covered", parts={}, defining=[])
    whole = R.LedgerFile.from_json(data, "claims-article.json")
    data["meta"]["model_free_from"] = {"ledger": "claims.json", "model": "reference", "tests": 10}
    taken = R.LedgerFile.from_json(data, "claims-article.json")
    assert not taken.taken_whole("Q4") and taken.taken_whole("S1")
    cells = {r[0]: r[-1] for r in MM.claims_rows_per_model({"article": taken})}
    assert cells["Q4"] == {r[0]: r[-1] for r in MM.claims_rows_per_model({"article": whole})}["Q4"]
    assert "reference's run" not in cells["Q4"] and "reference's run" in cells["S1"]
    assert "(every test of S1; some tests of the others)" in MM.model_free_text("article", taken)


def test_a_later_model_runs_every_test_when_the_checkout_changed(tmp_path, monkeypatch, capsys, no_png):
    """The first model's outcomes stand for a later model's only on the same
    tracked code: when it changed between the runs (a commit, an edit of a
    tracked file), the later run is whole and the progress says why."""
    if runmeta.worktree(ROOT) is None:
        pytest.skip(
            f"{ROOT} is not a git checkout with a commit (a source tarball): the "
            "report cannot tell changed code there; that case is "
            "test_report_runs_each_model_and_fails_when_a_test_fails_on_any's"
        )
    from dataclasses import replace

    from aftertrain.cli import suite

    given = {}

    def fake_run(
        checkout,
        json_path,
        quick,
        log,
        meta=None,
        model=None,
        *,
        timing_lock=None,
        output=None,
        model_free_from=None,
    ):
        given[model] = model_free_from
        data = committed_data()
        data["meta"] = {"model": model, "commit": "the first run's commit", "worktree": "other"}
        json_path.write_text(json.dumps(data))
        return replace(R.read_ledger(json_path), pytest_status=0)

    monkeypatch.setattr(suite, "run_ledger", fake_run)
    assert main(["report", "--out", str(tmp_path / "out"), "--checkout", str(ROOT)]) == 0
    assert given == {"reference": None, "article": None}
    err = capsys.readouterr().err
    assert (
        f"the checkout's tracked code changed since reference's run (commit the first run's "
        f"commit, now {runmeta.commit(ROOT)}): article's run runs every test"
    ) in err


def test_outside_a_git_checkout_a_later_model_runs_every_test(tmp_path, monkeypatch, capsys, no_png):
    """Where the checkout's code has no fingerprint (``runmeta.worktree`` is
    None: a source tarball, a packager's build), the first run's ledger has
    none either; None equal to None is no proof of the same code, so the
    later model's run is whole and the progress says why. Run in a git
    checkout too, with the fingerprint taken away."""
    from dataclasses import replace

    from aftertrain.cli import suite

    monkeypatch.setattr(suite.runmeta, "worktree", lambda root: None)
    given = {}

    def fake_run(
        checkout,
        json_path,
        quick,
        log,
        meta=None,
        model=None,
        *,
        timing_lock=None,
        output=None,
        model_free_from=None,
    ):
        given[model] = model_free_from
        data = committed_data()
        data["meta"] = {"model": model, "worktree": None}
        json_path.write_text(json.dumps(data))
        return replace(R.read_ledger(json_path), pytest_status=0)

    monkeypatch.setattr(suite, "run_ledger", fake_run)
    assert main(["report", "--out", str(tmp_path / "out"), "--checkout", str(ROOT)]) == 0
    assert given == {"reference": None, "article": None}
    assert (
        f"{ROOT} is not a git checkout with a commit: article's run runs every test"
        in capsys.readouterr().err
    )


def test_the_reports_suite_runs_get_the_reports_timing_deadline(tmp_path, monkeypatch):
    """``aftertrain report`` runs each suite with ``--timing-budget-total``
    at REPORT_TIMING_BUDGET_TOTAL_S (540 s), twice the default run's 270 s:
    a report decides the timing claims a commit's run may leave inconclusive."""
    import subprocess

    from aftertrain.cli import suite
    from aftertrain.core.tolerances import REPORT_TIMING_BUDGET_TOTAL_S, TIMING_BUDGET_TOTAL_S

    json_path, seen = tmp_path / "claims.json", []

    def fake_run(cmd, **kwargs):
        seen.append(cmd)
        json_path.write_text(json.dumps(committed_data()))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(suite.subprocess, "run", fake_run)
    suite.run_ledger(ROOT, json_path, False, lambda msg: None)
    assert (REPORT_TIMING_BUDGET_TOTAL_S, TIMING_BUDGET_TOTAL_S) == (540.0, 270.0)
    assert [a for a in seen[0] if a.startswith("--timing-budget-total")] == ["--timing-budget-total=540"]
