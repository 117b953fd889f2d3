"""Every public name of ``aftertrain.checks`` has an entry in the API
reference (docs/reference/*.md), so a new public name without documentation
fails here, before the site is built.

The kit's modules are those docs/checks.md names (``aftertrain.checks.quant``,
``aftertrain.checks.schemes``, ...) and the package itself; a module's public
names are its ``__all__``, else the names it defines without a leading
underscore. An entry is a mkdocstrings line ``::: dotted.path``; it documents
a public name when its last part is that name and it is the same object (a
name re-exported by several kit modules needs one entry).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKS_MD = ROOT / "docs" / "checks.md"
REFERENCE = ROOT / "docs" / "reference"
_DOTTED = re.compile(r"\baftertrain\.checks(?:\.\w+)*")
_ENTRY = re.compile(r"^::: ([\w.]+)\s*$", re.MULTILINE)


def resolve(dotted: str) -> tuple[ModuleType, object]:
    """The longest importable module of ``dotted`` and the object the rest names in it."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        obj: object = module
        for name in parts[i:]:
            obj = getattr(obj, name)
        return module, obj
    raise ModuleNotFoundError(dotted)


def kit_modules() -> list[ModuleType]:
    """``aftertrain.checks`` and every module of it that docs/checks.md names."""
    modules = {resolve(d)[0] for d in _DOTTED.findall(CHECKS_MD.read_text(encoding="utf-8"))}
    modules.add(importlib.import_module("aftertrain.checks"))
    return sorted(modules, key=lambda m: m.__name__)


def defined_names(module: ModuleType) -> list[str]:
    """The names ``module`` assigns or defines at its top level, without a leading underscore."""
    names = []
    for node in ast.parse(Path(module.__file__).read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            names += [e.id for e in elts if isinstance(e, ast.Name)]
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def public_names(module: ModuleType) -> list[str]:
    return list(getattr(module, "__all__", None) or defined_names(module))


def entries() -> list[str]:
    """Every ``::: dotted.path`` of the reference pages."""
    return [
        e for page in sorted(REFERENCE.glob("*.md")) for e in _ENTRY.findall(page.read_text(encoding="utf-8"))
    ]


def test_the_kit_modules_are_found():
    names = {m.__name__ for m in kit_modules()}
    assert {"aftertrain.checks", "aftertrain.checks.quant", "aftertrain.checks.prune"} <= names
    assert "aftertrain.checks.speculative" in names


def undocumented(module: ModuleType, entries: list[str]) -> list[str]:
    """The public names of ``module`` that no entry documents."""
    documented = [(e.rsplit(".", 1)[-1], resolve(e)[1]) for e in entries]
    return [
        name
        for name in public_names(module)
        if not any(last == name and obj is getattr(module, name) for last, obj in documented)
    ]


@pytest.mark.parametrize("module", kit_modules(), ids=lambda m: m.__name__)
def test_every_public_name_has_an_api_reference_entry(module):
    missing = undocumented(module, entries())
    assert not missing, (
        f"{module.__name__}: no entry in docs/reference/ for {missing}: add a line "
        f"'::: {module.__name__}.NAME' to the page of its kit"
    )


def test_undocumented_reports_a_name_without_an_entry():
    """The check has teeth: without the entry of ``check_quantizer``, the
    quantizer kit reports that name, and only it."""
    quant = importlib.import_module("aftertrain.checks.quant")
    kept = [e for e in entries() if not e.endswith(".check_quantizer")]
    assert undocumented(quant, kept) == ["check_quantizer"]


def test_undocumented_does_not_take_a_namesake_for_the_object():
    """An entry of another object with the same last name documents nothing:
    ``aftertrain.checks.prune.battery`` is not the quantizer kit's ``battery``."""
    quant = importlib.import_module("aftertrain.checks.quant")
    kept = [e for e in entries() if e != "aftertrain.checks.quant.battery"]
    assert "aftertrain.checks.prune.battery" in kept
    assert undocumented(quant, kept) == ["battery"]


def test_every_entry_names_an_object_that_exists():
    """A stale ``:::`` line (a name renamed or removed) is caught here, not only by the build."""
    for entry in entries():
        resolve(entry)


def test_defined_names_sees_unpacked_and_annotated_assignments():
    """``FAILURE, EDGE, MISMATCH = ...`` and ``X: int = 1`` define public names; ``_x`` does not."""
    report = importlib.import_module("aftertrain.checks.report")
    assert {"FAILURE", "EDGE", "MISMATCH", "SEVERITIES", "Row", "Report"} <= set(defined_names(report))
    assert all(not n.startswith("_") for n in defined_names(report))


def test_glossary_defines_every_verdict_word_and_names_every_part():
    """A verdict word or a part of a claim added to the code without a
    glossary entry fails here: each verdict is a heading of docs/glossary.md
    (its anchor is the word), each part is named on the page."""
    from aftertrain.claims.parts import Part
    from aftertrain.claims.verdicts import VERDICTS

    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### (.+)$", glossary, re.MULTILINE))
    assert {str(v) for v in VERDICTS} <= headings
    assert {
        "teeth",
        "method",
        "deciding part",
        "defining part",
        "severity",
        "edge finding",
        "mismatch",
        "refusal",
    } <= (headings)
    words = " ".join(glossary.split())
    assert [str(p) for p in Part if str(p) not in words] == []
