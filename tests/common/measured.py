"""The figures the tests print in their ``claim_record.measured(...)`` strings.

The report's "ours" column shows these strings as they are, so every value
an f-string formats into one is a figure of its own, named
``measured:<test file>::<function> | <expression>`` (the placeholder's source
as :func:`ast.unparse` writes it; a parametrized test counts once, the same
expression twice in one function once, resolved only if every occurrence
is). A placeholder that calls a helper of the same file that returns a
``str`` (``fmt_row(bits_rows[b])``), or that joins inner f-strings
(``'/'.join(f'{v:.4f}' ...)``), is no figure itself: its parts are, the
helper's placeholders under the helper's name
(``measured:<file>::fmt_row | r.per_tensor``). Read with :mod:`ast`; only
``aftertrain`` modules are imported, to read their type hints.

Each placeholder is *resolved* in one of these ways, strictest first; what
is left needs its own entry in :mod:`tests.common.figure_checks`:

- **field**: the expression is ``<base>.<field>`` and ``<base>`` has a row
  type ``T`` (a :class:`aftertrain.claims.tables.TableRow`) by the static typing
  below; it shows the figure ``row:T.<field>`` and is covered by its entry.
- **table**: the same expression (same source, bound by the same loops) is
  an argument of a row constructor ``T(...)`` inside the same function's
  ``claim_record.table(...)`` call, at the position or keyword of field
  ``f`` (or an element of a tuple given there, an interval's end): the
  string prints the recorded ``row:T.f``.
- **text**: by the same typing the value is a ``str`` (a draft's name, a
  slice of a recorded text): a label, no number.
- **parts**: a helper call or a join of inner f-strings (see above).
- **constant**: a read of an UPPER_CASE module-level name of the file or of
  an imported module (``ARTICLE_P2[r.sparsity]``, ``CS.DEFAULT_N``,
  ``len(XS.KS)``), or a loop variable over one (``for b in BITS``): a value
  written in the source, not computed by the test (a name the function
  assigns never is one).

Besides, a field read may be scaled by a unit written in the source
(``100 * f.zero_fraction``, ``x / MB`` with ``MB = 2**20`` at module level):
it is still the field's figure. A name the function assigns once to a string
built with f-strings (``measured(text)``, ``{bounds}``) stands for that
string: its placeholders are the test's. Any other argument of
``measured`` that is neither a literal, an f-string nor a helper's string
(a string built elsewhere) is one figure named after the whole argument,
and so is a literal string with a digit in it (a number written in by
hand): neither can hide a figure.

A name assigned once in the function from such a read (``a1, a8 =
rows[0].acceptance, rows[-1].acceptance``) is that read.

The static typing follows only what the code declares: a name is typed by
its one binding in the function (an assignment, a ``for`` or comprehension
target, a parameter with an annotation, or a fixture whose return annotation
or single ``return`` expression is typed in turn, looked up in the same file
and then in the conftest files); an expression by the return annotation of
the ``aftertrain`` function or test-file helper it calls, a row class it
constructs, the element of a list, tuple or dict it indexes or iterates
(``.values()``, ``.items()``, ``next``, ``sorted``, ``list``, a slice), or
the type hint of a dataclass field it reads. A name bound twice, a call of
anything else, an unannotated parameter that is no fixture: untyped, so a
local computed in the test never resolves and needs its own entry.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
import typing
from collections import abc
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

#: Files whose fixtures a test file can use, besides its own.
CONFTESTS = ("conftest.py", "benchmarks/conftest.py")


@dataclass(frozen=True)
class Placeholder:
    """One formatted value of a measured string and how it resolves."""

    figure: str          # measured:<path>::<function> | <expression>
    kind: str            # field, table, text, parts, or "" (needs an entry)
    link: str = ""       # the row figure it shows (field, table)
    via: str = ""        # a word on the resolution, for docs/figures.md


def _is_measured(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "measured" and ast.unparse(node.func.value) == "claim_record")


def _is_table(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "table" and ast.unparse(node.func.value) == "claim_record")


class _Namespace(dict):
    """A module's names as its imports bind them, importing ``aftertrain``
    modules only (and on demand)."""

    def __init__(self, tree: ast.Module):
        super().__init__()
        self.sources: dict[str, tuple[str, str | None]] = {}
        for node in tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.sources[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0], None)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.sources[a.asname or a.name] = (node.module, a.name)

    def __missing__(self, name: str):
        if name in ("list", "dict", "tuple", "set", "str", "int", "float", "bool"):
            return __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
        if name not in self.sources:
            raise KeyError(name)
        module, attr = self.sources[name]
        if not (module == "aftertrain" or module.startswith("aftertrain.") or module == "typing"):
            raise KeyError(name)
        try:
            mod = importlib.import_module(module)
            value = mod if attr is None else (getattr(mod, attr) if hasattr(mod, attr)
                                              else importlib.import_module(f"{module}.{attr}"))
        except ImportError as exc:
            raise KeyError(name) from exc
        self[name] = value
        return value


class _File:
    """One parsed test file (or conftest): its functions, fixtures and names."""

    def __init__(self, rel: str, source: str):
        self.rel = rel
        self.tree = ast.parse(source)
        self.ns = _Namespace(self.tree)
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        self.fixtures = {n.name: n for n in self.functions.values()
                         if any("fixture" in ast.unparse(d) for d in n.decorator_list)}
        #: helpers that write a string (``-> str``): their placeholders are the figures
        self.formatters = {name for name, n in self.functions.items()
                           if n.returns is not None and ast.unparse(n.returns) == "str"}

    def eval(self, expr: ast.expr | None):
        """An annotation (or a dotted name) evaluated in the file's names; None when it cannot be."""
        if expr is None:
            return None
        try:
            return eval(compile(ast.Expression(expr), self.rel, "eval"), {"__builtins__": {}}, self.ns)  # noqa: S307
        except Exception:
            return None


def _row_class():
    from aftertrain.claims.tables import TableRow

    return TableRow


def _is_row(t) -> bool:
    return isinstance(t, type) and typing.get_origin(t) is None and issubclass(t, _row_class())


def _element(t):
    """What iterating a value of type ``t`` gives (a dict: its keys)."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (list, set, frozenset, abc.Sequence, abc.Iterable, abc.Iterator, abc.Collection) and args:
        return args[0]
    if origin is tuple and args:
        rest = [a for a in args if a is not Ellipsis]
        return rest[0] if all(a == rest[0] for a in rest) else None
    if origin in (dict, abc.Mapping) and args:
        return args[0]
    return None


def _item(t):
    """What ``x[i]`` gives for ``x`` of type ``t`` (a dict: its values)."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (dict, abc.Mapping) and len(args) == 2:
        return args[1]
    if t is str:
        return str
    return _element(t)


def _informative(t) -> bool:
    if t is None or t is typing.Any:
        return False
    return bool(typing.get_args(t)) or _is_row(t) or t in (str, int, float, bool)


class _Scope:
    """The bindings of one function (a test, a helper or a fixture)."""

    def __init__(self, index: _Index, file: _File, fn: ast.FunctionDef, depth: int = 0):
        self.index, self.file, self.fn, self.depth = index, file, fn, depth
        self.params = {a.arg: a for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        self.bindings: dict[str, list[tuple[ast.AST, ast.expr]]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self._bind(node.targets[0], ("assign", node.value))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._bind(node.target, ("assign", node.value))
            elif isinstance(node, (ast.For, ast.comprehension)):
                self._bind(node.target, ("for", node.iter))
            elif isinstance(node, (ast.AugAssign, ast.NamedExpr)):
                self._bind(node.target, ("other", node))
        self.comp_targets = {id(c.target) for c in ast.walk(fn) if isinstance(c, ast.comprehension)}

    def _bind(self, target: ast.AST, how, path: tuple = ()) -> None:
        if isinstance(target, ast.Name):
            self.bindings.setdefault(target.id, []).append((how, path))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, t in enumerate(target.elts):
                self._bind(t.value if isinstance(t, ast.Starred) else t, how,
                           (*path, ("star" if isinstance(t, ast.Starred) else i)))
        else:
            self.bindings.setdefault(ast.unparse(target), []).append((("other", target), path))

    # --- types ---------------------------------------------------------------------------
    def name_type(self, name: str):
        binds = self.bindings.get(name, [])
        if len(binds) > 1 or (binds and name in self.params):
            return None  # bound twice: no one type
        if binds:
            (kind, value), path = binds[0]
            if kind == "assign":
                t = self.type(value)
            elif kind == "for":
                return _CompScope(self, ()).from_iter(value, path) if path else _element(self.type(value))
            else:
                return None
            return self._unpack(t, path) if path else t
        if name in self.params:
            ann = self.params[name].annotation
            if ann is not None:
                return self.file.eval(ann)
            return self.index.fixture_type(self.file, name, self.depth)
        return None

    @staticmethod
    def _unpack(t, path: tuple):
        for step in path:
            if t is None:
                return None
            origin, args = typing.get_origin(t), typing.get_args(t)
            if step == "star":
                t = list[_element(t)] if _element(t) is not None else None
            elif origin is tuple and args and Ellipsis not in args and step < len(args):
                t = args[step]
            else:
                t = _element(t)
        return t

    def type(self, e: ast.expr | None):  # noqa: PLR0911, PLR0912
        if e is None:
            return None
        if isinstance(e, ast.Name):
            return self.name_type(e.id)
        if isinstance(e, ast.Constant):
            return type(e.value) if isinstance(e.value, (str, int, float, bool)) else None
        if isinstance(e, ast.JoinedStr):
            return str
        if isinstance(e, ast.Tuple):
            elts = [self.type(x) for x in e.elts]
            return tuple[tuple(typing.Any if t is None else t for t in elts)] if elts else None
        if isinstance(e, ast.Attribute):
            base = self.type(e.value)
            if dataclasses.is_dataclass(base) and isinstance(base, type):
                return typing.get_type_hints(base).get(e.attr)
            return None
        if isinstance(e, ast.Subscript):
            base = self.type(e.value)
            return base if isinstance(e.slice, ast.Slice) else _item(base)
        if isinstance(e, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            t = _CompScope(self, e.generators).type(e.elt)
            return list[t] if t is not None else None
        if isinstance(e, ast.DictComp):
            inner = _CompScope(self, e.generators)
            k, v = inner.type(e.key), inner.type(e.value)
            return dict[k, v] if k is not None and v is not None else None
        if isinstance(e, ast.Call):
            return self._call_type(e)
        return None

    def _call_type(self, e: ast.Call):
        f = e.func
        if isinstance(f, ast.Name) and f.id in ("sorted", "list") and len(e.args) == 1:
            el = _element(self.type(e.args[0]))
            return list[el] if el is not None else None
        if isinstance(f, ast.Name) and f.id == "next" and e.args:
            return _element(self.type(e.args[0]))
        if isinstance(f, ast.Attribute) and f.attr == "values" and not e.args:
            v = _item(self.type(f.value))
            return list[v] if v is not None else None
        if isinstance(f, ast.Name) and f.id in ("max", "min") and len(e.args) == 1:
            return _element(self.type(e.args[0]))
        if isinstance(f, ast.Name) and f.id in self.file.functions and f.id not in self.file.fixtures:
            return self.index.function_type(self.file, self.file.functions[f.id], self.depth)
        target = self.file.eval(f)
        if _is_row(target):
            return target
        if callable(target) and getattr(target, "__module__", "").startswith("aftertrain"):
            try:
                return typing.get_type_hints(target).get("return")
            except Exception:
                return None
        return None


class _Index:
    """The parsed files, and each fixture's type."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, _File] = {}

    def file(self, rel: str, source: str | None = None) -> _File:
        if rel not in self.files:
            self.files[rel] = _File(rel, source if source is not None else (self.root / rel).read_text())
        return self.files[rel]

    def fixture_type(self, file: _File, name: str, depth: int):
        if depth > 6:
            return None
        for f in (file, *(self.file(c) for c in CONFTESTS if (self.root / c).is_file())):
            fn = f.fixtures.get(name)
            if fn is not None:
                return self.function_type(f, fn, depth)
        return None

    def function_type(self, file: _File, fn: ast.FunctionDef, depth: int):
        """A function's return annotation, else the type of its one ``return``."""
        t = file.eval(fn.returns)
        if _informative(t) or depth > 6:
            return t if _informative(t) else None
        returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
        if len(returns) != 1:
            return None
        return _Scope(self, file, fn, depth + 1).type(returns[0].value)


# --- the placeholders --------------------------------------------------------------------

def _formatted(expr: ast.AST, stack: tuple = ()):
    """(placeholder, the comprehensions around it) for every formatted value
    of ``expr``, outer ones first."""
    if isinstance(expr, ast.FormattedValue):
        yield expr.value, stack
        yield from _formatted(expr.value, stack)
        return
    comps = stack
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
        comps = (*stack, *expr.generators)
    for child in ast.iter_child_nodes(expr):
        yield from _formatted(child, comps)


def _comp_names(stack) -> dict[str, ast.comprehension]:
    return {n.id: c for c in stack for n in ast.walk(c.target) if isinstance(n, ast.Name)}


def _bound_by(expr: ast.expr, stack) -> str:
    """The loops that bind ``expr``'s names, as source: two expressions are
    the same value when their sources and these agree."""
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    comps = _comp_names(stack)
    return " ".join(sorted(f"{ast.unparse(comps[n].target)} in {ast.unparse(comps[n].iter)}"
                           for n in names if n in comps))


def _table_arguments(fn: ast.FunctionDef, file: _File) -> dict[tuple[str, str], str]:
    """(source, loops) -> ``row:T.f`` for each argument of a row constructor
    inside the function's ``claim_record.table(...)`` calls."""
    out = {}
    for call in (n for n in ast.walk(fn) if _is_table(n)):
        for node, stack in _calls_with_stack(call):
            cls = file.eval(node.func)
            if not _is_row(cls):
                continue
            fields = [f.name for f in dataclasses.fields(cls)]
            pairs = [*zip(fields, node.args, strict=False),
                     *((k.arg, k.value) for k in node.keywords if k.arg is not None)]
            # T(**d) with d a name: d["<field>"] is the field
            pairs += [(f, ast.Subscript(k.value, ast.Constant(f))) for k in node.keywords
                      if k.arg is None and isinstance(k.value, ast.Name) for f in fields]
            for field, arg in pairs:
                # an interval given as a tuple: each end is the field's figure
                for part in (arg, *(arg.elts if isinstance(arg, ast.Tuple) else ())):
                    out[(ast.unparse(part), _bound_by(part, stack))] = f"row:{cls.__name__}.{field}"
    return out


def _calls_with_stack(expr: ast.AST, stack: tuple = ()):
    if isinstance(expr, ast.Call):
        yield expr, stack
    comps = stack
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
        comps = (*stack, *expr.generators)
    for child in ast.iter_child_nodes(expr):
        yield from _calls_with_stack(child, comps)


class _CompScope:
    """A function's scope seen from inside some comprehensions: their
    targets bind first."""

    def __init__(self, scope: _Scope, stack):
        self.scope, self.comps = scope, _comp_names(stack)

    def type(self, e: ast.expr):
        if isinstance(e, ast.Name) and e.id in self.comps:
            c = self.comps[e.id]
            if isinstance(c.target, ast.Name):
                return _element(self.type(c.iter))
            path = _path_in(c.target, e.id)
            return self.from_iter(c.iter, path) if path else None
        if isinstance(e, ast.Name):
            return self.scope.name_type(e.id)
        return self._typed_in_here(e)

    def from_iter(self, it: ast.expr, path: tuple):
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
                and not it.args and len(path) == 1 and path[0] in (0, 1)):
            t = self.type(it.func.value)
            args = typing.get_args(t)
            return args[path[0]] if typing.get_origin(t) in (dict, abc.Mapping) and len(args) == 2 else None
        return _Scope._unpack(_element(self.type(it)), path)

    def _typed_in_here(self, e: ast.expr):
        # an attribute, subscript or call: its parts are typed in this scope
        saved = self.scope.type
        try:
            self.scope.type = self.type  # type: ignore[method-assign]
            return _Scope.type(self.scope, e)
        finally:
            self.scope.type = saved  # type: ignore[method-assign]


def _path_in(target: ast.AST, name: str, path: tuple = ()):
    if isinstance(target, ast.Name):
        return path if target.id == name else None
    if isinstance(target, (ast.Tuple, ast.List)):
        for i, t in enumerate(target.elts):
            p = _path_in(t.value if isinstance(t, ast.Starred) else t, name,
                         (*path, "star" if isinstance(t, ast.Starred) else i))
            if p is not None:
                return p
    return None


def _merge(out: dict[str, Placeholder], p: Placeholder) -> None:
    """One figure per expression and function: resolved only when every
    occurrence is (the same source bound by another loop may not be)."""
    if p.figure not in out or not p.kind:
        out[p.figure] = p


class Inventory:
    """Every placeholder of the measured strings of the given files."""

    def __init__(self, root: Path, sources: dict[str, str] | None = None):
        self.root = root
        self.index = _Index(root)
        if sources is None:
            paths = sorted([*root.glob("tests/**/test_*.py"), *root.glob("benchmarks/test_*.py")])
            sources = {p.relative_to(root).as_posix(): p.read_text() for p in paths}
        self.sources = sources

    @cached_property
    def placeholders(self) -> list[Placeholder]:
        out: dict[str, Placeholder] = {}
        row_figs = _row_figure_names()
        for rel, source in self.sources.items():
            if "claim_record.measured" not in source:
                continue
            file = self.index.file(rel, source)
            helpers_used: set[str] = set()
            for fn in (n for n in ast.walk(file.tree) if isinstance(n, ast.FunctionDef)):
                calls = [n for n in ast.walk(fn) if _is_measured(n)]
                if not calls:
                    continue
                scope = _Scope(self.index, file, fn)
                table = _table_arguments(fn, file)
                for call in calls:
                    for arg in (*call.args, *(k.value for k in call.keywords)):
                        for p in self._resolve(rel, fn.name, scope, arg, table, row_figs, helpers_used, ()):
                            _merge(out, p)
            for name in sorted(helpers_used):
                fn = file.functions[name]
                scope = _Scope(self.index, file, fn)
                for ret in (n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None):
                    for p in self._resolve(rel, name, scope, ret.value, {}, row_figs, set(), ()):
                        _merge(out, p)
        return list(out.values())

    def _resolve(self, rel, func, scope, arg, table, row_figs, helpers_used, stack, depth=0):
        file = scope.file
        local = _local_string(arg, scope, stack) if depth < 4 else None
        if local is not None:  # measured(text) with text = f"..." assigned once: its placeholders
            yield from self._resolve(rel, func, scope, local, table, row_figs, helpers_used, (), depth + 1)
            return
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if re.search(r"\d", arg.value):  # a number written into the record by hand
                yield Placeholder(f"measured:{rel}::{func} | {arg.value!r}", "")
            return
        readable = any(
            isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                             and n.func.id in file.formatters)
            for n in ast.walk(arg))
        if not readable:  # a string built elsewhere: its figures cannot be read here
            yield Placeholder(f"measured:{rel}::{func} | {ast.unparse(arg)}", "")
        for expr, comps in _formatted(arg, stack):
            local = _local_string(expr, scope, comps) if depth < 4 else None
            if local is not None:
                yield Placeholder(f"measured:{rel}::{func} | {ast.unparse(expr)}", "parts",
                                  via="no figure itself: the f-string the test assigns to it, whose "
                                      "placeholders are listed under this test")
                yield from self._resolve(rel, func, scope, local, table, row_figs, helpers_used, (),
                                         depth + 1)
                continue
            yield self._one(rel, func, scope, expr, comps, table, row_figs, helpers_used)
        # a helper called outside any f-string: fmt_row(...) as the whole argument
        for node, _ in _calls_with_stack(arg, stack):
            if isinstance(node.func, ast.Name) and node.func.id in file.formatters:
                helpers_used.add(node.func.id)

    def _one(self, rel, func, scope, expr, comps, table, row_figs, helpers_used) -> Placeholder:
        file = scope.file
        name = f"measured:{rel}::{func} | {ast.unparse(expr)}"
        helper_calls = [n.func.id for n in ast.walk(expr) if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Name) and n.func.id in file.formatters]
        if helper_calls or any(isinstance(n, ast.JoinedStr) for n in ast.walk(expr)):
            helpers_used.update(helper_calls)
            parts = ", ".join(f"measured:{rel}::{h}" for h in helper_calls) or "its inner f-strings"
            return Placeholder(name, "parts", via=f"no figure itself: {parts}")
        key = (ast.unparse(expr), _bound_by(expr, comps))
        if key in table and table[key] in row_figs:
            return Placeholder(name, "table", table[key], "recorded in this test's table as")
        typed = _CompScope(scope, comps)
        read, unit = _unit_scaled(expr, file)
        if isinstance(read, ast.Attribute):
            base = typed.type(read.value)
            if _is_row(base) and f"row:{base.__name__}.{read.attr}" in row_figs:
                return Placeholder(name, "field", f"row:{base.__name__}.{read.attr}",
                                   f"reads (times the constant {unit})" if unit else "reads")
        alias = _alias(expr, scope, comps)
        if alias is not None:
            base = typed.type(alias.value)
            if _is_row(base) and f"row:{base.__name__}.{alias.attr}" in row_figs:
                return Placeholder(name, "field", f"row:{base.__name__}.{alias.attr}",
                                   f"is a name assigned once `{ast.unparse(alias)}`, which reads")
        if _is_constant_read(expr, scope, comps):
            return Placeholder(name, "constant", via="a constant of the source (an UPPER_CASE name), "
                                                      "read, not computed")
        t = typed.type(expr)
        if t is str:
            return Placeholder(name, "text", via="a str by its type hints: a label, no number")
        return Placeholder(name, "")


def _local_string(e: ast.expr, scope: _Scope, comps) -> ast.expr | None:
    """The value of a name the function assigns once to a string built with
    f-strings (``bounds = "" if g is None else f"...{g[0]:.2f}..."``)."""
    if not isinstance(e, ast.Name) or e.id in _comp_names(comps) or e.id in scope.params:
        return None
    binds = scope.bindings.get(e.id, [])
    if len(binds) != 1 or binds[0][0][0] != "assign" or binds[0][1]:
        return None
    value = binds[0][0][1]
    return value if any(isinstance(n, ast.JoinedStr) for n in ast.walk(value)) else None


def _alias(e: ast.expr, scope: _Scope, comps) -> ast.Attribute | None:
    """``a1`` assigned once in the function as ``a1 = rows[0].acceptance`` (or
    one element of ``a1, a8 = x.f, y.g``): that attribute read; else None."""
    if not isinstance(e, ast.Name) or e.id in _comp_names(comps) or e.id in scope.params:
        return None
    binds = scope.bindings.get(e.id, [])
    if len(binds) != 1 or binds[0][0][0] != "assign":
        return None
    value, path = binds[0][0][1], binds[0][1]
    for step in path:
        if not (isinstance(value, ast.Tuple) and isinstance(step, int) and step < len(value.elts)):
            return None
        value = value.elts[step]
    return value if isinstance(value, ast.Attribute) else None


def _upper(name: str) -> bool:
    return name.isupper() and name.strip("_") != ""


def _is_constant_read(e: ast.expr, scope: _Scope, comps) -> bool:
    """An UPPER_CASE module-level name of the file or attribute of an
    imported module (``ARTICLE_P2``, ``CS.DEFAULT_N``), read through
    attributes, subscripts (by any key) and ``len``, or a name the enclosing
    loops bind by iterating one; never a name the function itself assigns."""
    if isinstance(e, ast.Name):
        c = _comp_names(comps).get(e.id)
        if c is not None:
            return _is_constant_read(c.iter, scope, ())
        if e.id in scope.bindings or e.id in scope.params:
            binds = scope.bindings.get(e.id, [])
            return (len(binds) == 1 and binds[0][0][0] == "for" and e.id not in scope.params
                    and _is_constant_read(binds[0][0][1], scope, ()))
        return _upper(e.id) and (e.id in scope.file.ns.sources or any(
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == e.id
                                              for target in n.targets for t in ast.walk(target))
            for n in scope.file.tree.body))
    if isinstance(e, (ast.Tuple, ast.List)):  # a literal grid: (8, 6, 4)
        return bool(e.elts) and all(isinstance(x, ast.Constant) for x in e.elts)
    if isinstance(e, ast.Attribute):
        if isinstance(e.value, ast.Name) and e.value.id in scope.file.ns.sources \
                and e.value.id not in scope.bindings and e.value.id not in scope.params:
            return _upper(e.attr)
        return _is_constant_read(e.value, scope, comps)
    if isinstance(e, ast.Subscript):
        return _is_constant_read(e.value, scope, comps)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len" and len(e.args) == 1:
        return _is_constant_read(e.args[0], scope, comps)
    return False


def _constant(e: ast.expr, file: _File) -> bool:
    """A number written in the source: a literal, arithmetic of literals, or
    a module-level name of the file assigned one (``MB = 2**20``)."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
    if isinstance(e, ast.BinOp):
        return _constant(e.left, file) and _constant(e.right, file)
    if isinstance(e, ast.Name):
        values = [n.value for n in file.tree.body if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == e.id for t in n.targets)]
        return len(values) == 1 and _constant(values[0], file)
    return False


def _unit_scaled(expr: ast.expr, file: _File) -> tuple[ast.expr, str]:
    """``100 * x`` or ``x / MB`` (a unit written in the source): (x, "100");
    anything else: (expr, "")."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        if _constant(expr.left, file):
            return expr.right, ast.unparse(expr.left)
        if _constant(expr.right, file):
            return expr.left, ast.unparse(expr.right)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div) and _constant(expr.right, file):
        return expr.left, f"1/{ast.unparse(expr.right)}"
    return expr, ""


def _row_figure_names() -> set[str]:
    from tests.common.figures import row_figures

    return set(row_figures())


def measured_placeholders(root: Path, sources: dict[str, str] | None = None) -> list[Placeholder]:
    """Every placeholder of every ``claim_record.measured`` string of the test
    files under ``root`` (or of ``sources``: path -> source), resolved."""
    return Inventory(root, sources).placeholders


def sign_slips(sources: dict[str, str]) -> list[str]:
    """A ``+`` written before a placeholder that formats without a sign
    (``f"+{x:.4f}"`` prints ``+-0.0004`` for a negative x; ``{x:+.4f}``
    prints the sign itself): ``path:line: <source>``, one per slip in a
    ``claim_record.measured`` string or a helper's returned f-string."""
    out = []
    for rel, source in sources.items():
        if "claim_record.measured" not in source:
            continue
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.JoinedStr):
                continue
            for before, value in zip(node.values, node.values[1:], strict=False):
                spec = ast.unparse(value.format_spec) if isinstance(value, ast.FormattedValue) \
                    and value.format_spec is not None else ""
                if (isinstance(before, ast.Constant) and isinstance(before.value, str)
                        and before.value.endswith("+") and isinstance(value, ast.FormattedValue)
                        and "+" not in spec):
                    out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out
