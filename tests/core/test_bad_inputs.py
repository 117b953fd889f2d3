"""Bad inputs to the core layer's file reading (:func:`aftertrain.core.io.read_json`):
each raises ValueError, one line naming the file and what is allowed,
without waiting on a pipe or reading an endless device.

One row per (callable, keyword arguments, words the message must hold);
paths are ``Lazy`` and built in the ``env`` fixture's folder.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from aftertrain.core.io import MAX_JSON_BYTES, MAX_JSON_DEPTH, MAX_JSON_INT_DIGITS, read_json
from tests.common.bad_inputs import Lazy, case_id, check_raises_naming

LEDGER = "claims ledger"


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> SimpleNamespace:
    folder = tmp_path_factory.mktemp("core_bad_inputs")
    files = {
        "nan": '{"x": [1.5, NaN]}',
        "inf": '{"x": -Infinity}',
        "huge": '{"x": 1e999}',
        "deep": "[" * 100_000 + "]" * 100_000,
        "deep_enough": "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
        "deep_objects": '{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1),
        "not_json": "{ not json",
        "long_int": '{"x": -' + "9" * (MAX_JSON_INT_DIGITS + 1) + "}",
    }
    for name, text in files.items():
        (folder / f"{name}.json").write_text(text)
    (folder / "binary.json").write_bytes(b"\xff\xfe\x00\x01")
    with open(folder / "big.json", "wb") as f:  # sparse: no disk written
        f.truncate(MAX_JSON_BYTES + 1)
    os.symlink(folder / "loop.json", folder / "loop.json")
    os.mkfifo(folder / "pipe.json")
    return SimpleNamespace(folder=folder)


def _at(name: str) -> Lazy:
    return Lazy(lambda e: e.folder / name)


CASES = [
    (read_json, dict(path=_at("missing.json"), what=LEDGER), "missing.json does not exist"),
    (read_json, dict(path=Lazy(lambda e: e.folder), what=LEDGER), "is a folder; give a regular JSON file"),
    (read_json, dict(path=_at("loop.json"), what=LEDGER), "loop.json is a symbolic link loop"),
    (read_json, dict(path=_at("pipe.json"), what=LEDGER), "pipe.json is a named pipe, not a regular file"),
    (read_json, dict(path="/dev/zero", what=LEDGER), "/dev/zero is a device or socket, not a regular file"),
    (read_json, dict(path=_at("big.json"), what=LEDGER), f"at most {MAX_JSON_BYTES:,} are read"),
    (read_json, dict(path=_at("binary.json"), what=LEDGER), "binary.json is not a text file"),
    (read_json, dict(path=_at("not_json.json"), what=LEDGER), "not_json.json is not valid JSON"),
    (read_json, dict(path=_at("deep.json"), what=LEDGER), f"is nested more than {MAX_JSON_DEPTH} deep"),
    (read_json, dict(path=_at("deep_enough.json"), what=LEDGER), f"nested more than {MAX_JSON_DEPTH} deep"),
    (read_json, dict(path=_at("deep_objects.json"), what=LEDGER), f"nested more than {MAX_JSON_DEPTH} deep"),
    (read_json, dict(path=_at("nan.json"), what=LEDGER), "nan.json holds the number NaN, not finite"),
    (read_json, dict(path=_at("inf.json"), what=LEDGER), "holds the number -Infinity, not finite"),
    (read_json, dict(path=_at("huge.json"), what=LEDGER), "holds the number 1e999, not finite"),
    (
        read_json,
        dict(path=_at("long_int.json"), what=LEDGER),
        "long_int.json holds an integer of 4,301 digits; at most 4,300 digits are read",
    ),
    (read_json, dict(path=3, what=LEDGER), "path must be a file path (str or os.PathLike), got int"),
]


@pytest.mark.parametrize("fn, kwargs, words", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_raises_value_error_naming_the_argument(env, fn, kwargs, words):
    check_raises_naming(fn, kwargs, words, env)


def test_a_file_at_the_bounds_reads(tmp_path):
    """The deepest file allowed reads, as does a number written with an exponent."""
    path = tmp_path / "ok.json"
    path.write_text("[" * MAX_JSON_DEPTH + "1e300" + "]" * MAX_JSON_DEPTH)
    value = read_json(path, LEDGER)
    for _ in range(MAX_JSON_DEPTH):
        [value] = value
    assert value == 1e300


def test_an_integer_of_exactly_4300_digits_reads(tmp_path):
    """At most :data:`MAX_JSON_INT_DIGITS` digits (Python's own limit on
    converting a string to an int), a sign not counted: the longest reads whole."""
    path = tmp_path / "long.json"
    path.write_text("-" + "9" * MAX_JSON_INT_DIGITS)
    assert read_json(path, LEDGER) == -(10**MAX_JSON_INT_DIGITS - 1)


def test_a_file_of_exactly_64_mib_passes_the_size_bound(tmp_path):
    """At most 64 MiB (docs and :data:`MAX_JSON_BYTES`): a file of exactly
    64 * 2**20 bytes is not refused for its size (a sparse file of NULs, so
    refused as not JSON instead), one byte more is."""
    path = tmp_path / "exactly.json"
    with open(path, "wb") as f:  # sparse: no disk written
        f.truncate(64 * 2**20)
    with pytest.raises(ValueError, match="exactly.json is not valid JSON"):
        read_json(path, LEDGER)
    with open(path, "ab") as f:
        f.truncate(64 * 2**20 + 1)
    with pytest.raises(ValueError, match="at most 67,108,864 are read"):
        read_json(path, LEDGER)
