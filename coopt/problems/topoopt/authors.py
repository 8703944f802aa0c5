"""The authors' TopologyFinder as released, transcribed in our own code: ``topoopt_authors``.

Source: hipersys-team/FlexFlow at b1526834 (HEAD), ``src/runtime/network.cc``, class ``SpMulMat``
(byte-identical to sys-netai/TopoOpt-FlexFlow); the pre-final degree split is that of commit
0a8823d8. Line numbers below are of network.cc at HEAD unless a file is named. The simulator always
builds it bidirectional: ``new SpMulMat(machine, node_degree, true)`` (``simulator.cu:479-480``).

1. **Demand.** Every AllReduce task of group size ``k`` and ``S`` bytes adds ``S (2k - 1) / k`` to its
   size's weight (l.1740, truncated to an integer: the map holds ``uint64_t``); one of our groups is
   ``n/k`` such tasks, one per coset. Model-parallel bytes are summed per ordered pair (l.1732).
2. **Degree split** (``get_dp_mp_degree``, l.1852-1899). HEAD: every port to AllReduce rings,
   ``dp = d, mp = 0`` (l.1871-1872; the proportional split is commented out, l.1873-1892). Pre-final
   (0a8823d8): ``dp = lround(d T_dp / T)``, ``mp = lround(d T_mp / T)`` with ``T_dp = sum_tasks S
   (2k - 1)`` (l.1864, not divided by ``k``) and ``T_mp`` the model-parallel bytes; an odd ``dp`` is
   raised by one and ``mp`` lowered (l.1877-1880), ``dp = 0`` becomes 2 (l.1881-1885);
   ``dp + mp = d`` is asserted (l.1893).
3. **Ring allocation** (``generate_dp_topology``, l.1901-2057). Sizes sorted by weight, heaviest
   first (ties: larger size first, ``std::greater`` on (weight, size), l.1908). The ring count
   ``T dp / w`` (l.1922) is at least ``dp``, doubled for bidirectional rings, then clamped to the
   ports left (l.1927-1930, asserting it even), so the heaviest size takes every ring port. If it
   does not span all servers, two of its ports go to a forced ``+-1`` Hamiltonian ring (l.1939-1945).
4. **Strides** (``choose_n_geo``, l.1808-1831). ``m`` = ports / 2 strides over the size's candidates
   ``C_k`` (``construct_candidate_jumps``, l.1833-1850): ``m = 1`` takes the smallest; otherwise
   ``ratio = (max/min)^(1/m)`` (bidirectional: exponent ``1/m``, not ``1/(m - 1)``), from ``cur = min``
   the first candidate ``>= cur`` not yet taken (l.1821-1825), ``cur *= ratio``. Each stride ``q`` is
   laid with its reverse ``n - q`` (l.1993-1999) on every coset (``add_ring``, l.2111-2124: a stride
   of cycle length 2 gets two links each way).
5. **Groups without rings** (l.2003-2051). ``all_coin_change`` (l.2204-2273) is a level-by-level
   search over ``Z_n`` with the chosen strides as coins, ties broken by a coin flip; for each
   candidate ``cj`` of the size (ascending) ``query_path`` (l.2275-2287) reads a coin sequence; the
   solutions are kept in a set ordered by length only (l.2013-2021), so the first path of the
   shortest length wins, with its mirror ``n - x`` per coin (l.2044-2046). The group's traffic goes
   half on each, hop by hop along the coins taken from the second one round (``get_dp_ncomms``,
   l.2596-2625: ``paths[i][(j + 1) % size]``).
6. **Matchings** (pre-final only, ``generate_mp_matching``, l.2059-2109): ``mp`` rounds of blossom
   minimum-cost perfect matching with cost ``max - w``; the cost of the pair ``{a < b}`` is written
   last for ``(i, j) = (b, a)`` (l.2100-2106), so its weight is the demand ``b -> a`` alone. After a
   round a matched pair's demand is damped by ``c / (c + 1)`` with ``c`` its matching links
   (l.2079, l.2084). An odd ``mp`` with bidirectional links is asserted away (l.2062).
7. **Routing.** AllReduce: every member sends ``2 (k-1)/k S / npath`` on each of its size's paths
   (``expand_allreduce``, simulator.cc:1840). Model-parallel: the direct link when there is one,
   otherwise one shortest path per pair found by a BFS with shuffled neighbours and coin-flip ties
   (``ShortestPathNetworkRoutingStrategy::get_routes``, l.256-309, installed at
   machine_model.cc:929); a link of count ``c`` carries ``c`` times the port rate
   (machine_model.cc:923).

Where the code would abort we raise :class:`coopt.problem.NoSolution` with the line: an odd degree
(asserts at l.1929 and l.2062), no AllReduce group (l.1940 reads the last entry of an empty list),
more strides asked than a size has candidates (l.1822 walks past the end), an odd ``n`` with
matchings (the blossom code finds no perfect matching), ``dp + mp != d`` (l.1893).

What is ours, not theirs: the random draws (their generator is seeded from ``std::random_device``,
l.23-24; ours from ``seed``); the shortest path per pair is drawn by walking back from the
destination to a random predecessor on the BFS tree, not by their shuffled BFS (both give one
shortest path per pair at random); blossom ties are broken by networkx, not by their Blossom V port.
"""

from __future__ import annotations

import math

import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.ecmp import hop_matrix
from coopt.problems.topoopt.fabric import max_weight_perfect_matching
from coopt.problems.topoopt.model import Instance, candidate_strides, mp_matrix, objective


def degree_split(instance: Instance, split: str) -> tuple[int, int]:
    """``(dp, mp)``: ring ports and matching ports, HEAD (``"head"``) or pre-final (``"prefinal"``)."""
    d = instance.degree
    if split == "head":
        return d, 0
    dp, mp = _prefinal_split(instance)
    if dp + mp != d:
        raise NoSolution(f"the pre-final split gives dp = {dp}, mp = {mp} for degree {d} (network.cc l.1893 "
                         "asserts)")
    return dp, mp


def _prefinal_split(instance: Instance) -> tuple[int, int]:
    """The pre-final ``(dp, mp)`` before its ``dp + mp = d`` assertion (l.1864-1885)."""
    n, d = instance.servers, instance.degree
    t_dp = sum((n // g.size) * g.bytes * (2 * g.size - 1) for g in instance.allreduce)
    t_mp = float(mp_matrix(instance).sum())
    total = t_dp + t_mp
    dp, mp = _lround(t_dp / total * d), _lround(t_mp / total * d)
    if dp % 2:
        dp, mp = dp + 1, mp - 1
    if dp == 0:
        dp, mp = dp + 2, mp - 2
    return dp, mp


def released_applies(instance: Instance) -> bool:
    """Where ``topoopt_authors`` is built for: an even degree (the released code lays bidirectional
    rings only, l.1929) and an AllReduce group of at least two servers (l.1940). A structural test;
    the stride walk may still run out of candidates (l.1822), which the heuristic reports."""
    return instance.degree % 2 == 0 and bool(size_weights(instance))


def prefinal_applies(instance: Instance) -> bool:
    """Where ``topoopt_authors_prefinal`` is built for: as :func:`released_applies`, and a pre-final
    degree split the released code accepts (``dp + mp = d``, l.1893; an even ``mp``, l.2062; an even
    ``n`` when there are matchings)."""
    if not released_applies(instance):
        return False
    dp, mp = _prefinal_split(instance)
    return dp + mp == instance.degree and mp % 2 == 0 and (mp == 0 or instance.servers % 2 == 0)


def _lround(x: float) -> int:
    """C's ``lround``: halves away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def size_weights(instance: Instance) -> dict[int, int]:
    """Per group size, ``sum_tasks floor(S (2k - 1) / k)`` (l.1740)."""
    n = instance.servers
    weights: dict[int, int] = {}
    for g in instance.allreduce:
        if g.size > 1:
            per_task = math.floor(g.bytes * (2 * g.size - 1) / g.size)
            weights[g.size] = weights.get(g.size, 0) + (n // g.size) * per_task
    return weights


def choose_n_geo(candidates: list[int], m: int) -> list[int]:
    """l.1808-1831 with ``bidir = true``."""
    if m == 1:
        return [candidates[0]]
    ratio = (candidates[-1] / candidates[0]) ** (1.0 / m)
    chosen: set[int] = set()
    cur = float(candidates[0])
    for _ in range(m):
        if cur > candidates[-1]:
            raise NoSolution("choose_n_geo's walk passed the largest candidate (network.cc l.1820 asserts)")
        index = int(np.searchsorted(candidates, cur, side="left"))
        while index < len(candidates) and candidates[index] in chosen:
            index += 1
        if index == len(candidates):
            raise NoSolution(f"{m} strides asked of {len(candidates)} candidates: choose_n_geo walks past "
                             "the end of the list (network.cc l.1822)")
        chosen.add(candidates[index])
        cur *= ratio
    return sorted(chosen)


def ring_allocation(instance: Instance, dp: int) -> list[tuple[int, int]]:
    """``(group size, ring ports)`` of l.1907-1956, heaviest size first."""
    n = instance.servers
    weights = size_weights(instance)
    if not weights:
        raise NoSolution("the released TopologyFinder needs an AllReduce group: with none, network.cc l.1940 "
                         "reads the last entry of an empty ring list")
    ordered = sorted(((w, k) for k, w in weights.items()), reverse=True)
    total = sum(weights.values())
    rings: list[list[int]] = []
    assigned = 0
    all_ring = False
    for weight, k in ordered:
        count = max(1, total * dp // weight) * 2
        if count + assigned > dp:
            count = dp - assigned
            if count % 2:
                raise NoSolution(f"odd degree: {count} ring ports cannot be bidirectional rings "
                                 "(network.cc l.1929 asserts)")
        assigned += count
        rings.append([k, count])
        all_ring = all_ring or k == n
        if assigned == dp:
            break
    if not all_ring:
        rings[-1][1] -= 2
        if rings[-1][1] == 0:
            rings.pop()
        rings.append([n, 2])
    return [(k, c) for k, c in rings]


def _coin_change(n: int, coins: list[int], rng: np.random.Generator) -> list[int]:
    """``all_coin_change`` (l.2204-2273): the backtrace (last coin) of every residue."""
    dists = [-1] * n
    back = [-1] * n
    for c in coins:
        dists[c], back[c] = 0, c
    while -1 in dists:
        new_d, new_b = dists[:], back[:]
        for i in range(n):
            if dists[i] != -1:
                continue
            for c in coins:
                prev = dists[(i - c) % n]
                if prev == -1:
                    continue
                tie = prev + 1 == new_d[i] and rng.random() > 0.5
                if new_d[i] == -1 or prev + 1 < new_d[i] or tie:
                    new_d[i], new_b[i] = prev + 1, c
        if new_d == dists:
            raise NoSolution("the ring strides do not generate Z_n: coin change never finishes")
        dists, back = new_d, new_b
    return back


def _query_path(n: int, back: list[int], jump: int) -> list[int]:
    """l.2275-2287."""
    path = []
    coin = back[jump]
    while jump:
        path.append(coin)
        jump = (jump - coin) % n
        coin = back[jump]
    return path


def authors_topology(instance: Instance, split: str, rng: np.random.Generator
                     ) -> tuple[np.ndarray, dict[int, list[list[int]]]]:
    """The link matrix and, per group size, the coin paths its AllReduce traffic takes."""
    n, d = instance.servers, instance.degree
    if d % 2:
        raise NoSolution(f"odd degree {d}: the released TopologyFinder lays only bidirectional rings and "
                         "pairs of matchings (network.cc asserts at l.1929 and l.2062)")
    dp, mp = degree_split(instance, split)
    if mp % 2:
        raise NoSolution(f"odd matching degree {mp} with bidirectional links (network.cc l.2062 asserts)")
    links = np.zeros((n, n), dtype=int)
    paths: dict[int, list[list[int]]] = {}
    coins: set[int] = set()
    for k, ports in ring_allocation(instance, dp):
        strides = choose_n_geo(candidate_strides(n, k), ports // 2)
        for q in strides:
            for start in range(n // k):
                current = start
                while True:
                    nxt = (current + q) % n
                    links[current, nxt] += 1
                    links[nxt, current] += 1
                    current = nxt
                    if current == start:
                        break
            paths.setdefault(k, []).extend([[q], [n - q]])
            coins.update((q, n - q))
    back = _coin_change(n, sorted(coins), rng)
    for g in instance.allreduce:
        if g.size in paths:
            continue
        best: list[int] | None = None
        for cj in candidate_strides(n, g.size):
            path = _query_path(n, back, cj)
            if path and (best is None or len(path) < len(best)):
                best = path
        paths[g.size] = [best, [n - x for x in best]] if best else []
    if mp:
        if n % 2:
            raise NoSolution(f"n = {n} is odd: the blossom matching finds no perfect matching")
        links = links + _matchings(instance, mp)
    return links, paths


def _matchings(instance: Instance, rounds: int) -> np.ndarray:
    """l.2059-2109: ``rounds`` perfect matchings, pair ``{a < b}`` weighted by the demand ``b -> a``."""
    n = instance.servers
    demand = np.floor(mp_matrix(instance))
    links = np.zeros((n, n), dtype=int)
    for _ in range(rounds):
        weight = np.triu(demand.T, 1)  # weight[a, b] = demand[b, a] for a < b
        for a, b in max_weight_perfect_matching(weight):
            links[a, b] += 1
            links[b, a] += 1
            for i, j in ((a, b), (b, a)):
                demand[i, j] = math.floor(demand[i, j] * links[i, j] / (links[i, j] + 1))
    return links


def _shortest_path_flows(links: np.ndarray, demand: np.ndarray, rng: np.random.Generator
                         ) -> list[list[float]]:
    """One shortest path per pair with demand (the direct link when there is one), drawn at random."""
    hops = hop_matrix(links)
    flows: list[list[float]] = []
    for s, t in zip(*np.nonzero(demand), strict=True):
        if not np.isfinite(hops[s, t]):
            raise NoSolution(f"server {t} is unreachable from server {s}")
        v = t
        while v != s:
            preds = np.flatnonzero((links[:, v] > 0) & (hops[s] == hops[s, v] - 1))
            u = int(preds[0] if len(preds) == 1 else rng.choice(preds))
            flows.append([int(s), u, int(v), float(demand[s, t])])
            v = u
    return flows


def _authors(instance: Instance, split: str, seed: int) -> Solution:
    rng = np.random.default_rng(seed)
    n = instance.servers
    links, paths = authors_topology(instance, split, rng)
    shares, flows = [], []
    for g in instance.allreduce:
        chosen = paths[g.size]
        c = 2 * (g.size - 1) / g.size * g.bytes / len(chosen)
        share: dict[int, float] = {}
        for path in chosen:
            stride = sum(path) % n
            share[stride] = share.get(stride, 0.0) + 1 / len(chosen)
            hops = [path[(j + 1) % len(path)] for j in range(len(path))]
            for s in range(n):
                current = s
                for coin in hops:
                    nxt = (current + coin) % n
                    flows.append([s, current, nxt, c])
                    current = nxt
        shares.append([[q, v] for q, v in sorted(share.items())])
    flows += _shortest_path_flows(links, mp_matrix(instance), rng)
    solution = {"links": links.tolist(), "ring_share": shares, "flows": flows}
    solution["objective"] = objective(instance, solution)
    return solution


def topoopt_authors(instance: Instance, seed: int = 0) -> Solution:
    """The released TopologyFinder (FlexFlow b1526834, network.cc ``SpMulMat``, HEAD split: every port
    to AllReduce rings), with the authors' routing: each group's traffic split evenly over its
    ring paths, model-parallel traffic on one random shortest path per pair (module docstring,
    with line numbers). Guarantee: a symmetric ``d``-regular topology (feasible for either link
    symmetry); NoSolution where the released code aborts (odd degree, no AllReduce group, too few
    candidate strides). O(n^2 d) for the rings and coin change plus O(n^2 (n + d)) for the paths.
    Deterministic for a seed (their draws are unseeded). Source: the authors' code, as above."""
    return _authors(instance, "head", seed)


def topoopt_authors_prefinal(instance: Instance, seed: int = 0) -> Solution:
    """``topoopt_authors`` with the pre-final degree split of commit 0a8823d8 (``dp = lround(d T_dp /
    T)``, parity raised to even, the other ports as damped blossom matchings whose pair ``{a < b}``
    is weighted by the demand ``b -> a``). Same guarantee and routing; O(mp n^3) more for the
    matchings; NoSolution for an odd ``n`` with matchings. Source: network.cc at 0a8823d8,
    l.1852-1899 and l.2059-2109."""
    return _authors(instance, "prefinal", seed)

