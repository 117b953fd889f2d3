"""Every tolerance carries its derivation (aftertrain.core.tolerances): a
``#:`` comment right above each constant, which Sphinx and a reader both
take for its documentation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aftertrain.core import tolerances

SOURCE = Path(tolerances.__file__).read_text()


def undocumented(source: str) -> list[str]:
    """Module-level constants with neither a ``#:`` line above nor a comment beside."""
    lines = source.splitlines()
    return [m.group(1) for i, line in enumerate(lines)
            if (m := re.match(r"^([A-Z][A-Z0-9_]*) = ", line))
            and "#" not in line and not (i and lines[i - 1].startswith("#:"))]


def test_every_tolerance_has_a_doc_comment():
    assert undocumented(SOURCE) == []
    assert len(re.findall(r"^[A-Z][A-Z0-9_]* = ", SOURCE, re.M)) >= 30  # not vacuous


@pytest.mark.teeth
def test_doc_comment_check_catches_a_bare_constant():
    assert undocumented("#: why\nA = 1\n\nB = 2\n# plain comment\nC = 3\nD = 4  # beside\n") == ["B", "C"]
