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
from collections.abc import Callable
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
