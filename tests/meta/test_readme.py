"""README.md is the landing page: at most :data:`MAX_LINES` lines, its links
resolve, and what it shows a user to copy works here: the CI recipe is
docs/examples/aftertrain-ci.yml (which .ci/run lints with actionlint), the
kit example imports names the kit has, and the shell commands parse with the
command line's own parser (a wrong scheme or pattern would be refused)."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import shlex
from pathlib import Path

import pytest

from aftertrain import cli
from aftertrain.claims.verdicts import Verdict
from tests.common.docs_tables import member_comments, table_rows

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
#: A newcomer reads the landing page in five minutes; the rest is in docs/.
MAX_LINES = 200
RECIPE = ROOT / "docs" / "examples" / "aftertrain-ci.yml"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_the_readme_is_at_most_200_lines():
    assert len(README.splitlines()) <= MAX_LINES


def test_the_first_screen_links_the_kit_the_ci_recipe_and_the_claims():
    first = "\n".join(README.splitlines()[:40])
    for anchor in ("#the-kit-in-one-screen", "#using-it-in-your-own-ci", "#the-claims", "#two-commands"):
        assert f"]({anchor})" in first, anchor
        heading = anchor[1:].replace("-", " ")
        assert any(
            h.lower().replace("-", " ") == heading for h in re.findall(r"^## (.+)$", README, flags=re.M)
        )


def _relative_links(text: str) -> list[str]:
    return [t for t in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in t]


def test_every_relative_link_of_the_readme_names_a_file_of_the_checkout():
    links = _relative_links(README)
    assert "docs/checks.md" in links
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_the_readmes_ci_recipe_is_the_linted_workflow_file():
    begin, end = "<!-- ci recipe: docs/examples/aftertrain-ci.yml -->\n", "<!-- end of ci recipe -->"
    block = README.split(begin, 1)[1].split(end, 1)[0]
    (recipe,) = _blocks(block, "yaml")
    body = "".join(line for line in RECIPE.read_text().splitlines(keepends=True) if not line.startswith("#"))
    assert recipe == body


def test_the_kit_example_imports_names_the_kit_has():
    (example,) = _blocks(README.split("## The kit in one screen", 1)[1], "python")
    imported = [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(example))
        if isinstance(node, ast.ImportFrom) and node.module.startswith("aftertrain")
        for alias in node.names
    ]
    assert len(imported) >= 6
    for module, name in imported:
        assert hasattr(importlib.import_module(module), name), f"{module}.{name}"


def _check_commands() -> list[list[str]]:
    commands = []
    for block in _blocks(README, "bash") + _blocks(README, "yaml"):
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("aftertrain check "):
                commands.append(shlex.split(line)[1:])
    return commands


@pytest.mark.parametrize("argv", _check_commands(), ids=" ".join)
def test_the_readmes_check_commands_parse(argv):
    args = cli.build_parser().parse_args(argv)
    assert isinstance(args, argparse.Namespace)


def test_a_wrong_scheme_in_a_check_command_would_be_refused():
    """The parse above has teeth: a scheme the kit does not know is a usage error."""
    argv = next(a for a in _check_commands() if "quantizer" in a)
    bad = [a.replace("SYMMETRIC", "SYMETRIC") for a in argv]
    with pytest.raises(SystemExit) as exit_:
        cli.build_parser().parse_args(bad)
    assert exit_.value.code == 2


def test_the_readmes_verdict_table_is_the_codes_word_for_word():
    """The README's "Reading a verdict" table lists the verdict words of
    ``aftertrain.claims.verdicts`` in order, each meaning the comment on its
    member (the one definition; docs/ledger.md shows the same table)."""
    comments = member_comments(inspect.getsource(Verdict))
    rows = table_rows(README.split("## Reading a verdict", 1)[1], "verdict")
    assert [row[0] for row in rows] == [f"`{v.value}`" for v in Verdict]
    assert [row[1] for row in rows] == [comments[v.value] for v in Verdict]
