"""mixnet_plan: the plan's time and checker, the DP against its limits (free and prohibitive
reconfiguration), the policies' guarantees, and the summed / maximum demand claims of the
module docstring."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_mixnet import random_circuits

from coopt.instance import load
from coopt.problem import BoundOutcome, SolveOptions
from coopt.problems.mixnet import exact as mixnet_exact
from coopt.problems.mixnet import plan_bound, plan_exact, plan_polish, plan_search
from coopt.problems.mixnet import plan_heuristics as P
from coopt.problems.mixnet import plan_model as plan
from coopt.problems.mixnet.model import Fabric, throughput
from coopt.problems.mixnet.plan_model import Instance, Layer
from coopt.run import judge, run
from coopt.shipped import shipped

PROBLEM = load(shipped("mixnet_plan")[0]).problem
OPTIONS = SolveOptions(time_limit=60, gap=1e-9)


def two_layers(delay: float, overlap: float = 0.0) -> Instance:
    """Four servers, alpha 1: layer 0 wants circuits 0-1 and 2-3, layer 1 wants 0-2 and 1-3."""
    a = np.zeros((4, 4))
    a[0, 1] = a[1, 0] = a[2, 3] = a[3, 2] = 400.0
    b = np.zeros((4, 4))
    b[0, 2] = b[2, 0] = b[1, 3] = b[3, 1] = 400.0
    for m in (a, b):
        m += 20.0 * (1 - np.eye(4))
    layers = tuple(Layer(f"layer {k}", tuple(tuple(float(v) * 1e6 for v in row) for row in m), 2, overlap)
                   for k, m in enumerate((a, b)))
    return Instance(Fabric(1, 2, 100e9), delay, layers)


def test_the_plan_time_is_its_layers_times_plus_each_segment_start_exposure():
    instance = two_layers(delay=3e-3, overlap=1e-3)
    x = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])
    fabric = instance.fabric
    by_hand = sum(2 / throughput(layer.bits(), x, fabric) for layer in instance.layers) + 2e-3
    assert plan.plan_time(instance, [0], [x]) == pytest.approx(by_hand, rel=1e-12)
    assert plan.plan_time(instance, [0, 1], [x, x]) == pytest.approx(by_hand + 2e-3, rel=1e-12)


def test_free_reconfiguration_gives_each_layer_its_own_optimum():
    instance = two_layers(delay=0.0)
    optimum = run(PROBLEM, instance, "exact", OPTIONS)
    alone = sum(instance.layers[l].all_to_alls
                / mixnet_exact.exact(P.layer_instance(instance, l), OPTIONS).solution["objective"]
                for l in range(2))
    assert optimum.status == "optimal"
    assert optimum.objective == pytest.approx(alone, rel=1e-9)
    assert len(optimum.solution["segments"]) == 2


def test_a_prohibitive_delay_keeps_one_circuit_set():
    instance = two_layers(delay=10.0)
    optimum = run(PROBLEM, instance, "exact", OPTIONS)
    assert len(optimum.solution["segments"]) == 1
    model = plan_exact.plan_milp.build_segment(instance, 0, 1)
    result = plan_exact.solve_model(model, OPTIONS)
    assert optimum.objective == pytest.approx(result.objective + instance.exposed(0), rel=1e-9)


def test_the_optimum_never_falls_as_the_delay_grows():
    values = [run(PROBLEM, two_layers(delay=d, overlap=1e-3), "exact", OPTIONS).objective
              for d in (0.0, 1e-3, 2e-3, 4e-3, 8e-3, 1.0)]
    assert all(a <= b * (1 + 1e-9) for a, b in zip(values, values[1:], strict=False))
    assert values[0] == pytest.approx(values[1], rel=1e-12)  # delta <= overlap: nothing exposed


def test_the_policies_keep_their_promises():
    instance = two_layers(delay=5e-3, overlap=1e-3)
    always = P.always_reconfigure(instance)
    assert [s["first_layer"] for s in always["segments"]] == [0, 1]
    assert len(P.never_reconfigure(instance)["segments"]) == 1
    runtime = P.mixnet_runtime(instance)
    assert runtime["reconfigurations"] == 2
    optimum = run(PROBLEM, instance, "exact", OPTIONS).objective
    for method in P.HEURISTICS:
        report = run(PROBLEM, instance, method, OPTIONS)
        assert report.check["feasible"], (method, report.check["violations"])
        assert report.objective >= optimum * (1 - 1e-9), method
    # the DP's guarantee: no worse than any plan whose segments keep one candidate set, e.g.
    # every layer on its own fill, or one candidate for the whole iteration
    layers = len(instance.layers)
    cheap = P.layer_plans(instance, polish=False)
    every = plan.plan_time(instance, list(range(layers)), cheap)
    one = min(plan.plan_time(instance, [0], [x]) for x in P.candidates(instance))
    assert P.segment_dp(instance)["objective"] <= min(every, one) * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_summed_demand_undercounts_and_the_maximum_overcounts_a_segment(seed):
    rng = np.random.default_rng(seed)
    layers = [rng.random((5, 5)) * 1e9 * (1 - np.eye(5)) for _ in range(3)]
    fabric = Fabric(2, 4, 100e9)
    x = np.zeros((5, 5), dtype=int)
    for i, j in ((0, 1), (2, 3), (1, 4), (0, 3)):
        x[i, j] = x[j, i] = 1
    exact = sum(1 / throughput(m, x, fabric) for m in layers)
    summed = 1 / throughput(sum(layers), x, fabric)
    peak = len(layers) / throughput(np.maximum.reduce(layers), x, fabric)
    assert summed <= exact * (1 + 1e-12) <= peak * (1 + 1e-12)


def test_the_checker_rejects_bad_segments():
    item = load(shipped("mixnet_plan")[0])
    good = P.segment_dp(item.instance)
    assert judge(PROBLEM, item.instance, good)["feasible"]
    cases = {
        "late start": lambda s: s["segments"][0].__setitem__("first_layer", 1),
        "no segments": lambda s: s.__setitem__("segments", []),
        "asymmetric": lambda s: s["segments"][0]["circuits"][0].__setitem__(1, 3),
    }
    for what, change in cases.items():
        broken = json.loads(json.dumps(good))
        change(broken)
        assert not judge(PROBLEM, item.instance, broken)["feasible"], what
    twice = json.loads(json.dumps(good))
    twice["segments"] = [twice["segments"][0], dict(twice["segments"][0])]
    assert not judge(PROBLEM, item.instance, twice)["feasible"]


def test_the_dp_prunes_without_loss_on_the_medium_files():
    """On the medium Mixtral file (8 servers, 8 plan layers, like 1-moe-4layers-8servers-1ms): the
    pruning skips 27 of its 36 segments there (the 1-moe-4 file, 5 of 36, cost ~35 s of segment
    MILPs for less pruning to check)."""
    paths = [p for p in shipped("mixnet_plan") if p.name.startswith("1-mixtral-top2-4layers")]
    assert paths
    for path in paths:
        item = load(path)
        dp = run(PROBLEM, item.instance, "exact", OPTIONS)
        assert dp.status == "optimal"
        assert dp.objective <= run(PROBLEM, item.instance, "segment_dp", OPTIONS).objective * (1 + 1e-9)
        assert dp.objective >= plan_exact.layer_bound(item.instance, OPTIONS) * (1 - 1e-9)


def test_the_generator_makes_forward_then_backward_layers():
    instance = plan.generate(3, 3)
    names = [layer.name for layer in instance.layers]
    assert names == [f"layer {k} forward" for k in range(3)] + [f"layer {k} backward" for k in (2, 1, 0)]
    assert instance.layers[2].demand == instance.layers[3].demand
    assert instance.layers[0].overlap < instance.layers[-1].overlap


def test_the_milp_hands_back_the_plan_whose_time_it_claims_after_a_warm_start():
    """The oracle's seed 666 (3 servers, 3 layers, free reconfiguration): HiGHS 1.16, started from
    the segment DP's plan, reported the optimum 1.52 ms but handed back values that time 1.60 ms.
    The route now re-solves from scratch when the values do not give the claimed objective."""
    from coopt import registry

    problem = registry.get("mixnet_plan")
    instance = problem.oracle.generate(666)
    truth = problem.oracle.solve(instance)
    report = run(problem, instance, "milp", SolveOptions(time_limit=60, gap=1e-9, threads=1, seed=0))
    assert report.status == "optimal" and report.check["feasible"]
    assert report.objective == pytest.approx(truth, rel=1e-9)
    assert report.solution["objective"] == pytest.approx(truth, rel=1e-9)


# -- the registered bound: outer approximation inside the segment DP --------------------------


@pytest.mark.parametrize("seed,size", [(s, n) for n in (1, 2) for s in range(3)])
def test_the_segment_bound_reaches_the_optimum_and_never_cuts_it_off(seed, size):
    instance = plan.generate(seed, size)
    optimum = run(PROBLEM, instance, "exact", OPTIONS)
    assert optimum.status == "optimal"
    outcome = plan_bound.segment_bound(instance, SolveOptions(gap=1e-9))
    assert PROBLEM.bound is plan_bound.segment_bound
    assert isinstance(outcome, BoundOutcome) and outcome.optimal  # no time limit: it ends proven
    found = outcome.value
    assert found <= optimum.objective * (1 + 1e-9)
    assert found >= optimum.objective * (1 - 1e-6)  # proven: the bound is the optimum
    assert found >= plan_exact.bound(instance, SolveOptions()) * (1 - 1e-9)  # the bound it replaces


def test_the_bound_route_reports_the_segment_dp_optimum_as_the_optimum():
    instance = plan.generate(1, 2)
    optimum = run(PROBLEM, instance, "exact", OPTIONS)
    report = run(PROBLEM, instance, "bound", OPTIONS)
    assert optimum.status == "optimal" and report.status == "bound"
    assert report.solver["bound"].startswith("the optimum (segment DP")
    assert report.bound == pytest.approx(optimum.objective, rel=1e-6)


def test_a_segment_bound_stopped_early_stays_valid_and_above_the_per_layer_bound():
    instance = plan.generate(2, 3)
    optimum = run(PROBLEM, instance, "exact", OPTIONS).objective
    early = plan_bound.segment_bound(instance, SolveOptions(time_limit=1e-3))
    assert not isinstance(early, BoundOutcome)  # stopped before any proof: a bare bound
    assert plan_exact.layer_bound(instance, SolveOptions()) * (1 - 1e-9) <= early <= optimum * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_every_pooled_secant_cut_holds_at_integer_circuits(seed):
    """The module's claim: ``T_l >= g(k) + (g(k+1) - g(k)) (x(S) - k)`` at every integer circuit set."""
    instance = plan.generate(seed, 2)
    terms = plan_bound._Terms(instance)
    rng = np.random.default_rng(seed)
    servers, alpha = instance.servers, instance.fabric.alpha
    for layer in range(len(instance.layers)):
        for _ in range(4):
            terms.cuts_at(layer, random_circuits(rng, servers, alpha))
        assert terms.cuts[layer].rows
        for _ in range(20):
            x = random_circuits(rng, servers, alpha)
            time_now = terms.time(layer, x)
            assert time_now * terms.tau == pytest.approx(instance.layer_time(layer, x), rel=1e-9)
            for pairs, numerator, k in terms.cuts[layer].rows:
                y = x[terms.ends[0][pairs], terms.ends[1][pairs]].sum()
                g0, g1 = terms.g(numerator, k), terms.g(numerator, k + 1)
                assert time_now >= (g0 + (g1 - g0) * (y - k)) * (1 - 1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_the_restarts_never_slow_the_segment_dp_plan_down(seed):
    instance = plan.generate(seed, 3)
    base = P.segment_dp(instance)
    restarted = P.segment_dp_restart(instance)
    assert judge(PROBLEM, instance, restarted)["feasible"]
    assert restarted["objective"] <= base["objective"] * (1 + 1e-12)
    assert plan.objective(instance, restarted) == pytest.approx(restarted["objective"], rel=1e-12)


# -- the exact polish of a plan's kept segments ------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_the_exact_polish_reaches_each_segment_optimum_from_empty_circuits(seed):
    """From a plan with no circuits on the restart's segments, the polish (every master proven
    within its budget at this size) is no slower than the restart's own circuits there."""
    instance = plan.generate(seed, 2)
    restart = P.segment_dp_restart(instance)
    starts = [segment["first_layer"] for segment in restart["segments"]]
    empty = plan.solution_of(instance, starts, [np.zeros((instance.servers,) * 2, dtype=int)] * len(starts))
    assert empty["objective"] > restart["objective"]  # the start is worse: the polish has work to do
    polished = plan_polish.exact_polish(instance, empty, seconds=60)
    assert judge(PROBLEM, instance, polished)["feasible"]
    assert polished["objective"] <= restart["objective"] * (1 + 1e-9)
    assert plan.objective(instance, polished) == pytest.approx(polished["objective"], rel=1e-12)


def test_the_exact_polish_is_registered_and_never_slower_than_the_restart():
    instance = plan.generate(1, 3)
    found = run(PROBLEM, instance, "segment_dp_exact", OPTIONS)
    assert PROBLEM.heuristics["segment_dp_exact"] is plan_polish.segment_dp_exact
    assert found.check["feasible"]
    assert found.objective <= P.segment_dp_restart(instance)["objective"] * (1 + 1e-12)


# -- the search over segmentations on a pool of circuit sets ------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_the_pool_search_never_slows_the_restart_down_and_repeats_itself(seed):
    instance = plan.generate(seed, 3)
    found = run(PROBLEM, instance, "segment_pool", OPTIONS)
    assert PROBLEM.heuristics["segment_pool"] is plan_search.segment_pool
    assert found.check["feasible"]
    assert found.objective <= P.segment_dp_restart(instance)["objective"] * (1 + 1e-12)
    again = plan_search.segment_pool(instance)
    assert again["objective"] == found.objective
    assert again["segments"] == found.solution["segments"]


def test_the_moves_merge_two_segments_when_the_delay_outweighs_the_gain():
    """Two layers that want different circuits: with a reconfiguration of 1 s (far above either
    layer's time) one segment is faster than one per layer, and the merge move must find it."""
    instance = two_layers(delay=1.0)
    own = P.layer_plans(instance)
    split = plan.solution_of(instance, [0, 1], own)
    search = plan_search._Search(instance, split)
    starts, circuits = search.moves([0, 1], own)
    merged = plan.solution_of(instance, starts, circuits)
    assert starts == [0]
    assert merged["objective"] < split["objective"] - 0.9  # the second delay is gone
    assert judge(PROBLEM, instance, merged)["feasible"]


def test_the_moves_keep_both_segments_when_reconfiguring_is_free():
    instance = two_layers(delay=0.0)
    own = P.layer_plans(instance)
    search = plan_search._Search(instance, plan.solution_of(instance, [0, 1], own))
    starts, circuits = search.moves([0, 1], own)
    assert starts == [0, 1]
    assert plan.plan_time(instance, starts, circuits) <= plan.plan_time(instance, [0, 1], own) * (1 + 1e-12)
