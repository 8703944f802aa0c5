"""The data model, the declared fields, the checker and the generator of TopoOpt (see
:mod:`coopt.problems.topoopt`).

Data model
----------
``n`` servers, each with ``d`` optical ports of ``B`` bit/s. A topology is a nonnegative integer
matrix ``x`` with zero diagonal and every row and column summing to ``d`` (by Koenig's theorem exactly
the sums of ``d`` permutation matrices). ``link_symmetry`` says which fabric the ports are:

* ``symmetric`` (default, the paper's fabric): every port is a duplex transceiver whose transmit and
  receive fibres are patched to the same neighbour (TopoOpt's patch panels and OCSes; the authors'
  simulator builds only bidirectional links, ``SpMulMat(machine, degree, true)`` at FlexFlow
  ``src/runtime/simulator.cu:479-480``). Then ``x_ij = x_ji``: ``x`` is a ``d``-regular multigraph, which
  needs ``n d`` even.
* ``directed``: a port's transmit and receive sides are patched independently (simplex fibres, an
  OCS that switches the Tx and Rx fibres of a port apart), so ``x_ij`` and ``x_ji`` are free.

The traffic of one training iteration is

* AllReduce groups ``g`` of size ``k_g`` and ``S_g`` bytes. A group of size ``k`` is realised on
  each of the ``n/k`` cosets ``{s, s + n/k, ...}``. Its candidate ring strides are the totient
  set ``C_k = {(n/k) q : 1 <= q <= k, gcd(q, k) = 1}`` (``phi(k)`` of them). A ring AllReduce of
  ``S`` bytes makes every member send ``c_g = 2 (k_g - 1) / k_g * S_g`` bytes to its ring
  successor; split over rings with shares ``lambda_gq`` (sum 1) every server ``s`` sends
  ``c_g lambda_gq`` bytes to ``s + q`` (AllReduce is *mutable*: any split gives the same result).
* a model-parallel demand ``M_st`` (bytes): explicit sparse entries plus block all-to-all groups
  (a layer sharded over ``m`` consecutive servers exchanges activations inside its block).

The optional ``[prices]`` table (``Prices``; the research notes' section 2(e) MixNet-calculator
prices when absent) sizes the similar-cost fat-tree baseline of :mod:`coopt.problems.topoopt.heuristics`:
per-rate tiers of NIC, transceiver, packet-switch port and patch-panel port prices (US$), fibre
US$/m, metres per fibre, and ``ports_per_nic``, how many optical ports share one NIC. The topology
models do not read it.

Solution
--------
``links``: the ``n x n`` matrix ``x``; ``ring_share``: per group, a list of ``[stride, share]``;
``flows``: a list of ``[source, i, j, bytes]`` carrying one iteration's demand; ``objective``:
``theta``. The checker recomputes the demand from the instance and the shares, checks flow
conservation and that every loaded arc has a link, and takes
``theta = min over loaded arcs of (B / 8) x_ij / load_ij``.

The checker against the exact model P1 (:mod:`.milp`), both ways
------------------------------------------------------------------

==============================================  ==============================================
P1 row or domain                                checker violation
==============================================  ==============================================
``x_ij`` integer, ``0 <= x_ij <= d``            ``links`` (an ``n x n`` matrix of finite
                                                nonnegative integers; ``<= d`` follows from
                                                the degree rows)
``x_ii = 0`` (no arc ``i -> i`` in the model)   ``links.diagonal``
``sum_j x_ij = d``                              ``out_degree``
``sum_i x_ij = d``                              ``in_degree``
``x_ij = x_ji`` (``symmetric`` only)            ``links.symmetric``
``mu_gq >= 0`` on ``q in C_k`` only             ``ring_share`` (``[candidate stride, share >= 0]``)
``sum_q mu_gq = theta``                         ``ring_share.sum`` (shares sum to 1)
conservation per source and server              ``conservation``
``f^s_ij >= 0``, arcs between distinct servers  ``flows.nonnegative``, ``flows``
``sum_s f^s_ij <= (B/8) x_ij`` (scaled)         ``capacity`` (a loaded arc needs a link); the
                                                objective is the tightest arc's ratio
``theta`` = objective                           :func:`objective` recomputes it
``theta_floor`` (valid inequality)              none needed: every instance has a topology at
                                                or above it (see :mod:`.milp`), so it cuts
                                                off no optimum
``theta_cap`` (valid inequality)                none needed: the port and Moore bounds hold for
                                                every topology (:mod:`.bound`)
every number finite                             ``finite`` (inf and NaN anywhere are rejected)
==============================================  ==============================================

Back: every decision the checker accepts is one P1 can take (integer links on arcs between distinct
servers, shares on candidate strides only, per-source flows on arcs), so no accepted solution lies
outside P1's space.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from coopt.errors import UsageError
from coopt.fields import Fields
from coopt.prices import DEFAULT_PRICES, Prices, PriceTier
from coopt.problem import TOL, Solution, Violation
from coopt.schema import Field, Schema

BITS_PER_BYTE = 8
#: Largest partition the loader accepts: a solution holds per-source flows, up to ``n^2 d`` entries
#: (n = 512, d = 8: 2 M), and the demand and link matrices are dense ``n x n``.
MAX_SERVERS = 512
#: Largest byte count a field may hold: 1e20 bytes (100 EB) per iteration means nothing physical,
#: and keeps every sum of the model far from overflow.
MAX_BYTES = 1e20
SYMMETRY = ("symmetric", "directed")


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
class Instance:
    servers: int
    degree: int
    bandwidth: float  # bit/s per port
    allreduce: tuple[AllReduceGroup, ...]
    mp_demand: tuple[tuple[int, int, float], ...]  # (source, destination, bytes), sorted, merged
    mp_groups: tuple[ModelParallelGroup, ...] = ()
    prices: Prices = DEFAULT_PRICES  # only the fat-tree baseline reads them
    symmetric: bool = True  # duplex ports: x_ij = x_ji

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
    rows = np.arange(n)
    for group, share in zip(instance.allreduce, shares, strict=True):
        c = ring_bytes(group)
        for stride, fraction in share:
            d[rows, (rows + stride) % n] += c * fraction
    return d


def busiest_sender(instance: Instance) -> float:
    """Bytes the busiest server sends (any ring split gives the same row sums)."""
    rows = mp_matrix(instance).sum(axis=1) + sum(ring_bytes(g) for g in instance.allreduce)
    return float(rows.max())


# -- declared fields ---------------------------------------------------------------------------

_BYTES = {"unit": "bytes", "positive": True, "max": MAX_BYTES}
_USD = {"unit": "US$", "min": 0, "max": 1e9}

TIER_FIELDS = (
    Field("gbit_per_s", "float", "port rate this tier prices", unit="Gbit/s", si=1e9, positive=True,
          max=1e6),
    Field("nic_usd", "float", "one NIC", **_USD),
    Field("transceiver_usd", "float", "one optical transceiver", **_USD),
    Field("switch_port_usd", "float", "one electrical packet-switch port (fat-tree)", **_USD),
    Field("patch_panel_port_usd", "float", "one patch-panel port (TopoOpt)", **_USD),
)

PRICE_FIELDS = (
    Field("fibre_usd_per_m", "float", "fibre price", unit="US$/m", default=DEFAULT_PRICES.fibre_per_m,
          min=0, max=1e6),
    Field("fibre_length_m", "float", "metres of one fibre", unit="m", default=DEFAULT_PRICES.fibre_length,
          min=0, max=1e6),
    Field("ports_per_nic", "int", "optical ports that share one NIC (1: a NIC per port; d: one NIC per "
          "server split into its d ports)", default=1, min=1, max=64),
    Field("tier", "tables", "prices per port rate, in increasing gbit_per_s, fat-tree cost per server "
          "rising (default: the MixNet calculator's 100/200/400/800 G tiers)", default=None,
          min_length=2, fields=TIER_FIELDS),
)

SCHEMA = Schema(
    (
        Field("servers", "int", "servers of the job's partition (n)", min=2, max=MAX_SERVERS, example=8),
        Field("degree", "int", "optical ports per server (d), at most servers - 1", min=1,
              max=MAX_SERVERS - 1, example=2),
        Field("bandwidth_gbit_per_s", "float", "rate of one port (B)", unit="Gbit/s", si=1e9,
              positive=True, max=1e6, example=100.0),
        Field("link_symmetry", "str", "symmetric: duplex ports, x_ij = x_ji (TopoOpt's patch panels); "
              "directed: a port's transmit and receive fibres patched apart", default="symmetric",
              choices=SYMMETRY),
        Field("allreduce", "tables", "AllReduce groups: size servers spaced servers/size apart, one per "
              "coset", default=(), example=({"size": 8, "bytes": 2.0e8},),
              fields=(Field("size", "int", "members of one group (a divisor of servers)", min=2,
                            max=MAX_SERVERS),
                      Field("bytes", "float", "bytes reduced per iteration", **_BYTES))),
        Field("mp_demand", "matrix", "model-parallel demand rows [source, destination, bytes]", cols=3,
              default=(), min=0, max=MAX_BYTES),
        Field("mp_group", "tables", "all-to-all inside blocks of size consecutive servers", default=(),
              fields=(Field("size", "int", "servers per block (a divisor of servers)", min=2,
                            max=MAX_SERVERS),
                      Field("bytes", "float", "bytes per ordered pair per iteration", **_BYTES))),
        Field("prices", "table", "component prices the similar-cost fat-tree is sized with",
              default={}, fields=PRICE_FIELDS),
    ),
    version=2,
    changes={
        1: "bandwidth_gbps (Gbit/s) is now bandwidth_gbit_per_s and prices.tier gbps is now gbit_per_s; "
        "link_symmetry is new and defaults to 'symmetric' (duplex ports, x_ij = x_ji), while version-1 "
        "files were solved with directed links: write link_symmetry = \"directed\" to keep that meaning",
    },
)


# -- instance files --------------------------------------------------------------------------


def load(fields: Fields) -> Instance:
    values = SCHEMA.read(fields)
    n, d = values.servers, values.degree
    if d > n - 1:
        fields.fail("degree", f"expected a value <= servers - 1 = {n - 1}, got {d}")
    symmetric = values.link_symmetry == "symmetric"
    if symmetric and n * d % 2:
        fields.fail("degree", f"expected an even servers x degree with link_symmetry = 'symmetric' (no "
                    f"{d}-regular duplex fabric on {n} servers exists), got {n} x {d}")
    groups = []
    for i, g in enumerate(values.allreduce):
        if n % g.size:
            fields.fail(f"allreduce[{i}].size", f"expected a divisor of servers = {n}, got {g.size}")
        groups.append(AllReduceGroup(size=g.size, bytes=g.bytes))
    merged: dict[tuple[int, int], float] = {}
    for i, (s, t, b) in enumerate(values.mp_demand):
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
    for i, g in enumerate(values.mp_group):
        if n % g.size:
            fields.fail(f"mp_group[{i}].size", f"expected a divisor of servers = {n}, got {g.size}")
        blocks.append(ModelParallelGroup(size=g.size, bytes=g.bytes))
    if not groups and not demand and not blocks:
        fields.fail("allreduce", "expected an AllReduce group, an mp_group or a positive mp_demand entry")
    prices = read_prices(fields, values.prices)
    bandwidth = values.bandwidth_gbit_per_s
    return Instance(n, d, bandwidth, tuple(groups), demand, tuple(blocks), prices, symmetric)


#: Transceivers, switch ports and NIC ports per server of the 3-tier non-blocking fat-tree with one
#: NIC per server (research notes section 2(d): switch ports ``P = 6 S``, transceivers ``P + S``).
FATTREE_PARTS = {"nic": 1, "transceiver": 7, "switch_port": 6}


def read_prices(fields: Fields, values: Any) -> Prices:
    """The ``[prices]`` table as read by the schema, with the tiers' cross-checks: rates in increasing
    order, and a fat-tree cost per server that rises with the rate (the similar-cost rate is read
    off that curve). A missing ``tier`` list takes the default's tiers."""
    tiers: list[PriceTier] = []
    for i, t in enumerate(values.tier or ()):
        if tiers and t.gbit_per_s <= tiers[-1].rate:
            previous = tiers[-1].rate / 1e9
            fields.fail(f"prices.tier[{i}].gbit_per_s",
                        f"expected rates in increasing order, got {t.gbit_per_s / 1e9:g} after {previous:g}")
        tier = PriceTier(t.gbit_per_s, t.nic_usd, t.transceiver_usd, t.switch_port_usd,
                         t.patch_panel_port_usd)
        if tiers and fattree_price_per_server(tier) <= fattree_price_per_server(tiers[-1]):
            fields.fail(
                f"prices.tier[{i}]",
                "expected a fat-tree cost per server (nic_usd + 7 transceiver_usd + 6 switch_port_usd) "
                f"above the previous tier's, got {fattree_price_per_server(tier):g} <= "
                f"{fattree_price_per_server(tiers[-1]):g}",
            )
        tiers.append(tier)
    return Prices(
        tiers=tuple(tiers) or DEFAULT_PRICES.tiers,
        fibre_per_m=values.fibre_usd_per_m,
        fibre_length=values.fibre_length_m,
        ports_per_nic=values.ports_per_nic,
    )


def fattree_price_per_server(tier: PriceTier) -> float:
    """NIC, transceivers and switch ports of one server's share of the fat-tree (US$, no fibre)."""
    return sum(count * getattr(tier, part) for part, count in FATTREE_PARTS.items())


def dump(instance: Instance) -> dict[str, Any]:
    out: dict[str, Any] = {
        "servers": instance.servers,
        "degree": instance.degree,
        "bandwidth_gbit_per_s": instance.bandwidth / 1e9,
        "link_symmetry": "symmetric" if instance.symmetric else "directed",
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
        "ports_per_nic": p.ports_per_nic,
        "tier": [
            {
                "gbit_per_s": t.rate / 1e9,
                "nic_usd": t.nic,
                "transceiver_usd": t.transceiver,
                "switch_port_usd": t.switch_port,
                "patch_panel_port_usd": t.patch_panel_port,
            }
            for t in p.tiers
        ],
    }
    return out


#: Largest generator size: n = 2 size + 4 must stay within :data:`MAX_SERVERS`.
MAX_SIZE = (MAX_SERVERS - 4) // 2


def generate(seed: int, size: int) -> Instance:
    """Exact family: ``n = 2 size + 4`` servers, ``d = min(4, 1 + ceil(size/2))``, symmetric links (the
    paper's fabric; ``n`` is even, so every degree is realisable), one AllReduce group of all
    servers (every third seed on average: of ``n/2``) and a sparse log-normal MP matrix.
    Sizes whose ``n`` the loader refuses are refused here too (UsageError)."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"topoopt --size must be in 1..{MAX_SIZE} (n = 2 size + 4 servers, at most "
                         f"{MAX_SERVERS}), got {size}")
    if seed < 0:
        raise UsageError(f"--seed must be >= 0, got {seed}")
    rng = np.random.default_rng(seed)
    n = 2 * size + 4
    d = min(4, 1 + (size + 1) // 2)
    return random_instance(rng, n, d, 100.0)


def random_instance(
    rng: np.random.Generator, n: int, d: int, gbps: float, density: float = 0.15, symmetric: bool = True
) -> Instance:
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
    group = (AllReduceGroup(k, allreduce_bytes),) if k >= 2 else ()
    return Instance(n, d, gbps * 1e9, group, tuple(demand), symmetric=symmetric)


# -- checker ---------------------------------------------------------------------------------


def _finite_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)


def _links(instance: Instance, solution: Solution, out: list[Violation]) -> np.ndarray | None:
    n = instance.servers
    raw = solution.get("links")
    if not isinstance(raw, list) or len(raw) != n or any(not isinstance(r, list) or len(r) != n for r in raw):
        out.append(Violation("links", f"expected an {n} x {n} integer matrix"))
        return None
    if any(not _finite_number(v) or v < 0 or v != int(v) for r in raw for v in r):
        out.append(Violation("links", "expected finite nonnegative integers"))
        return None
    x = np.array(raw, dtype=np.int64)
    if np.any(np.diag(x)):
        out.append(Violation("links.diagonal", "a server is linked to itself"))
    for axis, name in ((1, "out_degree"), (0, "in_degree")):
        for i, total in enumerate(x.sum(axis=axis)):
            if total != instance.degree:
                out.append(
                    Violation(name, f"server {i} has {total} ports in use, degree is {instance.degree}")
                )
    if instance.symmetric:
        for i, j in zip(*np.nonzero(np.triu(x != x.T)), strict=True):
            detail = f"{x[i, j]} links {i}->{j} but {x[j, i]} links {j}->{i} (duplex ports: link_symmetry)"
            out.append(Violation("links.symmetric", detail))
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
            ok = isinstance(entry, list) and len(entry) == 2 and all(_finite_number(v) for v in entry)
            if not ok or entry[0] not in allowed or entry[1] < -TOL:
                out.append(
                    Violation("ring_share", f"group {g}: {entry!r} is not (candidate stride, finite share"
                              " >= 0)")
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
    if not raw:
        return {"load": np.zeros((n, n)), "net": np.zeros((n, n))}
    bad = next((k for k, e in enumerate(raw) if not (isinstance(e, list) and len(e) == 4
                                                     and all(map(_finite_number, e)))), None)
    if bad is not None:
        out.append(Violation("flows", f"{raw[bad]!r} is not [source, i, j, bytes] of finite numbers"))
        return None
    table = np.array(raw, dtype=float)
    ends = table[:, :3]
    wrong = ~np.all((np.mod(ends, 1) == 0) & (ends >= 0) & (ends < n), axis=1) | (ends[:, 1] == ends[:, 2])
    if wrong.any():
        entry = raw[int(np.flatnonzero(wrong)[0])]
        detail = f"{entry!r} is not [source, i, j, bytes] on servers 0..{n - 1}, i != j"
        out.append(Violation("flows", detail))
        return None
    s, i, j = (table[:, c].astype(np.int64) for c in range(3))
    amount = table[:, 3]
    for e in np.flatnonzero(amount < 0)[:5]:
        out.append(Violation("flows.nonnegative", f"flow {amount[e]} of source {s[e]} on arc {i[e]}->{j[e]}"))
    load = np.zeros(n * n)
    np.add.at(load, i * n + j, amount)
    net = np.zeros(n * n)
    np.add.at(net, s * n + i, amount)
    np.add.at(net, s * n + j, -amount)
    return {"load": load.reshape(n, n), "net": net.reshape(n, n)}


def check(instance: Instance, solution: Solution) -> list[Violation]:
    out: list[Violation] = []
    if not isinstance(solution, dict):
        return [Violation("solution", "expected an object with links, ring_share and flows")]
    x = _links(instance, solution, out)
    shares = _shares(instance, solution, out)
    routed = _arc_loads(instance, solution, out)
    if shares is None or routed is None:
        return out
    demand = demand_matrix(instance, shares)
    scale = TOL * max(1.0, float(demand.sum()))
    expected = -demand
    np.fill_diagonal(expected, demand.sum(axis=1))
    wrong = np.abs(routed["net"] - expected) > scale
    for s, v in list(zip(*np.nonzero(wrong), strict=True))[:20]:
        got, need = routed["net"][s, v], expected[s, v]
        detail = f"source {s} at server {v}: net outflow {got:.6g}, needs {need:.6g}"
        out.append(Violation("conservation", detail))
    if x is not None:
        load = routed["load"]
        for i, j in list(zip(*np.nonzero((load > scale) & (x == 0)), strict=True))[:20]:
            out.append(Violation("capacity", f"arc {i}->{j} carries {load[i, j]:.6g} bytes but has no link"))
    claimed = solution.get("objective")
    if claimed is not None and not _finite_number(claimed):
        out.append(Violation("finite", f"the claimed objective {claimed!r} is not a finite number"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """``theta = min over loaded arcs of (B/8) x_ij / load_ij``: iterations per second."""
    x = np.array(solution["links"], dtype=float)
    n = len(x)
    flows = np.array(solution["flows"], dtype=float).reshape(-1, 4)
    if not np.isfinite(flows[:, 1:3]).all():
        return math.nan  # arc ends that are no numbers: the checker rejects the solution (finite)
    load = np.zeros(n * n)
    np.add.at(load, flows[:, 1].astype(np.int64) * n + flows[:, 2].astype(np.int64), flows[:, 3])
    load = load.reshape(n, n)
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
