"""Model S (the CP-SAT constraint program, :mod:`coopt.problems.pipeline.cpsat`), pipeline's
``exact`` method on keep-only one-chunk grid instances: its memory options against the level
they stand for, its optimum against the enumeration oracle (which lets micro-batches overtake and
knows nothing of FIFO, grids or options) and against Model P's proven optima, and the dispatch to
Model P everywhere else."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from coopt.instance import load
from coopt.problem import SolveOptions, close
from coopt.problems.pipeline import PROBLEM, cpsat
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import lower_bound
from coopt.problems.pipeline.brute import tiny
from coopt.problems.pipeline.model import GB
from coopt.problems.pipeline.warm import incumbent
from coopt.run import run
from coopt.shipped import shipped
from tests import _pipeline_shared

OPTIONS = SolveOptions(gap=1e-9, time_limit=60, threads=1)

ONE_STAGE = pm.Instance(
    stages=1, microbatches=8, forward_s=(1.0,), backward_s=(1.0,), weight_s=(1.0,),
    activation_bytes=(4 * GB,), weight_grad_bytes=(2 * GB,), memory_cap_bytes=(12 * GB,),
)


@pytest.mark.parametrize(("a", "a_w", "cap"), [
    (4, 2, 12), (4, 2, 13), (4, 0, 8), (4, 4, 12), (4, 1, 9), (2, 1, 6), (3, 2, 3), (4, 2, 3),
    (4, 3, 17.5),
])
def test_memory_options_are_exactly_the_counts_that_fit(a, a_w, cap):
    """For every forward F(0, j) and every count of ended B passes nB and W passes nW <= nB, the
    level a (j - nB) + a_W (nB - nW) + a fits the cap exactly when some option (x, y) has x <= nB
    and y <= nW; no option dominates another."""
    instance = replace(ONE_STAGE, activation_bytes=(a * GB,), weight_grad_bytes=(a_w * GB,),
                       memory_cap_bytes=(cap * GB,))
    for j in range(instance.microbatches):
        options = cpsat.memory_options(instance, 0, j)
        for x, y in itertools.permutations(options, 2):
            assert not (x[0] <= y[0] and x[1] <= y[1]), (j, options)
        for nb in range(j + 1):
            for nw in range(nb + 1):
                fits = (a * (j - nb) + a_w * (nb - nw) + a) * GB <= instance.cap_room(0)
                covered = any(x <= nb and y <= nw for x, y in options)
                assert fits == covered, (j, nb, nw, options)


def test_memory_options_never_fit_below_one_microbatch():
    instance = replace(ONE_STAGE, memory_cap_bytes=(3 * GB,))
    assert cpsat.memory_options(instance, 0, 0) == []
    assert cpsat.solve(instance, OPTIONS).status == "infeasible"


KEEP_SEEDS = [s for s in range(200) if cpsat.applies(tiny(s))][:30]


@pytest.mark.parametrize("seed", KEEP_SEEDS)
def test_model_s_matches_enumeration_over_every_order(seed):
    """Keep-only one-chunk tiny instances (lags, fused and split backward, caps from below one
    micro-batch up): Model S's optimum is the enumeration's and its schedule passes the checker."""
    instance = tiny(seed)
    best = _pipeline_shared.enumerate_optimum(instance)
    outcome = cpsat.solve(instance, OPTIONS)
    if best is None:
        assert outcome.status == "infeasible"
        return
    assert outcome.status == "optimal"
    assert pm.check(instance, outcome.solution) == []
    assert close(pm.objective(instance, outcome.solution), best)
    assert close(outcome.bound, best)


def test_the_seeds_cover_what_model_s_must_handle():
    shapes = [tiny(s) for s in KEEP_SEEDS]
    assert len(shapes) == 30
    assert any(i.lag_s > 0 for i in shapes)
    assert any(not i.split_backward for i in shapes)
    assert any(_pipeline_shared.enumerate_optimum(i) is None for i in shapes)  # a cap below one micro-batch
    assert any(i.split_backward and any(i.weight_grad_bytes) for i in shapes)


@pytest.mark.parametrize(("size", "seed"), [(3, 0), (3, 1), (3, 2), (4, 0), (4, 1), (4, 2)])
def test_model_s_matches_model_p_on_the_generator(size, seed):
    """Model P (the MILP, no CP) proves these; both must agree, and lie between the dual bound and
    every heuristic."""
    instance = PROBLEM.generate(seed, size)
    exact, milp = run(PROBLEM, instance, "exact", OPTIONS), run(PROBLEM, instance, "milp", OPTIONS)
    assert exact.solver["name"] == "cp-sat" and milp.solver["name"] == "highs"
    assert exact.status == milp.status == "optimal"
    assert close(exact.objective, milp.objective)
    assert lower_bound(instance) <= exact.objective + 1e-9


def test_model_s_matches_model_p_on_the_shipped_keep_only_files():
    files = [p for p in shipped("pipeline") if p.name.startswith(("0-", "1-"))
             and cpsat.applies(load(p).instance)]
    assert len(files) >= 3
    for path in files:
        instance = load(path).instance
        exact, milp = run(PROBLEM, instance, "exact", OPTIONS), run(PROBLEM, instance, "milp", OPTIONS)
        assert exact.status == "optimal" and exact.check["feasible"], path.name
        if milp.status == "optimal":
            assert close(exact.objective, milp.objective), path.name
        else:  # Model P's incumbent can only be worse, its bound only lower
            assert milp.objective >= exact.objective - 1e-9 and milp.bound <= exact.objective + 1e-9


def test_model_s_applies_only_where_fifo_and_the_grid_lose_nothing():
    base = PROBLEM.generate(0, 3)
    assert cpsat.applies(base)
    assert not cpsat.applies(replace(base, objective="stage_span"))
    assert not cpsat.applies(replace(base, lag_s=2**0.5))  # no common time unit
    assert not cpsat.applies(replace(base, chunks=2))
    recompute = replace(base, allow_recompute=True, recompute_s=(1.0,) * 3,
                        checkpoint_bytes=tuple(a / 4 for a in base.activation_bytes))
    assert not cpsat.applies(recompute)


def test_exact_runs_model_p_where_no_constraint_program_applies():
    """Off a time grid (an irrational lag) neither Model S nor Model M is exact: Model P runs."""
    path = next(p for p in shipped("pipeline") if p.name == "0-p2m3-offload.toml")
    instance = replace(load(path).instance, lag_s=2**0.5 / 10)
    assert not cpsat.applies(instance) and not PROBLEM.runs_exact(instance)
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.solver["name"] == "highs" and report.status == "optimal"
    assert report.model_size  # the MILP's size, as method milp reports it


def test_a_time_limit_returns_the_checked_warm_start_and_a_valid_bound():
    """Size 12 seed 0 takes seconds to prove; cut at once, the answer is a checked schedule no
    better than what the bound allows, and the bound is at least the closed dual bound."""
    instance = PROBLEM.generate(0, 12)
    report = run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9, time_limit=0.05, threads=1))
    assert report.status == "feasible"  # an incumbent, not proven
    assert report.check["feasible"], report.check["violations"]
    assert lower_bound(instance) - 1e-9 <= report.bound <= report.objective + 1e-9
    assert set(report.times) == {"warm_start", "build", "handoff", "solve", "total"}
    assert report.times["build"] > 0 and report.times["total"] >= report.times["solve"]


@pytest.mark.parametrize(("size", "seed"), [(8, 0), (8, 1), (8, 2)])
def test_no_relaxation_cuts_off_an_optimum_only_model_s_proves(size, seed):
    """Size 8 seed 1 is one Model P does not prove in 60 s; Model S does in about a second. Its
    optimum is then the yardstick of every relaxation of the product: the closed bound, the
    one-stage windows R(s, s) and Model P's own bound after a short run (the research relaxations
    are held to it in research/pipeline/tests)."""
    from coopt.problems.pipeline import milp, window
    from coopt.solvers.highs import solve_model

    instance = PROBLEM.generate(seed, size)
    upper, start = _pipeline_shared.incumbent(instance)
    outcome = _pipeline_shared.model_s(instance)  # cpsat.solve(instance, OPTIONS, incumbent=start)
    assert outcome.status == "optimal" and pm.check(instance, outcome.solution) == []
    best = pm.objective(instance, outcome.solution)
    assert lower_bound(instance) <= best + 1e-9
    assert window.lower_bound(instance, upper) <= best + 1e-9
    short = solve_model(milp.build(instance, incumbent=start), SolveOptions(gap=1e-9, time_limit=5, threads=1))
    assert short.bound is not None and short.bound <= best * (1 + 1e-9) + 1e-9
    if short.status == "optimal":
        assert close(short.objective, best)


def test_model_s_is_exact_without_a_warm_start():
    """Without the runner's warm start Model S takes the serial bound as its horizon and no hint;
    the optimum is the same."""
    instance = PROBLEM.generate(0, 4)
    _, start = incumbent(instance)
    warm, cold = cpsat.solve(instance, OPTIONS, incumbent=start), cpsat.solve(instance, OPTIONS)
    assert warm.status == cold.status == "optimal"
    assert close(pm.objective(instance, warm.solution), pm.objective(instance, cold.solution))
