"""Pipeline schedules on instances small enough to enumerate: Model P (FIFO per pass type) against
brute force over *every* per-device pass order (FIFO or not) and every recompute choice, each
order timed by the ASAP event simulator (optimal for a fixed order: memory of compute passes
depends on the order only), and against the time-indexed Model T."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from coopt.formulations.pipeline import PROBLEM
from coopt.formulations.pipeline import model as pm
from coopt.formulations.pipeline.timeindexed import build_time_indexed, extract_time_indexed
from coopt.problem import SolveOptions, close
from coopt.run import run
from coopt.solvers.highs import solve_model

OPTIONS = SolveOptions(gap=1e-9, time_limit=60)


def toy(
    p: int,
    m: int,
    cap: float | None,
    *,
    rec: bool = False,
    off: bool = False,
    split: bool = True,
    v: int = 1,
    placement: str = "interleaved",
    t: float = 1.0,
) -> pm.Instance:
    """Research instance family I1: unit times (x t), a = 2, a_W = 1, a_c = 0.5, tau = 2."""
    return pm.Instance(
        stages=p,
        microbatches=m,
        chunks=v,
        placement=placement,
        split_backward=split,
        forward_s=(t,) * p,
        backward_s=((1.0 if split else 2.0) * t,) * p,
        weight_s=((t if split else 0.0),) * p,
        activation_gb=(2.0,) * p,
        weight_grad_gb=((1.0 if split else 0.0),) * p,
        memory_cap_gb=None if cap is None else (float(cap),) * p,
        allow_recompute=rec,
        recompute_s=(t,) * p if rec else (),
        checkpoint_gb=(0.5,) * p if rec else (),
        allow_offload=off,
        offload_gb=(2.0,) * p if off else (),
        d2h_s=(2 * t,) * p if off else (),
        h2d_s=(2 * t,) * p if off else (),
    )


def device_orders(instance: pm.Instance, d: int):
    """Every order of device d's passes in which each item's own passes come F, B, W (any other
    order deadlocks); micro-batches of the same type may overtake each other."""
    chains = [
        [(x, k, j) for x in instance.kinds]
        for k in instance.stages_on(d)
        for j in range(instance.microbatches)
    ]
    total = sum(len(c) for c in chains)
    slots = []

    def place(order, heads):
        if len(order) == total:
            slots.append(list(order))
            return
        for n, chain in enumerate(chains):
            if heads[n] < len(chain):
                order.append(chain[heads[n]])
                heads[n] += 1
                place(order, heads)
                heads[n] -= 1
                order.pop()

    place([], [0] * len(chains))
    return slots


def brute_force(instance: pm.Instance) -> float:
    """Least makespan over every order combination and recompute choice that fits the caps."""
    per_device = [device_orders(instance, d) for d in range(instance.stages)]
    items = [(k, j) for k in range(instance.virtual_stages) for j in range(instance.microbatches)]
    mode_sets = [()]
    if instance.allow_recompute:
        mode_sets = [c for n in range(len(items) + 1) for c in itertools.combinations(items, n)]
    best = math.inf
    for combo in itertools.product(*per_device):
        orders = dict(enumerate(combo))
        for chosen in mode_sets:
            modes = dict.fromkeys(chosen, pm.RECOMPUTE)
            try:
                timed = pm.simulate(instance, orders, modes)
            except pm.Deadlock:
                continue
            if all(pk <= instance.cap(d) + 1e-9 for d, pk in enumerate(pm.peaks(instance, timed))):
                best = min(best, timed.makespan(instance))
    return best


CASES = {
    "p2m2-nocap": toy(2, 2, None),
    "p2m2-cap2": toy(2, 2, 2.0),
    "p2m2-cap3": toy(2, 2, 3.0),
    "p3m2-cap2": toy(3, 2, 2.0),
    "p2m2-fused-cap2": toy(2, 2, 2.0, split=False),
    "p2m2-recompute-cap2": toy(2, 2, 2.0, rec=True),
    "p2m2-slow-recompute-cap2": replace(toy(2, 2, 2.0, rec=True), recompute_s=(3.0, 3.0)),
    "p2m1-vshape-cap1.5": toy(2, 1, 1.5, v=2, placement="vshape", t=2.0),  # infeasible
    "p2m1-vshape-cap2": toy(2, 1, 2.0, v=2, placement="vshape", t=2.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_p_matches_brute_force_over_all_orders(name):
    instance = CASES[name]
    report = run(PROBLEM, instance, "exact", OPTIONS)
    best = brute_force(instance)
    if best == math.inf:
        assert report.status == "infeasible"
        return
    assert report.status == "optimal", report.check
    assert report.check["feasible"], report.check["violations"]
    assert close(report.objective, best)


TI_CASES = {
    "p3m2-cap3": toy(3, 2, 3.0),
    "p2m2-recompute-cap2.5": toy(2, 2, 2.5, rec=True),
    "p2m2-offload-cap2": toy(2, 2, 2.0, off=True),
    "p2m2-recompute-offload-cap2.5": toy(2, 2, 2.5, rec=True, off=True),
    "p2m2-vshape-cap2": toy(2, 2, 2.0, v=2, placement="vshape", t=2.0),
    "p2m2-fused-cap2": toy(2, 2, 2.0, split=False),
}


@pytest.mark.parametrize("name", sorted(TI_CASES))
def test_model_p_matches_time_indexed_model(name):
    """Model T has no FIFO restriction, so equality also says FIFO lost nothing here."""
    instance = TI_CASES[name]
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.status == "optimal"
    assert report.check["feasible"], report.check["violations"]
    model = build_time_indexed(instance, math.ceil(report.objective) + 2)
    result = solve_model(model, OPTIONS)
    assert result.status == "optimal"
    solution = extract_time_indexed(model, instance)
    assert pm.check(instance, solution) == []
    assert close(result.objective, report.objective)
    assert close(pm.objective(instance, solution), report.objective)


def test_offload_gap_rule_rejects_too_short_round_trips():
    """With copies longer than any F -> B gap can hold, offload cannot help: the optimum under
    a cap that needs offload is infeasible, and with the cap that fits keep it equals keep-only."""
    instance = toy(2, 2, 2.0, off=True)
    slow = replace(instance, d2h_s=(50.0, 50.0), h2d_s=(50.0, 50.0))
    keep_only = replace(instance, allow_offload=False, offload_gb=(), d2h_s=(), h2d_s=())
    fast = run(PROBLEM, instance, "exact", OPTIONS).objective
    assert close(
        run(PROBLEM, slow, "exact", OPTIONS).objective, run(PROBLEM, keep_only, "exact", OPTIONS).objective
    )
    assert fast <= run(PROBLEM, keep_only, "exact", OPTIONS).objective + 1e-9
