"""The exact route (Pyomo -> HiGHS through ``pyomo.contrib.solver``) and the report every
method, exact or heuristic, produces.

Times are kept apart, as in every honest MIP benchmark: ``build`` is the Python model
construction, ``handoff`` the translation into HiGHS (``set_instance``), ``solve`` HiGHS' own run
time, ``total`` the wall time of the whole call including extraction and checking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

import coopt
from coopt.problem import ExactOutcome, Problem, Solution, SolveOptions, relative_gap

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


@dataclass
class SolveReport:
    """One (instance, method) result; :meth:`to_json` gives exactly the documented keys."""

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


def solve_model(model: pyo.ConcreteModel, options: SolveOptions) -> MilpResult:
    """Hand ``model`` to HiGHS, solve it and load the incumbent (if any) into the model."""
    solver = Highs()
    t0 = time.perf_counter()
    solver.set_instance(model)
    handoff = time.perf_counter() - t0
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
    objective = results.incumbent_objective if has_incumbent else None
    bound = results.objective_bound
    nodes = getattr(results.extra_info, "mip_node_count", None)
    return MilpResult(
        status=status,
        objective=None if objective is None else objective * unit,
        bound=None if bound is None or abs(bound) == float("inf") else bound * unit,
        handoff=handoff,
        solve=solve,
        solver_version=".".join(map(str, results.solver_version)),
        nodes=nodes,
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


def _judge(problem: Problem, instance: Any, solution: Solution | None) -> dict[str, Any]:
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
    try:
        if method == "milp" or (method == "exact" and problem.exact is None):
            t0 = time.perf_counter()
            model = problem.build(instance)
            times["build"] = time.perf_counter() - t0
            result = solve_model(model, options)
            times["handoff"], times["solve"] = result.handoff, result.solve
            solver = {"name": "highs", "version": result.solver_version}
            status, objective, bound = result.status, result.objective, result.bound
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
    check = _judge(problem, instance, solution)
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
    )
