"""Model N (the count-based time-indexed MILP, :mod:`research.pipeline.counts`) against the
enumeration oracle, which overtakes micro-batches and knows nothing of counts, slots or windows,
against Model P on the shipped keep-only files and the generator, and as the yardstick of the
closed dual bound on instances larger than the oracle's."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from coopt.instance import load
from coopt.problem import SolveOptions, close
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import lower_bound
from coopt.problems.pipeline.brute import enumerate_optimum, tiny
from coopt.problems.pipeline.model import GB
from coopt.problems.pipeline.warm import incumbent
from coopt.run import run
from coopt.shipped import shipped
from coopt.solvers.highs import solve_model
from research.pipeline import counts
from tests.test_pipeline_bound_release import keep_only

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


def test_model_n_does_not_apply_where_fifo_or_slots_would_lose():
    instance = PROBLEM.generate(0, 3)
    assert counts.applies(instance)
    recompute = replace(instance, allow_recompute=True, recompute_s=(1.0,) * 3,
                        checkpoint_bytes=(0.5 * GB,) * 3)
    assert not counts.applies(recompute)
    assert not counts.applies(replace(instance, objective="stage_span"))
    assert not counts.applies(replace(instance, lag_s=2**0.5))



@pytest.mark.parametrize("seed", range(16))
def test_bound_never_above_model_n_without_the_cut(seed):
    """Against Model N (counts, FIFO) built with no dual-bound floor, so that the optimum it
    proves owes nothing to the bound under test, on instances larger than the oracle's."""
    rng = random.Random(1000 + seed)
    instance = keep_only(1000 + seed, rng.randint(2, 4), rng.randint(4, 8), split=rng.random() < 0.8)
    bound = lower_bound(instance)
    value, start = incumbent(instance)  # the serial bound and no start when no heuristic fits
    model = counts.build_counts(instance, counts.horizon_slots(instance, value), 0.0, start)
    result = solve_model(model, OPTIONS)
    assert result.status == "optimal"
    assert bound <= result.objective + 1e-9
