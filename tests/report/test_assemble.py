"""The claims report: built from a ledger, every table and plot present and
equal to the ledger's figures, each figure once per cell, reasons shown, run
metadata in the header, PNGs that depend only on the data, and a committed
report and README table that agree with the committed ledger.

The full report runs the whole suite (``aftertrain report``); running it
inside the suite would run the suite twice. These tests build the report
from ledgers: the committed report's own (``report/claims.json``), edited
copies of it, and one produced here by pytester from a claim made to fail.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest

from aftertrain import report as R
from aftertrain.claims import tables as TB
from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.ledgerfile import ClaimEntry, LedgerFile
from aftertrain.claims.verdicts import Verdict
from aftertrain.cli import main
from aftertrain.report import meta as meta
from aftertrain.report import multimodel as MM
from aftertrain.report.document import TIMING_CLAIMS, deterministic_rows
from aftertrain.report.markdown import figures, figures_once, fmt, read_table
from aftertrain.report.quant import parting_excerpt
from tests.common.committed import COMMITTED, ROOT, committed_data
from tests.common.figures import plots_without_png, png_only_for, render_committed
from tests.common.inner_runs import outside_any_run

pytest_plugins = ["pytester"]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PLOTS = (
    "quant_bits",
    "quant_sensitivity",
    "prune_sparsity",
    "prune_bytes",
    "spec_acceptance",
    "spec_speedup",
)
TABLE_TITLES = (
    "Validation loss of the baselines",
    "Cached decoding against full recomputation",
    "Validation loss by bit width",
    "Storage of int8",
    "2 bits on blocks.0.f1",
    "One matrix at a time at 4 bits",
    "Penalties compound",
    "Same seed, float32 against int8",
    "No outlier channels",
    "Fake-quantized forward against float32",
    "Dynamic int8 Linear",
    "Validation loss by sparsity",
    "Random pruning",
    "Global-magnitude sparsity with the loss",
    "Bytes per element",
    "At equal size",
    "Dense (128x128)@(128x512) with zeros",
    "CSR sparse matmul against dense",
    "2:4 structured pruning",
    "TV distance of 20,000 first characters",
    "Acceptance follows draft quality",
    "Acceptance at k=8 predicted from k=1",
    "Cost c of one draft character",
    "Verification pass over k+1 positions",
    "Speedup over plain cached decoding",
)


def _ledger(data: dict, name: str = "claims.json") -> R.LedgerFile:
    return R.LedgerFile.from_json(data, name)


@pytest.fixture(scope="module")
def committed() -> R.LedgerFile:
    return R.read_ledger(COMMITTED / "claims.json")


@pytest.fixture(scope="module")
def doc(committed):
    """The committed ledger's document, its plots drawn and read back as
    series but not saved: what the tests of text and series read (the PNGs
    are :func:`built`'s and :func:`test_png_bytes_depend_only_on_the_data`'s)."""
    with plots_without_png():
        return R.render(committed)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The report rendered by the command line from the committed ledger,
    run from a temporary folder without ``--out``: the default folder there."""
    cwd = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        assert main(["report", "--claims-json", str(COMMITTED / "claims.json")]) == 0
    return cwd / R.DEFAULT_OUT


# --- every table and plot, linked -------------------------------------------------


def test_report_has_every_table_of_the_articles(built):
    text = (built / "report.md").read_text()
    for title in TABLE_TITLES:
        assert f"**{title}" in text, title
    assert "*No figures for" not in text


def test_report_lists_every_claim_with_its_verdict(built, committed):
    rows = read_table((built / "report.md").read_text(), R.document.CLAIMS_HEADER)
    assert [r[0] for r in rows] == list(CLAIMS)
    for cid, claim, _article, _ours, verdict in rows:
        assert claim.startswith(CLAIMS[cid].title + ":")
        assert committed.verdict(cid) in verdict


def test_report_plots_are_png_files_linked_from_the_report(built):
    text = (built / "report.md").read_text()
    for name in PLOTS:
        data = (built / f"{name}.png").read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 10_000, name
        assert f"]({name}.png)" in text


# --- the committed report, the README table and the ledger agree --------------------


def test_committed_report_is_the_rendering_of_its_committed_ledger():
    """The committed report.md is what the committed code renders from the
    committed ledger (its metadata block aside when that is taken at render
    time): nobody edited one without the other. The rendering is
    :func:`render_committed`'s (the primary ledger, the other models' if any,
    the sweep file; the plots' captions and links without their PNGs),
    shared with the figures inventory."""
    rendered = render_committed().markdown()
    assert meta.strip_header(rendered) == meta.strip_header((COMMITTED / "report.md").read_text())


def _readme_table_mismatches(table: str, primary: R.LedgerFile, others: dict) -> list[str]:
    """The claims whose line in a README claims table ``table`` is not the
    catalogue's ID and title with each ledger's verdict, read back cell by
    cell (an independent reading: the verdict words, not the rendering)."""
    ledgers = [primary, *others.values()]
    header = ["ID", "claim", "on any model"] + [f"verdict ({m})" for m in (MM.model_label(primary), *others)]
    rows = read_table(table, header)
    wrong = [] if [r[0] for r in rows] == list(CLAIMS) else ["order"]
    for row in rows:
        verdicts = [cell.strip("*").lower() for cell in row[3:]]
        claim = CLAIMS[row[0]]
        if (row[1], row[2]) != (claim.title, claim.any_model) or verdicts != [
            led.verdict(row[0]) for led in ledgers
        ]:
            wrong.append(row[0])
    return wrong


def _committed_readme_table() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split(R.README_BEGIN, 1)[1].split(R.README_END, 1)[0]


def test_readme_claims_table_is_the_committed_ledgers_verdicts():
    """A line per claim (ID, the article's words, the verdict on each
    committed model), exactly as the committed ledgers give it."""
    primary, others = R.assemble.read_report_ledgers(COMMITTED)
    assert list(others) == ["article"]
    assert _readme_table_mismatches(_committed_readme_table(), primary, others) == []


@pytest.mark.teeth
def test_readme_table_check_catches_a_changed_verdict_or_title():
    primary, others = R.assemble.read_report_ledgers(COMMITTED)
    table = _committed_readme_table()
    q2 = next(line for line in table.splitlines() if line.startswith("| Q2 |"))
    for edit in (q2.replace("| holds |", "| **BROKEN** |", 1), q2.replace("int8", "int4", 1)):
        assert edit != q2
        assert _readme_table_mismatches(table.replace(q2, edit), primary, others) == ["Q2"]


def test_readme_check_sees_a_verdict_or_figure_change_but_not_a_timing_move(committed):
    rows = R.claims_rows(committed)
    timing = copy.deepcopy(rows)
    s6 = next(r for r in timing if r[0] == "S6")
    s6[3] = s6[3].replace("0.", "9.")
    assert deterministic_rows(timing) == deterministic_rows(rows)
    for column, new in ((3, "float32 9.9999"), (4, "**BROKEN**")):
        changed = copy.deepcopy(rows)
        next(r for r in changed if r[0] == "Q2")[column] = new
        assert deterministic_rows(changed) != deterministic_rows(rows)
    assert "Q2" not in TIMING_CLAIMS and "B1" not in TIMING_CLAIMS


def test_update_readme_rewrites_only_the_table_between_its_markers(tmp_path, committed):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n{R.README_BEGIN}\nold table\n{R.README_END}\n## after\n")
    R.update_readme(readme, committed)
    text = readme.read_text()
    assert text.startswith("# title\n") and text.endswith(f"{R.README_END}\n## after\n")
    assert "old table" not in text and R.readme_table(committed) in text
    readme.write_text("# no markers\n")
    with pytest.raises(R.ReportError, match="no claims-table markers"):
        R.update_readme(readme, committed)


def test_the_readme_table_made_reads_back_as_the_catalogue_and_the_ledgers():
    """What :func:`readme_table` makes, read back cell by cell as the
    committed README's is: the catalogue's ID and title (not its
    statement) with each committed model's verdict, in that order."""
    primary, others = R.assemble.read_report_ledgers(COMMITTED)
    assert _readme_table_mismatches(R.readme_table(primary, others), primary, others) == []


def test_a_claim_the_run_left_out_keeps_its_line_as_not_covered():
    """A line per claim of the catalogue, whatever the ledger holds: a run
    of one claim (``pytest --claim Q2``) gives Q2's verdict and ``not
    covered`` on every other line."""
    only_q2 = LedgerFile((ClaimEntry("Q2", Verdict.HOLDS, title=CLAIMS["Q2"].title),))
    rows = R.readme_rows(only_q2)
    assert [r[0] for r in rows] == list(CLAIMS)
    assert {r[0]: r[3] for r in rows} == {c: "holds" if c == "Q2" else "not covered" for c in CLAIMS}
    assert _readme_table_mismatches(R.readme_table(only_q2), only_q2, {}) == []


def test_update_readme_writes_the_markers_and_the_table_on_their_own_lines_and_again(tmp_path, committed):
    """The text between the markers is the table alone, each marker on its
    own line, so a second update (with another model beside) finds them
    and rewrites the table again, and nothing else."""
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n{R.README_BEGIN}\nold table\n{R.README_END}\n## after\n")
    R.update_readme(readme, committed)
    table = R.readme_table(committed)
    assert readme.read_text() == f"# title\n{R.README_BEGIN}\n{table}\n{R.README_END}\n## after\n"
    others = {"article": R.read_ledger(COMMITTED / "claims-article.json")}
    R.update_readme(readme, committed, others)
    table = R.readme_table(committed, others)
    assert readme.read_text() == f"# title\n{R.README_BEGIN}\n{table}\n{R.README_END}\n## after\n"


@pytest.mark.parametrize("marker", ["begin", "end"])
def test_a_readme_with_one_marker_is_refused_and_left_as_it_was(tmp_path, committed, marker):
    readme = tmp_path / "README.md"
    text = f"# title\n{R.README_BEGIN if marker == 'begin' else R.README_END}\nold table\n"
    readme.write_text(text)
    with pytest.raises(R.ReportError, match="no claims-table markers"):
        R.update_readme(readme, committed)
    assert readme.read_text() == text


def test_the_committed_readme_holds_the_markers_update_readme_looks_for():
    """``aftertrain report --update-committed`` rewrites the committed
    README: it holds each marker once, on its own line, the begin marker first."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines.count(R.README_BEGIN) == 1 and lines.count(R.README_END) == 1
    assert lines.index(R.README_BEGIN) < lines.index(R.README_END)


def test_update_readme_refuses_a_folder(tmp_path, committed):
    folder = tmp_path / "README.md"
    folder.mkdir()
    with pytest.raises(ValueError, match="readme must be an existing file"):
        R.update_readme(folder, committed)


@pytest.mark.skipif(os.name == "nt", reason="replacing a file that is open is refused on Windows")
def test_update_readme_replaces_the_file_whole(tmp_path, committed):
    """Written atomically: a reader that opened the README before the update
    still reads the whole old text, and no temporary is left beside it."""
    readme = tmp_path / "README.md"
    old = f"# title\n{R.README_BEGIN}\nold table\n{R.README_END}\n"
    readme.write_text(old)
    with readme.open() as reader:
        R.update_readme(readme, committed)
        assert reader.read() == old
    assert R.readme_table(committed) in readme.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]


# --- no tracked file rewritten unless asked ------------------------------------------


def test_report_writes_an_ignored_folder_by_default(built):
    assert (built / "report.md").is_file()
    probe = subprocess.run(
        ["git", "check-ignore", "-q", str(R.DEFAULT_OUT / "report.md")], cwd=ROOT, capture_output=True
    )
    if probe.returncode == 128:
        pytest.skip("not a git checkout")
    assert probe.returncode == 0, f"{R.DEFAULT_OUT} is not ignored by .gitignore"


def test_update_committed_writes_report_ledger_and_readme_of_the_checkout(tmp_path, committed, no_png):
    checkout = tmp_path / "checkout"
    (checkout / "tests").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    (checkout / "README.md").write_text(f"intro\n{R.README_BEGIN}\nold\n{R.README_END}\n")
    status = main(
        [
            "report",
            "--update-committed",
            "--checkout",
            str(checkout),
            "--claims-json",
            str(COMMITTED / "claims.json"),
        ]
    )
    assert status == 0
    assert (checkout / "report" / "report.md").is_file()
    assert json.loads((checkout / "report" / "claims.json").read_text()) == committed_data()
    assert R.readme_table(committed) in (checkout / "README.md").read_text()


# --- each figure once; reasons; what did not reproduce ----------------------------------


def test_each_figure_once_per_cell(committed):
    """No item of an "ours" cell repeats what the cell showed before it, and
    the repeats once found in Q4-Q7 and S4 are gone."""
    for cid in CLAIMS:
        cell = R.document.ours_cell(committed, cid)
        assert figures_once([cell]) == cell, cid
    # S6's figures are timings and move on every run: its first cell item's
    # label stands once (the list used to be repeated whole)
    once = {
        "Q4": "2 bits: per-tensor 4.0414",
        "Q5": "bigram 2.5365",
        "Q6": "4.0414",
        "Q7": "head.weight +0.0108",
        "S4": "0.985",
        "S6": "bigram k=2:",
    }
    for cid, text in once.items():
        assert R.document.ours_cell(committed, cid).count(text) == 1, cid
    assert R.document.ours_cell(committed, "S4").count("8.33") == 1


def test_figures_once_drops_repeats_and_keeps_distinct_figures():
    assert (
        figures_once(["2 bits: a 4.0414, b 3.9503", "2 bits: a 4.0414, b 3.9503; z 98.6%"])
        == "2 bits: a 4.0414, b 3.9503; z 98.6%"
    )
    assert (
        figures_once(["8-bit k=1: acc 1.000", "8-bit: k=1 1.000, k=2 0.985"])
        == "8-bit k=1: acc 1.000; 8-bit: k=2 0.985"
    )
    # two short figures that agree by chance are both kept
    assert figures_once(["a 0.79 (0.79~0.80)", "b 0.79"]) == "a 0.79 (0.79~0.80); b 0.79"
    assert figures_once(["x 2.125 B, bitmask 2.125"]) == "x 2.125 B, bitmask 2.125"
    # one string naming one value twice: two quantities that agree, both kept
    # (the article model's Q2 lost its per-tensor 8-bit loss, equal to float32's)
    q2 = "float32 2.0115; 8 bits: per-tensor 2.0115, per-channel 2.0111 (-0.0001 / -0.0004)"
    assert figures_once([q2]) == q2
    assert figures_once([q2, "8 bits: per-tensor 2.0115"]) == q2  # a later string's repeat goes


def test_not_reproduced_bullets_quote_only_this_runs_figures(doc, committed):
    text = doc.markdown().split("## What does not reproduce on our model", 1)[1].split("\n## ", 1)[0]
    known = {f for c in committed.claims for m in c.measured for f in figures(m)}
    known |= {f for c in CLAIMS.values() for f in figures(c.article)}
    bullets = [line for line in text.splitlines() if line.startswith("- **")]
    assert {b.split("**")[1] for b in bullets} == {
        c for c in CLAIMS if committed.verdict(c) == "does not reproduce"
    }
    for b in bullets:
        assert set(figures(b)) <= known, b
    s6 = next(b for b in bullets if b.startswith("- **S6**"))
    this_run = committed.claim("S6").measured[0].split(";")[0].split(", predicted")[0]
    assert this_run.startswith("bigram k=2: ") and this_run in s6  # this run's figure
    assert "0.77 (0.77~0.81)" not in text  # the stored baseline's, quoted by the old bullet


def _with(data: dict, cid: str, verdict: str, reasons: list[str] | None) -> dict:
    data = copy.deepcopy(data)
    entry = next(e for e in data["claims"] if e["id"] == cid)
    entry["verdict"] = verdict
    if reasons is None:
        entry.pop("reasons", None)
    else:
        entry["reasons"] = reasons
    return data


def test_broken_and_inconclusive_claims_show_their_reasons(no_png):
    data = _with(committed_data(), "Q2", "broken", ["AssertionError: int8 +0.2000 nats > 0.01"])
    data = _with(data, "S6", "inconclusive", ["the interval [0.97, 1.04] holds 1.0: undecided"])
    data = _with(data, "P3", "broken", None)  # an older ledger: no reasons
    text = R.render(_ledger(data)).markdown()
    part = text.split("## Broken and inconclusive claims", 1)[1]
    assert "- **Q2** (int8 is nearly free) broken: AssertionError: int8 +0.2000 nats > 0.01" in part
    assert "- **S6** (measured speedup) inconclusive: the interval [0.97, 1.04]" in part
    assert "- **P3** (global beats per-layer) broken: no reason recorded" in part
    assert "| S6 | measured speedup:" in text and "*inconclusive*" in text


def test_a_ledger_without_reasons_or_meta_still_renders(no_png):
    data = committed_data()
    data.pop("meta", None)
    for e in data["claims"]:
        e.pop("reasons", None)
    text = R.render(_ledger(data)).markdown()
    assert "taken at render time" in text


# --- Q9, metadata, quick ---------------------------------------------------------------


def test_q9_shows_both_texts_around_the_parting_point(doc, committed):
    q9 = committed.tables[TB.Q9]
    p = q9["position"] - 1  # 1-based in the table
    block = doc.markdown().split("```\nfloat32: ", 1)[1].split("```", 1)[0]
    f32, i8, caret = ("float32: " + block).splitlines()[:3]
    col = caret.index("^")
    assert f32[col] == q9["float32"][p].replace("\n", "⏎")
    assert i8[col] == q9["quantized"][p].replace("\n", "⏎")
    assert f32[col] != i8[col] and f32[:col] == i8[:col].replace("int8:   ", "float32:")
    assert q9["float32"][p - 20 : p + 20].replace("\n", "⏎") in f32
    assert q9["quantized"][p - 20 : p + 20].replace("\n", "⏎") in i8


def test_parting_excerpt_of_texts_that_do_not_part():
    assert "do not part" in parting_excerpt("abc", "abc", None)


META = {
    "date": "2026-11-30T10:00:00+00:00",
    "commit": "abc123def456",
    "cpu": "Test CPU 9000",
    "torch": "2.13.0+cpu",
    "threads": 2,
    "load1": 0.42,
    "model": "reference",
    "model_sha256": "f" * 64,
    "quick": False,
}


def test_header_shows_the_runs_metadata_from_the_ledger(no_png):
    data = {**committed_data(), "meta": META}
    text = R.render(_ledger(data)).markdown()
    head = text.split(meta.BEGIN, 1)[1].split(meta.END, 1)[0]
    for value in (
        "2026-11-30T10:00:00+00:00",
        "abc123def456",
        "Test CPU 9000",
        "2.13.0+cpu",
        "2 torch thread(s)",
        "load 0.42",
        "full run",
        "recorded in the ledger",
    ):
        assert value in head, value
    assert "**Quick run**" not in text


def test_quick_label_comes_from_the_runs_own_metadata(no_png):
    quick = R.render(_ledger({**committed_data(), "meta": {**META, "quick": True}})).markdown()
    assert "**Quick run**" in quick and "quick run" in quick
    data = committed_data()
    unknown = R.render(
        _ledger({**data, "meta": {k: v for k, v in data.get("meta", {}).items() if k != "quick"}})
    ).markdown()
    assert "**Quick run**" not in unknown and "run kind not recorded" in unknown


# --- plots: same data, same bytes; series equal to the ledger's tables ----------------


def test_png_bytes_depend_only_on_the_data(built, committed):
    """Two renders of one ledger (the command's, written to files, and one
    here) give the same bytes, with no software version in them; a changed
    figure changes them."""
    b = R.render(committed)
    for name in PLOTS:
        a = (built / f"{name}.png").read_bytes()
        assert a == b.plots[name].png, name
        assert b"matplotlib" not in a.lower(), name
    data = committed_data()
    for key in ("speedup", "speedup_min", "speedup_max"):
        data["tables"][TB.SPEC_SPEEDUP][0][key] += 0.05
    with png_only_for("spec_speedup"):  # the one plot compared
        c = R.render(_ledger(data))
    assert c.plots["spec_speedup"].png != b.plots["spec_speedup"].png


def _near(xs, ys) -> bool:
    return len(xs) == len(ys) and all(
        abs(x - y) <= 1e-9 * max(1, abs(y)) for x, y in zip(xs, ys, strict=True)
    )


def plot_problems(plots: dict, led: R.LedgerFile) -> list[str]:
    """Each plot's series against the ledger's tables; [] when they agree."""
    bad = []

    def check(plot, label, key, expected):
        got = plots[plot].series.get(label)
        if got is None or not _near(got[key], expected):
            bad.append(f"{plot}/{label}/{key}")

    q4 = led.tables[TB.Q4]
    bits = [r["bits"] for r in q4["rows"]]
    check("quant_bits", "per-tensor (ours)", "x", bits)
    check("quant_bits", "per-tensor (ours)", "y", [r["per_tensor"] for r in q4["rows"]])
    check("quant_bits", "per-channel (ours)", "y", [r["per_channel"] for r in q4["rows"]])
    check("quant_bits", "float32 (ours)", "y", [q4["float32"]] * 2)
    check("quant_sensitivity", "ours", "x", [r["penalty"] for r in led.tables[TB.Q7]])
    p1 = led.tables[TB.P1]
    for key, label in (
        ("global", "global magnitude"),
        ("layer", "per-layer magnitude"),
        ("random", "random"),
    ):
        check("prune_sparsity", f"{label} (ours)", "x", [100 * r["sparsity"] for r in p1])
        check("prune_sparsity", f"{label} (ours)", "y", [r[key] for r in p1])
    p5 = led.tables[TB.P5]
    check("prune_bytes", "COO measured", "y", [r["coo"] for r in p5])
    check("prune_bytes", "bitmask measured", "y", [r["bitmask"] for r in p5])
    for table, plot, fields in (
        (
            TB.SPEC_ACCEPTANCE,
            "spec_acceptance",
            (("measured", "y", "acceptance"), ("X1 prediction", "y", "predicted_acceptance")),
        ),
        (
            TB.SPEC_SPEEDUP,
            "spec_speedup",
            (
                ("measured", "y", "speedup"),
                ("measured", "low", "speedup_min"),
                ("measured", "high", "speedup_max"),
                ("predicted (v_k)", "y", "predicted_vk"),
            ),
        ),
    ):
        rows = led.tables[table]
        for draft in dict.fromkeys(r["draft"] for r in rows):
            rs = sorted((r for r in rows if r["draft"] == draft), key=lambda r: r["k"])
            series = plots[plot].series.get(f"{draft} measured")
            if series is None or [round(x) for x in series["x"]] != [r["k"] for r in rs]:
                bad.append(f"{plot}/{draft}/k")
            for suffix, key, field in fields:
                check(plot, f"{draft} {suffix}", key, [r[field] for r in rs])
    return bad


def test_plot_series_are_the_ledgers_tables(doc, committed):
    assert plot_problems(doc.plots, committed) == []


@pytest.mark.teeth
def test_plot_check_catches_a_series_drawn_from_the_wrong_column(committed, no_png):
    data = committed_data()
    s6 = data["tables"][TB.SPEC_SPEEDUP]
    first, last = s6[0]["draft"], s6[-1]["draft"]  # one draft's measurements drawn as another's
    for r in s6:
        r["draft"] = {first: last, last: first}.get(r["draft"], r["draft"])
    for r in data["tables"][TB.Q4]["rows"]:
        r["per_tensor"], r["per_channel"] = r["per_channel"], r["per_tensor"]
    swapped = R.render(_ledger(data))
    problems = plot_problems(swapped.plots, committed)
    assert any(p.startswith("spec_speedup/") for p in problems)
    assert "quant_bits/per-tensor (ours)/y" in problems


def test_speedup_plot_reads_at_a_glance(doc):
    series = doc.plots["spec_speedup"].series
    drafts = [lab[: -len(" measured")] for lab in series if lab.endswith(" measured")]
    assert len(drafts) == len(set(drafts)) >= 3
    xs = [tuple(series[f"{d} measured"]["x"]) for d in drafts]
    assert len(set(xs)) == len(xs)  # dodged: intervals of two drafts never share an x


# --- table cells against the ledger -----------------------------------------------------


def test_table_cells_are_the_ledgers_figures(doc, committed):
    text = doc.markdown()
    q4 = committed.tables[TB.Q4]
    rows = read_table(
        text,
        ["bits", "per-tensor (article)", "per-tensor (ours)", "per-channel (article)", "per-channel (ours)"],
    )
    assert [r[2] for r in rows[1:]] == [fmt(r["per_tensor"]) for r in q4["rows"]]
    assert [r[4] for r in rows[1:]] == [fmt(r["per_channel"]) for r in q4["rows"]]
    assert rows[0][2] == fmt(q4["float32"])
    s6 = committed.tables[TB.SPEC_SPEEDUP]
    rows = read_table(
        text,
        [
            "draft",
            "k",
            "article",
            "ours",
            "article's prediction",
            "ours: (chars/pass)/(1+kc)",
            "ours: (chars/pass)/(v_k+kc)",
            "ours: share (measured / (v_k+kc))",
            "ours: c, v_k used",
        ],
    )
    assert [(r[0], int(r[1]), r[3], r[6]) for r in rows] == [
        (
            r["draft"],
            r["k"],
            f"{r['speedup']:.2f} [{r['speedup_min']:.2f}, {r['speedup_max']:.2f}]"
            + ("" if r["speedup_min"] > 1 or r["speedup_max"] < 1 else " (undecided)"),
            f"{r['predicted_vk']:.2f}",
        )
        for r in s6
    ]
    s4 = committed.tables[TB.SPEC_ACCEPTANCE]
    rows = read_table(
        text,
        [
            "draft",
            "k",
            "acceptance (article)",
            "acceptance (ours)",
            "X1 prediction from k=1 (ours)",
            "chars/pass (article)",
            "chars/pass (ours)",
            "target passes (article)",
            "target passes (ours)",
        ],
    )
    assert [(r[0], int(r[1]), r[3], r[6], int(r[8])) for r in rows] == [
        (r["draft"], r["k"], f"{r['acceptance']:.3f}", f"{r['chars_per_pass']:.2f}", r["target_passes"])
        for r in s4
    ]
    p1 = committed.tables[TB.P1]
    rows = read_table(
        text, ["sparsity", "global (article / ours)", "per-layer (article / ours)", "random (article / ours)"]
    )
    assert [[c.split(" / ")[1] for c in r[1:]] for r in rows] == [
        [fmt(r["global"]), fmt(r["layer"]), fmt(r["random"])] for r in p1
    ]


# --- end to end: a claim made to fail ---------------------------------------------------

FAILING = """
import pytest

@pytest.mark.claim("Q2")
def test_int8_loss_within_0p01_of_float32(claim_record):
    claim_record.measured("int8 +0.2000 nats")
    assert 0.2 < 0.01

@pytest.mark.claim("P7")
def test_zeros_do_not_speed_up_a_dense_matmul():
    pass
"""


def test_a_claim_made_to_fail_shows_as_broken_in_report_and_exit_status(
    pytester, tmp_path, capsys, monkeypatch, no_png
):
    """Through the ledger: a pytest run whose Q2 test fails writes a ledger;
    the report built from it marks Q2 BROKEN, lists it with its reason, and
    exits with status 1."""
    outside_any_run(monkeypatch)
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
    assert "- **Q2** (int8 is nearly free) broken:" in text.split("## Broken and inconclusive")[1]
    assert "1 broken" in capsys.readouterr().out


def test_report_rejects_a_file_that_is_not_a_ledger(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"something": 1}))
    with pytest.raises(R.ReportError, match="not a claims ledger"):
        R.read_ledger(bad)
