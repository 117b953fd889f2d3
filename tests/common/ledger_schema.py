"""The ledger file's JSON Schema as the tests apply it: the schema shipped in
the package (:data:`aftertrain.claims.ledgerfile.SCHEMA_PATH`) checked with
``jsonschema``, on the committed ledgers and on every ledger a pytest run of
this process writes, the suite's own ``--claims-json`` and each run a test
starts in process (pytester's).

Also a pytest plugin (the root ``conftest.py`` lists it in
``pytest_plugins``): its ``pytest_configure`` installs
:func:`validate_every_ledger_written`, and its autouse fixture fails the test
during which a run wrote a ledger that does not match (the inner run's
error alone would not fail it: pytester reports it as that run's internal
error, after the file is written).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from aftertrain.claims.ledgerfile import SCHEMA_PATH
from aftertrain.ledger.state import Ledger

#: The schema, read once.
SCHEMA: dict = json.loads(SCHEMA_PATH.read_text())
_VALIDATOR = Draft202012Validator(SCHEMA)
#: How many problems a failure lists (the rest counted): one wrong key often breaks many entries.
SHOWN = 5
#: The failures of the ledgers written since the last test ended (:func:`ledgers_written_match_schema`).
INVALID_WRITES: list[str] = []


def ledger_problems(data: object) -> list[str]:
    """Each way ``data`` (a ledger's parsed JSON) breaks the schema, as
    ``at claims/3/verdict: 'mostly' is not one of [...]``, in the document's
    order; [] for a valid ledger."""
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"at {'/'.join(map(str, e.absolute_path)) or 'the top'}: {e.message:.300}" for e in errors]


def assert_valid_ledger(data: object, source: str) -> None:
    """AssertionError naming ``source``, the schema and the first
    :data:`SHOWN` problems when ``data`` does not match the schema."""
    problems = ledger_problems(data)
    more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
    if problems:  # raised, not asserted: the message alone, without pytest's rewritten explanation
        raise AssertionError(
            f"{source} does not match {SCHEMA_PATH.name}: {'; '.join(problems[:SHOWN])}{more}"
        )


def validate_every_ledger_written() -> None:
    """From now on in this process, every ledger the claims plugin writes
    (:meth:`aftertrain.ledger.state.Ledger.write_json`) is read back and
    validated right after it is written (:func:`assert_valid_ledger`): one
    that does not match fails the run that wrote it, naming the file and
    the key, and is added to :data:`INVALID_WRITES`. Installing it twice is
    installing it once."""
    write = Ledger.write_json
    if getattr(write, "validates_against_schema", False):
        return

    @functools.wraps(write)
    def write_and_validate(self: Ledger, path, config) -> None:
        write(self, path, config)
        try:
            assert_valid_ledger(json.loads(Path(path).read_text()), str(path))
        except AssertionError as err:
            INVALID_WRITES.append(str(err))
            raise

    write_and_validate.validates_against_schema = True
    Ledger.write_json = write_and_validate


def pytest_configure(config: pytest.Config) -> None:
    validate_every_ledger_written()


@pytest.fixture(autouse=True)
def ledgers_written_match_schema():
    """Fails the test during which a run of this process wrote a ledger that
    does not match the schema (each failure reported once)."""
    yield
    invalid = INVALID_WRITES.copy()
    INVALID_WRITES.clear()
    if invalid:
        raise AssertionError(
            "a ledger written during this test does not match the schema: " + "; ".join(invalid)
        )
