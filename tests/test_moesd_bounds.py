"""MoESD bounds: enumeration, Monte-Carlo routing, SymPy limits and identities, the speedup
model's claimed shape, and the L1 time-model fit against brute-force vertex enumeration."""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coopt.errors import UsageError
from coopt.problems.moesd.closed_forms import (
    QWEN2_57B_A14B,
    best_draft_length,
    greedy_draft_length,
    sd_speedup,
)
from coopt.registry import closed_form as get
from coopt.solvers.fit import fit_time_model

BATCHES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)


def n_act(e, k, t):
    return float(get("moesd.activated_experts").evaluate({"E": e, "K": k, "t": t}))


# -- accepted tokens -------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [Fraction(0), Fraction(1, 3), Fraction(4, 5), Fraction(9, 10)])
@pytest.mark.parametrize("gamma", [0, 1, 3, 6])
def test_accepted_tokens_by_enumerating_the_acceptance_process(alpha, gamma):
    # j drafts accepted (the first rejection stops the round), plus the target's own token.
    expected = sum((j + 1) * alpha**j * (1 - alpha) for j in range(gamma)) + (gamma + 1) * alpha**gamma
    value = float(get("moesd.accepted_tokens").evaluate({"alpha": float(alpha), "gamma": gamma}))
    assert value == pytest.approx(float(expected), rel=1e-12)


def test_accepted_tokens_limit_and_table():
    bound = get("moesd.accepted_tokens")
    alpha, gamma = bound.quantity("alpha").symbol, bound.quantity("gamma").symbol
    assert sp.simplify(sp.limit(bound.expr, alpha, 1) - (gamma + 1)) == 0
    table = bound.evaluate({"alpha": 0.8, "gamma": np.arange(1, 6)})
    np.testing.assert_allclose(table, [1.80, 2.44, 2.952, 3.3616, 3.68928], rtol=1e-12)


@given(alpha=st.floats(0, 0.99), gamma=st.integers(0, 20))
@settings(max_examples=60, deadline=None)
def test_accepted_tokens_invariants(alpha, gamma):
    bound = get("moesd.accepted_tokens")
    value = float(bound.evaluate({"alpha": alpha, "gamma": gamma}))
    assert 1 - 1e-12 <= value <= gamma + 1 + 1e-9
    assert float(bound.evaluate({"alpha": 0.0, "gamma": gamma})) == pytest.approx(1)
    assert float(bound.evaluate({"alpha": alpha, "gamma": gamma + 1})) >= value - 1e-12
    assert float(bound.evaluate({"alpha": min(alpha + 0.005, 0.995), "gamma": gamma})) >= value - 1e-12


# -- activated experts -----------------------------------------------------------------------


@pytest.mark.parametrize("e, k, t", [(5, 2, 3), (6, 3, 2), (4, 1, 4)])
def test_activated_experts_by_exhaustive_enumeration(e, k, t):
    choices = list(itertools.combinations(range(e), k))
    total = Fraction(0)
    for routing in itertools.product(choices, repeat=t):
        total += len(set().union(*routing))
    assert n_act(e, k, t) == pytest.approx(float(total / len(choices) ** t), rel=1e-12)


@pytest.mark.parametrize("e, k, t", [(64, 8, 4), (8, 2, 3), (512, 10, 4), (64, 8, 40)])
def test_activated_experts_monte_carlo(e, k, t):
    rng = np.random.default_rng(23)
    trials = 4000
    counts = np.empty(trials)
    for trial in range(trials):
        picks = np.argsort(rng.random((t, e)), axis=1)[:, :k]  # a uniform top-k subset per token
        counts[trial] = len(np.unique(picks))
    tolerance = 3 * counts.std() / np.sqrt(trials) + 1e-9
    assert abs(counts.mean() - n_act(e, k, t)) <= tolerance


def test_activated_experts_research_note_numbers():
    np.testing.assert_allclose([n_act(64, 8, t) for t in (1, 2, 4, 8, 16, 32)],
                               [8, 15, 26.48, 42.01, 56.44, 63.11], atol=0.01)
    np.testing.assert_allclose([n_act(8, 2, t) for t in (1, 2, 4, 8, 16, 32)],
                               [2, 3.5, 5.47, 7.20, 7.92, 8.00], atol=0.01)
    assert n_act(512, 10, 4) == pytest.approx(38.84, abs=0.01)


@given(e=st.integers(1, 256), data=st.data())
@settings(max_examples=60, deadline=None)
def test_activated_experts_invariants(e, data):
    k = data.draw(st.integers(1, e))
    t = np.arange(0, 40)
    values = get("moesd.activated_experts").evaluate({"E": e, "K": k, "t": t})
    assert values[1] == pytest.approx(k)
    assert np.all(values <= np.minimum(e, t * k) + 1e-9)
    steps = np.diff(values)
    np.testing.assert_allclose(steps, k * (1 - k / e) ** t[:-1], rtol=1e-9, atol=1e-12)
    assert np.all(np.diff(steps) <= 1e-12)  # concave


def test_activated_experts_rejects_k_above_e():
    with pytest.raises(UsageError, match="K <= E"):
        get("moesd.activated_experts").evaluate({"E": 4, "K": 8})


# -- roofline, window, decomposition ---------------------------------------------------------


def test_ridge_and_window_numbers():
    assert float(get("moesd.ridge_tokens").evaluate({})) == pytest.approx(153, abs=0.5)
    assert float(get("moesd.ridge_tokens").evaluate({"F": 989e12, "BW": 3.35e12})) == pytest.approx(295, abs=0.5)
    assert float(get("moesd.batch_window_low").evaluate({"epsilon": 0.05})) == pytest.approx(22.4, abs=0.05)
    assert float(get("moesd.batch_window_high").evaluate({"gamma": 3})) == pytest.approx(8 * 153.016 / 4, rel=1e-4)
    assert float(get("moesd.batch_window_high").evaluate({"gamma": 3, "E": 8, "K": 8})) == pytest.approx(38.25, abs=0.05)


def test_window_limits_in_sympy():
    high = get("moesd.batch_window_high")
    e, k = high.quantity("E").symbol, high.quantity("K").symbol
    assert sp.simplify(high.expr / high.expr.subs(e, k) - e / k) == 0
    low = get("moesd.batch_window_low")
    eps = low.quantity("epsilon").symbol
    ratio = sp.limit(low.expr / (e / k * sp.log(1 / eps)), e, sp.oo)
    assert sp.simplify(sp.expand_log(ratio, force=True)) == 1


def test_window_edge_is_where_the_roofline_turns():
    # At B_hi the routed layer's memory and compute times are equal (all experts loaded).
    b_hi = float(get("moesd.batch_window_high").evaluate({"gamma": 3}))
    layer = get("moesd.expert_layer_time")
    tokens = b_hi * 4
    compute = 2 * tokens * 8 * 3 * 3584 * 2560 / 312e12
    assert float(layer.evaluate({"t": tokens})) == pytest.approx(compute, rel=1e-12)
    assert compute == pytest.approx(64 * 2 * 3 * 3584 * 2560 / 2.039e12, rel=1e-3)


def test_speedup_is_sigma_times_efficiency_times_share():
    bound = get("moesd.speedup")
    s = {q: bound.quantity(q).symbol for q in ("alpha", "gamma", "T_T1", "T_Tg", "T_D", "T_rej")}
    sigma = get("moesd.accepted_tokens").expr
    efficiency = s["T_T1"] / s["T_Tg"]
    share = s["T_Tg"] / (s["gamma"] * s["T_D"] + s["T_Tg"] + s["T_rej"])
    assert sp.simplify(bound.expr - sigma * efficiency * share) == 0


@given(e=st.integers(2, 256), data=st.data(), gamma=st.integers(1, 8))
@settings(max_examples=50, deadline=None)
def test_routed_target_efficiency_bounded_and_unimodal_in_batch(e, data, gamma):
    """The research notes guessed eta non-increasing once B >= B_lo; it is not (it still rises
    towards 1 as both passes saturate). What holds: it rises while verification is memory-bound
    and falls after, with the turn at or before B_hi."""
    k = data.draw(st.integers(1, e - 1))
    bound = get("moesd.routed_target_efficiency")
    b_hi = float(get("moesd.batch_window_high").evaluate({"E": e, "K": k, "gamma": gamma}))
    batches = np.arange(1, 2049)
    eta = bound.evaluate({"E": e, "K": k, "B": batches, "gamma": gamma})
    assert np.all(eta >= 1 / (gamma + 1) - 1e-12) and np.all(eta <= 1 + 1e-12)
    peak = int(np.argmax(eta))
    assert np.all(np.diff(eta[: peak + 1]) >= -1e-12) and np.all(np.diff(eta[peak:]) <= 1e-12)
    assert batches[peak] <= max(b_hi, 1) + 1


# -- the full speedup model ------------------------------------------------------------------


def test_speedup_curve_rises_then_falls_and_peaks_near_the_paper():
    curve = np.array([sd_speedup(b, 3, 0.8).speedup for b in BATCHES])
    peak = int(np.argmax(curve))
    assert 0 < peak < len(BATCHES) - 1
    assert np.all(np.diff(curve[: peak + 1]) > -1e-12) and np.all(np.diff(curve[peak:]) < 1e-12)
    assert 8 <= BATCHES[peak] <= 96  # medium batch
    assert 2.0 <= curve[peak] <= 3.0  # paper: up to 2.29x measured


def test_moe_gains_more_than_dense_at_medium_batch_only():
    dense = replace(QWEN2_57B_A14B, experts=8, active=8)
    assert sd_speedup(1, 3, 0.8, target=dense).speedup > sd_speedup(1, 3, 0.8).speedup
    for batch in (32, 48, 64, 96):
        assert sd_speedup(batch, 3, 0.8).speedup > sd_speedup(batch, 3, 0.8, target=dense).speedup


@given(batch=st.integers(1, 512), gamma=st.integers(1, 8), alpha=st.floats(0, 0.95))
@settings(max_examples=40, deadline=None)
def test_full_model_decomposition_invariants(batch, gamma, alpha):
    point = sd_speedup(batch, gamma, alpha)
    assert 1 / (gamma + 1) - 1e-12 <= point.target_efficiency <= 1 + 1e-12
    assert 0 < point.verify_share <= 1
    assert point.speedup <= point.sigma + 1e-12


def test_best_draft_length_enumeration_and_greedy_agree_on_the_sweep():
    for alpha in (0.6, 0.8, 0.9):
        for batch in BATCHES:
            gamma, best = best_draft_length(batch, alpha, 10)
            assert all(sd_speedup(batch, g, alpha).speedup <= best + 1e-12 for g in range(1, 11))
            assert greedy_draft_length(batch, alpha, 10) == gamma  # S is unimodal in gamma on this sweep


def test_best_draft_length_curve_entry():
    curve = get("moesd.best_draft_length")
    assert float(curve.evaluate({"B": 32, "alpha": 0.8, "Gamma": 8})) == best_draft_length(32, 0.8, 8)[0]


# -- fitting the time model (L1 LP in HiGHS) -------------------------------------------------


def brute_force_l1(times, memory, compute):
    """Vertex enumeration: an L1 optimum with c >= 0 has 3 independent active constraints among
    {residual_i = 0} and {c_j = 0}; try every triple."""
    rows = [np.array([1.0, m, c]) for m, c in zip(memory, compute, strict=True)]
    rhs = list(times)
    rows += [np.eye(3)[j] for j in range(3)]
    rhs += [0.0, 0.0, 0.0]
    best = np.inf
    design = np.column_stack([np.ones_like(memory), memory, compute])
    for triple in itertools.combinations(range(len(rows)), 3):
        matrix = np.array([rows[i] for i in triple])
        if abs(np.linalg.det(matrix)) < 1e-12:
            continue
        coef = np.linalg.solve(matrix, [rhs[i] for i in triple])
        if np.any(coef < -1e-10):
            continue
        best = min(best, float(np.abs(times - design @ coef).sum()))
    return best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sum_fit_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    memory, compute = rng.uniform(0.5, 2, 7), rng.uniform(0.1, 3, 7)
    times = 0.3 + 0.8 * memory + 0.2 * compute + rng.normal(0, 0.1, 7)
    fit = fit_time_model(times, memory, compute)
    assert fit.l1_error == pytest.approx(brute_force_l1(times, memory, compute), abs=1e-7)
    assert fit.l1_error == pytest.approx(float(np.abs(times - fit.predict(memory, compute)).sum()), abs=1e-7)
    assert min(fit.c0, fit.c_mem, fit.c_comp) >= -1e-9


def test_fits_recover_noise_free_coefficients_at_real_scales():
    memory = np.geomspace(1e9, 1e11, 9)  # bytes
    compute = np.geomspace(1e11, 1e15, 9)[::-1].copy()  # FLOPs
    for form in ("sum", "max"):
        if form == "sum":
            times = 2e-3 + memory / 2e12 + compute / 3e14
        else:
            times = 2e-3 + np.maximum(memory / 2e12, compute / 3e14)
        fit = fit_time_model(times, memory, compute, form=form)
        assert fit.c0 == pytest.approx(2e-3, rel=1e-5)
        assert fit.c_mem == pytest.approx(1 / 2e12, rel=1e-5)
        assert fit.c_comp == pytest.approx(1 / 3e14, rel=1e-5)


def test_max_fit_matches_every_labelling():
    rng = np.random.default_rng(4)
    n = 6
    memory, compute = rng.uniform(0.5, 2, n), rng.uniform(0.5, 2, n)
    times = 0.2 + np.maximum(0.7 * memory, 0.6 * compute) + rng.normal(0, 0.05, n)
    fit = fit_time_model(times, memory, compute, form="max")
    # Independent oracle: a fine grid over (c_mem, c_comp) with the exact L1-optimal c0 (a median).
    grid = np.linspace(0, 1.5, 301)
    rest = times - np.maximum(grid[:, None, None] * memory, grid[None, :, None] * compute)
    c0 = np.maximum(np.median(rest, axis=2, keepdims=True), 0.0)
    best = float(np.abs(rest - c0).sum(axis=2).min())
    assert fit.l1_error <= best + 1e-7
    assert fit.l1_error >= best - 0.06  # grid step 0.005 x |X| <= 2 x 6 points bounds the LP's edge
