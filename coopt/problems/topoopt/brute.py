"""Brute force for TopoOpt on tiny instances: the oracle of the exact model P1.

Every zero-diagonal nonnegative integer ``n x n`` matrix with all row and column sums ``d``
(symmetric ones only, with symmetric links) is enumerated, each is routed by the routing LP
(:class:`coopt.problems.topoopt.routing.RoutingLP`, written apart from P1's Pyomo model), and the
best ``theta`` is the optimum; None when no topology routes the demand. Tiny instances
(:func:`tiny`) have 3 to 5 servers, so there are at most a few hundred matrices.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from coopt.problems.topoopt.model import AllReduceGroup, Instance, ModelParallelGroup
from coopt.problems.topoopt.routing import RoutingLP, all_arcs


def _row_splits(n: int, d: int, i: int) -> list[tuple[int, ...]]:
    """Ways to spread ``d`` links of server ``i`` over the other servers (entry ``i`` is 0)."""
    return [c[:i] + (0,) + c[i:] for c in itertools.product(range(d + 1), repeat=n - 1) if sum(c) == d]


def directed_topologies(n: int, d: int) -> Iterator[np.ndarray]:
    """Every ``d``-regular zero-diagonal integer matrix, rows by depth-first search with column slack."""
    rows = [_row_splits(n, d, i) for i in range(n)]
    chosen: list[tuple[int, ...]] = []
    slack = np.full(n, d)

    def extend(i: int) -> Iterator[np.ndarray]:
        if i == n:
            yield np.array(chosen)
            return
        for row in rows[i]:
            if all(r <= s for r, s in zip(row, slack, strict=True)):
                chosen.append(row)
                slack[:] -= row
                yield from extend(i + 1)
                slack[:] += row
                chosen.pop()

    yield from extend(0)


def symmetric_topologies(n: int, d: int) -> Iterator[np.ndarray]:
    """Every ``d``-regular loopless multigraph on ``n`` servers, as a symmetric matrix: server ``i``
    spreads the ports its lower-numbered neighbours left free over the higher-numbered ones."""
    x = np.zeros((n, n), dtype=int)

    def extend(i: int) -> Iterator[np.ndarray]:
        if i == n:
            yield x.copy()
            return
        need = d - x[i].sum()
        higher = list(range(i + 1, n))
        room = [d - x[j].sum() for j in higher]
        for split in itertools.product(*(range(min(r, need) + 1) for r in room)):
            if sum(split) != need:
                continue
            x[i, higher] = x[higher, i] = split
            yield from extend(i + 1)
        x[i, higher] = x[higher, i] = 0

    yield from extend(0)


def topologies(instance: Instance) -> Iterator[np.ndarray]:
    n, d = instance.servers, instance.degree
    return symmetric_topologies(n, d) if instance.symmetric else directed_topologies(n, d)


def solve(instance: Instance) -> float | None:
    """The optimum ``theta`` over every topology, or None when none routes the demand. One routing
    LP over every arc, each topology setting its capacity rows (HiGHS re-solves from the last basis)."""
    tails, heads = all_arcs(instance.servers)
    lp = RoutingLP(instance, tails, heads, np.zeros(len(tails)))
    best = 0.0
    for links in topologies(instance):
        lp.set_capacity(links[tails, heads])
        best = max(best, lp.theta(lp.solve()))
    return best if best > 0 else None


def tiny(seed: int) -> Instance:
    """A tiny random instance: 3 to 5 servers, degree 1 to 3, symmetric or directed links, an
    AllReduce group and a sparse model-parallel demand (or an all-to-all block)."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([3, 4, 4, 5]))
    symmetric = bool(rng.random() < 0.5)
    d_max = {3: 2, 4: 3, 5: 2}[n]
    d = int(rng.integers(1, d_max + 1))
    if symmetric and n * d % 2:
        d = 2 if d == 1 else d - 1
    sizes = [k for k in range(2, n + 1) if n % k == 0]
    groups = ()
    if rng.random() < 0.8:
        groups = (AllReduceGroup(int(rng.choice(sizes)), float(round(rng.uniform(10, 400)) * 1e6)),)
    demand = []
    for s, t in itertools.permutations(range(n), 2):
        if rng.random() < 0.3:
            demand.append((s, t, float(round(rng.lognormal(3.0, 1.0) * 1e3) * 1e3)))
    blocks = ()
    if rng.random() < 0.2 and n % 2 == 0:
        blocks = (ModelParallelGroup(2, float(round(rng.uniform(1, 50)) * 1e6)),)
    if not groups and not demand and not blocks:
        demand.append((0, 1, 1e7))
    return Instance(n, d, 100e9, groups, tuple(demand), blocks, symmetric=symmetric)
