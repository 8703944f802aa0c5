"""The AllReduce ring split that suits a fixed ECMP routing best: a small LP (see
:func:`coopt.problems.topoopt.fabric.ecmp_split_solution`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from coopt.problems.topoopt.model import (
    Instance,
    busiest_sender,
    candidate_strides,
    mp_matrix,
    ring_bytes,
)
from coopt.problems.topoopt.routing import Columns, solve_lp

if TYPE_CHECKING:
    from coopt.problems.topoopt.fabric import EcmpRouting


def best_ecmp_split(instance: Instance, routing: EcmpRouting) -> list[list[list[float]]]:
    """Per group, ``[[stride, share], ...]`` maximising the ECMP concurrent-flow rate on ``routing``.
    Strides whose ring demand is unreachable get no share; a group with no reachable stride keeps
    its first candidate (the caller then finds the demand unreachable)."""
    n = instance.servers
    unit = busiest_sender(instance)
    rows = np.arange(n)
    narc = len(routing.capacity)
    mp_load = routing.loads(mp_matrix(instance) / unit)
    columns = [(g, q) for g, group in enumerate(instance.allreduce) for q in candidate_strides(n, group.size)]
    m = Columns()
    m.add(np.arange(narc), np.zeros(narc), mp_load)
    m.add(narc + np.arange(len(instance.allreduce)), np.zeros(len(instance.allreduce)),
          -np.ones(len(instance.allreduce)))
    col_hi = np.full(1 + len(columns), 1e30)
    for c, (g, q) in enumerate(columns, start=1):
        ring = np.zeros((n, n))
        ring[rows, (rows + q) % n] = ring_bytes(instance.allreduce[g]) / unit
        np.fill_diagonal(ring, 0.0)
        if (ring[~routing.reachable] > 0).any():
            col_hi[c] = 0.0
        load = routing.loads(ring)
        used = np.flatnonzero(load)
        m.add(np.r_[used, narc + g], np.full(len(used) + 1, c), np.r_[load[used], 1.0])
    nrow = narc + len(instance.allreduce)
    row_lo = np.r_[np.full(narc, -1e30), np.zeros(len(instance.allreduce))]
    row_hi = np.r_[routing.capacity, np.zeros(len(instance.allreduce))]
    values = solve_lp(1 + len(columns), nrow, m, row_lo, row_hi, col_hi)
    shares: list[list[list[float]]] = [[] for _ in instance.allreduce]
    if values is not None and values[0] > 0:
        for c, (g, q) in enumerate(columns, start=1):
            if values[c] > 1e-12 * values[0]:
                shares[g].append([q, float(values[c])])
    for g, group in enumerate(instance.allreduce):
        total = sum(v for _, v in shares[g])
        first = candidate_strides(n, group.size)[0]
        shares[g] = [[q, v / total] for q, v in shares[g]] if total > 0 else [[first, 1.0]]
    return shares
