"""Netcast: crosstalk and detector-noise limits of WDM time-frequency optical inference.

Source: R. Hamerly, A. Sludds, S. Bandyopadhyay, Z. Chen, Z. Zhong, L. Bernstein, D. Englund,
"Netcast: low-power edge computing with WDM-defined optical neural networks", arXiv 2207.01777.

System (as the paper describes it): a server writes weight ``w_nm`` on wavelength channel ``n``
(of ``N``) in time slot ``m`` (of ``M``) and broadcasts the light; the client modulates all
channels at once with activation ``x_m``, demultiplexes, and time-integrates each channel, so
detector ``n`` reads ``y_n = sum_m w_nm x_m``.

Crosstalk. The demux filter is a Lorentzian of FWHM ``kappa``; a symbol-rate-``R`` signal is
approximated by a unit-area Lorentzian of FWHM ``R``. A Lorentzian convolved with a Lorentzian is a
Lorentzian whose widths add, so the channel ``k`` spacings ``Delta`` away leaks into a detector in
the ratio ``r_k = 1 / (1 + k^2/a^2)`` to the own channel, with ``a = (kappa + R) / (2 Delta)``. The
worst case (all neighbours at full scale) of an infinite comb is

    eps_xt = sum_{k != 0} r_k = pi a coth(pi a) - 1,

the partial-fraction (Mittag-Leffler) expansion of coth, which SymPy leaves as an unevaluated Sum;
tests verify it with mpmath's ``nsum``. With zero-mean independent channel data of equal spread the
error is random, of relative rms ``sqrt(sum_{k != 0} r_k^2)``, whose infinite-comb sum is again a
closed form (the derivative of the coth expansion). Crosstalk is a fixed linear mixing ``C``; once
calibrated away by applying ``C^-1`` it leaves only noise amplification, whose infinite-comb gain
follows from the circulant symbol ``c(theta) = pi a cosh(a (pi - theta)) / sinh(pi a)``:
``G^2 = (1/2pi) int c^-2 = sinh^2(pi a) tanh(pi a) / (pi a)^3``.

Detector noise. An integrating receiver collects ``S = eta n M`` electrons at full scale (``n``
photons per MAC); its noise variance is ``S`` (shot) + ``k_B T C / q^2`` (kTC reset noise of the
integrator) + ``sigma_adc^2`` (read-out/ADC), so ``SNR = S / sqrt(S + sigma^2)``. We take
``SNR = 2^b`` for ``b`` bits (one convention used everywhere). Solving the quadratic gives the photons
per MAC for a target precision; its shot-limited and thermal-limited limits are ``4^b / (eta M)``
and ``2^b sigma / (eta M)``.

[reconstructed] The research notes (research-lightcode-netcast.md section 2) could read only the
paper's abstract; every formula here is derived from first principles with the ingredients the paper
names (Lorentzian demux, spacing, symbol rate, shot and thermal noise, integration) and checked
against independent computation and Monte-Carlo simulation, not transcribed. The exact prefactors
in the paper may differ. The calibrated-noise gain is our own derivation.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from coopt.closed_forms import Bound, Quantity

SOURCE = "Hamerly et al., Netcast, arXiv 2207.01777 (bounds reconstructed from first principles)"

#: CODATA 2018 exact values.
BOLTZMANN = 1.380649e-23  # J/K
ELEMENTARY_CHARGE = 1.602176634e-19  # C
PLANCK = 6.62607015e-34  # J s
LIGHT_SPEED = 299792458.0  # m/s

# -- symbols ---------------------------------------------------------------------------------

kappa = Quantity("kappa", "demux filter FWHM (ring: optical frequency / Q)", "Hz", default=5e9,
                 latex=r"\kappa")
rate = Quantity("R", "symbol rate", "Hz", default=5e9)
spacing = Quantity("Delta", "WDM channel spacing", "Hz", default=100e9, latex=r"\Delta")
channels = Quantity("N", "WDM channels (outputs per pass)", "1", "positive_integer", default=21)
tolerance = Quantity("epsilon", "tolerated worst-case relative crosstalk error", "1", "open_unit",
                     default=2.0**-8, latex=r"\varepsilon")
bandwidth = Quantity("B_opt", "usable optical bandwidth", "Hz", default=3e12)
readout = Quantity("M", "MACs integrated per readout (input length)", "1", "positive_integer", default=100)
efficiency = Quantity("eta", "detector quantum efficiency", "1", "efficiency", default=1.0, latex=r"\eta")
photons = Quantity("n", "photons per MAC at full scale", "1", default=1.0)
bits = Quantity("b", "target bits of precision (SNR = 2^b)", "bit", default=4.0)
capacitance = Quantity("C", "integrator capacitance", "F", "nonnegative", default=10e-12)
temperature = Quantity("T", "receiver temperature", "K", default=300.0)
adc_noise = Quantity("sigma_adc", "read-out (ADC) noise", "electrons", "nonnegative", default=0.0,
                     latex=r"\sigma_{\mathrm{adc}}")
photon_energy = Quantity("h_nu", "photon energy (1550 nm: 1.2816e-19 J)", "J",
                         default=PLANCK * LIGHT_SPEED / 1550e-9, latex=r"h\nu")
lsb_voltage = Quantity("V_lsb", "ADC volts per code (0.2 V / 2^15 in the field trial's digitizer)", "V",
                       default=0.2 / 2**15, latex=r"V_{\mathrm{lsb}}")
symbol_energy = Quantity("E_x", "client energy per activation symbol (DAC + modulator drive)", "J",
                         default=1e-12)
readout_energy = Quantity("E_read", "client energy per readout (reset + ADC + digital)", "J", default=1e-12)

a = (kappa.symbol + rate.symbol) / (2 * spacing.symbol)
width = sp.pi * (kappa.symbol + rate.symbol)
k = sp.Symbol("k", integer=True, positive=True)
k_B = sp.Symbol("k_B", positive=True)
q_e = sp.Symbol("q", positive=True)
CONSTANTS = {k_B: BOLTZMANN, q_e: ELEMENTARY_CHARGE}
kTC_electrons2 = k_B * temperature.symbol * capacitance.symbol / q_e**2
read_noise2 = kTC_electrons2 + adc_noise.symbol**2
snr_target = 2**bits.symbol
signal = efficiency.symbol * photons.symbol * readout.symbol


def _small_width_safe(exact: sp.Expr, series: sp.Expr) -> sp.Expr:
    """``exact`` in ``x = pi a``, switched to its Taylor series below x = 0.2, where ``exact``
    starts losing digits to cancellation; both are good to ~1e-12 relative at the switch."""
    x = sp.Symbol("x", positive=True)
    return sp.Piecewise((series, x < sp.Rational(1, 5)), (exact, True)).subs(x, sp.pi * a)


_x = sp.Symbol("x", positive=True)
#: sum_{k != 0} r_k and sum_{k != 0} r_k^2 as functions of x = pi a, and their series at 0.
WORST_SUM = _small_width_safe(
    _x * sp.coth(_x) - 1,
    _x**2 / 3 - _x**4 / 45 + 2 * _x**6 / 945 - _x**8 / 4725 + 2 * _x**10 / 93555,
)
SQUARED_SUM = _small_width_safe(
    _x / 2 * sp.coth(_x) + _x**2 / 2 / sp.sinh(_x) ** 2 - 1,
    _x**4 / 45 - 4 * _x**6 / 945 + _x**8 / 1575 - 8 * _x**10 / 93555 + 1382 * _x**12 / 127702575,
)

#: The calibrated-noise gain: its series keeps G - 1 ~ x^4/30 exact where G rounds to 1.
CALIBRATED_GAIN = _small_width_safe(
    sp.sinh(_x) * sp.sqrt(sp.tanh(_x) / _x**3),
    1 + _x**4 / 30 - 2 * _x**6 / 189 + 7 * _x**8 / 1800 - _x**10 / 693 + 503663 * _x**12 / 928746000,
)


def leakage(a_value: float, k_value: int | np.ndarray) -> float | np.ndarray:
    """``r_k = c_k / c_0``: the share of channel ``k`` spacings away relative to the own channel."""
    return 1.0 / (1.0 + (np.asarray(k_value, dtype=float) / a_value) ** 2)


def leakage_matrix(a_value: float, n_channels: int) -> np.ndarray:
    """The ``N x N`` mixing ``C`` (unit diagonal): ``C[j, i] = r_{|j - i|}``."""
    index = np.arange(n_channels)
    return leakage(a_value, index[:, None] - index[None, :])


def simulate_link(
    weights: np.ndarray,
    activations: np.ndarray,
    photons_per_mac: float,
    *,
    a_value: float,
    eta: float = 1.0,
    read_noise: float = 0.0,
    calibrate: bool = False,
    rng: np.random.Generator,
) -> np.ndarray:
    """One Monte-Carlo pass of the link; returns the client's estimates of ``y = W x``.

    ``weights`` (N x M) and ``activations`` (M, or M x samples) are intensities in [0, 1]. The
    detector of channel ``j`` integrates ``n * sum_i C[j, i] y_i`` photons; it counts them as
    Poisson electrons with efficiency ``eta`` plus Gaussian read noise, and rescales to ``y``
    units. With ``calibrate`` the client applies ``C^-1`` to the readings.
    """
    mixing = leakage_matrix(a_value, weights.shape[0])
    ideal = weights @ activations
    mean_electrons = eta * photons_per_mac * (mixing @ ideal)
    electrons = rng.poisson(mean_electrons) + rng.normal(0.0, read_noise, size=mean_electrons.shape)
    estimate = electrons / (eta * photons_per_mac)
    return np.linalg.solve(mixing, estimate) if calibrate else estimate


# -- crosstalk -------------------------------------------------------------------------------

max_channels = Quantity("N_max", "maximum channel count", "1", "nonnegative_integer", latex=r"N_{\max}")
snr = Quantity("SNR", "full-scale signal-to-noise ratio", "1", default=16.0)
crosstalk = Quantity("epsilon_xt", "worst-case relative crosstalk error", "1", "nonnegative",
                     latex=r"\varepsilon_{\mathrm{xt}}")
crosstalk_rms = Quantity("epsilon_rms", "rms crosstalk error relative to the per-channel data spread", "1",
                         "nonnegative", latex=r"\varepsilon_{\mathrm{rms}}")
LORENTZ = (
    "demux filter and signal spectrum are Lorentzians (widths add on convolution)",
    "equally spaced channels, identical filters",
)

BOUNDS = [
    Bound(
        name="netcast.crosstalk_worst",
        summary="worst-case crosstalk of an infinite WDM comb: pi a coth(pi a) - 1, a = (kappa+R)/(2 Delta)",
        source=SOURCE,
        output=crosstalk,
        inputs=(kappa, rate, spacing),
        expr=sp.pi * a * sp.coth(sp.pi * a) - 1,
        stable=WORST_SUM,
        assumptions=(*LORENTZ, "all neighbours at full scale (worst case)"),
        notes="sum_{k in Z, k != 0} 1/(1 + k^2/a^2) = pi a coth(pi a) - 1 (Mittag-Leffler expansion of "
        "coth; SymPy leaves the Sum unevaluated, the tests check it with mpmath nsum). Small a: "
        "(pi^2/3) a^2.",
    ),
    Bound(
        name="netcast.crosstalk_worst_finite",
        summary="worst-case crosstalk on the centre channel of an N-channel comb",
        source=SOURCE,
        output=crosstalk,
        inputs=(kappa, rate, spacing, channels),
        expr=2 * sp.Sum(1 / (1 + k**2 / a**2), (k, 1, sp.floor((channels.symbol - 1) / 2))),
        assumptions=(*LORENTZ, "all neighbours at full scale", "centre channel (edges see about half)"),
    ),
    Bound(
        name="netcast.crosstalk_rms",
        summary="rms crosstalk error of an infinite comb for independent zero-mean channel data",
        source=SOURCE,
        output=crosstalk_rms,
        inputs=(kappa, rate, spacing),
        expr=sp.sqrt(sp.pi * a / 2 * sp.coth(sp.pi * a) + (sp.pi * a) ** 2 / 2 / sp.sinh(sp.pi * a) ** 2 - 1),
        stable=sp.sqrt(SQUARED_SUM),
        assumptions=(*LORENTZ, "channel outputs independent, zero mean, equal spread s_y"),
        notes="sum_{k != 0} 1/(1 + k^2/a^2)^2 = (pi a/2) coth(pi a) + (pi a)^2/(2 sinh^2(pi a)) - 1 "
        "(derivative in a of the coth expansion). Small a: pi^2 a^2 / sqrt(45). The error std is "
        "epsilon_rms * s_y.",
    ),
    Bound(
        name="netcast.crosstalk_rms_finite",
        summary="rms crosstalk error on the centre channel of an N-channel comb",
        source=SOURCE,
        output=crosstalk_rms,
        inputs=(kappa, rate, spacing, channels),
        expr=sp.sqrt(2 * sp.Sum(1 / (1 + k**2 / a**2) ** 2, (k, 1, sp.floor((channels.symbol - 1) / 2)))),
        assumptions=(*LORENTZ, "channel outputs independent, zero mean, equal spread", "centre channel"),
    ),
    Bound(
        name="netcast.crosstalk_bits",
        summary="bits of precision left by uncalibrated worst-case crosstalk: -log2(eps_xt)",
        source=SOURCE,
        output=Quantity("b_xt", "bits of precision under worst-case crosstalk", "bit", "real"),
        inputs=(kappa, rate, spacing),
        expr=-sp.log(sp.pi * a * sp.coth(sp.pi * a) - 1, 2),
        stable=-sp.log(WORST_SUM, 2),
        assumptions=(*LORENTZ, "precision counted as one LSB = eps_xt (use epsilon = 2^-(b+1) for half-LSB)"),
    ),
    Bound(
        name="netcast.min_spacing",
        summary="smallest channel spacing whose worst-case crosstalk stays below epsilon (small-a form)",
        source=SOURCE,
        output=Quantity("Delta_min", "minimum channel spacing", "Hz", latex=r"\Delta_{\min}"),
        inputs=(kappa, rate, tolerance),
        expr=sp.pi * (kappa.symbol + rate.symbol) / (2 * sp.sqrt(3 * tolerance.symbol)),
        assumptions=(*LORENTZ, "small a: eps_xt ~ (pi^2/3) a^2 (1% accurate below eps ~ 0.03)"),
    ),
    Bound(
        name="netcast.max_channels",
        summary="most WDM channels that fit in B_opt at crosstalk tolerance epsilon",
        source=SOURCE,
        output=max_channels,
        inputs=(bandwidth, kappa, rate, tolerance),
        expr=sp.floor(2 * sp.sqrt(3 * tolerance.symbol) * bandwidth.symbol
                      / (sp.pi * (kappa.symbol + rate.symbol))),
        assumptions=(*LORENTZ, "small-a spacing Delta_min", "N_max = floor(B_opt / Delta_min)"),
        solved={
            "B_opt": max_channels.symbol * width / (2 * sp.sqrt(3 * tolerance.symbol)),
            "epsilon": (max_channels.symbol * width / (2 * bandwidth.symbol)) ** 2 / 3,
        },
        notes="Solved for B_opt: the bandwidth N_max channels need; for epsilon: the crosstalk they cost. "
        "Max MAC rate = N_max R.",
    ),
    Bound(
        name="netcast.calibrated_noise_gain",
        summary="noise amplification after calibrating crosstalk out with C^-1 (infinite comb)",
        source=SOURCE + "; gain derived here",
        output=Quantity("G", "rms noise gain of C^-1 on white detector noise", "1", latex="G"),
        inputs=(kappa, rate, spacing),
        expr=sp.sinh(sp.pi * a) * sp.sqrt(sp.tanh(sp.pi * a) / (sp.pi * a) ** 3),
        stable=CALIBRATED_GAIN,
        assumptions=(*LORENTZ, "C known exactly and inverted", "white detector noise, equal on all channels"),
        notes="C is circulant on an infinite comb with symbol pi a cosh(a(pi - theta))/sinh(pi a); "
        "G^2 = mean of 1/symbol^2 over theta = sinh^2(pi a) tanh(pi a)/(pi a)^3. G -> 1 as a -> 0 and "
        "grows like e^(pi a) as channels overlap.",
    ),
    # -- detector noise ----------------------------------------------------------------------
    Bound(
        name="netcast.thermal_noise",
        summary="kTC reset noise of the integrating capacitor, in electrons",
        source=SOURCE,
        output=Quantity("sigma_th", "thermal (kTC) read noise", "electrons", latex=r"\sigma_{\mathrm{th}}"),
        inputs=(capacitance, temperature),
        constants=CONSTANTS,
        expr=sp.sqrt(kTC_electrons2),
        assumptions=("integrator reset noise dominates the thermal noise",),
    ),
    Bound(
        name="netcast.adc_noise",
        summary="quantization noise of the ADC reading the integrator, in electrons: V_lsb C / (q sqrt 12)",
        source=SOURCE,
        output=Quantity("sigma_q", "ADC quantization noise", "electrons", latex=r"\sigma_q"),
        inputs=(lsb_voltage, capacitance),
        expr=lsb_voltage.symbol * capacitance.symbol / (q_e * sp.sqrt(12)),
        constants=CONSTANTS,
        assumptions=("uniform quantization error of one LSB", "the ADC reads the integrator voltage Q/C"),
        notes="IVC102 (10 pF) read at 0.2 V / 2^15 per code: ~110 e-; use it as sigma_adc.",
    ),
    Bound(
        name="netcast.snr",
        summary="full-scale SNR of an integrating receiver: shot + kTC + ADC noise",
        source=SOURCE,
        output=snr,
        inputs=(photons, readout, efficiency, capacitance, temperature, adc_noise),
        constants=CONSTANTS,
        expr=signal / sp.sqrt(signal + read_noise2),
        assumptions=("w = x = 1 (full scale)", "Poisson shot noise, Gaussian kTC and ADC noise"),
        solved={"n": (snr.symbol**2 + snr.symbol * sp.sqrt(snr.symbol**2 + 4 * read_noise2))
                / (2 * efficiency.symbol * readout.symbol)},
    ),
    Bound(
        name="netcast.photons_per_mac",
        summary="photons per MAC for b bits (SNR = 2^b): general quadratic solution",
        source=SOURCE,
        output=Quantity("n_min", "photons per MAC needed", "1"),
        inputs=(bits, readout, efficiency, capacitance, temperature, adc_noise),
        constants=CONSTANTS,
        expr=(snr_target**2 + snr_target * sp.sqrt(snr_target**2 + 4 * read_noise2))
        / (2 * efficiency.symbol * readout.symbol),
        assumptions=("SNR = 2^b at full scale", "shot + kTC + ADC noise"),
        notes="Lies between max(shot-only, thermal-only) and their sum.",
    ),
    Bound(
        name="netcast.photons_per_mac_shot",
        summary="photons per MAC for b bits when shot noise dominates: 4^b / (eta M)",
        source=SOURCE,
        output=Quantity("n_shot", "photons per MAC, shot-limited", "1"),
        inputs=(bits, readout, efficiency),
        expr=snr_target**2 / (efficiency.symbol * readout.symbol),
        assumptions=("no read noise (single-photon or ideal integrating detector)",),
        notes="Below one photon per MAC once M > 4^b / eta.",
    ),
    Bound(
        name="netcast.photons_per_mac_thermal",
        summary="photons per MAC for b bits when read noise dominates: 2^b sigma / (eta M)",
        source=SOURCE,
        output=Quantity("n_thermal", "photons per MAC, thermal-limited", "1"),
        inputs=(bits, readout, efficiency, capacitance, temperature, adc_noise),
        constants=CONSTANTS,
        expr=snr_target * sp.sqrt(read_noise2) / (efficiency.symbol * readout.symbol),
        assumptions=("read noise sigma^2 = kTC/q^2 + sigma_adc^2 dominates shot noise",),
    ),
    Bound(
        name="netcast.energy_per_mac",
        summary="optical energy per MAC at the client for b bits: n_min h nu",
        source=SOURCE,
        output=Quantity("E_opt", "optical energy per MAC", "J", latex=r"E_{\mathrm{opt}}"),
        inputs=(bits, readout, efficiency, capacitance, temperature, adc_noise, photon_energy),
        constants=CONSTANTS,
        expr=photon_energy.symbol * (snr_target**2 + snr_target * sp.sqrt(snr_target**2 + 4 * read_noise2))
        / (2 * efficiency.symbol * readout.symbol),
        assumptions=("SNR = 2^b at full scale", "shot + kTC + ADC noise"),
    ),
    Bound(
        name="netcast.energy_per_mac_shot",
        summary="optical energy per MAC for b bits when shot noise dominates: 4^b h nu / (eta M)",
        source=SOURCE,
        output=Quantity("E_shot", "optical energy per MAC, shot-limited", "J", latex=r"E_{\mathrm{shot}}"),
        inputs=(bits, readout, efficiency, photon_energy),
        expr=photon_energy.symbol * snr_target**2 / (efficiency.symbol * readout.symbol),
        assumptions=("no read noise",),
    ),
    Bound(
        name="netcast.energy_per_mac_thermal",
        summary="optical energy per MAC for b bits when read noise dominates: 2^b sigma h nu / (eta M)",
        source=SOURCE,
        output=Quantity("E_thermal", "optical energy per MAC, thermal-limited", "J",
                        latex=r"E_{\mathrm{thermal}}"),
        inputs=(bits, readout, efficiency, capacitance, temperature, adc_noise, photon_energy),
        constants=CONSTANTS,
        expr=photon_energy.symbol * snr_target * sp.sqrt(read_noise2) / (efficiency.symbol * readout.symbol),
        assumptions=("read noise sigma^2 = kTC/q^2 + sigma_adc^2 dominates shot noise",),
    ),
    Bound(
        name="netcast.client_energy_per_mac",
        summary="client electrical energy per MAC: symbol energy shared by N channels, readout by M MACs",
        source=SOURCE,
        output=Quantity("E_client", "client electrical energy per MAC", "J", latex=r"E_{\mathrm{client}}"),
        inputs=(symbol_energy, channels, readout_energy, readout),
        expr=symbol_energy.symbol / channels.symbol + readout_energy.symbol / readout.symbol,
        assumptions=("one broadband modulator drives all N channels", "one readout per M integrated MACs"),
        notes="Default E_x and E_read (1 pJ) are illustrative, not the paper's. Decreases in N and M.",
    ),
]

