"""Closed forms of coopt.problems.scope.closed_forms against the cost model and a pipeline simulation."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
import sympy as sp

from coopt.problems.scope import closed_forms as forms
from coopt.problems.scope import dp as scope_dp
from coopt.problems.scope import model as scope_model
from coopt.problems.scope.workloads import conv

BOUNDS = {b.name: b for b in forms.BOUNDS}


def simulate(stage_times: list[float], samples: int) -> float:
    done = [0.0] * len(stage_times)
    for _ in range(samples):
        ready = 0.0
        for c, t in enumerate(stage_times):
            done[c] = max(done[c], ready) + t
            ready = done[c]
    return done[-1]


@pytest.mark.parametrize("seed", range(3))
def test_segment_time_form_matches_the_model_on_optimal_mappings(seed):
    inst = scope_model.generate(seed, 2)
    solution = scope_dp.dynamic_program(inst)
    form = BOUNDS["scope.segment_time"]
    total = 0.0
    for seg in solution["segments"]:
        first, last = seg[0]["first"], seg[-1]["last"]
        taus = [scope_model.stage_time(inst, c["first"], c["last"], c["chiplets"], c["partition"],
                                       cut=c["last"] != last) for c in seg]
        value = form.evaluate({
            "b": inst.batch, "k": len(seg), "tau": max(taus),
            "W": scope_model.segment_weight_bytes(inst, first, last),
            "X": scope_model.boundary_bytes(inst, first, last), "B_D": inst.dram_bandwidth,
        })
        overhead = scope_model.segment_overhead(inst, first, last)
        assert simulate(taus, inst.batch) + overhead <= float(value) * (1 + 1e-9)
        total += float(value)
    assert math.isclose(total, solution["objective"], rel_tol=1e-9)


@pytest.mark.parametrize("b,k", [(1, 1), (1, 4), (8, 3), (64, 5)])
def test_bubble_fraction_is_what_the_simulation_loses_with_equal_stages(b, k):
    tau = 1.0
    makespan = simulate([tau] * k, b)
    busy_share = b * tau / makespan
    value = float(BOUNDS["scope.bubble_fraction"].evaluate({"b": b, "k": k}))
    assert math.isclose(value, 1 - busy_share, rel_tol=1e-12, abs_tol=1e-12)


def test_merge_gain_is_never_negative_and_zero_only_for_balanced_clusters():
    expr = BOUNDS["scope.merge_gain"].expr
    a1, a2, t1, t2 = (q.symbol for q in BOUNDS["scope.merge_gain"].inputs)
    # t1 >= t2: gain = a2 (t1 - t2) / (a1 + a2) >= 0, and symmetric otherwise.
    assert sp.simplify(expr.subs(sp.Max(t1, t2), t1) - a2 * (t1 - t2) / (a1 + a2)) == 0
    assert sp.simplify(expr.subs(sp.Max(t1, t2), t2) - a1 * (t2 - t1) / (a1 + a2)) == 0
    for v1, v2 in itertools.product((1e-4, 2e-4, 5e-4), repeat=2):
        value = float(BOUNDS["scope.merge_gain"].evaluate({"a_1": 3, "a_2": 5, "t_1": v1, "t_2": v2}))
        assert value >= 0 and (value == 0) == (v1 == v2)


def test_merge_gain_matches_the_cost_model_for_compute_bound_clusters():
    # Two 1x1 convs whose channel counts (384, 192) every allocation below divides: linear scaling. A huge NoP
    # bandwidth makes both clusters compute-bound, as the lemma assumes.
    layers = [conv("heavy", 256, 384, 14, 14, 1), conv("light", 384, 192, 14, 14, 1)]
    inst = replace(scope_model.module_instance(layers, 8, nop_bandwidth_gbyte_per_s=1e9, sram_kib=1e6),
                   partitions=("IS",))
    for a_1, a_2 in [(1, 1), (2, 6), (3, 3), (4, 4), (6, 2)]:
        t_1 = scope_model.busy_time(inst, 0, 0, a_1, "IS")
        t_2 = scope_model.busy_time(inst, 1, 1, a_2, "IS")
        merged = scope_model.busy_time(inst, 0, 1, a_1 + a_2, "IS")
        value = float(BOUNDS["scope.merge_gain"].evaluate({"a_1": a_1, "a_2": a_2, "t_1": t_1, "t_2": t_2}))
        assert math.isclose(max(t_1, t_2) - merged, value, rel_tol=1e-9, abs_tol=1e-15)
