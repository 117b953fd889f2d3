"""The ledger file's JSON Schema (``claims.schema.json``, shipped beside
aftertrain.claims.ledgerfile): it is a valid draft 2020-12 schema, its enums
and keys are the Python enums and fields (so the two cannot drift), the
committed ledgers match it, the package data ships it, and a ledger with a
wrong verdict word, a missing key or an extra key fails it, as does a run
that writes one (the suite validates every ledger it writes:
``tests.common.ledger_schema``)."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import re

import pytest
from jsonschema import Draft202012Validator

from aftertrain.claims.catalogue import CLAIMS
from aftertrain.claims.ledgerfile import (
    FORMAT,
    SCHEMA_PATH,
    ClaimEntry,
    LedgerFile,
    LedgerFormatError,
    TestEntry,
)
from aftertrain.claims.parts import NOT_RUN, Part
from aftertrain.claims.verdicts import Outcome, Verdict
from aftertrain.core import runmeta
from aftertrain.ledger.state import WORKTREE
from tests.common.committed import LEDGERS, ROOT, committed_data
from tests.common.ledger_schema import INVALID_WRITES, SCHEMA, assert_valid_ledger, ledger_problems

pytest_plugins = ["pytester"]

DEFS = SCHEMA["$defs"]


def test_the_schema_is_a_draft_2020_12_schema():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(SCHEMA)


def test_the_schemas_verdicts_outcomes_and_parts_are_the_python_enums_in_order():
    """The enums are written out in the schema (a user's validator reads
    JSON, not Python); equal to the enums' values, strongest first, they
    cannot drift apart unseen."""
    assert DEFS["verdict"]["enum"] == [v.value for v in Verdict]
    assert DEFS["outcome"]["enum"] == [o.value for o in Outcome]
    assert DEFS["part"]["enum"] == [p.value for p in Part]
    assert {"const": NOT_RUN} in DEFS["claim"]["properties"]["parts"]["additionalProperties"]["anyOf"]


def test_the_schemas_keys_are_the_ledger_files_fields():
    """Every key the writer writes is in the schema, required, and no other:
    the top level is :meth:`LedgerFile.to_json`'s, a claim's and a test's
    are their dataclass fields, the format is :data:`FORMAT`, the meta is
    the run's metadata (:data:`aftertrain.core.runmeta.KEYS`, ``worktree``)
    with ``model_free_from`` optional; every claim ID fits the ID pattern."""
    top = set(LedgerFile(()).to_json())
    assert set(SCHEMA["properties"]) == set(SCHEMA["required"]) == top
    assert SCHEMA["properties"]["format"] == {**SCHEMA["properties"]["format"], "const": FORMAT}
    for name, cls in (("claim", ClaimEntry), ("test", TestEntry)):
        fields = {f.name for f in dataclasses.fields(cls)}
        assert set(DEFS[name]["properties"]) == set(DEFS[name]["required"]) == fields, name
    meta = DEFS["meta"]
    assert DEFS["meta"]["required"] == [*runmeta.KEYS, WORKTREE]
    assert set(meta["properties"]) == {*runmeta.KEYS, WORKTREE, "model_free_from"}
    pattern = DEFS["claim"]["properties"]["id"]["pattern"]
    assert [c for c in CLAIMS if not re.fullmatch(pattern, c)] == []
    closed = [
        SCHEMA,
        meta,
        meta["properties"]["model_free_from"],
        DEFS["claim"],
        DEFS["test"],
        DEFS["not_run"],
    ]
    assert all(s["additionalProperties"] is False for s in closed)


@pytest.mark.parametrize("path", LEDGERS, ids=lambda p: p.name)
def test_a_committed_ledger_matches_the_schema(path):
    assert_valid_ledger(committed_data(path.name), str(path))


def test_the_package_data_ships_the_schema():
    """A wheel holds the schema: one of pyproject's package-data patterns of
    ``aftertrain`` matches its path in the package."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    where = SCHEMA_PATH.relative_to(ROOT / "src" / "aftertrain").as_posix()
    assert any(fnmatch.fnmatch(where, p) for p in patterns["aftertrain"]), (where, patterns)


def _first_claim_with_tests(data: dict) -> dict:
    return next(c for c in data["claims"] if c["tests"])


BROKEN_LEDGERS = {
    "a verdict word": (lambda d: d["claims"][0].update(verdict="mostly holds"), "claims/0/verdict"),
    "a test outcome": (
        lambda d: _first_claim_with_tests(d)["tests"][0].update(outcome="flaky"),
        "/tests/0/outcome",
    ),
    "a part's verdict": (lambda d: d["claims"][0]["parts"].update(assertions="fine"), "/parts/assertions"),
    "the format": (lambda d: d.update(format=FORMAT + 1), "at format"),
    "a missing meta key": (lambda d: d["meta"].pop(WORKTREE), "'worktree' is a required property"),
    "a missing claim key": (lambda d: d["claims"][0].pop("defining"), "'defining' is a required property"),
    "a missing test key": (
        lambda d: _first_claim_with_tests(d)["tests"][0].pop("reads_model"),
        "'reads_model' is a required property",
    ),
    "an extra top-level key": (lambda d: d.update(verdicts={}), "('verdicts' was unexpected)"),
    "an extra claim key": (lambda d: d["claims"][0].update(score=1), "('score' was unexpected)"),
    "a table that is a number": (lambda d: d["tables"].update(q3=1.5), "at tables/q3"),
    "a beside count of 0": (
        lambda d: d["claims"][0]["beside"].update({"teeth": {"passed": 0}}),
        "at claims/0/beside/teeth/passed",
    ),
}


@pytest.mark.teeth
@pytest.mark.parametrize("change, fragment", BROKEN_LEDGERS.values(), ids=list(BROKEN_LEDGERS))
def test_the_schema_catches_a_broken_ledger(change, fragment):
    """One change to the committed ledger at a time: the schema names it."""
    data = committed_data()
    assert ledger_problems(data) == []
    change(data)
    problems = ledger_problems(data)
    assert any(fragment in p for p in problems), problems
    with pytest.raises(AssertionError, match="claims.json does not match claims.schema.json"):
        assert_valid_ledger(data, "claims.json")


@pytest.mark.teeth
def test_the_suites_ledger_validation_catches_a_run_that_writes_a_ledger_without_worktree(
    pytester, monkeypatch
):
    """A pytest run in this process whose plugin writes a ledger breaking
    the schema (here its meta without ``worktree``) ends in an internal
    error and its failure, naming the file and the key, is kept for the
    autouse fixture that fails the test around it: the validation the root
    conftest installs on every ledger the suite writes is live (the same run
    with the real writer passes)."""
    pytester.makepyfile(test_one="import pytest\n\n@pytest.mark.claim('Q2')\ndef test_q2():\n    pass\n")
    run = ("-p", "aftertrain.ledger", "-p", "no:cacheprovider", "--claims-json=out.json")
    pytester.runpytest(*run).assert_outcomes(passed=1)
    assert_valid_ledger(json.loads((pytester.path / "out.json").read_text()), "out.json")
    to_json = LedgerFile.to_json

    def without_worktree(self):
        data = to_json(self)
        del data["meta"][WORKTREE]
        return data

    monkeypatch.setattr(LedgerFile, "to_json", without_worktree)
    result = pytester.runpytest(*run)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    [invalid] = INVALID_WRITES
    INVALID_WRITES.clear()  # caught here: the autouse fixture would fail this test for it
    assert re.fullmatch(
        r"out\.json does not match claims\.schema\.json: at meta: 'worktree' is a required property", invalid
    )


#: The meta keys docs/ledger.md says are ``null`` where the value is not known
#: (``runmeta.collect`` gives None for ``threads`` and ``torch`` without torch).
UNKNOWABLE_META = ("commit", "torch", "threads", "load1", "model", "model_sha256", WORKTREE)


def test_a_ledger_whose_run_metadata_is_not_known_matches_the_schema():
    """Each key the metadata may not know is nullable: a ledger of a run that
    knew none of them (and took its model-free outcomes from a run that knew
    none either) still validates."""
    data = committed_data()
    data["meta"].update(dict.fromkeys(UNKNOWABLE_META))
    data["meta"]["model_free_from"] = {
        "ledger": "claims.json",
        "model": None,
        "model_sha256": None,
        "commit": None,
        "tests": 0,
    }
    assert_valid_ledger(data, "claims.json")


@pytest.mark.parametrize("found", [None, 1, FORMAT + 1, str(FORMAT)])
def test_another_format_is_refused_with_the_command_that_writes_a_current_one(found):
    """docs/ledger.md: the refusal names the file, the format it holds and
    the one this version reads, and says how to write a current one; a file
    without ``format`` is refused the same way."""
    data = committed_data()
    if found is None:
        del data["format"]
    else:
        data["format"] = found
    with pytest.raises(LedgerFormatError) as err:
        LedgerFile.from_json(data, "old.json")
    message = str(err.value)
    assert message.startswith(f"old.json is a claims ledger of format {found!r}; ")
    assert f"this version reads format {FORMAT}" in message
    assert message.endswith("`python -m pytest --claims-json FILE`")


def test_every_verdict_and_outcome_is_written_valid_and_read_back():
    """A ledger holding each verdict once and a test of each outcome (and
    one without an outcome) matches the schema and reads back equal: the
    reader knows every word the writer may write."""
    ids = list(CLAIMS)
    tests = tuple(TestEntry(f"t.py::test_{n}", o) for n, o in enumerate([*Outcome, None]))
    claims = tuple(
        ClaimEntry(ids[n], v, title=CLAIMS[ids[n]].title, tests=tests if n == 0 else ())
        for n, v in enumerate(Verdict)
    )
    ledger = LedgerFile(claims, meta=committed_data()["meta"])
    data = ledger.to_json()
    assert_valid_ledger(data, "all-words.json")
    assert LedgerFile.from_json(data, "all-words.json") == ledger


@pytest.mark.skipif(os.name == "nt", reason="replacing a file that is open is refused on Windows")
def test_write_replaces_the_file_whole(tmp_path):
    """Written atomically: a reader that opened the old file before the write
    still reads the whole old file, the path holds the whole new one, and no
    temporary is left beside it."""
    path = tmp_path / "claims.json"
    path.write_text("old ledger\n")
    ledger = LedgerFile.from_json(committed_data(), "claims.json")
    with path.open() as reader:
        ledger.write(path)
        assert reader.read() == "old ledger\n"
    assert LedgerFile.from_json(json.loads(path.read_text())) == ledger
    assert [p.name for p in tmp_path.iterdir()] == ["claims.json"]
