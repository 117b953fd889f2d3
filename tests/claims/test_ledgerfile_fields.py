"""Every field of the ledger file (aftertrain.claims.ledgerfile), checked as
written: what :meth:`LedgerFile.from_json` reads is compared with the raw
JSON field by field, and what :meth:`LedgerFile.to_json` and
:meth:`LedgerFile.write` produce is compared with the raw JSON itself, never
through the same reader (a round trip read back by the reader that wrote it
hides two fields swapped on both sides)."""

from __future__ import annotations

import json

import pytest

from aftertrain.claims.ledgerfile import FORMAT, LedgerFile
from tests.common.committed import LEDGERS

CLAIM_FIELDS = (
    "id",
    "verdict",
    "title",
    "statement",
    "article",
    "not_run",
    "parts",
    "defining",
    "undecided",
    "beside",
    "reasons",
    "measured",
    "tests",
)
TEST_FIELDS = ("nodeid", "outcome", "reason", "xfail_reason", "measured", "part", "not_run", "reads_model")


def _not_run(entries) -> list[dict]:
    return [{"part": n.part, "reason": n.reason} for n in entries]


def _test_as_read(t) -> dict:
    return {
        "nodeid": t.nodeid,
        "outcome": t.outcome,
        "reason": t.reason,
        "xfail_reason": t.xfail_reason,
        "measured": list(t.measured),
        "part": t.part,
        "not_run": _not_run(t.not_run),
        "reads_model": t.reads_model,
    }


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.name)
def test_every_field_of_a_committed_ledger_is_read_as_written(path):
    """Each claim's and each test's fields, read by ``from_json``, equal the
    raw JSON's value of the same name (the committed ledgers carry every
    field of format 2, optional ones included)."""
    raw = json.loads(path.read_text())
    file = LedgerFile.from_json(raw, str(path))
    assert file.meta == raw["meta"] and file.tables == raw["tables"]
    assert list(file.model_free_tables) == raw["model_free_tables"]
    assert len(file.claims) == len(raw["claims"])
    for claim, want in zip(file.claims, raw["claims"], strict=True):
        assert set(want) == set(CLAIM_FIELDS), claim.id
        assert (claim.id, claim.verdict, claim.title, claim.statement, claim.article) == (
            want["id"],
            want["verdict"],
            want["title"],
            want["statement"],
            want["article"],
        )
        assert _not_run(claim.not_run) == want["not_run"], claim.id
        assert claim.parts == want["parts"], claim.id
        assert list(claim.defining) == want["defining"], claim.id
        assert [{"part": u.part, "what": u.what, "reason": u.reason} for u in claim.undecided] == want[
            "undecided"
        ], claim.id
        assert claim.beside == want["beside"], claim.id
        assert list(claim.reasons) == want["reasons"] and list(claim.measured) == want["measured"]
        assert len(claim.tests) == len(want["tests"])
        for t, raw_t in zip(claim.tests, want["tests"], strict=True):
            assert set(raw_t) == set(TEST_FIELDS), t.nodeid
            assert _test_as_read(t) == raw_t, t.nodeid


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.name)
def test_a_committed_ledger_is_written_back_as_the_raw_json(path, tmp_path):
    """``to_json`` of what was read is the file's JSON, and so is the file
    ``write`` leaves (compared with ``json.loads`` of the committed file)."""
    raw = json.loads(path.read_text())
    file = LedgerFile.from_json(raw, str(path))
    assert file.to_json() == raw
    written = file.write(tmp_path / path.name)
    assert json.loads(written.read_text()) == raw


# The least a format-2 file may hold: none of the optional fields.
MINIMAL = {
    "format": FORMAT,
    "claims": [
        {"id": "Q2", "verdict": "holds", "tests": [{"nodeid": "t.py::a", "outcome": "passed"}]},
        {"id": "S1", "verdict": "skipped"},
    ],
}


def test_a_ledger_without_the_optional_fields_reads_their_documented_defaults():
    """The module docstring's defaults: a claim's title, statement and article
    empty, no parts, reasons, figures or parts not run; a test's part
    ``assertions``, ``reads_model`` None (not known), no reason, figures or
    parts not run; the file's meta and tables empty, no model-free tables."""
    file = LedgerFile.from_json(json.loads(json.dumps(MINIMAL)), "minimal.json")
    assert file.meta == {} and file.tables == {} and file.model_free_tables == ()
    q2, s1 = file.claims
    for claim in (q2, s1):
        assert (claim.title, claim.statement, claim.article) == ("", "", "")
        assert (claim.not_run, claim.parts, claim.reasons, claim.measured) == ((), {}, (), ())
    assert (q2.id, q2.verdict, s1.id, s1.verdict, s1.tests) == ("Q2", "holds", "S1", "skipped", ())
    [t] = q2.tests
    assert _test_as_read(t) == {
        "nodeid": "t.py::a",
        "outcome": "passed",
        "reason": None,
        "xfail_reason": None,
        "measured": [],
        "part": "assertions",
        "not_run": [],
        "reads_model": None,
    }


def test_a_ledger_without_the_optional_fields_is_written_in_the_full_layout(tmp_path):
    """Written again, the minimal file holds every field of the layout with
    its default (compared with a hand-written JSON object, field by field)."""
    file = LedgerFile.from_json(json.loads(json.dumps(MINIMAL)), "minimal.json")
    claim = {
        "title": "",
        "statement": "",
        "article": "",
        "not_run": [],
        "parts": {},
        "defining": [],
        "undecided": [],
        "beside": {},
        "reasons": [],
        "measured": [],
    }
    expected = {
        "format": FORMAT,
        "meta": {},
        "tables": {},
        "model_free_tables": [],
        "claims": [
            {
                "id": "Q2",
                "verdict": "holds",
                **claim,
                "tests": [
                    {
                        "nodeid": "t.py::a",
                        "outcome": "passed",
                        "reason": None,
                        "xfail_reason": None,
                        "measured": [],
                        "part": "assertions",
                        "not_run": [],
                        "reads_model": None,
                    }
                ],
            },
            {"id": "S1", "verdict": "skipped", **claim, "tests": []},
        ],
    }
    assert file.to_json() == expected
    assert json.loads(file.write(tmp_path / "minimal.json").read_text()) == expected


def test_each_optional_field_given_is_written_where_it_was_read():
    """One hand-made entry with every optional field set to a distinct value:
    each comes back under its own name (a swap of two string fields, of the
    claim's and the test's ``not_run``, or of ``reasons`` and ``measured``
    would show)."""
    data = {
        "format": FORMAT,
        "meta": {"model": "m", "model_free_from": {"ledger": "a.json"}},
        "tables": {"q3": [{"bits": 8}], "p7": []},
        "model_free_tables": ["p7"],
        "claims": [
            {
                "id": "Q3",
                "verdict": "broken",
                "title": "T",
                "statement": "S",
                "article": "A",
                "not_run": [{"part": "timed part", "reason": "claim's"}],
                "parts": {"assertions": "broken", "timed part": "not run"},
                "defining": ["assertions", "timed part"],
                "undecided": [{"part": "timed part", "what": "W", "reason": "R"}],
                "beside": {"teeth": {"passed": 2}, "method": {"failed": 1}},
                "reasons": ["why"],
                "measured": ["figure 1"],
                "tests": [
                    {
                        "nodeid": "t.py::b",
                        "outcome": "failed",
                        "reason": "r",
                        "xfail_reason": "x",
                        "measured": ["figure 2"],
                        "part": "teeth",
                        "not_run": [{"part": "baseline comparison", "reason": "test's"}],
                        "reads_model": False,
                    }
                ],
            }
        ],
    }
    file = LedgerFile.from_json(json.loads(json.dumps(data)), "full.json")
    [claim] = file.claims
    assert (claim.title, claim.statement, claim.article) == ("T", "S", "A")
    assert claim.reasons == ("why",) and claim.measured == ("figure 1",)
    assert _not_run(claim.not_run) == [{"part": "timed part", "reason": "claim's"}]
    assert claim.defining == ("assertions", "timed part")
    assert [(u.part, u.what, u.reason) for u in claim.undecided] == [("timed part", "W", "R")]
    assert claim.beside == {"teeth": {"passed": 2}, "method": {"failed": 1}}
    [t] = claim.tests
    assert (t.reason, t.xfail_reason, t.part, t.reads_model) == ("r", "x", "teeth", False)
    assert t.measured == ("figure 2",)
    assert _not_run(t.not_run) == [{"part": "baseline comparison", "reason": "test's"}]
    assert file.meta == data["meta"] and file.model_free_tables == ("p7",)
    assert file.to_json() == data
