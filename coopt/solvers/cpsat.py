"""The CP-SAT route: solve a built ``cp_model.CpModel`` under coopt's options and Ctrl-C handling.

:func:`solve` sets the options every exact route honours (time limit, workers, seed, relative gap),
runs the search on a worker thread (:func:`coopt.limits.on_worker`) so that a Ctrl-C asks CP-SAT to
stop and keeps its incumbent, tells ``watch`` every incumbent and bound, and returns a
:class:`CpResult` that keeps why the search stopped (:class:`~coopt.problem.Termination`) apart from
what it found. Objective values are in model units times ``scale`` (the problem's units).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from coopt.limits import STOP, on_worker
from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination

#: Told each (incumbent, dual bound) while the search runs, problem units, None while unknown.
Watch = Callable[[float | None, float | None], None]


def version() -> str:
    from ortools import __version__

    return __version__


@dataclass
class CpResult:
    """One CP-SAT search: why it stopped, its incumbent and bound (problem units, None where there
    is none), the search time (s) and branch count; ``solver`` reads the incumbent's values."""

    termination: Termination
    objective: float | None
    bound: float | None
    solve: float
    branches: int
    solver: cp_model.CpSolver


def _termination(status: int, stopped: bool) -> Termination:
    if status == cp_model.OPTIMAL:
        return Termination.OPTIMAL
    if status == cp_model.INFEASIBLE:
        return Termination.INFEASIBLE
    if status == cp_model.MODEL_INVALID:
        return Termination.ERROR
    return Termination.INTERRUPTED if stopped else Termination.LIMIT


def solve(model: cp_model.CpModel, options: SolveOptions, *, scale: float = 1.0, watch: Watch | None = None,
          parameters: Mapping[str, Any] | None = None) -> CpResult:
    """Search ``model`` on ``options.threads`` workers within ``options.time_limit`` (at least 0.1 s),
    to ``options.gap``; ``parameters`` sets further CP-SAT parameters by name. A Ctrl-C
    (:data:`coopt.limits.STOP`) stops the search with its incumbent: termination ``INTERRUPTED``."""
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = max(1, int(options.threads))
    params.random_seed = int(options.seed)
    params.relative_gap_limit = float(options.gap)
    params.catch_sigint_signal = False  # coopt's handler decides what a Ctrl-C does
    if options.time_limit is not None:
        params.max_time_in_seconds = max(0.1, float(options.time_limit))
    for name, value in (parameters or {}).items():
        setattr(params, name, value)
    callback = None
    if watch is not None:
        class Heard(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                watch(self.ObjectiveValue() * scale, self.BestObjectiveBound() * scale)

            OnSolutionCallback = on_solution_callback  # the name older OR-tools call

        callback = Heard()
        solver.best_bound_callback = lambda bound: watch(None, bound * scale)
    started = time.perf_counter()
    status = on_worker(lambda: solver.Solve(model, callback), name="cp-sat", on_stop=solver.StopSearch)
    elapsed = time.perf_counter() - started
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return CpResult(
        termination=_termination(status, STOP.is_set()),
        objective=solver.ObjectiveValue() * scale if found else None,
        bound=solver.BestObjectiveBound() * scale if status != cp_model.INFEASIBLE else None,
        solve=elapsed,
        branches=int(solver.NumBranches()),
        solver=solver,
    )


def exact_outcome(solution: Solution | None, termination: Termination, bound: float | None, build_s: float,
                  solve_s: float, nodes: int | None = None) -> ExactOutcome:
    """An exact method's outcome from a CP-SAT route: the engine named, the build and solve times
    apart (the hand-off, the model's protocol buffer, happens inside ``Solve``: it is in ``solve_s``)."""
    return ExactOutcome(
        solution=solution,
        termination=termination,
        bound=bound,
        times={"build": build_s, "handoff": 0.0, "solve": solve_s},
        solver={"name": "cp-sat", "version": version()},
        nodes=nodes,
    )
