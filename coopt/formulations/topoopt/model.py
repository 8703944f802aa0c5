"""The data model, the checker and the generator of TopoOpt (see :mod:`coopt.formulations.topoopt`).

Data model
----------
``n`` servers, each with ``d`` optical ports of ``B`` bit/s. Every optical plane gives each server
one transmit and one receive neighbour, so a topology is a nonnegative integer matrix ``x`` with
zero diagonal and every row and column summing to ``d`` (by Koenig's theorem exactly the sums of
``d`` permutation matrices). The traffic of one training iteration is

* AllReduce groups ``g`` of size ``k_g`` and ``S_g`` bytes. A group of size ``k`` is realised on
  each of the ``n/k`` cosets ``{s, s + n/k, ...}``. Its candidate ring strides are the totient
  set ``C_k = {(n/k) q : 1 <= q <= k, gcd(q, k) = 1}`` (``phi(k)`` of them). A ring AllReduce of
  ``S`` bytes makes every member send ``c_g = 2 (k_g - 1) / k_g * S_g`` bytes to its ring
  successor; split over rings with shares ``lambda_gq`` (sum 1) every server ``s`` sends
  ``c_g lambda_gq`` bytes to ``s + q`` (AllReduce is *mutable*: any split gives the same result).
* a model-parallel demand ``M_st`` (bytes): explicit sparse entries plus block all-to-all groups
  (a layer sharded over ``m`` consecutive servers exchanges activations inside its block).

The optional ``[prices]`` table (``Prices``; the research notes' section 2(e) MixNet-calculator
prices when absent) sizes the similar-cost fat-tree baseline of :mod:`coopt.solvers.topoopt`:
per-rate tiers of NIC, transceiver, packet-switch port and patch-panel port prices (US$), fibre
US$/m and metres per fibre. The topology models below do not read it.

Solution
--------
``links``: the ``n x n`` matrix ``x``; ``ring_share``: per group, a list of ``[stride, share]``;
``flows``: a list of ``[source, i, j, bytes]`` carrying one iteration's demand; ``objective``:
``theta``. The checker recomputes the demand from the instance and the shares, checks flow
conservation and that every loaded arc has a link, and takes
``theta = min over loaded arcs of (B / 8) x_ij / load_ij``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coopt.instance import Fields
from coopt.problem import TOL, Solution, Violation

BITS_PER_BYTE = 8


# -- data model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllReduceGroup:
    """A data-parallel AllReduce of ``bytes`` among ``size`` servers spaced ``n / size`` apart."""

    size: int
    bytes: float


@dataclass(frozen=True)
class ModelParallelGroup:
    """Blocks of ``size`` consecutive servers ``{b size, ..., b size + size - 1}``; inside each block
    every ordered pair exchanges ``bytes`` (a sharded layer's all-to-all activations/gradients)."""

    size: int
    bytes: float


@dataclass(frozen=True)
class PriceTier:
    """Unit prices (US$) of the components of one port rate (bit/s)."""

    rate: float
    nic: float  # one NIC port
    transceiver: float  # one optical transceiver
    switch_port: float  # one electrical packet-switch port
    patch_panel_port: float  # one optical patch-panel port


@dataclass(frozen=True)
class Prices:
    """What the similar-cost fat-tree baseline is sized with: component prices per port rate (tiers
    sorted by rate; a rate between tiers is priced by linear interpolation, outside them by the
    nearest tier), the fibre price (US$/m) and the length of one fibre (m)."""

    tiers: tuple[PriceTier, ...]
    fibre_per_m: float
    fibre_length: float


#: The MixNet cost calculator's defaults (research notes section 2(e), [code]:
#: mixnet-project/mixnet-project.github.io ``src/config/constants.js``): per item at 100/200/400/800
#: Gbps, fibre 0.3 US$/m; 500 m per fibre (section 2(d)).
DEFAULT_PRICES = Prices(
    tiers=(
        PriceTier(100e9, nic=659, transceiver=99, switch_port=187, patch_panel_port=100),
        PriceTier(200e9, nic=1079, transceiver=239, switch_port=374, patch_panel_port=100),
        PriceTier(400e9, nic=1499, transceiver=659, switch_port=1090, patch_panel_port=100),
        PriceTier(800e9, nic=2248, transceiver=1399, switch_port=1400, patch_panel_port=100),
    ),
    fibre_per_m=0.3,
    fibre_length=500.0,
)


@dataclass(frozen=True)
class Instance:
    servers: int
    degree: int
    bandwidth: float  # bit/s per port
    allreduce: tuple[AllReduceGroup, ...]
    mp_demand: tuple[tuple[int, int, float], ...]  # (source, destination, bytes), sorted, merged
    mp_groups: tuple[ModelParallelGroup, ...] = ()
    prices: Prices = DEFAULT_PRICES  # only the fat-tree baseline reads them

    @property
    def port_rate(self) -> float:
        """Bytes per second one port carries."""
        return self.bandwidth / BITS_PER_BYTE


def candidate_strides(n: int, k: int) -> list[int]:
    """TotientPerms: the strides ``(n/k) q`` with ``gcd(q, k) = 1`` whose rings span each coset."""
    step = n // k
    return [step * q for q in range(1, k + 1) if math.gcd(q, k) == 1]


def ring_bytes(group: AllReduceGroup) -> float:
    """``c_g = 2 (k - 1) / k * S``: bytes each member sends to its ring successor."""
    return 2 * (group.size - 1) / group.size * group.bytes


def mp_matrix(instance: Instance) -> np.ndarray:
    """The model-parallel demand as a dense ``n x n`` matrix (bytes)."""
    n = instance.servers
    m = np.zeros((n, n))
    for s, t, b in instance.mp_demand:
        m[s, t] += b
    for group in instance.mp_groups:
        m += group.bytes * block_pairs(n, group.size)
    return m


def block_pairs(n: int, size: int) -> np.ndarray:
    """0/1 matrix of the ordered pairs inside the blocks of ``size`` consecutive servers."""
    return np.kron(np.eye(n // size), np.ones((size, size))) - np.eye(n)


def demand_matrix(instance: Instance, shares: Sequence[Sequence[tuple[int, float]]]) -> np.ndarray:
    """Total demand ``D = M + sum_g c_g sum_q lambda_gq R_q`` for given ring shares (bytes)."""
    n = instance.servers
    d = mp_matrix(instance)
    for group, share in zip(instance.allreduce, shares, strict=True):
        c = ring_bytes(group)
        for stride, fraction in share:
            for s in range(n):
                d[s, (s + stride) % n] += c * fraction
    return d


def busiest_sender(instance: Instance) -> float:
    """Bytes the busiest server sends (any ring split gives the same row sums)."""
    rows = mp_matrix(instance).sum(axis=1) + sum(ring_bytes(g) for g in instance.allreduce)
    return float(rows.max())


# -- instance files --------------------------------------------------------------------------


def load(fields: Fields) -> Instance:
    n = fields.int("servers", min=2)
    d = fields.int("degree", min=1, max=n - 1)
    bandwidth = fields.float("bandwidth_gbps", positive=True) * 1e9
    groups = []
    for g in fields.tables("allreduce", default=[]):
        k = g.int("size", min=2, max=n)
        if n % k:
            g.fail("size", f"expected a divisor of servers = {n}, got {k}")
        groups.append(AllReduceGroup(size=k, bytes=g.float("bytes", positive=True)))
    merged: dict[tuple[int, int], float] = {}
    rows = fields.matrix("mp_demand", cols=3, min=0, default=())
    for i, (s, t, b) in enumerate(rows):
        for value in (s, t):
            if not value.is_integer() or value >= n:
                fields.fail(
                    f"mp_demand[{i}]", f"expected [source, destination, bytes] with servers in 0..{n - 1}"
                )
        if s == t:
            fields.fail(f"mp_demand[{i}]", "expected a source different from the destination")
        merged[int(s), int(t)] = merged.get((int(s), int(t)), 0.0) + b
    demand = tuple((s, t, b) for (s, t), b in sorted(merged.items()) if b > 0)
    blocks = []
    for g in fields.tables("mp_group", default=[]):
        m = g.int("size", min=2, max=n)
        if n % m:
            g.fail("size", f"expected a divisor of servers = {n}, got {m}")
        blocks.append(ModelParallelGroup(size=m, bytes=g.float("bytes", positive=True)))
    if not groups and not demand and not blocks:
        fields.fail("allreduce", "expected an AllReduce group, an mp_group or a positive mp_demand entry")
    prices = load_prices(fields.table("prices")) if fields.has("prices") else DEFAULT_PRICES
    return Instance(n, d, bandwidth, tuple(groups), demand, tuple(blocks), prices)


#: Transceivers, switch ports and NIC ports per server of the 3-tier non-blocking fat-tree with one
#: NIC per server (research notes section 2(d): switch ports ``P = 6 S``, transceivers ``P + S``).
FATTREE_PARTS = {"nic": 1, "transceiver": 7, "switch_port": 6}


def load_prices(fields: Fields) -> Prices:
    """The optional ``[prices]`` table: ``fibre_usd_per_m``, ``fibre_length_m`` and ``tier``, a list of
    ``{gbps, nic_usd, transceiver_usd, switch_port_usd, patch_panel_port_usd}`` in increasing
    ``gbps`` whose fat-tree cost per server rises with the rate (the similar-cost rate is read off
    that curve). A missing fibre field or ``tier`` list takes the default's value; a tier given
    needs all five fields."""
    tiers = []
    rows = fields.tables("tier", min_length=2, default=None)
    for i, t in enumerate(rows or []):
        rate = t.float("gbps", positive=True) * 1e9
        if tiers and rate <= tiers[-1].rate:
            previous = tiers[-1].rate / 1e9
            t.fail("gbps", f"expected rates in increasing order, got {rate / 1e9:g} after {previous:g}")
        tier = PriceTier(
            rate,
            nic=t.float("nic_usd", min=0),
            transceiver=t.float("transceiver_usd", min=0),
            switch_port=t.float("switch_port_usd", min=0),
            patch_panel_port=t.float("patch_panel_port_usd", min=0),
        )
        if tiers and fattree_price_per_server(tier) <= fattree_price_per_server(tiers[-1]):
            fields.fail(
                f"tier[{i}]",
                "expected a fat-tree cost per server (nic_usd + 7 transceiver_usd + 6 switch_port_usd) "
                f"above the previous tier's, got {fattree_price_per_server(tier):g} <= "
                f"{fattree_price_per_server(tiers[-1]):g}",
            )
        tiers.append(tier)
    return Prices(
        tiers=tuple(tiers) or DEFAULT_PRICES.tiers,
        fibre_per_m=fields.float("fibre_usd_per_m", min=0, default=DEFAULT_PRICES.fibre_per_m),
        fibre_length=fields.float("fibre_length_m", min=0, default=DEFAULT_PRICES.fibre_length),
    )


def fattree_price_per_server(tier: PriceTier) -> float:
    """NIC, transceivers and switch ports of one server's share of the fat-tree (US$, no fibre)."""
    return sum(count * getattr(tier, part) for part, count in FATTREE_PARTS.items())


def dump(instance: Instance) -> dict[str, Any]:
    out: dict[str, Any] = {
        "servers": instance.servers,
        "degree": instance.degree,
        "bandwidth_gbps": instance.bandwidth / 1e9,
    }
    if instance.allreduce:
        out["allreduce"] = [{"size": g.size, "bytes": g.bytes} for g in instance.allreduce]
    if instance.mp_demand:
        out["mp_demand"] = [[s, t, b] for s, t, b in instance.mp_demand]
    if instance.mp_groups:
        out["mp_group"] = [{"size": g.size, "bytes": g.bytes} for g in instance.mp_groups]
    p = instance.prices
    out["prices"] = {
        "fibre_usd_per_m": p.fibre_per_m,
        "fibre_length_m": p.fibre_length,
        "tier": [
            {
                "gbps": t.rate / 1e9,
                "nic_usd": t.nic,
                "transceiver_usd": t.transceiver,
                "switch_port_usd": t.switch_port,
                "patch_panel_port_usd": t.patch_panel_port,
            }
            for t in p.tiers
        ],
    }
    return out


def generate(seed: int, size: int) -> Instance:
    """Exact family: ``n = 2 size + 4`` servers, ``d = min(4, 1 + ceil(size/2))``, one AllReduce
    of all servers (every third seed: two groups of ``n/2``) and a sparse log-normal MP matrix."""
    rng = np.random.default_rng(seed)
    n = 2 * size + 4
    d = min(4, 1 + (size + 1) // 2)
    return random_instance(rng, n, d, 100.0)


def random_instance(rng: np.random.Generator, n: int, d: int, gbps: float, density: float = 0.15) -> Instance:
    """One AllReduce group (of ``n``, or of ``n/2`` with probability 1/3) plus MP pairs drawn with
    probability ``density``, log-normal sizes; bytes rounded to whole kilobytes."""
    k = n // 2 if n % 2 == 0 and rng.random() < 1 / 3 else n
    allreduce_bytes = float(round(rng.uniform(50, 400)) * 1e6)
    demand = []
    for s, t in itertools.permutations(range(n), 2):
        if rng.random() < density:
            demand.append((s, t, float(round(rng.lognormal(3.0, 1.0) * 1e3) * 1e3)))
    if not demand:
        demand.append((0, n // 2, 1e7))
    return Instance(n, d, gbps * 1e9, (AllReduceGroup(k, allreduce_bytes),), tuple(demand))


# -- formulation P1 --------------------------------------------------------------------------


# -- checker ---------------------------------------------------------------------------------


def _links(instance: Instance, solution: Solution, out: list[Violation]) -> np.ndarray | None:
    n = instance.servers
    raw = solution.get("links")
    if not isinstance(raw, list) or len(raw) != n or any(not isinstance(r, list) or len(r) != n for r in raw):
        out.append(Violation("links", f"expected an {n} x {n} integer matrix"))
        return None
    if any(
        isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != int(v) for r in raw for v in r
    ):
        out.append(Violation("links", "expected nonnegative integers"))
        return None
    x = np.array(raw, dtype=int)
    if np.any(np.diag(x)):
        out.append(Violation("links.diagonal", "a server is linked to itself"))
    for axis, name in ((1, "out_degree"), (0, "in_degree")):
        for i, total in enumerate(x.sum(axis=axis)):
            if total != instance.degree:
                out.append(
                    Violation(name, f"server {i} has {total} ports in use, degree is {instance.degree}")
                )
    return x


def _shares(
    instance: Instance, solution: Solution, out: list[Violation]
) -> list[list[tuple[int, float]]] | None:
    raw = solution.get("ring_share")
    if not isinstance(raw, list) or len(raw) != len(instance.allreduce):
        out.append(
            Violation("ring_share", f"expected one list per AllReduce group ({len(instance.allreduce)})")
        )
        return None
    shares = []
    for g, (group, entries) in enumerate(zip(instance.allreduce, raw, strict=True)):
        allowed = set(candidate_strides(instance.servers, group.size))
        parsed = []
        for entry in entries if isinstance(entries, list) else [None]:
            ok = (
                isinstance(entry, list) and len(entry) == 2 and all(isinstance(v, int | float) for v in entry)
            )
            if not ok or entry[0] not in allowed or entry[1] < -TOL:
                out.append(
                    Violation("ring_share", f"group {g}: {entry!r} is not [candidate stride, share >= 0]")
                )
                return None
            parsed.append((int(entry[0]), float(entry[1])))
        if abs(sum(v for _, v in parsed) - 1) > TOL:
            out.append(
                Violation("ring_share.sum", f"group {g}: shares sum to {sum(v for _, v in parsed)}, not 1")
            )
        shares.append(parsed)
    return shares


def _arc_loads(instance: Instance, solution: Solution, out: list[Violation]) -> dict | None:
    """Per-arc load and per-(source, node) net outflow from the flow list, or None if malformed."""
    raw = solution.get("flows")
    n = instance.servers
    if not isinstance(raw, list):
        out.append(Violation("flows", "expected a list of [source, i, j, bytes]"))
        return None
    load = np.zeros((n, n))
    net = np.zeros((n, n))
    for entry in raw:
        ok = isinstance(entry, list) and len(entry) == 4 and all(isinstance(v, int | float) for v in entry)
        if (
            not ok
            or any(not float(v).is_integer() or not 0 <= v < n for v in entry[:3])
            or entry[1] == entry[2]
        ):
            out.append(Violation("flows", f"{entry!r} is not [source, i, j, bytes] on servers 0..{n - 1}"))
            return None
        s, i, j, amount = int(entry[0]), int(entry[1]), int(entry[2]), float(entry[3])
        if amount < 0:
            out.append(Violation("flows.nonnegative", f"flow {amount} of source {s} on arc {i}->{j}"))
        load[i, j] += amount
        net[s, i] += amount
        net[s, j] -= amount
    return {"load": load, "net": net}


def check(instance: Instance, solution: Solution) -> list[Violation]:
    out: list[Violation] = []
    x = _links(instance, solution, out)
    shares = _shares(instance, solution, out)
    routed = _arc_loads(instance, solution, out)
    if shares is None or routed is None:
        return out
    demand = demand_matrix(instance, shares)
    scale = TOL * max(1.0, float(demand.sum()))
    for s in range(instance.servers):
        expected = -demand[s]
        expected[s] = demand[s].sum()
        for v in np.flatnonzero(np.abs(routed["net"][s] - expected) > scale):
            got, need = routed["net"][s, v], expected[v]
            detail = f"source {s} at server {v}: net outflow {got:.6g}, needs {need:.6g}"
            out.append(Violation("conservation", detail))
    if x is not None:
        load = routed["load"]
        for i, j in zip(*np.nonzero((load > scale) & (x == 0)), strict=True):
            out.append(Violation("capacity", f"arc {i}->{j} carries {load[i, j]:.6g} bytes but has no link"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """``theta = min over loaded arcs of (B/8) x_ij / load_ij``: iterations per second."""
    x = np.array(solution["links"], dtype=float)
    load = np.zeros_like(x)
    for _, i, j, amount in solution["flows"]:
        load[int(i), int(j)] += amount
    scale = TOL * max(1.0, float(load.sum()))
    loaded = load > scale
    if not loaded.any():
        return math.inf
    with np.errstate(divide="ignore"):
        return float(np.min(instance.port_rate * x[loaded] / load[loaded]))


def permutations_of(links: np.ndarray) -> list[list[int]]:
    """Split a ``d``-regular link matrix into ``d`` permutations (Koenig): repeatedly take a perfect
    matching of the bipartite transmit/receive multigraph (Hopcroft-Karp) and remove it.
    Returns ``d`` successor lists ``perm[i]``; raises ValueError if ``links`` is not regular."""
    import networkx as nx

    x = np.array(links, dtype=int)
    n = len(x)
    perms = []
    while x.any():
        graph = nx.Graph()
        graph.add_nodes_from(range(2 * n))
        graph.add_edges_from((i, n + j) for i, j in zip(*np.nonzero(x), strict=True))
        matching = nx.bipartite.hopcroft_karp_matching(graph, top_nodes=range(n))
        if any(i not in matching for i in range(n)):
            raise ValueError("links are not a sum of permutations (rows and columns must sum to d)")
        perm = [matching[i] - n for i in range(n)]
        for i, j in enumerate(perm):
            x[i, j] -= 1
        perms.append(perm)
    return perms


# -- P2: mutable AllReduce on stride rings plus matchings, minimum time ------------------------


# -- P3: b-matching with diminishing returns -------------------------------------------------


# -- P4: stride selection --------------------------------------------------------------------
