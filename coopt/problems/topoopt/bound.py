"""Dual bounds on TopoOpt's ``theta`` that hold for every topology, at any size (``--method bound``).

Five upper bounds, each valid for every ``d``-regular topology, routing and ring split; the
registered bound is the least of the first four, lowered by the fifth where it rules out rates
below it:

* **Port (ideal-switch) bound.** Server ``s`` pushes its ``r_s = sum_t D_st`` bytes out of ``d``
  ports and receives its ``c_s = sum_t D_ts`` bytes through ``d`` ports, so
  ``theta <= d (B/8) / max_s max(r_s, c_s)``. Row and column sums do not depend on the ring split
  (every member of a group sends and receives ``c_g``). It is also the rate of an ideal switch with
  the same ``d B`` per server.
* **Moore (degree) bound.** In a digraph of out-degree ``d`` at most ``d^h`` servers lie ``h`` hops
  from ``s`` (``d (d-1)^(h-1)`` with symmetric links), so ``sum_t D_st dist(s, t)`` is at least
  ``W_s``: the demands of ``s`` sorted in decreasing order, the first ``d`` charged 1 hop, the
  next ``d^2`` charged 2, and so on. Every byte crosses at least ``dist`` arcs and the arcs carry
  ``n d (B/8) / theta`` bytes in all, so ``theta <= n d (B/8) / max(sum_s W_s, sum_t W'_t)`` (``W'``
  the same by destination, in-degree ``d``). The ring traffic's destinations depend on the split;
  ``W_s`` takes the most favourable case: all of it (``sum_g c_g``) on one destination, merged with
  whichever model-parallel destination among the candidate ones lowers ``W_s`` most (merging two
  demands on one destination frees a slot), which bounds every split from below.
* **Pair-distance bound** (:func:`coopt.problems.topoopt.distance_bound.pair_distance_bound`): the
  Moore counting with each pair's distance shared by both servers (with duplex links the distance
  is symmetric, so a neighbour slot spent on ``s + q`` is also one of ``s + q``'s), an LP per
  distance level, over every vertex of the ring split; never looser than the Moore bound (proof and
  test there).
* **LP relaxation** (:func:`coopt.problems.topoopt.routing.relaxation`, P1 with fractional
  links). With directed links it equals the port bound on every instance we have tried (tested),
  so it is solved only for symmetric links, where duplex capacity can be wasted and it is lower,
  and only up to :data:`RELAXATION_SERVERS` servers (its size grows as ``n^3``).
* **Capacity-aware Moore bound** (:func:`coopt.problems.topoopt.capacity_bound.capacity_bound`):
  the Moore counting with the capacity of the direct links charged too (a pair's demand beyond its
  links' capacity travels at least two hops, and parallel links cost neighbours), a small MILP per
  class of sources whose dual bound is charged, bisected below the least of the four (proof there).
"""

from __future__ import annotations

import numpy as np

from coopt.problems.topoopt.capacity_bound import capacity_bound
from coopt.problems.topoopt.distance_bound import pair_distance_bound
from coopt.problems.topoopt.model import Instance, candidate_strides, mp_matrix, ring_bytes
from coopt.problems.topoopt.routing import relaxation

#: Largest n at which the bound solves P1's LP relaxation (symmetric links): 3 s at n = 28.
RELAXATION_SERVERS = 28


def port_bound(instance: Instance) -> float:
    """``d (B/8) / max_s max(r_s, c_s)`` (iterations per second)."""
    mp = mp_matrix(instance)
    ring = sum(ring_bytes(g) for g in instance.allreduce)
    busiest = max(float(mp.sum(axis=1).max()), float(mp.sum(axis=0).max())) + ring
    return instance.degree * instance.port_rate / busiest


def moore_levels(n: int, d: int, symmetric: bool) -> np.ndarray:
    """Fewest hops of the ``k``-th nearest other server (``k = 0..n-2``) in any degree-``d`` graph."""
    levels = []
    hop, width = 1, d
    while len(levels) < n - 1:
        levels += [hop] * width
        hop += 1
        width = width * (d - 1) if symmetric else width * d
        if width == 0:  # symmetric d = 1: a perfect matching reaches one server; the rest unreachable
            levels += [n] * (n - 1 - len(levels))
    return np.array(levels[: n - 1], dtype=float)


def _hop_charge(rows: np.ndarray, levels: np.ndarray, lump: float, merge_with: np.ndarray) -> float:
    """``sum_s W_s``: per row, the demands sorted (largest first) charged ``levels``, with ``lump`` added
    to one destination allowed by ``merge_with[s]`` (or to none) where that is cheapest."""
    total = 0.0
    for row, allowed in zip(rows, merge_with, strict=True):
        best = _sorted_charge(np.append(row, lump), levels) if lump > 0 else _sorted_charge(row, levels)
        if lump > 0:
            for t in np.flatnonzero(allowed & (row > 0)):
                merged = row.copy()
                merged[t] += lump
                best = min(best, _sorted_charge(merged, levels))
        total += best
    return total


def _sorted_charge(demands: np.ndarray, levels: np.ndarray) -> float:
    nonzero = np.sort(demands[demands > 0])[::-1]
    if len(nonzero) > len(levels):  # more destinations than other servers: cannot happen with a real row
        levels = np.append(levels, np.full(len(nonzero) - len(levels), levels[-1] if len(levels) else 1))
    return float(nonzero @ levels[: len(nonzero)])


def moore_bound(instance: Instance) -> float:
    """``n d (B/8) / max(sum_s W_s, sum_t W'_t)`` (module docstring)."""
    n, d = instance.servers, instance.degree
    mp = mp_matrix(instance)
    ring = sum(ring_bytes(g) for g in instance.allreduce)
    levels = moore_levels(n, d, instance.symmetric)
    offsets = {q for g in instance.allreduce for q in candidate_strides(n, g.size)}
    allowed = np.zeros((n, n), dtype=bool)
    rows = np.arange(n)
    for q in offsets:
        allowed[rows, (rows + q) % n] = True
    np.fill_diagonal(mp, 0.0)
    charge = max(
        _hop_charge(mp, levels, ring, allowed),
        _hop_charge(mp.T.copy(), levels, ring, allowed.T.copy()),
    )
    return n * d * instance.port_rate / charge


def dual_bound(instance: Instance, options: object = None) -> float:
    """The registered ``bound``: the least of the port, Moore, pair-distance and (symmetric, small) LP
    bounds, lowered where the capacity-aware count rules out rates below it."""
    bounds = [port_bound(instance), moore_bound(instance), pair_distance_bound(instance)]
    if instance.symmetric and instance.servers <= RELAXATION_SERVERS:
        bounds.append(relaxation(instance))
    return capacity_bound(instance, min(bounds))
