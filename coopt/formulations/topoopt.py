"""TopoOpt: a degree-d direct-connect topology, its routing and the AllReduce ring layout.

Source: W. Wang, M. Khazraee, Z. Zhong, M. Ghobadi, Z. Jia, D. Mudigere, Y. Zhang, A. Kewitsch,
"TopoOpt: Co-optimizing Network Topology and Parallelization Strategy for Distributed Training
Jobs", NSDI 2023 (arXiv 2202.00433); research notes section 1.

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

Formulation P1 (topology + routing + ring split, max concurrent flow) [proposed in the notes;
here the AllReduce ring split is a decision too, which keeps the model linear because the
demand enters only through ``mu_gq = theta * lambda_gq``]::

    max  theta
    s.t. sum_j x_ij = d, sum_i x_ij = d,  x_ii = 0,  x_ij in {0..d}
         sum_q mu_gq = theta                                          for every group g
         sum_j f^s_vj - sum_i f^s_iv = theta M_sv* + sum_g c_g sum_q mu_gq           (v = s)
                                     = -(theta M_sv + sum_g c_g sum_{q: s+q=v} mu_gq)  (v != s)
         sum_s f^s_ij <= (B / 8) x_ij
         theta >= (B / 8) / sum_st D_st     (valid: a stride-1 ring routes everything)
         f, mu, theta >= 0

with ``M_sv* = sum_t M_st``: source-aggregated flows ``f^s``, one commodity per source.
``theta`` is in iterations per second: the iteration's communication takes ``1/theta`` s. The
model is scaled so that the busiest server sends one unit and a port carries one unit per
time unit; ``objective_unit`` turns the scaled ``theta`` back into iterations per second.

The related models of the paper's search space are library functions below:

* P2 ``build_p2`` / ``solve_p2``: TopoOpt's own search space (stride rings from the totient
  candidates plus matching links, AllReduce split evenly over ``r`` rings) as a minimum-time MILP,
  the capacity x time product linearised exactly (binary expansion + McCormick); ``r`` in an
  outer loop.
* P3 ``build_bmatching``: b-matching with diminishing returns, the exact counterpart of the
  repeated max-weight matching (marginal value of the ``c``-th link between ``i, j`` is
  ``(M_ij + M_ji) / c``).
* P4 ``select_strides_exact``: choose ``d`` strides from ``C_n`` minimising the demand-weighted
  mean circulant hop count; exact by enumeration over ``C(phi(n), d)`` subsets.

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
import pyomo.environ as pyo

from coopt.instance import Fields
from coopt.problem import TOL, HeuristicsOf, NoSolution, Problem, Solution, Violation

BITS_PER_BYTE = 8
#: Largest n for which ``build`` makes the P1 MILP (n^2 (n - 1) flow variables: 108 k at 48).
MAX_P1_SERVERS = 48


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


def build(instance: Instance, links: np.ndarray | None = None) -> pyo.ConcreteModel:
    """P1 as in the module docstring, scaled so the busiest server sends 1 and a port carries 1.

    With ``links`` given the topology is fixed (a parameter, arcs restricted to existing links)
    and the model is the routing + ring-split LP on that topology.
    """
    n, d = instance.servers, instance.degree
    if links is None and n > MAX_P1_SERVERS:
        raise NoSolution(
            f"P1 has n^2 (n - 1) = {n * n * (n - 1)} flow variables at n = {n}; it is built for "
            f"n <= {MAX_P1_SERVERS} (use the heuristics, e.g. --method topology_finder)"
        )
    unit = busiest_sender(instance)
    m_scaled = mp_matrix(instance) / unit
    arcs = [(i, j) for i in range(n) for j in range(n) if i != j and (links is None or links[i][j] > 0)]
    out_arcs: list[list[int]] = [[] for _ in range(n)]
    in_arcs: list[list[int]] = [[] for _ in range(n)]
    for i, j in arcs:
        out_arcs[i].append(j)
        in_arcs[j].append(i)
    shares = [(g, q) for g, group in enumerate(instance.allreduce) for q in candidate_strides(n, group.size)]
    ring_c = [ring_bytes(g) / unit for g in instance.allreduce]

    model = pyo.ConcreteModel(name="topoopt_P1")
    model.objective_unit = instance.port_rate / unit
    model.N = pyo.Set(initialize=range(n))
    model.A = pyo.Set(initialize=arcs, dimen=2)
    model.G = pyo.Set(initialize=range(len(instance.allreduce)))
    model.Q = pyo.Set(initialize=shares, dimen=2)
    if links is None:
        model.links = pyo.Var(model.A, domain=pyo.NonNegativeIntegers, bounds=(0, d))
        model.out_degree = pyo.Constraint(
            model.N, rule=lambda m, i: sum(m.links[i, j] for j in out_arcs[i]) == d
        )
        model.in_degree = pyo.Constraint(
            model.N, rule=lambda m, j: sum(m.links[i, j] for i in in_arcs[j]) == d
        )
    else:
        model.links = pyo.Param(model.A, initialize={(i, j): int(links[i][j]) for i, j in arcs})
    model.flow = pyo.Var(model.N, model.A, domain=pyo.NonNegativeReals)
    model.ring = pyo.Var(model.Q, domain=pyo.NonNegativeReals)  # mu_gq = theta * lambda_gq
    model.theta = pyo.Var(domain=pyo.NonNegativeReals)

    model.split = pyo.Constraint(
        model.G, rule=lambda m, g: sum(m.ring[h, q] for h, q in m.Q if h == g) == m.theta
    )

    def conservation(m: pyo.ConcreteModel, s: int, v: int) -> Any:
        net = sum(m.flow[s, v, j] for j in out_arcs[v]) - sum(m.flow[s, i, v] for i in in_arcs[v])
        if v == s:
            sent = m.theta * float(m_scaled[s].sum()) + sum(ring_c[g] * m.ring[g, q] for g, q in shares)
            return net == sent
        received = m.theta * float(m_scaled[s, v]) + sum(
            ring_c[g] * m.ring[g, q] for g, q in shares if (s + q) % n == v
        )
        return net == -received

    model.conservation = pyo.Constraint(model.N, model.N, rule=conservation)
    model.capacity = pyo.Constraint(
        model.A, rule=lambda m, i, j: sum(m.flow[s, i, j] for s in range(n)) <= m.links[i, j]
    )
    if links is None:
        # Valid floor: a stride-1 ring (plus any d - 1 permutations) carries every byte over each
        # arc at most once, so theta* >= 1 / (total scaled demand). It cuts off the degenerate
        # theta = 0 incumbent HiGHS can return at a time limit, whose routing means nothing.
        total = (float(mp_matrix(instance).sum()) + n * sum(ring_bytes(g) for g in instance.allreduce)) / unit
        model.theta_floor = pyo.Constraint(expr=model.theta >= 1.0 / total)
    model.obj = pyo.Objective(expr=model.theta, sense=pyo.maximize)
    return model


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    n = instance.servers
    unit = busiest_sender(instance)
    links = [[0] * n for _ in range(n)]
    for i, j in model.A:
        links[i][j] = int(round(pyo.value(model.links[i, j])))
    theta = pyo.value(model.theta)
    shares: list[list[list[float]]] = []
    for g, _ in enumerate(instance.allreduce):
        mu = {q: max(0.0, pyo.value(model.ring[h, q])) for h, q in model.Q if h == g}
        total = sum(mu.values())
        shares.append([[q, v / total] for q, v in sorted(mu.items()) if v > 0])
    flows = []
    for s in range(n):
        for i, j in model.A:
            value = pyo.value(model.flow[s, i, j])
            if value > 1e-12:
                flows.append([s, i, j, value / theta * unit])
    return {"links": links, "ring_share": shares, "flows": flows}


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


def build_p2(instance: Instance, rings: int) -> pyo.ConcreteModel:
    """P2 for one AllReduce group and a fixed ring count ``r`` (the outer loop of :func:`solve_p2`)::

        min  tau
        s.t. sum_q y_q = r                               y_q in {0,1}, q in C_k   (ring strides)
             sum_{j != i} m_ij = d - r  for every i       m_ij = m_ji in {0..d-r} (matching links)
             x_ij = sum_q y_q [j = i + q] + m_ij = sum_l u_ijl,  u_ijl >= u_ij(l+1),  u binary
             sum_j f^s_vj - sum_i f^s_iv = M_sv* (v = s), -M_sv (v != s)       (MP, unscaled)
             sum_s f^s_ij + (c / r) sum_q y_q [j = i + q] <= B sum_l w_ijl
             w_ijl <= tau_max u_ijl,  w_ijl <= tau,  w_ijl >= tau - tau_max (1 - u_ijl),  w >= 0
             c / (r B) <= tau <= tau_max

    ``w_ijl = tau u_ijl`` exactly (McCormick on a binary), so ``B tau x_ij`` is linear without
    approximation. ``tau_max = (sum M + c) / B``: some optimal routing is acyclic, so no arc carries
    more than all the bytes. Each of the ``r`` rings carries ``1/r`` of the AllReduce on its own arcs.
    Scaled: bytes in units of the busiest sender, time in units of that many bytes over one port.
    """
    if len(instance.allreduce) != 1:
        raise ValueError("P2 is stated for exactly one AllReduce group")
    n, d = instance.servers, instance.degree
    group = instance.allreduce[0]
    unit = busiest_sender(instance)
    mp = mp_matrix(instance) / unit
    ring_load = ring_bytes(group) / unit / rings
    strides = candidate_strides(n, group.size)
    tau_max = float(mp.sum()) + ring_bytes(group) / unit
    arcs = [(i, j) for i in range(n) for j in range(n) if i != j]
    pairs = [(i, j) for i, j in arcs if i < j]
    levels = range(1, d + 1)

    model = pyo.ConcreteModel(name="topoopt_P2")
    model.objective_unit = unit / instance.port_rate
    model.A = pyo.Set(initialize=arcs, dimen=2)
    model.ring = pyo.Var(strides, domain=pyo.Binary)
    model.match = pyo.Var(pairs, domain=pyo.NonNegativeIntegers, bounds=(0, d - rings))
    model.unit_link = pyo.Var(model.A, levels, domain=pyo.Binary)
    model.scaled = pyo.Var(model.A, levels, domain=pyo.NonNegativeReals)
    model.flow = pyo.Var(range(n), model.A, domain=pyo.NonNegativeReals)
    model.tau = pyo.Var(bounds=(ring_load, tau_max))

    def on_ring(m: pyo.ConcreteModel, i: int, j: int) -> Any:
        return sum(m.ring[q] for q in strides if (i + q) % n == j)

    model.ring_count = pyo.Constraint(expr=sum(model.ring[q] for q in strides) == rings)
    model.match_degree = pyo.Constraint(
        range(n),
        rule=lambda m, i: sum(m.match[min(i, j), max(i, j)] for j in range(n) if j != i) == d - rings,
    )
    model.expansion = pyo.Constraint(
        model.A,
        rule=lambda m, i, j: (
            on_ring(m, i, j) + m.match[min(i, j), max(i, j)] == sum(m.unit_link[i, j, l] for l in levels)
        ),
    )
    model.ordered = pyo.Constraint(
        model.A,
        levels,
        rule=lambda m, i, j, l: (
            m.unit_link[i, j, l + 1] <= m.unit_link[i, j, l] if l < d else pyo.Constraint.Skip
        ),
    )
    model.w_upper_u = pyo.Constraint(
        model.A, levels, rule=lambda m, i, j, l: m.scaled[i, j, l] <= tau_max * m.unit_link[i, j, l]
    )
    model.w_upper_tau = pyo.Constraint(model.A, levels, rule=lambda m, i, j, l: m.scaled[i, j, l] <= m.tau)
    model.w_lower = pyo.Constraint(
        model.A,
        levels,
        rule=lambda m, i, j, l: m.scaled[i, j, l] >= m.tau - tau_max * (1 - m.unit_link[i, j, l]),
    )

    def conservation(m: pyo.ConcreteModel, s: int, v: int) -> Any:
        net = sum(m.flow[s, v, j] for j in range(n) if j != v) - sum(
            m.flow[s, i, v] for i in range(n) if i != v
        )
        return net == (float(mp[s].sum()) if v == s else -float(mp[s, v]))

    model.conservation = pyo.Constraint(range(n), range(n), rule=conservation)
    model.capacity = pyo.Constraint(
        model.A,
        rule=lambda m, i, j: (
            sum(m.flow[s, i, j] for s in range(n)) + ring_load * on_ring(m, i, j)
            <= sum(m.scaled[i, j, l] for l in levels)
        ),
    )
    model.obj = pyo.Objective(expr=model.tau, sense=pyo.minimize)
    return model


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


# -- P3: b-matching with diminishing returns -------------------------------------------------


def build_bmatching(weights: np.ndarray, rounds: int, perfect: bool = True) -> pyo.ConcreteModel:
    """P3: ``max sum_{i<j} sum_c (w_ij + w_ji) / c * u_ijc`` with ``u_ijc <= u_ij(c-1)``, each
    server in ``rounds`` links (``== rounds`` when ``perfect``), ``u`` binary. The exact counterpart
    of ``rounds`` rounds of damped max-weight matching; an optimal ``perfect`` solution is a
    ``rounds``-regular multigraph, i.e. ``rounds`` perfect matchings by Koenig's theorem when the
    graph is bipartite (checked after the solve, not assumed, since the pair graph is not)."""
    n = len(weights)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    model = pyo.ConcreteModel(name="topoopt_P3")
    model.P = pyo.Set(initialize=pairs, dimen=2)
    model.C = pyo.RangeSet(1, rounds)
    model.use = pyo.Var(model.P, model.C, domain=pyo.Binary)
    model.order = pyo.Constraint(
        model.P,
        model.C,
        rule=lambda m, i, j, c: pyo.Constraint.Skip if c == 1 else m.use[i, j, c] <= m.use[i, j, c - 1],
    )

    def degree(m: pyo.ConcreteModel, v: int) -> Any:
        used = sum(m.use[i, j, c] for i, j in m.P if v in (i, j) for c in m.C)
        return used == rounds if perfect else used <= rounds

    model.degree = pyo.Constraint(range(n), rule=degree)
    model.obj = pyo.Objective(
        expr=sum((weights[i][j] + weights[j][i]) / c * model.use[i, j, c] for i, j in pairs for c in model.C),
        sense=pyo.maximize,
    )
    return model


def bmatching_value(weights: np.ndarray, counts: dict[tuple[int, int], int]) -> float:
    """P3 objective of a link multiset ``{(i, j) i<j: count}``: sum of ``(w_ij + w_ji) * H(count)``."""
    return float(
        sum(
            (weights[i][j] + weights[j][i]) * sum(1 / c for c in range(1, k + 1))
            for (i, j), k in counts.items()
        )
    )


# -- P4: stride selection --------------------------------------------------------------------


def circulant_distances(n: int, strides: Sequence[int]) -> list[float]:
    """Coin change in ``Z_n``: ``dist[m]`` = fewest stride hops from 0 to ``m`` (BFS; inf if none)."""
    dist = [math.inf] * n
    dist[0] = 0
    frontier = [0]
    while frontier:
        nxt = []
        for v in frontier:
            for s in strides:
                w = (v + s) % n
                if dist[w] == math.inf:
                    dist[w] = dist[v] + 1
                    nxt.append(w)
        frontier = nxt
    return dist


def stride_cost(n: int, strides: Sequence[int], offset_weight: Sequence[float]) -> float:
    """P4 objective: ``sum_m w_m dist_S(m) / sum_m w_m`` with ``w_m = sum_{j-i=m} M_ij``."""
    dist = circulant_distances(n, strides)
    total = sum(offset_weight)
    return float(sum(w * dist[m] for m, w in enumerate(offset_weight) if w) / total)


def offset_weights(n: int, demand: np.ndarray) -> list[float]:
    """Demand aggregated by ring offset ``(j - i) mod n``; uniform all-to-all if ``demand`` is empty."""
    w = [0.0] * n
    for i, j in zip(*np.nonzero(demand), strict=True):
        w[(j - i) % n] += float(demand[i, j])
    return w if any(w) else [0.0] + [1.0] * (n - 1)


def select_strides_exact(n: int, d: int, offset_weight: Sequence[float]) -> tuple[tuple[int, ...], float]:
    """P4 by enumeration over the ``C(phi(n), d)`` subsets of Hamiltonian strides: the subset of
    minimum weighted mean hop count (ties: smaller diameter, then lexicographic)."""
    best: tuple[float, float, tuple[int, ...]] | None = None
    for subset in itertools.combinations(candidate_strides(n, n), d):
        dist = circulant_distances(n, subset)
        key = (round(stride_cost(n, subset, offset_weight), 12), max(dist), subset)
        if best is None or key < best:
            best = key
    assert best is not None
    return best[2], best[0]


PROBLEM = Problem(
    name="topoopt",
    summary="degree-d direct-connect topology, routing and AllReduce ring split (max concurrent flow)",
    source="Wang et al., TopoOpt, NSDI 2023 (arXiv 2202.00433)",
    sense="max",
    load=load,
    dump=dump,
    check=check,
    objective=objective,
    generate=generate,
    build=build,
    extract=extract,
    heuristics=HeuristicsOf("coopt.solvers.topoopt"),
    sizes=(1, 2, 3),
    size_doc="n = 2 size + 4 servers",
)
