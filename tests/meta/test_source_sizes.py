"""How long the source's pieces are (STYLE.md: about 400 lines is where a
module usually holds two things), read with ast: every module of
src/aftertrain/ at most :data:`MODULE_LINES` lines, and every function over
:data:`FUNCTION_LINES` lines (docstring included) saying why in its
docstring, in a paragraph that starts ``Long:``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "aftertrain"
MODULE_LINES = 400
FUNCTION_LINES = 60
#: Over a limit while being rewritten: none now. An entry is ``name`` or
#: ``name:function`` and leaves this list when it is rewritten.
BEING_REWRITTEN: set[str] = set()


def too_long(source: str, name: str) -> list[str]:
    """What in the module ``name`` (its text ``source``) is over a limit
    without a reason: the module, or each function, as ``name`` or
    ``name:function``."""
    out = [name] if len(source.splitlines()) > MODULE_LINES else []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            says_why = any(
                p.lstrip().startswith("Long:") for p in (ast.get_docstring(node) or "").split("\n\n")
            )
            if lines > FUNCTION_LINES and not says_why:
                out.append(f"{name}:{node.name}")
    return out


MODULES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_modules_and_functions_are_short_or_say_why(path):
    name = path.relative_to(SRC).as_posix()
    assert [x for x in too_long(path.read_text(), name) if x not in BEING_REWRITTEN] == []


@pytest.mark.teeth
def test_size_check_catches_a_long_module_and_a_long_function_without_a_reason():
    body = "    x = 1\n" * FUNCTION_LINES
    long_fn = f"def f():\n    '''Returns one.'''\n{body}    return x\n"
    assert too_long(long_fn, "m.py") == ["m.py:f"]
    why = f"def f():\n    '''Returns one.\n\n    Long: one assignment a line.'''\n{body}    return x\n"
    assert too_long(why, "m.py") == []
    assert too_long("x = 1\n" * (MODULE_LINES + 1), "m.py") == ["m.py"]
    assert too_long("x = 1\n" * MODULE_LINES, "m.py") == []
