"""The one contract every problem follows.

A problem module in :mod:`coopt.problems` defines a module-level ``PROBLEM = Problem(...)``;
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
* ``build(instance, incumbent=None)`` returns the exact Pyomo model, warm-started from
  ``incumbent`` (a checked solution) where one is given; ``extract(model, instance)`` reads a
  solution out of a solved model. ``build`` never runs a heuristic itself: ``warm_start`` names
  the function whose solution the runner hands in (:mod:`coopt.run` runs and times it apart). A
  model whose objective was scaled to O(1) sets ``model.objective_unit`` to the factor that turns
  model units back into problem units.
* ``exact`` (optional) is the natural exact method when that is a DP, an enumeration or a
  constraint program: ``fn(instance, options) -> ExactOutcome`` (``incumbent=`` too where it takes
  a warm start). It then runs as method ``exact`` and the MILP as ``milp``. Without it, the MILP
  is ``exact``.
* ``heuristics`` maps a method name to ``fn(instance, seed=0) -> Solution``: polynomial (or
  bounded-time) methods, one function each, deterministic for a given seed. A heuristic built for
  some instances only is wrapped in :class:`Heuristic` with its ``applies(instance)`` predicate;
  elsewhere the runner declines it without running it (status ``no_solution``, "does not apply").
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
* ``objective_grid`` (optional) is ``fn(instance) -> float | None``: a unit ``g`` such that the
  optimal value of the instance is an integer multiple of ``g`` (detected from the instance's
  numbers, :func:`grid_of`, with the problem's proof that an optimum is such a sum), or None
  where there is none. The runner then rounds the
  exact routes' dual bound to that grid (:func:`round_to_grid`) and closes the proof when the
  rounded bound meets the incumbent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
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


class Termination(StrEnum):
    """Why a method stopped, kept apart from what it found (:class:`ExactOutcome`, and
    :class:`coopt.solvers.highs.MilpResult`)."""

    OPTIMAL = "optimal"  # the search ended with a proof: the solution (if any) is optimal
    INFEASIBLE = "infeasible"  # proved: no solution exists
    UNBOUNDED = "unbounded"
    LIMIT = "time_limit"  # a time, iteration or node limit stopped the search
    INTERRUPTED = "interrupted"  # the user (Ctrl-C) or a guard asked it to stop
    ERROR = "error"  # the engine failed


def report_status(termination: Termination, has_solution: bool) -> str:
    """The report's one word for (why it stopped, whether it holds a solution): ``optimal`` needs a
    proof and a solution, ``feasible`` is a solution without a proof; with no solution the word is
    the termination itself."""
    if termination is Termination.INTERRUPTED:
        return "interrupted"
    if has_solution:
        return "optimal" if termination is Termination.OPTIMAL else "feasible"
    if termination is Termination.OPTIMAL:
        return "error"  # converged without a solution: the engine contradicts itself
    return termination.value


@dataclass(frozen=True)
class ExactOutcome:
    """What a non-MILP exact method (DP, enumeration, constraint program) returns: why it stopped
    (``termination``) and what it found (``solution``, ``bound``)."""

    solution: Solution | None
    termination: Termination
    bound: float | None = None
    #: build / handoff / solve seconds where the method tells them apart (else all is "solve")
    times: Mapping[str, float] | None = None
    #: the engine behind the method, {"name", "version"} (else the report names the method)
    solver: Mapping[str, str] | None = None
    #: search nodes (branches) where the engine counts them
    nodes: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "termination", Termination(self.termination))

    @property
    def status(self) -> str:
        """The report's status word (:func:`report_status`)."""
        return report_status(self.termination, self.solution is not None)


@dataclass(frozen=True)
class BoundOutcome:
    """What a problem's ``bound`` may return instead of a bare number: the dual bound ``value`` and
    whether it is the optimum itself (``optimal``: an exact method that finished within the time
    limit, whose optimum is the tightest bound there is). The report keeps status ``bound`` and says
    so in its ``solver`` object under ``bound``."""

    value: float
    optimal: bool = False
    #: what produced the value when it is an optimum (for the report), e.g. "segment DP"
    source: str | None = None


@dataclass(frozen=True)
class SolveOptions:
    """Options shared by every method; exact routes honour all of them, heuristics the seed."""

    time_limit: float | None = None
    gap: float = 1e-6
    threads: int = 1
    seed: int = 0
    #: Resident memory (bytes) past which building a model or running a heuristic is stopped.
    memory_limit: float | None = None
    #: The MILP solver of the exact routes: "highs", or a name of coopt.solvers.pyomo_route.SOLVERS.
    solver: str = "highs"


def everywhere(instance: Any) -> bool:
    """The applicability of a heuristic built for every instance."""
    return True


@dataclass(frozen=True)
class Heuristic:
    """A heuristic with what it applies to: ``fn(instance, seed=0) -> Solution`` where
    ``applies(instance)``; elsewhere the runner declines it without running it. On an instance it
    applies to it returns a solution or raises :class:`NoSolution` when its search finds none (a
    memory cap no schedule of its family meets, say)."""

    fn: Callable[..., Solution]
    applies: Callable[[Any], bool] = everywhere
    #: one line saying what it applies to, for the report when it declines
    scope: str = ""

    def __call__(self, instance: Any, seed: int = 0, **kwargs: Any) -> Solution:
        return self.fn(instance, seed=seed, **kwargs)


def applies(method: Callable[..., Solution], instance: Any) -> bool:
    """Whether a registered heuristic is built for ``instance`` (a plain function is built for all)."""
    return method.applies(instance) if isinstance(method, Heuristic) else True


@dataclass(frozen=True)
class Oracle:
    """Brute force for instances small enough to enumerate: the yardstick of the exact methods.

    ``generate(seed)`` makes a tiny instance; ``solve(instance)`` enumerates every decision the
    model can take and returns the optimum (None when nothing is feasible). The differential test
    and ``benchmarks/regression/differential.py`` compare it with every exact method."""

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
    build: Callable[..., Any] | None = None
    extract: Callable[[Any, Any], Solution] | None = None
    heuristics: Mapping[str, Callable[..., Solution]] = field(default_factory=dict)
    exact: Callable[[Any, SolveOptions], ExactOutcome] | None = None
    #: The warm start of the exact routes: ``fn(instance) -> Solution | None`` (a heuristic, or the
    #: best of several). The runner runs it (timed as ``warm_start``), checks it and hands a
    #: feasible one to ``build(instance, incumbent=...)`` and to an ``exact`` that takes one.
    warm_start: Callable[[Any], Solution | None] | None = None
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
    #: The objective's grid on an instance (module docstring), or None: the optimal value is then
    #: an integer multiple of it, so the runner may round a dual bound to it.
    objective_grid: Callable[[Any], float | None] | None = None
    #: A drawing of a checked solution for a paper (``coopt plot``): ``fn(instance, solution,
    #: figure)`` draws on an empty matplotlib ``Figure``; None where the problem has no drawing.
    plot: Callable[[Any, Solution, Any], None] | None = None

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


def model_fields(model: Any) -> dict[str, Any]:
    """The data-model entries of a registration, read from a problem's model module under the
    contract's names: ``load``, ``dump``, ``check``, ``objective``, ``generate`` and ``SCHEMA``."""
    return {"load": model.load, "dump": model.dump, "check": model.check, "objective": model.objective,
            "generate": model.generate, "schema": model.SCHEMA}


def exact_fields(module: Any) -> dict[str, Any]:
    """The exact-model entries of a registration, from a module that defines ``build`` and ``extract``."""
    return {"build": module.build, "extract": module.extract}


def close(a: float, b: float, rel: float = TOL) -> bool:
    """Objective equality at the suite's relative tolerance (objectives may be tiny, e.g. seconds)."""
    return math.isclose(a, b, rel_tol=rel, abs_tol=ABS_FLOOR)


def relative_gap(value: float, reference: float) -> float:
    """|value - reference| / max(|reference|, 1e-12): the gap used in every report."""
    return abs(value - reference) / max(abs(reference), 1e-12)


#: Largest objective-to-grid ratio :func:`grid_of` accepts: beyond it one grid step is below the
#: solvers' relative tolerance, so rounding to it would prove nothing a solver does not.
MAX_GRID_STEPS = 10**7
#: Largest count of decimal units (``value * 10^d``) :func:`grid_of` reads as an integer.
MAX_GRID_COUNT = 10**9
#: Relative slack within which a number counts as an integer multiple of a decimal unit (floats
#: built from decimal data carry about 1e-16 relative noise per operation).
GRID_NOISE = 1e-12


def grid_of(values: Iterable[float], *, steps: float = MAX_GRID_STEPS) -> float | None:
    """The largest unit ``g = k / 10^d`` (integers k >= 1, -12 <= d <= 12) such that every value
    is an integer multiple of ``g`` (within :data:`GRID_NOISE`, relative), no value is more than
    :data:`MAX_GRID_COUNT` units of ``10^-d`` and none more than ``steps`` units ``g``; None
    when no such unit exists or every value is zero. A sum of the values with non-negative
    integer coefficients is then a multiple of ``g`` too."""
    magnitudes = [abs(float(v)) for v in values]
    if any(not math.isfinite(v) for v in magnitudes):
        return None
    nonzero = [v for v in magnitudes if v > 0]
    if not nonzero:
        return None
    largest = max(nonzero)
    for digits in range(-12, 13):
        scale = 10.0**digits
        scaled = [v * scale for v in nonzero]
        if max(scaled) > MAX_GRID_COUNT:
            return None  # past this the noise allowance nears a whole count; finer digits only grow it
        counts = [round(x) for x in scaled]
        if all(c >= 1 and abs(x - c) <= GRID_NOISE * x for x, c in zip(scaled, counts, strict=True)):
            unit = math.gcd(*counts) / scale
            return unit if largest / unit <= steps else None
    return None


def round_to_grid(bound: float, grid: float, sense: Sense) -> float:
    """The dual bound ``bound`` tightened to the grid ``g`` of the objective: for a minimisation
    the optimum is ``g k`` with k integer and ``g k >= bound``, so it is at least
    ``g ceil(bound / g)``; for a maximisation at most ``g floor(bound / g)``. The quotient is first
    moved by ``TOL`` (relative, at least 1e-9 of a step) towards the weaker side, so that a bound
    that a solver's tolerance put a hair past a grid point (65.0000001 for 65) does not jump a
    whole step; a bound never loses by the rounding (the result is at least as tight)."""
    if not (math.isfinite(bound) and grid > 0):
        return bound
    steps = bound / grid
    slack = max(1e-9, TOL * abs(steps))
    if sense == "min":
        return max(bound, grid * math.ceil(steps - slack))
    return min(bound, grid * math.floor(steps + slack))
