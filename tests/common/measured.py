"""The figures the tests show in their ``claim_record.measured(...)`` texts,
read from the calls.

A test writes a measured text as a template whose placeholders name what
they show (:func:`aftertrain.ledger.record.shown`, which checks the names at
run time): ``claim_record.measured("bigram {bigram:.4f}; {BitsRow.bits} bits
{BitsRow.per_tensor:.4f}", bits_rows[3], bigram=bigram_loss)``. Every
placeholder of every ``claim_record.measured(...)`` call in a test file, and
of the ``shown(...)`` texts it shows, is a figure named ``measured:<test
file>::<function> | <placeholder>`` (a parametrized test counts once; a
helper's text under the helper's name), looked up, not inferred:

- ``{RowType.field}`` (``field``): shows the row figure ``row:RowType.field``
  (the call is refused at run time unless a row of that type is given) and is
  covered by its entry;
- ``{name!s}``, ``{name!r}`` (``text``): a label, a str (a number is refused
  at run time), unless the value is a string the test builds (an f-string,
  ``str()``, ``format``, ``join``): then a figure with its own entry;
- ``{name}`` whose value is ``shown(...)`` or a call of a helper of the same
  file annotated ``-> Shown`` (``parts``): its own placeholders are the
  figures, listed under the function that writes them;
- ``{name}`` whose value is a constant of the source (``constant``): a
  number literal, or an UPPER_CASE name the module assigns or imports
  (``ARTICLE_P2[r.sparsity]``, ``CS.DEFAULT_N``), read through attributes,
  subscripts, ``len`` or a ``lambda``; never a name the function assigns;
- any other ``{name}``: a value computed in the test, which needs its own
  entry in :mod:`tests.common.figure_checks`.

A template that is not a literal (an f-string, a string built elsewhere) is
one figure named after the whole argument, and so is a literal with no
placeholder and a digit in it (a number written in by hand): neither can
hide a figure.
"""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path


@dataclass(frozen=True)
class Placeholder:
    """One figure a measured text shows and how it resolves."""

    figure: str  # measured:<path>::<function> | <placeholder>
    kind: str  # field, text, parts, constant, or "" (needs an entry)
    link: str = ""  # the row figure it shows (field)
    via: str = ""  # a word on the resolution, for docs/figures.md


_VIA = {
    "field": "shows",
    "text": "a label (a str, checked when the text is written): no number",
    "parts": "no figure itself: a text of shown(...), whose placeholders are listed under the "
    "function that writes it",
    "constant": "a constant of the source (a literal or an UPPER_CASE name), read, not computed",
}


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _is_measured(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and _callee(node) == "measured"
        and ast.unparse(node.func) == "claim_record.measured"
    )


def _is_template_call(node: ast.AST) -> bool:
    return _is_measured(node) or (isinstance(node, ast.Call) and _callee(node) == "shown")


def _head(name: str) -> str:
    return name.split(".", 1)[0].split("[", 1)[0]


class _File:
    """One parsed test file: its module-level names and its ``-> Shown`` helpers."""

    def __init__(self, rel: str, source: str):
        self.rel, self.tree = rel, ast.parse(source)
        self.module_names = {
            t.id
            for n in self.tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
            for t in ast.walk(target)
            if isinstance(t, ast.Name)
        }
        self.imported = {
            a.asname or a.name.split(".")[0]
            for n in self.tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
        }
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        self.writers = {
            name
            for name, n in self.functions.items()
            if n.returns is not None and ast.unparse(n.returns).split(".")[-1] == "Shown"
        }

    def calls(self):
        """(function, call) for every ``claim_record.measured`` call, under its innermost function."""

        def walk(node, fn):
            for child in ast.iter_child_nodes(node):
                inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
                if fn is not None and _is_measured(child):
                    yield fn, child
                yield from walk(child, inner)

        yield from walk(self.tree, None)


def _assigned(fn: ast.FunctionDef) -> set[str]:
    args = fn.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return names | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _built(expr: ast.expr) -> bool:
    """A string the test builds: an f-string, ``str()``, ``repr()``,
    ``format()``, ``.format()`` or ``.join()`` somewhere in it."""
    return any(
        isinstance(n, ast.JoinedStr)
        or (isinstance(n, ast.Call) and _callee(n) in ("str", "repr", "format", "join"))
        for n in ast.walk(expr)
    )


def _parts(expr: ast.expr, file: _File) -> bool:
    if isinstance(expr, ast.Lambda):
        return _parts(expr.body, file)
    if isinstance(expr, ast.IfExp):
        return _parts(expr.body, file) and _parts(expr.orelse, file)
    return isinstance(expr, ast.Call) and (
        _callee(expr) == "shown" or (isinstance(expr.func, ast.Name) and expr.func.id in file.writers)
    )


def _texts(expr: ast.expr, file: _File) -> list[ast.Call | str]:
    """What a parts value writes with: its ``shown(...)`` calls and the names
    of the ``-> Shown`` helpers it calls."""
    if isinstance(expr, ast.Lambda):
        return _texts(expr.body, file)
    if isinstance(expr, ast.IfExp):
        return _texts(expr.body, file) + _texts(expr.orelse, file)
    if isinstance(expr, ast.Call) and _callee(expr) == "shown":
        return [expr]
    return [expr.func.id] if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) else []


def _constant(expr: ast.expr, file: _File, local: set[str]) -> bool:
    if isinstance(expr, ast.Lambda):
        return _constant(expr.body, file, local | {a.arg for a in expr.args.args})
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.Call) and _callee(expr) == "len" and len(expr.args) == 1:
        return _constant(expr.args[0], file, local)
    if isinstance(expr, ast.Subscript):
        return _constant(expr.value, file, local)
    if isinstance(expr, ast.Attribute):
        if isinstance(expr.value, ast.Name) and expr.value.id in file.imported and expr.value.id not in local:
            return expr.attr.isupper()
        return _constant(expr.value, file, local)
    if isinstance(expr, ast.Name):
        return (
            expr.id.isupper()
            and expr.id not in local
            and (expr.id in file.module_names or expr.id in file.imported)
        )
    return False


def _one(
    base: str, name: str, conversion: str | None, call: ast.Call, file: _File, local: set[str]
) -> Placeholder:
    head = _head(name)
    kwargs = {k.arg: k.value for k in call.keywords if k.arg is not None and k.arg != "sep"}
    if (
        head == "value"
        and "value" not in kwargs
        and conversion not in ("s", "r")
        and any(_constant(a, file, local) for a in call.args[1:])
    ):  # an element of a constant
        return Placeholder(f"{base} | value", "constant", via=_VIA["constant"])
    if head in kwargs:
        expr = kwargs[head]
        figure = f"{base} | {head}"
        if conversion in ("s", "r"):
            kind = "" if _built(expr) else "text"
        elif _parts(expr, file):
            kind = "parts"
        elif _constant(expr, file, local):
            kind = "constant"
        else:
            kind = ""
        return Placeholder(figure, kind, via=_VIA.get(kind, ""))
    if head[:1].isupper() and "." in name:
        field = _head(name[len(head) + 1 :])
        if conversion in ("s", "r"):
            return Placeholder(f"{base} | {head}.{field}", "text", via=_VIA["text"])
        return Placeholder(f"{base} | {head}.{field}", "field", f"row:{head}.{field}", _VIA["field"])
    if conversion in ("s", "r"):  # a dict's {key!s}, an element {value!s}
        return Placeholder(f"{base} | {head}", "text", via=_VIA["text"])
    return Placeholder(f"{base} | {head}", "")


def _figures(file: _File, fn: ast.FunctionDef, call: ast.Call, helpers: set[str]):
    """The placeholders of one template call, and of the ``shown(...)`` texts
    it shows (the ``-> Shown`` helpers it calls go to ``helpers``)."""
    base = f"measured:{file.rel}::{fn.name}"
    if not call.args:
        return
    template = call.args[0]
    if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
        yield Placeholder(f"{base} | {ast.unparse(template)}", "")  # a string built elsewhere
        return
    try:
        parts = list(string.Formatter().parse(template.value))
    except ValueError:
        yield Placeholder(f"{base} | {template.value!r}", "")
        return
    fields = [(name, conversion) for _, name, _, conversion in parts if name is not None]
    if not fields:
        if any(c.isdigit() for c in template.value):  # a number written in by hand
            yield Placeholder(f"{base} | {template.value!r}", "")
        return
    for k in call.keywords:
        if k.arg is None:  # **values: names the call does not show
            yield Placeholder(f"{base} | **{ast.unparse(k.value)}", "")
    local = _assigned(fn)
    kwargs = {k.arg: k.value for k in call.keywords if k.arg is not None}
    for name, conversion in fields:
        p = _one(base, name, conversion, call, file, local)
        yield p
        for text in _texts(kwargs[_head(name)], file) if p.kind == "parts" else ():
            if isinstance(text, str):
                helpers.add(text)
            else:
                yield from _figures(file, fn, text, helpers)


class Inventory:
    """Every placeholder of the measured texts of the given files."""

    def __init__(self, root: Path, sources: dict[str, str] | None = None):
        if sources is None:
            paths = sorted([*root.glob("tests/**/test_*.py"), *root.glob("benchmarks/test_*.py")])
            sources = {p.relative_to(root).as_posix(): p.read_text() for p in paths}
        self.sources = sources

    @cached_property
    def placeholders(self) -> list[Placeholder]:
        out: dict[str, Placeholder] = {}

        def add(placeholders) -> None:
            for p in placeholders:
                if p.figure not in out or not p.kind:  # unresolved once: unresolved
                    out[p.figure] = p

        for rel, source in self.sources.items():
            if "claim_record.measured" not in source:
                continue
            file, helpers, done = _File(rel, source), set(), set()
            for fn, call in file.calls():
                add(_figures(file, fn, call, helpers))
            while helpers - done:  # the helpers' texts, under the helper's name
                name = min(helpers - done)
                done.add(name)
                fn = file.functions[name]
                for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call) and _callee(n) == "shown"):
                    add(_figures(file, fn, call, helpers))
        return list(out.values())


def measured_placeholders(root: Path, sources: dict[str, str] | None = None) -> list[Placeholder]:
    """Every placeholder of every ``claim_record.measured`` template of the
    test files under ``root`` (or of ``sources``: path -> source), and of the
    ``shown(...)`` texts it shows, resolved."""
    return Inventory(root, sources).placeholders


def sign_slips(sources: dict[str, str]) -> list[str]:
    """A ``+`` written before a placeholder that formats without a sign
    (``"+{x:.4f}"`` prints ``+-0.0004`` for a negative x; ``{x:+.4f}``
    prints the sign itself): ``path:line: <template>``, one per slip in a
    ``claim_record.measured`` or ``shown`` template."""
    out = []
    for rel, source in sources.items():
        if "claim_record.measured" not in source and "shown(" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if not (
                _is_template_call(node)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                continue
            try:
                parts = list(string.Formatter().parse(node.args[0].value))
            except ValueError:
                continue
            if any(
                literal.endswith("+") and name is not None and "+" not in spec
                for literal, name, spec, _ in parts
            ):
                out.append(f"{rel}:{node.lineno}: {node.args[0].value!r}")
    return out
