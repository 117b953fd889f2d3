"""The commands page (docs/commands.md) lists what a user can run, and the
figures it and the page on running the tests (docs/running.md) state are
the code's: every subcommand and every option that
``aftertrain COMMAND --help`` shows, the number of plots the report writes
(counted on reports rendered from the committed ledgers and sweep file), and
the claims with a timed part (those of the committed ledger).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aftertrain import cli
from aftertrain.claims.ledgerfile import LedgerFile
from aftertrain.ledger.state import Part

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = (ROOT / "docs" / "commands.md").read_text()
RUNNING = (ROOT / "docs" / "running.md").read_text()
SUBCOMMANDS = ("report", "sweep", "train", "sample", "check")


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _flags(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", text)) - {"--help"}


def _options(help_text: str) -> set[str]:
    """The options of a ``--help`` text: its option lines' invocations (the
    column before the help text, which may wrap a flag it mentions)."""
    lines = help_text.split("options:", 1)[1].splitlines()
    return _flags(
        " ".join(re.split(r"\s{2,}", line.strip())[0] for line in lines if line.strip().startswith("-"))
    )


@pytest.mark.parametrize(
    "argv",
    [[c] for c in SUBCOMMANDS] + [["check", kit] for kit in ("rule", "generator", "quantizer", "pruner")],
    ids=lambda a: " ".join(a),
)
def test_the_commands_page_lists_every_option_of_every_command(argv, capsys):
    text = _help(argv, capsys)
    name = " ".join(argv)
    assert f"`aftertrain {name} " in COMMANDS, name
    missing = sorted(_options(text) - _flags(COMMANDS))
    assert missing == [], f"aftertrain {name}: {missing} not in docs/commands.md"


def test_a_missing_option_is_found(capsys):
    """The comparison's teeth: the help's option column yields every flag
    (a wrapped mention in the help text is not one), and a command section
    without one of them misses it."""
    options = _options(_help(["train"], capsys))
    assert {"--stop-at", "--no-grad-clip", "--stop-rising-to", "--out"} <= options
    assert "--stop" not in options
    assert _options(_help(["train"], capsys)) - _flags(COMMANDS.replace("--warmup", "")) == {"--warmup"}


def test_the_commands_page_lists_every_command(capsys):
    text = _help([], capsys)
    listed = set(re.search(r"\{([a-z,]+)\}", text).group(1).split(","))
    assert listed == set(SUBCOMMANDS)


def _number(pattern: str) -> int:
    found = re.search(pattern, " ".join(COMMANDS.split()))
    assert found, pattern
    return int(found.group(1))


def test_the_plot_counts_the_commands_page_states_are_the_reports(no_png):
    """Rendered (not written, the plots not saved as PNG) from the committed
    ledgers: the reference's alone, the reference's and the article model's
    (the default run's two models), and those two with the committed sweep file."""
    from aftertrain.report import multimodel
    from aftertrain.report import sweep as sweep_section
    from aftertrain.report.reading import read_ledger
    from aftertrain.report.rendering import render

    reference = read_ledger(ROOT / "report" / "claims.json")
    article = read_ledger(ROOT / "report" / "claims-article.json")
    others = {multimodel.model_label(article): article}
    sweep = sweep_section.read_sweep(ROOT / "report" / "sweep.json")
    one = len(render(reference).plots)
    two = len(render(reference, others=others).plots)
    with_sweep = len(render(reference, others=others, sweep=sweep).plots)
    assert one == _number(r"PNG plots: (\d+) for one model")
    assert two == _number(r"(\d+) with two or more models")
    assert two == _number(r"the default run \(reference and article\) writes (\d+)")
    assert with_sweep == _number(r"(\d+) with a sweep file")
    assert with_sweep - two == _number(r"the sweep's (\d+) plots")


def _ids(listed: str) -> set[str]:
    """``Q11, S5-S8, X7`` as {Q11, S5, S6, S7, S8, X7}."""
    out = set()
    for item in listed.split(","):
        a, _, b = item.strip().partition("-")
        if b:
            out |= {f"{a[0]}{i}" for i in range(int(a[1:]), int(b[1:]) + 1)}
        else:
            out.add(a)
    return out


def test_the_timing_claims_listed_are_the_claims_with_a_timed_part():
    """The list in docs/running.md against the committed ledger: every
    claim one of whose parts is timed (S8 and X7 among them)."""
    text = " ".join(RUNNING.split())
    listed = re.search(r"every claim with a timed part \(([^;)]+)[;)]", text).group(1)
    ledger = LedgerFile.from_json(json.loads((ROOT / "report" / "claims.json").read_text()))
    timed = {c.id for c in ledger.claims if Part.TIMED.value in c.parts}
    assert _ids(listed) == timed
    assert {"S8", "X7"} <= timed
