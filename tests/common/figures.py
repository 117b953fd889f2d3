"""The inventory of the figures the project shows, enumerated from the code.

A *figure* is a number that reaches one of the three places a reader sees:

- a claim's record: every numeric field of every row type that
  :data:`aftertrain.experiments.tables.SPECS` registers (nested rows
  followed through their type hints), named ``row:<RowType>.<field>``;
- the ledger JSON: the run metadata keys (:data:`aftertrain.core.runmeta.KEYS`),
  named ``ledger.meta:<key>``; the claims' entries hold verdicts and the
  tests' ``measured`` strings, rendered as the report's claims table;
- the report: every column of every table of the report rendered from the
  committed ledgers and sweep file (``report.table:<title> | <column>``,
  a column with a digit in any cell), every labelled series of every plot
  (``report.plot:<name> | <label>``) and every line of prose with a decimal
  figure (``report.text:<its words before the first digit>``);
- the tests' ``claim_record.measured(...)`` texts, which the report's
  "ours" column shows as they are: every placeholder of their templates,
  ``measured:<test file>::<function> | <placeholder>``
  (:mod:`tests.common.measured` reads them from the calls; a placeholder
  that names a row's field is covered by its entry, a label or a constant
  needs none, a named value needs an entry like any other figure).

Nothing here is listed by hand: a new field, table, column, series or line
appears in :func:`enumerate_figures` by itself, and
``tests/meta/test_figures.py`` then asks for its entry in
:mod:`tests.common.figure_checks`.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import fnmatch
import functools
import re
import types
import typing
from pathlib import Path

from tests.common.committed import COMMITTED, ROOT

#: Where the inventory is written (``python tools/figures.py --write``).
DOC = ROOT / "docs" / "figures.md"

_NUMERIC = (int, float, bool)


def _numeric(hint: object) -> bool:
    """Whether a field's type holds numbers: int, float, bool, an Optional of
    one, or a tuple or dict of them (``ci: tuple[float, float]``)."""
    origin = typing.get_origin(hint)
    if isinstance(hint, type) and origin is None:  # Python 3.10: tuple[float, float] is a type too
        return issubclass(hint, _NUMERIC)
    args = [a for a in typing.get_args(hint) if a is not type(None) and a is not Ellipsis]
    if origin is dict:
        return _numeric(args[-1])
    if origin in (tuple, typing.Union, types.UnionType):
        return bool(args) and all(_numeric(a) for a in args)
    return False


def _nested_row(hint: object):
    from aftertrain.claims.tables import TableRow

    for a in (hint, *typing.get_args(hint)):
        if isinstance(a, type) and typing.get_origin(a) is None and issubclass(a, TableRow):
            return a
    return None


def row_figures(specs: dict | None = None) -> list[str]:
    """``row:<RowType>.<field>`` for every numeric field of every row type of
    ``specs`` (default: the registry), nested row types included."""
    if specs is None:
        from aftertrain.experiments.tables import SPECS as specs
    out: dict[str, type] = {}

    def walk(cls: type) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            nested = _nested_row(hints[f.name])
            if nested is not None:
                walk(nested)
            elif _numeric(hints[f.name]):
                name = f"row:{cls.__name__}.{f.name}"
                assert out.get(name, cls) is cls, f"two row types are named {cls.__name__}"
                out[name] = cls

    for spec in specs.values():
        walk(spec.row)
    return list(out)


def ledger_figures() -> list[str]:
    """``ledger.meta:<key>`` for every key of the run metadata the ledger records."""
    from aftertrain.core.runmeta import KEYS

    return [f"ledger.meta:{k}" for k in KEYS]


# --- the report ------------------------------------------------------------------------

_DECIMAL = re.compile(r"\d+\.\d+")
_TITLE = re.compile(r"^(?:\*\*(.+?)\*\*|#+ (.+))")


@contextlib.contextmanager
def plots_without_png():
    """Plots drawn and read back as series but not saved (saving a PNG is
    most of a plot's cost, and the inventory needs only the series)."""
    from matplotlib.figure import Figure

    from aftertrain.report import plots

    def render_plot(draw):
        ax = Figure().subplots()
        caption = draw(ax)
        return b"", plots.series(ax), caption

    saved, plots.render_plot = plots.render_plot, render_plot
    try:
        yield
    finally:
        plots.render_plot = saved


@contextlib.contextmanager
def png_only_for(*names: str):
    """Only the plots ``names`` saved as PNG; the others drawn and read back
    as series (:func:`plots_without_png`): for a test that reads the PNG of
    one plot of a whole report."""
    from aftertrain.report.document import Document

    plot = Document.plot

    def plot_png_only_for_names(self, name, draw):
        if name in names:
            return plot(self, name, draw)
        with plots_without_png():
            return plot(self, name, draw)

    Document.plot = plot_png_only_for_names
    try:
        yield
    finally:
        Document.plot = plot


@functools.cache
def render_committed():
    """The report's document rendered from the committed ledgers and sweep
    file, plots as series only: rendered once per process and shared by the
    tests that read it (the inventory, the committed report's check, the
    README's plot count), so none of them may change it."""
    from aftertrain import report as R
    from aftertrain.report.assemble import read_report_ledgers, read_report_sweep

    primary, others = read_report_ledgers(COMMITTED)
    with plots_without_png():
        return R.render(primary, ROOT, others=others, sweep=read_report_sweep(COMMITTED))


def _figure_cell(cell: str) -> bool:
    """A cell that shows a figure: a decimal, a whole number or a percentage
    (not a label with a digit in it, such as "2-D weights" or "Q5")."""
    return bool(re.search(r"\d+\.\d+|\d%|^[-+]?\d+$", cell.strip()))


def _table_figures(part: str) -> list[str]:
    out, title, lines = [], None, part.splitlines()
    for i, line in enumerate(lines):
        m = _TITLE.match(line)
        if m:
            title = (m.group(1) or m.group(2)).strip()
        if line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in line.strip()[1:-1].split(" | ")]
            body = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                body.append(re.split(r"(?<!\\)\|", row.strip()[1:-1]))
            for j, column in enumerate(header):
                if any(j < len(r) and _figure_cell(r[j]) for r in body):
                    out.append(f"report.table:{title} | {column}")
    return out


def _text_figures(part: str, heading: str) -> list[str]:
    """One name per prose part with a decimal figure: its bold title, the
    words of its first line before the first digit, or for a list (whose
    items name claims or models) the heading above it."""
    part = "\n".join(line for line in part.splitlines() if not line.startswith("<!--"))
    if not _DECIMAL.search(part):
        return []
    m = _TITLE.match(part)
    if part.startswith("- "):
        return [f"report.text:{heading} (list)"]
    words = (m.group(1) or m.group(2)) if m else re.split(r"\d", part, maxsplit=1)[0]
    return [f"report.text:{words.strip()[:70]}"]


def report_figures(doc=None) -> list[str]:
    """The report's figures: table columns, plot series, prose lines (see the
    module docstring), from ``doc`` (default: :func:`render_committed`)."""
    doc = render_committed() if doc is None else doc
    out: list[str] = []
    heading = ""
    for part in doc.parts:
        if part.startswith("!["):
            continue  # a plot's link and caption: its series are below
        if part.startswith("## "):
            heading = part.splitlines()[0].removeprefix("## ")
        out += _table_figures(part) if "\n|---" in part else _text_figures(part, heading)
    for plot in doc.plots.values():
        out += [f"report.plot:{plot.name} | {label}" for label in plot.series]
    return list(dict.fromkeys(out))


@functools.cache
def _placeholders(root: Path):
    from tests.common.measured import measured_placeholders

    return tuple(measured_placeholders(root))


def measured_figures(root: Path = ROOT) -> list[str]:
    """``measured:<file>::<function> | <placeholder>`` for every placeholder
    of every ``claim_record.measured`` template under tests/ and benchmarks/."""
    return [p.figure for p in _placeholders(root)]


def resolved_placeholders(root: Path = ROOT) -> dict:
    """figure -> its :class:`tests.common.measured.Placeholder`, for the
    measured figures resolved without an entry (a row's field, a label, parts)."""
    return {p.figure: p for p in _placeholders(root) if p.kind}


def enumerate_figures(doc=None) -> list[str]:
    """Every figure of the four places, in order: rows, ledger, report, measured strings."""
    return row_figures() + ledger_figures() + report_figures(doc) + measured_figures()


# --- test node ids, read with ast ----------------------------------------------------------


def collect_test_nodes(root: Path = ROOT) -> set[str]:
    """``path::name`` (``path::Class::name`` in a Test class) of every test
    function under tests/ and benchmarks/, read with ast (nothing imported)."""
    nodes = set()
    for path in sorted([*root.glob("tests/**/test_*.py"), *root.glob("benchmarks/test_*.py")]):
        rel = path.relative_to(root).as_posix()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                nodes.add(f"{rel}::{node.name}")
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                nodes |= {
                    f"{rel}::{node.name}::{f.name}"
                    for f in node.body
                    if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")
                }
    return nodes


def inventory_problems(
    figures: list[str], checks: dict, nodes: set[str], resolved: dict | None = None
) -> list[str]:
    """One line per problem: a figure with no entry, an entry (a name or a
    ``*`` pattern) that matches no figure, an entry with no test, a test node
    that does not exist, an entry that does not say how. A measured figure
    in ``resolved`` needs no entry (and an entry for it is stale), but the
    row figure it prints must be in ``figures``."""
    from tests.common.figure_checks import check_of

    resolved = resolved or {}
    known = set(figures)
    problems = [
        f"{f}: prints {p.link}, which is not in the inventory"
        for f, p in resolved.items()
        if p.link and p.link not in known
    ]
    figures = [f for f in figures if f not in resolved]
    problems += [
        f"{f}: no entry in tests/common/figure_checks.py" for f in figures if check_of(f, checks) is None
    ]
    known = set(figures)
    for name, check in checks.items():
        matches = fnmatch.filter(figures, name) if "*" in name else [name] if name in known else []
        if not matches:
            problems.append(f"{name}: an entry for a figure the code no longer shows")
        label = name.startswith("measured:") and check.how.startswith("no figure: ")
        if not check.nodes and not label:
            problems.append(f"{name}: an entry with no test")
        if label and check.nodes:
            problems.append(f"{name}: an entry for no figure names no test")
        problems += [f"{name}: test {n} does not exist" for n in check.nodes if n not in nodes]
        if not check.how.strip():
            problems.append(f"{name}: an entry that does not say how the test checks it")
    return problems


def markdown(figures: list[str], checks: dict, resolved: dict | None = None) -> str:
    """docs/figures.md: every figure with the tests that check it and how
    (a resolved measured figure: the entry of the row figure it prints)."""
    from aftertrain.report.markdown import markdown_table
    from tests.common.figure_checks import check_of

    resolved = resolved or {}
    rows = []
    for f in figures:
        p = resolved.get(f)
        c = check_of(p.link if p else f, checks) if (not p or p.link) else None
        how = c.how if c else "**none**"
        if p:
            how = f"{p.via} `{p.link}`: {how}" if p.link else p.via
        rows.append([f"`{f}`", "<br>".join(f"`{n}`" for n in c.nodes) if c else "", how])
    head = [
        "# Every figure and the test that checks it",
        "",
        "Generated by `python tools/figures.py --write` from the code: "
        "`tests/common/figures.py` enumerates the figures (the numeric fields of every row "
        "type in `aftertrain.experiments.tables.SPECS`, the ledger's run metadata, the "
        "columns, plot series and prose figures of the report rendered from the committed "
        "ledgers, every placeholder of a test's `claim_record.measured` template), "
        "`tests/common/figure_checks.py` maps each to the tests that compute it "
        "independently; a measured placeholder that names a row's field (read from the call "
        "by `tests/common/measured.py`) is covered by that field's entry. "
        "`tests/meta/test_figures.py` fails when this file is stale, when a "
        "figure has no entry, when an entry matches no figure or names a test that does "
        "not exist.",
        "",
        f"{len(figures)} figures, {len(resolved)} of them measured values "
        "resolved by their call (a row's field, a constant, a label, a text of shown(...)).",
        "",
    ]
    return "\n".join(head) + markdown_table(["figure", "tests", "how"], rows) + "\n"
