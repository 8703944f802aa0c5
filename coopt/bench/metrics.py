"""The numbers a benchmark reports, as small pure functions over plain floats.

* Shifted geometric mean of run times, shift s = 10 s, as Mittelmann's benchmarks and the OET
  solver benchmark define it (``open-energy-transition/solver-benchmark:
  docs/Metrics_and_methodology.md``)::

      SGM_s(t_1..t_n) = exp( (1/n) sum_i ln max(1, t_i + s) ) - s

* Dolan-More performance profiles (Dolan & More, Math. Prog. 91:201-213, 2002). For a set of cases
  p and methods m with costs c_{p,m} (time, or 1 + gap for quality) the ratio is
  r_{p,m} = c_{p,m} / min_m c_{p,m}; a failed run gets r = inf (the "r_M" of the paper, larger
  than any real ratio). The profile of m is rho_m(tau) = |{p : r_{p,m} <= tau}| / |P|.

* Primal gap and primal integral (Berthold, Oper. Res. Lett. 41(6):611-614, 2013)::

      gamma(z, opt) = 0                              if |opt| = |z| = 0
                    = 1                              if opt * z < 0 or there is no incumbent
                    = |opt - z| / max(|opt|, |z|)    otherwise
      P(T) = integral_0^T gamma(t) dt   with gamma(t) the step function of the incumbents.

  The primal-dual integral (research notes section 2.2, after Berthold) puts the running dual bound
  d(t) in place of opt, so it needs no known optimum::

      gamma_pd(t) = 1                 while there is no incumbent z(t) or no finite bound d(t)
                  = gamma(z(t), d(t)) otherwise
      PD(T) = integral_0^T gamma_pd(t) dt

  Both are left-step integrals: a value holds from the time it was found to the next one.

* A power law t = a * n^k fitted by least squares on (ln n, ln t): the scaling exponent k.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

#: The 10-second shift of the shifted geometric mean.
SGM_SHIFT = 10.0

#: Times are floored here before taking performance ratios: below a millisecond the timer measures
#: Python call overhead, not the method, and a ratio of two such noises means nothing.
TIME_FLOOR = 1e-3
#: Times are floored here before taking logarithms (scaling fits and plots): the timer's resolution.
TIMER_RESOLUTION = 1e-6


def shifted_geometric_mean(times: Iterable[float], shift: float = SGM_SHIFT) -> float:
    """SGM of ``times`` with shift ``shift``; NaN for no times."""
    values = np.asarray(list(times), dtype=float)
    if values.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(np.maximum(1.0, values + shift)))) - shift)


def performance_ratios(costs: Mapping[str, Sequence[float | None]]) -> dict[str, list[float]]:
    """Dolan-More ratios r_{p,m} = c_{p,m} / min_m c_{p,m}, per method, in case order.

    ``costs[m][p]`` is method m's cost on case p, or None for a failure (ratio inf). Every method
    must list the same cases. A case no method solved gives inf to all. Costs must be positive.
    """
    methods = list(costs)
    if not methods:
        return {}
    counts = {len(costs[m]) for m in methods}
    if len(counts) != 1:
        raise ValueError(f"every method needs one cost per case; got lengths {sorted(counts)}")
    ratios: dict[str, list[float]] = {m: [] for m in methods}
    for p in range(counts.pop()):
        column = [costs[m][p] for m in methods]
        finite = [c for c in column if c is not None]
        if any(c <= 0 for c in finite):
            raise ValueError(f"costs must be positive; case {p} has {finite}")
        best = min(finite) if finite else None
        for m, c in zip(methods, column, strict=True):
            ratios[m].append(math.inf if c is None or best is None else c / best)
    return ratios


def profile(ratios: Sequence[float], taus: Sequence[float]) -> list[float]:
    """rho(tau): the fraction of cases whose ratio is at most tau, for each tau."""
    if not ratios:
        return [math.nan for _ in taus]
    values = np.asarray(ratios, dtype=float)
    return [float(np.mean(values <= tau)) for tau in taus]


def primal_gap(value: float | None, optimum: float) -> float:
    """Berthold's primal gap gamma in [0, 1]; 1 for no incumbent (None)."""
    if value is None:
        return 1.0
    if value == 0 and optimum == 0:
        return 0.0
    if value * optimum < 0:
        return 1.0
    return abs(optimum - value) / max(abs(optimum), abs(value))


def step_integral(steps: Sequence[tuple[float, float]], horizon: float) -> float:
    """Integral over [0, horizon] of the left-step function that is 1 before the first step and
    ``value`` from each (time, value) step on. Steps at or after the horizon do not count; negative
    times count as 0."""
    total, since, value = 0.0, 0.0, 1.0
    for at, new in sorted(steps):
        if at >= horizon:
            break
        total += value * (max(at, 0.0) - since)
        since, value = max(at, 0.0), new
    return total + value * max(horizon - since, 0.0)


def primal_integral(incumbents: Sequence[tuple[float, float]], optimum: float, horizon: float) -> float:
    """Integral over [0, horizon] of the primal gap of the step function of ``incumbents``.

    ``incumbents`` are (time found, objective) pairs; before the first one the gap is 1. Pairs
    found after the horizon do not count.
    """
    return step_integral([(found, primal_gap(value, optimum)) for found, value in incumbents], horizon)


def primal_dual_gap(primal: float | None, dual: float | None) -> float:
    """gamma_pd in [0, 1]: the primal gap with the dual bound in place of the optimum; 1 while
    either is unknown (None)."""
    return 1.0 if dual is None else primal_gap(primal, dual)


def primal_dual_integral(
    trace: Sequence[tuple[float, float | None, float | None]], horizon: float, start: float = 0.0
) -> float:
    """Integral over [0, horizon] of gamma_pd of a solver's trace of (time, primal, dual) points,
    each time shifted by ``start`` (when the solver's clock started on the common time axis)."""
    return step_integral([(start + t, primal_dual_gap(p, d)) for t, p, d in trace], horizon)


def trace_incumbents(
    trace: Sequence[tuple[float, float | None, float | None]], start: float = 0.0
) -> list[tuple[float, float]]:
    """The (time, objective) incumbents of a trace, times shifted by ``start``: the input of
    :func:`primal_integral`."""
    return [(start + t, p) for t, p, _ in trace if p is not None]


def fit_power_law(sizes: Sequence[float], times: Sequence[float]) -> tuple[float, float] | None:
    """(k, a) of the least-squares fit ln t = ln a + k ln n; None with fewer than two sizes."""
    pairs = [(n, max(t, TIMER_RESOLUTION)) for n, t in zip(sizes, times, strict=True) if n > 0]
    if len({n for n, _ in pairs}) < 2:
        return None
    x = np.log([n for n, _ in pairs])
    y = np.log([t for _, t in pairs])
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(math.exp(intercept))


def geomean_gap(gaps: Sequence[float]) -> float:
    """The geometric mean of the gaps, shifted by one so that a zero gap counts:
    ``exp(mean(ln(1 + g))) - 1`` (the gap of a heuristic that is ``1 + g`` times the optimum)."""
    if not gaps:
        return math.nan
    return math.expm1(statistics.fmean(math.log1p(g) for g in gaps))
