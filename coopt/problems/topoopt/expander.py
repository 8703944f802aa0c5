"""``expander_search``: low-distance regular graphs (expanders) annealed on the demand-weighted hop
count, routed by the routing LP.

Why: on all-to-all and mixed traffic the ring-and-matching constructions of TopoOpt's TopologyFinder
have long paths (a stride ring plus matchings reaches few servers in few hops), while every byte
that crosses ``h`` arcs uses ``h`` arcs' capacity. A topology whose demand-weighted hop count
``H = sum_st D_st dist(s, t)`` is small can carry the demand at up to ``n d (B/8) / H``
(the same counting as the Moore bound of :mod:`.bound`, with the topology's own distances):
the uniform-traffic throughput argument of Singla, Godfrey and Kolla, "High Throughput Data Center
Topology Design", NSDI 2014 (throughput <= total capacity / (demand x mean shortest path), random
regular graphs within a few per cent of it), and the order/degree problem of the Graph Golf
competition (graphgolf.nii.ac.jp: regular graphs of least mean shortest-path length). The best
known such graphs on these sizes come from randomised edge-swap searches of exactly this kind.

The search: start from a circulant (strides ``1..d/2``, with duplex links and odd ``d`` the diameter
matching ``i <-> i + n/2``; directed: the arcs ``i -> i + 1..d``), then simulated annealing over
degree-preserving swaps of two links (``{s,t},{u,v} -> {s,u},{t,v}`` duplex, ``s->t, u->v ->
s->v, u->t`` directed) that keep the graph simple, scored by ``H`` with the AllReduce traffic charged
at its best stride (``c_g min_q sum_s dist(s, s + q)``, the split the routing LP would favour on a
uniform graph) and a graph that leaves some demand unreachable charged more than any that does not;
``dist`` is recomputed by breadth-first search in matrix form after each swap
(``O(diameter n^3)`` arithmetic); it never routes inside the loop. The annealed graph
is routed once: up to :data:`LP_ROUTING_SERVERS` servers by the routing LP
(:class:`.routing.TopologyLP`, P1 with the links fixed) solved by HiGHS' interior-point method with
crossover (about 50x faster than the simplex at ``n = 64``); above, where that LP takes minutes
(118 s at ``n = 128, d = 8``), by the column generation of :mod:`.concurrent_flow` within
:data:`ROUTING_SECONDS`, with the annealing's guard cut to :data:`LARGE_GUARD_SECONDS`.

Guarantee: a checker-feasible simple ``d``-regular topology (with duplex links ``n d`` even, which
the loader enforces), with the optimal routing and ring split on it up to
:data:`LP_ROUTING_SERVERS` servers (above, a feasible one); its ``theta`` is never above
the optimum (it is a point of P1's space); no optimality claim. Cost:
``min(ANNEAL_STEPS_PER_SERVER n, ANNEAL_WORK / n^3)`` swaps of ``O(diameter n^3)`` arithmetic
each, plus one LP of ``n^2 d`` flow columns (above :data:`LP_ROUTING_SERVERS` servers, at most
:data:`ROUTING_SECONDS` of column generation). Deterministic for a seed up to
:data:`LP_ROUTING_SERVERS` servers (a wall-clock guard, ``time_limit``, only stops a pathological
run early); above, the annealing's guard and the column generation's budget are wall-clock, so a
loaded machine may stop either sooner. Source: ours, after Singla et al. (NSDI
2014) and the Graph Golf competition's edge-swap searches (facts only, no code).

Measured (bench machine, seed 0): on uniform all-to-all of 32 servers of degree 3 the annealing
reaches the Moore distance profile (mean hop count 91/31, so the Moore bound is attained as a hop
count) and the LP routes 0.2 % under it; at 64 servers of degree 4 the mean hop count is 1.5-2.6 %
above Moore's, depending on the swaps spent (a graph of degree 4 and girth 7 needs 67 vertices,
so part of that is the bound's).
"""

from __future__ import annotations

import math
import time

import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.concurrent_flow import route
from coopt.problems.topoopt.fabric import lp_routed_solution
from coopt.problems.topoopt.model import Instance, candidate_strides, mp_matrix, ring_bytes
from coopt.problems.topoopt.routing import TopologyLP

#: Annealing steps per server (swaps proposed), up to :data:`ANNEAL_WORK`; deterministic for a seed.
ANNEAL_STEPS_PER_SERVER = 400
#: Cap on ``steps x n^3`` (a step's distance recomputation is ``O(diameter n^3)`` arithmetic): the
#: annealing takes a few seconds at every size (measured: 0.1 ms per step at n = 32, 0.2 at 64, 1.6
#: at 128, on the loaded 2-core bench machine).
ANNEAL_WORK = 2e10
#: Starting temperature of the annealing, in units of the mean nonzero demand x one hop; cooled
#: linearly to zero.
START_TEMPERATURE = 0.5
#: Up to this many servers the annealed graph is routed by the routing LP (interior point: 1-11 s at
#: n = 64, d = 4; the simplex 25-75 s). Above, the LP took 118 s at n = 128, d = 8 (and ECMP on the
#: annealed graph reached only half of the best heuristic there), so column generation routes it.
LP_ROUTING_SERVERS = 64
#: Default wall-clock guard of the annealing, seconds.
GUARD_SECONDS = 40.0
#: Above :data:`LP_ROUTING_SERVERS` servers: the annealing's guard and the column generation's
#: budget, seconds (with 20 + 25 s a run took 55 s at n = 128, d = 8 under load: too near the
#: bench's 60 s per heuristic).
LARGE_GUARD_SECONDS = 15.0
ROUTING_SECONDS = 15.0


def distances(links: np.ndarray) -> np.ndarray:
    """Hop distances between every ordered pair on ``links`` (``n`` where unreachable), by breadth-first
    search in matrix form."""
    n = len(links)
    arcs = (links > 0).astype(np.float32)
    dist = np.full((n, n), n, dtype=np.int64)
    np.fill_diagonal(dist, 0)
    reach = np.eye(n, dtype=bool)
    frontier = reach
    hop = 0
    while True:
        hop += 1
        new = ((frontier.astype(np.float32) @ arcs) > 0) & ~reach
        if not new.any():
            return dist
        dist[new] = hop
        reach = reach | new
        frontier = new


class HopCost:
    """``H(links)``: the demand-weighted hop count of the module docstring (model-parallel bytes at
    their distance, each AllReduce group's bytes at its cheapest candidate stride)."""

    def __init__(self, instance: Instance):
        n = instance.servers
        self.mp = mp_matrix(instance)
        np.fill_diagonal(self.mp, 0.0)
        rows = np.arange(n)
        self.rings = [(ring_bytes(g), [(rows, (rows + q) % n) for q in candidate_strides(n, g.size)])
                      for g in instance.allreduce]
        weights = [self.mp[self.mp > 0]] + [np.array([c]) for c, _ in self.rings]
        flat = np.concatenate(weights) if weights else np.zeros(0)
        self.scale = float(flat.mean()) if len(flat) else 1.0
        #: more than ``H`` of any graph that carries the demand (every byte at most ``n`` hops)
        self.penalty = n * (float(self.mp.sum()) + n * sum(c for c, _ in self.rings)) + 1.0

    def __call__(self, links: np.ndarray) -> float:
        """``H``, plus :attr:`penalty` per model-parallel demand, and per group without a stride, that
        the links leave unreachable (so every graph that can carry the demand scores below every graph
        that cannot)."""
        n = len(links)
        dist = distances(links)
        total = float((self.mp * dist).sum()) + self.penalty * int(((self.mp > 0) & (dist >= n)).sum())
        for c, offsets in self.rings:
            reachable = [float(dist[a, b].sum()) for a, b in offsets if (dist[a, b] < n).all()]
            total += c * min(reachable) if reachable else self.penalty
        return total


def circulant(n: int, d: int, symmetric: bool) -> np.ndarray:
    """A simple ``d``-regular start: duplex strides ``1..floor(d/2)`` both ways plus, for odd ``d``, the
    matching ``i <-> i + n/2``; directed arcs ``i -> i + 1..d``."""
    links = np.zeros((n, n), dtype=np.int64)
    rows = np.arange(n)
    if not symmetric:
        for k in range(1, d + 1):
            links[rows, (rows + k) % n] = 1
        return links
    for k in range(1, d // 2 + 1):
        links[rows, (rows + k) % n] = 1
        links[(rows + k) % n, rows] = 1
    if d % 2:
        links[rows, (rows + n // 2) % n] = 1
    return links


def anneal(instance: Instance, seed: int = 0, steps: int | None = None,
           time_limit: float | None = None) -> tuple[np.ndarray, float]:
    """The least-``H`` topology the annealing visits, and its ``H`` (module docstring)."""
    n, d, symmetric = instance.servers, instance.degree, instance.symmetric
    rng = np.random.default_rng(seed)
    cost_of = HopCost(instance)
    links = circulant(n, d, symmetric)
    cost = cost_of(links)
    best, best_links = cost, links.copy()
    if steps is None:
        steps = min(ANNEAL_STEPS_PER_SERVER * n, int(ANNEAL_WORK / n**3))
    deadline = time.perf_counter() + (GUARD_SECONDS if time_limit is None else time_limit)
    tails, heads = np.nonzero(np.triu(links) if symmetric else links)
    if len(tails) < 2:  # a single link (or none): no swap exists
        steps = 0
    for step in range(steps):
        if time.perf_counter() > deadline:
            break
        i, j = rng.choice(len(tails), 2, replace=False)
        s, t, u, v = int(tails[i]), int(heads[i]), int(tails[j]), int(heads[j])
        if symmetric and rng.random() < 0.5:
            u, v = v, u
        # duplex: {s,t},{u,v} -> {s,u},{t,v}; directed: s->t, u->v -> s->v, u->t
        added = ((s, u), (t, v)) if symmetric else ((s, v), (u, t))
        if len({s, t, u, v}) < 4 or any(links[p, q] for p, q in added):
            continue
        _set(links, symmetric, ((s, t), (u, v)), 0)
        _set(links, symmetric, added, 1)
        new = cost_of(links)
        temperature = START_TEMPERATURE * cost_of.scale * (1.0 - step / steps)
        if new <= cost or (temperature > 0 and rng.random() < math.exp((cost - new) / temperature)):
            cost = new
            (tails[i], heads[i]), (tails[j], heads[j]) = added
            if new < best:
                best, best_links = new, links.copy()
        else:
            _set(links, symmetric, added, 0)
            _set(links, symmetric, ((s, t), (u, v)), 1)
    return best_links, best


def _set(links: np.ndarray, symmetric: bool, pairs: tuple[tuple[int, int], ...], value: int) -> None:
    for p, q in pairs:
        links[p, q] = value
        if symmetric:
            links[q, p] = value


def lp_route(instance: Instance, links: np.ndarray) -> Solution:
    """``links`` with the optimal routing and ring split (the routing LP, interior point + crossover);
    NoSolution when some demand is unreachable."""
    lp = TopologyLP(instance)
    lp.highs.setOptionValue("solver", "ipm")
    if lp.solve(links) <= 0:
        raise NoSolution("the annealed topology leaves some demand unreachable")
    return lp_routed_solution(instance, links, lp.routed())


def expander_search(instance: Instance, seed: int = 0, steps: int | None = None,
                    time_limit: float | None = None) -> Solution:
    """The annealed low-hop-count regular topology, routed optimally up to :data:`LP_ROUTING_SERVERS`
    servers and by column generation above (module docstring)."""
    if instance.servers <= LP_ROUTING_SERVERS:
        links, _ = anneal(instance, seed, steps, time_limit)
        return lp_route(instance, links)
    links, _ = anneal(instance, seed, steps, LARGE_GUARD_SECONDS if time_limit is None else time_limit)
    return route(instance, links, time_limit=ROUTING_SECONDS).solution
