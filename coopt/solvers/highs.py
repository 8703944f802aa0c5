"""The Pyomo -> HiGHS route (through ``pyomo.contrib.solver``): solve a built model, its LP
relaxation, LP/MPS export and re-solve. Running a *method* and judging it lives in
:mod:`coopt.run`; this module only talks to HiGHS.

Times are kept apart, as in every honest MIP benchmark: the caller times ``build`` (the Python
model construction); :func:`solve_model` times ``handoff`` (the translation into HiGHS,
``set_instance``) and ``solve`` (HiGHS' own run time).

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
the node count are attributes of :class:`MilpResult` (and of :class:`coopt.run.SolveReport`), not
keys of the report's JSON, whose keys are fixed.
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

from coopt.problem import Problem, SolveOptions

#: Seconds between HiGHS' periodic MIP log lines, each a dual-bound sample of the trace (HiGHS'
#: default is 5 s; a log line costs HiGHS a formatted line and us one tuple).
TRACE_INTERVAL = 0.1

#: One point of the incumbent history: (seconds into HiGHS' run, primal, dual), problem units.
TracePoint = tuple[float, float | None, float | None]

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


def _warm_start(solver: Highs, highs: Any, model: pyo.ConcreteModel) -> int:
    """Give HiGHS the values a model's builder set on its variables (``model.warm_start = True``;
    a heuristic's solution, say) as a starting incumbent; HiGHS completes a partial one itself.
    Returns the number of values handed over (0 when the model asks for none)."""
    if not getattr(model, "warm_start", False) or highs is None:
        return 0
    columns = getattr(solver, "_pyomo_var_to_solver_var_map", {})
    index, value = [], []
    for var in model.component_data_objects(pyo.Var, active=True, descend_into=True):
        column = columns.get(id(var))
        if column is not None and var.value is not None:
            index.append(column)
            value.append(float(var.value))
    if index:
        import numpy as np

        highs.setSolution(len(index), np.array(index, dtype=np.int32), np.array(value, dtype=np.float64))
    return len(index)


def solve_model(model: pyo.ConcreteModel, options: SolveOptions) -> MilpResult:
    """Hand ``model`` to HiGHS, solve it and load the incumbent (if any) into the model; record the
    incumbent history (see the module docstring). A model with ``warm_start = True`` starts from
    the values its builder set on its variables (:func:`_warm_start`)."""
    solver = Highs()
    t0 = time.perf_counter()
    solver.set_instance(model)
    handoff = time.perf_counter() - t0
    highs = getattr(solver, "_solver_model", None)  # the highspy.Highs that set_instance filled
    _warm_start(solver, highs, model)
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


