"""ECMP shortest-path routing on fixed links as a linear map from demand to arc load
(:class:`EcmpRouting`, with the all-pairs hop counts it is built on), and the AllReduce ring split
that suits such a routing best (:func:`best_ecmp_split`, a small LP; see
:func:`coopt.problems.topoopt.fabric.ecmp_split_solution`).

Guarantees: the map routes every demand on shortest paths only, split at each server over its
shortest-path in-arcs in proportion to their link counts, and conserves flow; the split LP is exact
for ECMP routing because the arc load is linear in the split.
"""

from __future__ import annotations

import math

import numpy as np

from coopt.problems.topoopt.model import (
    Instance,
    busiest_sender,
    candidate_strides,
    mp_matrix,
    ring_bytes,
)
from coopt.problems.topoopt.routing import Columns, solve_lp


def hop_matrix(links: np.ndarray) -> np.ndarray:
    """All-pairs hop counts on the link digraph (inf if unreachable): a breadth-first search from
    every source at once, one vector step per level, each step expanding the frontier's ``(source,
    server)`` pairs over the server's out-arcs. O(n (n + arcs)) work in all, O(diameter) numpy calls."""
    links = np.asarray(links)
    n = len(links)
    tails, heads = np.nonzero(links)  # row-major: the out-arcs of each server are contiguous
    first = np.searchsorted(tails, np.arange(n + 1))
    hops = np.full((n, n), np.inf)
    hops[np.arange(n), np.arange(n)] = 0
    source, server = np.arange(n), np.arange(n)
    level = 0
    while len(source):
        level += 1
        count = first[server + 1] - first[server]
        arc = np.repeat(first[server] - np.cumsum(np.r_[0, count[:-1]]), count) + np.arange(count.sum())
        source, server = np.repeat(source, count), heads[arc]
        new = hops[source, server] == np.inf
        key = np.unique(source[new] * n + server[new])
        source, server = np.divmod(key, n)
        hops[source, server] = level
    return hops


class EcmpRouting:
    """ECMP shortest-path routing on fixed links as a linear map from demand to arc load.

    For source ``s``, the traffic ending at or passing through ``v`` is split over ``v``'s
    shortest-path in-arcs in proportion to their link counts. The map is kept per source as its
    shortest-path DAG: the ``(source, arc)`` pairs of the DAG ordered by the level of the arc's head,
    deepest first, with each arc's fraction ``c_a / (links into its head on the DAG)``. Pricing a
    demand walks the levels once for every source together: what reaches a server at a level (its
    own demand plus what it forwards) is split over its DAG in-arcs and credited to their tails.
    O(n (n + arcs)) to build and per demand priced, O(diameter) numpy calls.
    """

    def __init__(self, links: np.ndarray):
        links = np.asarray(links)
        n = len(links)
        self.n = n
        tails, heads = np.nonzero(links)
        self.tails, self.heads = tails, heads
        self.capacity = links[tails, heads].astype(float)
        hops = hop_matrix(links)
        self.reachable = np.isfinite(hops)
        source, arc = np.nonzero((hops[:, tails] + 1 == hops[:, heads]) & self.reachable[:, heads])  # DAGs
        head_key = source * n + heads[arc]
        weight = np.bincount(head_key, weights=self.capacity[arc], minlength=n * n)
        level = hops[source, heads[arc]].astype(int)
        order = np.argsort(-level, kind="stable")
        self.source, self.arc, level = source[order], arc[order], level[order]
        self.head_key, self.tail_key = head_key[order], source[order] * n + tails[arc[order]]
        self.fraction = self.capacity[self.arc] / weight[self.head_key]
        self.bounds = np.flatnonzero(np.diff(level, prepend=-1, append=-1))  # one run per level

    def source_loads(self, demand: np.ndarray) -> np.ndarray:
        """The load of ``demand`` (``n x n``) on each ``(source, arc)`` pair of the DAGs, in their
        order (``self.source``, ``self.arc``)."""
        n = self.n
        arriving = np.asarray(demand, dtype=float).reshape(-1).copy()  # per (source, server)
        load = np.empty(len(self.arc))
        for lo, hi in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            part = arriving[self.head_key[lo:hi]] * self.fraction[lo:hi]
            load[lo:hi] = part
            arriving += np.bincount(self.tail_key[lo:hi], weights=part, minlength=n * n)
        return load

    def loads(self, demand: np.ndarray) -> np.ndarray:
        """Per-arc load of ``demand`` (same units)."""
        return np.bincount(self.arc, weights=self.source_loads(demand), minlength=len(self.capacity))

    def rate(self, demand: np.ndarray, port_rate: float) -> float:
        """Concurrent-flow rate (iterations per second) of ``demand``; 0 if some of it is unreachable."""
        if (demand[~self.reachable] > 0).any():
            return 0.0
        load = self.loads(demand)
        loaded = load > 0
        return float(np.min(port_rate * self.capacity[loaded] / load[loaded])) if loaded.any() else math.inf

    def flows(self, demand: np.ndarray) -> list[list[float]]:
        """The per-source flows ``[s, i, j, bytes]`` of ``demand`` routed by this map, by source and
        arc."""
        load = self.source_loads(demand)
        keep = np.flatnonzero(load > 0)
        keep = keep[np.lexsort((self.arc[keep], self.source[keep]))]
        return [[int(x), int(self.tails[y]), int(self.heads[y]), float(b)]
                for x, y, b in zip(self.source[keep], self.arc[keep], load[keep], strict=True)]


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
