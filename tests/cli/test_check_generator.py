"""``aftertrain check generator`` (aftertrain.cli.check) where a correct
loop passes either way: ``--seed`` reaches check_generator (the report's
subject names it), and the kit's own progress lines start the heartbeat's
interval again (cli.check_common.run_reports: no ``[check generator Ns]``
line while the kit writes lines of its own more often than the interval;
on a fake clock).

Why: the capability's own tests pass whether or not this is done, so
each test here is the one a broken variant fails (its mutant in
tools/mutants_generator_kit.py, docs/mutation.md "Capability campaigns")."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time

import pytest

from aftertrain import cli
from aftertrain.checks.report import Report
from aftertrain.cli import check_common
from aftertrain.cli.progress import heartbeat

LOOPS = """
import torch


def loop(target, draft, ids, n_new, k, temperature):
    for _ in range(n_new):
        logits = target(ids).logits[0, -1].double()
        if temperature == 0:
            nxt = logits.argmax().reshape(1, 1)
        else:
            nxt = torch.multinomial(torch.softmax(logits / temperature, -1), 1)[None]
        ids = torch.cat([ids, nxt], 1)
    return ids
"""


@pytest.fixture
def loops_folder(tmp_path, monkeypatch):
    (tmp_path / "gk_loops.py").write_text(LOOPS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "gk_loops", raising=False)
    return tmp_path


def test_the_seed_reaches_check_generator(loops_folder, capsys):
    argv = [
        "check",
        "generator",
        "gk_loops:loop",
        "--loop",
        "--runs",
        "10",
        "--seed",
        "7",
        "--json",
        "--quiet",
    ]
    assert cli.main(argv) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert "seed=7)" in report["subject"], report["subject"]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_kits_own_lines_start_the_heartbeats_interval_again(loops_folder, capsys, monkeypatch):
    """Kit lines 0.9 s apart on the clock, the interval 1 s: no heartbeat
    line (one is written only after 1 s with no line at all)."""
    clock = _Clock()
    monkeypatch.setattr(
        check_common, "heartbeat", functools.partial(heartbeat, every=1.0, clock=clock, poll=0.005)
    )

    def reports_of(fn, progress):
        for i in range(1, 5):
            clock.now = 0.9 * i
            progress(f"check_generator: line {i}")
            time.sleep(0.2)  # the thread looks ~40 times
        return [Report("gk")]

    args = argparse.Namespace(target="gk_loops:loop", quiet=False, json=False)
    assert (
        check_common.run_reports(args, "aftertrain check generator", "the generated tokens", reports_of) == 0
    )
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("[check generator")] == [], err
    assert sum(line.startswith("check_generator: line") for line in err) == 4
