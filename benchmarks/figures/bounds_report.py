"""The figures of docs/bounds.md for the closed-form bounds, with timings.

    python benchmarks/figures/bounds_report.py [--samples N] [--write-points OUT.csv]

Prints: photons and energy per MAC at 4 bits for a 784-input layer; the channel count over 3 THz at
2^-8; the accuracy-vs-energy curve around 40 aJ; the MoESD speedup over batch for Qwen2-57B-A14B on
2 x A800 (beside the paper's up-to-2.29x) and its dense comparator; Monte-Carlo agreement of the link
model; and the time-model L1 fit with build / hand-off / solve times recorded separately. With
``--write-points`` it also writes the synthetic step-time measurements it fits, for
``coopt bound moesd.time_model --fit``.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

import numpy as np
import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.problems.moesd.closed_forms import (
    A800,
    QWEN2_57B_A14B,
    best_draft_length,
    sd_speedup,
    step_time,
    workload_features,
)
from coopt.problems.netcast.closed_forms import simulate_link
from coopt.registry import closed_form as get
from coopt.registry import closed_forms as registry
from coopt.solvers.fit import build_fit_lp, fit_time_model
from coopt.solvers.highs import solve_model

BATCHES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)


def netcast_figures() -> None:
    print("== Netcast: 4-bit precision, 784-input layer (M = 784), eta = 1, 1550 nm")
    for name, values in (
        ("netcast.photons_per_mac_shot", {"b": 4, "M": 784}),
        ("netcast.photons_per_mac_thermal", {"b": 4, "M": 784}),
        ("netcast.photons_per_mac", {"b": 4, "M": 784}),
        ("netcast.photons_per_mac", {"b": 4, "M": 784, "C": 0.0}),
        ("netcast.energy_per_mac", {"b": 4, "M": 784}),
        ("netcast.photons_per_mac", {"b": 4, "M": 100}),
        ("netcast.energy_per_mac", {"b": 4, "M": 100}),
    ):
        bound = get(name)
        print(f"  {name:32s} {values!s:38s} {bound.output.name} = {float(bound.evaluate(values)):.4g} "
              f"{bound.output.unit}")
    print("== Netcast: channels over 3 THz at worst-case crosstalk 2^-8 (kappa = R = 5 GHz)")
    small = float(get("netcast.min_spacing").evaluate({"epsilon": 2.0**-8}))
    exact = float(get("netcast.crosstalk_worst").evaluate({"epsilon_xt": 2.0**-8}, solve_for="Delta"))
    print(f"  spacing: small-a {small / 1e9:.2f} GHz, exact coth root {exact / 1e9:.2f} GHz")
    for width in (10e9, 20e9):
        values = {"epsilon": 2.0**-8, "kappa": width / 2, "R": width / 2}
        n = float(get("netcast.max_channels").evaluate(values))
        print(f"  kappa + R = {width / 1e9:.0f} GHz: N_max = {n:.0f}")
    print(f"  exact-spacing channel count: {math.floor(3e12 / exact)}")


def netcast_monte_carlo(samples: int) -> None:
    print(f"== Netcast link Monte-Carlo ({samples} samples, seed 1): all channels at full scale")
    rng = np.random.default_rng(1)
    print("  a     N  n/MAC  sigma_e   mean err (sim / bound)    std err (sim / bound)   seconds")
    for a, n, photons, read_noise in ((0.1, 9, 0.5, 0.0), (0.3, 9, 20.0, 200.0), (0.6, 15, 5.0, 1270.0)):
        m = 100
        t0 = time.perf_counter()
        estimates = simulate_link(np.ones((n, m)), np.ones((m, samples)), photons, a_value=a,
                                  read_noise=read_noise, rng=rng)[n // 2]
        elapsed = time.perf_counter() - t0
        error = (estimates - m) / m
        worst = float(get("netcast.crosstalk_worst_finite").evaluate(
            {"kappa": 5e9, "R": 5e9, "Delta": 1e10 / (2 * a), "N": n}))
        std = math.sqrt(photons * m * (1 + worst) + read_noise**2) / (photons * m)
        print(f"  {a:<5} {n:<2} {photons:<6} {read_noise:<7} {error.mean():.5f} / {worst:.5f}       "
              f"{error.std():.5f} / {std:.5f}     {elapsed:.3f}")


def delocalized_figures() -> None:
    print("== Delocalized: accuracy vs optical energy per MAC (M = 100, sigma_e = 520 e-, h nu = 1.28e-19 J)")
    energies = np.array([10, 20, 30, 40, 40.3, 50, 66.5, 100, 1000]) * 1e-18
    accuracy = get("delocalized.accuracy").evaluate({"E": energies})
    for e, acc in zip(energies, accuracy, strict=True):
        print(f"  E = {e * 1e18:7.1f} aJ  ({e / 1.28e-19:6.0f} photons/MAC)  accuracy = {100 * acc:.1f} %")
    repo = [(0.30, 8.3), (0.50, 12.7), (0.80, 21.8), (0.90, 28.5), (0.95, 37.3), (0.97, 48.9), (0.98, 66.5)]
    print("  energy for accuracy: model vs the repo's M = 100 simulation")
    for acc, aj in repo:
        model = float(get("delocalized.energy_for_accuracy").evaluate({"accuracy": acc})) * 1e18
        print(f"    {100 * acc:4.0f} %: model {model:6.1f} aJ, repo {aj:5.1f} aJ "
              f"({100 * (model / aj - 1):+.1f} %)")
    shot = get("delocalized.shot_relative_error")
    photons = float(shot.evaluate({"epsilon": 0.1, "M": 784}, solve_for="n"))
    print(f"  single-photon detectors: 93 % at 0.74 photons/MAC (repo data); shot bound n for 10 % error "
          f"on a 784-input neuron (mu = 0.25): {photons:.2f}")


def moesd_figures() -> None:
    print("== MoESD: predicted SD speedup, Qwen2-57B-A14B + Qwen2-0.5B draft, 2 x A800, ctx 512, gamma = 3")
    dense = replace(QWEN2_57B_A14B, experts=8, active=8)
    alphas = "  ".join(f"a={a:<4}" for a in (0.6, 0.7, 0.8, 0.9))
    print(f"  B     {alphas}   eta_T   dense(a=0.8)  best gamma(a=0.8)")
    for b in BATCHES:
        row = [sd_speedup(b, 3, a).speedup for a in (0.6, 0.7, 0.8, 0.9)]
        gamma, best = best_draft_length(b, 0.8, 8)
        efficiency = sd_speedup(b, 3, 0.8).target_efficiency
        comparator = sd_speedup(b, 3, 0.8, target=dense).speedup
        print(f"  {b:<5} " + "  ".join(f"{s:6.2f}" for s in row)
              + f"   {efficiency:5.2f}   {comparator:6.2f}        {gamma} ({best:.2f}x)")
    for a in (0.6, 0.7, 0.8, 0.9):
        curve = [sd_speedup(b, 3, a).speedup for b in BATCHES]
        k = int(np.argmax(curve))
        print(f"  alpha {a}: peak {curve[k]:.2f}x at B = {BATCHES[k]} (paper: up to 2.29x, measured)")
    print("  window (routed part, gamma 3, eps 0.05): B_lo = "
          f"{float(get('moesd.batch_window_low').evaluate({})):.1f}, B_hi = "
          f"{float(get('moesd.batch_window_high').evaluate({'gamma': 3})):.0f}, dense B_hi = "
          f"{float(get('moesd.batch_window_high').evaluate({'gamma': 3, 'E': 8, 'K': 8})):.1f}")


def measured_points(seed: int = 0, noise: float = 0.02) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic step-time 'measurements': the roofline model at B x q with 2 % multiplicative noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for b in BATCHES:
        for q in (1, 2, 4, 5):
            memory, compute = workload_features(QWEN2_57B_A14B, A800, b, q, 512)
            measured = step_time(QWEN2_57B_A14B, A800, b, q, 512) * (1 + rng.normal(0, noise))
            rows.append((memory, compute, measured))
    return tuple(np.array(column) for column in zip(*rows, strict=True))


def fit_figures(write: str | None) -> None:
    memory, compute, times = measured_points()
    print(f"== Time-model L1 fit on {len(times)} synthetic points (roofline model + 2 % noise)")
    t0 = time.perf_counter()
    model = build_fit_lp(times / times.max(), memory / memory.max(), compute / compute.max())
    build = time.perf_counter() - t0
    result = solve_model(model, SolveOptions(gap=1e-9))
    print(f"  one LP ({model.nvariables()} variables, {model.nconstraints()} constraints): "
          f"build {build * 1e3:.1f} ms, hand-off {result.handoff * 1e3:.1f} ms, "
          f"solve {result.solve * 1e3:.1f} ms, status {result.status}, "
          f"scaled L1 {pyo.value(model.error):.4g}")
    for form in ("sum", "max"):
        t0 = time.perf_counter()
        fit = fit_time_model(times, memory, compute, form=form)
        total = time.perf_counter() - t0
        relative = np.abs(fit.predict(memory, compute) / times - 1)
        print(f"  form {form}: c0 = {fit.c0 * 1e3:.3f} ms, 1/c_mem = {1 / fit.c_mem / 1e12:.2f} TB/s, "
              f"1/c_comp = {1 / fit.c_comp / 1e12 if fit.c_comp else math.inf:.1f} TFLOP/s, "
              f"mean |rel err| {100 * relative.mean():.1f} %, max {100 * relative.max():.1f} %, "
              f"total {total:.2f} s")
    if write:
        with open(write, "w", encoding="utf-8") as fh:
            fh.write("X_mem,X_comp,T\n")
            for row in zip(memory, compute, times, strict=True):
                fh.write(",".join(f"{v:.10g}" for v in row) + "\n")
        print(f"  wrote {write}")


def evaluation_timing() -> None:
    print("== Evaluation cost (after the first call's lambdify/solve, which is cached)")
    grid = np.geomspace(1e9, 1e12, 10_000)
    bound = get("netcast.crosstalk_worst")
    bound.evaluate({"Delta": grid})
    t0 = time.perf_counter()
    bound.evaluate({"Delta": grid})
    elapsed = time.perf_counter() - t0
    print(f"  netcast.crosstalk_worst on 10^4 spacings (vectorized): {elapsed * 1e3:.2f} ms")
    t0 = time.perf_counter()
    get("netcast.crosstalk_worst").evaluate({"epsilon_xt": np.geomspace(1e-6, 1e-1, 100)}, solve_for="Delta")
    print(f"  numeric inverse for 100 tolerances: {(time.perf_counter() - t0) * 1e3:.0f} ms")
    t0 = time.perf_counter()
    get("moesd.sd_speedup").evaluate({"B": np.arange(1, 257)})
    print(f"  moesd.sd_speedup for B = 1..256: {(time.perf_counter() - t0) * 1e3:.0f} ms")
    print(f"  registry: {len(registry())} entries")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--write-points", metavar="OUT.csv")
    args = parser.parse_args()
    netcast_figures()
    netcast_monte_carlo(args.samples)
    delocalized_figures()
    moesd_figures()
    fit_figures(args.write_points)
    evaluation_timing()


if __name__ == "__main__":
    main()
