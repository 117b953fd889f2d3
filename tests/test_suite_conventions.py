"""The suite's own conventions (issue 13), read from the source with ast.

- A teeth test (a deliberately broken variant fails a check) is marked
  ``@pytest.mark.teeth`` and named ``test_<check>_catches_<bug>``; every test
  named so is marked, and every marked test is named so.
- No test module imports another test module (or a conftest): shared code
  lives in importable helper modules (tests/toys.py, tests/strategies.py,
  tests/quant_bugs.py, tests/prune_bugs.py) and shared fixtures in the one
  conftest.py at the root.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_MODULES = sorted([*ROOT.glob("tests/test_*.py"), *ROOT.glob("benchmarks/test_*.py")])


def _is_teeth_marker(decorator: ast.expr) -> bool:
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(node) == "pytest.mark.teeth"


def functions_under_test(tree: ast.Module):
    """Every test function of a module: top level and in Test* classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            yield node
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (f for f in node.body
                        if isinstance(f, ast.FunctionDef) and f.name.startswith("test_"))


def teeth_naming_problems(source: str) -> list[str]:
    """Tests of ``source`` that break the teeth convention, one line each."""
    problems = []
    for fn in functions_under_test(ast.parse(source)):
        marked = any(_is_teeth_marker(d) for d in fn.decorator_list)
        named = "_catches_" in fn.name
        if marked and not named:
            problems.append(f"{fn.name}: marked teeth, so its name says test_<check>_catches_<bug>")
        if named and not marked:
            problems.append(f"{fn.name}: named *_catches_*, so it is marked @pytest.mark.teeth")
    return problems


def imported_test_modules(source: str) -> list[str]:
    """Test modules (test_*, conftest) that ``source`` imports."""
    out = []
    for node in ast.walk(ast.parse(source)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            last = name.split(".")[-1]
            if last.startswith("test_") or last == "conftest" or \
                    name.split(".")[0] in ("tests", "benchmarks"):
                out.append(name)
    return out


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_teeth_tests_are_marked_and_named_catches(path):
    assert teeth_naming_problems(path.read_text()) == []


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_test_module_imports_another(path):
    assert imported_test_modules(path.read_text()) == []


def test_the_suite_has_teeth_tests():
    """The convention is not met vacuously: both folders hold teeth tests."""
    counts = {"tests": 0, "benchmarks": 0}
    for path in TEST_MODULES:
        for fn in functions_under_test(ast.parse(path.read_text())):
            counts[path.parent.name] += any(_is_teeth_marker(d) for d in fn.decorator_list)
    # (X8's fit teeth moved from benchmarks/ to tests/test_speedup_rules.py: 4 remain there)
    assert counts["tests"] >= 30 and counts["benchmarks"] >= 4, counts


@pytest.mark.teeth
def test_convention_check_catches_an_unmarked_teeth_test_and_a_test_import():
    """Teeth of the two checks above on made-up modules."""
    unmarked = "def test_rule_catches_a_bug():\n    pass\n"
    misnamed = "import pytest\n@pytest.mark.teeth\ndef test_rule_rejects_a_bug():\n    pass\n"
    fine = ("import pytest\n@pytest.mark.teeth\n@pytest.mark.parametrize('b', [1])\n"
            "def test_rule_catches_bug(b):\n    pass\n")
    assert len(teeth_naming_problems(unmarked)) == 1
    assert len(teeth_naming_problems(misnamed)) == 1
    assert teeth_naming_problems(fine) == []
    assert imported_test_modules("from test_model import x\nimport toys\n") == ["test_model"]
    assert imported_test_modules("def f():\n    import conftest\n") == ["conftest"]
    assert imported_test_modules("from toys import ToyTable\nfrom aftertrain import tables\n") == []
