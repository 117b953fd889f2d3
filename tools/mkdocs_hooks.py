"""MkDocs hooks (mkdocs.yml ``hooks:``): the reference pages written from the
code at build time, so they cannot drift from it.

- ``reference/cli.md``: the ``--help`` of ``aftertrain`` and of every
  subcommand, from :func:`aftertrain.cli.build_parser`;
- ``reference/pytest-plugins.md``: the options each of aftertrain's pytest
  plugins registers (the ``pytest11`` entry points, their
  ``pytest_addoption`` called on a recorder), the markers their
  ``pytest_configure`` declares, and their fixtures with the class each
  returns (rendered from the docstrings by mkdocstrings).
"""

from __future__ import annotations

import argparse
import ast
import html
import importlib
import importlib.metadata
import inspect
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the page functions run without mkdocs (tests/meta/test_docs_tools.py)
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

#: The width the help is formatted at, whatever the terminal of the build.
HELP_COLUMNS = 100


@contextmanager
def _help_environment() -> Iterator[None]:
    """argparse's help at :data:`HELP_COLUMNS` columns, without colour."""
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "NO_COLOR")}
    os.environ.update(COLUMNS=str(HELP_COLUMNS), NO_COLOR="1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser below it, depth first, in the
    order the help lists them."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                yield from _subcommands(sub)


def cli_page() -> str:
    """The ``aftertrain`` command's reference: one section per command, its help verbatim."""
    from aftertrain.cli import build_parser

    out = [
        "# The `aftertrain` command",
        "",
        "Written at build time from the command's own parser "
        "(`aftertrain.cli.build_parser`), so it is what `--help` prints. "
        "A usage error is one line on standard error and exit status 2; "
        "the kits' commands (`aftertrain check ...`) exit 0 passed, 1 failed "
        "([Checking your own implementation](../checks.md)).",
        "",
    ]
    with _help_environment():
        for parser in _subcommands(build_parser()):
            out += [f"## {parser.prog}", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(out)


@dataclass
class _Group:
    """The options one ``parser.getgroup(name, description)`` received."""

    name: str
    description: str
    options: list[tuple[tuple[str, ...], dict]] = field(default_factory=list)

    def addoption(self, *names: str, **attrs: object) -> None:
        self.options.append((names, attrs))


@dataclass
class _Recorder:
    """Stands for ``pytest.Parser`` in a plugin's ``pytest_addoption``: records
    the groups and options instead of parsing."""

    groups: dict[str, _Group] = field(default_factory=dict)
    ini: list[tuple[str, str]] = field(default_factory=list)

    def getgroup(self, name: str, description: str = "", after: str | None = None) -> _Group:
        return self.groups.setdefault(name, _Group(name, description))

    def addoption(self, *names: str, **attrs: object) -> None:
        self.getgroup("general").addoption(*names, **attrs)

    def addini(self, name: str, help: str, *args: object, **kwargs: object) -> None:
        self.ini.append((name, help))


class _Stop(Exception):
    """Raised by :class:`_MarkerRecorder` at the first step past the markers."""


@dataclass
class _MarkerRecorder:
    """Stands for ``pytest.Config`` in a plugin's ``pytest_configure``: records
    the markers it declares (``addinivalue_line("markers", ...)``, its first
    lines), then stops it at the first other call, before it checks options
    or loads anything."""

    markers: list[str] = field(default_factory=list)

    def addinivalue_line(self, name: str, line: str) -> None:
        if name == "markers":
            self.markers.append(line)

    def __getattr__(self, name: str) -> object:
        raise _Stop(name)


def declared_markers(module: ModuleType) -> list[str]:
    """The ``name(args): description`` lines of the markers ``module``'s ``pytest_configure`` declares."""
    recorder = _MarkerRecorder()
    try:
        module.pytest_configure(recorder)
    except _Stop:
        pass
    return recorder.markers


def _escaped(text: str) -> str:
    """``text`` for Markdown: ``<`` and ``&`` escaped outside its code spans."""
    parts = text.split("`")
    return "`".join(p if i % 2 else html.escape(p, quote=False) for i, p in enumerate(parts))


def _option_line(names: tuple[str, ...], attrs: dict) -> str:
    metavar = attrs.get("metavar")
    takes_value = attrs.get("action") not in ("store_true", "store_false", "count")
    shown = ", ".join(f"`{n}{' ' + str(metavar) if metavar and takes_value else ''}`" for n in names)
    return f"{shown}\n:   {_escaped(str(attrs.get('help', '')))}\n"


def plugins() -> list[str]:
    """The modules of aftertrain's pytest plugins, as its ``pytest11`` entry points name them."""
    points = importlib.metadata.entry_points(group="pytest11")
    return sorted(p.value for p in points if p.value.split(".")[0] == "aftertrain")


def fixtures(module: object) -> list[object]:
    """The pytest fixtures a plugin module defines or re-exports, in source order."""
    found = [v for v in vars(module).values() if getattr(v, "_fixture_function_marker", None)]
    return list(dict.fromkeys(found))


def _named(module: ModuleType, name: str) -> object:
    """What ``name`` is in ``module``: a global, else what a ``from X import name``
    of its source binds (under ``TYPE_CHECKING`` only, for an annotation)."""
    if name in vars(module):
        return vars(module)[name]
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return getattr(importlib.import_module(node.module), alias.name)
    return None


def fixture_type(fixture: object) -> type | None:
    """The class a fixture's function is annotated to return, where aftertrain defines it."""
    returned = inspect.get_annotations(fixture.__wrapped__).get("return")
    if isinstance(returned, str):
        returned = _named(inspect.getmodule(fixture.__wrapped__), returned)
    if isinstance(returned, type) and returned.__module__.split(".")[0] == "aftertrain":
        return returned
    return None


def plugins_page() -> str:
    """The pytest plugins' reference: each plugin's options, markers and fixtures."""
    names = plugins()
    if not names:
        raise RuntimeError("no pytest11 entry point of aftertrain: install it (pip install -e '.[docs]')")
    out = [
        "# The pytest plugins",
        "",
        "aftertrain installs two pytest plugins (`pytest11` entry points), inert "
        "unless switched on: by `-p NAME` (this project's `addopts`) or by one of "
        "their options. Written at build time: the options are what each "
        "plugin's `pytest_addoption` registers, the markers what its "
        "`pytest_configure` declares, the fixtures are rendered from their "
        "docstrings. The [ledger](../ledger.md) is the file `--claims-json` "
        "writes; its words are in the [glossary](../glossary.md).",
        "",
    ]
    for name in names:
        module = importlib.import_module(name)
        recorder = _Recorder()
        module.pytest_addoption(recorder)
        out += [f"## `-p {name}`", ""]
        doc = (module.__doc__ or "").strip().split("\n\n")[0]
        out += [_escaped(" ".join(doc.split())), ""]
        for group in recorder.groups.values():
            out += [f"### Options: {group.description}", ""]
            out += [_option_line(names, attrs) for names, attrs in group.options]
        for ini_name, ini_help in recorder.ini:
            out += [f"`{ini_name}` (ini)\n:   {_escaped(ini_help)}\n"]
        markers = declared_markers(module)
        if markers:
            out += ["### Markers", ""]
            for line in markers:
                signature, _, description = line.partition(": ")
                out += [f"`@pytest.mark.{signature}`\n:   {_escaped(description)}\n"]
        found = fixtures(module)
        if found:
            out += ["### Fixtures", ""]
            for fixture in found:
                scope = fixture._fixture_function_marker.scope
                out += [
                    f"::: {fixture.__module__}.{fixture.__name__}",
                    "    options:",
                    "      show_signature: false",
                    "",
                    f"Scope: `{scope}`.",
                    "",
                ]
                returned = fixture_type(fixture)
                if returned is not None:
                    out += [f"::: {returned.__module__}.{returned.__qualname__}", ""]
    return "\n".join(out)


#: The generated pages: path under docs/ -> the function that writes it.
GENERATED = {"reference/cli.md": cli_page, "reference/pytest-plugins.md": plugins_page}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages to the site (they are never written into docs/)."""
    from mkdocs.structure.files import File

    for path, page in GENERATED.items():
        files.append(File.generated(config, path, content=page()))
    return files
