"""The one contract every problem follows.

A problem module in :mod:`coopt.formulations` defines a module-level ``PROBLEM = Problem(...)``;
the registry finds it, and from then on the CLI (solve, check, export, validate, generate,
showcase), the benchmark and the contract test suite work for it with no further code.

Conventions:

* ``Instance`` is a frozen dataclass built by ``load(fields)`` from a validated TOML table and
  turned back into a TOML-ready dict by ``dump``. Units inside are SI; the loader converts.
* A ``Solution`` is a plain JSON-compatible ``dict``. It always has the key ``"objective"``: the
  value the method that produced it claims. The checker recomputes it from the instance alone.
* ``check(instance, solution)`` returns the violated constraints (empty list = feasible). It must
  not trust anything in the solution but the decisions, and must not raise on a malformed
  solution: a missing key is a violation.
* ``objective(instance, solution)`` recomputes the objective from the decisions.
* ``build(instance)`` returns the exact Pyomo model; ``extract(model, instance)`` reads a
  solution out of a solved model. A model whose objective was scaled to O(1) sets
  ``model.objective_unit`` to the factor that turns model units back into problem units.
* ``exact`` (optional) is the natural exact method when that is a DP or an enumeration; it then
  runs as method ``exact`` and the MILP as ``milp``. Without it, the MILP is ``exact``.
* ``heuristics`` maps a method name to ``fn(instance, seed=0) -> Solution``: polynomial (or
  bounded-time) methods, one function each, deterministic for a given seed. Where the solver
  module imports the problem module, pass ``HeuristicsOf("coopt.solvers.<name>")``.
* ``exact`` is named the same way when it lives on the solvers floor:
  ``MethodOf("coopt.solvers.<name>", "<function>")``.
* ``exact_applies`` (optional) says which instances ``exact`` is for; on the others ``exact``
  runs the MILP, as it does where there is no ``exact``.
* ``generate(seed, size)`` makes a seeded instance; ``size`` is one integer scale documented in
  ``size_doc``; ``sizes`` is the default family for the benchmark, smallest first.
* ``schema`` declares the instance fields once (:mod:`coopt.schema`); ``load`` reads through it,
  ``coopt schema`` prints it.
* ``objective_name`` / ``objective_unit`` say what the objective is ("iteration time", "s").
* ``bound`` (optional) is a dual bound at any size (method ``bound``); ``oracle`` (optional) is the
  brute force the exact methods are checked against.
* ``showcase`` (optional) names the small shipped file ``coopt showcase`` solves, where the first
  one in sort order would show the problem poorly.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

Solution = dict[str, Any]
Sense = Literal["min", "max"]

#: Relative tolerance used by checkers and by optimum comparisons (HiGHS' MIP feasibility
#: tolerance is 1e-6; we compare objectives to the same order).
TOL = 1e-6
#: Absolute slack below which two objectives are the same number (only matters near zero).
ABS_FLOOR = 1e-12


@dataclass(frozen=True)
class Violation:
    """One violated constraint: which family, and the numbers that show it."""

    constraint: str
    detail: str

    def __str__(self) -> str:
        return f"{self.constraint}: {self.detail}"


class NoSolution(Exception):
    """Raised by a method that ends without a solution, or declines an instance it is not built
    for (a heuristic whose schedule cannot meet the memory cap, an exact model too large to
    build). Reported as status ``no_solution`` with the reason; not an error."""


@dataclass(frozen=True)
class ExactOutcome:
    """What a non-MILP exact method (DP, enumeration) returns."""

    solution: Solution | None
    status: str  # optimal | infeasible | time_limit | feasible
    bound: float | None = None
    #: build / handoff / solve seconds where the method tells them apart (else all is "solve")
    times: Mapping[str, float] | None = None
    #: the engine behind the method, {"name", "version"} (else the report names the method)
    solver: Mapping[str, str] | None = None
    #: search nodes (branches) where the engine counts them
    nodes: int | None = None


@dataclass(frozen=True)
class SolveOptions:
    """Options shared by every method; exact routes honour all of them, heuristics the seed."""

    time_limit: float | None = None
    gap: float = 1e-6
    threads: int = 1
    seed: int = 0
    #: Resident memory (bytes) past which building a model or running a heuristic is stopped.
    memory_limit: float | None = None


Heuristic = Callable[..., Solution]


class HeuristicsOf(Mapping[str, Heuristic]):
    """The ``HEURISTICS`` dict of a solver module, imported on first use.

    A heuristics module imports its problem's data model; naming it here instead of importing
    it lets the problem module register without a cycle, whichever module is imported first.
    """

    def __init__(self, module: str):
        self.module = module

    @cached_property
    def _table(self) -> Mapping[str, Heuristic]:
        return importlib.import_module(self.module).HEURISTICS

    def __getitem__(self, name: str) -> Heuristic:
        return self._table[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


class MethodOf:
    """A function of a solver module, imported on its first call.

    The exact DP of a problem lives on the solvers floor (it may call a MILP); the registration
    names it here, as :class:`HeuristicsOf` names the heuristics, so that no formulation module
    imports ``coopt.solvers`` at import time.
    """

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    @cached_property
    def _function(self) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"MethodOf({self.module!r}, {self.name!r})"


@dataclass(frozen=True)
class Oracle:
    """Brute force for instances small enough to enumerate: the yardstick of the exact methods.

    ``generate(seed)`` makes a tiny instance; ``solve(instance)`` enumerates every decision the
    model can take and returns the optimum (None when nothing is feasible). The differential test
    and ``benchmarks/differential.py`` compare it with every exact method."""

    generate: Callable[[int], Any]
    solve: Callable[[Any], float | None]


@dataclass(frozen=True)
class Problem:
    name: str
    summary: str
    source: str
    sense: Sense
    load: Callable[[Any], Any]
    dump: Callable[[Any], dict[str, Any]]
    check: Callable[[Any, Solution], list[Violation]]
    objective: Callable[[Any, Solution], float]
    generate: Callable[[int, int], Any]
    build: Callable[[Any], Any] | None = None
    extract: Callable[[Any, Any], Solution] | None = None
    heuristics: Mapping[str, Heuristic] = field(default_factory=dict)
    exact: Callable[[Any, SolveOptions], ExactOutcome] | None = None
    #: The instances ``exact`` is built for, where it is not every instance: on the others the
    #: method ``exact`` runs the MILP (``milp`` runs it everywhere).
    exact_applies: Callable[[Any], bool] | None = None
    sizes: tuple[int, ...] = (1, 2, 3)
    size_doc: str = "scale"
    #: The small shipped file ``coopt showcase`` solves (default: the first ``0-*`` file).
    showcase: str | None = None
    #: The declared instance fields (:class:`coopt.schema.Schema`) the loader reads through.
    schema: Any = None
    #: What the objective measures and its unit, for tables and reports (a string, or a function
    #: of the instance where it depends on it, e.g. energy or latency).
    objective_name: str | Callable[[Any], str] = "objective"
    objective_unit: str | Callable[[Any], str] = ""
    #: A dual bound valid at any size without solving the MILP (for a min problem no feasible
    #: value is below it): ``fn(instance, options) -> float``. Runs as method ``bound``.
    bound: Callable[[Any, SolveOptions], float] | None = None
    #: Brute force on tiny instances, the oracle of the exact methods.
    oracle: Oracle | None = None
    #: Generator sizes at the papers' scale: the bench's ``large`` family runs the heuristics and
    #: the bound there (with the ``2-*`` files) and reports each heuristic's certified gap.
    large_sizes: tuple[int, ...] = ()
    #: The largest ``size`` the generator accepts (it refuses more with a UsageError), where it
    #: has a limit: the bench's ``scaling`` family runs its 10x round at no more than this.
    max_size: int | None = None

    @property
    def methods(self) -> list[str]:
        """Every method name, exact ones first."""
        exact = ["exact", "milp"] if self.exact is not None else ["exact"]
        if self.build is None:
            exact = ["exact"] if self.exact is not None else []
        return exact + sorted(self.heuristics)

    def runs_exact(self, instance: Any) -> bool:
        """Method ``exact`` on ``instance`` is the problem's own exact method (else the MILP)."""
        return self.exact is not None and (self.exact_applies is None or self.exact_applies(instance))

    @property
    def exact_methods(self) -> list[str]:
        return [m for m in self.methods if m not in self.heuristics]

    @property
    def all_methods(self) -> list[str]:
        """Every name ``--method`` accepts: the methods, then ``bound`` where there is one."""
        return self.methods + (["bound"] if self.bound is not None else [])

    def describe_objective(self, instance: Any) -> tuple[str, str]:
        """(name, unit) of the objective on this instance."""
        name = self.objective_name(instance) if callable(self.objective_name) else self.objective_name
        unit = self.objective_unit(instance) if callable(self.objective_unit) else self.objective_unit
        return name, unit

    def better(self, a: float, b: float) -> bool:
        """True when objective ``a`` is strictly better than ``b`` beyond relative tolerance."""
        slack = TOL * max(abs(a), abs(b)) + ABS_FLOOR
        return a < b - slack if self.sense == "min" else a > b + slack


def close(a: float, b: float, rel: float = TOL) -> bool:
    """Objective equality at the suite's relative tolerance (objectives may be tiny, e.g. seconds)."""
    return math.isclose(a, b, rel_tol=rel, abs_tol=ABS_FLOOR)


def relative_gap(value: float, reference: float) -> float:
    """|value - reference| / max(|reference|, 1e-12): the gap used in every report."""
    return abs(value - reference) / max(abs(reference), 1e-12)
