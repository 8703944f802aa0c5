"""The Python face of coopt: load or build an instance, solve it with any method, read the verdict.

Every name in :data:`__all__` is public and stable; everything else in the package may change. The
same names are reachable as ``coopt.<name>`` (imported on first use, so ``import coopt`` stays fast).

* :func:`load` reads an instance file, or a shipped instance by name (``"topoopt/0-exact-n6-d2"``);
  :func:`read` gives a file's table as a plain dict, in the file's own field names and units.
* :func:`from_dict` builds an instance from such a dict. It is validated exactly as a file is: the
  same declared schema, the same checks, the same one-line messages, raised as
  :class:`InstanceError` (whose ``errors`` lists every error, one per line of the message).
* :func:`solve` runs one method (``exact``, ``milp``, a heuristic's name, ``bound``) and returns a
  :class:`SolveReport`: ``status``, ``objective``, ``bound``, ``gap``, ``times``, the ``solution``,
  and ``check``, the verdict of the problem's own checker, which judges every solution.
  ``report.to_json()`` is what ``coopt solve --json`` writes.
* :func:`generate` makes a seeded instance; :func:`to_dict` and :func:`save` turn an instance back
  into the file's form; :func:`closed_form` evaluates a closed-form bound (``coopt bound``).

Values are in SI inside the instance objects and in the file's units in dicts and files, as
everywhere in coopt. Bad input raises a :class:`CooptError` (an :class:`InstanceError` for an
instance, a :class:`UsageError` for a name that does not exist); a method that crashes does not
raise, its report says ``status == "error"`` and why.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from coopt import registry
from coopt.errors import CooptError, InstanceError, UsageError
from coopt.instance import Loaded, check_depth, read_table, read_toml, schema_version, to_toml
from coopt.instance import load as load_file
from coopt.output import output_path, write_atomic
from coopt.problem import Problem, SolveOptions
from coopt.run import SolveReport, run
from coopt.shipped import resolve
from coopt.solvers import pyomo_route

__all__ = [
    "CooptError",
    "InstanceError",
    "Loaded",
    "SolveOptions",
    "SolveReport",
    "UsageError",
    "closed_form",
    "closed_form_names",
    "from_dict",
    "generate",
    "load",
    "methods",
    "problem_names",
    "read",
    "save",
    "solve",
    "to_dict",
]

#: The keys every instance table may carry besides its problem's own fields.
HEADER = ("problem", "schema_version", "name", "description", "source")


def problem_names() -> list[str]:
    """The registered problems' names (``coopt list``)."""
    return registry.names()


def _problem(name: str) -> Problem:
    try:
        return registry.get(name)
    except KeyError:
        raise UsageError(f"unknown problem {name!r}; known: {', '.join(registry.names())}") from None


def methods(problem: str) -> list[str]:
    """Every method :func:`solve` accepts for ``problem``: exact ones first, then the heuristics,
    then ``bound`` where the problem has a dual bound."""
    return _problem(problem).all_methods


def load(source: str | PathLike[str]) -> Loaded:
    """Read and validate an instance file, or a shipped instance named ``PROBLEM/FILE``.

    Returns a :class:`Loaded`: ``problem`` (the registered problem), ``instance`` (validated, SI),
    ``path`` and ``sha256``. Raises :class:`InstanceError` naming the file, the field and what was
    expected (every error of the file at once)."""
    return load_file(source)


def read(source: str | PathLike[str]) -> dict[str, Any]:
    """An instance file's table as written (field names and units of the file), not validated:
    edit it and hand it to :func:`from_dict`."""
    return read_toml(resolve(str(source)))


def _plain(value: Any) -> Any:
    """Tuples as lists and mappings as dicts, the containers a parsed file holds."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _validated(data: Mapping[str, Any], where: str) -> tuple[Problem, Any]:
    """The problem and the validated instance of one table, read exactly as a file's
    (:func:`coopt.instance.read_table`)."""
    return read_table(data, where)


def from_dict(data: Mapping[str, Any], problem: str | None = None, *, where: str = "<dict>") -> Loaded:
    """Build an instance from a dict in the file's own field names and units, validated as a file.

    ``problem`` names the problem when ``data`` has no ``"problem"`` key; ``schema_version`` may be
    left out (the problem's current version is meant). ``where`` stands for the file name in error
    messages. The result's ``sha256`` is that of the instance written as TOML (:func:`save`)."""
    if not isinstance(data, Mapping):
        raise InstanceError(where, None, f"expected a dict of the file's fields, got {type(data).__name__}")
    check_depth(where, data)  # as deep as a file may nest, no deeper
    table = _plain(data)
    if problem is not None:
        if table.get("problem", problem) != problem:
            raise InstanceError(where, "problem", f"expected {problem!r} (the problem argument), "
                                f"got {table['problem']!r}")
        table["problem"] = problem
    name = table.get("problem")
    if isinstance(name, str) and name in registry.names() and "schema_version" not in table:
        table["schema_version"] = schema_version(registry.get(name))
    found, instance = _validated(table, where)
    text = to_toml(found, instance)
    return Loaded(problem=found, instance=instance, path=where,
                  sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def to_dict(item: Loaded) -> dict[str, Any]:
    """The instance in the file's form (field names and units), header included: what
    :func:`from_dict` reads back to an equal instance."""
    import tomllib

    return tomllib.loads(to_toml(item.problem, item.instance))


def save(item: Loaded, path: str | PathLike[str], *, description: str = "") -> Path:
    """Write the instance as a TOML file that ``coopt solve`` and :func:`load` read back; the file
    is complete or untouched. Returns the path written."""
    target = output_path(path, "save")
    if target is None:
        raise UsageError("save writes a file, not standard output")
    write_atomic(target, to_toml(item.problem, item.instance, description=description))
    return Path(path)


def solve(item: Loaded | str | PathLike[str], method: str = "exact", *, options: SolveOptions | None = None,
          **settings: Any) -> SolveReport:
    """Run one method on an instance and judge the result with the problem's checker.

    ``item`` is a :class:`Loaded` (from :func:`load`, :func:`from_dict`, :func:`generate`) or a file
    or shipped name. ``method`` is one of :func:`methods`. Options are a :class:`SolveOptions` or its
    fields as keywords: ``time_limit`` (seconds, default none), ``gap`` (relative, 1e-6),
    ``threads`` (1), ``seed`` (0), ``memory_limit`` (bytes, default none), ``solver`` (the MILP solver
    of the exact routes: "highs", the default, or one of ``coopt solve --solver``'s names; an unknown
    one, or one whose package is not installed, raises :class:`UsageError` before any work)."""
    if not isinstance(item, Loaded):
        item = load(item)
    if options is not None and settings:
        raise UsageError("give solve() either options= or keyword settings, not both")
    try:
        chosen = options or SolveOptions(**settings)
    except TypeError:
        known = "time_limit, gap, threads, seed, memory_limit, solver"
        raise UsageError(f"solve() takes the settings {known}; got {', '.join(sorted(settings))}") from None
    _check(chosen)
    if method not in item.problem.all_methods:
        raise UsageError(f"problem {item.problem.name!r} has no method {method!r}; "
                         f"it has {', '.join(item.problem.all_methods)}")
    return run(item.problem, item.instance, method, chosen, path=item.path, sha256=item.sha256)


def _check(options: SolveOptions) -> None:
    """Refuse settings no solve can honour, as ``coopt solve`` refuses its options."""
    def bad(name: str, expected: str) -> UsageError:
        return UsageError(f"solve(): {name} must be {expected}, got {getattr(options, name)!r}")

    positive = (options.time_limit, options.memory_limit)
    for name, value in zip(("time_limit", "memory_limit"), positive, strict=True):
        if value is not None and not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise bad(name, "a finite number > 0 or None")
    if not (isinstance(options.gap, int | float) and 0 <= options.gap < 1):
        raise bad("gap", "in [0, 1)")
    for name in ("threads", "seed"):
        value = getattr(options, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad(name, "an integer >= 0")
    if not isinstance(options.solver, str):
        raise bad("solver", "a solver's name")
    pyomo_route.check(options.solver)


def generate(problem: str, seed: int = 0, size: int = 1) -> Loaded:
    """A seeded instance of ``problem`` at scale ``size`` (``coopt list PROBLEM`` says what the size
    means), read back through the problem's loader as a file would be."""
    found = _problem(problem)
    if size < 1 or seed < 0:
        raise UsageError(f"generate({problem!r}): expected seed >= 0 and size >= 1, got {seed}, {size}")
    try:
        instance = found.generate(seed, size)
    except (ValueError, OverflowError, MemoryError) as exc:
        raise UsageError(f"generate({problem!r}): size {size} cannot be generated ({exc})") from None
    return from_dict(to_dict(Loaded(found, instance, "", "")),
                     where=f"<generated {problem} seed {seed} size {size}>")


def closed_form_names() -> list[str]:
    """The names of the closed-form bounds and curves (``coopt bound list``)."""
    return list(registry.closed_forms())


def closed_form(name: str, **values: Any) -> Any:
    """Evaluate the closed form ``name`` at ``values`` (its symbols, in its units; the others take
    their defaults). A value may be an array: the result is then an array of the same shape. A
    missing value, an unknown symbol or a value outside its physical range raises
    :class:`UsageError`."""
    import numpy as np

    result = registry.closed_form(name).evaluate(values)
    array = np.asarray(result, dtype=float)
    return float(array) if array.ndim == 0 else array
