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

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from coopt import registry
from coopt.errors import InstanceError
from coopt.fields import SCHEMA_VERSION, Fields
from coopt.shipped import resolve  # noqa: F401  (instance files are written the same way)


@dataclass(frozen=True)
class Loaded:
    """An instance together with where it came from."""

    problem: Any  # coopt.problem.Problem (kept untyped to avoid an import cycle)
    instance: Any
    path: str
    sha256: str


#: The largest instance or solution file coopt reads (the largest generated instance is a few MB).
MAX_FILE_BYTES = 64 * 2**20
#: The deepest nesting of tables and arrays a file may have (instance files need about five).
MAX_DEPTH = 32
_BOM = b"\xef\xbb\xbf"


def read_bytes(path: str | Path, expected: str = "a TOML instance file") -> bytes:
    """The bytes of a regular file of at most :data:`MAX_FILE_BYTES`; anything else (a folder, a
    FIFO, a device, a socket, a larger file) is refused before a byte is read, with an
    InstanceError naming the file."""
    import stat

    path = Path(path)
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            raise InstanceError(str(path), None, f"is a directory, expected {expected}")
        if not stat.S_ISREG(st.st_mode):
            raise InstanceError(str(path), None, f"is not a regular file (a FIFO, device or socket), "
                                f"expected {expected}")
        if st.st_size > MAX_FILE_BYTES:
            raise InstanceError(str(path), None, f"is {st.st_size} bytes, expected {expected} of at most "
                                f"{MAX_FILE_BYTES} bytes")
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InstanceError(str(path), None, "no such file") from None
    except OSError as exc:
        raise InstanceError(str(path), None, f"cannot be read ({exc.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise InstanceError(str(path), None, f"holds more than {MAX_FILE_BYTES} bytes, expected {expected}")
    if raw.startswith(_BOM):
        raise InstanceError(str(path), None, "starts with a UTF-8 byte order mark (BOM); save it as UTF-8 "
                            "without a BOM")
    return raw


def depth(value: Any) -> int:
    """How deeply tables and arrays nest in a parsed TOML or JSON value (a scalar: 0), counted
    without recursion so that any depth is measured."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def check_depth(path: str | Path, value: Any) -> None:
    """Refuse a parsed value that nests deeper than :data:`MAX_DEPTH`."""
    if depth(value) > MAX_DEPTH:
        raise InstanceError(str(path), None, f"nests tables or arrays more than {MAX_DEPTH} deep")


def parse_toml(path: str | Path, raw: bytes) -> dict[str, Any]:
    """Parse the bytes of a TOML file, turning every failure into an InstanceError naming it."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InstanceError(str(path), None, "is not UTF-8 text, expected a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InstanceError(str(path), None, f"is not valid TOML ({exc})") from None
    except RecursionError:
        raise InstanceError(str(path), None, f"nests tables or arrays more than {MAX_DEPTH} deep") from None
    check_depth(path, data)
    return data


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file, turning every failure into an InstanceError naming the file."""
    return parse_toml(path, read_bytes(path))


def read_table(data: Mapping[str, Any], where: str,
               registry_get: Callable[[str], Any] | None = None) -> tuple[Any, Any]:
    """Validate one instance table, a parsed file or a dict in the file's field names and units:
    (problem, instance), or one :class:`InstanceError` naming ``where``, every field that is wrong
    and what was expected."""
    get = registry_get or registry.get
    fields = Fields(data, where)
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
    return problem, instance


def load(path: str | Path, registry_get: Callable[[str], Any] | None = None) -> Loaded:
    """Read and validate one instance file (a path, or a shipped instance's name such as
    ``topoopt/0-exact-n6-d2``); every field error of the file is reported at once."""
    import hashlib

    path = resolve(str(path))
    raw = read_bytes(path)
    problem, instance = read_table(parse_toml(path, raw), str(path), registry_get)
    sha = hashlib.sha256(raw).hexdigest()
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
