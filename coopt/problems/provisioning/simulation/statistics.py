"""Reference formulas and output analysis for the discrete-event simulator."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30 (standard table values).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile_975(df: int) -> float:
    """t_{0.975, df}; the normal 1.96 beyond the table (error below 2% for df > 30)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def erlang_b(servers: int, load_erlang: float) -> float:
    """Erlang-B blocking B(S, A) = (A^S / S!) / sum_{i<=S} A^i / i!, by the stable recursion
    B(0) = 1, B(i) = A B(i-1) / (i + A B(i-1))."""
    blocking = 1.0
    for i in range(1, servers + 1):
        blocking = load_erlang * blocking / (i + load_erlang * blocking)
    return blocking


def kaufman_roberts(capacity: int, streams: Sequence[tuple[float, int]]) -> list[float]:
    """Per-stream blocking on one link of ``capacity`` slots shared completely by Poisson streams
    (load in Erlangs, slots per request), by the Kaufman-Roberts recursion
    c q(c) = sum_j A_j n_j q(c - n_j), q(0) = 1, B_j = sum_{c > capacity - n_j} q(c) / sum_c q(c).
    Contiguity is ignored, so a contiguous first-fit link blocks at least this much on average."""
    q = [1.0] + [0.0] * capacity
    for c in range(1, capacity + 1):
        q[c] = sum(load * n * q[c - n] for load, n in streams if n <= c) / c
    total = sum(q)
    return [sum(q[capacity - n + 1:]) / total for _, n in streams]


@dataclass(frozen=True)
class Estimate:
    """A batch-means estimate: mean of the batch values and the 95% t half-width."""

    mean: float
    half_width: float
    batches: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def covers(self, value: float) -> bool:
        return self.low <= value <= self.high


def batch_means(values: Sequence[float]) -> Estimate:
    """Mean and 95% confidence half-width of (approximately independent) batch values."""
    n = len(values)
    if n == 0:
        return Estimate(math.nan, math.nan, 0)
    mean = sum(values) / n
    if n == 1:
        return Estimate(mean, math.inf, 1)
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return Estimate(mean, t_quantile_975(n - 1) * math.sqrt(variance / n), n)
