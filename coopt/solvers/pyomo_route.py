"""The MILP solvers other than HiGHS, driven through Pyomo's ``pyomo.contrib.solver`` interfaces, and,
for the solvers those lack (CPLEX, Xpress, CBC in Pyomo 6.10), through Pyomo's classic ones.

:data:`SOLVERS` names each solver coopt can hand a model to, the Pyomo interface that drives it and
the Python package (or, for CBC, the executable) that must be installed for it. :func:`check` tells,
before any work, whether a named solver can run here (else one :class:`~coopt.errors.UsageError`
line naming the package to install); :func:`solve` hands a built model to it with what the interface
supports: time limit, relative gap (and an absolute gap of 1e-9, as on the HiGHS route), threads,
seed (through the solver's own option) and warm start (the values a model's builder set on its
discrete variables). It returns Pyomo's results object and the hand-off and solve seconds; the
result in coopt's terms (termination, incumbent, bound) is made by :mod:`coopt.solvers.highs`, which
keeps HiGHS' own route (incumbent trace, Ctrl-C, warm-start repair) and sends every other name here.
No incumbent trace is recorded on these routes: the trace is the final answer alone.

A classic interface (:class:`ClassicRoute`: ``cplex_persistent``, ``xpress_persistent``, the ``cbc``
executable) reports in Pyomo's older results format; :func:`solve` turns it into the
``contrib.solver`` results the caller reads (termination, incumbent with the values loaded into the
model, dual bound: the lower bound of a minimisation, the upper bound of a maximisation, as the
solver reports it, or, where the solver says optimal, at least the incumbent less the gap asked for,
which that claim proves), so every route is read by the same code and judged by the same checker.
The options (time limit, gaps, threads, seed) go under each solver's own parameter names. CBC runs
as a separate program: its hand-off (writing the model file) is counted in the solve time.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyomo.environ as pyo

from coopt.errors import UsageError
from coopt.problem import SolveOptions


class _QuietLicenceCount(logging.Filter):
    """Pyomo 6.10's Gurobi interfaces miscount their licence clients when an interface object is
    dropped and warn "release_license() with -N remaining environment clients" on every later
    solve; the count is Pyomo's bookkeeping only and changes no result."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "remaining environment clients" not in record.getMessage()


logging.getLogger("pyomo.contrib.solver.solvers.gurobi.gurobi_direct_base").addFilter(_QuietLicenceCount())


@dataclass(frozen=True)
class Route:
    """One solver: the ``pyomo.contrib.solver`` interface that drives it, the Python package it
    needs (the module to import, and the name to install it by), the solver option that takes
    the random seed, and whether its interface takes a warm start that leaves some discrete
    variables without a value (Pyomo 6.10's SCIP interface fails on one)."""

    interface: str
    module: str
    package: str
    seed_option: str
    partial_start: bool = True
    #: the solver's own version where the interface reports its Python package's instead
    solver_version: Callable[[], str] | None = None


@dataclass(frozen=True)
class ClassicRoute:
    """One solver through a classic Pyomo interface (``pyo.SolverFactory(factory)``): the Python
    module it needs (or the executable, for a solver run as a program), how to install it, its own
    names for coopt's options (``time_limit``, ``gap``, ``abs_gap``, ``threads``, ``seed``), whether
    the interface is persistent (the model is handed over once, timed apart), and whether it takes
    a partial warm start."""

    factory: str
    package: str
    options: dict[str, str] = field(default_factory=dict)
    module: str | None = None
    executable: str | None = None
    persistent: bool = True
    partial_start: bool = True
    #: solver parameters set on every solve (their reasons in :data:`SOLVERS`)
    fixed: dict[str, Any] = field(default_factory=dict)


def _scip_version() -> str:
    """SCIP's own version (Pyomo 6.10's SCIP interface reports PySCIPOpt's: 6.3.0 for SCIP 10.0.2)."""
    import pyscipopt

    model = pyscipopt.Model()
    return f"{model.getMajorVersion()}.{model.getMinorVersion()}.{model.getTechVersion()}"


#: The default solver, driven by :func:`coopt.solvers.highs.solve_model` itself.
DEFAULT = "highs"

#: Solver name (``--solver NAME``) -> its route; HiGHS is :data:`DEFAULT` and not listed here.
SOLVERS: dict[str, Route | ClassicRoute] = {
    "gurobi": Route("gurobi_persistent", "gurobipy", "gurobipy", "Seed"),
    "scip": Route("scip_persistent", "pyscipopt", "pyscipopt", "randomization/randomseedshift",
                  partial_start=False, solver_version=_scip_version),
    "cplex": ClassicRoute("cplex_persistent", "cplex", module="cplex", options={
        "time_limit": "timelimit", "gap": "mip_tolerances_mipgap", "abs_gap": "mip_tolerances_absmipgap",
        "threads": "threads", "seed": "randomseed"}),
    # Xpress offsets its cutoff by 1e-5 by default (MIPADDCUTOFF), so it stops 1e-5 short of the
    # optimum in absolute terms, which on an O(1) objective is far above the gap asked for
    "xpress": ClassicRoute("xpress_persistent", "xpress", module="xpress", options={
        "time_limit": "timelimit", "gap": "miprelstop", "abs_gap": "mipabsstop", "threads": "threads",
        "seed": "randomseed"}, fixed={"mipaddcutoff": 0.0}),
    "cbc": ClassicRoute("cbc", "the cbc executable (coinor-cbc)", executable="cbc", persistent=False,
                        partial_start=False, options={
        "time_limit": "sec", "gap": "ratioGap", "abs_gap": "allowableGap", "threads": "threads",
        "seed": "randomCbcSeed"}),
}


def names() -> list[str]:
    """Every solver name :func:`check` accepts, the default first."""
    return [DEFAULT, *sorted(SOLVERS)]


def _interface(name: str) -> Any:
    route = SOLVERS[name]
    if isinstance(route, ClassicRoute):
        return pyo.SolverFactory(route.factory)
    from pyomo.contrib.solver.common.factory import SolverFactory

    return SolverFactory(route.interface)


def missing(name: str) -> str | None:
    """Why solver ``name`` (a key of :data:`SOLVERS`) cannot start here, in one line naming the
    package or executable to install, or None when it is installed."""
    route = SOLVERS[name]
    if isinstance(route, ClassicRoute) and route.executable is not None:
        if shutil.which(route.executable) is None:
            return (f"--solver {name}: the {route.executable!r} executable is not on PATH "
                    f"(install {route.package})")
        return None
    module = route.module
    if module is not None and importlib.util.find_spec(module) is None:
        return (f"--solver {name}: the Python package {route.package!r} is not installed "
                f"(pip install {route.package})")
    return None


def check(name: str) -> None:
    """Return if solver ``name`` can run here; else raise one UsageError line saying why: an
    unknown name (with the known ones), a package that is not installed (with its name) or a
    solver that reports itself unavailable (a missing or expired licence, say)."""
    if name == DEFAULT:
        return
    route = SOLVERS.get(name)
    if route is None:
        raise UsageError(f"--solver: unknown solver {name!r}; known: {', '.join(names())}")
    why = missing(name)
    if why:
        raise UsageError(why)
    if isinstance(route, ClassicRoute):
        if not _interface(name).available(exception_flag=False):
            raise UsageError(f"--solver {name}: {route.package} is installed but Pyomo cannot run it here")
        return
    available = _interface(name).available()
    if not available:
        raise UsageError(f"--solver {name}: {route.package} is installed but the solver cannot run "
                         f"here ({available.name})")


def version(name: str) -> str:
    """The version of solver ``name`` as "major.minor.patch" (it must pass :func:`check`)."""
    route = SOLVERS[name]
    if isinstance(route, Route) and route.solver_version is not None:
        return route.solver_version()
    return ".".join(map(str, _interface(name).version()))


def _warm_starts(model: pyo.ConcreteModel, route: Route | ClassicRoute) -> bool:
    """Whether to start from the values the model's builder set on its discrete variables: where
    the model asks for it (``model.warm_start = True``) and, for an interface that cannot complete
    a partial start, only where every discrete variable has a value."""
    if not getattr(model, "warm_start", False):
        return False
    if route.partial_start:
        return True
    return all(var.value is not None
               for var in model.component_data_objects(pyo.Var, active=True, descend_into=True)
               if not var.is_continuous() and not var.fixed)


def prepare(name: str, model: pyo.ConcreteModel) -> tuple[Any, float]:
    """Solver ``name``'s interface with ``model`` handed over to it, and the hand-off's seconds."""
    check(name)
    solver = _interface(name)
    if isinstance(SOLVERS[name], ClassicRoute) and not SOLVERS[name].persistent:
        return solver, 0.0  # a program: the model is written out when it is solved
    t0 = time.perf_counter()
    solver.set_instance(model)
    return solver, time.perf_counter() - t0


def solve(name: str, solver: Any, model: pyo.ConcreteModel, options: SolveOptions) -> Any:
    """Solve ``model``, already handed to ``solver`` (:func:`prepare`), within ``options``;
    Pyomo's results object with the solution not loaded."""
    route = SOLVERS[name]
    if isinstance(route, ClassicRoute):
        return _classic_solve(name, route, solver, model, options)
    return solver.solve(
        model,
        time_limit=options.time_limit,
        rel_gap=options.gap,
        abs_gap=1e-9,
        threads=options.threads or None,
        solver_options={route.seed_option: options.seed},
        warmstart_discrete_vars=_warm_starts(model, route),
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
    )


def _classic_solve(name: str, route: ClassicRoute, solver: Any, model: pyo.ConcreteModel,
                   options: SolveOptions) -> Any:
    """Solve through a classic interface; the outcome as ``contrib.solver`` results (see the module
    docstring), the incumbent's values already in the model."""
    from pyomo.contrib.solver.common.results import Results
    from pyomo.opt import SolverStatus
    from pyomo.opt import TerminationCondition as Old

    given = {"gap": options.gap, "abs_gap": 1e-9, "seed": options.seed,
             "time_limit": options.time_limit, "threads": options.threads or None}
    solver.options.update(route.fixed)
    solver.options.update({route.options[k]: v for k, v in given.items()
                           if v is not None and k in route.options})
    warm = _warm_starts(model, route)
    started = time.perf_counter()
    if route.persistent:
        legacy = solver.solve(load_solutions=False, warmstart=warm)
    else:
        legacy = solver.solve(model, load_solutions=False, warmstart=warm)
    wall = time.perf_counter() - started
    results = Results()
    results.solver_name = name
    results.solver_version = tuple(solver.version() or ())
    results.timing_info.wall_time = wall
    results.termination_condition = _termination(legacy.solver.termination_condition)
    found = (len(legacy.solution) > 0 and legacy.solver.status != SolverStatus.error
             and legacy.solution(0).status in _SOLVED)
    objective = next(model.component_data_objects(pyo.Objective, active=True, descend_into=True))
    minimising = objective.sense == pyo.minimize
    if found:
        model.solutions.load_from(legacy)
        results.incumbent_objective = pyo.value(objective)
    results.solution_status = _solution_status(results.termination_condition, found)
    reported = legacy.problem.lower_bound if minimising else legacy.problem.upper_bound
    bound = float(reported) if reported is not None and math.isfinite(float(reported)) else None
    if found and legacy.solver.termination_condition == Old.optimal:
        # "optimal" means the incumbent is within the gaps asked for of the optimum: a bound that
        # far from it is proved, whatever older bound the solver printed (CBC can report its root
        # relaxation's beside an optimal status)
        slack = max(1e-9, options.gap * abs(results.incumbent_objective))
        proved = results.incumbent_objective - slack if minimising else results.incumbent_objective + slack
        if bound is None or (proved > bound if minimising else proved < bound):
            bound = proved
    results.objective_bound = bound
    results.solution_loader = _Loaded()
    return results


def _solved_statuses() -> frozenset:
    from pyomo.opt import SolutionStatus as Old

    return frozenset({Old.optimal, Old.globallyOptimal, Old.locallyOptimal, Old.feasible, Old.bestSoFar,
                      Old.stoppedByLimit})


#: The classic solution statuses that carry an incumbent (an infeasible model's "solution" does not).
_SOLVED = _solved_statuses()


class _Loaded:
    """The solution loader of a classic solve: the values are in the model already."""

    def load_vars(self) -> None:
        return None


def _termination(condition: Any) -> Any:
    """A classic Pyomo termination condition as a ``contrib.solver`` one."""
    from pyomo.contrib.solver.common.results import TerminationCondition as New
    from pyomo.opt import TerminationCondition as Old

    return {
        Old.optimal: New.convergenceCriteriaSatisfied,
        Old.globallyOptimal: New.convergenceCriteriaSatisfied,
        Old.maxTimeLimit: New.maxTimeLimit,
        Old.maxIterations: New.iterationLimit,
        Old.maxEvaluations: New.iterationLimit,
        Old.infeasible: New.provenInfeasible,
        Old.unbounded: New.unbounded,
        Old.infeasibleOrUnbounded: New.infeasibleOrUnbounded,
        Old.userInterrupt: New.interrupted,
    }.get(condition, New.unknown)


def _solution_status(termination: Any, found: bool) -> Any:
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition

    if not found:
        return SolutionStatus.noSolution
    optimal = termination == TerminationCondition.convergenceCriteriaSatisfied
    return SolutionStatus.optimal if optimal else SolutionStatus.feasible
