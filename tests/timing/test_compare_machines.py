"""The compare's machine identity (:func:`aftertrain.timing.compare.machine`
and :func:`machine_difference`), branch by branch: which fields of
pytest-benchmark's ``machine_info`` make the identity, which differences
make two runs not comparable, and how the one line names them. Each
expected line is written out by hand from the docstrings' rule."""

from __future__ import annotations

import pytest

from aftertrain.timing.compare import (
    MACHINE_KEY,
    RatioStatus,
    compare_ratios,
    machine,
    machine_difference,
)

INFO = {
    "processor": "x86_64",
    "cpu": {"brand_raw": "Xeon A", "count": 2, "flags": ["sse4_2", "avx2", "fma"]},
    MACHINE_KEY: {"torch": "2.13.0", "threads": 2},
}


def _with(cpu=None, ours=None, **top) -> dict:
    return {
        **INFO,
        **top,
        "cpu": {**INFO["cpu"], **(cpu or {})},
        MACHINE_KEY: {**INFO[MACHINE_KEY], **(ours or {})},
    }


def test_machine_reads_each_field_from_where_pytest_benchmark_and_the_ledger_put_it():
    """CPU model from ``cpu.brand_raw``, its flags sorted, cores from
    ``cpu.count``, torch and threads from the ledger's own key."""
    assert machine(INFO) == {
        "cpu": "Xeon A",
        "flags": ["avx2", "fma", "sse4_2"],
        "cores": 2,
        "torch": "2.13.0",
        "threads": 2,
    }


def test_machine_falls_back_to_the_processor_then_to_unknown():
    """Without ``brand_raw`` the CPU is ``processor``; without either,
    ``unknown``; a record without the ledger's key knows neither torch nor
    threads (None, never a guess)."""
    assert machine({"processor": "arm64", "cpu": {}})["cpu"] == "arm64"
    bare = machine({})
    assert bare == {"cpu": "unknown", "flags": [], "cores": None, "torch": None, "threads": None}


def test_machine_refuses_what_is_not_a_mapping():
    """Bad input names the argument and the type it got."""
    with pytest.raises(ValueError, match="machine_info must be a mapping, got list"):
        machine([])


@pytest.mark.parametrize(
    "stored, now, expected",
    [
        (INFO, INFO, None),
        (INFO, _with(ours={"threads": 4}), "stored on threads 2, now threads 4"),
        (_with(ours={"threads": 8}), INFO, "stored on threads 8, now threads 2"),
        (INFO, _with(cpu={"brand_raw": "EPYC B"}), "stored on cpu Xeon A, now cpu EPYC B"),
        (INFO, _with(cpu={"count": 16}), "stored on cores 2, now cores 16"),
        (INFO, _with(ours={"torch": "2.14.0"}), "stored on torch 2.13.0, now torch 2.14.0"),
        # a flag the machine now has that the stored run lacked, and the other way round
        (
            INFO,
            _with(cpu={"flags": ["sse4_2", "avx2", "fma", "avx512f"]}),
            "stored on fewer flags, now flags +avx512f",
        ),
        (
            _with(cpu={"flags": ["sse4_2", "avx2", "fma", "avx512f"]}),
            INFO,
            "stored on flags +avx512f, now fewer flags",
        ),
        (
            INFO,
            _with(cpu={"flags": ["sse4_2", "avx2", "avx512f"]}),
            "stored on flags +fma, now flags +avx512f",
        ),
        # every difference at once, in the order cpu, cores, torch, threads, flags
        (
            INFO,
            _with(
                cpu={"brand_raw": "EPYC B", "count": 4, "flags": ["sse4_2"]},
                ours={"torch": "2.14.0", "threads": 1},
            ),
            "stored on cpu Xeon A; cores 2; torch 2.13.0; threads 2; flags +avx2,fma, "
            "now cpu EPYC B; cores 4; torch 2.14.0; threads 1; fewer flags",
        ),
    ],
)
def test_machine_difference_names_each_field_that_differs(stored, now, expected):
    """One line, ``stored on ..., now ...``: each differing field by name,
    flags by the ones only one side has (``fewer flags`` on the other)."""
    assert machine_difference(machine(stored), machine(now)) == expected


@pytest.mark.parametrize(
    "unknown", [{"ours": {"threads": None}}, {"ours": {"torch": None}}, {"cpu": {"count": None}}]
)
def test_a_field_one_record_does_not_know_is_no_difference(unknown):
    """None on either side (a run stored before the field was recorded) is
    not a difference, whichever side it is on."""
    other = _with(cpu={"count": 8}, ours={"torch": "2.14.0", "threads": 4})
    blank = _with(**unknown)
    field = next(iter(next(iter(unknown.values()))))
    key = {"count": "cores"}.get(field, field)
    for a, b in ((blank, other), (other, blank)):
        line = machine_difference(machine(a), machine(b))
        assert f"{key} " not in line, line


def test_flags_are_compared_only_when_both_records_list_them():
    """A record without flags (pytest-benchmark without py-cpuinfo) knows
    none: not a difference either way."""
    assert machine_difference(machine(_with(cpu={"flags": []})), machine(INFO)) is None
    assert machine_difference(machine(INFO), machine(_with(cpu={"flags": []}))) is None


def test_the_flags_named_are_at_most_six_in_sorted_order():
    """Nine new flags: the line names the first six in sorted order."""
    many = [f"f{i:02d}" for i in range(9)]
    line = machine_difference(machine(INFO), machine(_with(cpu={"flags": INFO["cpu"]["flags"] + many[::-1]})))
    assert line == "stored on fewer flags, now flags +f00,f01,f02,f03,f04,f05"


def test_a_thread_count_that_differs_makes_every_ratio_not_comparable():
    """End to end through :func:`compare_ratios`: the same ratios, stored at
    2 threads and now at 4, are not comparable and say why; at the same
    count they are the same."""
    run = {"b": {"ratios": {"r": {"median": 1.0, "ci": [0.9, 1.1]}}}}
    [change] = compare_ratios(run, run, machines=(machine(INFO), machine(_with(ours={"threads": 4}))))
    assert change.status == RatioStatus.NOT_COMPARABLE
    assert change.note == "stored on threads 2, now threads 4"
    [change] = compare_ratios(run, run, machines=(machine(INFO), machine(INFO)))
    assert change.status == RatioStatus.SAME and change.note == ""
