"""Netcast bounds, each checked by an independent computation: mpmath sums, SymPy series,
brute-force loops and matrices, and seeded Monte-Carlo simulation of the link."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from coopt.problems.netcast.closed_forms import leakage_matrix, simulate_link
from coopt.registry import closed_form as get

KTC_10PF_300K = math.sqrt(1.380649e-23 * 300 * 10e-12) / 1.602176634e-19


def spacing_for(a: float, kappa: float = 5e9, rate: float = 5e9) -> dict[str, float]:
    """Symbol values that give the dimensionless width a = (kappa + R) / (2 Delta)."""
    return {"kappa": kappa, "R": rate, "Delta": (kappa + rate) / (2 * a)}


# -- crosstalk closed forms vs independent sums ----------------------------------------------


@pytest.mark.parametrize("a", [1e-7, 0.01, 0.0636, 0.0637, 0.1, 0.5, 2.0, 7.5])
def test_coth_identity_against_mpmath_nsum(a):
    with mpmath.workdps(40):
        total = 2 * mpmath.nsum(lambda k: 1 / (1 + k**2 / mpmath.mpf(a) ** 2), [1, mpmath.inf])
    assert float(get("netcast.crosstalk_worst").evaluate(spacing_for(a))) == pytest.approx(float(total), rel=1e-11)


def test_sympy_summation_is_unevaluated_or_agrees_with_the_identity():
    a, k = sp.symbols("a k", positive=True)
    result = sp.summation(1 / (1 + k**2 / a**2), (k, 1, sp.oo))
    assert isinstance(result, sp.Sum) or result.has(sp.Sum) or sp.simplify(2 * result - (sp.pi * a * sp.coth(sp.pi * a) - 1)) == 0


@pytest.mark.parametrize("a", [1e-7, 0.05, 0.0636, 0.0637, 0.3, 1.0, 3.0])
def test_rms_closed_form_against_mpmath_nsum(a):
    with mpmath.workdps(40):
        total = 2 * mpmath.nsum(lambda k: 1 / (1 + k**2 / mpmath.mpf(a) ** 2) ** 2, [1, mpmath.inf])
    # Series below pi a = 0.2 (a < 0.0637) and the closed form above agree with nsum to ~1e-11.
    assert float(get("netcast.crosstalk_rms").evaluate(spacing_for(a))) == pytest.approx(math.sqrt(float(total)), rel=1e-10)


def test_small_width_expansions_by_sympy_series():
    a = sp.Symbol("a", positive=True)
    worst = sp.series(sp.pi * a * sp.coth(sp.pi * a) - 1, a, 0, 5).removeO()
    assert sp.simplify(worst - (sp.pi**2 * a**2 / 3 - sp.pi**4 * a**4 / 45)) == 0
    rms2 = sp.series(sp.pi * a / 2 * sp.coth(sp.pi * a) + (sp.pi * a) ** 2 / 2 / sp.sinh(sp.pi * a) ** 2 - 1, a, 0, 6)
    assert sp.simplify(rms2.removeO() - sp.pi**4 * a**4 / 45) == 0  # 2 zeta(4) a^4
    # The research notes' check value: at a = 0.1 the exact sum is 0.03268 vs 0.03290 from the series.
    assert float(get("netcast.crosstalk_worst").evaluate(spacing_for(0.1))) == pytest.approx(0.03268, abs=1e-5)


def test_min_spacing_inverts_the_leading_order_crosstalk():
    eps, width, delta = sp.symbols("epsilon w Delta", positive=True)
    leading = sp.pi**2 / 3 * (width / (2 * delta)) ** 2
    (root,) = sp.solve(sp.Eq(leading, eps), delta)
    bound = get("netcast.min_spacing")
    assert sp.simplify(root - bound.expr.subs(bound.quantity("kappa").symbol + bound.quantity("R").symbol, width)) == 0


@pytest.mark.parametrize("a, n", [(0.2, 1), (0.2, 2), (0.2, 3), (0.7, 9), (1.5, 10), (0.05, 41)])
def test_finite_comb_against_brute_force_loop(a, n):
    half = (n - 1) // 2
    worst = 2 * sum(1 / (1 + k**2 / a**2) for k in range(1, half + 1))
    rms = math.sqrt(2 * sum(1 / (1 + k**2 / a**2) ** 2 for k in range(1, half + 1)))
    values = {**spacing_for(a), "N": n}
    assert float(get("netcast.crosstalk_worst_finite").evaluate(values)) == pytest.approx(worst, abs=1e-15)
    assert float(get("netcast.crosstalk_rms_finite").evaluate(values)) == pytest.approx(rms, abs=1e-15)


def test_finite_comb_tends_to_the_infinite_one():
    values = {**spacing_for(0.4), "N": 4001}
    assert float(get("netcast.crosstalk_worst_finite").evaluate(values)) == pytest.approx(
        float(get("netcast.crosstalk_worst").evaluate(spacing_for(0.4))), rel=1e-3
    )


@pytest.mark.parametrize("a", [0.1, 0.4, 1.0])
def test_calibrated_gain_against_a_large_circulant_inverse(a):
    n = 801  # a ring of channels: the circulant the infinite-comb formula assumes
    index = np.arange(n)
    distance = np.minimum(np.abs(index[:, None] - index[None, :]), n - np.abs(index[:, None] - index[None, :]))
    mixing = 1 / (1 + (distance / a) ** 2)
    inverse = np.linalg.inv(mixing)
    gain = math.sqrt(float(np.sum(inverse[n // 2] ** 2)))
    assert float(get("netcast.calibrated_noise_gain").evaluate(spacing_for(a))) == pytest.approx(gain, rel=1e-3)


# -- Monte-Carlo of the link -----------------------------------------------------------------


def test_crosstalk_monte_carlo_on_random_signed_vectors():
    rng = np.random.default_rng(7)
    a, n, samples = 0.6, 15, 40_000
    mixing = leakage_matrix(a, n)
    data = rng.uniform(-1, 1, size=(n, samples))
    error = (mixing @ data - data)[n // 2]
    values = {**spacing_for(a), "N": n}
    rms = float(get("netcast.crosstalk_rms_finite").evaluate(values))
    # std of a sample std ~ 1/sqrt(2 samples) ~ 0.35 %; allow 5 x that.
    assert error.std() / data.std() == pytest.approx(rms, rel=0.02)
    worst = float(get("netcast.crosstalk_worst_finite").evaluate(values))
    assert np.abs(error).max() <= worst + 1e-12
    assert (mixing @ np.ones(n) - 1)[n // 2] == pytest.approx(worst, rel=1e-12)


@pytest.mark.parametrize("photons, eta, read_noise", [(0.5, 1.0, 0.0), (3.0, 0.8, 40.0), (40.0, 0.9, KTC_10PF_300K)])
def test_receiver_snr_monte_carlo(photons, eta, read_noise):
    rng = np.random.default_rng(11)
    m, samples = 100, 20_000
    estimates = simulate_link(
        np.ones((1, m)), np.ones((m, samples)), photons, a_value=0.1, eta=eta, read_noise=read_noise, rng=rng
    )[0]
    measured = m / estimates.std()
    predicted = float(get("netcast.snr").evaluate({"n": photons, "M": m, "eta": eta, "C": 0.0, "sigma_adc": read_noise}))
    assert measured == pytest.approx(predicted, rel=0.03)  # 3 sigma of the std estimator is ~1.5 %


def test_full_link_monte_carlo_crosstalk_plus_noise():
    """Poisson + Gaussian noise on top of the leakage matrix, all channels at full scale."""
    rng = np.random.default_rng(3)
    a, n, m, photons, read_noise, samples = 0.3, 9, 64, 20.0, 200.0, 20_000
    estimates = simulate_link(
        np.ones((n, m)), np.ones((m, samples)), photons, a_value=a, read_noise=read_noise, rng=rng
    )[n // 2]
    relative_error = (estimates - m) / m
    worst = float(get("netcast.crosstalk_worst_finite").evaluate({**spacing_for(a), "N": n}))
    assert relative_error.mean() == pytest.approx(worst, abs=4 * relative_error.std() / math.sqrt(samples))
    electrons = photons * m * (1 + worst)
    assert relative_error.std() == pytest.approx(math.sqrt(electrons + read_noise**2) / (photons * m), rel=0.03)


def test_calibration_removes_crosstalk_and_amplifies_noise():
    rng = np.random.default_rng(5)
    a, n, m, photons, samples = 0.5, 7, 50, 30.0, 20_000
    weights = rng.uniform(0, 1, size=(n, m))
    activations = rng.uniform(0, 1, size=m)
    ideal = weights @ activations
    estimates = simulate_link(
        weights, np.repeat(activations[:, None], samples, axis=1), photons, a_value=a, read_noise=300.0,
        calibrate=True, rng=rng,
    )
    bias = estimates.mean(axis=1) - ideal
    assert np.all(np.abs(bias) <= 4 * estimates.std(axis=1) / math.sqrt(samples))
    mixing = leakage_matrix(a, n)
    variance = (photons * (mixing @ ideal) + 300.0**2) / photons**2
    predicted = np.sqrt((np.linalg.inv(mixing) ** 2) @ variance)
    np.testing.assert_allclose(estimates.std(axis=1), predicted, rtol=0.04)


# -- detector-noise closed forms -------------------------------------------------------------


def test_research_note_numbers():
    assert float(get("netcast.min_spacing").evaluate({"epsilon": 2**-8})) == pytest.approx(145.1e9, rel=1e-3)
    assert float(get("netcast.max_channels").evaluate({"epsilon": 2**-8})) == 20
    assert float(get("netcast.max_channels").evaluate({"epsilon": 2**-8, "kappa": 10e9, "R": 10e9})) == 10
    assert float(get("netcast.thermal_noise").evaluate({})) == pytest.approx(1270, abs=1)
    assert float(get("netcast.photons_per_mac_shot").evaluate({"b": 4, "M": 784})) == pytest.approx(256 / 784)
    assert float(get("netcast.photons_per_mac_thermal").evaluate({"b": 4, "M": 100})) == pytest.approx(203, rel=2e-3)
    energy = float(get("netcast.energy_per_mac").evaluate({"b": 4, "M": 100}))
    assert 25e-18 < energy < 27e-18


@given(
    b=st.floats(1, 12), m=st.integers(1, 5000), eta=st.floats(0.05, 1), c=st.floats(0, 1e-10),
    adc=st.floats(0, 2000),
)
@settings(max_examples=60, deadline=None)
def test_quadratic_photons_meet_the_target_snr_and_sit_between_the_limits(b, m, eta, c, adc):
    values = {"b": b, "M": m, "eta": eta, "C": c, "sigma_adc": adc}
    n = float(get("netcast.photons_per_mac").evaluate(values))
    snr = float(get("netcast.snr").evaluate({"n": n, "M": m, "eta": eta, "C": c, "sigma_adc": adc}))
    assert snr == pytest.approx(2**b, rel=1e-9)
    shot = float(get("netcast.photons_per_mac_shot").evaluate({"b": b, "M": m, "eta": eta}))
    thermal = float(get("netcast.photons_per_mac_thermal").evaluate(values))
    assert max(shot, thermal) * (1 - 1e-12) <= n <= (shot + thermal) * (1 + 1e-12)


def test_solved_snr_is_the_photon_bound():
    values = {"SNR": 2.0**5, "M": 300, "eta": 0.7, "C": 2e-12, "sigma_adc": 50.0}
    solved = float(get("netcast.snr").evaluate(values, solve_for="n"))
    direct = float(get("netcast.photons_per_mac").evaluate({"b": 5, "M": 300, "eta": 0.7, "C": 2e-12, "sigma_adc": 50.0}))
    assert solved == pytest.approx(direct, rel=1e-12)


# -- monotonicity invariants (research notes section 2(d)) -----------------------------------


def increasing(values: np.ndarray, strict: bool = True) -> bool:
    steps = np.diff(values)
    return bool(np.all(steps > 0) if strict else np.all(steps >= 0))


@given(kappa=st.floats(1e8, 5e10), rate=st.floats(1e8, 5e10), delta=st.floats(2e10, 1e12))
@settings(max_examples=40, deadline=None)
def test_crosstalk_grows_with_widths_and_shrinks_with_spacing(kappa, rate, delta):
    base = {"kappa": kappa, "R": rate, "Delta": delta}
    grid = np.geomspace(0.5, 2, 7)
    # G - 1 ~ (pi a)^4 / 30 falls below double precision for the narrowest combs: non-strict there.
    for name, strict in (("netcast.crosstalk_worst", True), ("netcast.crosstalk_rms", True),
                         ("netcast.calibrated_noise_gain", False)):
        bound = get(name)
        assert increasing(bound.evaluate({**base, "kappa": kappa * grid}), strict)
        assert increasing(bound.evaluate({**base, "R": rate * grid}), strict)
        assert increasing(-bound.evaluate({**base, "Delta": delta * grid}), strict)
    assert increasing(get("netcast.crosstalk_worst_finite").evaluate({**base, "N": np.arange(1, 30, 2)}))


@given(eps=st.floats(1e-6, 0.05), b_opt=st.floats(1e11, 1e13))
@settings(max_examples=40, deadline=None)
def test_spacing_and_channel_count_monotone(eps, b_opt):
    grid = np.geomspace(1, 4, 6)
    assert increasing(-get("netcast.min_spacing").evaluate({"epsilon": eps * grid}))
    assert increasing(get("netcast.max_channels").evaluate({"epsilon": eps, "B_opt": b_opt * grid}), strict=False)


@given(b=st.floats(1, 10), m=st.integers(1, 2000), eta=st.floats(0.05, 0.5), c=st.floats(1e-14, 1e-10))
@settings(max_examples=40, deadline=None)
def test_photons_per_mac_monotone(b, m, eta, c):
    bound = get("netcast.photons_per_mac")
    base = {"b": b, "M": m, "eta": eta, "C": c, "sigma_adc": 10.0}
    grid = np.linspace(1, 2, 6)
    assert increasing(bound.evaluate({**base, "b": b * grid}))
    assert increasing(bound.evaluate({**base, "C": c * grid}))
    assert increasing(bound.evaluate({**base, "T": 300 * grid}))
    assert increasing(bound.evaluate({**base, "sigma_adc": 10.0 * grid}))
    assert increasing(-bound.evaluate({**base, "M": np.arange(m, m + 6)}))
    assert increasing(-bound.evaluate({**base, "eta": eta * grid}))


def test_limit_scalings():
    shot = get("netcast.photons_per_mac_shot")
    thermal = get("netcast.photons_per_mac_thermal")
    assert shot.evaluate({"b": 5}) / shot.evaluate({"b": 4}) == pytest.approx(4)
    assert thermal.evaluate({"b": 5}) / thermal.evaluate({"b": 4}) == pytest.approx(2)
    assert shot.evaluate({"M": 200}) / shot.evaluate({"M": 100}) == pytest.approx(0.5)


@given(n=st.integers(1, 500), m=st.integers(1, 5000))
@settings(max_examples=30, deadline=None)
def test_client_energy_decreases_with_channels_and_readout(n, m):
    bound = get("netcast.client_energy_per_mac")
    assert increasing(-bound.evaluate({"N": np.arange(n, n + 5), "M": m}))
    assert increasing(-bound.evaluate({"N": n, "M": np.arange(m, m + 5)}))


def test_adc_noise_against_a_quantizer_simulation():
    rng = np.random.default_rng(13)
    lsb, capacitance = 0.2 / 2**15, 10e-12
    voltages = rng.uniform(0, 0.2, 200_000)
    error_electrons = (np.round(voltages / lsb) * lsb - voltages) * capacitance / 1.602176634e-19
    predicted = float(get("netcast.adc_noise").evaluate({}))
    assert error_electrons.std() == pytest.approx(predicted, rel=0.01)
    assert predicted == pytest.approx(110, abs=0.5)


@pytest.mark.parametrize("b, m", [(2, 10), (4, 784), (8, 100)])
def test_energy_limits_are_photon_limits_times_photon_energy(b, m):
    photon = 6.62607015e-34 * 299792458.0 / 1550e-9
    for kind in ("shot", "thermal"):
        photons = float(get(f"netcast.photons_per_mac_{kind}").evaluate({"b": b, "M": m}))
        energy = float(get(f"netcast.energy_per_mac_{kind}").evaluate({"b": b, "M": m}))
        assert energy == pytest.approx(photons * photon, rel=1e-12)
