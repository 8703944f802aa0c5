"""The pair-distance bound on TopoOpt's ``theta``: the Moore counting with the distance of a pair
counted once for both of its servers (an LP per distance level), valid for every topology, routing
and ring split.

Statement. Let ``M_h`` be the Moore count of :func:`.bound.moore_levels` summed up to ``h``: at most
``M_h`` other servers lie within ``h`` hops of a server in any graph of degree ``d`` (``d (d-1)^(k-1)``
at ``k`` hops with duplex links, ``d^k`` directed; the same for the servers that reach it). Let ``L``
be the number of levels with ``M_h < n - 1``. For a demand matrix ``D`` let ``P_h(D)`` be the
value of the level LP

    maximise  sum_st D_st w_st   over  0 <= w <= 1,
    sum_t w_st <= M_h and sum_s w_st <= M_h for every server (directed links),
    w_st = w_ts, and then one row ``sum_t w_st <= M_h`` per server (duplex links),

and ``H(D) = (1 + L) sum_st D_st - sum_{h=1..L} P_h(D)``. Then ``theta <= n d (B/8) / H_min``,
where ``H_min`` is the least ``H`` over the *vertices* of the ring split (one candidate stride per
AllReduce group), groups left out of the enumeration (below) charged one hop per byte.

Proof. Fix a topology, a routing and a split ``lambda``, with demand ``D = D(lambda)`` (affine in
``lambda``). Every byte from ``s`` to ``t`` crosses at least ``dist(s, t)`` arcs, and the ``n d``
arcs carry at most ``n d (B/8) / theta`` bytes per iteration, so ``theta sum_st D_st dist(s, t) <=
n d (B/8)``. Write ``dist = 1 + sum_{h >= 1} [dist > h] >= 1 + sum_{h=1..L} (1 - w^h)`` with
``w^h_st = [dist(s, t) <= h]``. For each ``h`` the 0/1 matrix ``w^h`` is feasible for the level LP:
a server has at most ``M_h`` others within ``h`` hops and is reached within ``h`` hops by at most
``M_h`` (the reverse graph has the same degrees), and with duplex links ``dist`` is symmetric, so
``w^h_st = w^h_ts``. Hence ``sum_st D_st dist >= (1 + L) sum D - sum_h sum_st D_st w^h_st >=
H(D)``. ``P_h`` is a maximum of functions linear in ``D``, so ``H(D(lambda))`` is concave in
``lambda``, and its least value over the product of the groups' simplices is at a vertex. A group
left out is charged ``n c_g`` bytes at one hop: the coefficient of every ``D_st`` in the LP's
charge is at least 1, so ``H(D' + D_g) >= H(D') + sum D_g`` for any ``D'``. Finally, the file's
model-parallel matrix may be invariant under the reflection ``s -> n - 1 - s``, which maps the ring
of stride ``q`` onto the ring of stride ``n - q`` and keeps blocks of consecutive servers blocks;
then a vertex and its reflection have the same ``H`` and only one of them is solved.

Against the Moore bound of :mod:`.bound`: without the in-rows and the pair symmetry the level LP
is the per-source count, whose optimum is the sorted greedy (the ``M_h`` largest demands), so on
each vertex ``H`` is at least the Moore charge; the Moore bound places all ring bytes on the most
favourable destination, a relaxation of every vertex; so this bound is never looser (tested). It
is tighter when the duplex pairing matters: a link that puts ``s + q`` one hop from ``s`` also puts
``s`` one hop from ``s + q``, a slot of ``s + q`` spent on a destination that may carry little.
This is the degree-constrained distance counting behind the throughput bound of Singla, Godfrey and
Kolla, "High Throughput Data Center Topology Design" (NSDI 2014, Theorem 1: throughput at most total
capacity over demand times mean distance, the mean distance bounded by the Moore count), here with
pairs coupled; the formulation and proof are ours.

Cost: one LP per level and vertex, ``|pairs|`` columns and ``n`` (duplex) or ``2 n`` rows; the
vertices enumerated are capped at :data:`MAX_VERTICES`, the groups with the least bytes left out
first.
"""

from __future__ import annotations

import itertools

import numpy as np

from coopt.problems.topoopt.model import Instance, candidate_strides, mp_matrix, ring_bytes
from coopt.problems.topoopt.routing import quiet_highs

#: At most this many vertices of the ring split are enumerated (half of them solved where the
#: reflection applies); the groups with the fewest bytes are charged one hop per byte instead until
#: the product of the others' stride counts fits.
MAX_VERTICES = 128
_COLWISE, _MAXIMIZE = 1, -1  # highspy's MatrixFormat.kColwise and ObjSense.kMaximize, as passModel's ints


def cumulative_moore(n: int, d: int, symmetric: bool) -> list[int]:
    """``M_1, ..., M_L``: the Moore counts within ``h`` hops that are below ``n - 1``. Where the count
    stops growing (duplex ``d = 1``: a matching) it repeats up to ``h = n - 1``, as the Moore bound
    charges an unreachable server ``n`` hops (any demand there leaves ``theta = 0``)."""
    counts, total, width = [], 0, d
    while len(counts) < n - 1:
        total += width
        if total >= n - 1:
            return counts
        counts.append(total)
        width = width * (d - 1) if symmetric else width * d
    return counts


def level_lp(demand: np.ndarray, cap: int, symmetric: bool) -> float:
    """``P_h(D)``: the level LP of the module docstring with ``M_h = cap``."""
    n = len(demand)
    if symmetric:
        weight = np.triu(demand + demand.T, 1)
        s, t = np.nonzero(weight > 0)
        rows = np.stack([s, t], axis=1)
        nrow = n
    else:
        off = demand.copy()
        np.fill_diagonal(off, 0.0)
        weight = off
        s, t = np.nonzero(off > 0)
        rows = np.stack([s, n + t], axis=1)
        nrow = 2 * n
    ncol = len(s)
    if ncol == 0:
        return 0.0
    scale = float(weight[s, t].max())
    cost = weight[s, t] / scale  # O(1) coefficients
    index = rows.ravel().astype(np.int32)
    start = np.arange(0, 2 * ncol + 1, 2, dtype=np.int32)
    highs = quiet_highs()
    highs.passModel(ncol, nrow, len(index), _COLWISE, _MAXIMIZE, 0.0, cost, np.zeros(ncol), np.ones(ncol),
                    np.full(nrow, -1e30), np.full(nrow, float(cap)), start, index, np.ones(len(index)),
                    np.zeros(ncol, dtype=np.int32))
    highs.run()
    # weak duality, for any row prices y >= 0: P_h <= cap sum_v y_v + sum_p max(0, D_p - y_s - y_t),
    # so the value returned is an upper bound on P_h whatever tolerances the solve met
    prices = np.abs(np.asarray(highs.getSolution().row_dual))
    reduced = cost - prices[rows].sum(axis=1)
    return float(cap * prices.sum() + np.maximum(reduced, 0.0).sum()) * scale


def charge(demand: np.ndarray, counts: list[int], symmetric: bool) -> float:
    """``H(D)`` (module docstring)."""
    total = float(demand.sum() - np.trace(demand))
    solved = {cap: level_lp(demand, cap, symmetric) for cap in set(counts)}
    return (1 + len(counts)) * total - sum(solved[cap] for cap in counts)


def vertices(instance: Instance) -> tuple[list[list[tuple[int, float]]], float]:
    """The ring-split vertices to solve (per vertex, ``[(stride, c_g), ...]`` of the enumerated groups),
    and the bytes of the groups left out (charged one hop)."""
    n = instance.servers
    groups = sorted(((ring_bytes(g), candidate_strides(n, g.size)) for g in instance.allreduce),
                    key=lambda item: -item[0])
    kept, left_out, product = [], 0.0, 1
    for c, strides in groups:
        if product * len(strides) <= MAX_VERTICES:
            kept.append((c, strides))
            product *= len(strides)
        else:
            left_out += n * c
    mp = mp_matrix(instance)
    reflective = np.array_equal(mp, mp[::-1, ::-1])
    seen, out = set(), []
    for choice in itertools.product(*(strides for _, strides in kept)):
        mirror = tuple((n - q) % n for q in choice)
        if choice in seen or (reflective and mirror in seen):
            continue
        seen.add(choice)
        out.append([(q, c) for q, (c, _) in zip(choice, kept, strict=True)])
    return out, left_out


def pair_distance_bound(instance: Instance) -> float:
    """``n d (B/8) / H_min`` in iterations/s (module docstring)."""
    n, d = instance.servers, instance.degree
    counts = cumulative_moore(n, d, instance.symmetric)
    mp = mp_matrix(instance)
    np.fill_diagonal(mp, 0.0)
    rows = np.arange(n)
    choices, left_out = vertices(instance)
    least = np.inf
    for choice in choices:
        demand = mp.copy()
        for q, c in choice:
            demand[rows, (rows + q) % n] += c
        least = min(least, charge(demand, counts, instance.symmetric))
    least += left_out
    if not least > 0:
        return np.inf
    return n * d * instance.port_rate / least
