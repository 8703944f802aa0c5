"""Least-absolute-deviation fits of a step-time model to measured points, solved exactly as HiGHS
LPs: MoESD's time model (``coopt bound moesd.* --fit``) and ConfigTuner's calibration of link and
GEMM curves use the same function.

The model is ``T = c0 + c_mem X_mem + c_comp X_comp`` (``form="sum"``) or
``T = c0 + max(c_mem X_mem, c_comp X_comp)`` (``form="max"``), coefficients >= 0, fitted in L1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.solvers.highs import solve_model


@dataclass(frozen=True)
class TimeModelFit:
    """``T = c0 + c_mem X_mem + c_comp X_comp`` (or ``c0 + max(...)``) with its L1 error."""

    c0: float
    c_mem: float
    c_comp: float
    l1_error: float
    form: str

    def predict(self, memory: np.ndarray, compute: np.ndarray) -> np.ndarray:
        mem, comp = self.c_mem * np.asarray(memory), self.c_comp * np.asarray(compute)
        return self.c0 + (mem + comp if self.form == "sum" else np.maximum(mem, comp))


def build_fit_lp(
    times: np.ndarray, memory: np.ndarray, compute: np.ndarray, labels: np.ndarray | None = None
) -> pyo.ConcreteModel:
    """The L1 fit as an LP: min sum (over_i + under_i) s.t. T_i - T_hat_i = over_i - under_i, c >= 0.

    With ``labels`` (True = memory-bound), point i's prediction uses only its bound term and the
    coefficients must make that term the larger one: the max-form for a fixed labelling.
    """
    n = len(times)
    m = pyo.ConcreteModel()
    m.points = pyo.RangeSet(0, n - 1)
    m.c0 = pyo.Var(domain=pyo.NonNegativeReals)
    m.c_mem = pyo.Var(domain=pyo.NonNegativeReals)
    m.c_comp = pyo.Var(domain=pyo.NonNegativeReals)
    m.over = pyo.Var(m.points, domain=pyo.NonNegativeReals)
    m.under = pyo.Var(m.points, domain=pyo.NonNegativeReals)

    def fitted(m, i):
        mem, comp = m.c_mem * float(memory[i]), m.c_comp * float(compute[i])
        if labels is None:
            return m.c0 + mem + comp
        return m.c0 + (mem if labels[i] else comp)

    m.residual = pyo.Constraint(
        m.points, rule=lambda m, i: float(times[i]) - fitted(m, i) == m.over[i] - m.under[i]
    )
    if labels is not None:
        m.regime = pyo.Constraint(
            m.points,
            rule=lambda m, i: (1 if labels[i] else -1)
            * (m.c_mem * float(memory[i]) - m.c_comp * float(compute[i]))
            >= 0,
        )
    m.error = pyo.Objective(expr=sum(m.over[i] + m.under[i] for i in m.points), sense=pyo.minimize)
    return m


def _l1_lp(times: np.ndarray, memory: np.ndarray, compute: np.ndarray, labels: np.ndarray | None):
    m = build_fit_lp(times, memory, compute, labels)
    status = solve_model(m, SolveOptions(gap=1e-9)).status
    if status != "optimal":  # c = 0 is always feasible and the error is >= 0: this is a solver fault
        raise RuntimeError(f"HiGHS ended the L1 fit with status {status}")
    return pyo.value(m.c0), pyo.value(m.c_mem), pyo.value(m.c_comp), pyo.value(m.error)


def fit_time_model(times, memory, compute, form: str = "sum") -> TimeModelFit:
    """Least-absolute-deviation fit of the step-time model to measured points, exactly, by LP.

    ``form="sum"``: ``T = c0 + c_mem X_mem + c_comp X_comp``, one LP with slack pairs
    (``T_i - T_hat_i = over_i - under_i``, minimise the sum of slacks), coefficients >= 0.
    ``form="max"``: ``T = c0 + max(c_mem X_mem, c_comp X_comp)``. A point is memory-bound exactly
    when its intensity ``X_comp / X_mem`` is at most ``c_mem / c_comp``, so the regimes are a
    threshold on the sorted intensities: ``n + 1`` labellings, one LP each (with the regime
    inequalities), and the best is the global L1 optimum. Inputs are scaled to O(1) inside.
    """
    times, memory, compute = (np.asarray(v, dtype=float) for v in (times, memory, compute))
    if not (times.shape == memory.shape == compute.shape) or times.ndim != 1 or len(times) < 1:
        raise ValueError("times, memory and compute must be equal-length 1-D sequences")
    if form not in ("sum", "max"):
        raise ValueError(f"form must be 'sum' or 'max', got {form!r}")
    scale_t, scale_m, scale_c = (float(np.max(np.abs(v))) or 1.0 for v in (times, memory, compute))
    t, mem, comp = times / scale_t, memory / scale_m, compute / scale_c
    if form == "sum":
        candidates = [_l1_lp(t, mem, comp, None)]
    else:
        order = np.argsort(comp / np.where(mem > 0, mem, np.finfo(float).tiny), kind="stable")
        candidates = []
        for split in range(len(t) + 1):
            labels = np.zeros(len(t), dtype=bool)
            labels[order[:split]] = True
            candidates.append(_l1_lp(t, mem, comp, labels))
    c0, cm, cc, error = min(candidates, key=lambda c: c[3])
    return TimeModelFit(c0 * scale_t, cm * scale_t / scale_m, cc * scale_t / scale_c, error * scale_t, form)
