"""Markdown helpers of the report: number formats, table cells, verdict
marks, and the "ours" cell that shows each recorded figure once."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from aftertrain.claims import verdicts as V

DASH = "–"

VERDICT_MARK = {
    V.HOLDS: "holds",
    V.DOES_NOT_REPRODUCE: "**does not reproduce**",
    V.BROKEN: "**BROKEN**",
    V.INCONCLUSIVE: "*inconclusive*",
    V.NOT_DECIDED: "*not decided here*",
    V.SKIPPED: "skipped",
    V.NOT_COVERED: "not covered",
}


def fmt(x, digits: int = 4) -> str:
    """A number with ``digits`` decimals; :data:`DASH` for None or NaN; anything else as ``str``."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if isinstance(x, (int, float)):
        return f"{x:.{digits}f}"
    return str(x)


def pct(x, digits: int = 1) -> str:
    """The fraction ``x`` as a percentage with ``digits`` decimals (0.305 -> "30.5%");
    :data:`DASH` for None."""
    return DASH if x is None else f"{100 * x:.{digits}f}%"


def ratio_cell(r) -> str:
    """A timing ratio (a table row with ``median`` and ``ci = (low, high)``): median [interval]."""
    low, high = r.ci
    return f"{r.median:.3f} [{low:.3f}, {high:.3f}]"


def cell(value) -> str:
    """A table cell: a "|" inside it (max|w|) would end it, a newline the row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list[str], rows: Iterable[list]) -> str:
    """A markdown table of ``header`` and ``rows``, each cell escaped by :func:`cell`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines)


def verdict_mark(verdict: str) -> str:
    """How the report writes ``verdict`` (:data:`VERDICT_MARK`: the bad ones in bold); an unknown
    one as it is."""
    return VERDICT_MARK.get(verdict, verdict)


# --- each figure once -----------------------------------------------------------

_FIGURE = re.compile(r"[-+]?\d+\.\d+")
_OPEN, _CLOSE = "([{", ")]}"


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes."""
    parts, depth, quote, start, i = [], 0, None, 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"" and (i == 0 or not text[i - 1].isalnum()):
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def figures(text: str) -> list[str]:
    """The decimal figures of ``text`` ("1.5539", "-0.0020", "98.6"), signs dropped."""
    return [f.lstrip("+-") for f in _FIGURE.findall(text)]


def _distinctive(figure: str) -> bool:
    """Three significant digits or three decimals: "0.061", "2.00", "1.5539"
    are; "0.79" is not (two such figures agree by chance too often)."""
    whole, _, decimals = figure.partition(".")
    return len(decimals) >= 3 or len((whole + decimals).lstrip("0")) >= 3


def _label(item: str) -> tuple[str, str]:
    """("8-bit: ", "k=1 2.00") for "8-bit: k=1 2.00"; ("", item) when the
    text before the first ": " holds a decimal figure or there is none."""
    head, sep, rest = item.partition(": ")
    if sep and not figures(head) and rest:
        return head + sep, rest
    return "", item


def figures_once(measured: Iterable[str]) -> str:
    """The figures the tests of one claim recorded, each once.

    Tests of one claim often record overlapping strings (the whole bits table,
    then its 2-bit row again). Each string splits into segments (at "; ") and
    items (at ", "), outside brackets. An item is dropped when

    - its text was shown (with its segment's label, "8-bit: k=1 2.00");
    - its figures, two or more and one of them distinctive (three significant
      digits or three decimals), were shown together in that order;
    - it has two or more figures, all shown and all distinctive (so that two
      short figures that agree by chance, 0.79 and 0.79, never hide one);
    - it has one distinctive figure, shown already, and its segment has a
      label ("8-bit: k=1 1.000, k=2 0.985": a listing of figures by label).

    The last three compare figures with those of the strings before, never
    of the same string: one test writing a number twice means two
    quantities that agree ("float32 2.0115; 8 bits: per-tensor 2.0115").
    An item keeps its segment's label when the item before it is dropped.
    """
    shown_items: set[str] = set()
    shown_in: set[str] = set()
    shown_runs: set[tuple[str, ...]] = set()
    segments_out: list[str] = []
    for text in measured:
        shown_in_text: set[str] = set()
        runs_in_text: set[tuple[str, ...]] = set()
        for segment in _split_top(str(text), "; "):
            items = _split_top(segment, ", ")
            label, _ = _label(items[0])
            kept: list[str] = []
            for n, item in enumerate(items):
                full = item if n == 0 or not label else label + item
                figs = figures(item)
                all_shown = bool(figs) and all(f in shown_in and _distinctive(f) for f in figs)
                redundant = (
                    item in shown_items
                    or full in shown_items
                    or (len(figs) >= 2 and tuple(figs) in shown_runs and any(map(_distinctive, figs)))
                    or (len(figs) >= 2 and all_shown)
                    or (len(figs) == 1 and all_shown and bool(label))
                )
                if redundant:
                    continue
                kept.append(item if kept or n == 0 else full)
                shown_items.update({item, full})
                shown_in_text.update(figs)
                runs_in_text.add(tuple(figs))
            if kept:
                segments_out.append(", ".join(kept))
        shown_in |= shown_in_text
        shown_runs |= runs_in_text
    return "; ".join(segments_out)


def read_table(markdown: str, header: list[str]) -> list[list[str]]:
    """The rows of the first table of ``markdown`` with this ``header``, cells
    unescaped (the inverse of :func:`markdown_table`)."""
    head = "| " + " | ".join(header) + " |"
    lines = markdown.splitlines()
    try:
        start = lines.index(head) + 2
    except ValueError:
        raise ValueError(f"no table with header {header} in the text") from None
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
        rows.append([c.strip().replace("\\|", "|") for c in cells])
    return rows
