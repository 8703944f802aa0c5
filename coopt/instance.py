"""Instance files: TOML in, a validated frozen ``Instance`` out, and back to TOML.

Every instance file starts with::

    problem = "<registered name>"
    schema_version = 1

The rest is read by the problem's ``load(fields)`` through :class:`Fields`, which checks types and
ranges as it reads and remembers what was read, so that an unknown or misspelt key is reported
too. Every error is an :class:`~coopt.errors.InstanceError` naming the file, the field and what
was expected.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import tomli_w

from coopt.errors import InstanceError
from coopt.output import write_atomic  # noqa: F401  (instance files are written the same way)

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


@dataclass(frozen=True)
class Loaded:
    """An instance together with where it came from."""

    problem: Any  # coopt.problem.Problem (kept untyped to avoid an import cycle)
    instance: Any
    path: str
    sha256: str


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file, turning every failure into an InstanceError naming the file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InstanceError(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise InstanceError(str(path), None, "is a directory, expected a TOML instance file") from None
    except OSError as exc:
        raise InstanceError(str(path), None, f"cannot be read ({exc.strerror})") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InstanceError(str(path), None, "is not UTF-8 text, expected a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InstanceError(str(path), None, f"is not valid TOML ({exc})") from None


def load(path: str | Path, registry_get: Callable[[str], Any] | None = None) -> Loaded:
    """Read and validate one instance file (a path, or a shipped instance's name such as
    ``topoopt/0-exact-n6-d2``); every field error of the file is reported at once."""
    import hashlib

    from coopt import registry
    from coopt.shipped import resolve

    get = registry_get or registry.get
    path = resolve(str(path))
    data = read_toml(path)
    fields = Fields(data, str(path))
    name = fields.str("problem")
    try:
        problem = get(name)
    except KeyError:
        fields.fail("problem", f"expected one of {', '.join(registry.names())}, got {name!r}")
    check_version(fields, problem)
    fields.str("name", default="")
    fields.str("description", default="")
    fields.str("source", default="")
    errors: list[InstanceError] = []
    instance = None
    try:
        instance = problem.load(fields)
    except InstanceError as exc:
        errors.extend(exc.errors)
    # A declared schema reads every field before it fails, so unread keys are unknown ones; a
    # loader without one stops at its first error, and the keys after it were never asked for.
    if not errors or getattr(problem, "schema", None) is not None:
        errors.extend(fields.unknown())
    if errors:
        raise InstanceError.combine(errors)
    sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return Loaded(problem=problem, instance=instance, path=str(path), sha256=sha)


def schema_version(problem: Any) -> int:
    """The ``schema_version`` a problem's files carry today."""
    schema = getattr(problem, "schema", None)
    return schema.version if schema is not None else SCHEMA_VERSION


def check_version(fields: Fields, problem: Any) -> None:
    """Refuse a file of another schema version, naming what changed since."""
    version = fields.int("schema_version")
    current = schema_version(problem)
    if version == current:
        return
    schema = getattr(problem, "schema", None)
    changes = [schema.changes[v] for v in sorted(schema.changes) if v >= version] if schema else []
    if version < current and changes:
        fields.fail("schema_version", f"expected {current}, got {version}: since version {version}, "
                    + "; ".join(changes) + " (coopt schema " + problem.name + " lists today's fields)")
    fields.fail("schema_version", f"expected {current}, got {version}")


def to_toml(problem: Any, instance: Any, *, description: str = "", source: str = "") -> str:
    """Serialize an instance to TOML text that :func:`load` reads back to an equal instance."""
    head: dict[str, Any] = {"problem": problem.name, "schema_version": schema_version(problem)}
    if description:
        head["description"] = description
    if source:
        head["source"] = source
    return tomli_w.dumps({**head, **problem.dump(instance)})
