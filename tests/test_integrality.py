"""Integrality of the objective: the grid a problem detects on an instance, the rounding of a dual
bound to it, the runner closing a proof with it, and the grid never cutting off an enumerated
optimum."""

from __future__ import annotations

import itertools
import random

import pytest

from coopt.problem import ExactOutcome, Problem, SolveOptions, Termination, grid_of, round_to_grid
from coopt.problems.chase import brute as chase_brute
from coopt.problems.chase.hardware import Device, DeviceType, Hardware, Link, Switch
from coopt.problems.chase.model import Instance as ChaseInstance
from coopt.problems.chase.workloads import Edge, Task, Workload
from coopt.problems.pipeline import brute as pipeline_brute
from coopt.registry import get
from coopt.run import run
from tests import _pipeline_shared


def test_the_grid_is_the_largest_common_decimal_unit():
    assert grid_of([3, 6, 9.0]) == 3.0
    assert grid_of([14e-6, 85e-6]) == pytest.approx(1e-6)
    assert grid_of([5e-6 + 4e6 / 50e9]) == pytest.approx(85e-6)  # a transfer: latency + bytes / rate
    assert grid_of([0.1, 0.25]) == pytest.approx(0.05)


@pytest.mark.parametrize("values", [[1 / 3], [989e12 / 3.35e12, 1.0], [0.0], [], [1.0, float("nan")],
                                    [1.0, 1e8]])
def test_no_grid_where_the_numbers_have_no_common_unit(values):
    """Thirds, rooflines, all zeros, non-finite numbers, and a unit too fine for the solvers'
    tolerance (1e8 steps) give no grid."""
    assert grid_of(values) is None


@pytest.mark.parametrize("bound, sense, expected", [
    (65.5, "min", 66.0),
    (65.4999999, "min", 66.0),  # a valid bound above 65 proves 66 on the integers
    (65.0, "min", 65.0),
    (10.2, "max", 10.0),
    (-3.5, "min", -3.0),
    (-3.5, "max", -4.0),
])
def test_a_bound_rounds_to_the_grid_towards_the_optimum(bound, sense, expected):
    assert round_to_grid(bound, 1.0, sense) == expected


def test_solver_noise_past_a_grid_point_does_not_jump_a_step():
    """A bound a solver's tolerance put a hair above 65 (its optimum) stays at 65, never 66."""
    assert round_to_grid(65.00000001, 1.0, "min") < 65.5
    assert round_to_grid(9.99999999, 1.0, "max") > 9.5
    assert round_to_grid(65.00000001, 1.0, "min") >= 65.00000001  # never weaker than it was


# -- the runner --------------------------------------------------------------------------------


def toy(grid: float | None, incumbent: float = 66.0, bound: float = 65.5, sense: str = "min") -> Problem:
    """A problem whose exact method stops at a time limit with ``incumbent`` and ``bound``."""
    def exact(instance, options):
        return ExactOutcome({"objective": incumbent}, Termination.LIMIT, bound)

    return Problem(
        name="toy", summary="", source="", sense=sense, load=lambda f: None, dump=lambda i: {},
        check=lambda i, s: [], objective=lambda i, s: float(s["objective"]), generate=lambda s, n: None,
        exact=exact, objective_grid=lambda instance: grid)


def test_a_fractional_bound_one_step_below_an_integral_incumbent_proves_it():
    report = run(toy(grid=1.0), None, "exact", SolveOptions())
    assert report.status == "optimal"
    assert report.bound == 66.0 and report.gap == 0.0
    assert "integrality" in report.solver and "optimal" in report.solver["integrality"]


def test_a_maximisation_closes_downwards():
    report = run(toy(grid=1.0, incumbent=40.0, bound=40.7, sense="max"), None, "exact", SolveOptions())
    assert report.status == "optimal" and report.bound == 40.0


def test_without_a_grid_nothing_is_rounded():
    report = run(toy(grid=None), None, "exact", SolveOptions())
    assert report.status == "feasible" and report.bound == 65.5
    assert "integrality" not in report.solver


def test_a_rounded_bound_short_of_the_incumbent_stays_feasible():
    report = run(toy(grid=1.0, incumbent=67.0), None, "exact", SolveOptions())
    assert report.status == "feasible" and report.bound == 66.0
    assert "optimal" not in report.solver["integrality"]


def test_a_grid_coarser_than_the_data_would_be_refused_by_the_numbers():
    """On a half grid the same bound rounds to 65.5 only: 66 is not proven."""
    report = run(toy(grid=0.5), None, "exact", SolveOptions())
    assert report.status == "feasible" and report.bound == 65.5


# -- the grids of the problems never cut off an enumerated optimum ------------------------------


def integral_chase(seed: int) -> ChaseInstance:
    """A tiny chase instance on integer seconds: explicit integer run times, a switch with links of
    1 MB/s and 1 s latency, integer megabytes on the edges (transfers 2 + d s)."""
    rng = random.Random(seed)
    count = 2 + seed % 2
    kind = DeviceType("a")
    devices = tuple(Device(f"d{p}", "a") for p in range(count))
    links = tuple(Link((d.name, "sw"), 1e6, 1.0) for d in devices)
    hardware = Hardware((kind,), devices, (Switch("sw", 8),), links)
    n = 3 + seed % 3
    tasks = tuple(Task(f"t{v}", times=tuple(float(rng.randint(1, 9)) for _ in range(count))) for v in range(n))
    edges = tuple(Edge(f"t{u}", f"t{v}", rng.randint(0, 4) * 1e6)
                  for u, v in itertools.combinations(range(n), 2) if rng.random() < 0.45)
    return ChaseInstance(hardware, Workload(tasks, edges))


def on_grid(value: float, grid: float) -> bool:
    return abs(value / grid - round(value / grid)) <= 1e-9 * max(1.0, abs(value / grid))


@pytest.mark.parametrize("name", ["pipeline", "provisioning"])
def test_every_enumerated_optimum_lies_on_the_declared_grid(name):
    problem = get(name)
    seen = 0
    # pipeline's oracle is brute.optimum; tests/_pipeline_shared shares its value on these tiny seeds
    # with the tests/test_pipeline*.py files that enumerate the same instances
    solve = _pipeline_shared.optimum if problem.oracle.solve is pipeline_brute.optimum else problem.oracle.solve
    for seed in range(12):
        instance = problem.oracle.generate(seed)
        grid = problem.objective_grid(instance)
        optimum = solve(instance)
        if grid is None or optimum is None:
            continue
        seen += 1
        assert on_grid(optimum, grid), (seed, optimum, grid)
        # a bound within half a step on the weak side rounds to the optimum, never past it
        weak = optimum - 0.49 * grid if problem.sense == "min" else optimum + 0.49 * grid
        assert round_to_grid(weak, grid, problem.sense) == pytest.approx(optimum)
    assert seen >= 4  # the tiny families hold integral instances


def test_chase_optima_on_integer_data_lie_on_the_grid_and_roofline_data_has_none():
    problem = get("chase")
    for seed in range(8):
        instance = integral_chase(seed)
        assert problem.objective_grid(instance) == 1.0
        optimum = chase_brute.enumerate_optimum(instance)
        assert on_grid(optimum, 1.0), (seed, optimum)
        assert round_to_grid(optimum - 0.49, 1.0, "min") == pytest.approx(optimum)
    assert problem.objective_grid(chase_brute.tiny(1)) is None


@pytest.mark.parametrize("seed", range(4))
def test_the_rounded_bound_of_the_exact_routes_stays_below_the_optimum(seed):
    """On integral instances the bound of each exact route and of ``bound``, rounded to the grid
    by the runner, stays at or below the enumerated optimum, and the exact routes prove it."""
    problem = get("chase")
    instance = integral_chase(seed)
    optimum = chase_brute.enumerate_optimum(instance)
    for method in ("exact", "milp", "bound"):
        report = run(problem, instance, method, SolveOptions(time_limit=20, gap=1e-9))
        assert report.bound is not None and report.bound <= optimum * (1 + 1e-9), (method, report.bound)
        if method != "bound":
            assert report.status == "optimal" and report.objective == pytest.approx(optimum, rel=1e-9)
