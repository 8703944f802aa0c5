"""The Pyomo -> HiGHS route (through ``pyomo.contrib.solver``): solve a built model, its LP
relaxation, LP/MPS export and re-solve. Running a *method* and judging it lives in
:mod:`coopt.run`; this module only talks to the MILP solver.

:func:`solve_model` is every MILP's way in. With ``SolveOptions.solver`` "highs" (the default) it
runs HiGHS as described below; with another name it hands the model to that solver through
:mod:`coopt.solvers.pyomo_route` and returns the same :class:`MilpResult` (``solver_name`` and
``solver_version`` say which ran), with what that interface supports: time limit, gap, threads,
seed and warm start, the trace being the final answer alone and the model size and node count
unknown.

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
import logging
import math
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

from coopt.limits import STOP, Abandoned, StandardStreams, interrupt_requested, on_worker
from coopt.problem import Problem, SolveOptions, Termination, report_status
from coopt.solvers import pyomo_route

#: Seconds between HiGHS' periodic MIP log lines, each a dual-bound sample of the trace (HiGHS'
#: default is 5 s; a log line costs HiGHS a formatted line and us one tuple).
TRACE_INTERVAL = 0.1

#: One point of the incumbent history: (seconds into HiGHS' run, primal, dual), problem units.
TracePoint = tuple[float, float | None, float | None]
#: Told each (incumbent, dual bound) while HiGHS runs, problem units, None while unknown.
Watch = Callable[[float | None, float | None], None]

@dataclass
class MilpResult:
    """What one HiGHS solve gave: why it stopped (``termination``) apart from what it found
    (``objective`` of the incumbent loaded into the model, None without one; ``bound``)."""

    termination: Termination
    objective: float | None
    bound: float | None
    handoff: float
    solve: float
    solver_version: str
    nodes: int | None = None
    trace: list[TracePoint] = field(default_factory=list)
    size: dict[str, int] = field(default_factory=dict)  # rows, columns, nonzeros
    #: the solver that ran (``SolveOptions.solver``: "highs", or a name of
    #: :data:`coopt.solvers.pyomo_route.SOLVERS`)
    solver_name: str = "highs"

    @property
    def status(self) -> str:
        """The report's status word (:func:`coopt.problem.report_status`)."""
        return report_status(self.termination, self.objective is not None)


def highs_version() -> str:
    return ".".join(map(str, Highs().version()))


def objective_unit(model: pyo.ConcreteModel) -> float:
    """Factor from model objective units back to problem units (see coopt.problem)."""
    return float(getattr(model, "objective_unit", 1.0))


def termination_of(condition: TerminationCondition, stopped: bool = False) -> Termination:
    """Pyomo's termination condition -> coopt's; ``stopped``: the user (Ctrl-C) or a guard asked
    the solve to stop, see :mod:`coopt.limits`."""
    if condition == TerminationCondition.convergenceCriteriaSatisfied:
        return Termination.OPTIMAL
    if stopped:
        return Termination.INTERRUPTED
    if condition in (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded):
        return Termination.INFEASIBLE
    if condition == TerminationCondition.unbounded:
        return Termination.UNBOUNDED
    if condition in (
        TerminationCondition.maxTimeLimit,
        TerminationCondition.iterationLimit,
        TerminationCondition.interrupted,
    ):
        return Termination.LIMIT
    return Termination.ERROR


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


class _QuietInterrupt(logging.Filter):
    """Pyomo warns that it does not know HiGHS' "interrupted" status; coopt does (``interrupted``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "kInterrupt" not in record.getMessage()


logging.getLogger("pyomo.contrib.solver.solvers.highs").addFilter(_QuietInterrupt())


def _subscribe_stop_and_watch(highs: Any, unit: float, watch: Watch | None) -> None:
    """HiGHS' interrupt callbacks end the solve once :data:`coopt.limits.STOP` is set (a Ctrl-C);
    ``watch(primal, dual)`` (problem units, None while unknown) hears every incumbent and log line."""
    if highs is None:
        return
    for name in ("cbMipInterrupt", "cbSimplexInterrupt", "cbIpmInterrupt"):
        with contextlib.suppress(Exception):
            getattr(highs, name).subscribe(interrupt_requested)
    if watch is None:
        return

    def tell(event: Any) -> None:
        out = event.data_out
        watch(_in_problem_units(out.mip_primal_bound, unit), _in_problem_units(out.mip_dual_bound, unit))

    for name in ("cbMipImprovingSolution", "cbMipLogging"):
        with contextlib.suppress(Exception):
            getattr(highs, name).subscribe(tell)


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
    minimize: bool | None = None,
) -> list[TracePoint]:
    """The trace from raw callback events (model units): problem units, unknown bounds as None,
    points that repeat the previous (primal, dual) dropped, and the final answer (``objective``,
    ``bound``, problem units, at ``end`` seconds) as the last point. A last event that already
    says the final answer (to 1e-9) is replaced by it exactly, so the trace ends on the report.

    With the sense known (``minimize``), a dual sample beyond a later one or the final bound
    becomes None: a solve's global dual bound only tightens, so such a sample is a sub-solver's.
    HiGHS reports through the same callbacks the sub-MIP in which it completes a warm start, whose
    dual bound is the start's own value (pipeline ``0-p3m3-offload-overtake``: the start 23, then
    unknown, then 22, the optimum)."""
    samples = [(float(t), _in_problem_units(primal, unit), _in_problem_units(dual, unit))
               for t, primal, dual in events]
    if minimize is not None:
        samples = _tightening(samples, bound, minimize)
    trace: list[TracePoint] = []
    for point in samples:
        if not trace or point[1:] != trace[-1][1:]:
            trace.append(point)
    if trace and _same(trace[-1][1], objective) and _same(trace[-1][2], bound):
        trace[-1] = (trace[-1][0], objective, bound)
    else:
        trace.append((max(end, trace[-1][0]) if trace else end, objective, bound))
    return trace


def _tightening(samples: list[TracePoint], bound: float | None, minimize: bool) -> list[TracePoint]:
    """``samples`` with every dual bound beyond a later known one (or the final ``bound``) set to
    None; "beyond" is above for a minimisation, below for a maximisation."""
    sign = 1.0 if minimize else -1.0
    tightest = math.inf if bound is None else sign * bound
    kept: list[TracePoint] = []
    for t, primal, dual in reversed(samples):
        if dual is not None:
            if sign * dual > tightest + 1e-9 * max(1.0, abs(tightest)):
                dual = None
            else:
                tightest = min(tightest, sign * dual)
        kept.append((t, primal, dual))
    return kept[::-1]


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


#: Seconds HiGHS gets to stop after a Ctrl-C before the solve is abandoned (it checks for
#: interrupts during branch and bound, not during presolve, where it has no incumbent to keep).
STOP_GRACE = 0.5


def _interruptible(call: Callable[[], Any]) -> Any:
    """Run a HiGHS call so that a Ctrl-C is heard at once (:func:`coopt.limits.on_worker`). After a
    Ctrl-C HiGHS has :data:`STOP_GRACE` seconds to return; HiGHS checks for interrupts between
    branch-and-bound nodes, and its root node can run for seconds without one, so past the grace
    the solve is abandoned (:class:`~coopt.limits.Abandoned`, standard output and error restored)
    and the caller keeps the incumbent the callbacks recorded."""
    standard = StandardStreams()
    try:
        return on_worker(call, name="highs", grace=STOP_GRACE, on_abandon=standard.restore)
    finally:
        standard.close()


def _record_incumbent(highs: Any) -> dict[str, Any]:
    """The latest incumbent HiGHS found (column values, model-unit objective) and the latest dual
    bound, kept in case the solve is abandoned before HiGHS can hand them back itself."""
    latest: dict[str, Any] = {"columns": None, "primal": None, "dual": None}

    def improving(event: Any) -> None:
        out = event.data_out
        latest["columns"] = np.array(out.mip_solution, dtype=float)
        latest["primal"] = out.mip_primal_bound
        latest["dual"] = out.mip_dual_bound

    def logging_line(event: Any) -> None:
        latest["dual"] = event.data_out.mip_dual_bound

    with contextlib.suppress(Exception):
        highs.cbMipImprovingSolution.subscribe(improving)
        highs.cbMipLogging.subscribe(logging_line)
    return latest


def solve_model(model: pyo.ConcreteModel, options: SolveOptions, watch: Watch | None = None) -> MilpResult:
    """Hand ``model`` to HiGHS, solve it and load the incumbent (if any) into the model; record the
    incumbent history (see the module docstring). A model with ``warm_start = True`` starts from
    the values its builder set on its variables (:func:`_warm_start`). ``watch(primal, dual)`` is
    told every incumbent and dual bound while HiGHS runs (problem units); a Ctrl-C ends the solve
    with its incumbent (status ``interrupted``, see :mod:`coopt.limits`).

    ``options.solver`` other than "highs" sends the model to that solver through Pyomo
    (:func:`_other_solver`), with what its interface supports."""
    if options.solver != pyomo_route.DEFAULT:
        return _other_solver(model, options)
    solver = Highs()
    t0 = time.perf_counter()
    solver.set_instance(model)
    handoff = time.perf_counter() - t0
    highs = getattr(solver, "_solver_model", None)  # the highspy.Highs that set_instance filled
    _warm_start(solver, highs, model)
    size = _model_size(highs)
    unit = objective_unit(model)
    events = _record_events(highs)
    latest = _record_incumbent(highs) if highs is not None else {}
    _subscribe_stop_and_watch(highs, unit, watch)
    started = time.perf_counter()
    try:
        results = _interruptible(lambda: solver.solve(
            model,
            time_limit=options.time_limit,
            rel_gap=options.gap,
            threads=options.threads,
            solver_options={"random_seed": options.seed, "mip_abs_gap": 1e-9},
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
        ))
    except Abandoned:
        return _abandoned(solver, model, latest, unit, handoff, time.perf_counter() - started, events, size)
    solve = float(getattr(results.timing_info, "highs_time", results.timing_info.wall_time))
    termination, objective, bound = _read(results, unit)
    if (objective is not None and getattr(model, "warm_start", False)
            and not _values_give(model, results.incumbent_objective)):
        # HiGHS 1.16 after a warm start can report one incumbent's objective and hand back
        # another's values (mixnet_plan oracle seed 666: 1.52 ms claimed, the values time 1.60):
        # solve again from scratch in what is left of the time limit (at least a second); both
        # solves' times count
        left = None if options.time_limit is None else max(options.time_limit - solve, 1.0)
        model.warm_start = False
        try:
            again = solve_model(model, replace(options, time_limit=left), watch)
        finally:
            model.warm_start = True
        return replace(again, handoff=handoff + again.handoff, solve=solve + again.solve)
    nodes = getattr(results.extra_info, "mip_node_count", None)
    return MilpResult(
        termination=termination,
        objective=objective,
        bound=bound,
        handoff=handoff,
        solve=solve,
        solver_version=".".join(map(str, results.solver_version)),
        nodes=nodes,
        trace=incumbent_trace(events, unit, solve, objective, bound, _minimizes(model)),
        size=size,
    )


def _other_solver(model: pyo.ConcreteModel, options: SolveOptions) -> MilpResult:
    """Solve ``model`` with ``options.solver`` through its Pyomo interface
    (:mod:`coopt.solvers.pyomo_route`): time limit, gap, threads, seed and warm start as the
    interface takes them; the trace is the final answer alone, the model size and node count
    unknown. A Ctrl-C leaves the solver :data:`STOP_GRACE` seconds (these routes have no interrupt
    callback), then abandons it: status ``interrupted``, no incumbent."""
    name = options.solver
    solver, handoff = pyomo_route.prepare(name, model)
    unit = objective_unit(model)
    started = time.perf_counter()
    try:
        results = _interruptible(lambda: pyomo_route.solve(name, solver, model, options))
    except Abandoned:
        solve = time.perf_counter() - started
        return MilpResult(termination=Termination.INTERRUPTED, objective=None, bound=None, handoff=handoff,
                          solve=solve, solver_version=pyomo_route.version(name),
                          trace=incumbent_trace([], unit, solve, None, None), solver_name=name)
    solve = float(results.timing_info.wall_time or time.perf_counter() - started)
    termination, objective, bound = _read(results, unit)
    return MilpResult(
        termination=termination,
        objective=objective,
        bound=bound,
        handoff=handoff,
        solve=solve,
        solver_version=pyomo_route.version(name),
        trace=incumbent_trace([], unit, solve, objective, bound),
        solver_name=name,
    )


def _read(results: Any, unit: float) -> tuple[Termination, float | None, float | None]:
    """Why a Pyomo ``contrib.solver`` solve stopped, and what it found: the incumbent (loaded into
    the model's variables; None without one) and the dual bound, both in problem units."""
    has_incumbent = results.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    if has_incumbent:
        results.solution_loader.load_vars()
    objective = _in_problem_units(results.incumbent_objective, unit) if has_incumbent else None
    return (termination_of(results.termination_condition, STOP.is_set()), objective,
            _in_problem_units(results.objective_bound, unit))


def _objective(model: pyo.ConcreteModel) -> Any:
    """The model's active objective, or None."""
    return next(model.component_data_objects(pyo.Objective, active=True, descend_into=True), None)


def _minimizes(model: pyo.ConcreteModel) -> bool | None:
    """Whether the model's active objective, in problem units, is minimised (None without one)."""
    objective = _objective(model)
    if objective is None:
        return None
    return (objective.sense == pyo.minimize) == (objective_unit(model) > 0)


def _values_give(model: pyo.ConcreteModel, claimed: float | None) -> bool:
    """Whether the variable values loaded into ``model`` give the objective HiGHS reported (model
    units, relative 1e-6)."""
    objective = _objective(model)
    if objective is None or claimed is None:
        return True
    value = pyo.value(objective, exception=False)
    return value is not None and abs(value - claimed) <= 1e-6 * max(1.0, abs(claimed))


def _abandoned(solver: Highs, model: pyo.ConcreteModel, latest: dict[str, Any], unit: float,
               handoff: float, solve: float, events: list, size: dict[str, int]) -> MilpResult:
    """The result of a solve left running after a Ctrl-C: its last recorded incumbent, put on the
    model's variables, and its last dual bound; status ``interrupted``."""
    columns = latest.get("columns")
    objective = None
    if columns is not None:
        by_id = getattr(solver, "_pyomo_var_to_solver_var_map", {})
        for var in model.component_data_objects(pyo.Var, descend_into=True):
            column = by_id.get(id(var))
            if column is not None and column < len(columns):
                var.set_value(float(columns[column]), skip_validation=True)
        objective = _in_problem_units(latest.get("primal"), unit)
    bound = _in_problem_units(latest.get("dual"), unit)
    return MilpResult(
        termination=Termination.INTERRUPTED,
        objective=objective,
        bound=bound,
        handoff=handoff,
        solve=solve,
        solver_version=highs_version(),
        trace=incumbent_trace(events, unit, solve, objective, bound, _minimizes(model)),
        size=size,
    )


def max_weight_lp(weight: np.ndarray, low: np.ndarray, columns: np.ndarray, rows: np.ndarray,
                  values: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``max weight . x`` s.t. ``sum_e values_e x_{columns_e} <= rhs_{rows_e}`` per row and
    ``low <= x <= 1``, by HiGHS directly (no Pyomo): ``(x, |row duals|)``, or None where HiGHS
    does not report it optimal. The entries go to HiGHS column-wise, by (column, row)."""
    import highspy
    from pyomo.common.tee import capture_output

    with capture_output(capture_fd=True):  # the constructor prints a banner
        highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    # HiGHS keeps one thread scheduler per process, sized by the first run; reset it before and
    # after, so this LP neither fails after nor breaks the exact route's runs (otherwise a later
    # solve_model returns status "error", termination unknown)
    highspy.Highs.resetGlobalScheduler(True)
    n, m = len(weight), len(rhs)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = -np.asarray(weight, dtype=float)
    lp.col_lower_, lp.col_upper_ = np.asarray(low, dtype=float), np.ones(n)
    lp.row_lower_, lp.row_upper_ = np.full(m, -highspy.kHighsInf), np.asarray(rhs, dtype=float)
    order = np.lexsort((rows, columns))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.searchsorted(columns[order], np.arange(n + 1)).astype(np.int32)
    lp.a_matrix_.index_ = np.asarray(rows, dtype=np.int32)[order]
    lp.a_matrix_.value_ = np.asarray(values, dtype=np.float64)[order]
    highs.passModel(lp)
    highs.run()
    optimal = highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    answer = None
    if optimal:
        solution = highs.getSolution()
        answer = np.array(solution.col_value), np.abs(np.array(solution.row_dual))
    highspy.Highs.resetGlobalScheduler(True)
    return answer


def lp_relaxation(problem: Problem, instance: Any, options: SolveOptions | None = None) -> float | None:
    """Optimal value of the exact model with integrality dropped (problem units)."""
    model = problem.build(instance)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, options or SolveOptions())
    return result.objective if result.status == "optimal" else None


def export(model: pyo.ConcreteModel, out: str | Path, header: list[str] | None = None) -> None:
    """Write the model as an LP or MPS file (by the file's extension) with readable names, the
    ``header`` lines first as comments (what the model is, the objective's scale and unit)."""
    path = Path(out)
    if path.suffix not in (".lp", ".mps"):
        raise ValueError(f"export to .lp or .mps, not {out}")
    model.write(str(path), io_options={"symbolic_solver_labels": True})
    if header:
        mark = "\\ " if path.suffix == ".lp" else "* "
        text = path.read_text(encoding="utf-8")
        path.write_text("".join(f"{mark}{line}\n" for line in header) + text, encoding="utf-8")


def symbol_map(model: pyo.ConcreteModel) -> dict[str, Any]:
    """The exported column name of every variable of ``model`` -> the variable (the names
    :func:`export` writes)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="coopt-names-") as scratch:
        _, smap_id = model.write(str(Path(scratch) / "names.lp"), io_options={"symbolic_solver_labels": True})
    symbols = model.solutions.symbol_map[smap_id]
    found = {}
    for name, ref in symbols.bySymbol.items():
        component = ref() if isinstance(ref, weakref.ReferenceType) else ref
        if component is not None and component.is_variable_type():
            found[name] = component
    return found


def column_values(text: str) -> tuple[dict[str, float], float | None]:
    """Column values and the objective of a solver's solution file: HiGHS' ``.sol`` (the
    ``# Columns N`` block of its raw or pretty format), or plain ``name value`` lines."""
    lines = [line.strip() for line in text.splitlines()]
    objective = None
    for line in lines:
        if line.lower().startswith("objective"):
            try:
                objective = float(line.split()[-1])
            except ValueError:
                objective = None
            break
    start = next((i + 1 for i, line in enumerate(lines) if line.startswith("# Columns")), None)
    plain = [line for line in lines if line and not line.startswith("#")]
    body = plain if start is None else lines[start:]
    values: dict[str, float] = {}
    for line in body:
        if not line or line.startswith("#"):
            if start is not None and values:
                break
            continue
        parts = line.split()
        if start is not None and parts[0].lower() in ("index", "objective"):
            continue
        try:
            name, value = parts[-2], float(parts[-1])
        except (IndexError, ValueError):
            raise ValueError(f"expected 'name value' lines, got {line!r}") from None
        values[name] = value
    if not values:
        raise ValueError("holds no column values")
    return values, objective


def read_file(path: str | Path) -> Any:
    """An LP/MPS file read into a quiet, single-threaded ``highspy.Highs`` with a 1e-9 gap, unsolved."""
    import highspy
    from pyomo.common.tee import capture_output

    with capture_output(capture_fd=True):  # the constructor prints a banner
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("threads", 1)
    h.readModel(str(path))
    return h


def solve_read(h: Any) -> float | None:
    """Solve a model :func:`read_file` read; the optimal objective or None."""
    import highspy

    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return h.getInfo().objective_function_value


def solve_file(path: str | Path) -> float | None:
    """Solve an exported LP/MPS file with HiGHS directly; the optimal objective or None."""
    return solve_read(read_file(path))


