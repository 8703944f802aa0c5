"""The alternating search over parallelization strategies and topologies, and its iteration-time model.

The iteration-time model (ours, in the spirit of the FlexFlow simulator TopoOpt searches with): a
workload (:mod:`.workloads`) is a list of ops with parameter bytes, output bytes per sample and
measured forward and backward seconds per server. A strategy gives each op a model-parallel degree
``m`` (a power of two dividing ``n``): the op is sharded over blocks of ``m`` consecutive servers and
replicated ``n/m`` times, so it AllReduces ``params/m`` bytes in groups of ``n/m`` servers spaced
``m`` apart, and inside its block every ordered pair exchanges ``2 * activation * batch / m`` bytes
(forward activations, backward gradients). A server's compute does not depend on ``m``.

Communication is priced phase by phase (each layer's collective or exchange runs when that layer
does): a phase's time is ``1/theta`` of its demand on the fabric (ECMP routing, the checker's
``theta``) or its per-NIC bytes over the NIC rate on a non-blocking switch. With ``overlap`` (the
default, as FlexFlow's task-graph simulator runs a layer's gradient AllReduce as soon as its
backward ends) the AllReduce phases hide behind the backward pass:
``T = T_fw + T_bw + T_MP + max(0, T_AR - T_bw)``; without it ``T = T_fw + T_bw + T_MP + T_AR``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from coopt.problem import NoSolution
from coopt.problems.topoopt.authors import authors_topology
from coopt.problems.topoopt.ecmp import EcmpRouting, best_ecmp_split
from coopt.problems.topoopt.finder import _nearest_candidate, find_topology, portfolio_topologies
from coopt.problems.topoopt.model import (
    BITS_PER_BYTE,
    AllReduceGroup,
    Instance,
    ModelParallelGroup,
    block_pairs,
    candidate_strides,
)
from coopt.problems.topoopt.workloads import Workload

FINDERS = ("topology_finder", "topology_finder_lp", "topoopt_authors")


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
        if n // m > 1 and op.params > 0:
            allreduce[n // m] = allreduce.get(n // m, 0.0) + op.params / m
        if m > 1:
            per_pair[m] = per_pair.get(m, 0.0) + 2 * op.activation * workload.batch_per_server / m
    return dict(sorted(allreduce.items())), dict(sorted(per_pair.items()))


def workload_instance(
    workload: Workload, strategy: Sequence[int], n: int, d: int, gbps: float, symmetric: bool = True
) -> Instance:
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
        symmetric=symmetric,
    )


def ring_shares_on(
    n: int, sizes: Sequence[int], strides: Sequence[int]
) -> dict[int, list[tuple[int, float]]]:
    """Each group's ring split on a topology with ring ``strides``: over the group's candidate
    strides present (by ring count), else all on the candidate nearest by coin change."""
    shares = {}
    for k in sizes:
        present = [q for q in strides if q in set(candidate_strides(n, k))]
        if present:
            shares[k] = [(q, present.count(q) / len(present)) for q in sorted(set(present))]
        else:
            shares[k] = [(_nearest_candidate(n, candidate_strides(n, k), strides), 1.0)]
    return shares


@dataclass
class Fabric:
    """A TopoOpt topology with its ECMP routing, ready to price strategies.

    Traffic phases are priced one at a time: a phase of ``b`` bytes takes ``b`` times the phase's
    seconds per byte, the reciprocal of the concurrent-flow rate of one byte of it, cached per group
    and block size. An AllReduce phase is split over the ``strides`` of its size (the finder's ring
    layout) or, with ``best_split``, over whatever split ECMP routes best (a small LP).
    """

    links: np.ndarray
    strides: list[int]
    routing: EcmpRouting
    port_rate: float
    best_split: bool = False
    _per_byte: dict[tuple[str, int], float] = field(default_factory=dict)

    @classmethod
    def for_strategy(cls, workload: Workload, strategy: Sequence[int], n: int, d: int, gbps: float,
                     finder: str = "topology_finder", seed: int = 0) -> Fabric:
        instance = workload_instance(workload, strategy, n, d, gbps)
        if finder == "topology_finder":
            links, strides, _ = find_topology(instance)
        elif finder == "topology_finder_lp":
            raise ValueError("topology_finder_lp offers several topologies: use Fabric.candidates")
        elif finder == "topoopt_authors":
            links, paths = authors_topology(instance, "head", np.random.default_rng(seed))
            strides = sorted(sum(path) % n for group in paths.values() for path in group)
        else:
            raise ValueError(f"finder must be one of {FINDERS}, got {finder!r}")
        return cls(links, strides, EcmpRouting(links), gbps * 1e9 / BITS_PER_BYTE,
                   best_split=finder == "topology_finder_lp")

    @classmethod
    def candidates(
        cls, workload: Workload, strategy: Sequence[int], n: int, d: int, gbps: float
    ) -> list[Fabric]:
        """``topology_finder_lp``'s constructions (every ring/matching split) for a strategy's traffic,
        each priced with the ring split ECMP routes best."""
        instance = workload_instance(workload, strategy, n, d, gbps)
        return [cls(links, [], EcmpRouting(links), gbps * 1e9 / BITS_PER_BYTE, best_split=True)
                for links in portfolio_topologies(instance)]

    def seconds_per_byte(self, kind: str, size: int) -> float:
        """Time per byte of an AllReduce of ``size`` servers (``kind = "allreduce"``, per reduced
        byte) or of a block exchange of ``size`` servers (``"exchange"``, per byte per pair)."""
        key = (kind, size)
        if key not in self._per_byte:
            n = len(self.links)
            if kind == "allreduce":
                if self.best_split:
                    one = Instance(n, 1, 8.0, (AllReduceGroup(size, 1.0),), (), symmetric=False)
                    shares = [(int(q), v) for q, v in best_ecmp_split(one, self.routing)[0]]
                else:
                    shares = ring_shares_on(n, [size], self.strides)[size]
                demand = np.zeros((n, n))
                rows = np.arange(n)
                for q, fraction in shares:
                    demand[rows, (rows + q) % n] += 2 * (size - 1) / size * fraction
            else:
                demand = block_pairs(n, size)
            rate = self.routing.rate(demand, self.port_rate)
            self._per_byte[key] = 1 / rate if rate > 0 else math.inf
        return self._per_byte[key]

    def comm_time(self, allreduce: dict[int, float], per_pair: dict[int, float]) -> tuple[float, float]:
        """(AllReduce seconds, model-parallel seconds): each phase's time on this topology, summed."""
        return (sum(b * self.seconds_per_byte("allreduce", k) for k, b in allreduce.items()),
                sum(b * self.seconds_per_byte("exchange", m) for m, b in per_pair.items()))


def switch_comm_time(allreduce: dict[int, float], per_pair: dict[int, float], server_rate: float
                     ) -> tuple[float, float]:
    """Non-blocking switch (ideal switch, full-bisection fat-tree), phase by phase: a ring AllReduce
    sends ``2 (k-1)/k S`` per NIC, a block exchange ``(m - 1) b``; over the NIC rate."""
    ring = sum(2 * (k - 1) / k * b for k, b in allreduce.items())
    exchange = sum((m - 1) * b for m, b in per_pair.items())
    return ring / server_rate, exchange / server_rate


def iteration_time(workload: Workload, allreduce_s: float, exchange_s: float, overlap: bool = True) -> float:
    """``T_fw + T_bw + T_MP + max(0, T_AR - T_bw)`` with ``overlap``, else the plain sum (module
    docstring)."""
    hidden = min(allreduce_s, workload.backward) if overlap else 0.0
    return workload.forward + workload.backward + exchange_s + allreduce_s - hidden


@dataclass
class SearchResult:
    strategy: tuple[int, ...]
    iteration_time: float
    start_time: float
    history: list[float]
    fabric: Fabric | None


def _heat_bath(rng: np.random.Generator, current: tuple[int, ...], op: int, choices: list[int], alpha: float,
               price: Callable[[tuple[int, ...], Fabric | None], float], fabric: Fabric | None
               ) -> tuple[tuple[int, ...], tuple[int, ...], float]:
    """One heat-bath move of ``op`` (:func:`alternating_search`): the strategy moved to, and the
    fastest of the op's degrees with its time."""
    moves = [current[:op] + (m,) + current[op + 1 :] for m in choices]
    times = np.array([price(move, fabric) for move in moves])
    weights = np.exp(-alpha * (times - times.min()) / times.min())
    pick = int(rng.choice(len(moves), p=weights / weights.sum()))
    return moves[pick], moves[int(times.argmin())], float(times.min())


def alternating_search(
    workload: Workload,
    n: int,
    d: int,
    gbps: float,
    *,
    switch_gbps: float | None = None,
    budget: int = 300,
    alpha: float = 1000.0,
    seed: int = 0,
    finder: str = "topology_finder",
    overlap: bool = True,
) -> SearchResult:
    """Seeded MCMC over per-op model-parallel degrees, alternating with a topology finder.

    Start from data parallel (every ``m = 1``). Each step takes the next op of a random sweep order
    (systematic scan: every op is revisited once per ``len(ops)`` steps), prices all its degrees
    on the current fabric and moves to one of them with probability proportional to
    ``exp(-alpha (T - T_min) / T_min)``: a heat-bath move at temperature ``T_min / alpha``
    (FlexFlow rewrites one op uniformly at random and accepts by Metropolis; drawing the rewrite
    from its Boltzmann distribution converges on ~100 ops in two or three sweeps). Every
    ``max(1, budget // 10)`` steps, if the best strategy changed, the finder (``topology_finder``,
    ``topology_finder_lp``: the construction of every ring/matching split that prices the strategy
    fastest, or ``topoopt_authors``) is re-run on its traffic and the new topology kept
    only if it prices the best strategy faster (so the best never worsens); then the walk restarts
    from the best; a finder that does not apply to the new traffic (the authors' code aborts on some)
    keeps the fabric. (TopoOpt re-runs TopologyFinder on every improvement; batching the re-runs keeps
    n = 128 to seconds and changes no invariant.) With ``switch_gbps`` set, the fabric is a
    non-blocking switch of that per-server rate and no topology is built. Guarantee: ``history``
    (best time per step) is non-increasing and the result is never slower than the data-parallel
    start. O(budget log n) pricings, each a sum of cached per-phase rates.
    Source: TopoOpt's alternating optimization over FlexFlow's MCMC (``FFModel::optimize``).
    """
    rng = np.random.default_rng(seed)
    choices = degrees(n)
    current = tuple(1 for _ in workload.ops)

    def price(strategy: tuple[int, ...], on: Fabric | None) -> float:
        allreduce, per_pair = strategy_traffic(workload, strategy, n)
        if on is None:
            times = switch_comm_time(allreduce, per_pair, switch_gbps * 1e9 / BITS_PER_BYTE)
        else:
            times = on.comm_time(allreduce, per_pair)
        return iteration_time(workload, *times, overlap=overlap)

    def build(strategy: tuple[int, ...]) -> Fabric:
        if finder == "topology_finder_lp":  # the construction that prices this strategy fastest
            fabrics = Fabric.candidates(workload, strategy, n, d, gbps)
            return min(fabrics, key=lambda f: price(strategy, f))
        return Fabric.for_strategy(workload, strategy, n, d, gbps, finder, seed)

    fabric = None if switch_gbps is not None else build(current)

    t_best = start = price(current, fabric)
    best, best_fabric = current, fabric
    history = [t_best]
    restart = max(1, budget // 10)
    built_for = best
    sweep: list[int] = []
    for step in range(1, budget + 1):
        if step % restart == 0:
            if fabric is not None and best != built_for:
                built_for = best
                try:
                    rebuilt = build(best)
                except NoSolution:  # the finder does not apply to this traffic: keep the fabric
                    rebuilt = None
                t_rebuilt = math.inf if rebuilt is None else price(best, rebuilt)
                if t_rebuilt < t_best:
                    t_best, best_fabric = t_rebuilt, rebuilt
            current, fabric = best, best_fabric
        if not sweep:
            sweep = rng.permutation(len(workload.ops)).tolist()
        current, fastest, t_fastest = _heat_bath(rng, current, sweep.pop(), choices, alpha, price, fabric)
        if t_fastest < t_best:
            best, t_best, best_fabric = fastest, t_fastest, fabric
        history.append(t_best)
    return SearchResult(best, t_best, start, history, best_fabric)
