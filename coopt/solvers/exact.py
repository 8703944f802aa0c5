"""The exact route (Pyomo -> HiGHS through ``pyomo.contrib.solver``) and the report every
method, exact or heuristic, produces.

Times are kept apart, as in every honest MIP benchmark: ``build`` is the Python model
construction, ``handoff`` the translation into HiGHS (``set_instance``), ``solve`` HiGHS' own run
time, ``total`` the wall time of the whole call including extraction and checking.

Incumbent history. While HiGHS runs, :func:`solve_model` records a *trace* of
``(t, primal, dual)`` points: ``t`` is HiGHS' own running time in seconds (its clock starts when
the solve starts, after the hand-off), ``primal`` the incumbent objective and ``dual`` the dual
bound, both in problem units (the model's ``objective_unit`` applied), None while unknown. The
points come from two highspy callbacks, ``cbMipImprovingSolution`` (every new incumbent) and
``cbMipLogging`` (every line of HiGHS' MIP log: each new incumbent, and the periodic progress
line, which we ask for every :data:`TRACE_INTERVAL` seconds through HiGHS'
``mip_min_logging_interval``, default 5 s); each event costs one tuple append, and nothing runs per
node (``cbMipInterrupt`` would: about two events per node). The trace ends with
the final answer (the report's objective and bound) if the last event does not already say it.
Where the callbacks are unavailable, or HiGHS never enters branch and bound (an LP, a model
presolve solves), the trace is that final point alone. HiGHS' MIP log callback fires only while
its ``output_flag`` is on (the default); with it off the trace has the incumbents only.

The trace, the model size (rows, columns, nonzeros as HiGHS holds them after the hand-off) and
the node count are attributes of :class:`MilpResult` and :class:`SolveReport`, not keys of
:meth:`SolveReport.to_json`, whose keys are fixed.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

import coopt
from coopt.problem import ExactOutcome, Problem, Solution, SolveOptions, relative_gap

#: Seconds between HiGHS' periodic MIP log lines, each a dual-bound sample of the trace (HiGHS'
#: default is 5 s; a log line costs HiGHS a formatted line and us one tuple).
TRACE_INTERVAL = 0.1

#: One point of the incumbent history: (seconds into HiGHS' run, primal, dual), problem units.
TracePoint = tuple[float, float | None, float | None]

STATUSES = ("optimal", "feasible", "infeasible", "unbounded", "time_limit", "no_solution", "error")


class NoSolution(Exception):
    """Raised by a method that ends without a solution, or declines an instance it is not built
    for (a heuristic whose schedule cannot meet the memory cap, an exact model too large to
    build). Reported as status ``no_solution`` with the reason; not an error."""


@dataclass
class MilpResult:
    status: str
    objective: float | None
    bound: float | None
    handoff: float
    solve: float
    solver_version: str
    nodes: int | None = None
    trace: list[TracePoint] = field(default_factory=list)
    size: dict[str, int] = field(default_factory=dict)  # rows, columns, nonzeros


@dataclass
class SolveReport:
    """One (instance, method) result; :meth:`to_json` gives exactly the documented keys.

    ``trace``, ``model_size`` and ``nodes`` are filled for the MILP route only (see the module
    docstring) and stay out of :meth:`to_json`.
    """

    problem: str
    instance: str
    instance_sha256: str
    method: str
    status: str
    sense: str
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
        return {
            "problem": self.problem,
            "instance": self.instance,
            "instance_sha256": self.instance_sha256,
            "method": self.method,
            "status": self.status,
            "sense": self.sense,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "times": self.times,
            "solver": self.solver,
            "seed": self.seed,
            "threads": self.threads,
            "solution": self.solution,
            "check": self.check,
        }


def highs_version() -> str:
    return ".".join(map(str, Highs().version()))


def objective_unit(model: pyo.ConcreteModel) -> float:
    """Factor from model objective units back to problem units (see coopt.problem)."""
    return float(getattr(model, "objective_unit", 1.0))


def report_status(termination: TerminationCondition, has_incumbent: bool) -> str:
    """Why HiGHS stopped (termination) and what it found (incumbent) -> one report status."""
    if termination == TerminationCondition.convergenceCriteriaSatisfied and has_incumbent:
        return "optimal"
    if termination in (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded):
        return "infeasible"
    if termination == TerminationCondition.unbounded:
        return "unbounded"
    if termination in (
        TerminationCondition.maxTimeLimit,
        TerminationCondition.iterationLimit,
        TerminationCondition.interrupted,
    ):
        return "feasible" if has_incumbent else "time_limit"
    return "feasible" if has_incumbent else "error"


def _model_size(highs: Any) -> dict[str, int]:
    """Rows, columns and nonzeros of the model HiGHS holds; empty where highspy cannot say."""
    try:
        return {
            "rows": int(highs.getNumRow()),
            "columns": int(highs.getNumCol()),
            "nonzeros": int(highs.getNumNz()),
        }
    except Exception:  # another highspy: the size is a nicety, never a reason to fail the solve
        return {}


def _record_events(highs: Any) -> list[tuple[float, float, float]]:
    """Subscribe to HiGHS' new-incumbent and MIP-log callbacks and return the list they fill while
    HiGHS runs: (running time, primal bound, dual bound) in model units, +-inf while unknown. Where
    a callback cannot be subscribed (another highspy) the list just gets fewer or no events."""
    events: list[tuple[float, float, float]] = []

    def record(event: Any) -> None:
        out = event.data_out
        events.append((out.running_time, out.mip_primal_bound, out.mip_dual_bound))

    for name in ("cbMipImprovingSolution", "cbMipLogging"):
        try:
            getattr(highs, name).subscribe(record)
        except Exception:  # callbacks unavailable: the trace falls back to the final answer
            continue
    # a log line (so a dual bound sample) every TRACE_INTERVAL s; an older HiGHS keeps its fixed 5 s
    with contextlib.suppress(Exception):
        highs.setOptionValue("mip_min_logging_interval", TRACE_INTERVAL)
    return events


def _in_problem_units(value: float | None, unit: float) -> float | None:
    return None if value is None or not math.isfinite(value) else value * unit


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def incumbent_trace(
    events: list[tuple[float, float, float]],
    unit: float,
    end: float,
    objective: float | None,
    bound: float | None,
) -> list[TracePoint]:
    """The trace from raw callback events (model units): problem units, unknown bounds as None,
    points that repeat the previous (primal, dual) dropped, and the final answer (``objective``,
    ``bound``, problem units, at ``end`` seconds) as the last point. A last event that already
    says the final answer (to 1e-9) is replaced by it exactly, so the trace ends on the report."""
    trace: list[TracePoint] = []
    for t, primal, dual in events:
        point = (float(t), _in_problem_units(primal, unit), _in_problem_units(dual, unit))
        if not trace or point[1:] != trace[-1][1:]:
            trace.append(point)
    if trace and _same(trace[-1][1], objective) and _same(trace[-1][2], bound):
        trace[-1] = (trace[-1][0], objective, bound)
    else:
        trace.append((max(end, trace[-1][0]) if trace else end, objective, bound))
    return trace


def solve_model(model: pyo.ConcreteModel, options: SolveOptions) -> MilpResult:
    """Hand ``model`` to HiGHS, solve it and load the incumbent (if any) into the model; record the
    incumbent history (see the module docstring)."""
    solver = Highs()
    t0 = time.perf_counter()
    solver.set_instance(model)
    handoff = time.perf_counter() - t0
    highs = getattr(solver, "_solver_model", None)  # the highspy.Highs that set_instance filled
    size = _model_size(highs)
    events = _record_events(highs)
    results = solver.solve(
        model,
        time_limit=options.time_limit,
        rel_gap=options.gap,
        threads=options.threads,
        solver_options={"random_seed": options.seed, "mip_abs_gap": 1e-9},
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
    )
    solve = float(getattr(results.timing_info, "highs_time", results.timing_info.wall_time))
    has_incumbent = results.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    status = report_status(results.termination_condition, has_incumbent)
    if has_incumbent:
        results.solution_loader.load_vars()
    unit = objective_unit(model)
    objective = _in_problem_units(results.incumbent_objective, unit) if has_incumbent else None
    bound = _in_problem_units(results.objective_bound, unit)
    nodes = getattr(results.extra_info, "mip_node_count", None)
    return MilpResult(
        status=status,
        objective=objective,
        bound=bound,
        handoff=handoff,
        solve=solve,
        solver_version=".".join(map(str, results.solver_version)),
        nodes=nodes,
        trace=incumbent_trace(events, unit, solve, objective, bound),
        size=size,
    )


def lp_relaxation(problem: Problem, instance: Any, options: SolveOptions | None = None) -> float | None:
    """Optimal value of the exact model with integrality dropped (problem units)."""
    model = problem.build(instance)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, options or SolveOptions())
    return result.objective if result.status == "optimal" else None


def export(model: pyo.ConcreteModel, out: str | Path) -> None:
    """Write the model as an LP or MPS file (by the file's extension) with readable names."""
    if Path(out).suffix not in (".lp", ".mps"):
        raise ValueError(f"export to .lp or .mps, not {out}")
    model.write(str(out), io_options={"symbolic_solver_labels": True})


def solve_file(path: str | Path) -> float | None:
    """Solve an exported LP/MPS file with HiGHS directly; the optimal objective or None."""
    import highspy
    from pyomo.common.tee import capture_output

    with capture_output(capture_fd=True):  # the constructor prints a banner
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("threads", 1)
    h.readModel(str(path))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return h.getInfo().objective_function_value


def judge(problem: Problem, instance: Any, solution: Solution | None) -> dict[str, Any]:
    """The checker's verdict on a solution: the ``check`` object of every report."""
    if solution is None:
        return {"feasible": False, "violations": ["no solution"], "objective_recomputed": None}
    try:
        violations = [str(v) for v in problem.check(instance, solution)]
        recomputed = float(problem.objective(instance, solution))
    except Exception as exc:  # a checker must not crash on a bad solution; say so loudly
        return {
            "feasible": False,
            "violations": [f"checker raised {type(exc).__name__}: {exc}"],
            "objective_recomputed": None,
        }
    return {"feasible": not violations, "violations": violations, "objective_recomputed": recomputed}


def run(
    problem: Problem,
    instance: Any,
    method: str,
    options: SolveOptions | None = None,
    *,
    path: str = "",
    sha256: str = "",
) -> SolveReport:
    """Run one method on one instance and judge the result with the problem's checker."""
    options = options or SolveOptions()
    if method not in problem.methods:
        raise KeyError(f"{problem.name} has no method {method!r}; it has {', '.join(problem.methods)}")
    start = time.perf_counter()
    times = {"build": 0.0, "handoff": 0.0, "solve": 0.0, "total": 0.0}
    solver = {"name": f"coopt.{problem.name}.{method}", "version": coopt.__version__}
    bound = None
    solution: Solution | None = None
    error: str | None = None
    trace: list[TracePoint] = []
    model_size: dict[str, int] = {}
    nodes: int | None = None
    try:
        if method == "milp" or (method == "exact" and problem.exact is None):
            t0 = time.perf_counter()
            model = problem.build(instance)
            times["build"] = time.perf_counter() - t0
            result = solve_model(model, options)
            times["handoff"], times["solve"] = result.handoff, result.solve
            solver = {"name": "highs", "version": result.solver_version}
            status, objective, bound = result.status, result.objective, result.bound
            trace, model_size, nodes = result.trace, result.size, result.nodes
            if result.objective is not None:
                solution = problem.extract(model, instance)
                solution["objective"] = result.objective
        elif method == "exact":
            t0 = time.perf_counter()
            outcome: ExactOutcome = problem.exact(instance, options)
            times["solve"] = time.perf_counter() - t0
            solution, status, bound = outcome.solution, outcome.status, outcome.bound
            objective = None if solution is None else float(solution["objective"])
            if bound is None and status == "optimal":
                bound = objective
        else:
            t0 = time.perf_counter()
            solution = problem.heuristics[method](instance, seed=options.seed)
            times["solve"] = time.perf_counter() - t0
            status, objective = "feasible", float(solution["objective"])
    except NoSolution as exc:  # the method declined or found nothing: say why, not an error
        status, objective, solution = "no_solution", None, None
        error = f"no solution: {exc}"
    except Exception as exc:  # report, never hide: the row says error and why
        status, objective, solution = "error", None, None
        error = f"{type(exc).__name__}: {exc}"
    times["total"] = time.perf_counter() - start
    gap = None
    if objective is not None and bound is not None:
        gap = relative_gap(objective, bound)
    check = judge(problem, instance, solution)
    if error is not None:
        check["violations"] = [error, *check["violations"]]
    return SolveReport(
        problem=problem.name,
        instance=path,
        instance_sha256=sha256,
        method=method,
        status=status,
        sense=problem.sense,
        objective=objective,
        bound=bound,
        gap=gap,
        times=times,
        solver=solver,
        seed=options.seed,
        threads=options.threads,
        solution=solution,
        check=check,
        trace=trace,
        model_size=model_size,
        nodes=nodes,
    )
