"""Building blocks of the TopoOpt heuristics: stride rings, damped repeated matching, and solutions
routed on fixed links, by the ECMP map of :mod:`.ecmp` or by the optimal routing LP of :mod:`.routing`.

Every routine that returns a solution returns one of :mod:`coopt.problems.topoopt`: links,
ring shares and per-source flows, with ``objective`` recomputed by the checker's own function.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import networkx as nx
import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.ecmp import EcmpRouting, best_ecmp_split
from coopt.problems.topoopt.model import Instance, demand_matrix, objective
from coopt.problems.topoopt.routing import Routed, route
from coopt.problems.topoopt.strides import circulant_distances

#: Largest n at which the heuristics route by the optimal LP (0.2 s at n = 28, 10-30 s at n = 64
#: under load); above it they route by ECMP with the ring split chosen by a small LP.
LP_SERVERS = 28


# -- stride rings ----------------------------------------------------------------------------


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


def ring_links(n: int, strides: Sequence[int]) -> np.ndarray:
    """Link matrix of the stride permutations ``i -> i + p`` (one port each, parallel links kept)."""
    links = np.zeros((n, n), dtype=int)
    rows = np.arange(n)
    for p in strides:
        np.add.at(links, (rows, (rows + p) % n), 1)
    return links


def paired(n: int, strides: Sequence[int]) -> list[int]:
    """The strides of bidirectional rings: each ``q`` with its reverse ``n - q`` (a duplex ring uses
    two ports); ``q = n/2`` is its own reverse and uses one port."""
    out: list[int] = []
    for q in strides:
        out += [q] if 2 * q == n else [q, n - q]
    return sorted(out)


def circulant_mean_hops(n: int, strides: Sequence[int]) -> float:
    """Mean hop count over all ``n - 1`` offsets of the circulant digraph ``C_n(strides)``."""
    dist = circulant_distances(n, strides)
    return sum(dist[1:]) / (n - 1)


# -- matchings -------------------------------------------------------------------------------


def max_weight_perfect_matching(weights: np.ndarray) -> list[tuple[int, int]]:
    """A maximum-weight perfect matching of the complete graph on ``n`` (even) servers with pair
    weights ``weights[i, j]`` (``i < j``, nonnegative): blossom on the positive pairs (networkx),
    the servers it leaves unmatched paired in index order (they have zero weight to each other, or
    the matching would take that pair), so the result is maximum among perfect matchings."""
    n = len(weights)
    if n % 2:
        raise NoSolution(f"a perfect matching needs an even number of servers, got {n}")
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(
        (int(i), int(j), float(weights[i, j])) for i, j in zip(*np.nonzero(np.triu(weights, 1)), strict=True)
    )
    matched = {tuple(sorted(e)) for e in nx.max_weight_matching(graph)}
    covered = {v for e in matched for v in e}
    rest = [v for v in range(n) if v not in covered]
    return sorted(matched | {(rest[a], rest[a + 1]) for a in range(0, len(rest), 2)})


def repeated_matching(weights: np.ndarray, rounds: int) -> list[np.ndarray]:
    """``rounds`` rounds of maximum-weight perfect matching, damping matched pairs; the link matrices
    of the first ``0, 1, ..., rounds`` rounds (a prefix of this list serves every smaller count).

    Pair weight ``w_ij + w_ji``; after a pair gets its ``c``-th link its weight becomes
    ``w / (c + 1)`` (the code's ``c/(c+1)`` damping), so the greedy value is a lower bound on the
    b-matching P3. Each round is :func:`max_weight_perfect_matching`. Every matrix is symmetric, a
    sum of involutions. Needs ``n`` even. O(rounds * n^3).
    Source: TopoOpt ``SpMulMat`` MP sub-topology (FlexFlow ``src/runtime/network.cc`` l.2059-2109).
    """
    return list(itertools.islice(matching_rounds(weights), rounds + 1))


def matching_rounds(weights: np.ndarray) -> Iterator[np.ndarray]:
    """The link matrices of :func:`repeated_matching` after ``0, 1, 2, ...`` rounds, each computed only
    when asked for (a construction needs as many rounds as it has ports left after its rings)."""
    n = len(weights)
    pair = np.triu(weights + weights.T, 1)
    links = np.zeros((n, n), dtype=int)
    yield links.copy()
    while True:
        for i, j in max_weight_perfect_matching(pair / (1 + np.triu(links, 1))):
            links[i, j] += 1
            links[j, i] += 1
        yield links.copy()


def assignment_rounds(weights: np.ndarray) -> Iterator[np.ndarray]:
    """Rounds of maximum-weight assignment (a permutation without fixed points: every server one
    out-link and one in-link), damping assigned pairs as :func:`repeated_matching` does: the link
    matrices after ``0, 1, 2, ...`` rounds, each computed only when asked for. With directed links
    a port's two directions are free, so a round need not be an involution: demand ``i -> j`` gets a
    link without the unused ``j -> i``. Each round is a maximum-weight perfect matching of the
    bipartite transmit/receive graph without the diagonal (networkx blossom; a derangement always
    exists for ``n >= 2``). O(n^3) per round. Source: ours, the directed counterpart of the MP
    sub-topology."""
    n = len(weights)
    links = np.zeros((n, n), dtype=int)
    yield links.copy()
    while True:
        damped = weights / (1 + links)
        graph = nx.Graph()
        graph.add_nodes_from(range(2 * n))
        # a small constant keeps every off-diagonal pair available, so the matching is perfect
        graph.add_weighted_edges_from((i, n + j, float(damped[i, j]) + 1e-9 * (1 + damped.max()))
                                      for i in range(n) for j in range(n) if i != j)
        matching = nx.max_weight_matching(graph, maxcardinality=True)
        for a, b in matching:
            i, j = (a, b - n) if a < n else (b, a - n)
            links[i, j] += 1
        yield links.copy()


# -- routing ---------------------------------------------------------------------------------


def ecmp_flows(links: np.ndarray, demand: np.ndarray) -> list[list[float]]:
    """Shortest-path routing with equal-cost splitting (in proportion to link counts), one commodity
    per source. Guarantee: every demand is routed on shortest paths and flow is conserved; raises
    NoSolution if a demand's destination is unreachable. O(n (n + arcs)) plus the map's nonzeros.
    Source: TopoOpt routes MP traffic on shortest paths with host forwarding; on a pure circulant
    this is coin-change routing."""
    routing = EcmpRouting(links)
    unreachable = np.argwhere((demand > 0) & ~routing.reachable)
    if len(unreachable):
        s, t = unreachable[0]
        raise NoSolution(f"server {t} is unreachable from server {s}")
    return routing.flows(demand)


def ecmp_solution(instance: Instance, links: np.ndarray, shares: list[list[list[float]]]) -> Solution:
    """``links`` with the given ring shares, routed by ECMP; the checker's objective."""
    demand = demand_matrix(instance, [[(int(q), float(v)) for q, v in g] for g in shares])
    solution = {"links": np.asarray(links).astype(int).tolist(), "ring_share": shares,
                "flows": ecmp_flows(np.asarray(links), demand)}
    solution["objective"] = objective(instance, solution)
    return solution


def lp_solution(instance: Instance, links: np.ndarray) -> Solution:
    """``links`` with the optimal routing and ring split (the routing LP); NoSolution when no routing
    carries the demand."""
    routed = route(instance, np.asarray(links))
    if routed is None:
        raise NoSolution("the routing LP finds no routing: some demand is unreachable on these links")
    return lp_routed_solution(instance, links, routed)


def lp_routed_solution(instance: Instance, links: np.ndarray, routed: Routed) -> Solution:
    """``links`` with ``routed`` (the routing LP's optimum on exactly these links), priced by the
    checker's own objective."""
    solution = {"links": np.asarray(links).astype(int).tolist(), "ring_share": routed.ring_share,
                "flows": routed.flows}
    solution["objective"] = objective(instance, solution)
    return solution


def swapped_links(links: np.ndarray, symmetric: bool, s: int, b: int, c: int, t: int) -> np.ndarray:
    """``links`` with the links ``s -> b`` and ``c -> t`` replaced by ``s -> t`` and ``c -> b``
    (and the reverse arcs with duplex links): a degree-preserving swap (a new matrix)."""
    new = links.copy()
    for i, j, delta in ((s, b, -1), (c, t, -1), (s, t, 1), (c, b, 1)):
        new[i, j] += delta
        if symmetric:
            new[j, i] += delta
    return new


def ecmp_split_solution(instance: Instance, links: np.ndarray) -> Solution:
    """``links`` routed by ECMP with the ring split that ECMP routes best: the small LP
    ``max theta`` s.t. ``theta L_MP(a) + sum_gq c_g R_q(a) mu_gq <= cap(a)`` per arc and
    ``sum_q mu_gq = theta`` per group, where ``L_MP`` and ``R_q`` are the ECMP loads of the
    model-parallel demand and of "every server sends one byte to ``s + q``". Exact for ECMP
    routing (the load is linear in the split). One ECMP map plus one LP of ``arcs`` rows."""
    links = np.asarray(links)
    routing = EcmpRouting(links)
    shares = best_ecmp_split(instance, routing)
    demand = demand_matrix(instance, [[(int(q), float(v)) for q, v in g] for g in shares])
    if (demand[~routing.reachable] > 0).any():
        raise NoSolution("some demand is unreachable on these links")
    solution = {"links": links.astype(int).tolist(), "ring_share": shares, "flows": routing.flows(demand)}
    solution["objective"] = objective(instance, solution)
    return solution


def best_routed(instance: Instance, links: np.ndarray) -> Solution:
    """The routing the heuristics use on ``links``: the optimal LP up to :data:`LP_SERVERS`
    servers, ECMP with its best ring split above."""
    if instance.servers <= LP_SERVERS:
        return lp_solution(instance, links)
    return ecmp_split_solution(instance, links)
