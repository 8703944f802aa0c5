"""Reading one TOML table field by field: :class:`Fields` checks each value's type and range as a
problem's loader asks for it, remembers what was read (so an unknown or misspelt key is reported
too) and names the file and the field in every :class:`~coopt.errors.InstanceError`.

This is the floor every problem's loader stands on; :mod:`coopt.instance` reads whole files.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from coopt.errors import InstanceError

SCHEMA_VERSION = 1
_MISSING: Any = object()


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "a table"
    return type(value).__name__


class Fields:
    """A read-once view of one TOML table.

    Each accessor checks one key and returns a plain Python value; :meth:`finish` (called by the
    loader) rejects keys nobody read. Nested tables come back as child ``Fields`` whose
    unread keys are reported with their full dotted name.
    """

    def __init__(self, table: Mapping[str, Any], path: str, prefix: str = ""):
        self._table = table
        self.path = path
        self._prefix = prefix
        self._read: set[str] = set()
        self._children: list[Fields] = []

    # -- errors -----------------------------------------------------------------------------
    def name(self, key: str) -> str:
        """The dotted name of ``key`` inside this table, as used in error messages."""
        return f"{self._prefix}{key}"

    def fail(self, key: str | None, expected: str) -> NoReturn:
        """Raise an InstanceError for ``key`` (None: the table itself)."""
        field = self.name(key) if key is not None else (self._prefix.rstrip(".") or None)
        raise InstanceError(self.path, field, expected)

    def _got(self, value: Any) -> str:
        return f"got {value!r}" if not isinstance(value, Mapping | list) else f"got {_kind(value)}"

    # -- raw access -------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        return key in self._table

    def mark(self, key: str) -> None:
        """Count ``key`` as declared (read by its default), so :meth:`finish` can suggest it."""
        self._read.add(key)

    def _get(self, key: str, default: Any) -> Any:
        self._read.add(key)
        if key in self._table:
            return self._table[key]
        if default is _MISSING:
            self.fail(key, "is missing")
        return default

    # -- scalars ----------------------------------------------------------------------------
    def int(
        self, key: str, *, min: int | None = None, max: int | None = None, default: Any = _MISSING
    ) -> int:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected an integer, {self._got(value)}")
        self._check_range(key, value, min, max)
        return value

    def float(
        self,
        key: str,
        *,
        min: float | None = None,
        max: float | None = None,
        positive: bool = False,
        default: Any = _MISSING,
    ) -> float:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        return self._number(key, value, min, max, positive)

    def str(self, key: str, *, choices: tuple[str, ...] | None = None, default: Any = _MISSING) -> str:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str):
            self.fail(key, f"expected a string, {self._got(value)}")
        if choices is not None and value not in choices:
            self.fail(key, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
        return value

    def bool(self, key: str, *, default: Any = _MISSING) -> bool:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, {self._got(value)}")
        return value

    # -- arrays -----------------------------------------------------------------------------
    def numbers(
        self,
        key: str,
        *,
        length: int | None = None,
        min_length: int = 0,
        min: float | None = None,
        max: float | None = None,
        positive: bool = False,
        integer: bool = False,
        default: Any = _MISSING,
    ) -> tuple:
        """An array of numbers (integers only with ``integer=True``) as a tuple."""
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list):
            self.fail(key, f"expected an array of numbers, {self._got(value)}")
        self._check_length(key, value, length, min_length)
        out = []
        for i, item in enumerate(value):
            item_key = f"{key}[{i}]"
            if integer:
                if isinstance(item, bool) or not isinstance(item, int):
                    self.fail(item_key, f"expected an integer, {self._got(item)}")
                self._check_range(item_key, item, min, max)
                out.append(item)
            else:
                out.append(self._number(item_key, item, min, max, positive))
        return tuple(out)

    def strings(self, key: str, *, min_length: int = 0, default: Any = _MISSING) -> tuple[str, ...]:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list):
            self.fail(key, f"expected an array of strings, {self._got(value)}")
        self._check_length(key, value, None, min_length)
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.fail(f"{key}[{i}]", f"expected a string, {self._got(item)}")
        return tuple(value)

    def matrix(
        self,
        key: str,
        *,
        rows: int | None = None,
        cols: int | None = None,
        min: float | None = None,
        max: float | None = None,
        default: Any = _MISSING,
    ) -> tuple[tuple[float, ...], ...]:
        """A rectangular array of arrays of numbers."""
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, list):
            self.fail(key, f"expected an array of arrays of numbers, {self._got(value)}")
        self._check_length(key, value, rows, 0)
        out = []
        for i, row in enumerate(value):
            if not isinstance(row, list):
                self.fail(f"{key}[{i}]", f"expected an array of numbers, {self._got(row)}")
            width = cols if cols is not None else (len(value[0]) if isinstance(value[0], list) else None)
            self._check_length(f"{key}[{i}]", row, width, 0)
            out.append(tuple(self._number(f"{key}[{i}][{j}]", x, min, max, False) for j, x in enumerate(row)))
        return tuple(out)

    # -- tables -----------------------------------------------------------------------------
    def table(self, key: str, *, default: Any = _MISSING) -> Fields:
        """A sub-table; with ``default={}`` a missing table reads as empty."""
        value = self._get(key, default)
        if not isinstance(value, Mapping):
            self.fail(key, f"expected a table, {self._got(value)}")
        child = Fields(value, self.path, f"{self._prefix}{key}.")
        self._children.append(child)
        return child

    def tables(self, key: str, *, min_length: int = 0, default: Any = _MISSING) -> list[Fields]:
        """An array of tables (``[[key]]`` in TOML), each as ``Fields``."""
        value = self._get(key, default)
        if not isinstance(value, list):
            self.fail(key, f"expected an array of tables ([[{key}]]), {self._got(value)}")
        self._check_length(key, value, None, min_length)
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                self.fail(f"{key}[{i}]", f"expected a table, {self._got(item)}")
            child = Fields(item, self.path, f"{self._prefix}{key}[{i}].")
            self._children.append(child)
            out.append(child)
        return out

    def keys(self) -> Iterator[str]:
        """The keys of this table (for tables keyed by user-chosen names)."""
        return iter(self._table)

    def finish(self) -> None:
        """Reject keys that no accessor read, in this table and every child, all at once; each
        unknown key names the closest declared field, if one is close."""
        errors = self.unknown()
        if errors:
            raise InstanceError.combine(errors)

    def unknown(self) -> list[InstanceError]:
        """One error per key nobody read, in this table and its children."""
        import difflib

        errors = []
        for key in self._table:
            if key in self._read:
                continue
            close = difflib.get_close_matches(key, sorted(self._read), n=1, cutoff=0.6)
            hint = (f"; did you mean '{self.name(close[0])}'?" if close
                    else " (coopt schema PROBLEM lists the fields)")
            errors.append(InstanceError(self.path, self.name(key), f"unknown field{hint}"))
        for child in self._children:
            errors.extend(child.unknown())
        return errors

    # -- helpers ----------------------------------------------------------------------------
    def _number(self, key: str, value: Any, lo: Any, hi: Any, positive: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(key, f"expected a number, {self._got(value)}")
        value = float(value)
        if not math.isfinite(value):
            self.fail(key, f"expected a finite number, got {value!r}")
        if positive and value <= 0:
            self.fail(key, f"expected a number > 0, got {value!r}")
        self._check_range(key, value, lo, hi)
        return value

    def _check_range(self, key: str, value: float, lo: Any, hi: Any) -> None:
        if lo is not None and value < lo:
            self.fail(key, f"expected a value >= {lo}, got {value!r}")
        if hi is not None and value > hi:
            self.fail(key, f"expected a value <= {hi}, got {value!r}")

    def _check_length(self, key: str, value: list, length: int | None, min_length: int) -> None:
        if length is not None and len(value) != length:
            self.fail(key, f"expected {length} entries, got {len(value)}")
        if len(value) < min_length:
            self.fail(key, f"expected at least {min_length} entries, got {len(value)}")
