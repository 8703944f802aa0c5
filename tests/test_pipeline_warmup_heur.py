"""The recompute warm-up dispatch behind local_search's second start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.heuristics import combined, warmup

INSTANCES = Path(__file__).resolve().parents[1] / "instances" / "pipeline"
#: Single-chunk instances (the multi-chunk ones take ZB-V's start and have bound = optimum).
CASES = [name for name in sorted(p.name for p in INSTANCES.glob("0-*.toml"))
         if load(INSTANCES / name).instance.chunks == 1]
GENERATED = [(size, seed) for size in (2, 3, 4, 5) for seed in range(3)]
#: The proven optimum of 0-p3m4-recompute (the MILP, `coopt bench pipeline`; docs/pipeline.md).
RECOMPUTE_OPTIMUM = 16.0


def _compiled(instance: pm.Instance) -> schedules.Evaluator:
    return schedules.Evaluator(instance, schedules._one_f_one_b_orders(instance), {})


def _windows(instance: pm.Instance) -> dict[str, Callable[[int], int]]:
    K, m = instance.virtual_stages, instance.microbatches
    return {"1f1b": lambda k: K - k, "zb_h2": lambda k: 2 * (K - k) - 1, "none": lambda k: m}


def _instances():
    for name in CASES:
        yield name, load(INSTANCES / name).instance
    for size, seed in GENERATED:
        yield f"generated-{size}-{seed}", pm.generate(seed, size)


@pytest.mark.parametrize("name, instance", list(_instances()), ids=lambda x: x if isinstance(x, str) else "")
def test_warmup_dispatch_completes_within_the_cap_and_its_windows(name, instance):
    """With 1F1B's, ZB-H2's or no windows and either rank, the dispatch never starves a
    backward of memory (without its finishability rule 0-p3m4-recompute deadlocks on five of
    the six): it returns orders that the checker accepts, FIFO on every lane, with no more
    micro-batches in flight on a stage than its window, and recompute only where allowed."""
    ev = _compiled(instance)
    for wname, window in _windows(instance).items():
        for rank in ((0, 1, 2), (1, 0, 2)):
            got = warmup._warmup_orders(ev, window, rank)
            assert got is not None, (wname, rank)
            orders, modes = got
            assert instance.allow_recompute or not modes
            timed = pm.simulate(instance, orders, modes)
            assert pm.check(instance, pm.to_solution(instance, timed)) == [], (wname, rank)
            for order in orders.values():
                for kind in instance.kinds:
                    for k in range(instance.virtual_stages):
                        lane = [j for x, kk, j in order if x == kind and kk == k]
                        assert lane == sorted(lane)
                for k in {kk for _, kk, _ in order}:
                    inflight = 0
                    for x, kk, _ in order:
                        if kk == k:
                            inflight += (x == "F") - (x == "B")
                            assert inflight <= window(k), (wname, rank, k)
            assert sorted(x for o in orders.values() for x in o) == sorted(instance.passes())


def test_warmup_reaches_the_recompute_optimum():
    """0-p3m4-recompute (cap two kept activations): 1F1B's windows with recompute where the cap
    does not hold them put a third micro-batch in flight on device 0, recompute exactly the two
    of them it cannot keep there and one on device 1, and time at the proven optimum 16, where
    every keep-first start stops at 17."""
    instance = load(INSTANCES / "0-p3m4-recompute.toml").instance
    ev = _compiled(instance)
    orders, modes = warmup._warmup_orders(ev, lambda k: instance.stages - k, schedules.SEARCH_WARMUP_RANK)
    assert set(modes) == {(0, 1), (0, 2), (1, 2)}
    assert [x for x, _, _ in orders[0][:4]] == ["F", "F", "F", "B"]
    timed = pm.simulate(instance, orders, modes)
    assert pm.check(instance, pm.to_solution(instance, timed)) == []
    assert timed.makespan(instance) == pytest.approx(RECOMPUTE_OPTIMUM)
    start = combined._best_of(instance, schedules.SEARCH_STARTS)
    assert start["objective"] > RECOMPUTE_OPTIMUM + 0.5


@pytest.mark.parametrize("name", CASES)
def test_local_search_is_never_worse_than_the_warmup(name):
    """local_search returns a checked schedule no longer than its recompute warm-up start."""
    instance = load(INSTANCES / name).instance
    got = warmup._warmup_orders(_compiled(instance), lambda k: instance.virtual_stages - k,
                                   schedules.SEARCH_WARMUP_RANK)
    warm = pm.simulate(instance, *got).value(instance)
    solution = schedules.local_search(instance, seed=0)
    assert pm.check(instance, solution) == []
    assert solution["objective"] <= warm + 1e-9
