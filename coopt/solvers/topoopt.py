"""TopoOpt heuristics: stride rings, damped repeated matching, shortest-path routing, TopologyFinder.

Each function states its guarantee, running time and source (Wang et al., NSDI 2023, and the
authors' simulator sys-netai/TopoOpt-FlexFlow ``src/runtime/network.cc``, as summarised in the
research notes section 1(c); re-implemented here from that description).

Every ``HEURISTICS`` entry returns a solution of :mod:`coopt.formulations.topoopt`: links,
ring shares and per-source flows, whose ``objective`` is the checker's concurrent-flow rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
import numpy as np

from coopt.formulations.topoopt import (
    Instance,
    build,
    candidate_strides,
    circulant_distances,
    demand_matrix,
    extract,
    mp_matrix,
    objective,
    ring_bytes,
)
from coopt.problem import Solution, SolveOptions
from coopt.solvers.exact import NoSolution, solve_model

# -- building blocks -------------------------------------------------------------------------


def select_permutations(candidates: Sequence[int], count: int, exclude: Sequence[int] = ()) -> list[int]:
    """SelectPermutations: ``count`` strides spaced roughly geometrically over ``candidates``.

    Walk ``cur = min``, ``cur *= (max/min)^(1/(count-1))``, taking at each step the first unused
    candidate ``>= cur``; the index is clamped to the largest unused candidate (the authors' walk
    can overshoot it through rounding and then asserts). ``exclude`` are strides already taken.
    Guarantee: exactly ``count`` strides, distinct while the pool lasts (beyond that whole copies
    of the pool, i.e. parallel rings), the smallest always among them.
    O(count * |candidates|). Source: TopoOpt simulator, one-directional rings.
    """
    pool = sorted(c for c in candidates if c not in set(exclude)) or sorted(candidates)
    if count >= len(pool):
        copies, rest = divmod(count, len(pool))
        return sorted(pool * copies + (select_permutations(pool, rest) if rest else []))
    ratio = (pool[-1] / pool[0]) ** (1 / (count - 1)) if count > 1 else 1.0
    chosen: list[int] = []
    cur = float(pool[0])
    for _ in range(count):
        free = [c for c in pool if c not in chosen]
        at_least = [c for c in free if c >= cur - 1e-9]
        chosen.append(at_least[0] if at_least else free[-1])
        cur *= ratio
    return sorted(chosen)


def repeated_matching(weights: np.ndarray, rounds: int) -> np.ndarray:
    """``rounds`` rounds of maximum-weight perfect matching, damping matched pairs.

    Pair weight ``w_ij + w_ji``; after a pair gets its ``c``-th link its weight becomes
    ``w / (c + 1)`` (the code's ``c/(c+1)`` damping), so the greedy value is a lower bound on the
    b-matching P3. Each round matches positive-weight pairs with the blossom algorithm (networkx)
    and pairs the leftover servers in index order (leftovers have zero weight to each other, so
    the round is a maximum-weight *perfect* matching). Returns the symmetric link-count matrix, a
    sum of ``rounds`` involutions. Needs ``n`` even. O(rounds * n^3).
    Source: TopoOpt ``SpMulMat`` MP sub-topology.
    """
    n = len(weights)
    if n % 2:
        raise NoSolution(f"a perfect matching needs an even number of servers, got {n}")
    pair = np.triu(weights + weights.T, 1)
    links = np.zeros((n, n), dtype=int)
    for _ in range(rounds):
        damped = pair / (1 + np.triu(links, 1))
        graph = nx.Graph()
        graph.add_nodes_from(range(n))
        graph.add_weighted_edges_from(
            (int(i), int(j), float(damped[i, j])) for i, j in zip(*np.nonzero(damped), strict=True)
        )
        matched = {tuple(sorted(e)) for e in nx.max_weight_matching(graph)}
        covered = {v for e in matched for v in e}
        rest = [v for v in range(n) if v not in covered]
        matched |= {(rest[a], rest[a + 1]) for a in range(0, len(rest), 2)}
        for i, j in matched:
            links[i, j] += 1
            links[j, i] += 1
    return links


def ring_links(n: int, strides: Sequence[int]) -> np.ndarray:
    """Link matrix of the stride permutations ``i -> i + p`` (one port each, parallel links kept)."""
    links = np.zeros((n, n), dtype=int)
    for p in strides:
        for i in range(n):
            links[i, (i + p) % n] += 1
    return links


def ecmp_flows(links: np.ndarray, demand: np.ndarray) -> list[list[float]]:
    """Shortest-path routing with equal-cost splitting, one commodity per source.

    For source ``s``: BFS distances on the link digraph; nodes are processed farthest first, and
    the traffic ending at or passing through ``v`` is split over ``v``'s shortest-path in-arcs in
    proportion to their link counts. Guarantee: every demand is routed on shortest paths, flow is
    conserved exactly (up to rounding). O(n * (n + arcs)). Raises NoSolution if a demand's
    destination is unreachable. Source: TopoOpt routes MP traffic on shortest paths with host
    forwarding (the paper uses k-shortest paths); on a pure circulant this is coin-change routing.
    """
    n = len(links)
    succ = [np.flatnonzero(links[i]).tolist() for i in range(n)]
    flows: list[list[float]] = []
    for s in range(n):
        if not demand[s].any():
            continue
        dist = [math.inf] * n
        dist[s] = 0
        order = [s]
        for v in order:
            for w in succ[v]:
                if dist[w] == math.inf:
                    dist[w] = dist[v] + 1
                    order.append(w)
        unreachable = [t for t in np.flatnonzero(demand[s]) if dist[t] == math.inf]
        if unreachable:
            raise NoSolution(f"server {unreachable[0]} is unreachable from server {s}")
        through = demand[s].astype(float).copy()
        through[s] = 0.0
        for v in reversed(order[1:]):
            if through[v] <= 0:
                continue
            preds = [u for u in range(n) if links[u, v] and dist[u] == dist[v] - 1]
            weight = sum(int(links[u, v]) for u in preds)
            for u in preds:
                amount = through[v] * int(links[u, v]) / weight
                flows.append([s, u, v, amount])
                through[u] += amount
    return flows


def circulant_mean_hops(n: int, strides: Sequence[int]) -> float:
    """Mean hop count over all ``n - 1`` offsets of the circulant digraph ``C_n(strides)``."""
    dist = circulant_distances(n, strides)
    return sum(dist[1:]) / (n - 1)


def _solution(instance: Instance, links: np.ndarray, shares: list[list[list[float]]]) -> Solution:
    demand = demand_matrix(instance, [[(int(q), float(v)) for q, v in g] for g in shares])
    solution = {
        "links": links.astype(int).tolist(),
        "ring_share": shares,
        "flows": ecmp_flows(links, demand),
    }
    solution["objective"] = objective(instance, solution)
    return solution


def _nearest_candidate(n: int, candidates: Sequence[int], strides: Sequence[int]) -> int:
    """The candidate stride fewest hops away over the ring strides (coin change), smallest first."""
    dist = circulant_distances(n, strides)
    return min(candidates, key=lambda q: (dist[q], q))


def _ring_plan(instance: Instance, rings: int) -> tuple[list[int], list[list[list[float]]]]:
    """Give ``rings`` stride rings to the AllReduce groups, proportionally to their ring bytes.

    Groups are taken by traffic (largest first), each gets ``>= 1`` ring while rings last, and one
    ring always spans all ``n`` servers (TopoOpt's connectivity guarantee). Groups left without a
    ring send on the candidate stride nearest over the chosen strides (coin change).
    """
    n = instance.servers
    if not instance.allreduce:
        return select_permutations(candidate_strides(n, n), rings), []
    order = sorted(range(len(instance.allreduce)), key=lambda g: -ring_bytes(instance.allreduce[g]))
    spanning = any(instance.allreduce[g].size == n for g in order[:rings])
    budget = rings if spanning else rings - 1
    counts = dict.fromkeys(order, 0)
    for g in order[:budget]:
        counts[g] = 1
    for _ in range(budget - sum(counts.values())):  # D'Hondt: next ring to the largest bytes per ring
        g = max(order, key=lambda h: ring_bytes(instance.allreduce[h]) / (counts[h] + 1))
        counts[g] += 1
    strides: list[int] = []
    own: dict[int, list[int]] = {}
    for g in order:
        if counts[g]:
            own[g] = select_permutations(candidate_strides(n, instance.allreduce[g].size), counts[g], strides)
            strides += own[g]
    if not spanning:
        strides += select_permutations(candidate_strides(n, n), 1, strides)
    shares = []
    for g, group in enumerate(instance.allreduce):
        if g in own:
            shares.append([[q, own[g].count(q) / len(own[g])] for q in sorted(set(own[g]))])
        else:
            shares.append([[_nearest_candidate(n, candidate_strides(n, group.size), strides), 1.0]])
    return strides, shares


# -- heuristics ------------------------------------------------------------------------------


def topology_finder(instance: Instance, seed: int = 0) -> Solution:
    """TopologyFinder: split the degree between AllReduce rings and model-parallel matchings.

    ``d_A = round(d T_A / (T_A + T_MP))`` (at least 1 ring; all of ``d`` when ``n`` is odd), with
    ``T_A = n sum_g c_g`` and ``T_MP = sum M``; rings from TotientPerms + SelectPermutations per
    group (one always Hamiltonian); ``d - d_A`` rounds of damped max-weight matching on ``M``;
    ECMP shortest-path routing. Guarantee: a ``d``-regular topology (``d`` permutations) that is
    strongly connected, so every demand is routed. O(d n^3) (the matchings dominate).
    Deterministic; ``seed`` unused. Source: TopoOpt ``SpMulMat`` (the paper's degree split; the
    released code sets ``d_A = d``, which is :func:`rings_only`).
    """
    n, d = instance.servers, instance.degree
    mp = mp_matrix(instance)
    t_a = n * sum(ring_bytes(g) for g in instance.allreduce)
    t_mp = float(mp.sum())
    rings = d if n % 2 else min(d, max(1, round(d * t_a / (t_a + t_mp))))
    strides, shares = _ring_plan(instance, rings)
    links = ring_links(n, strides)
    if d > rings:
        links += repeated_matching(mp, d - rings)
    return _solution(instance, links, shares)


def rings_only(instance: Instance, seed: int = 0) -> Solution:
    """All ``d`` ports as stride rings (the released TopologyFinder, ``d_A = d``); MP traffic is
    coin-change routed over the ring strides. Guarantee: a strongly connected circulant. O(d n^2).
    Deterministic. Source: TopoOpt simulator."""
    strides, shares = _ring_plan(instance, instance.degree)
    return _solution(instance, ring_links(instance.servers, strides), shares)


def matching_only(instance: Instance, seed: int = 0) -> Solution:
    """One Hamiltonian stride-1 ring (for connectivity) plus ``d - 1`` rounds of damped max-weight
    matching on the *total* demand, each group's AllReduce kept on its base stride ``n/k`` (a
    demand-oblivious ring order, no mutability). Guarantee: a strongly connected ``d``-regular
    topology; NoSolution if ``n`` is odd and ``d > 1``. O(d n^3). Deterministic. Source: the MP
    step of TopoOpt applied to all traffic, as a baseline for the degree split."""
    n = instance.servers
    base = [[(n // g.size, 1.0)] for g in instance.allreduce]
    links = ring_links(n, [1])
    if instance.degree > 1:
        links += repeated_matching(demand_matrix(instance, base), instance.degree - 1)
    return _solution(instance, links, [[[q, v] for q, v in g] for g in base])


def route_lp(instance: Instance, links: np.ndarray) -> Solution:
    """Optimal routing and AllReduce ring split on a fixed topology: P1 with ``x`` fixed, an LP.

    Guarantee: the best concurrent-flow rate any routing achieves on ``links`` (so never below
    ECMP on the same links); NoSolution when some demand cannot be routed at all. Polynomial
    (one LP with ``n`` flow columns per link), but tens of seconds from ``n = 64`` on, so it is
    a library step for tests and the benchmark, not a registered heuristic.
    """
    model = build(instance, links)
    result = solve_model(model, SolveOptions())
    if result.status != "optimal" or not result.objective:
        raise NoSolution(f"routing LP ended {result.status} (a demand may be unreachable on these links)")
    solution = extract(model, instance)
    solution["objective"] = objective(instance, solution)
    return solution


HEURISTICS = {
    "topology_finder": topology_finder,
    "rings_only": rings_only,
    "matching_only": matching_only,
}
