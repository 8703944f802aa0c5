"""Declared instance fields: one place per problem that says what a file may hold.

A problem declares its fields once, as a :class:`Schema` of :class:`Field` s (name, kind, unit,
default, range, one line of meaning). The same declaration

* reads a file: :meth:`Schema.read` checks every field through :class:`coopt.fields.Fields`,
  converts file units to SI once (``si``), and reports every field error of the file at once;
* documents it: ``coopt schema PROBLEM`` prints :meth:`Schema.rows`, ``--example`` prints
  :meth:`Schema.example` (a commented TOML that validates), and the docs pages embed the table;
* versions it: ``version`` is the file's ``schema_version``; ``changes`` says, per older version,
  which field was renamed or changed meaning, so an old file gets a message that names the change.

Units. Inside the code every quantity is SI (seconds, bytes, bit/s, joules, watts, hertz,
metres). A file may use the field's customary unit when the name says it; the suffixes are
``_s _ms _us _ns`` (time), ``_b _kib _mib _gib _kb _mb _gb _tb`` (bytes; ``i`` binary), ``_gbit_per_s``
``_tbit_per_s`` (bits per second), ``_gbyte_per_s _tbyte_per_s`` (bytes per second), ``_hz _ghz``,
``_pj _nj _uj _mj _j`` (joules), ``_w``, ``_m _km``, ``_usd``. A bandwidth always spells bit or byte.

A loader then reads::

    values = SCHEMA.read(fields)        # a Values: values.stages, values.forward_s (SI), ...
    ... cross-field checks with fields.fail(name, expected) ...
    return Instance(...)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coopt.errors import InstanceError

#: The key under which :meth:`Schema.read` keeps the names of the fields that failed to read.
_FAILED = "\0failed"

#: A field without a default must be given.
REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()

KINDS = ("int", "float", "bool", "str", "ints", "floats", "strs", "matrix", "table", "tables")


class Values:
    """The fields of one table as read (SI), by attribute or by key. It has no methods of its own,
    so that a field may be called anything (``values``, ``items``)."""

    def __init__(self, **entries: Any):
        object.__setattr__(self, "_entries", dict(entries))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._entries[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Values are read-only; build the Instance from them")

    def __getitem__(self, name: str) -> Any:
        return self._entries[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._entries[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self):
        return iter(self._entries)

    def __repr__(self) -> str:
        return f"Values({self._entries!r})"


@dataclass(frozen=True)
class Field:
    """One declared field.

    ``kind``: ``int float bool str`` scalars; ``ints floats strs`` arrays; ``matrix`` (array of
    number arrays); ``table`` (a sub-table of ``fields``); ``tables`` (``[[name]]``, each of
    ``fields``). ``unit`` is the unit as written in the file and ``si`` the factor that turns it
    into SI (``bandwidth_gbit_per_s``: unit "Gbit/s", si 1e9). ``default`` is in file units; an
    array field with a length takes a scalar default as "every entry". ``length`` may name another
    field: an integer (``length="stages"``) or an array, whose length it takes. ``required_if``
    names a boolean field: required when that is true, the default otherwise. ``only_if``: read only
    when that boolean is true, refused when it is false. ``example`` is the value
    ``coopt schema --example`` writes for a required field (in file units).
    """

    name: str
    kind: str
    doc: str
    unit: str = ""
    si: float = 1.0
    default: Any = REQUIRED
    min: float | None = None
    max: float | None = None
    positive: bool = False
    choices: tuple[str, ...] | None = None
    length: int | str | None = None
    min_length: int = 0
    cols: int | None = None
    fields: tuple[Field, ...] = ()
    required_if: str | None = None
    only_if: str | None = None
    example: Any = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"field {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if self.fields and self.kind not in ("table", "tables"):
            raise ValueError(f"field {self.name!r}: only a table has sub-fields")

    # -- description ------------------------------------------------------------------------
    @property
    def required(self) -> bool:
        return self.default is REQUIRED and self.required_if is None

    def type_label(self) -> str:
        names = {"int": "integer", "float": "number", "bool": "boolean", "str": "string",
                 "ints": "integer array", "floats": "number array", "strs": "string array",
                 "matrix": "array of number arrays", "table": "table", "tables": "array of tables"}
        label = names[self.kind]
        if self.length is not None:
            label += f" [{self.length}]"
        elif self.cols is not None:
            label += f" [* x {self.cols}]"
        return label

    def range_label(self) -> str:
        parts = []
        if self.choices:
            parts.append(" | ".join(self.choices))
        if self.positive:
            parts.append("> 0")
        if self.min is not None:
            parts.append(f">= {self.min:g}")
        if self.max is not None:
            parts.append(f"<= {self.max:g}")
        if self.min_length:
            parts.append(f"at least {self.min_length} entries")
        return ", ".join(parts)

    def presence_label(self) -> str:
        if self.only_if:
            need = "required" if self.default is REQUIRED else f"default {_show(self.default)}"
            return f"only with {self.only_if} = true ({need})"
        if self.required_if:
            return f"required if {self.required_if} = true, else {_show(self.default)}"
        return "required" if self.default is REQUIRED else f"default {_show(self.default)}"

    # -- reading ----------------------------------------------------------------------------
    def read(self, fields: Any, values: Values, root: Values) -> Any:
        flag = self.only_if or self.required_if
        flag_on = bool(_lookup(flag, values, root)) if flag else True
        if self.only_if and not flag_on:
            fields.mark(self.name)
            if fields.has(self.name):
                fields.fail(self.name, f"is only read when {self.only_if} = true")
            return None if self.default is REQUIRED else self._fill(self.default, values, root)
        default = self.default
        if self.required_if and flag_on:
            default = REQUIRED
        if default is not REQUIRED and not fields.has(self.name):
            fields.mark(self.name)
            if self.kind == "table":
                return Schema(self.fields).read(fields.table(self.name, default={}), root)
            return self._fill(default, values, root)
        if default is REQUIRED and not fields.has(self.name) and self.required_if and flag_on:
            fields.fail(self.name, f"is missing (required when {self.required_if} = true)")
        return self._read_given(fields, values, root)

    def _read_given(self, fields: Any, values: Values, root: Values) -> Any:
        key, kind = self.name, self.kind
        if kind == "int":
            return fields.int(key, min=_int_or_none(self.min), max=_int_or_none(self.max))
        if kind == "float":
            return fields.float(key, min=self.min, max=self.max, positive=self.positive) * self.si
        if kind == "bool":
            return fields.bool(key)
        if kind == "str":
            return fields.str(key, choices=self.choices)
        if kind in ("ints", "floats"):
            length = _resolve_length(self.length, values, root)
            numbers = fields.numbers(key, length=length, min_length=self.min_length, min=self.min,
                                     max=self.max, positive=self.positive, integer=kind == "ints")
            return numbers if kind == "ints" else tuple(x * self.si for x in numbers)
        if kind == "strs":
            return fields.strings(key, min_length=self.min_length)
        if kind == "matrix":
            rows = _resolve_length(self.length, values, root)
            matrix = fields.matrix(key, rows=rows, cols=self.cols, min=self.min, max=self.max)
            return tuple(tuple(x * self.si for x in row) for row in matrix)
        if kind == "table":
            return Schema(self.fields).read(fields.table(key), root)
        read, errors = [], []
        for table in fields.tables(key, min_length=self.min_length):
            try:
                read.append(Schema(self.fields).read(table, root))
            except InstanceError as exc:  # read every table, so each one's errors are reported
                errors.extend(exc.errors)
        if errors:
            raise InstanceError.combine(errors)
        return tuple(read)

    def _fill(self, default: Any, values: Values, root: Values) -> Any:
        """A default in file units, in SI (a scalar default of an array fills its length)."""
        if default is None:
            return None
        if self.kind in ("ints", "floats") and isinstance(default, int | float):
            length = _resolve_length(self.length, values, root)
            factor = self.si if self.kind == "floats" else 1
            return tuple(default * factor for _ in range(length or 0))
        if self.kind == "float" and isinstance(default, int | float):
            return float(default) * self.si
        if self.kind == "floats" and isinstance(default, Sequence):
            return tuple(float(x) * self.si for x in default)
        if self.kind == "tables" and isinstance(default, Sequence):
            return tuple(default)
        return default

    # -- the example file -------------------------------------------------------------------
    def example_value(self, values: Mapping[str, Any]) -> Any:
        if self.example is not None:
            return self.example
        length = self.length if isinstance(self.length, int) else values.get(self.length, 1)
        if isinstance(length, list):
            length = len(length)
        if self.default is not REQUIRED and self.default is not None:
            if self.kind in ("ints", "floats") and isinstance(self.default, int | float):
                return [self.default] * int(length or 1)
            return self.default
        if self.kind == "int":
            return int(self.min if self.min is not None else 1)
        if self.kind == "float":
            return float(self.min) if self.min is not None and not self.positive else 1.0
        if self.kind == "bool":
            return False
        if self.kind == "str":
            return self.choices[0] if self.choices else "name"
        if self.kind in ("ints", "floats"):
            one = 1 if self.kind == "ints" else 1.0
            return [one] * max(int(length or 1), self.min_length)
        if self.kind == "strs":
            return ["a", "b"][: max(self.min_length, 1)]
        return None


class Schema:
    """The declared fields of one table (the file's top level, or a sub-table)."""

    def __init__(
        self,
        fields: Iterable[Field],
        *,
        version: int = 1,
        changes: Mapping[int, str] | None = None,
    ):
        self.fields = tuple(fields)
        self.version = version
        #: version -> what changed since it ("bandwidth_gbps (Gbit/s) is now bandwidth_gbit_per_s").
        self.changes = dict(changes or {})
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"a field is declared twice: {sorted(n for n in names if names.count(n) > 1)}")

    def __iter__(self):
        return iter(self.fields)

    def __getitem__(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def read(self, fields: Any, root: Values | None = None) -> Values:
        """Every declared field of ``fields`` (a :class:`coopt.fields.Fields`), SI values. All
        errors of the table are collected and raised together, as one :class:`InstanceError`."""
        read = Values()
        root = read if root is None else root
        if _FAILED not in root:
            root[_FAILED] = set()
        failed: set[str] = root[_FAILED]
        errors: list[InstanceError] = []
        # fields that depend on another (a length, a flag) after the ones they may depend on
        dependent = [f for f in self.fields if f.required_if or f.only_if or isinstance(f.length, str)]
        for f in [f for f in self.fields if f not in dependent] + dependent:
            if {f.only_if, f.required_if, f.length} & failed:
                # what it depends on is wrong and already reported: no guess from a value not read
                fields.mark(f.name)
                read[f.name] = None
                continue
            try:
                read[f.name] = f.read(fields, read, root)
            except InstanceError as exc:
                errors.extend(exc.errors)
                failed.add(f.name)
                read[f.name] = None
        if errors:
            raise InstanceError.combine(errors)
        return Values(**{f.name: read[f.name] for f in self.fields})

    # -- documentation ----------------------------------------------------------------------
    def rows(self, prefix: str = "") -> list[tuple[str, str, str, str, str, str]]:
        """(name, type, unit, presence, range, meaning) for every field, sub-tables flattened."""
        out = []
        for f in self.fields:
            name = f"{prefix}{f.name}"
            shown = f"[[{name}]]" if f.kind == "tables" else f"[{name}]" if f.kind == "table" else name
            out.append((shown, f.type_label(), f.unit, f.presence_label(), f.range_label(), f.doc))
            if f.fields:
                out.extend(Schema(f.fields).rows(f"{name}."))
        return out

    def example(self, header: Mapping[str, Any]) -> str:
        """A commented TOML file with every field (required ones with example values)."""
        lines = [f"{k} = {_toml(v)}" for k, v in header.items()]
        lines += self._example_lines([])
        return "\n".join(lines) + "\n"

    def _example_lines(self, path: list[str], array: bool = False) -> list[str]:
        lines: list[str] = []
        values: dict[str, Any] = {}
        tables = []
        for f in self.fields:
            if f.kind in ("table", "tables"):
                tables.append(f)
                continue
            value = f.example_value(values)
            values[f.name] = value
            comment = f"# {f.doc}" + (f" [{f.unit}]" if f.unit else "") + f"; {f.presence_label()}"
            lines.append(comment)
            if value is None or (f.only_if and f.example is None):
                lines.append(f"# {f.name} = ...")
            else:
                lines.append(f"{f.name} = {_toml(value)}")
        for f in tables:
            name = ".".join([*path, f.name])
            lines.append("")
            lines.append(f"# {f.doc}; {f.presence_label()}")
            count = max(f.min_length, 1) if f.kind == "tables" else 1
            if f.kind == "tables" and f.example is not None:
                for entry in f.example:
                    lines.append(f"[[{name}]]")
                    lines += [f"{k} = {_toml(v)}" for k, v in entry.items()]
                continue
            if f.kind == "table" and f.example is not None:
                lines.append(f"[{name}]")
                lines += [f"{k} = {_toml(v)}" for k, v in f.example.items()]
                continue
            if not f.required and f.kind == "tables" and f.example is None:
                lines.append(f"# [[{name}]] ...")
                continue
            for _ in range(count):
                lines.append(f"[[{name}]]" if f.kind == "tables" else f"[{name}]")
                lines += Schema(f.fields)._example_lines([*path, f.name], f.kind == "tables")
        return lines


def _lookup(name: str, values: Any, root: Any) -> Any:
    for table in (values, root):
        if name in table:
            return table[name]
    return None


def _resolve_length(length: int | str | None, values: Values, root: Values) -> int | None:
    if length is None or isinstance(length, int):
        return length
    value = _lookup(length, values, root)
    if isinstance(value, tuple | list):
        return len(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int_or_none(x: float | None) -> int | None:
    return None if x is None else int(x)


def _show(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Sequence) and not value:
        return "none"
    return str(value)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")

