"""Model N (the count-based time-indexed MILP, :mod:`coopt.problems.pipeline.counts`) against
the enumeration oracle, which overtakes micro-batches and knows nothing of counts, slots or
windows, and against Model P on the shipped keep-only files and the generator."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coopt.instance import load
from coopt.problem import SolveOptions, close
from coopt.problems.pipeline import PROBLEM, counts
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import lower_bound
from coopt.problems.pipeline.brute import enumerate_optimum, tiny
from coopt.problems.pipeline.milp import incumbent
from coopt.problems.pipeline.model import GB
from coopt.run import run
from coopt.shipped import shipped
from coopt.solvers.highs import solve_model

OPTIONS = SolveOptions(gap=1e-9, time_limit=60, threads=1)


def solve_counts(instance: pm.Instance, horizon: int | None = None, warm: bool = True):
    """Model N over the heuristic's horizon (or ``horizon`` slots): result and its schedule."""
    best, start = incumbent(instance)
    H = counts.horizon_slots(instance, best) if horizon is None else horizon
    model = counts.build_counts(instance, H, lower_bound(instance), start if warm else None)
    result = solve_model(model, OPTIONS)
    return result, (counts.extract_counts(model, instance) if result.objective is not None else None)


KEEP_SEEDS = [s for s in range(120) if counts.applies(tiny(s))][:24]


@pytest.mark.parametrize("seed", KEEP_SEEDS)
def test_model_n_matches_enumeration_over_every_order(seed):
    """Every keep-only tiny instance of the oracle (lags, fused and split backward, two chunks in a
    V or interleaved, caps below one micro-batch): Model N's optimum is the enumeration's, and its
    schedule passes the checker with that makespan."""
    instance = tiny(seed)
    best = enumerate_optimum(instance)
    result, solution = solve_counts(instance)
    if best is None:
        assert result.status == "infeasible"
        return
    assert result.status == "optimal"
    assert pm.check(instance, solution) == []
    assert close(result.objective, best)
    assert close(pm.objective(instance, solution), best)


def test_the_seeds_cover_what_model_n_must_handle():
    """The parametrised seeds include a lag, a fused backward, two chunks and an infeasible cap."""
    shapes = [tiny(s) for s in KEEP_SEEDS]
    assert len(shapes) == 24
    assert any(i.lag_s > 0 for i in shapes)
    assert any(not i.split_backward for i in shapes)
    assert any(i.chunks == 2 for i in shapes)
    assert any(enumerate_optimum(i) is None for i in shapes)


def test_model_n_without_warm_start_and_a_loose_horizon():
    """The optimum does not depend on the incumbent or on a horizon longer than needed."""
    instance = tiny(KEEP_SEEDS[0])
    best = enumerate_optimum(instance)
    assert best is not None
    result, solution = solve_counts(instance, horizon=int(pm.serial_bound(instance)) + 3, warm=False)
    assert result.status == "optimal" and close(result.objective, best)
    assert pm.check(instance, solution) == []


@pytest.mark.parametrize("path", [p for p in shipped("pipeline") if counts.applies(load(p).instance)
                                  and not p.name.startswith("2-")], ids=lambda p: p.stem)
def test_model_n_matches_model_p_on_the_shipped_keep_only_files(path):
    instance = load(path).instance
    report = run(PROBLEM, instance, "exact", OPTIONS)
    result, solution = solve_counts(instance)
    assert report.status == result.status == "optimal"
    assert close(result.objective, report.objective)
    assert pm.check(instance, solution) == []


@pytest.mark.parametrize("seed", range(3))
def test_model_n_matches_model_p_on_the_generator(seed):
    instance = PROBLEM.generate(seed, 4)
    report = run(PROBLEM, instance, "exact", OPTIONS)
    result, solution = solve_counts(instance)
    assert report.status == result.status == "optimal"
    assert close(result.objective, report.objective)
    assert pm.check(instance, solution) == []


def test_time_unit_is_the_common_divisor_or_none():
    instance = PROBLEM.generate(0, 3)
    assert counts.time_unit(instance) == 1.0
    halves = replace(instance, forward_s=tuple(x / 2 for x in instance.forward_s), lag_s=0.25)
    assert counts.time_unit(halves) == 0.25
    irrational = replace(instance, lag_s=2**0.5)
    assert counts.time_unit(irrational) is None
    assert not counts.applies(irrational)


def test_model_n_does_not_apply_where_fifo_or_slots_would_lose():
    instance = PROBLEM.generate(0, 3)
    assert counts.applies(instance)
    recompute = replace(instance, allow_recompute=True, recompute_s=(1.0,) * 3,
                        checkpoint_bytes=(0.5 * GB,) * 3)
    assert not counts.applies(recompute)
    assert not counts.applies(replace(instance, objective="stage_span"))


def test_the_warm_start_is_local_search_relabelled_fifo():
    """Model P starts from local_search's schedule (it used to skip it) in FIFO form: on the
    generator's size 8 seed 1 local_search lets micro-batches overtake (4 passes), and the start is no
    worse than it, FIFO in every lane, accepted by the checker, and the model's first C."""
    from coopt.problems.pipeline.heuristics import local_search
    from coopt.problems.pipeline.milp import build

    instance = PROBLEM.generate(1, 8)
    searched = local_search(instance)
    value, start = incumbent(instance)
    assert value <= searched["objective"]
    assert pm.check(instance, start) == []
    t = {(x["kind"], x["stage"], x["microbatch"]): x["start"] for x in start["passes"]}
    assert all(t[(kind, k, j)] > t[(kind, k, j - 1)] for kind, k, j in t if j)
    model = build(instance)
    assert model.C.value * model.objective_unit == pytest.approx(value)


@pytest.mark.parametrize("seed", (10, 53, 94))
def test_the_warm_start_with_recompute_or_offload_meets_the_first_lane_chain(seed):
    """The oracle's seeds whose best heuristic schedule let micro-batch 1 enter stage 0 before 0
    (so Model P, which orders the first lane, dropped it as a warm start): the relabelled start
    keeps its value, passes the checker and enters stage 0 in micro-batch order."""
    from coopt.problems.pipeline import brute
    from coopt.problems.pipeline.heuristics import HEURISTICS
    from coopt.problems.pipeline.milp import fifo_is_lossless, first_lane_relabel, incumbent
    from coopt.problems.pipeline.model import check

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
    best, _ = incumbent(instance)
    with caplog.at_level("WARNING"):
        below = build(instance, upper=best - 1)
    assert not getattr(below, "warm_start", False)
    assert not [r for r in caplog.records if "outside the bounds" in r.getMessage()]
    assert build(instance, upper=best).warm_start
    result = solve_model(below, SolveOptions(time_limit=30, gap=1e-9, threads=1))
    assert result.status == "infeasible" or result.objective < best  # HiGHS decides it alone
