"""Run any method, exact or heuristic, on one instance and judge it with the problem's checker.

This is the one path every solution takes (CLI, bench, tests): :func:`run` dispatches to the MILP
route (:mod:`coopt.solvers.highs`), the problem's own exact method (a DP or enumeration) or a
heuristic, times it, and hands the result to :func:`judge`, which asks the problem's checker;
:class:`SolveReport` is what comes out, and :meth:`SolveReport.to_json` is what
``coopt solve --json`` writes (README, "What coopt solve --json writes").

Times are kept apart: ``warm_start`` is the heuristic whose solution an exact route starts from
(the problem's ``warm_start``, run here and never inside ``build``), ``build`` the Python model
construction, ``handoff`` the translation into HiGHS, ``solve`` HiGHS' own run time (or the
method's whole run for a DP or heuristic), ``total`` the wall time of the whole call including
extraction and checking.

Where the problem declares the objective's grid on the instance (``Problem.objective_grid``: the
optimal value is an integer multiple of a unit ``g``), the dual bound of the exact routes and of
``bound`` is rounded to it (:func:`coopt.problem.round_to_grid`); when the rounded bound meets a
checked incumbent (within the requested gap) the status becomes ``optimal``, and the report's
``solver`` object says so under the key ``integrality``. A ``bound`` that is an exact optimum (the
problem's bound returned :class:`coopt.problem.BoundOutcome` with ``optimal``) keeps status
``bound``, and ``solver`` says so under the key ``bound``.

A heuristic that declares it does not apply to an instance (:class:`coopt.problem.Heuristic`) is
not run: the report says ``no_solution`` and "does not apply".
"""

from __future__ import annotations

import inspect
import math
import time
from dataclasses import dataclass, field, fields, replace
from typing import Any

import coopt
from coopt.limits import StepLimit, guard
from coopt.output import non_finite
from coopt.problem import (
    BoundOutcome,
    ExactOutcome,
    NoSolution,
    Problem,
    Solution,
    SolveOptions,
    applies,
    relative_gap,
    round_to_grid,
)
from coopt.solvers.highs import TracePoint, Watch, solve_model

STATUSES = ("optimal", "feasible", "infeasible", "unbounded", "time_limit", "no_solution", "bound",
            "interrupted", "error")


#: The report's attributes that stay out of its JSON (the MILP route's extras).
_NOT_IN_JSON = frozenset({"trace", "model_size", "nodes"})


@dataclass
class SolveReport:
    """One (instance, method) result; :meth:`to_json` gives exactly the documented keys.

    ``trace``, ``model_size`` and ``nodes`` are filled for the MILP route only (see
    :mod:`coopt.solvers.highs`) and stay out of :meth:`to_json`.
    """

    problem: str
    instance: str
    instance_sha256: str
    method: str
    status: str
    sense: str
    objective_name: str
    objective_unit: str
    objective: float | None
    bound: float | None
    gap: float | None
    times: dict[str, float]
    solver: dict[str, str]
    seed: int
    threads: int
    solution: Solution | None
    check: dict[str, Any] = field(default_factory=dict)
    trace: list[TracePoint] = field(default_factory=list)
    model_size: dict[str, int] = field(default_factory=dict)
    nodes: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The documented keys: every field but the MILP route's extras (``trace``, ``model_size``,
        ``nodes``), in declaration order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_IN_JSON}


def judge(problem: Problem, instance: Any, solution: Solution | None) -> dict[str, Any]:
    """The checker's verdict on a solution: the ``check`` object of every report. A solution that
    holds a non-finite number (objective or decision) is infeasible whatever the checker says."""
    if solution is None:
        return {"feasible": False, "violations": ["no solution"], "objective_recomputed": None}
    if not isinstance(solution, dict):
        wrong = f"expected a solution object, got {type(solution).__name__}"
        return {"feasible": False, "violations": [wrong], "objective_recomputed": None}
    try:
        violations = [str(v) for v in problem.check(instance, solution)]
    except Exception as exc:  # a checker must not crash on a bad solution; say so loudly
        return {
            "feasible": False,
            "violations": [f"checker raised {type(exc).__name__}: {exc}"],
            "objective_recomputed": None,
        }
    try:
        recomputed = float(problem.objective(instance, solution))
    except Exception as exc:  # an infeasible solution may have no objective; a feasible one must
        if not violations:
            violations = [f"objective: cannot be recomputed ({type(exc).__name__}: {exc})"]
        recomputed = math.nan
    violations += [f"finite: {bad} is not a finite number" for bad in non_finite(solution)]
    if not math.isfinite(recomputed):
        if not violations:
            violations.append(f"finite: the recomputed objective is {recomputed!r}")
        recomputed = None
    return {"feasible": not violations, "violations": violations, "objective_recomputed": recomputed}


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


#: How far past the requested gap (relative) a proven optimum's recomputed value may sit from
#: its bound, for solver tolerances (HiGHS' feasibility tolerance is 1e-6 on O(1) rows).
OPTIMAL_SLACK = 1e-6


def _exact(problem: Problem, instance: Any, options: SolveOptions, watch: Watch | None,
           incumbent: Solution | None) -> ExactOutcome:
    """The problem's own exact method, with ``watch`` (live progress) and ``incumbent`` (the warm
    start) where it takes them."""
    method = problem.exact
    takes = inspect.signature(method).parameters
    extra: dict[str, Any] = {}
    if watch is not None and "watch" in takes:
        extra["watch"] = watch
    if "incumbent" in takes:
        extra["incumbent"] = incumbent
    return method(instance, options, **extra)


def warm_start(problem: Problem, instance: Any, options: SolveOptions) -> Solution | None:
    """The problem's warm start on ``instance`` if it declares one and the checker accepts it."""
    if problem.warm_start is None:
        return None
    with guard("the warm start", memory_bytes=options.memory_limit):
        try:
            solution = problem.warm_start(instance)
        except NoSolution:
            return None
    return solution if solution is not None and judge(problem, instance, solution)["feasible"] else None


def _timed_warm_start(problem: Problem, instance: Any, options: SolveOptions,
                      times: dict[str, float]) -> Solution | None:
    """:func:`warm_start`, its seconds recorded as ``times["warm_start"]``."""
    t0 = time.perf_counter()
    incumbent = warm_start(problem, instance, options)
    times["warm_start"] = time.perf_counter() - t0
    return incumbent


@dataclass
class _Found:
    """What a route gives back before it is judged."""

    status: str
    solution: Solution | None = None
    objective: float | None = None
    bound: float | None = None
    solver: dict[str, str] | None = None
    trace: list[TracePoint] = field(default_factory=list)
    model_size: dict[str, int] = field(default_factory=dict)
    nodes: int | None = None


def _milp_route(problem: Problem, instance: Any, options: SolveOptions, watch: Watch | None,
                incumbent: Solution | None, times: dict[str, float]) -> _Found:
    t0 = time.perf_counter()
    with guard("building the model", seconds=options.time_limit, memory_bytes=options.memory_limit):
        model = (problem.build(instance) if problem.warm_start is None
                 else problem.build(instance, incumbent=incumbent))
    times["build"] = time.perf_counter() - t0
    result = solve_model(model, _left(options, t0), watch)  # HiGHS gets what the build left
    times["handoff"], times["solve"] = result.handoff, result.solve
    found = _Found(result.status, objective=result.objective, bound=result.bound,
                   solver={"name": result.solver_name, "version": result.solver_version},
                   trace=result.trace, model_size=result.size, nodes=result.nodes)
    if result.objective is not None:
        found.solution = problem.extract(model, instance)
        found.solution["objective"] = result.objective
    return found


def _exact_route(problem: Problem, instance: Any, options: SolveOptions, watch: Watch | None,
                 incumbent: Solution | None, times: dict[str, float]) -> _Found:
    t0 = time.perf_counter()
    with guard("the exact method", memory_bytes=options.memory_limit):
        outcome = _exact(problem, instance, options, watch, incumbent)
    times["solve"] = time.perf_counter() - t0
    if outcome.times is not None:
        times.update({k: float(outcome.times.get(k, 0.0)) for k in ("build", "handoff", "solve")})
    objective = None if outcome.solution is None else float(outcome.solution["objective"])
    bound = objective if outcome.bound is None and outcome.status == "optimal" else outcome.bound
    return _Found(outcome.status, outcome.solution, objective, bound,
                  None if outcome.solver is None else dict(outcome.solver), nodes=outcome.nodes)


def _bound_route(problem: Problem, instance: Any, options: SolveOptions, times: dict[str, float]) -> _Found:
    """The dual bound, handed the warm start where it takes one (a column generation's first columns).
    A bound that no solution can meet (``inf`` for a minimum, ``-inf`` for a maximum: the relaxation
    is infeasible) proves the instance infeasible: status ``infeasible``, not an error."""
    extra: dict[str, Any] = {}
    if problem.warm_start is not None and "incumbent" in inspect.signature(problem.bound).parameters:
        extra["incumbent"] = _timed_warm_start(problem, instance, options, times)
    t0 = time.perf_counter()
    raw = problem.bound(instance, options, **extra)
    times["solve"] = time.perf_counter() - t0
    outcome = raw if isinstance(raw, BoundOutcome) else BoundOutcome(float(raw))
    bound = float(outcome.value)
    if bound == (math.inf if problem.sense == "min" else -math.inf):
        return _Found("infeasible")  # the relaxation admits nothing: neither does the instance
    if not math.isfinite(bound):
        raise ValueError(f"the bound is {bound!r}, not a finite number")
    solver = None
    if outcome.optimal:
        what = f" ({outcome.source})" if outcome.source else ""
        solver = {"name": f"coopt.{problem.name}.bound", "version": coopt.__version__,
                  "bound": f"the optimum{what}: an exact method finished"}
    return _Found("bound", bound=bound, solver=solver)


def _heuristic_route(problem: Problem, instance: Any, method: str, options: SolveOptions,
                     times: dict[str, float]) -> _Found:
    heuristic = problem.heuristics[method]
    if not applies(heuristic, instance):
        scope = getattr(heuristic, "scope", "")
        raise NoSolution(f"{method} does not apply to this instance" + (f" ({scope})" if scope else ""))
    t0 = time.perf_counter()
    with guard(f"heuristic {method}", memory_bytes=options.memory_limit):
        solution = heuristic(instance, seed=options.seed)
    times["solve"] = time.perf_counter() - t0
    return _Found("feasible", solution, float(solution["objective"]))


#: The least time limit a step is handed when what came before used up the run's (seconds): the
#: step then stops at once and says ``time_limit``, with whatever it has.
LEAST_LEFT = 0.01


def _left(options: SolveOptions, since: float) -> SolveOptions:
    """``options`` with the time limit less the seconds spent since ``since``."""
    if options.time_limit is None:
        return options
    spent = time.perf_counter() - since
    return replace(options, time_limit=max(options.time_limit - spent, LEAST_LEFT))


def _route(problem: Problem, instance: Any, method: str, options: SolveOptions, watch: Watch | None,
           times: dict[str, float]) -> _Found:
    """Dispatch ``method``: the MILP, the problem's exact method, the dual bound or a heuristic; the
    exact routes start from the warm start where the problem declares one."""
    if method == "bound":
        return _bound_route(problem, instance, options, times)
    if method not in ("milp", "exact"):
        return _heuristic_route(problem, instance, method, options, times)
    via_milp = method == "milp" or not problem.runs_exact(instance)
    takes = via_milp or "incumbent" in inspect.signature(problem.exact).parameters
    incumbent = None
    if problem.warm_start is not None and takes:
        t0 = time.perf_counter()
        incumbent = _timed_warm_start(problem, instance, options, times)
        options = _left(options, t0)  # the time limit bounds the whole run, the warm start included
    if via_milp:
        return _milp_route(problem, instance, options, watch, incumbent, times)
    return _exact_route(problem, instance, options, watch, incumbent, times)


def _verdict(problem: Problem, instance: Any, method: str, found: _Found,
             error: str | None) -> dict[str, Any]:
    """The checker's verdict, the error first; a feasible solution's objective becomes the checker's."""
    if method == "bound" and error is None:
        check = {"feasible": None, "violations": [], "objective_recomputed": None}
    else:
        check = judge(problem, instance, found.solution)
    if error is not None:
        check["violations"] = [error, *check["violations"]]
    if check.get("feasible") and check.get("objective_recomputed") is not None:
        # the report states what the solution achieves, as the checker recomputes it; the method's
        # own claim stays in solution["objective"] (a MILP's value can sit a solver tolerance off)
        found.objective = check["objective_recomputed"]
    return check


def _integrality(problem: Problem, instance: Any, method: str, found: _Found, check: dict[str, Any],
                 options: SolveOptions) -> str | None:
    """Round the dual bound of an exact route (or of ``bound``) to the objective's grid and close
    the proof where the rounded bound meets the checked incumbent; returns what it did, for the
    report, or None when the grid changed nothing. The optimum lies on the grid, so the rounded
    bound stays valid."""
    if problem.objective_grid is None or method not in ("exact", "milp", "bound"):
        return None
    bound = finite_or_none(found.bound)
    if bound is None:
        return None
    grid = problem.objective_grid(instance)
    if grid is None:
        return None
    rounded = round_to_grid(bound, grid, problem.sense)
    if rounded == bound:
        return None
    found.bound = rounded
    note = f"bound {bound:.12g} rounded to {rounded:.12g} on the objective's grid of {grid:.12g}"
    closes = (found.status in ("feasible", "time_limit", "interrupted") and check.get("feasible")
              and found.objective is not None
              and relative_gap(found.objective, rounded) <= options.gap + OPTIMAL_SLACK)
    if closes:
        found.status = "optimal"
        note += ", which meets the incumbent: optimal"
    return note


def run(
    problem: Problem,
    instance: Any,
    method: str,
    options: SolveOptions | None = None,
    *,
    path: str = "",
    sha256: str = "",
    watch: Watch | None = None,
) -> SolveReport:
    """Run one method on one instance and judge the result with the problem's checker.
    ``watch(primal, dual)`` hears the incumbent and bound while HiGHS runs (live progress).
    Building a model is stopped past the time limit (status ``time_limit``) or the memory limit
    (:class:`coopt.limits.StepLimit` propagates: the instance cannot be run here)."""
    options = options or SolveOptions()
    if method not in problem.all_methods:
        raise KeyError(f"{problem.name} has no method {method!r}; it has {', '.join(problem.all_methods)}")
    start = time.perf_counter()
    times = {"warm_start": 0.0, "build": 0.0, "handoff": 0.0, "solve": 0.0, "total": 0.0}
    error: str | None = None
    try:
        found = _route(problem, instance, method, options, watch, times)
    except StepLimit as exc:
        if exc.kind != "time":
            raise  # memory: the instance cannot be run here; the command says so and exits 2
        found, error = _Found("time_limit"), str(exc)
    except NoSolution as exc:  # the method declined or found nothing: say why, not an error
        found, error = _Found("no_solution"), f"no solution: {exc}"
    except Exception as exc:  # report, never hide: the row says error and why
        found, error = _Found("error"), f"{type(exc).__name__}: {exc}"
    times["total"] = time.perf_counter() - start
    check = _verdict(problem, instance, method, found, error)
    integrality = _integrality(problem, instance, method, found, check, options) if error is None else None
    objective, bound = finite_or_none(found.objective), finite_or_none(found.bound)
    solution = found.solution
    if solution is not None and non_finite(solution):
        solution = None  # strict JSON cannot hold it; the check above says what was wrong
    gap = None if objective is None or bound is None else finite_or_none(relative_gap(objective, bound))
    status = found.status
    if status == "optimal" and gap is not None and gap > options.gap + OPTIMAL_SLACK:
        # "optimal" is a claim about the solution handed back: if the checker's value of it is
        # farther from the bound than the gap allows, it is an incumbent, not a proven optimum
        status = "feasible"
    name, unit = problem.describe_objective(instance)
    solver = found.solver or {"name": f"coopt.{problem.name}.{method}", "version": coopt.__version__}
    if integrality is not None:
        solver = {**solver, "integrality": integrality}
    return SolveReport(
        problem=problem.name,
        instance=path,
        instance_sha256=sha256,
        method=method,
        status=status,
        sense=problem.sense,
        objective_name=name,
        objective_unit=unit,
        objective=objective,
        bound=bound,
        gap=gap,
        times=times,
        solver=solver,
        seed=options.seed,
        threads=options.threads,
        solution=solution,
        check=check,
        trace=found.trace,
        model_size=found.model_size,
        nodes=found.nodes,
    )
