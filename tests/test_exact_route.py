"""The HiGHS route's report: statuses, bounds, units and the time split."""

import pyomo.environ as pyo
import pytest
from pyomo.contrib.solver.common.results import TerminationCondition as TC

from coopt.problem import SolveOptions
from coopt.solvers.exact import report_status, solve_model


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
    assert report_status(termination, incumbent) == expected


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
