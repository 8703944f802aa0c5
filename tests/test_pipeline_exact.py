"""The warm start of the exact routes (:mod:`coopt.problems.pipeline.warm`): the best checked
heuristic or pattern schedule in the form Model P admits, handed in by the runner; and the time
grid of :mod:`coopt.problems.pipeline.grid`."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coopt.problem import SolveOptions
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.warm import incumbent
from coopt.solvers.highs import solve_model
from tests import _pipeline_shared


def test_time_unit_is_the_common_divisor_or_none():
    instance = PROBLEM.generate(0, 3)
    assert time_unit(instance) == 1.0
    halves = replace(instance, forward_s=tuple(x / 2 for x in instance.forward_s), lag_s=0.25)
    assert time_unit(halves) == 0.25
    irrational = replace(instance, lag_s=2**0.5)
    assert time_unit(irrational) is None


def test_the_warm_start_is_local_search_relabelled_fifo():
    """Model P starts from local_search's schedule (it used to skip it) in FIFO form: on the
    generator's size 8 seed 1 local_search lets micro-batches overtake (4 passes), and the start is no
    worse than it, FIFO in every lane, accepted by the checker, and the model's first C."""
    from coopt.problems.pipeline.heuristics import local_search
    from coopt.problems.pipeline.milp import build

    instance = PROBLEM.generate(1, 8)
    searched = local_search(instance)
    value, start = _pipeline_shared.incumbent(instance)  # shared with tests/test_pipeline_cpsat.py
    assert value <= searched["objective"]
    assert pm.check(instance, start) == []
    t = {(x["kind"], x["stage"], x["microbatch"]): x["start"] for x in start["passes"]}
    assert all(t[(kind, k, j)] > t[(kind, k, j - 1)] for kind, k, j in t if j)
    assert PROBLEM.warm_start(instance) == start
    model = build(instance, incumbent=start)
    assert model.C.value * model.objective_unit == pytest.approx(value)


@pytest.mark.parametrize("seed", (10, 53, 94))
def test_the_warm_start_with_recompute_or_offload_meets_the_first_lane_chain(seed):
    """The oracle's seeds whose best heuristic schedule let micro-batch 1 enter stage 0 before 0
    (so Model P, which orders the first lane, dropped it as a warm start): the relabelled start
    keeps its value, passes the checker and enters stage 0 in micro-batch order."""
    from coopt.problems.pipeline import brute
    from coopt.problems.pipeline.heuristics import HEURISTICS
    from coopt.problems.pipeline.model import check
    from coopt.problems.pipeline.order import fifo_is_lossless, first_lane_relabel

    instance = brute.tiny(seed)
    assert not fifo_is_lossless(instance)
    value, start = incumbent(instance)
    assert start is not None and not check(instance, start)
    first = {x["microbatch"]: x["start"] for x in start["passes"] if (x["kind"], x["stage"]) == ("F", 0)}
    assert [first[j] for j in sorted(first)] == sorted(first.values())
    best = HEURISTICS["local_search"](instance)
    relabelled = first_lane_relabel(instance, best)
    assert not check(instance, relabelled)
    assert relabelled["objective"] == pytest.approx(best["objective"])
    assert value <= best["objective"] + 1e-9


def test_a_horizon_below_the_warm_start_gets_no_warm_start(caplog):
    """Model P below its own warm start (the benchmarks' "is there a schedule under H" runs): the
    warm start is no solution there, so it is not loaded, and no start is set outside its bounds
    (Pyomo warned once per pass before); with the horizon above it, it is loaded."""
    from coopt.problems.pipeline.milp import build

    instance = PROBLEM.generate(0, 4)
    best, start = incumbent(instance)
    with caplog.at_level("WARNING"):
        below = build(instance, upper=best - 1, incumbent=start)
    assert not getattr(below, "warm_start", False)
    assert not [r for r in caplog.records if "outside the bounds" in r.getMessage()]
    assert build(instance, upper=best, incumbent=start).warm_start
    result = solve_model(below, SolveOptions(time_limit=30, gap=1e-9, threads=1))
    assert result.status == "infeasible" or result.objective < best  # HiGHS decides it alone
