"""The article's figures the report prints beside ours (``ARTICLE_TABLES``)
are the figures of the claims' ``article`` texts (copied from CLAIMS.md,
which tests/claims/test_catalogue.py holds the catalogue to): every number
of every table, in one of the forms the texts write numbers (4, 3 or 2
decimals, a percentage, thousands with commas, an exponent)."""

from __future__ import annotations

import re

import pytest

from aftertrain.claims.catalogue import ARTICLE_TABLES, CLAIMS


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, tuple):
        for v in value:
            yield from _numbers(v)
    else:
        yield value


def _forms(v) -> set[str]:
    if isinstance(v, int):
        return {str(v), f"{v:,}"}
    v = abs(v)  # signs are dropped on both sides ("-0.0020" in Q7)
    return {f"{v:.4f}", f"{v:.3f}", f"{v:.2f}", f"{v:.2e}", f"{100 * v:.1f}"}


def missing_figures(tables: dict, texts: list[str]) -> list[str]:
    """``table: value`` for each number of ``tables`` that no text writes."""
    written = {m.lstrip("+-") for t in texts for m in re.findall(r"[-+]?[\d,]*\d(?:\.\d+)?(?:e-?\d+)?", t)}
    return [f"{name}: {v}" for name, table in tables.items() for v in _numbers(table)
            if not _forms(v) & written]


def test_every_article_table_figure_is_in_the_claims_article_texts():
    assert missing_figures(ARTICLE_TABLES, [c.article for c in CLAIMS.values()]) == []


@pytest.mark.teeth
def test_article_figure_check_catches_a_mistyped_figure():
    """2.0272 typed as 2.0227 in the bits table is not in any text."""
    tables = {"b1": {"reference": 2.0227}}
    assert missing_figures(tables, [c.article for c in CLAIMS.values()]) == ["b1: 2.0227"]
