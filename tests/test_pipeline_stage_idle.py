"""The device warm-up / cool-down bound (``bound.stage_idle``, ``bound.warm_up`` on chunks) and the
``cp_polish`` schedule: never above an optimum found without them (the enumeration oracle on one
chunk, Model O on two chunks in a V), never below the bound they replace, and the LLaMA V value by
hand."""

from __future__ import annotations

import random

import pytest

from coopt import api
from coopt.problem import NoSolution
from coopt.problems.pipeline import bound, brute, oracle_ti
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.heuristics import cp_polish, local_search
from coopt.problems.pipeline.heuristics.polish import _start, keep_only, polish_applies
from tests import _pipeline_shared

GB = pm.GB


def v_instance(seed: int) -> pm.Instance:
    """p = 2, m = 2 or 3, two chunks per device in a V, even integer times (whole per chunk), a cap
    of half to two activations of a device, recompute on half of them (with T_R below T_F too)."""
    rng = random.Random(seed)
    p, m = 2, rng.choice((2, 3))
    split, rec = rng.random() < 0.5, rng.random() < 0.5

    def ints(lo: int, hi: int) -> tuple[float, ...]:
        return tuple(2.0 * rng.randint(lo, hi) for _ in range(p))

    a = tuple(2.0 * rng.randint(1, 3) * GB for _ in range(p))
    return pm.Instance(
        stages=p,
        microbatches=m,
        chunks=2,
        placement="vshape",
        split_backward=split,
        forward_s=ints(1, 3),
        backward_s=ints(1, 3),
        weight_s=ints(1, 2) if split else (0.0,) * p,
        activation_bytes=a,
        weight_grad_bytes=tuple(x * rng.choice((0.0, 0.5)) for x in a) if split else (0.0,) * p,
        memory_cap_bytes=tuple(x * rng.choice((0.5, 1.0, 1.5, 2.0)) for x in a),
        lag_s=float(rng.choice((0, 0, 1))),
        allow_recompute=rec,
        recompute_s=ints(1, 3) if rec else (),
        checkpoint_bytes=tuple(x * rng.choice((0.0, 0.5)) for x in a) if rec else (),
    )


def test_stage_idle_never_exceeds_the_enumerations_optimum():
    """Tiny seeds (one chunk, and two chunks with one micro-batch): at most the enumeration's
    optimum, at least the one-chunk warm-up bound it extends."""
    applied = 0
    for seed in range(80):
        inst = brute.tiny(seed)
        value = bound.stage_idle(inst)
        assert value >= bound.warm_up(inst) - 1e-9, seed
        if value <= 0 or inst.allow_offload:
            continue
        best = _pipeline_shared.optimum(inst)
        if best is None:
            continue
        applied += 1
        assert value <= best + 1e-9, (seed, value, best)
    assert applied >= 15


def test_stage_idle_on_the_v_never_exceeds_model_os_optimum(monkeypatch):
    """Two chunks per device in a V, two or three micro-batches: at most Model O's optimum (a
    time-indexed model that shares nothing with the bound), at least the warm-up bound; and it
    lifts the rest of the dual bound (the bound without the two, as before they covered chunks)
    on some seeds."""
    lifted = 0
    checked = 0
    for seed in range(30):
        inst = v_instance(seed)
        value = bound.stage_idle(inst)
        assert value >= bound.warm_up(inst) - 1e-9, seed
        if not oracle_ti.applies(inst):
            continue
        best = brute.order_encoded_optimum(inst)
        if best is None:
            continue
        checked += 1
        assert value <= best + 1e-9, (seed, value, best)
        assert bound.lower_bound(inst) <= best + 1e-9, seed
        with monkeypatch.context() as patch:
            patch.setattr(bound, "warm_up", lambda _: 0.0)
            patch.setattr(bound, "stage_idle", lambda _: 0.0)
            rest = bound.lower_bound(inst)
        lifted += value > rest + 1e-9
    assert checked >= 15 and lifted >= 3


def test_the_v_llama_value_by_hand():
    """2-llama70b-l64-pp8-m32-v2, device 7 (chunks 7 and 8): its first B is B(8, j), after the
    16 forwards of the V (14 lags) and B(15..9) (7 lags): 16 x 0.0159305 + 7 x 0.016568 + 21 x
    0.0002 = 0.375064 s; before it only forwards, 13 fit the cap (13 x 4.4292 GB <= 59.598 GB),
    0.2070965 s of work; its load is 64 x 0.047792 = 3.058688 s: 3.2266555 s, above the 3.1716 s of
    the other terms."""
    inst = api.load("pipeline/2-llama70b-l64-pp8-m32-v2").instance
    hand = 0.375064 + 3.058688 - 13 * 0.0159305
    assert bound.warm_up(inst) == pytest.approx(hand, abs=1e-9)
    assert bound.stage_idle(inst) >= hand - 1e-9
    assert bound.lower_bound(inst) >= hand - 1e-9


def test_the_one_chunk_llama_value_is_kept():
    """On the one-chunk LLaMA file the bound is at least the warm-up's hand value (3.357 s)."""
    inst = api.load("pipeline/2-llama70b-l64-pp8-m32").instance
    assert bound.stage_idle(inst) >= bound.warm_up(inst) - 1e-9
    assert bound.lower_bound(inst) >= 3.357


@pytest.mark.parametrize("seed", [s for s in range(80) if polish_applies(brute.tiny(s))][:8])
def test_cp_polish_is_checked_never_below_the_optimum_nor_above_its_start(seed):
    """Tiny seeds with recompute (one chunk): a schedule the checker accepts, never below the
    enumeration's optimum, never above its list-schedule start nor ``local_search``; NoSolution
    only where neither finds a schedule."""
    inst = brute.tiny(seed)
    start = _start(keep_only(inst))
    try:
        searched = local_search(inst)["objective"]
    except NoSolution:
        searched = None
    if start is None and searched is None:
        with pytest.raises(NoSolution):
            cp_polish(inst)
        return
    solution = cp_polish(inst)
    assert pm.check(inst, solution) == []
    best = _pipeline_shared.optimum(inst)
    assert best is not None and solution["objective"] >= best - 1e-9
    for other in (start and start["objective"], searched):
        assert other is None or solution["objective"] <= other + 1e-9


def test_the_cool_down_lifts_generator_size_8_seed_1_below_model_ss_optimum(monkeypatch):
    """Keep-only, one chunk: the cool-down lifts the dual bound of the generator's size 8 seed 1
    above the rest of it (the release times' 123), and stays at most Model S's proven optimum
    (``exact``'s route here: Model S from the warm start, solved once for this file and
    tests/test_pipeline_cpsat.py)."""
    from coopt.problems.pipeline import PROBLEM

    inst = PROBLEM.generate(1, 8)
    with monkeypatch.context() as patch:
        patch.setattr(bound, "stage_idle", lambda _: 0.0)
        rest = bound.lower_bound(inst)
    outcome = _pipeline_shared.model_s(inst)
    assert outcome.status == "optimal" and pm.check(inst, outcome.solution) == []
    best = pm.objective(inst, outcome.solution)
    assert rest + 1 <= bound.stage_idle(inst) <= best + 1e-9
    assert bound.lower_bound(inst) <= best + 1e-9
