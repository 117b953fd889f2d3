"""Every figure the project shows has a test that checks it independently.

The figures are enumerated from the code (tests/common/figures.py): every
numeric field of every row type the claims' tables register, the ledger's
run metadata, and every table column, plot series and prose figure of the
report rendered from the committed ledgers. tests/common/figure_checks.py
maps each to the tests that compute it a second way (a closed form, torch
or scipy, a hand-worked case, a second implementation, another table).
This fails when a figure has no entry, when an entry matches no figure, when
an entry names a test that does not exist, and when docs/figures.md (the
list, written by ``python tools/figures.py --write``) is stale.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from aftertrain.claims.tables import Shape, TableRow, TableSpec
from aftertrain.core.runmeta import KEYS
from aftertrain.experiments.tables import SPECS
from tests.common import figures as F
from tests.common.figure_checks import CHECKS, Check


@pytest.fixture(scope="module")
def figures() -> list[str]:
    return F.enumerate_figures()


@pytest.fixture(scope="module")
def nodes() -> set[str]:
    return F.collect_test_nodes()


@pytest.fixture(scope="module")
def resolved() -> dict:
    return F.resolved_placeholders()


def test_every_figure_has_an_independent_check(figures, nodes, resolved):
    assert F.inventory_problems(figures, CHECKS, nodes, resolved) == []


def test_figures_doc_lists_every_figure_with_its_check(figures, resolved):
    """docs/figures.md is what tools/figures.py writes now."""
    assert F.DOC.is_file(), "write it: python tools/figures.py --write"
    assert F.DOC.read_text() == F.markdown(figures, CHECKS, resolved), (
        "docs/figures.md is stale: python tools/figures.py --write"
    )


def test_the_enumeration_reaches_every_place_a_figure_is_shown(figures):
    """Each registered row type gives figures, the run metadata all its keys,
    the report its tables, plots and prose: the enumeration is not vacuous."""
    for spec in SPECS.values():
        assert any(f.startswith(f"row:{spec.row.__name__}.") for f in figures), spec.name
    assert [f for f in figures if f.startswith("ledger.meta:")] == [f"ledger.meta:{k}" for k in KEYS]
    kinds = {f.split(":", 1)[0] for f in figures}
    assert kinds == {"row", "ledger.meta", "report.table", "report.plot", "report.text", "measured"}
    assert len(figures) >= 300


@dataclass(frozen=True)
class _NewRow(TableRow):
    draft: str
    new_quantile: float
    counts: dict[str, int]


@pytest.mark.teeth
def test_inventory_check_catches_a_new_figure_with_no_entry(nodes):
    """A row type registered with a numeric field no entry names fails it
    (its label, a str, is no figure)."""
    specs = {**SPECS, "new": TableSpec("new", ("S2",), _NewRow, Shape.ROWS)}
    figures = F.row_figures(specs)
    assert "row:_NewRow.new_quantile" in figures and "row:_NewRow.draft" not in figures
    problems = F.inventory_problems(figures, CHECKS, nodes)
    assert "row:_NewRow.new_quantile: no entry in tests/common/figure_checks.py" in problems
    assert "row:_NewRow.counts: no entry in tests/common/figure_checks.py" in problems


@pytest.mark.teeth
def test_inventory_check_catches_a_stale_entry_and_a_missing_test(figures, nodes):
    real = next(iter(CHECKS.values())).nodes
    checks = {
        **CHECKS,
        "row:Gone.median": Check(real, "a figure removed from the code"),
        "report.plot:gone_* | *": Check(real, "a plot removed"),
        "row:CostRow.c": Check(("tests/experiments/test_nowhere.py::test_c",), "moved"),
        "row:CostRow.c_low": Check(real, " "),
    }
    problems = F.inventory_problems(figures, checks, nodes)
    assert "row:Gone.median: an entry for a figure the code no longer shows" in problems
    assert "report.plot:gone_* | *: an entry for a figure the code no longer shows" in problems
    assert "row:CostRow.c: test tests/experiments/test_nowhere.py::test_c does not exist" in problems
    assert "row:CostRow.c_low: an entry that does not say how the test checks it" in problems


@pytest.mark.teeth
def test_report_enumeration_catches_a_new_column_plot_and_line():
    """A report with one more table column, plot series and prose figure
    names all three."""
    from types import SimpleNamespace

    table = "**A new table** (Q2 holds)\n\n| | ours | new figure |\n|---|---|---|\n| x | 1.5 | 0.25 |\n"
    doc = SimpleNamespace(
        parts=["## Section\n", table, "A new note: 0.123 of it.\n"],
        plots={"p": SimpleNamespace(name="p", series={"new series": {}})},
    )
    assert F.report_figures(doc) == [
        "report.table:A new table | ours",
        "report.table:A new table | new figure",
        "report.text:A new note:",
        "report.plot:p | new series",
    ]


_NEW_TEST = """
from aftertrain.experiments import speculative as XS
from aftertrain.ledger.record import Shown, shown

SCALE = 100
ARTICLE = {1: 0.9}
threshold = compute_threshold()


def fmt(r: XS.AcceptanceRow) -> Shown:
    return shown("{AcceptanceRow.draft!s} {AcceptanceRow.acceptance:.3f}", r)


def test_new(claim_record, reference):
    x = compute(reference)
    r = XS.acceptance_table(reference, {})[0]
    GAP = x - 1
    ks = compute(reference)
    text = f"{x:.2f}"
    row = fmt(r)
    claim_record.measured(
        "ratio {x:.3f}; {AcceptanceRow.acceptance:.3f} {AcceptanceRow.chars_per_pass:.1f}; {GAP}; "
        "{SCALE}; {AcceptanceRow.draft!s}; {threshold}; {seed}; {label!s}; {built!s}; {parts}; "
        "{local_parts}; {article}; {either}; {nowhere}", r,
        x=x, GAP=GAP, SCALE=SCALE, threshold=threshold, seed=XS.seed_of_the_day, label=r.draft,
        built=f"{x:.2f}", parts=fmt(r), local_parts=row, article=lambda r: ARTICLE[r.k],
        either=shown("{x:.1f}", x=x) if x else shown("none"))
    claim_record.measured("{value}", ks)
    claim_record.measured("k={value}", XS.KS)
    claim_record.measured(text)
    claim_record.measured(f"{x:.3f}")
    claim_record.measured(build(x))
    claim_record.measured("{x}", **values)
    claim_record.measured("loss 2.0272, written by hand")
    claim_record.measured("no number here")
"""


def _new_placeholders():
    from tests.common.measured import measured_placeholders

    placeholders = measured_placeholders(F.ROOT, {"tests/x/test_new.py": _NEW_TEST})
    return {p.figure.removeprefix("measured:tests/x/test_new.py::"): p for p in placeholders}


@pytest.mark.teeth
def test_measured_inventory_catches_a_new_placeholder_with_no_entry(figures, nodes, resolved):
    """A test file whose measured text shows a local computed in the test:
    the placeholder is a figure, and it has no entry."""
    new = _new_placeholders()
    assert new["test_new | x"].kind == ""
    figure = "measured:tests/x/test_new.py::test_new | x"
    problems = F.inventory_problems([*figures, figure], CHECKS, nodes, resolved)
    assert problems == [f"{figure}: no entry in tests/common/figure_checks.py"]
    # a template built elsewhere (a name, an f-string, a call) and passed whole is one figure,
    # and so is a literal with a digit and no placeholder, and **values; a text with no number is none
    for name in ("text", "f'{x:.3f}'", "build(x)", "**values", "'loss 2.0272, written by hand'"):
        assert new[f"test_new | {name}"].kind == "", name
    assert not any("no number here" in k for k in new)


@pytest.mark.teeth
def test_measured_resolution_catches_a_local_posing_as_a_field():
    """Only what the call names resolves: a row's field by its type's name,
    a label, a constant of the module, a text of shown(...) (its own
    placeholders listed); a name the test assigns in UPPER_CASE, a
    lower-case module name, a label the test builds with an f-string, a
    local bound to a shown text and an element of a local collection do not."""
    new = _new_placeholders()
    resolved = {k: (p.kind, p.link) for k, p in new.items()}
    assert resolved["test_new | AcceptanceRow.acceptance"] == ("field", "row:AcceptanceRow.acceptance")
    assert resolved["test_new | AcceptanceRow.chars_per_pass"] == (
        "field",
        "row:AcceptanceRow.chars_per_pass",
    )
    assert resolved["fmt | AcceptanceRow.acceptance"] == ("field", "row:AcceptanceRow.acceptance")
    assert resolved["fmt | AcceptanceRow.draft"][0] == "text"
    assert resolved["test_new | AcceptanceRow.draft"][0] == "text"
    assert resolved["test_new | label"][0] == "text"
    assert resolved["test_new | SCALE"][0] == "constant"
    assert resolved["test_new | article"][0] == "constant"
    assert resolved["test_new | parts"][0] == "parts"
    assert resolved["test_new | either"][0] == "parts"
    assert resolved["test_new | value"] == ("", "")  # {value} of ks, a local, and of XS.KS: once unresolved
    for name in ("GAP", "x", "threshold", "seed", "built", "local_parts", "nowhere"):
        assert resolved[f"test_new | {name}"] == ("", ""), name
    constant = measured_of('def test_k(claim_record):\n    claim_record.measured("k={value}", XS.KS)\n')
    assert constant == {"test_k | value": "constant"}


def measured_of(source: str) -> dict[str, str]:
    from tests.common.measured import measured_placeholders

    header = "from aftertrain.experiments import speculative as XS\n"
    return {
        p.figure.removeprefix("measured:tests/x/test_k.py::"): p.kind
        for p in measured_placeholders(F.ROOT, {"tests/x/test_k.py": header + source})
    }


@pytest.mark.teeth
def test_inventory_check_catches_a_link_to_a_gone_field_and_a_row_figure_called_no_figure(
    figures, nodes, resolved
):
    """A measured value resolved to a row field the inventory no longer
    lists, and a row figure waved through as "no figure", are both problems."""
    from tests.common.measured import Placeholder

    gone = "measured:tests/x/test_new.py::test_new | r.gone"
    links = {**resolved, gone: Placeholder(gone, "field", "row:AcceptanceRow.gone", "reads")}
    checks = {**CHECKS, "row:CostRow.c": Check((), "no figure: a number is no label")}
    problems = F.inventory_problems([*figures, gone], checks, nodes, links)
    assert problems == [
        f"{gone}: prints row:AcceptanceRow.gone, which is not in the inventory",
        "row:CostRow.c: an entry with no test",
    ]


def _test_sources() -> dict[str, str]:
    paths = sorted([*F.ROOT.glob("tests/**/test_*.py"), *F.ROOT.glob("benchmarks/test_*.py")])
    return {p.relative_to(F.ROOT).as_posix(): p.read_text() for p in paths}


def test_no_measured_string_writes_a_plus_before_an_unsigned_figure():
    """A penalty printed as f"+{x:.4f}" reads "+-0.0004" when x < 0 (Q2's
    per-channel int8 loss is below float32's); the sign is the format's."""
    from tests.common.measured import sign_slips

    assert sign_slips(_test_sources()) == []


@pytest.mark.teeth
def test_sign_check_catches_a_plus_written_before_a_signed_value():
    from tests.common.measured import sign_slips

    source = (
        "def test_x(claim_record):\n"
        '    claim_record.measured("penalty +{d:.4f}, excess {e:+.4f}, a+b {n}", d=d, e=e, n=n)\n'
    )
    slips = sign_slips({"tests/x/test_x.py": source})
    assert len(slips) == 1 and slips[0].startswith("tests/x/test_x.py:2: ")
