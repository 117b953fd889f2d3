"""The documentation site's tools: the pages tools/mkdocs_hooks.py writes at
build time from the code (the ``aftertrain`` command's help, the pytest
plugins' options and fixtures), and tools/griffe_rst.py's reStructuredText
to Markdown (its test needs griffe, the docs extra)."""

from __future__ import annotations

import argparse
import importlib

import pytest

from aftertrain.cli import build_parser
from tests.common.tools import load_tool


@pytest.fixture(scope="module")
def hooks():
    yield from load_tool("mkdocs_hooks")


def _all_progs(parser: argparse.ArgumentParser) -> list[str]:
    progs = [parser.prog]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                progs += _all_progs(sub)
    return progs


def test_cli_page_has_the_help_of_every_subcommand(hooks):
    """One section per parser, nested ones (``aftertrain check rule``) too,
    each with its usage line."""
    page = hooks.cli_page()
    progs = list(dict.fromkeys(_all_progs(build_parser())))
    assert "aftertrain check rule" in progs
    for prog in progs:
        assert f"\n## {prog}\n\n```text\nusage: {prog}" in page, prog


def test_plugins_page_lists_every_registered_option_marker_and_fixture(hooks):
    """The options are what each plugin's ``pytest_addoption`` registers and
    the markers what its ``pytest_configure`` declares, so a new one is on
    the page without an edit; the fixtures are rendered from their
    docstrings, with the class a fixture returns."""
    page = hooks.plugins_page()
    assert hooks.plugins() == ["aftertrain.ledger", "aftertrain.ledger.model_under_test"]
    for name in hooks.plugins():
        recorder = hooks._Recorder()
        importlib.import_module(name).pytest_addoption(recorder)
        options = [n for group in recorder.groups.values() for names, _ in group.options for n in names]
        assert options, name
        for option in options:
            assert f"`{option}" in page, option
    for shown in ("`--claims-json PATH`", "`--aftertrain-model NAME_OR_PATH`", "`--timing-budget SECONDS`"):
        assert shown in page
    for marker in ("claim(*ids)", "does_not_reproduce_on(*models, reason)", "expectation_of(", "on_model("):
        assert f"`@pytest.mark.{marker}" in page, marker
    for entry in (
        "::: aftertrain.ledger.plugin.claim_record",
        "::: aftertrain.ledger.record.ClaimRecord",
        "::: aftertrain.ledger.model_under_test.aftertrain_model",
    ):
        assert f"\n{entry}\n" in page, entry


def test_help_text_is_escaped_outside_code_spans(hooks):
    """``baselines/<name>/`` would be read as an HTML tag and vanish."""
    assert hooks._escaped("baselines/<name>/ and `a <b>`") == "baselines/&lt;name&gt;/ and `a <b>`"


def test_rst_roles_and_simple_tables_become_markdown():
    pytest.importorskip("griffe", reason="griffe comes with the docs extra (pip install -e '.[docs]')")
    rst = next(load_tool("griffe_rst"))
    assert rst.markdown_of(":class:`Report` and :func:`~aftertrain.stats.chi2`") == "`Report` and `chi2`"
    assert rst.markdown_of(":attr:`Claim.defining <a.b.Claim.defining>`") == "`Claim.defining`"
    assert rst.markdown_of("Usage::\n\n    x") == "Usage:\n\n    x"
    table = "=====  ===\nname   n\n=====  ===\nSYM    0\nASYM   1\n=====  ===\nafter"
    assert rst.markdown_of(table).split("\n") == [
        "",
        "| name | n |",
        "| --- | --- |",
        "| SYM | 0 |",
        "| ASYM | 1 |",
        "",
        "after",
    ]
