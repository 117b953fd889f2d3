"""The ledger's page (docs/ledger.md) is the code's: its verdict and outcome
tables list the words of ``aftertrain.claims.verdicts`` in order, each
meaning word for word the comment on its member (the one definition), each
outcome with the verdict it gives; the page names the schema where the
package ships it and the format the writer writes."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from aftertrain.claims.ledgerfile import FORMAT, SCHEMA_PATH
from aftertrain.claims.verdicts import Outcome, Verdict
from aftertrain.ledger.state import VERDICT_OF
from tests.common import docs_tables
from tests.common.docs_tables import member_comments

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "ledger.md").read_text()


def table_rows(heading: str) -> list[list[str]]:
    """The body rows of the page's first table under the column ``heading``."""
    return docs_tables.table_rows(PAGE, heading)


def test_member_comments_reads_each_members_comment_as_markdown():
    source = 'class V:\n    #: a ``b`` and :mod:`c.d`\n    #: e\n    X = "x"\n    Y = "y"\n'
    assert member_comments(source) == {"x": "a `b` and `c.d` e"}


@pytest.mark.parametrize(
    "heading, enum",
    [("verdict", Verdict), ("outcome", Outcome)],
    ids=["verdicts", "outcomes"],
)
def test_the_pages_words_and_meanings_are_the_enums_in_order(heading, enum):
    comments = member_comments(inspect.getsource(enum))
    rows = table_rows(heading)
    assert [row[0] for row in rows] == [f"`{member.value}`" for member in enum]
    assert {row[0].strip("`"): row[1] for row in rows} == {m.value: comments[m.value] for m in enum}


def test_the_page_gives_the_verdict_each_outcome_gives():
    assert {row[0].strip("`"): row[2].strip("`") for row in table_rows("outcome")} == {
        o.value: v.value for o, v in VERDICT_OF.items()
    }


def test_the_page_names_the_schema_where_the_package_ships_it_and_the_format():
    in_package = SCHEMA_PATH.relative_to(ROOT / "src").as_posix()
    assert f"`{in_package}`" in PAGE and f"`src/{in_package}`" in PAGE
    assert f"| `format` | the version of the layout: `{FORMAT}` |" in PAGE


def test_the_glossarys_verdict_entries_are_the_comments_word_for_word():
    """docs/glossary.md's heading per verdict word holds its meaning as the
    code states it (the first letter capitalised, a full stop), so the
    glossary, this page and the README say one thing."""
    glossary = (ROOT / "docs" / "glossary.md").read_text()
    comments = member_comments(inspect.getsource(Verdict))
    for verdict in Verdict:
        text = glossary.split(f"### {verdict.value}\n\n", 1)[1].split("\n\n", 1)[0]
        meaning = comments[verdict.value]
        assert text == meaning[0].upper() + meaning[1:] + ".", verdict.value
