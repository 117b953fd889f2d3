"""The one ledger file format (aftertrain.claims.ledgerfile): the JSON
written is the JSON read back, the plugin writes it, the report reads it,
and a file of another format or shape is refused naming the field."""

from __future__ import annotations

import json

import pytest

from aftertrain.claims.ledgerfile import FORMAT, LedgerFile, LedgerFormatError
from aftertrain.report import read_ledger
from tests.common.committed import LEDGERS

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.name)
def test_a_committed_ledger_reads_and_writes_back_the_same_json(path, tmp_path):
    data = json.loads(path.read_text())
    file = LedgerFile.from_json(data, str(path))
    assert LedgerFile.from_json(file.to_json(), "again") == file
    out = file.write(tmp_path / "sub" / "claims.json")
    assert LedgerFile.from_json(json.loads(out.read_text()), "written") == file
    view = read_ledger(out)  # the report reads the same file through the same class
    assert view == file and {c.id: view.verdict(c.id) for c in file.claims} == {
        c.id: c.verdict for c in file.claims
    }
    assert view.tables == data["tables"]


def test_the_plugins_ledger_is_written_in_the_format(pytester):
    pytester.makepyfile(
        test_one="""
        import pytest

        @pytest.mark.claim("Q2")
        def test_q2():
            assert True

        @pytest.mark.claim("Q3")
        def test_q3():
            pytest.skip("not here")
    """
    )
    result = pytester.runpytest("-p", "aftertrain.ledger", "-p", "no:cacheprovider", "--claims-json=out.json")
    result.assert_outcomes(passed=1, skipped=1)
    data = json.loads((pytester.path / "out.json").read_text())
    assert data["format"] == FORMAT
    file = LedgerFile.from_json(data, "out.json")
    verdicts = {c.id: c.verdict for c in file.claims}
    assert verdicts["Q2"] == "holds" and verdicts["Q3"] == "skipped"
    [q3] = [c for c in file.claims if c.id == "Q3"]
    assert q3.not_run == ()
    assert [(u.part, u.what, u.reason) for u in q3.undecided] == [
        ("assertions", "its assertions", "not here")
    ]
    # neither test asks for the model: both would be taken by --model-free-from
    assert [t.reads_model for c in file.claims for t in c.tests] == [False, False]
    assert data["model_free_tables"] == [] and "model_free_from" not in data["meta"]


@pytest.mark.parametrize(
    "data, fragment",
    [
        ([], "no 'claims' list"),
        ({"claims": []}, "format None; this version reads format 2"),
        ({"format": 1, "claims": []}, "format 1"),
        ({"format": FORMAT, "claims": [{"id": "Q2"}]}, "claim entry 0 has no verdict"),
        ({"format": FORMAT, "claims": [{"id": "Q2", "verdict": "mostly"}]}, "verdicts this version"),
        ({"format": FORMAT, "claims": [{"id": "Z9", "verdict": "holds"}]}, "names claims"),
        (
            {"format": FORMAT, "claims": [{"id": "Q2", "verdict": "holds", "tests": [{"outcome": "x"}]}]},
            "test outcomes ['x'] are not outcomes",
        ),
        (
            {
                "format": FORMAT,
                "claims": [{"id": "Q2", "verdict": "holds", "tests": [{"outcome": "passed"}]}],
            },
            "malformed claim entry 0 (bad field 'nodeid')",
        ),
        (
            {
                "format": FORMAT,
                "claims": [
                    {
                        "id": "Q2",
                        "verdict": "holds",
                        "tests": [{"nodeid": "t::a", "outcome": "passed", "part": "most of it"}],
                    }
                ],
            },
            "malformed claim entry 0 (bad field 'most of it' is not a valid Part)",
        ),
        ({"format": FORMAT, "claims": [], "tables": [1]}, "'tables' that is not an object"),
        ({"format": FORMAT, "claims": [], "meta": "today"}, "'meta' that is not an object"),
        (
            {
                "format": FORMAT,
                "claims": [
                    {
                        "id": "Q2",
                        "verdict": "holds",
                        "tests": [{"nodeid": "t::a", "outcome": "passed", "reads_model": "yes"}],
                    }
                ],
            },
            "bad field reads_model must be true, false or null, got 'yes'",
        ),
        (
            {"format": FORMAT, "claims": [], "model_free_tables": "x4"},
            "'model_free_tables' 'x4'; it must be a list of table names",
        ),
    ],
)
def test_anything_else_is_refused_naming_the_field(data, fragment):
    with pytest.raises(LedgerFormatError) as err:
        LedgerFile.from_json(data, "f.json")
    assert fragment in str(err.value) and "f.json" in str(err.value)


def test_a_ledger_written_before_defining_parts_reads_with_none_recorded():
    """``defining``, ``undecided`` and ``beside`` came later in format 2: an
    entry without them (a format-2 ledger written before they existed) reads as no
    defining part recorded, none undecided, nothing beside; with them, they
    read back as written."""
    old = {"format": FORMAT, "claims": [{"id": "P8", "verdict": "holds", "parts": {"assertions": "holds"}}]}
    [p8] = LedgerFile.from_json(old, "old.json").claims
    assert (p8.verdict, p8.defining, p8.undecided, p8.beside) == ("holds", (), (), {})
    new = {
        "format": FORMAT,
        "claims": [
            {
                "id": "P8",
                "verdict": "not decided here",
                "defining": ["timed part"],
                "undecided": [{"part": "timed part", "what": "the 2:4 speed-up", "reason": "no CUDA"}],
                "beside": {"teeth": {"passed": 2}},
            }
        ],
    }
    file = LedgerFile.from_json(new, "new.json")
    assert LedgerFile.from_json(file.to_json(), "again") == file
    [p8] = file.claims
    assert (p8.defining, [(u.part, u.reason) for u in p8.undecided], p8.beside) == (
        ("timed part",),
        [("timed part", "no CUDA")],
        {"teeth": {"passed": 2}},
    )
