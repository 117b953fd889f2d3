"""The layers of src/aftertrain/ (docs/architecture.md), read from the source
with ast: each package imports only the packages below it, no module imports
a private name of another module, and no two modules import each other
through any chain (no import cycle)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "aftertrain"

#: What each package may import (besides itself). The table of
#: docs/architecture.md; a new arrow is a design change: change both.
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "claims": {"core"},
    "lm": {"core"},
    "quant": {"core", "lm"},
    "prune": {"core", "lm"},
    "speculative": {"core", "lm", "quant"},  # quant: the 8- and 4-bit drafts
    "stats": {"core"},
    "timing": {"core", "claims"},
    "experiments": {"core", "claims", "lm", "quant", "prune", "speculative", "stats", "timing"},
    "checks": {"core", "lm", "quant", "prune", "speculative", "stats"},
    "ledger": {"core", "claims", "lm", "timing"},
    "report": {"core", "claims", "lm", "quant", "prune", "speculative", "experiments"},  # names of choices
    "cli": {
        "core",
        "claims",
        "lm",
        "quant",
        "prune",
        "speculative",
        "stats",
        "timing",
        "experiments",
        "checks",
        "ledger",
        "report",
        "__version__",
    },
    "__main__": {"cli"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imports_of(path: Path) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for every aftertrain import."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] == "aftertrain"]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == "aftertrain"
        ):
            out += [(node.module, a.name) for a in node.names]
    return out


def resolve(module: str, name: str | None, known: set[str]) -> str:
    """The module an import reaches: ``from aftertrain.lm import text`` reaches aftertrain.lm.text."""
    if name is not None and f"{module}.{name}" in known:
        return f"{module}.{name}"
    return module


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def graph() -> dict[str, set[str]]:
    """Module -> the aftertrain modules it imports: parsed at the first test
    that reads it, not at collection (in every xdist worker)."""
    return {m: {resolve(t, n, set(MODULES)) for t, n in imports_of(p)} - {m} for m, p in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_module_imports_only_the_layers_below_its_package(module):
    own = package_of(module)
    bad = sorted(
        t for t in graph()[module] if package_of(t) not in ALLOWED[own] | {own} and t != "aftertrain"
    )
    assert bad == [], f"{module} ({own}) may import {sorted(ALLOWED[own])}, imports {bad}"


def private_imports(path: Path, known: set[str]) -> list[str]:
    """Names starting with one underscore imported from another module (a
    private module counts: ``from aftertrain.checks import _battery``)."""

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    return [
        m if n is None else f"{m}.{n}"
        for m, n in imports_of(path)
        if any(private(part) for part in m.split(".")) or (n is not None and private(n))
    ]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_private_name_of_another(module):
    assert private_imports(MODULES[module], set(MODULES)) == []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def package_inits_only(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without the edges from a package's __init__ to its own
    modules (re-exports), which Python resolves without a cycle."""
    return {
        m: {t for t in ts if not (t.startswith(m + ".") and MODULES[m].name == "__init__.py")}
        for m, ts in graph.items()
    }


def test_no_import_cycle():
    assert cycles(package_inits_only(graph())) == []


@pytest.mark.teeth
def test_layer_check_catches_an_upward_import_a_private_name_and_a_cycle(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text(
        "from aftertrain.lm.model import GPT\nfrom aftertrain.stats import _check_alpha\n"
        "import aftertrain.checks._battery\n"
    )
    assert private_imports(bad, set(MODULES)) == [
        "aftertrain.stats._check_alpha",
        "aftertrain.checks._battery",
    ]
    assert package_of("aftertrain.lm.model") not in ALLOWED["core"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
