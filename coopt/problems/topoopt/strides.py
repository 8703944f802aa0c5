"""P4: circulant hop counts and the exact stride selection of TopoOpt's rings."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from coopt.problems.topoopt.model import candidate_strides


def circulant_distances(n: int, strides: Sequence[int]) -> list[float]:
    """Coin change in ``Z_n``: ``dist[m]`` = fewest stride hops from 0 to ``m`` (BFS; inf if none)."""
    dist = [math.inf] * n
    dist[0] = 0
    frontier = [0]
    while frontier:
        nxt = []
        for v in frontier:
            for s in strides:
                w = (v + s) % n
                if dist[w] == math.inf:
                    dist[w] = dist[v] + 1
                    nxt.append(w)
        frontier = nxt
    return dist


def stride_cost(n: int, strides: Sequence[int], offset_weight: Sequence[float]) -> float:
    """P4 objective: ``sum_m w_m dist_S(m) / sum_m w_m`` with ``w_m = sum_{j-i=m} M_ij``."""
    dist = circulant_distances(n, strides)
    total = sum(offset_weight)
    return float(sum(w * dist[m] for m, w in enumerate(offset_weight) if w) / total)


def offset_weights(n: int, demand: np.ndarray) -> list[float]:
    """Demand aggregated by ring offset ``(j - i) mod n``; uniform all-to-all if ``demand`` is empty."""
    w = [0.0] * n
    for i, j in zip(*np.nonzero(demand), strict=True):
        w[(j - i) % n] += float(demand[i, j])
    return w if any(w) else [0.0] + [1.0] * (n - 1)


def select_strides_exact(n: int, d: int, offset_weight: Sequence[float]) -> tuple[tuple[int, ...], float]:
    """P4 by enumeration over the ``C(phi(n), d)`` subsets of Hamiltonian strides: the subset of
    minimum weighted mean hop count (ties: smaller diameter, then lexicographic)."""
    best: tuple[float, float, tuple[int, ...]] | None = None
    for subset in itertools.combinations(candidate_strides(n, n), d):
        dist = circulant_distances(n, subset)
        key = (round(stride_cost(n, subset, offset_weight), 12), max(dist), subset)
        if best is None or key < best:
            best = key
    assert best is not None
    return best[2], best[0]
