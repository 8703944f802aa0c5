"""TopoOpt heuristics: stride rings, damped repeated matching, shortest-path routing, TopologyFinder.

Each function states its guarantee, running time and source (Wang et al., NSDI 2023, and the
authors' simulator sys-netai/TopoOpt-FlexFlow ``src/runtime/network.cc``, as summarised in the
research notes section 1(c); re-implemented here from that description).

Every ``HEURISTICS`` entry returns a solution of :mod:`coopt.formulations.topoopt`: links,
ring shares and per-source flows, whose ``objective`` is the checker's concurrent-flow rate.
Below them: the alternating search over parallelization strategies (iteration-time model, ECMP
pricing map, workloads of the six models) and the similar-cost fat-tree baseline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import pyomo.environ as pyo

from coopt.formulations.topoopt.milp import build, extract
from coopt.formulations.topoopt.model import (
    BITS_PER_BYTE,
    DEFAULT_PRICES,
    AllReduceGroup,
    Instance,
    ModelParallelGroup,
    Prices,
    PriceTier,
    block_pairs,
    busiest_sender,
    candidate_strides,
    demand_matrix,
    fattree_price_per_server,
    mp_matrix,
    objective,
    ring_bytes,
)
from coopt.formulations.topoopt.rings_milp import build_p2
from coopt.formulations.topoopt.strides import circulant_distances
from coopt.problem import NoSolution, Solution, SolveOptions
from coopt.solvers.highs import solve_model

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


def find_topology(instance: Instance) -> tuple[np.ndarray, list[int], list[list[list[float]]]]:
    """TopologyFinder's links, ring strides and ring shares (see :func:`topology_finder`)."""
    n, d = instance.servers, instance.degree
    mp = mp_matrix(instance)
    t_a = n * sum(ring_bytes(g) for g in instance.allreduce)
    t_mp = float(mp.sum())
    rings = d if n % 2 else min(d, max(1, round(d * t_a / (t_a + t_mp))))
    strides, shares = _ring_plan(instance, rings)
    links = ring_links(n, strides)
    if d > rings:
        links += repeated_matching(mp, d - rings)
    return links, strides, shares


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
    links, _, shares = find_topology(instance)
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


# -- the alternating search: parallelization strategy x topology ------------------------------
#
# The iteration-time model (ours, in the spirit of the FlexFlow simulator TopoOpt searches with):
# a workload is a list of ops (parameter bytes, forward FLOPs per sample, bytes per sample an op
# exchanges when it is split). A strategy gives each op a model-parallel degree m (a power of two
# dividing n): the op is sharded over blocks of m consecutive servers and replicated n/m times, so
# it AllReduces params/m bytes in groups of n/m servers spaced m apart, and inside its block every
# ordered pair exchanges 2 * activation * batch / m bytes (forward activations, backward
# gradients). Compute per server does not depend on m (each server does 1/m of the op for m times
# the samples): T_compute = 3 * sum flops * batch / server_flops. Communication is priced phase by
# phase and summed (each layer's collective or exchange runs when that layer does; no overlap with
# compute or with other phases): T_iter = T_compute + sum_phases T_phase, a phase's time being
# 1/theta of its demand on a topology (ECMP routing, the checker's theta) or its per-NIC bytes over
# the NIC rate on a non-blocking switch.


@dataclass(frozen=True)
class Op:
    """One layer or embedding table: parameter bytes, forward FLOPs and split-exchange bytes per sample."""

    name: str
    params: float
    flops: float
    activation: float


@dataclass(frozen=True)
class Workload:
    name: str
    ops: tuple[Op, ...]
    batch_per_server: int
    source: str


class EcmpRouting:
    """ECMP shortest-path routing on fixed links as a linear map from demand to arc load.

    ``share[s, t, a]`` is the fraction of demand ``s -> t`` that crosses arc ``a`` (the routing of
    :func:`ecmp_flows`). Built once per topology, level by level of each source's BFS tree (one
    vector operation per level and source, O(n * diameter) of them) and kept sparse; pricing a
    demand is then one weighted bincount over the nonzeros.
    """

    def __init__(self, links: np.ndarray):
        n = len(links)
        tails, heads = np.nonzero(links)
        self.capacity = links[tails, heads].astype(float)
        self.share = np.zeros((n, n, len(tails)), dtype=np.float32)
        hops = _hop_matrix(links)
        self.reachable = np.isfinite(hops)
        for s in range(n):
            dist = hops[s]
            on_dag = dist[tails] + 1 == dist[heads]
            weight = np.bincount(heads[on_dag], weights=self.capacity[on_dag], minlength=n)
            through = np.eye(n)
            levels = dist[np.isfinite(dist)]
            for level in range(int(levels.max()), 0, -1):
                arcs = np.flatnonzero(on_dag & (dist[heads] == level))
                arcs = arcs[np.argsort(tails[arcs], kind="stable")]
                part = through[heads[arcs]] * (self.capacity[arcs] / weight[heads[arcs]])[:, None]
                self.share[s, :, arcs] = part
                firsts = np.flatnonzero(np.r_[True, np.diff(tails[arcs]) != 0])
                through[tails[arcs[firsts]]] += np.add.reduceat(part, firsts, axis=0)
        pairs, arcs = np.nonzero(self.share.reshape(n * n, len(tails)))
        self.pair, self.arc = pairs, arcs
        self.fraction = self.share.reshape(n * n, len(tails))[pairs, arcs].astype(float)
        del self.share  # only the nonzeros (a few arcs per pair) are kept

    def rate(self, demand: np.ndarray, port_rate: float) -> float:
        """Concurrent-flow rate (iterations per second) of ``demand``; 0 if some of it is unreachable."""
        if (demand[~self.reachable] > 0).any():
            return 0.0
        load = np.bincount(
            self.arc, weights=demand.reshape(-1)[self.pair] * self.fraction, minlength=len(self.capacity)
        )
        loaded = load > 0
        return float(np.min(port_rate * self.capacity[loaded] / load[loaded])) if loaded.any() else math.inf


def _hop_matrix(links: np.ndarray) -> np.ndarray:
    """All-pairs hop counts on the link digraph, one BFS per source (inf if unreachable)."""
    n = len(links)
    succ = [np.flatnonzero(links[i]).tolist() for i in range(n)]
    hops = np.full((n, n), np.inf)
    for s in range(n):
        dist = hops[s]
        dist[s] = 0
        frontier = [s]
        level = 0
        while frontier:
            level += 1
            nxt = []
            for v in frontier:
                for w in succ[v]:
                    if dist[w] == np.inf:
                        dist[w] = level
                        nxt.append(w)
            frontier = nxt
    return hops


def degrees(n: int) -> list[int]:
    """Model-parallel degrees available on ``n`` servers: the powers of two dividing ``n``."""
    return [m for m in (2**i for i in range(n.bit_length())) if n % m == 0]


def strategy_traffic(
    workload: Workload, strategy: Sequence[int], n: int
) -> tuple[dict[int, float], dict[int, float]]:
    """AllReduce bytes per group size ``k`` and model-parallel bytes per ordered pair per block
    size ``m`` of a strategy (both sorted by size)."""
    allreduce: dict[int, float] = {}
    per_pair: dict[int, float] = {}
    for op, m in zip(workload.ops, strategy, strict=True):
        if n // m > 1:
            allreduce[n // m] = allreduce.get(n // m, 0.0) + op.params / m
        if m > 1:
            per_pair[m] = per_pair.get(m, 0.0) + 2 * op.activation * workload.batch_per_server / m
    return dict(sorted(allreduce.items())), dict(sorted(per_pair.items()))


def workload_instance(workload: Workload, strategy: Sequence[int], n: int, d: int, gbps: float) -> Instance:
    """The TopoOpt instance (AllReduce groups + model-parallel blocks) of a strategy: all of one
    iteration's traffic as one concurrent demand."""
    allreduce, per_pair = strategy_traffic(workload, strategy, n)
    return Instance(
        n,
        d,
        gbps * 1e9,
        tuple(AllReduceGroup(k, b) for k, b in allreduce.items()),
        (),
        tuple(ModelParallelGroup(m, b) for m, b in per_pair.items()),
    )


def compute_time(workload: Workload, server_flops: float) -> float:
    """Forward + backward (3x forward) FLOPs of one iteration on one server, in seconds."""
    return 3 * sum(op.flops for op in workload.ops) * workload.batch_per_server / server_flops


def ring_shares_on(
    n: int, allreduce: dict[int, float], strides: Sequence[int]
) -> dict[int, list[tuple[int, float]]]:
    """Each group's ring split on a topology with ring ``strides``: over the group's candidate
    strides present (by ring count), else all on the candidate nearest by coin change."""
    shares = {}
    for k in allreduce:
        present = [q for q in strides if q in set(candidate_strides(n, k))]
        if present:
            shares[k] = [(q, present.count(q) / len(present)) for q in sorted(set(present))]
        else:
            shares[k] = [(_nearest_candidate(n, candidate_strides(n, k), strides), 1.0)]
    return shares


@dataclass
class Fabric:
    """A TopoOpt topology with its ECMP routing, ready to price strategies.

    Traffic phases are priced one at a time (each layer's collective or exchange runs when that
    layer does): a phase of ``b`` bytes takes ``b`` times the phase's seconds per byte, the
    reciprocal of the concurrent-flow rate of one byte of it, cached per group and block size.
    """

    links: np.ndarray
    strides: list[int]
    routing: EcmpRouting
    port_rate: float
    _per_byte: dict[tuple[str, int], float] = field(default_factory=dict)

    @classmethod
    def for_strategy(cls, workload: Workload, strategy: Sequence[int], n: int, d: int, gbps: float) -> Fabric:
        links, strides, _ = find_topology(workload_instance(workload, strategy, n, d, gbps))
        return cls(links, strides, EcmpRouting(links), gbps * 1e9 / BITS_PER_BYTE)

    def seconds_per_byte(self, kind: str, size: int) -> float:
        """Time per byte of an AllReduce of ``size`` servers (``kind = "allreduce"``, per reduced
        byte) or of a block exchange of ``size`` servers (``"exchange"``, per byte per pair)."""
        key = (kind, size)
        if key not in self._per_byte:
            n = len(self.links)
            if kind == "allreduce":
                demand = np.zeros((n, n))
                rows = np.arange(n)
                for q, fraction in ring_shares_on(n, {size: 1.0}, self.strides)[size]:
                    demand[rows, (rows + q) % n] += 2 * (size - 1) / size * fraction
            else:
                demand = block_pairs(n, size)
            rate = self.routing.rate(demand, self.port_rate)
            self._per_byte[key] = 1 / rate if rate > 0 else math.inf
        return self._per_byte[key]

    def comm_time(self, allreduce: dict[int, float], per_pair: dict[int, float]) -> float:
        """Sum over the strategy's phases of their times on this topology."""
        return sum(b * self.seconds_per_byte("allreduce", k) for k, b in allreduce.items()) + sum(
            b * self.seconds_per_byte("exchange", m) for m, b in per_pair.items()
        )


def switch_comm_time(allreduce: dict[int, float], per_pair: dict[int, float], server_rate: float) -> float:
    """Non-blocking switch (ideal switch, full-bisection fat-tree), phase by phase: a ring
    AllReduce sends ``2 (k-1)/k S`` per NIC, a block exchange ``(m - 1) b``; over the NIC rate."""
    ring = sum(2 * (k - 1) / k * b for k, b in allreduce.items())
    exchange = sum((m - 1) * b for m, b in per_pair.items())
    return (ring + exchange) / server_rate


@dataclass
class SearchResult:
    strategy: tuple[int, ...]
    iteration_time: float
    start_time: float
    history: list[float]
    fabric: Fabric | None


def alternating_search(
    workload: Workload,
    n: int,
    d: int,
    gbps: float,
    *,
    server_flops: float,
    switch_gbps: float | None = None,
    budget: int = 300,
    alpha: float = 1000.0,
    seed: int = 0,
) -> SearchResult:
    """Seeded MCMC over per-op model-parallel degrees, alternating with TopologyFinder.

    Start from data parallel (every ``m = 1``). Each step takes the next op of a random sweep order
    (systematic scan: every op is revisited once per ``len(ops)`` steps), prices all its degrees
    on the current fabric and moves to one of them with probability proportional to
    ``exp(-alpha (T - T_min) / T_min)``: a heat-bath move at temperature ``T_min / alpha``
    (FlexFlow rewrites one op uniformly at random and accepts by Metropolis; drawing the rewrite
    from its Boltzmann distribution converges on ~100 ops in two or three sweeps). Every
    ``max(1, budget // 10)`` steps, if the best strategy changed, TopologyFinder is re-run on its
    traffic and the new topology kept only if it prices the best strategy faster (so the best
    never worsens); then the walk restarts from the best. (TopoOpt re-runs TopologyFinder on every
    improvement; batching the re-runs keeps n = 128 to seconds and changes no invariant.) With
    ``switch_gbps`` set, the fabric is a non-blocking switch of that per-server rate and no
    topology is built. Guarantee: ``history`` (best time per step) is non-increasing and the
    result is never slower than the data-parallel start. O(budget log n) pricings, each a sum of
    cached per-phase rates (one ECMP pricing per new group or block size).
    Source: TopoOpt's alternating optimization over FlexFlow's MCMC (``FFModel::optimize``).
    """
    rng = np.random.default_rng(seed)
    base = compute_time(workload, server_flops)
    choices = degrees(n)
    current = tuple(1 for _ in workload.ops)
    fabric = None if switch_gbps is not None else Fabric.for_strategy(workload, current, n, d, gbps)

    def price(strategy: tuple[int, ...], on: Fabric | None) -> float:
        allreduce, per_pair = strategy_traffic(workload, strategy, n)
        if on is None:
            return base + switch_comm_time(allreduce, per_pair, switch_gbps * 1e9 / BITS_PER_BYTE)
        return base + on.comm_time(allreduce, per_pair)

    t_best = start = price(current, fabric)
    best, best_fabric = current, fabric
    history = [t_best]
    restart = max(1, budget // 10)
    built_for = best
    sweep: list[int] = []
    for step in range(1, budget + 1):
        if step % restart == 0:
            if fabric is not None and best != built_for:
                rebuilt, built_for = Fabric.for_strategy(workload, best, n, d, gbps), best
                t_rebuilt = price(best, rebuilt)
                if t_rebuilt < t_best:
                    t_best, best_fabric = t_rebuilt, rebuilt
            current, fabric = best, best_fabric
        if not sweep:
            sweep = rng.permutation(len(workload.ops)).tolist()
        op = sweep.pop()
        moves = [current[:op] + (m,) + current[op + 1 :] for m in choices]
        times = np.array([price(move, fabric) for move in moves])
        weights = np.exp(-alpha * (times - times.min()) / times.min())
        pick = int(rng.choice(len(moves), p=weights / weights.sum()))
        current = moves[pick]
        if times.min() < t_best:
            best, t_best, best_fabric = moves[int(times.argmin())], float(times.min()), fabric
        history.append(t_best)
    return SearchResult(best, t_best, start, history, best_fabric)


# -- workloads (layer shapes) ----------------------------------------------------------------
#
# fp32 parameters and activations (4 bytes). DLRM follows the TopoOpt simulation scripts (research
# notes 1(e)); the other shapes are the models' published architectures, simplified to one op per
# layer group [proposed: the scripts' task graphs were not read]. Batch per server: 4 GPUs x the
# per-GPU batch. FLOPs are 2 per multiply-accumulate.

FP32 = 4


def _dense(name: str, fan_in: int, fan_out: int) -> Op:
    return Op(name, fan_in * fan_out * FP32, 2 * fan_in * fan_out, fan_out * FP32)


def dlrm(tables: int = 64) -> Workload:
    """DLRM as in the TopoOpt scripts: tables of 1e7 x 128 (bag 100), bottom MLP 8 x 2048, top
    MLP 16 x 4096; per-GPU batch 128."""
    ops = [Op(f"embedding{t}", 1e7 * 128 * FP32, 2 * 100 * 128, 128 * FP32) for t in range(tables)]
    ops += [_dense("bottom0", 13, 2048)] + [_dense(f"bottom{i}", 2048, 2048) for i in range(1, 8)]
    ops += [_dense("top0", tables * 128 + 2048, 4096)] + [_dense(f"top{i}", 4096, 4096) for i in range(1, 16)]
    return Workload("DLRM", tuple(ops), 4 * 128, "TopoOpt scripts (notes 1(e))")


def bert(layers: int = 24, hidden: int = 1024, sequence: int = 512) -> Workload:
    """BERT-large: 24 layers of 12 h^2 parameters, sequence 512, per-GPU batch 8; a split layer
    exchanges two sequence x hidden activations per sample (tensor parallel)."""
    act = 2 * sequence * hidden * FP32
    flops = 2 * 12 * hidden**2 * sequence + 4 * sequence**2 * hidden
    ops = [Op("embedding", 30522 * hidden * FP32, 0.0, sequence * hidden * FP32)]
    ops += [Op(f"layer{i}", 12 * hidden**2 * FP32, flops, act) for i in range(layers)]
    return Workload("BERT", tuple(ops), 4 * 8, "Devlin et al. 2019, BERT-large")


def candle_uno() -> Workload:
    """CANDLE Uno: RNA-seq (60483 genes) and drug-descriptor (5270) encoders of 3 x 1000, top 5 x 1000."""
    ops = [_dense("rna0", 60483, 1000), _dense("rna1", 1000, 1000), _dense("rna2", 1000, 1000)]
    ops += [_dense("drug0", 5270, 1000), _dense("drug1", 1000, 1000), _dense("drug2", 1000, 1000)]
    ops += [_dense("top0", 2000, 1000)] + [_dense(f"top{i}", 1000, 1000) for i in range(1, 5)]
    return Workload("CANDLE", tuple(ops), 4 * 128, "ECP-CANDLE Uno benchmark")


def ncf(users: int = 138_493, items: int = 26_744, factors: int = 64) -> Workload:
    """NCF (NeuMF) on MovieLens-20M: GMF and MLP user/item tables of 64 factors, MLP 256-128-64."""
    ops = [
        Op(f"{kind}_{side}", rows * factors * FP32, 2 * factors, factors * FP32)
        for kind in ("gmf", "mlp")
        for side, rows in (("user", users), ("item", items))
    ]
    ops += [_dense("mlp0", 2 * factors, 256), _dense("mlp1", 256, 128), _dense("mlp2", 128, 64)]
    return Workload("NCF", tuple(ops), 4 * 128, "He et al. 2017, NeuMF")


def resnet50() -> Workload:
    """ResNet-50 at 224 x 224 by stage (25.6 M parameters, 4.1 G multiply-accumulates)."""
    stages = [
        ("stage1", 0.22e6, 1.6e9, 56 * 56 * 256),
        ("stage2", 1.22e6, 2.0e9, 28 * 28 * 512),
        ("stage3", 7.1e6, 2.9e9, 14 * 14 * 1024),
        ("stage4", 15.0e6, 1.7e9, 7 * 7 * 2048),
    ]
    ops = [Op(name, p * FP32, f, a * FP32) for name, p, f, a in stages] + [_dense("fc", 2048, 1000)]
    return Workload("ResNet-50", tuple(ops), 4 * 128, "He et al. 2016")


def vgg16() -> Workload:
    """VGG-16 at 224 x 224 by conv block plus the three fully connected layers (138 M parameters)."""
    blocks = [
        ("block1", 0.04e6, 3.9e9, 112 * 112 * 64),
        ("block2", 0.22e6, 5.5e9, 56 * 56 * 128),
        ("block3", 1.47e6, 9.2e9, 28 * 28 * 256),
        ("block4", 5.9e6, 9.2e9, 14 * 14 * 512),
        ("block5", 7.1e6, 2.8e9, 7 * 7 * 512),
    ]
    ops = [Op(name, p * FP32, f, a * FP32) for name, p, f, a in blocks]
    ops += [_dense("fc6", 25088, 4096), _dense("fc7", 4096, 4096), _dense("fc8", 4096, 1000)]
    return Workload("VGG-16", tuple(ops), 4 * 64, "Simonyan and Zisserman 2015")


WORKLOADS = {w.name: w for w in (dlrm(), bert(), candle_uno(), ncf(), resnet50(), vgg16())}

#: Effective server compute: 4 A100 at 40 % of 312 TFLOP/s (fp16 dense peak) [proposed].
SERVER_FLOPS = 4 * 0.4 * 312e12


# -- cost: similar-cost fat-tree -------------------------------------------------------------
#
# The MixNet cost calculator's fabric formulas (research notes section 2(d)) priced with the
# instance's ``prices`` (section 2(e) by default, see coopt.formulations.topoopt.DEFAULT_PRICES).


def tier_at(prices: Prices, gbps: float) -> PriceTier:
    """Component prices at a port rate: linear interpolation between the priced rates, the nearest
    tier's prices outside them (so a 40 G port costs what a 100 G one does in the default table)."""
    rates = [t.rate for t in prices.tiers]
    rate = gbps * 1e9

    def at(part: str) -> float:
        return float(np.interp(rate, rates, [getattr(t, part) for t in prices.tiers]))

    return PriceTier(rate, at("nic"), at("transceiver"), at("switch_port"), at("patch_panel_port"))


def topoopt_cost(servers: int, degree: int, gbps: float, prices: Prices = DEFAULT_PRICES) -> float:
    """``S N (c_nic + c_tr + c_pp + L c_fib)``: NIC port, transceiver, patch-panel port, fibre per port."""
    p = tier_at(prices, gbps)
    fibre = prices.fibre_length * prices.fibre_per_m
    return servers * degree * (p.nic + p.transceiver + p.patch_panel_port + fibre)


def fattree_cost(servers: int, gbps: float, prices: Prices = DEFAULT_PRICES) -> float:
    """3-tier non-blocking fat-tree, one NIC per server: switch ports ``P = 6 S``, transceivers
    ``P + S``, fibres ``ceil((P + S) / 2)``: ``S c_nic + (P + S) c_tr + P c_eps + L c_fib ceil(7 S / 2)``.
    Linear in the rate between priced rates (every price is)."""
    parts = servers * fattree_price_per_server(tier_at(prices, gbps))
    return parts + prices.fibre_length * prices.fibre_per_m * math.ceil(7 * servers / 2)


def similar_cost_fattree_gbps(
    servers: int, degree: int, gbps: float, prices: Prices = DEFAULT_PRICES
) -> float:
    """Per-server fat-tree rate of the same cost as a ``degree`` x ``gbps`` TopoOpt fabric: the
    fat-tree cost is piecewise linear and increasing in the rate (``load`` checks the tiers), so
    this inverts it exactly between the priced rates; clamped to the table's range."""
    budget = topoopt_cost(servers, degree, gbps, prices)
    rates = [t.rate / 1e9 for t in prices.tiers]
    return float(np.interp(budget, [fattree_cost(servers, r, prices) for r in rates], rates))


def similar_cost_fattree(instance: Instance) -> float:
    """:func:`similar_cost_fattree_gbps` of an instance, with its own prices."""
    n, d = instance.servers, instance.degree
    return similar_cost_fattree_gbps(n, d, instance.bandwidth / 1e9, instance.prices)


def solve_p2(instance: Instance, options: Any = None) -> tuple[float, Solution] | None:
    """P2 over the outer loop ``r = 1..min(d, phi(k))``: the fastest (tau in seconds) ring count,
    as a P1 solution (rings + matchings, AllReduce split evenly on its rings, the MP flows), or None
    if no ring count is feasible."""
    from coopt.problem import SolveOptions
    from coopt.solvers.highs import solve_model

    n = instance.servers
    best: tuple[float, Solution] | None = None
    c = ring_bytes(instance.allreduce[0])
    unit = busiest_sender(instance)
    for rings in range(1, min(instance.degree, len(candidate_strides(n, instance.allreduce[0].size))) + 1):
        model = build_p2(instance, rings)
        result = solve_model(model, options or SolveOptions())
        if result.status != "optimal" or (best is not None and result.objective >= best[0]):
            continue
        strides = [q for q in model.ring if pyo.value(model.ring[q]) > 0.5]
        links = [[0] * n for _ in range(n)]
        flows = []
        for i, j in model.A:
            links[i][j] = int(round(pyo.value(model.match[min(i, j), max(i, j)])))
            links[i][j] += sum(1 for q in strides if (i + q) % n == j)
            for s in range(n):
                value = pyo.value(model.flow[s, i, j])
                if value > 1e-12:
                    flows.append([s, i, j, value * unit])
        flows += [[i, i, (i + q) % n, c / rings] for q in strides for i in range(n)]
        solution = {"links": links, "ring_share": [[[q, 1 / rings] for q in strides]], "flows": flows}
        solution["objective"] = objective(instance, solution)
        best = (result.objective, solution)
    return best
