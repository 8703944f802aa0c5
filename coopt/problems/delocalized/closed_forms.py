"""Delocalized photonic deep learning: energy per MAC and the accuracy-vs-energy curve.

Source: A. Sludds et al., "Delocalized photonic deep learning on the internet's edge", Science 378,
270 (2022), doi 10.1126/science.abq8271 (arXiv 2203.05466); figure data and constants from the
public repository alexsludds/Delocalized_Photonic_Deep_Learning_on_the_Internets_Edge (read by the
research notes, research-lightcode-netcast.md section 3; numbers quoted with that citation).

Same dataflow as Netcast (:mod:`coopt.problems.netcast.closed_forms`). The client's optical energy per
MAC is ``E = n h nu`` for ``n`` photons per MAC. With a time-integrating receiver that sums ``M``
MACs per readout, the integrator codes convert to energy as

    E = (Delta_code / M) V_lsb C h nu / q,

(code step times LSB voltage times capacitance is charge; over ``q`` it is electrons = photons at
unit efficiency). The receiver's read noise ``sigma_e`` relative to the full-scale integrated signal
is ``dd = sigma_e / (n M)``, and the network's noise tolerance map (accuracy of the 784-100-100-10
MLP with 4-bit weights as a function of ``dd``, from the repo's ``acc_storage.npy``) turns that into
accuracy. With one effective ``sigma_e ~ 520`` electrons (fitted by the research notes to the repo's
M = 100 simulation; it absorbs shot noise and is not the 10 pF kTC value) this reproduces the repo's
simulated accuracy-vs-energy curve within 10 %.

Without integration (single-photon detectors) the output of a neuron of fan-in ``M`` is a Poisson
count of mean ``eta n M mu`` (``mu`` the mean weight-activation product), so its relative error is
``1 / sqrt(eta n M mu)``: below one photon per MAC still gives a usable signal when ``M`` is large
(the sub-photon regime; the paper reports 93 % accuracy at under one photon per MAC).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from coopt.closed_forms import Bound, Curve, Quantity
from coopt.errors import UsageError

SOURCE = (
    "Sludds et al., Science 378:270 (2022); "
    "repo alexsludds/Delocalized_Photonic_Deep_Learning_on_the_Internets_Edge"
)
ELEMENTARY_CHARGE = 1.602176634e-19  # C

#: Network noise-tolerance map (repo ``Figure 4/acc_storage.npy`` via the research notes, section
#: 3(c)): normalized read noise dd -> MNIST accuracy of the 784-100-100-10 4-bit MLP. Accuracy is
#: on the digital plateau (98.8 %) for dd at or below the first point.
NOISE_TOLERANCE = (
    (0.0035, 0.988),
    (0.0100, 0.980),
    (0.0140, 0.970),
    (0.0184, 0.950),
    (0.0237, 0.900),
    (0.0306, 0.800),
    (0.0504, 0.500),
    (0.0734, 0.300),
)

#: The repo's shot-noise-limited (no integration) network simulation (``Figure 5/
#: pure_shot_noise_no_integration.npy`` via the research notes): photons per MAC -> accuracy.
SINGLE_PHOTON_ACCURACY = (
    (0.10, 0.12), (0.21, 0.26), (0.29, 0.46), (0.33, 0.50), (0.46, 0.80), (0.52, 0.86), (0.59, 0.90),
    (0.74, 0.93), (0.83, 0.95), (1.05, 0.97), (1.32, 0.98), (2.1, 0.986), (4.75, 0.990), (100.0, 0.9907),
)

_LOG_DD = np.log([dd for dd, _ in NOISE_TOLERANCE])
_ACCURACY = np.array([acc for _, acc in NOISE_TOLERANCE])


def accuracy_at_noise(dd: float) -> float:
    """Accuracy for normalized read noise ``dd``: piecewise linear in ``log dd`` through the map.

    Clamped outside the tabulated range: 98.8 % below dd = 0.0035 (the digital plateau), and the
    last tabulated 30 % above dd = 0.0734 (the map has no data there; true accuracy is lower).
    """
    return float(np.interp(np.log(dd), _LOG_DD, _ACCURACY))


def noise_for_accuracy(accuracy: float) -> float:
    """The largest ``dd`` that still reaches ``accuracy`` (inverse of :func:`accuracy_at_noise`)."""
    lowest, highest = _ACCURACY[-1], _ACCURACY[0]
    if not lowest <= accuracy <= highest:
        raise UsageError(
            f"accuracy {accuracy:g} is outside the noise-tolerance map's range [{lowest:g}, {highest:g}]"
        )
    return float(np.exp(np.interp(accuracy, _ACCURACY[::-1], _LOG_DD[::-1])))


def single_photon_accuracy(photons: float) -> float:
    """Accuracy of the repo's shot-noise-limited simulation, interpolated in log photons per MAC."""
    table = np.array(SINGLE_PHOTON_ACCURACY)
    return float(np.interp(np.log(photons), np.log(table[:, 0]), table[:, 1]))


# -- symbols ---------------------------------------------------------------------------------

readout = Quantity("M", "MACs integrated per readout", "1", "positive_integer", default=100)
read_noise = Quantity("sigma_e", "effective read noise (fit to the repo's M = 100 simulation)", "electrons",
                      default=520.0, latex=r"\sigma_e")
photon_energy = Quantity("h_nu", "photon energy (repo value, 1550 nm)", "J", default=1.28e-19, latex=r"h\nu")
photons = Quantity("n", "photons per MAC", "1", default=1.0)
noise_ratio = Quantity("dd", "read noise relative to the full-scale integrated signal", "1",
                       default=0.0184)
energy = Quantity("E", "optical energy per MAC at the client", "J", default=40e-18)
accuracy = Quantity("accuracy", "MNIST test accuracy of the 784-100-100-10 4-bit MLP", "1", "open_unit",
                    default=0.95)
efficiency = Quantity("eta", "detector efficiency", "1", "efficiency", default=1.0, latex=r"\eta")
mean_product = Quantity("mu", "mean weight x activation product (intensities in [0, 1])", "1", "efficiency",
                        default=0.25, latex=r"\mu")
relative_error = Quantity("epsilon", "relative error of one neuron output", "1", default=0.1,
                          latex=r"\varepsilon")

q_e = sp.Symbol("q", positive=True)
code_step = Quantity("codes", "integrator output change over one readout", "ADC codes", default=100.0)
code_voltage = Quantity("V_lsb", "digitizer volts per code (0.2 V / 2^15)", "V", default=0.2 / 2**15,
                        latex=r"V_{\mathrm{lsb}}")
capacitance = Quantity("C", "integrator capacitance (IVC102)", "F", default=10e-12)
snr = Quantity("SNR", "signal-to-noise ratio the network needs", "1", default=29.0)
noise_energy = Quantity("e_noise", "receiver noise energy per unit SNR (Koheron PD100: 6.67e-16 J)", "J",
                        default=6.67e-16, latex=r"e_{\mathrm{noise}}")

RECEIVER = ("time-integrating receiver, unit quantum efficiency",)
NETWORK = ("784-100-100-10 MLP with 4-bit weights (the paper's MNIST network)",
           "noise enters as dd = sigma_e / (n M) through the repo's noise-tolerance map")


def _accuracy_at_energy(E: float, M: float, sigma_e: float, h_nu: float) -> float:
    return accuracy_at_noise(sigma_e * h_nu / (E * M))


def _energy_for_accuracy(accuracy: float, M: float, sigma_e: float, h_nu: float) -> float:
    return sigma_e * h_nu / (noise_for_accuracy(accuracy) * M)


BOUNDS = [
    Bound(
        name="delocalized.energy_from_codes",
        summary="optical energy per MAC from the integrator's code change over one readout",
        source=SOURCE,
        output=Quantity("E", "optical energy per MAC", "J"),
        inputs=(code_step, readout, code_voltage, capacitance, photon_energy),
        expr=code_step.symbol / readout.symbol * code_voltage.symbol * capacitance.symbol
        * photon_energy.symbol / q_e,
        constants={q_e: ELEMENTARY_CHARGE},
        assumptions=(*RECEIVER, "charge = codes x V_lsb x C, one electron per photon"),
    ),
    Bound(
        name="delocalized.noise_ratio",
        summary="read noise relative to the full-scale integrated signal: dd = sigma_e / (n M)",
        source=SOURCE,
        output=noise_ratio,
        inputs=(read_noise, photons, readout),
        expr=read_noise.symbol / (photons.symbol * readout.symbol),
        assumptions=RECEIVER,
    ),
    Bound(
        name="delocalized.energy_for_noise_ratio",
        summary="energy per MAC that holds the normalized read noise at dd: sigma_e h nu / (dd M)",
        source=SOURCE,
        output=energy,
        inputs=(noise_ratio, read_noise, readout, photon_energy),
        expr=read_noise.symbol * photon_energy.symbol / (noise_ratio.symbol * readout.symbol),
        assumptions=RECEIVER,
        notes="Scales as 1/M at fixed accuracy.",
    ),
    Curve(
        name="delocalized.accuracy",
        summary="accuracy vs optical energy per MAC (integrating receiver, through the noise-tolerance map)",
        source=SOURCE,
        output=accuracy,
        inputs=(energy, readout, read_noise, photon_energy),
        compute=_accuracy_at_energy,
        method="accuracy_at_noise(sigma_e h_nu / (E M)), log-linear interpolation of the repo's map",
        assumptions=(*RECEIVER, *NETWORK),
        notes="Reproduces the repo's M = 100 simulation within 10 %: 95.8 % at 40 aJ. The paper's 98.8 % at "
        "40 aJ headline is a measured best point; the simulation reaches 98.8 % only near 1 fJ.",
    ),
    Curve(
        name="delocalized.energy_for_accuracy",
        summary="optical energy per MAC needed for a target accuracy (inverse of delocalized.accuracy)",
        source=SOURCE,
        output=Quantity("E_min", "optical energy per MAC needed", "J"),
        inputs=(accuracy, readout, read_noise, photon_energy),
        compute=_energy_for_accuracy,
        method="sigma_e h_nu / (noise_for_accuracy(accuracy) M), inverse map by interpolation",
        assumptions=(*RECEIVER, *NETWORK),
    ),
    Bound(
        name="delocalized.shot_relative_error",
        summary="relative error of a neuron counted photon by photon: 1/sqrt(eta n M mu)",
        source=SOURCE,
        output=relative_error,
        inputs=(photons, readout, efficiency, mean_product),
        expr=1 / sp.sqrt(efficiency.symbol * photons.symbol * readout.symbol * mean_product.symbol),
        assumptions=("single-photon detection, no read noise", "Poisson photon counts"),
        notes="Solve for n to get photons per MAC for a tolerated error: below 1 once M mu eta > 1/eps^2.",
    ),
    Curve(
        name="delocalized.accuracy_single_photon",
        summary="accuracy vs photons per MAC with single-photon detectors (repo simulation data)",
        source=SOURCE,
        output=accuracy,
        inputs=(photons,),
        compute=lambda n: single_photon_accuracy(n),
        method="log-linear interpolation of the repo's shot-noise-limited network simulation",
        assumptions=("SNSPD, no integration", "each layer's fan-in (784, 100, 100) simulated separately"),
        notes="Data, not a model: a single dd map does not fit this curve. 93 % at 0.74 photons per MAC.",
    ),
    Bound(
        name="delocalized.receiver_energy_floor",
        summary="energy per MAC a non-integrating receiver needs for a given SNR: SNR x noise energy",
        source=SOURCE,
        output=Quantity("E_floor", "energy per MAC", "J"),
        inputs=(snr, noise_energy),
        expr=snr.symbol * noise_energy.symbol,
        assumptions=("TIA/APD receiver whose noise is referred to an energy per unit SNR",),
        notes="Repo receivers: Thorlabs PDA10CS 8.06e-15 J, Koheron PD100 6.67e-16 J, APD 4.25e-17 J "
        "(detector-referred) per unit SNR. SNR 29 is the map's 98 % point.",
    ),
]
