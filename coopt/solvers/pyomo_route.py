"""The MILP solvers other than HiGHS, driven through Pyomo's ``pyomo.contrib.solver`` interfaces.

:data:`SOLVERS` names each solver coopt can hand a model to, the Pyomo interface that drives it
and the Python package that must be installed for it. :func:`check` tells, before any work,
whether a named solver can run here (else one :class:`~coopt.errors.UsageError` line naming the
package to install); :func:`solve` hands a built model to it with what the interface supports:
time limit, relative gap (and an absolute gap of 1e-9, as on the HiGHS route), threads, seed
(through the solver's own option) and warm start (the values a model's builder set on its
discrete variables). It returns Pyomo's results object and the hand-off and solve seconds; the
result in coopt's terms (termination, incumbent, bound) is made by :mod:`coopt.solvers.highs`,
which keeps HiGHS' own route (incumbent trace, Ctrl-C, warm-start repair) and sends every other
name here. No incumbent trace is recorded on these routes: the trace is the final answer alone.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from dataclasses import dataclass
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


#: The default solver, driven by :func:`coopt.solvers.highs.solve_model` itself.
DEFAULT = "highs"

#: Solver name (``--solver NAME``) -> its route; HiGHS is :data:`DEFAULT` and not listed here.
SOLVERS: dict[str, Route] = {
    "gurobi": Route("gurobi_persistent", "gurobipy", "gurobipy", "Seed"),
    "scip": Route("scip_persistent", "pyscipopt", "pyscipopt", "randomization/randomseedshift",
                  partial_start=False),
}


def names() -> list[str]:
    """Every solver name :func:`check` accepts, the default first."""
    return [DEFAULT, *sorted(SOLVERS)]


def _interface(name: str) -> Any:
    from pyomo.contrib.solver.common.factory import SolverFactory

    return SolverFactory(SOLVERS[name].interface)


def check(name: str) -> None:
    """Return if solver ``name`` can run here; else raise one UsageError line saying why: an
    unknown name (with the known ones), a package that is not installed (with its name) or a
    solver that reports itself unavailable (a missing or expired licence, say)."""
    if name == DEFAULT:
        return
    route = SOLVERS.get(name)
    if route is None:
        raise UsageError(f"--solver: unknown solver {name!r}; known: {', '.join(names())}")
    if importlib.util.find_spec(route.module) is None:
        raise UsageError(f"--solver {name}: the Python package {route.package!r} is not installed "
                         f"(pip install {route.package})")
    available = _interface(name).available()
    if not available:
        raise UsageError(f"--solver {name}: {route.package} is installed but the solver cannot run "
                         f"here ({available.name})")


def version(name: str) -> str:
    """The version of solver ``name`` as "major.minor.patch" (it must pass :func:`check`)."""
    return ".".join(map(str, _interface(name).version()))


def _warm_starts(model: pyo.ConcreteModel, route: Route) -> bool:
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
    t0 = time.perf_counter()
    solver.set_instance(model)
    return solver, time.perf_counter() - t0


def solve(name: str, solver: Any, model: pyo.ConcreteModel, options: SolveOptions) -> Any:
    """Solve ``model``, already handed to ``solver`` (:func:`prepare`), within ``options``;
    Pyomo's results object with the solution not loaded."""
    route = SOLVERS[name]
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
