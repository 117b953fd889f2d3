"""The article's figures the report prints beside ours
(``aftertrain.experiments.article.ARTICLE``, our rows holding its published
tables) are the figures of the claims' ``article`` texts (copied from CLAIMS.md,
which tests/claims/test_catalogue.py holds the catalogue to): every number
of every table, in one of the forms the texts write numbers (4, 3 or 2
decimals, a percentage, thousands with commas, an exponent). A figure it
did not publish is NaN (or an empty text) and is no figure."""

from __future__ import annotations

import dataclasses
import enum
import math
import re

import pytest

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.experiments.article import ARTICLE


def _numbers(value):
    """Every number of ``value``: a row's fields, a dict's values (and its
    number keys), a tuple's items; not texts, enums, None or NaN."""
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _numbers(getattr(value, f.name))
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, tuple):
        for v in value:
            yield from _numbers(v)
    elif (
        isinstance(value, (int, float)) and not isinstance(value, (bool, enum.Enum)) and not math.isnan(value)
    ):
        yield value


def _forms(v) -> set[str]:
    if isinstance(v, int):
        return {str(v), f"{v:,}"}
    whole = {str(int(v)), f"{int(v):,}"} if v.is_integer() else set()  # microseconds: "1235 us"
    v = abs(v)  # signs are dropped on both sides ("-0.0020" in Q7)
    # a percentage as the texts write it: 74.4% (Q3's cut), 30% (a sparsity)
    return whole | {f"{v:.4f}", f"{v:.3f}", f"{v:.2f}", f"{v:.2e}", f"{100 * v:.1f}", f"{100 * v:g}"}


def missing_figures(tables, texts: list[str]) -> list[str]:
    """``table: value`` for each number of ``tables`` (a row of tables, one
    field per table) that no text writes."""
    written = {m.lstrip("+-") for t in texts for m in re.findall(r"[-+]?[\d,]*\d(?:\.\d+)?(?:e-?\d+)?", t)}
    return [
        f"{f.name}: {v}"
        for f in dataclasses.fields(tables)
        for v in _numbers(getattr(tables, f.name))
        if not _forms(v) & written
    ]


def test_every_article_table_figure_is_in_the_claims_article_texts():
    assert len(list(_numbers(ARTICLE))) > 150  # the walk reaches every table
    assert missing_figures(ARTICLE, [c.article for c in CLAIMS.values()]) == []


@pytest.mark.teeth
def test_article_figure_check_catches_a_mistyped_figure():
    """2.0272 typed as 2.0227 in the bits table is not in any text."""
    tables = dataclasses.replace(ARTICLE, b1=dataclasses.replace(ARTICLE.b1, reference=2.0227))
    assert missing_figures(tables, [c.article for c in CLAIMS.values()]) == ["b1: 2.0227"]
