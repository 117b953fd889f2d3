"""The tables the tests hand to the claims ledger for the report: their
names, and the types that say what a table holds.

What a table holds is a :class:`TableSpec`: a row type, a frozen dataclass
subclassing :class:`TableRow`, and a :class:`Shape` (one row, a list of rows, or
rows by key). Each row type names its table where it is defined
(``@table(Q4, claims, Shape.ONE)``, which binds ``BitsTable.SPEC``), so a
test records a table with the rows alone, ``claim_record.table(rows)``: the
name is the rows' spec's (:func:`spec_of`, checked), and the report reads it
back typed with ``ledger.table(SPEC)``. The registry of every spec is
:data:`aftertrain.experiments.tables.SPECS`. One constant per name below, so
a typo is an AttributeError rather than a silently missing section.

:meth:`TableSpec.to_record` gives the JSON the ledger stores,
:meth:`TableSpec.from_record` the typed table back; a row's record is its
fields by name (``field(metadata={"key": ...})`` where the JSON key is not a
Python name, such as ``global``), so the stored JSON is what the tests
recorded before the rows were typed.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, TypeVar

B1 = "b1"
K1 = "k1"
Q3 = "q3"
Q4 = "q4"
Q6 = "q6"
Q7 = "q7"
Q8 = "q8"
Q9 = "q9"
Q10 = "q10"
Q11 = "q11"
X3 = "x3"
P1 = "p1"
P2 = "p2"
P4 = "p4"
P5 = "p5"
P6 = "p6"
X4 = "x4"
X5 = "x5"
SPEC_FIRST_TOKEN = "spec_first_token"
SPEC_ACCEPTANCE = "spec_acceptance"
SPEC_X1 = "spec_x1"
SPEC_DRAFT_COST = "spec_draft_cost"
SPEC_VERIFY_COST = "spec_verify_cost"
SPEC_SPEEDUP = "spec_speedup"
#: The P7 tables' common prefix: one table per sparsity (:func:`p7`).
P7_PREFIX = "p7_"


def p7(sparsity: float) -> str:
    """The P7 table of one sparsity (one benchmark per sparsity)."""
    return f"{P7_PREFIX}{sparsity}"


R = TypeVar("R", bound="TableRow")


def _to_json(value: object) -> object:
    if isinstance(value, TableRow):
        return value.to_record()
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _to_json(v) for k, v in value.items()}
    return value


def _from_json(value: object, hint: object) -> object:
    # Nested rows come back typed by the field's annotation: a TableRow, a
    # tuple[TableRow, ...] or a dict[str, TableRow]; any other JSON list as a tuple.
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, TableRow) and value is not None:
        return hint.from_record(value)
    if origin is tuple and args and isinstance(args[0], type) and issubclass(args[0], TableRow):
        return tuple(args[0].from_record(v) for v in value)
    if origin is dict and len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], TableRow):
        return {k: args[1].from_record(v) for k, v in value.items()}
    return tuple(_from_json(v, None) for v in value) if isinstance(value, list) else value


class TableRow:
    """A frozen dataclass whose record is ``{key: value}`` for each field
    (the key is the field's name, or its ``metadata["key"]``); tuples are
    stored as JSON lists and read back as tuples, so
    ``type(row).from_record(row.to_record()) == row``. A row type with nested
    rows overrides both methods. :attr:`SPEC`: the table the row type is
    recorded as (bound by :func:`table`; None for a row nested in another)."""

    SPEC: ClassVar[TableSpec | None] = None

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The record's keys, in field order (the table's columns)."""
        return tuple(f.metadata.get("key", f.name) for f in dataclasses.fields(cls))

    def to_record(self) -> dict[str, Any]:
        """The row as a JSON-ready dict: each field under its key (its name, or its
        ``metadata["key"]``), nested rows as their records, tuples as lists;
        :meth:`from_record` reads it back to an equal row."""
        return {
            f.metadata.get("key", f.name): _to_json(getattr(self, f.name)) for f in dataclasses.fields(self)
        }

    @classmethod
    def from_record(cls: type[R], data: object) -> R:
        """The row ``data`` (a :meth:`to_record` dict, or its JSON) holds;
        ``ValueError`` naming the missing and unknown keys otherwise."""
        if not isinstance(data, Mapping):
            raise ValueError(
                f"data must be a {cls.__name__} record (a dict with keys "
                f"{list(cls.keys())}), got {type(data).__name__}"
            )
        missing = [k for k in cls.keys() if k not in data]
        extra = [k for k in data if k not in cls.keys()]
        if missing or extra:
            raise ValueError(f"data is not a {cls.__name__} record: missing {missing}, unknown {extra}")
        hints = typing.get_type_hints(cls)
        return cls(
            **{
                f.name: _from_json(data[f.metadata.get("key", f.name)], hints[f.name])
                for f in dataclasses.fields(cls)
            }
        )


def check_row(row: TableRow) -> None:
    """Each field of ``row`` (and of the rows nested in it) holds what its
    annotation says: a float a finite number (an int too, a bool not), an
    int an int, a str a str, a bool a bool, ``X | None`` None or X, a tuple
    or dict its items; ValueError naming the row type, the field and the
    value otherwise. :meth:`TableRow.from_record` checks the keys, this the
    values (a ledger read back is checked whole before it is rendered)."""
    hints = typing.get_type_hints(type(row))
    for f in dataclasses.fields(row):
        problem = _value_problem(getattr(row, f.name), hints[f.name])
        if problem:
            raise ValueError(f"{type(row).__name__}.{f.name} must be {problem}")


def _value_problem(value: object, hint: object) -> str | None:
    """What ``value`` should have been for ``hint`` and what it is, or None."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _value_problem(value, inner[0]) if len(inner) == 1 else None
    if isinstance(hint, type) and issubclass(hint, TableRow):
        if not isinstance(value, hint):
            return f"a {hint.__name__} row, got {value!r:.80}"
        check_row(value)
        return None
    if origin is tuple or origin is dict:
        if not isinstance(value, (tuple, list, dict)):
            return f"a list, got {value!r:.80}"
        items = value.values() if isinstance(value, dict) else value
        kinds = args[1:] if origin is dict else args
        for n, item in enumerate(items):
            kind = kinds[0] if len(kinds) == 2 and kinds[1] is Ellipsis else kinds[min(n, len(kinds) - 1)]
            problem = _value_problem(item, kind) if kinds else None
            if problem:
                return f"a list of items each {problem}"
        return None
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is float and not (is_number and math.isfinite(value)):
        return f"a finite number, got {value!r:.80}"
    if hint is int and not (is_number and isinstance(value, int)):
        return f"an int, got {value!r:.80}"
    if hint in (str, bool) and not isinstance(value, hint):
        return f"a {hint.__name__}, got {value!r:.80}"
    return None


class Shape(enum.Enum):
    """How a table's rows are arranged in its record."""

    ONE = "one row"  # the record is one row's
    ROWS = "list of rows"  # a JSON list of row records
    BY_KEY = "rows by key"  # a JSON object: key -> row record


@dataclasses.dataclass(frozen=True)
class TableSpec:
    """What the table ``name`` holds: rows of ``row`` arranged as ``shape``,
    measured for ``claims``. With ``suffix`` (a field of a one-row table)
    ``name`` is a prefix: each value of that field is a table of its own,
    ``name + str(value)`` (P7, one table per sparsity: :meth:`at`)."""

    name: str
    claims: tuple[str, ...]
    row: type[TableRow]
    shape: Shape = Shape.ROWS
    suffix: str | None = None

    def at(self, value: object) -> TableSpec:
        """The spec of the table of one ``suffix`` value (``P7.at(0.5)``: ``p7_0.5``)."""
        if self.suffix is None:
            raise ValueError(f"{self.name}: at() is for a spec with a suffix field; this one has none")
        return dataclasses.replace(self, name=f"{self.name}{value}", suffix=None)

    def name_of(self, table: object) -> str:
        """The name ``table`` is stored under: :attr:`name`, or with the
        ``suffix`` field's value appended."""
        return self.name if self.suffix is None else self.at(getattr(table, self.suffix)).name

    @property
    def columns(self) -> tuple[str, ...]:
        """The keys of one row's record."""
        return self.row.keys()

    def to_record(self, table: object) -> object:
        """The JSON-able record of ``table`` (a row, a list of rows or a dict
        key -> row, by :attr:`shape`); ``ValueError`` if ``table`` is not that."""
        what = f"{self.name}: table must be {self.shape.value} of {self.row.__name__}"
        if self.shape is Shape.ONE:
            if type(table) is not self.row:
                raise ValueError(f"{what}, got {type(table).__name__}")
            return table.to_record()
        if self.shape is Shape.BY_KEY:
            if not isinstance(table, Mapping) or not all(type(r) is self.row for r in table.values()):
                raise ValueError(f"{what}, got {table!r:.200}")
            return {k: r.to_record() for k, r in table.items()}
        if isinstance(table, (str, Mapping)) or not isinstance(table, Iterable):
            raise ValueError(f"{what}, got {table!r:.200}")
        rows = list(table)  # a generator is read once
        if not all(type(r) is self.row for r in rows):
            raise ValueError(f"{what}, got {rows!r:.200}")
        return [r.to_record() for r in rows]

    def from_record(self, data: object) -> object:
        """The typed table of a record (inverse of :meth:`to_record`)."""
        if self.shape is Shape.ONE:
            return self.row.from_record(data)
        if self.shape is Shape.BY_KEY:
            if not isinstance(data, Mapping):
                raise ValueError(f"{self.name}: data must be a dict of rows, got {type(data).__name__}")
            return {k: self.row.from_record(v) for k, v in data.items()}
        if not isinstance(data, list):
            raise ValueError(f"{self.name}: data must be a list of rows, got {type(data).__name__}")
        return [self.row.from_record(r) for r in data]


def table(name: str, claims: tuple[str, ...], shape: Shape = Shape.ROWS, *, suffix: str | None = None):
    """Class decorator of a row type: it is recorded as the table ``name``
    (one of the constants above), measured for ``claims``, its rows arranged
    as ``shape``; binds ``cls.SPEC``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a table name of aftertrain.claims.tables, got {name!r}")
    if not isinstance(claims, tuple) or not claims or not all(isinstance(c, str) for c in claims):
        raise ValueError(f"claims must be a non-empty tuple of claim IDs, got {claims!r}")
    if not isinstance(shape, Shape):
        raise ValueError(f"shape must be a Shape ({', '.join(s.name for s in Shape)}), got {shape!r}")

    def bind(cls: type[R]) -> type[R]:
        if not (isinstance(cls, type) and issubclass(cls, TableRow) and dataclasses.is_dataclass(cls)):
            raise ValueError(f"@table({name!r}) must decorate a dataclass subclassing TableRow, got {cls!r}")
        if suffix is not None and (
            shape is not Shape.ONE or suffix not in {f.name for f in dataclasses.fields(cls)}
        ):
            raise ValueError(f"@table({name!r}): suffix must be a field of a one-row table, got {suffix!r}")
        cls.SPEC = TableSpec(name, claims, cls, shape, suffix)
        return cls

    return bind


def spec_of(table: object) -> TableSpec:
    """The spec ``table`` is recorded under: that of its row type (one row,
    a non-empty list of rows, or a non-empty dict of rows), which must be the
    type's own (:func:`table`) and match the spec's shape; ``ValueError``
    saying what ``table`` is otherwise."""
    if isinstance(table, TableRow):
        first = table
    elif isinstance(table, Mapping):
        first = next(iter(table.values()), None)
    elif isinstance(table, (list, tuple)):
        first = table[0] if table else None
    else:
        first = None
    spec = type(first).SPEC if isinstance(first, TableRow) else None
    if spec is None or spec.row is not type(first):
        raise ValueError(
            "table must be a row of a table's row type (one decorated with "
            "@aftertrain.claims.tables.table), a non-empty list or a non-empty dict "
            f"of such rows, got {table!r:.200}"
        )
    spec.to_record(table)  # the shape and every row's type, checked
    return spec
