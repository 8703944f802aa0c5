"""Routing a fixed topology at the papers' size without the full routing LP: column generation over
shortest-path trees and paths, and the dual bound the arc prices give for that topology.

Why: the routing LP (:class:`.routing.TopologyLP`) has a flow column per source and arc, ``n^2 d``
of them, and took 118 s at ``n = 128, d = 8``; a heuristic needs a good feasible routing, and the
checker prices it.

The method (Dantzig-Wolfe on the routing LP, per source). A single-source flow that delivers fixed
demands is a convex combination of arborescences carrying them (the extreme points of an
uncapacitated single-source flow polytope are tree solutions), so the routing LP on ``links`` can
be written over columns: per source ``s``, trees ``T`` carrying its model-parallel row ``M_s.``,
weights ``z_sT`` with ``sum_T z_sT = theta``; per AllReduce group ``g``, stride ``q`` and source ``s``,
paths ``P`` from ``s`` to ``s + q`` carrying ``c_g`` bytes, weights summing to ``mu_gq``, and ``sum_q
mu_gq = theta``; per arc, the load at most its capacity ``u_a = x_a B/8`` (bytes per second, the
weights in iterations per second). The master LP holds the columns found so far; each round prices
every source's shortest-path tree and every ring step's shortest path under the capacity rows'
duals (Bellman-Ford from every source at once, ``O(diameter n^2 d)``) and adds those that improve
it. Each group's strides are restricted to its :data:`STRIDES_PER_GROUP` best by hop count on the
topology (a restriction of the split, so the routing stays feasible, possibly not optimal).

Guarantee: a checker-feasible routing of ``links`` (the flows are combinations of trees and paths,
so they conserve flow exactly) with ring shares on candidate strides; a demand unreachable on
``links`` raises :class:`NoSolution`. Its ``theta`` is at most the routing LP's optimum on
``links``. The prices of every round bound that optimum from above (LP duality for concurrent
flow: for any lengths ``len >= 0``, every routed byte from ``s`` to ``t`` crosses at least
``dist_len(s, t)`` of length and any split charges a group at least its shortest stride, so
``theta <= sum_a u_a len_a / (sum_st M_st dist_len(s, t) + sum_g c_g min_q sum_s dist_len(s,
s + q))``, all strides counted); the least is returned as ``graph_bound``, so the distance to the
best routing of the same links is measured. Cost: ``rounds`` x (one Bellman-Ford from every source,
the trees' loads ``O(n^2)``, a master LP re-solved from its last basis). Deterministic; the
wall-clock guard ``time_limit`` only stops a slow run early.

Source: the path formulation of multicommodity flow and its column generation (Ford and
Fulkerson, "A suggested computation for maximal multi-commodity network flows", Management Science
1958; the length-function duality as in Garg and Koenemann, FOCS 1998); the implementation is ours.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.model import Instance, candidate_strides, mp_matrix, objective, ring_bytes
from coopt.problems.topoopt.routing import quiet_highs

#: Most rounds of the column generation.
ROUNDS = 60
#: Stop when the master's rate is within this of the dual bound (relative).
STOP_GAP = 2e-3
#: Weight of the best-bound lengths in the lengths priced (Wentges' smoothing of the duals).
SMOOTHING = 0.7
#: Rounds of the Frank-Wolfe warm-up (no master solve) that seed the master with columns.
WARM_ROUNDS = 10
#: Sharpness of the warm-up's soft maximum: log-sum-exp of ``beta u / max u``.
BETA = 50.0
#: Candidate strides kept per AllReduce group (its best by hop count on the topology).
STRIDES_PER_GROUP = 4
_INF = 1e30


@dataclass(frozen=True)
class Approximate:
    """A routing of a topology: the solution (checker format), the dual bound on the best routing of
    the same links (iterations/s), and the rounds run."""

    solution: Solution
    graph_bound: float
    rounds: int


class _Arcs:
    """The arcs of ``links`` and the in-arcs of every server, padded to a rectangle."""

    def __init__(self, links: np.ndarray, port_rate: float):
        self.n = n = len(links)
        self.tails, self.heads = np.nonzero(links)
        self.capacity = links[self.tails, self.heads].astype(float) * port_rate
        narc = len(self.tails)
        in_count = np.bincount(self.heads, minlength=n)
        width = max(1, int(in_count.max(initial=0)))
        self.in_arcs = np.full((n, width), narc)  # narc: a padding arc of infinite length
        order = np.argsort(self.heads, kind="stable")
        slot = np.arange(narc) - np.searchsorted(self.heads[order], self.heads[order])
        self.in_arcs[self.heads[order], slot] = order
        self.in_tails = np.append(self.tails, 0)[self.in_arcs]

    def shortest(self, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distances ``dist[s, v]`` under ``length > 0`` and the last arc of a shortest path (-1 at the
        source and where unreachable): Bellman-Ford from every source at once."""
        n = self.n
        in_length = np.append(length, np.inf)[self.in_arcs]
        dist = np.full((n, n), np.inf)
        np.fill_diagonal(dist, 0.0)
        for _ in range(n):
            candidate = dist[:, self.in_tails] + in_length  # [s, v, k]: via v's k-th in-arc
            pick = candidate.argmin(axis=2)
            best = np.take_along_axis(candidate, pick[:, :, None], axis=2)[:, :, 0]
            np.fill_diagonal(best, 0.0)
            new = np.minimum(dist, best)
            if np.array_equal(new, dist):
                break
            dist = new
        last = self.in_arcs[np.arange(n)[None, :], pick]
        last[~np.isfinite(dist) | np.eye(n, dtype=bool)] = -1
        return dist, last

    def tree_flows(self, demand: np.ndarray, dist: np.ndarray, last: np.ndarray) -> np.ndarray:
        """``[s, a]``: the bytes of row ``s`` of ``demand`` crossing arc ``a`` on source ``s``'s tree."""
        n = self.n
        rows = np.arange(n)
        pending = demand.copy()
        flows = np.zeros((n, len(self.tails)))
        order = np.argsort(-dist, axis=1, kind="stable")  # farthest first: children before parents
        for k in range(n - 1):
            v = order[:, k]
            arc = last[rows, v]
            on = arc >= 0
            s, v, arc = rows[on], v[on], arc[on]
            flows[s, arc] = pending[s, v]
            pending[s, self.tails[arc]] += pending[s, v]
        return flows

    def paths(self, last: np.ndarray, offset: int) -> list[np.ndarray]:
        """Per source ``s``, the arcs of its tree path to ``s + offset`` (walked back from the target,
        every source at once)."""
        n = self.n
        sources = np.arange(n)
        current = (sources + offset) % n
        steps: list[list[int]] = [[] for _ in range(n)]
        active = current != sources
        while active.any():
            s = sources[active]
            arc = last[s, current[s]]
            for i, a in zip(s, arc, strict=True):
                steps[i].append(int(a))
            current[s] = self.tails[arc]
            active = current != sources
        return [np.array(a, dtype=np.int64) for a in steps]


@dataclass
class _Column:
    """A column of the master: a tree of ``source`` (``kind = -1``) or a path of ring ``kind``'s step
    from ``source``, with its arc loads (bytes per iteration)."""

    source: int
    kind: int
    arcs: np.ndarray
    load: np.ndarray


class _Master:
    """The restricted master LP (module docstring), rows: a tree row per source with model-parallel
    demand, a path row per (ring, source), a split row per group, a capacity row per arc (loads over
    capacities: weights in iterations/s); columns: ``theta``, ``mu`` per ring, then the columns."""

    def __init__(self, tree_sources: np.ndarray, rings: list[tuple[int, int, float]], n: int,
                 capacity: np.ndarray, ngroups: int):
        self.capacity = capacity
        self.tree_row = np.full(n, -1)
        self.tree_row[tree_sources] = np.arange(len(tree_sources))
        self.r_path = len(tree_sources)
        self.r_split = self.r_path + len(rings) * n
        self.r_cap = self.r_split + ngroups
        nrow = self.r_cap + len(capacity)
        self.highs = highs = quiet_highs()
        # interior point without crossover: the primal simplex stalls on this degenerate master (thousands
        # of iterations per round from its last basis), and interior duals price better than vertex ones
        highs.setOptionValue("solver", "ipm")
        highs.setOptionValue("run_crossover", "off")
        lower = np.r_[np.zeros(self.r_cap), np.full(len(capacity), -_INF)]
        upper = np.r_[np.zeros(self.r_cap), np.ones(len(capacity))]
        no = np.zeros(0, dtype=np.int32)
        highs.addRows(nrow, lower, upper, 0, no, no, np.zeros(0))
        # theta: -1 in every tree row and split row
        theta_rows = np.r_[np.arange(self.r_path), self.r_split + np.arange(ngroups)].astype(np.int32)
        highs.addCol(1.0, 0.0, _INF, len(theta_rows), theta_rows, -np.ones(len(theta_rows)))
        for ring, (g, _, _) in enumerate(rings):  # mu: -1 in its path rows, +1 in its split row
            index = np.r_[self.r_path + ring * n + np.arange(n), self.r_split + g].astype(np.int32)
            highs.addCol(0.0, 0.0, _INF, len(index), index, np.r_[-np.ones(n), 1.0])
        highs.changeObjectiveSense(_maximize())
        self.columns: list[_Column] = []
        self.n = n

    def row(self, column: _Column) -> int:
        if column.kind < 0:
            return int(self.tree_row[column.source])
        return self.r_path + column.kind * self.n + column.source

    def add(self, columns: list[_Column]) -> None:
        for column in columns:
            index = np.r_[self.row(column), self.r_cap + column.arcs].astype(np.int32)
            value = np.r_[1.0, column.load / self.capacity[column.arcs]]
            self.highs.addCol(0.0, 0.0, _INF, len(index), index, value)
        self.columns += columns

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        """``theta`` (iterations/s), the capacity rows' prices (``>= 0``, per byte-second of the arc)
        and the convexity rows' duals (the cost a new column must beat)."""
        self.highs.run()
        solution = self.highs.getSolution()
        duals = np.asarray(solution.row_dual)
        prices = np.abs(duals[self.r_cap:])
        return float(solution.col_value[0]), prices, np.abs(duals[:self.r_split])

    def weights(self) -> np.ndarray:
        values = np.asarray(self.highs.getSolution().col_value)
        return np.maximum(values[len(values) - len(self.columns):], 0.0)

    def mu(self, nrings: int) -> np.ndarray:
        return np.maximum(np.asarray(self.highs.getSolution().col_value)[1:1 + nrings], 0.0)


def _maximize():
    import highspy

    return highspy.ObjSense.kMaximize


def best_strides(instance: Instance, hop: np.ndarray) -> list[tuple[int, int, float]]:
    """Per group its :data:`STRIDES_PER_GROUP` candidate strides of least total hop count on the
    topology whose distances are ``hop``, as ``(group, stride, c_g)``."""
    n = instance.servers
    rows = np.arange(n)
    out = []
    for g, group in enumerate(instance.allreduce):
        strides = candidate_strides(n, group.size)
        cost = [float(hop[rows, (rows + q) % n].sum()) for q in strides]
        for j in np.argsort(cost, kind="stable")[:STRIDES_PER_GROUP]:
            out.append((g, strides[int(j)], ring_bytes(group)))
    return out


def route(instance: Instance, links: np.ndarray, rounds: int = ROUNDS,
          time_limit: float | None = None) -> Approximate:
    """``links`` routed by the column generation of the module docstring, with its dual bound."""
    links = np.asarray(links)
    n = instance.servers
    rows = np.arange(n)
    arcs = _Arcs(links, instance.port_rate)
    mp = mp_matrix(instance)
    np.fill_diagonal(mp, 0.0)
    groups = [(ring_bytes(g), candidate_strides(n, g.size)) for g in instance.allreduce]
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    length = 1.0 / arcs.capacity
    dist, last = arcs.shortest(length)
    rings = best_strides(instance, dist * arcs.capacity.max())
    demand_to = np.concatenate([mp.ravel() > 0] + [np.eye(n, dtype=bool)[(rows + q) % n].ravel()
                                                   for _, q, _ in rings]).reshape(-1, n, n).any(axis=0)
    if not np.isfinite(dist[demand_to]).all():
        raise NoSolution("the topology leaves some demand unreachable")
    tree_sources = np.flatnonzero(mp.sum(axis=1) > 0)
    if len(tree_sources) == 0 and not rings:
        raise NoSolution("no demand to route")
    master = _Master(tree_sources, rings, n, arcs.capacity, len(groups))
    center, graph_bound = _warm_up(arcs, mp, rings, groups, tree_sources, master, length)
    done = 0
    while done < rounds:
        done += 1
        theta, prices, duals = master.solve()
        if theta * (1 + STOP_GAP) >= graph_bound or (deadline is not None and time.perf_counter() > deadline):
            break
        dual_length = prices / arcs.capacity
        scale = float(arcs.capacity @ dual_length)
        columns: list[_Column] = []
        for weight in (SMOOTHING, 0.0):  # Wentges' smoothing; the master's duals alone if it misprices
            length = (weight * center * scale / float(arcs.capacity @ center) + (1 - weight) * dual_length
                      + 1e-6 * scale / float(arcs.capacity.sum()))
            dist, last = arcs.shortest(length)
            bound = _dual_bound(arcs, mp, groups, length, dist)
            if bound < graph_bound:
                graph_bound, center = bound, length
            columns = [c for c in _columns(arcs, mp, rings, tree_sources, dist, last)
                       if float(dual_length[c.arcs] @ c.load) < duals[master.row(c)] * (1 - 1e-9)]
            if columns:
                break
        if not columns:
            break
        master.add(columns)
    return Approximate(_solution(instance, links, arcs, master, rings, groups), graph_bound, done)


def _warm_up(arcs: _Arcs, mp: np.ndarray, rings: list[tuple[int, int, float]],
             groups: list[tuple[float, list[int]]], tree_sources: np.ndarray, master: _Master,
             length: np.ndarray) -> tuple[np.ndarray, float]:
    """:data:`WARM_ROUNDS` rounds of the Frank-Wolfe method on the log-sum-exp of the utilisations
    (the multiplicative weights of Garg and Koenemann for concurrent flow), cheap because no master is
    solved: each round's lengths are the soft maximum's gradient at the current load, its shortest
    trees and paths go into the master (once each), and the load moves towards their joint routing
    (each group on its cheapest kept stride) by the step ``2 / (k + 2)``. Returns the lengths of the
    best dual bound seen, and that bound."""
    seen: set[tuple[int, int, bytes]] = set()
    best, center, load = math.inf, length, None
    for k in range(WARM_ROUNDS):
        dist, last = arcs.shortest(length)
        bound = _dual_bound(arcs, mp, groups, length, dist)
        if bound < best:
            best, center = bound, length
        columns = _columns(arcs, mp, rings, tree_sources, dist, last)
        fresh = []
        for column in columns:
            key = (column.source, column.kind, column.arcs.tobytes())
            if key not in seen:
                seen.add(key)
                fresh.append(column)
        master.add(fresh)
        target = _joint_load(arcs, columns, rings, len(groups), length)
        load = target if load is None else load + 2 / (k + 2) * (target - load)
        utilisation = load / arcs.capacity
        weight = np.exp(BETA * (utilisation / utilisation.max() - 1.0))
        length = (weight / weight.sum() + 1e-6 / len(weight)) / arcs.capacity
    return center, best


def _joint_load(arcs: _Arcs, columns: list[_Column], rings: list[tuple[int, int, float]], ngroups: int,
                length: np.ndarray) -> np.ndarray:
    """Arc loads of the routing that uses every tree of ``columns`` and, per group, the paths of its
    ring that are shortest in total under ``length``."""
    load = np.zeros(len(arcs.tails))
    cost = np.zeros(len(rings))
    for column in columns:
        if column.kind >= 0:
            cost[column.kind] += float(length[column.arcs] @ column.load)
    pick = {}
    for g in range(ngroups):
        mine = [r for r in range(len(rings)) if rings[r][0] == g]
        pick[g] = min(mine, key=lambda r: cost[r])
    chosen = {pick[g] for g in pick}
    for column in columns:
        if column.kind < 0 or column.kind in chosen:
            np.add.at(load, column.arcs, column.load)
    return load


def _dual_bound(arcs: _Arcs, mp: np.ndarray, groups: list[tuple[float, list[int]]], length: np.ndarray,
                dist: np.ndarray) -> float:
    """The module docstring's bound on the best routing of these links, for ``length``, all strides."""
    n = arcs.n
    rows = np.arange(n)
    charge = float((mp * np.where(mp > 0, dist, 0.0)).sum())
    for c, strides in groups:
        charge += c * min(float(dist[rows, (rows + q) % n].sum()) for q in strides)
    return float(arcs.capacity @ length) / charge if charge > 0 else math.inf


def _columns(arcs: _Arcs, mp: np.ndarray, rings: list[tuple[int, int, float]], tree_sources: np.ndarray,
             dist: np.ndarray, last: np.ndarray) -> list[_Column]:
    """The shortest-path tree of every source with model-parallel demand and the shortest path of
    every ring step."""
    out = []
    flows = arcs.tree_flows(mp, dist, last)
    for s in tree_sources:
        used = np.flatnonzero(flows[s] > 0)
        out.append(_Column(int(s), -1, used, flows[s, used]))
    for ring, (_, q, c) in enumerate(rings):
        for s, path in enumerate(arcs.paths(last, q)):
            out.append(_Column(s, ring, path, np.full(len(path), c)))
    return out


def _solution(instance: Instance, links: np.ndarray, arcs: _Arcs, master: _Master,
              rings: list[tuple[int, int, float]], groups: list[tuple[float, list[int]]]) -> Solution:
    """The master's routing in the checker's format, each row's columns normalised by their own total
    (so that flow is conserved exactly, whatever tolerance the master met): source ``s`` sends its
    model-parallel row along its trees in proportion to their weights, and each ring step along its
    paths, the ring's share ``mu_gq / sum_q mu_gq`` of ``c_g``."""
    n = arcs.n
    weights = master.weights()
    total: dict[tuple[int, int], float] = {}
    for weight, column in zip(weights, master.columns, strict=True):
        total[column.source, column.kind] = total.get((column.source, column.kind), 0.0) + weight
    for k, column in enumerate(master.columns):  # a tree row the solve left empty: its first tree
        if column.kind < 0 and total[column.source, -1] <= 0:
            weights[k] = total[column.source, -1] = 1.0
    mu = master.mu(len(rings))
    usable = [r for r in range(len(rings)) if mu[r] > 0 and all(total.get((s, r), 0.0) > 0 for s in range(n))]
    share = np.zeros(len(rings))
    for g in range(len(groups)):
        mine = [r for r in usable if rings[r][0] == g]
        if not mine:
            raise NoSolution(f"the routing of AllReduce group {g} did not converge")
        share[mine] = mu[mine] / mu[mine].sum()
    flows = np.zeros((n, len(arcs.tails)))
    for weight, column in zip(weights, master.columns, strict=True):
        part = 1.0 if column.kind < 0 else share[column.kind]
        if weight > 0 and part > 0:
            fraction = part * weight / total[column.source, column.kind]
            flows[column.source, column.arcs] += fraction * column.load
    ring_share = [[[int(q), float(share[r])] for r, (gr, q, _) in enumerate(rings)
                   if gr == g and share[r] > 0] for g in range(len(groups))]
    s, a = np.nonzero(flows > 0)
    solution: Solution = {
        "links": links.astype(int).tolist(),
        "ring_share": ring_share,
        "flows": [[int(i), int(t), int(h), float(b)]
                  for i, t, h, b in zip(s, arcs.tails[a], arcs.heads[a], flows[s, a], strict=True)],
    }
    solution["objective"] = objective(instance, solution)
    return solution
