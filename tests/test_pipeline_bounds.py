"""Closed forms of coopt.problems.pipeline.closed_forms against the event simulator and the MILP."""

from __future__ import annotations

import math

import pytest

from coopt.problem import SolveOptions, close
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import closed_forms as forms
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.run import run

BOUNDS = {b.name: b for b in forms.BOUNDS}


def uniform(p, m, t_f, t_b, t_w, *, split=True, v=1, a=2.0, a_w=1.0):
    return pm.Instance(
        stages=p,
        microbatches=m,
        chunks=v,
        split_backward=split,
        forward_s=(t_f,) * p,
        backward_s=(t_b,) * p,
        weight_s=(t_w,) * p,
        activation_bytes=(a,) * p,
        weight_grad_bytes=(a_w if split else 0.0,) * p,
    )


def measured(instance, solution):
    timed, _ = pm.parse(instance, solution)
    busy = sum(instance.duration(x, timed.modes.get(x[1:], pm.KEEP)) for x in timed.start)
    makespan = timed.makespan(instance)
    return makespan, 1 - busy / (instance.stages * makespan), pm.peaks(instance, timed)


@pytest.mark.parametrize(
    ("p", "m", "t_f", "t_bf"), [(4, 8, 1.0, 2.0), (3, 5, 2.0, 3.0), (2, 1, 1.0, 2.0), (8, 16, 1.0, 2.0)]
)
def test_1f1b_and_gpipe_makespan_bubble_and_peaks(p, m, t_f, t_bf):
    instance = uniform(p, m, t_f, t_bf, 0.0, split=False)
    values = {"p": p, "m": m, "T_F": t_f, "T_Bf": t_bf}
    for fn in (schedules.gpipe, schedules.one_f_one_b):
        makespan, bubble, peaks = measured(instance, fn(instance))
        assert close(makespan, BOUNDS["pipeline.makespan_1f1b"].evaluate(values))
        assert close(bubble, BOUNDS["pipeline.bubble_1f1b"].evaluate({"p": p, "m": m}))
    _, _, peaks = measured(instance, schedules.gpipe(instance))
    assert all(close(x / 2.0, BOUNDS["pipeline.peak_gpipe"].evaluate({"m": m})) for x in peaks)
    _, _, peaks = measured(instance, schedules.one_f_one_b(instance))
    for s, x in enumerate(peaks):
        assert close(x / 2.0, BOUNDS["pipeline.peak_1f1b"].evaluate({"p": p, "m": m, "s": s}))


@pytest.mark.parametrize(("p", "v", "m"), [(4, 2, 8), (4, 4, 8), (2, 3, 4), (8, 2, 16)])
def test_interleaved_makespan_bubble_and_peaks(p, v, m):
    instance = uniform(p, m, 1.0, 2.0, 0.0, split=False, v=v)
    makespan, bubble, peaks = measured(instance, schedules.interleaved_one_f_one_b(instance))
    values = {"p": p, "m": m, "v": v, "T_F": 1.0, "T_Bf": 2.0}
    assert close(makespan, BOUNDS["pipeline.makespan_interleaved"].evaluate(values))
    assert close(bubble, BOUNDS["pipeline.bubble_interleaved"].evaluate({"p": p, "m": m, "v": v}))
    for s, x in enumerate(peaks):
        assert close(x / 2.0, BOUNDS["pipeline.peak_interleaved"].evaluate({"p": p, "v": v, "s": s}))


@pytest.mark.parametrize(
    ("p", "m", "t_f", "t_b", "t_w"), [(4, 8, 1.0, 1.0, 1.0), (3, 6, 3.0, 3.0, 2.0), (4, 4, 2.0, 3.0, 1.0)]
)
def test_zb_h1_makespan_and_peaks(p, m, t_f, t_b, t_w):
    instance = uniform(p, m, t_f, t_b, t_w)
    makespan, _, peaks = measured(instance, schedules.zb_h1(instance))
    values = {"p": p, "m": m, "T_F": t_f, "T_B": t_b, "T_W": t_w}
    assert close(makespan, BOUNDS["pipeline.makespan_zbh1"].evaluate(values))
    for s, x in enumerate(peaks):
        assert close(x / 2.0, BOUNDS["pipeline.peak_zbh1"].evaluate({"p": p, "s": s, "alpha_W": 0.5}))


def test_fill_bound_is_below_every_schedule_and_met_by_the_milp():
    p, m = 3, 4
    instance = uniform(p, m, 1.0, 1.0, 1.0)
    fill = BOUNDS["pipeline.fill_lower_bound"].evaluate(
        {"p": p, "m": m, "T_F": 1.0, "T_B": 1.0, "T_W": 1.0, "c": 0.0}
    )
    for fn in schedules.HEURISTICS.values():
        try:
            assert fn(instance)["objective"] >= fill - 1e-9
        except schedules.NoSolution:
            continue
    assert close(run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9)).objective, fill)


def test_milp_reproduces_1f1b_for_fused_uniform_backward():
    p, m = 2, 4
    instance = uniform(p, m, 1.0, 2.0, 0.0, split=False)
    value = BOUNDS["pipeline.makespan_1f1b"].evaluate({"p": p, "m": m, "T_F": 1.0, "T_Bf": 2.0})
    assert close(run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9)).objective, value)


def test_megatron_bytes_match_the_tensor_count():
    """Korthikanti et al.'s per-layer inventory (16-bit tensors, 1-byte masks), t = 1."""
    seq, b, h, heads = 2048, 2, 4096, 32
    sbh, as2b = seq * b * h, heads * seq * seq * b
    attention = (
        2 * sbh + 4 * sbh + 2 * as2b + as2b + 2 * as2b + 2 * sbh + 2 * sbh + sbh
    )  # QKV in, Q K, softmax,
    mlp = 2 * sbh + 8 * sbh + 8 * sbh + sbh  # mask, dropout out, V, proj in, mask; MLP in, GeLU in/out, mask
    norms = 2 * 2 * sbh
    counted = attention + mlp + norms
    value = BOUNDS["pipeline.megatron_activation_bytes"].evaluate(
        {"seq": seq, "b": b, "h": h, "a_h": heads, "t": 1}
    )
    assert close(value, counted)
    full = BOUNDS["pipeline.megatron_full_recompute_bytes"].evaluate({"seq": seq, "b": b, "h": h, "t": 1})
    assert close(full, 2 * sbh)


def test_largest_model_matches_a_search_with_the_simulated_peak():
    """L_max from the closed form equals the largest L whose per-device memory (with the peak the
    simulator measures for 1F1B on device 0) fits the HBM."""
    p, t, beta, p_layer, a_dev, hbm, reserve = 8, 8, 18, 855_654_400, 1.11e9, 80e9, 5e9
    instance = uniform(p, 2 * p, 1.0, 2.0, 0.0, split=False, a=1.0)
    n_x = max(measured(instance, schedules.one_f_one_b(instance))[2])  # micro-batches on device 0
    found = max(L for L in range(1, 2000) if (L / p) * (beta * p_layer / t + n_x * a_dev) + reserve <= hbm)
    value = BOUNDS["pipeline.largest_model_layers"].evaluate(
        {
            "p": p,
            "HBM": hbm,
            "R": reserve,
            "beta": beta,
            "P_layer": p_layer,
            "t": t,
            "n_X": n_x,
            "A_dev": a_dev,
        }
    )
    assert math.floor(value) == found
