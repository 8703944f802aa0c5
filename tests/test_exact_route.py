"""The HiGHS route's report: statuses, bounds, units and the time split."""

import random

import pyomo.environ as pyo
import pytest
from pyomo.contrib.solver.common.results import TerminationCondition as TC

from coopt.problem import SolveOptions, Termination, report_status
from coopt.solvers.highs import incumbent_trace, solve_model, termination_of


@pytest.mark.parametrize(
    "termination, incumbent, expected",
    [
        (TC.convergenceCriteriaSatisfied, True, "optimal"),
        (TC.maxTimeLimit, True, "feasible"),
        (TC.maxTimeLimit, False, "time_limit"),
        (TC.provenInfeasible, False, "infeasible"),
        (TC.unbounded, False, "unbounded"),
        (TC.error, False, "error"),
    ],
)
def test_status_mapping(termination, incumbent, expected):
    assert report_status(termination_of(termination), incumbent) == expected


@pytest.mark.parametrize(
    "termination, stopped, expected",
    [
        (TC.convergenceCriteriaSatisfied, False, Termination.OPTIMAL),
        (TC.convergenceCriteriaSatisfied, True, Termination.OPTIMAL),  # it finished before the stop
        (TC.maxTimeLimit, True, Termination.INTERRUPTED),
        (TC.interrupted, True, Termination.INTERRUPTED),
        (TC.interrupted, False, Termination.LIMIT),
        (TC.iterationLimit, False, Termination.LIMIT),
        (TC.infeasibleOrUnbounded, False, Termination.INFEASIBLE),
    ],
)
def test_why_highs_stopped_is_kept_apart_from_what_it_found(termination, stopped, expected):
    assert termination_of(termination, stopped) is expected


@pytest.mark.parametrize("termination", list(Termination))
def test_one_status_word_per_termination_and_solution(termination):
    """optimal needs a proof and a solution; a solution without a proof is feasible; without a
    solution the word is the termination's own (a proof of optimality without one is an error)."""
    with_solution = report_status(termination, True)
    without = report_status(termination, False)
    if termination is Termination.INTERRUPTED:
        assert with_solution == without == "interrupted"
    elif termination is Termination.OPTIMAL:
        assert (with_solution, without) == ("optimal", "error")
    else:
        assert (with_solution, without) == ("feasible", termination.value)


def small_mip(unit: float = 1.0, infeasible: bool = False) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.y = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.c = pyo.Constraint(expr=2 * m.x + 3 * m.y <= (-1 if infeasible else 12.5))
    m.obj = pyo.Objective(expr=3 * m.x + 4 * m.y, sense=pyo.maximize)
    m.objective_unit = unit
    return m


def test_optimal_objective_bound_and_unit():
    result = solve_model(small_mip(unit=2.0), SolveOptions())
    # max 3x + 4y s.t. 2x + 3y <= 12.5 over integers: (6, 0) -> 18, (5, 0) -> 15, (2, 2) -> 14 ...
    best = max(3 * x + 4 * y for x in range(11) for y in range(11) if 2 * x + 3 * y <= 12.5)
    assert result.status == "optimal"
    assert result.objective == pytest.approx(2.0 * best)
    assert result.bound == pytest.approx(2.0 * best)
    assert result.handoff >= 0 and result.solve >= 0


def test_infeasible_is_reported_not_raised():
    result = solve_model(small_mip(infeasible=True), SolveOptions())
    assert result.status == "infeasible" and result.objective is None


# -- the incumbent trace ----------------------------------------------------------------------


def hard_knapsack(n: int, seed: int, sense, unit: float, offset: float):
    """A 0/1 knapsack with values close to weights (so the LP bound is weak and HiGHS branches);
    the minimisation counts the value left out. Returns the model and its optimum by DP."""
    rng = random.Random(seed)
    weights = [rng.randint(100, 1000) for _ in range(n)]
    values = [w + rng.randint(-50, 50) for w in weights]
    capacity = sum(weights) // 2
    best = [0] * (capacity + 1)  # best[c]: most value within capacity c
    for v, w in zip(values, weights, strict=True):
        for c in range(capacity, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    m = pyo.ConcreteModel()
    m.take = pyo.Var(range(n), domain=pyo.Binary)
    m.capacity = pyo.Constraint(expr=sum(w * m.take[k] for k, w in enumerate(weights)) <= capacity)
    if sense == "max":
        m.obj = pyo.Objective(
            expr=offset + sum(v * m.take[k] for k, v in enumerate(values)), sense=pyo.maximize
        )
        optimum = offset + best[capacity]
    else:
        left = sum(v * (1 - m.take[k]) for k, v in enumerate(values))
        m.obj = pyo.Objective(expr=offset + left, sense=pyo.minimize)
        optimum = offset + sum(values) - best[capacity]
    m.objective_unit = unit
    return m, unit * optimum


@pytest.mark.parametrize("sense", ["max", "min"])
def test_trace_of_a_branching_milp_is_monotone_and_ends_on_the_report(sense):
    model, optimum = hard_knapsack(30, 1, sense, unit=0.5, offset=7.0)
    result = solve_model(model, SolveOptions())
    assert result.status == "optimal" and result.objective == pytest.approx(optimum)
    assert result.size == {"rows": 1, "columns": 30, "nonzeros": 30}
    assert result.nodes is not None and result.nodes > 1  # branch and bound ran
    trace = result.trace
    assert len(trace) >= 2  # callback events, not only the final answer
    times = [t for t, _, _ in trace]
    assert times == sorted(times) and times[0] >= 0 and times[-1] <= result.solve + 1e-9
    primals = [p for _, p, _ in trace if p is not None]
    duals = [d for _, _, d in trace if d is not None]
    assert primals and duals
    # problem units: incumbents never beyond the optimum, dual bounds never short of it
    better = (lambda a, b: a >= b - 1e-9) if sense == "max" else (lambda a, b: a <= b + 1e-9)
    assert all(better(optimum, p) for p in primals)
    assert all(better(d, optimum) for d in duals)
    # incumbents improve, bounds tighten, in the problem's own direction
    assert all(better(b, a) for a, b in zip(primals, primals[1:], strict=False))
    assert all(better(a, b) for a, b in zip(duals, duals[1:], strict=False))
    assert trace[-1][1] == result.objective and trace[-1][2] == result.bound


def test_trace_falls_back_to_the_final_answer_without_callbacks(monkeypatch):
    from coopt.solvers import highs as exact

    monkeypatch.setattr(exact, "_record_events", lambda highs: [])
    model, optimum = hard_knapsack(12, 2, "max", unit=1.0, offset=0.0)
    result = exact.solve_model(model, SolveOptions())
    assert result.trace == [(result.solve, result.objective, result.bound)]
    assert result.objective == pytest.approx(optimum)
    assert exact._record_events(object()) == []  # no callback attributes: nothing subscribed, no error


def test_incumbent_trace_by_hand():
    inf = float("inf")
    events = [(0.1, -inf, inf), (0.2, 4.0, inf), (0.3, 4.0, inf), (0.5, 6.0, 10.0), (0.7, 8.0, 8.0 + 1e-12)]
    # maximisation in model units x2: unknown bounds become None, the repeat at 0.3 goes, the last
    # event (already the final answer to 1e-9) takes the final answer's exact values
    assert incumbent_trace(events, 2.0, 0.9, 16.0, 16.0) == [
        (0.1, None, None),
        (0.2, 8.0, None),
        (0.5, 12.0, 20.0),
        (0.7, 16.0, 16.0),
    ]
    # the final answer differs from the last event (a better bound at the end): appended at `end`
    assert incumbent_trace(events[:2], 1.0, 0.9, 4.0, 5.0)[-1] == (0.9, 4.0, 5.0)
    assert incumbent_trace([], 1.0, 0.4, None, None) == [(0.4, None, None)]


def test_a_sub_solver_s_dual_bound_beyond_the_final_one_leaves_the_trace():
    inf = float("inf")
    # what HiGHS reports while it completes a warm start of value 23 (pipeline
    # 0-p3m3-offload-overtake): the sub-MIP's bound 23, unknown again, then the real bounds
    events = [(0.1, 23.0, -inf), (0.2, 23.0, 23.0), (0.3, 23.0, -inf), (0.4, 23.0, 21.5), (0.6, 22.0, 22.0)]
    assert incumbent_trace(events, 1.0, 0.7, 22.0, 22.0, minimize=True) == [
        (0.1, 23.0, None),
        (0.4, 23.0, 21.5),
        (0.6, 22.0, 22.0),
    ]
    assert incumbent_trace(events, 1.0, 0.7, 22.0, 22.0)[1] == (0.2, 23.0, 23.0)  # sense unknown: kept
    # a maximisation: a dual below a later one is the artefact
    flipped = [(t, -p, -d) for t, p, d in events]
    assert [d for _, _, d in incumbent_trace(flipped, 1.0, 0.7, -22.0, -22.0, minimize=False)] == [
        None, -21.5, -22.0]


def test_the_pipeline_trace_never_claims_a_bound_past_the_optimum():
    from coopt.instance import load
    from coopt.problems.pipeline import milp

    model = milp.build(load("pipeline/0-p3m3-offload-overtake").instance)
    result = solve_model(model, SolveOptions(time_limit=60))
    assert result.status == "optimal"
    assert all(dual is None or dual <= result.objective + 1e-6 for _, _, dual in result.trace)


def test_report_carries_trace_size_and_nodes_outside_the_json():
    import knapsack

    from coopt.run import run

    instance = knapsack.generate(5, 13)  # 30 items
    milp = run(knapsack.PROBLEM, instance, "exact")  # no DP: the MILP route
    assert len(instance.values) == 30 and milp.status == "optimal"
    assert milp.trace and milp.trace[-1][1] == milp.objective
    assert milp.model_size["columns"] == 30 and milp.nodes is not None
    assert not {"trace", "model_size", "nodes"} & set(milp.to_json())
    greedy = run(knapsack.PROBLEM, instance, "greedy")
    assert greedy.trace == [] and greedy.model_size == {} and greedy.nodes is None


def test_a_warm_start_is_the_first_incumbent():
    """Values set on the variables of a model with ``warm_start = True`` reach HiGHS as its first
    incumbent; without the flag HiGHS starts from its own (worse) first solution."""
    model, optimum = hard_knapsack(60, 3, "max", unit=1.0, offset=0.0)
    cold = solve_model(model, SolveOptions())
    assert cold.trace[0][1] is None or cold.trace[0][1] < optimum
    taken = {k: round(pyo.value(model.take[k])) for k in model.take}
    warm_model, _ = hard_knapsack(60, 3, "max", unit=1.0, offset=0.0)
    for k, value in taken.items():
        warm_model.take[k].value = value
    warm_model.warm_start = True
    warm = solve_model(warm_model, SolveOptions())
    assert warm.trace[0][1] == pytest.approx(optimum)
    assert warm.objective == pytest.approx(optimum)


def test_optimal_means_the_solution_handed_back_reaches_the_bound():
    """A proven optimum whose returned solution the checker values below the bound (here an
    extract that drops the best item, as HiGHS' warm-start defect once did with its values) is
    reported as an incumbent, ``feasible``, never ``optimal``."""
    from dataclasses import replace

    import knapsack

    from coopt.run import run

    def lossy(model, instance):
        taken = knapsack.extract(model, instance)["take"]
        return {"take": sorted(taken, key=lambda k: instance.values[k])[:-1]}

    instance = knapsack.generate(5, 3)
    honest = run(knapsack.PROBLEM, instance, "exact")
    assert honest.status == "optimal" and honest.objective == pytest.approx(honest.bound)
    report = run(replace(knapsack.PROBLEM, extract=lossy), instance, "exact")
    assert report.check["feasible"] and report.objective < report.bound
    assert report.status == "feasible"


def _knapsack_with_bound(bound):
    import dataclasses

    import knapsack

    return dataclasses.replace(knapsack.PROBLEM, bound=bound), knapsack.Instance((6.0, 5.0), (2.0, 3.0), 4.0)


def test_a_bound_that_is_an_optimum_says_so():
    """A ``bound`` returning BoundOutcome(optimal=True) keeps status ``bound`` with its value and
    names it an optimum in ``solver``; a bare float is an ordinary bound, with no such key."""
    from coopt.problem import BoundOutcome
    from coopt.run import run

    proven, instance = _knapsack_with_bound(lambda inst, options: BoundOutcome(6.0, True, "enumeration"))
    report = run(proven, instance, "bound")
    assert (report.status, report.bound) == ("bound", 6.0)
    assert "optimum (enumeration)" in report.solver["bound"]
    plain, _ = _knapsack_with_bound(lambda inst, options: 11.0)
    report = run(plain, instance, "bound")
    assert (report.status, report.bound) == ("bound", 11.0)
    assert "bound" not in report.solver
    unproven, _ = _knapsack_with_bound(lambda inst, options: BoundOutcome(11.0))
    assert "bound" not in run(unproven, instance, "bound").solver
