"""M1, per-layer circuit allocation: data model, the exact throughput of a circuit set, the checker,
the generator.

Symbols (research notes section 2(b), the paper's ``alpha``): a region of ``R`` servers, each with
``N`` NICs of ``B`` bit/s; ``alpha`` of them are optical ports on the region's OCS, the other
``N - alpha`` reach the electrical packet-switched fabric (EPS), which we take as non-blocking up
to an oversubscription ``o``: each server sends and receives at most ``B_E = (N - alpha) B / o``
on it (the hose model). ``D_ij`` bytes go from server ``i`` to server ``j`` in one all-to-all.

Decisions: ``x_ij`` circuits between servers ``i < j`` (full duplex: each carries ``B`` each way
and takes one OCS port at each end), the OCS rate ``o_ij`` and EPS rate ``e_ij`` of every
ordered pair, and the concurrent throughput ``theta`` (all-to-alls per second; the all-to-all
takes ``1 / theta`` seconds)::

    max  theta
    s.t. o_ij + e_ij = theta * 8 D_ij                    every ordered pair i != j (bits/s)
         o_ij <= B x_ij,  o_ji <= B x_ij                  a circuit carries B each way
         sum_j x_ij <= alpha                              OCS ports
         sum_j e_ij <= B_E,  sum_i e_ij <= B_E            hose model of the EPS
         x_ij in {0, 1, ...},  o, e >= 0

Traffic uses a circuit only between its two ends (the runtime maps a pair with circuits to the
OCS and the rest to the EPS; there is no relaying through a third server), and a pair's
traffic may split between the two fabrics.

An instance may hold several regions (each its own OCS, circuits never cross regions) and
several traffic matrices per region (scenarios: the circuits are set before the traffic is
known). The objective is then the worst case, ``min`` over every matrix of its throughput: the
all-to-all of the slowest region gates the step, and the robust allocation must serve every
scenario. One region with one matrix is the paper's per-layer problem.

The throughput of fixed circuits is exact in closed form. With ``c_ij = B x_ij`` the best split
sends ``min(theta D_ij, c_ij)`` on the circuit, so the EPS carries ``(theta D_ij - c_ij)^+``, and
server ``i``'s sending side is feasible iff ``f_i(theta) = sum_j (theta D_ij - c_ij)^+ <= B_E``.
``f_i`` is the maximum over subsets ``S`` of ``theta D(S) - c(S)``, so the largest feasible
``theta`` is ``min_S (B_E + c(S)) / D(S)``, attained at a prefix of the pairs sorted by
``c_ij / D_ij`` (:func:`prefix_roots`, :func:`throughput`, ``O(R^2 log R)``). The receiving side
is the same on columns, and ``theta`` is the minimum over all sides of all servers.

Checker (each model constraint and its counterpart; :func:`check`):

| model | checker violation |
|---|---|
| ``x_ij`` integer >= 0, one per unordered pair | ``circuits`` (integers >= 0), ``symmetric``, ``diagonal`` |
| circuits only inside a region (one block per region) | ``regions`` (one ``R_r x R_r`` matrix per region) |
| ``sum_j x_ij <= alpha`` | ``ports`` |
| ``o_ij <= B x_ij`` | ``ocs_capacity`` |
| ``o + e = theta 8 D`` | ``served`` |
| ``sum_j e_ij <= B_E``, ``sum_i e_ij <= B_E`` | ``eps_out``, ``eps_in`` |
| ``o, e >= 0`` | ``rates`` |
| ``max theta`` | ``theta``: the claimed ``theta`` must be the circuits' best (:func:`throughput`) |

The solution's rates are the certificate of ``theta``; the objective is recomputed from the
circuits alone (:func:`objective`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from coopt.errors import UsageError
from coopt.problem import TOL, Solution, Violation
from coopt.problems.mixnet import traffic as families
from coopt.schema import Field, Schema

#: Largest region the loader accepts (a region's MILP has R (R - 1) / 2 integer variables).
MAX_REGION = 512
#: Largest pair volume the loader accepts, MB (10^6 bytes): a petabyte per pair per all-to-all.
MAX_DEMAND_MB = 1e9
#: Most regions a file may describe (regions are numbered 0, 1, ... and each needs its traffic).
MAX_REGIONS = 1024

NIC_FIELDS = (
    Field("alpha", "int", "optical ports per server on its region's circuit switch (OCS)", min=0,
          max=63, example=6),
    Field("nics", "int", "NICs per server; the nics - alpha not on the OCS reach the electrical fabric",
          min=1, max=64, default=8),
    Field("nic_gbit_per_s", "float", "rate of one NIC, and of one circuit in each direction",
          unit="Gbit/s", si=1e9, positive=True, max=1e5, example=100.0),
    Field("eps_oversubscription", "float",
          "oversubscription of the electrical fabric: a server sends and receives at most "
          "(nics - alpha) * rate / this on it", min=1.0, max=1e3, default=1.0),
)

TRAFFIC_FIELDS = (
    Field("name", "str", "what the matrix is (a layer, a scenario)", default=""),
    Field("region", "int", "the region (0, 1, ...) whose servers exchange this traffic", min=0,
          max=MAX_REGIONS - 1, default=0),
    Field("demand_mb", "matrix",
          "bytes server i (row) sends to server j (column) in one all-to-all; the diagonal stays "
          "on NVLink and is ignored", unit="MB", si=1e6, min=0.0, max=MAX_DEMAND_MB,
          example=[[0.0, 40.0, 10.0], [30.0, 0.0, 20.0], [5.0, 25.0, 0.0]]),
)

SCHEMA = Schema(
    [
        *NIC_FIELDS,
        Field("traffic", "tables",
              "one all-to-all traffic matrix; several per region are scenarios the same circuits "
              "must serve (the worst case is the objective)", fields=TRAFFIC_FIELDS, min_length=1,
              example=[{"name": "layer 0", "region": 0,
                        "demand_mb": [[0.0, 40.0, 10.0], [30.0, 0.0, 20.0], [5.0, 25.0, 0.0]]}]),
    ]
)


class Matrix:
    """A frozen record with a ``demand`` matrix of bytes (row = sender) and its bits array."""

    demand: tuple[tuple[float, ...], ...]

    def bits(self) -> np.ndarray:
        """``8 D`` with a zero diagonal, as a read-only array (computed once)."""
        return self._bits

    @cached_property
    def _bits(self) -> np.ndarray:
        out = np.array(self.demand, dtype=float) * 8.0
        np.fill_diagonal(out, 0.0)
        out.flags.writeable = False
        return out


@dataclass(frozen=True)
class Traffic(Matrix):
    """One all-to-all's server-to-server bytes inside one region (zero diagonal)."""

    name: str
    region: int
    demand: tuple[tuple[float, ...], ...]  # bytes

    @property
    def servers(self) -> int:
        return len(self.demand)


@dataclass(frozen=True)
class Fabric:
    """What every server has: ``alpha`` OCS ports of ``N`` NICs at ``nic_rate`` bit/s."""

    alpha: int
    nics: int
    nic_rate: float  # bit/s
    eps_oversubscription: float = 1.0

    @property
    def eps_rate(self) -> float:
        """``B_E = (N - alpha) B / o``: one server's send (and receive) rate on the EPS, bit/s."""
        return (self.nics - self.alpha) * self.nic_rate / self.eps_oversubscription


@dataclass(frozen=True)
class Instance:
    fabric: Fabric
    traffic: tuple[Traffic, ...]

    @property
    def regions(self) -> int:
        return 1 + max(t.region for t in self.traffic)

    def region_size(self, region: int) -> int:
        return next(t.servers for t in self.traffic if t.region == region)

    def traffic_of(self, region: int) -> list[int]:
        """Indices of the matrices of one region."""
        return [k for k, t in enumerate(self.traffic) if t.region == region]

    def only_region(self, region: int) -> Instance:
        """The instance of one region alone (its matrices, renumbered region 0)."""
        kept = tuple(Traffic(t.name, 0, t.demand) for t in self.traffic if t.region == region)
        return Instance(self.fabric, kept)


# -- reading and writing --------------------------------------------------------------------


def read_fabric(fields: Any, values: Any) -> Fabric:
    """The fabric fields, with the check that the EPS keeps at least one NIC."""
    if values.alpha >= values.nics:
        fields.fail("alpha", f"expected at most nics - 1 = {values.nics - 1} (the electrical fabric "
                    f"keeps at least one NIC per server), got {values.alpha}")
    return Fabric(values.alpha, values.nics, values.nic_gbit_per_s, values.eps_oversubscription)


def read_matrix(fields: Any, key: str, matrix: tuple[tuple[float, ...], ...]) -> None:
    """A square traffic matrix of 2..MAX_REGION servers with some traffic off the diagonal."""
    rows = len(matrix)
    if not 2 <= rows <= MAX_REGION or any(len(row) != rows for row in matrix):
        fields.fail(key, f"expected a square matrix of 2 to {MAX_REGION} servers, got {rows} rows of "
                    f"{len(matrix[0]) if matrix else 0}")
    if not any(matrix[i][j] > 0 for i in range(rows) for j in range(rows) if i != j):
        fields.fail(key, "expected some traffic between two different servers, got none")


def load(fields: Any) -> Instance:
    values = SCHEMA.read(fields)
    fabric = read_fabric(fields, values)
    found: list[Traffic] = []
    for k, entry in enumerate(values.traffic):
        key = f"traffic[{k}]"
        read_matrix(fields, f"{key}.demand_mb", entry.demand_mb)
        found.append(Traffic(entry.name, entry.region, entry.demand_mb))
    regions = sorted({t.region for t in found})
    if regions != list(range(len(regions))):
        missing = next(r for r, given in enumerate(regions) if r != given)
        fields.fail("traffic", f"expected regions 0..{regions[-1]} each with traffic, region {missing} "
                    "has none")
    for k, t in enumerate(found):
        first = next(u for u in found if u.region == t.region)
        if t.servers != first.servers:
            fields.fail(f"traffic[{k}].demand_mb", f"expected {first.servers} servers like the other "
                        f"matrices of region {t.region}, got {t.servers}")
    return Instance(fabric, tuple(found))


def file_value(x: float, si: float) -> float:
    """``x`` (SI) in file units, chosen so that reading it back gives ``x`` again exactly."""
    v = x / si
    for candidate in (v, math.nextafter(v, math.inf), math.nextafter(v, -math.inf)):
        if candidate * si == x:
            return candidate
    return v


def dump_fabric(fabric: Fabric) -> dict[str, Any]:
    return {
        "alpha": fabric.alpha,
        "nics": fabric.nics,
        "nic_gbit_per_s": file_value(fabric.nic_rate, 1e9),
        "eps_oversubscription": fabric.eps_oversubscription,
    }


def dump_matrix(matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    return [[file_value(x, 1e6) for x in row] for row in matrix]


def dump(instance: Instance) -> dict[str, Any]:
    return {
        **dump_fabric(instance.fabric),
        "traffic": [
            {"name": t.name, "region": t.region, "demand_mb": dump_matrix(t.demand)} for t in instance.traffic
        ],
    }


# -- the exact throughput of a circuit set ------------------------------------------------


def prefix_roots(demand: np.ndarray, capacity: np.ndarray, eps_rate: float) -> np.ndarray:
    """Row by row, the largest ``theta`` with ``sum_j (theta D_ij - c_ij)^+ <= B_E``: ``min over the
    prefixes S of the row sorted by c_ij / D_ij of (B_E + c(S)) / D(S)`` (inf for a row without
    traffic). ``demand`` and ``capacity`` are stacks of rows, ``(..., R)``. Equal ratios may come in
    any order: a prefix that splits them lies between the two that do not."""
    has = demand > 0
    capacity = np.where(has, capacity, 0.0)  # a circuit without traffic this way carries none of it
    with np.errstate(divide="ignore", invalid="ignore"):
        order = np.argsort(np.where(has, capacity / demand, np.inf), axis=-1)
        sent = np.cumsum(np.take_along_axis(demand, order, axis=-1), axis=-1)
        carried = np.cumsum(np.take_along_axis(capacity, order, axis=-1), axis=-1)
        bound = np.where(sent > 0, (eps_rate + carried) / sent, np.inf)
    return bound.min(axis=-1)


def throughput(bits: np.ndarray, circuits: np.ndarray, fabric: Fabric) -> float:
    """``theta*`` (all-to-alls per second) of one matrix ``8 D`` (bits, zero diagonal) on symmetric
    ``circuits``: exact (module docstring), ``O(R^2 log R)``."""
    capacity = np.asarray(circuits, dtype=float) * fabric.nic_rate
    sides = np.stack([bits, bits.T]), np.stack([capacity, capacity.T])
    return float(prefix_roots(*sides, fabric.eps_rate).min())


def split(bits: np.ndarray, circuits: np.ndarray, theta: float,
          fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    """The best rates at ``theta``: ``o = min(theta 8 D, B x)`` on the circuits, the rest on the EPS."""
    want = theta * bits
    ocs = np.minimum(want, np.asarray(circuits, dtype=float) * fabric.nic_rate)
    return ocs, want - ocs


def worst_case(instance: Instance, circuits: Sequence[np.ndarray]) -> float:
    """``min`` over every matrix of its throughput on its region's circuits."""
    return min(throughput(t.bits(), circuits[t.region], instance.fabric) for t in instance.traffic)


def no_circuits(instance: Instance) -> list[np.ndarray]:
    return [np.zeros((instance.region_size(r),) * 2, dtype=int) for r in range(instance.regions)]


def solution_of(instance: Instance, circuits: Sequence[np.ndarray]) -> Solution:
    """The solution of a circuit set: its worst-case throughput, the best rates of every matrix at
    that throughput (the certificate the checker verifies), Gbit/s."""
    theta = worst_case(instance, circuits)
    rates = []
    for t in instance.traffic:
        ocs, eps = split(t.bits(), circuits[t.region], theta, instance.fabric)
        rates.append({"ocs_gbit_per_s": (ocs / 1e9).tolist(), "eps_gbit_per_s": (eps / 1e9).tolist()})
    return {
        "objective": theta,
        "theta_per_s": theta,
        "all_to_all_ms": 1e3 / theta,
        "regions": [{"circuits": np.asarray(x, dtype=int).tolist()} for x in circuits],
        "traffic": rates,
    }


# -- the checker ----------------------------------------------------------------------------


def read_circuits(matrix: Any, servers: int, alpha: int, where: str,
                  out: list[Violation]) -> np.ndarray | None:
    """A region's circuit matrix, or None (with the violations) when it is not one."""
    shape_ok = (isinstance(matrix, list) and len(matrix) == servers
                and all(isinstance(row, list) and len(row) == servers for row in matrix))
    if not shape_ok:
        out.append(Violation("circuits", f"{where}: expected a {servers} x {servers} matrix of circuit "
                             "counts"))
        return None
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for row in matrix for v in row):
        out.append(Violation("circuits", f"{where}: every entry must be an integer >= 0"))
        return None
    x = np.array(matrix, dtype=int)
    for i, j in zip(*np.nonzero(x != x.T), strict=True):
        if i < j:
            out.append(Violation("symmetric", f"{where}: {x[i, j]} circuits {i}-{j} but {x[j, i]} {j}-{i}"))
    for i in np.flatnonzero(np.diag(x)):
        out.append(Violation("diagonal", f"{where}: server {i} has {x[i, i]} circuits to itself"))
    for i in np.flatnonzero(x.sum(axis=1) > alpha):
        out.append(Violation("ports", f"{where}: server {i} uses {x[i].sum()} OCS ports, has {alpha}"))
    return x


def circuits_of(instance: Instance, solution: Solution, out: list[Violation]) -> list[np.ndarray] | None:
    regions = solution.get("regions")
    if not isinstance(regions, list) or len(regions) != instance.regions:
        out.append(Violation("regions", f"expected a list of {instance.regions} regions, each with its "
                             "circuits"))
        return None
    found = []
    for r, entry in enumerate(regions):
        matrix = entry.get("circuits") if isinstance(entry, dict) else None
        x = read_circuits(matrix, instance.region_size(r), instance.fabric.alpha, f"region {r}", out)
        found.append(x)
    if any(x is None for x in found) or out:
        return None
    return found


def _rates(entry: Any, key: str, servers: int) -> np.ndarray | None:
    matrix = entry.get(key) if isinstance(entry, dict) else None
    if not (isinstance(matrix, list) and len(matrix) == servers
            and all(isinstance(row, list) and len(row) == servers for row in matrix)):
        return None
    if any(isinstance(v, bool) or not isinstance(v, int | float) for row in matrix for v in row):
        return None
    return np.array(matrix, dtype=float) * 1e9


def check(instance: Instance, solution: Solution) -> list[Violation]:
    out: list[Violation] = []
    circuits = circuits_of(instance, solution, out)
    if circuits is None:
        return out
    theta = solution.get("theta_per_s")
    if isinstance(theta, bool) or not isinstance(theta, int | float) or not math.isfinite(theta) or theta < 0:
        return [Violation("theta", f"expected theta_per_s, a finite number >= 0, got {theta!r}")]
    best = worst_case(instance, circuits)
    if abs(theta - best) > TOL * max(best, 1e-12):
        out.append(Violation("theta", f"theta_per_s {theta:.9g}, but these circuits reach {best:.9g}"))
    listed = solution.get("traffic")
    if not isinstance(listed, list) or len(listed) != len(instance.traffic):
        want = f"expected the rates of all {len(instance.traffic)} traffic matrices"
        return [*out, Violation("rates", want)]
    fabric = instance.fabric
    slack = TOL * fabric.nic_rate
    for k, (t, entry) in enumerate(zip(instance.traffic, listed, strict=True)):
        ocs, eps = (_rates(entry, key, t.servers) for key in ("ocs_gbit_per_s", "eps_gbit_per_s"))
        if ocs is None or eps is None:
            out.append(Violation("rates", f"traffic {k}: expected {t.servers} x {t.servers} matrices "
                                 "ocs_gbit_per_s and eps_gbit_per_s"))
            continue
        if (ocs < -slack).any() or (eps < -slack).any():
            out.append(Violation("rates", f"traffic {k}: a negative rate"))
        want = theta * t.bits()
        off = ~np.eye(t.servers, dtype=bool)
        bad = np.abs(ocs + eps - want) > TOL * np.maximum(want, fabric.nic_rate)
        for i, j in zip(*np.nonzero(bad | (~off & ((ocs != 0) | (eps != 0)))), strict=True):
            out.append(Violation("served", f"traffic {k} pair {i}->{j}: {(ocs[i, j] + eps[i, j]) / 1e9:.9g} "
                                 f"Gbit/s, theta 8 D = {want[i, j] / 1e9:.9g}"))
        capacity = circuits[t.region] * fabric.nic_rate
        for i, j in zip(*np.nonzero(ocs > capacity * (1 + TOL) + slack), strict=True):
            out.append(Violation("ocs_capacity", f"traffic {k} pair {i}->{j}: {ocs[i, j] / 1e9:.9g} Gbit/s "
                                 f"on {circuits[t.region][i, j]} circuits"))
        limit = fabric.eps_rate * (1 + TOL) + slack
        for i in np.flatnonzero(eps.sum(axis=1) > limit):
            out.append(Violation("eps_out", f"traffic {k} server {i} sends {eps[i].sum() / 1e9:.9g} Gbit/s "
                                 f"on the EPS, has {fabric.eps_rate / 1e9:g}"))
        for j in np.flatnonzero(eps.sum(axis=0) > limit):
            out.append(Violation("eps_in", f"traffic {k} server {j} receives {eps[:, j].sum() / 1e9:.9g} "
                                 f"Gbit/s on the EPS, has {fabric.eps_rate / 1e9:g}"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """The worst-case throughput of the solution's circuits (1/s), recomputed exactly (NaN when
    the solution holds no readable circuits; :func:`check` says why)."""
    circuits = circuits_of(instance, solution, [])
    return math.nan if circuits is None else worst_case(instance, circuits)


# -- closed-form references -----------------------------------------------------------------


def busiest(bits: np.ndarray) -> float:
    """``max_i max(row_i, col_i)`` of ``8 D``: the busiest server's bits in or out."""
    return float(max(bits.sum(axis=1).max(), bits.sum(axis=0).max()))


def port_bound(instance: Instance) -> float:
    """``theta <= (alpha B + B_E) / max_i max(row_i, col_i)`` on every matrix (all of a server's
    traffic leaves through its alpha circuits and its EPS share): the closed-form upper bound."""
    f = instance.fabric
    return min((f.alpha * f.nic_rate + f.eps_rate) / busiest(t.bits()) for t in instance.traffic)


def electrical_only(instance: Instance) -> float:
    """``B_E / max_i max(row_i, col_i)``, the worst case over matrices: no circuits at all."""
    return min(instance.fabric.eps_rate / busiest(t.bits()) for t in instance.traffic)


# -- generator ------------------------------------------------------------------------------

REGION_SIZES = (4, 6, 8, 12, 16)
ALPHAS = (2, 4, 6)
RATES_GBIT = (100.0, 200.0, 400.0, 800.0)
#: Bytes a server sends per all-to-all in generated instances: 32768 tokens of a 6144-wide bf16
#: activation (the Mixtral-8x22B micro-batch of mixnet-project/mixnet-sim, README), 402.65 MB.
ROW_BYTES = 32768 * 6144 * 2


#: The largest ``size`` :func:`generate` accepts (regions, the loader's limit).
MAX_SIZE = MAX_REGIONS


def generate(seed: int, size: int) -> Instance:
    """``size`` regions of 4 to 16 servers, alpha in {2, 4, 6} of 8 NICs at 100 to 800 Gbit/s, one
    traffic family (uniform, Zipf, Pareto, Mixtral top-2) per instance; a region has a second,
    re-drawn matrix (a stale scenario) with probability 1/4."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size is 1..{MAX_SIZE} (regions, the loader's limit), got {size}")
    rng = np.random.default_rng([seed, size, 15])
    family = families.FAMILIES[int(rng.integers(len(families.FAMILIES)))]
    fabric = Fabric(int(rng.choice(ALPHAS)), 8, float(rng.choice(RATES_GBIT)) * 1e9)
    found = []
    for region in range(max(1, size)):
        servers = int(rng.choice(REGION_SIZES))
        scenarios = 2 if rng.random() < 0.25 else 1
        for s in range(scenarios):
            bits = families.draw(rng, family, servers, ROW_BYTES)
            demand = tuple(tuple(round(float(v) / 1e6, 3) * 1e6 for v in row) for row in bits)
            found.append(Traffic(f"{family} region {region}" + (f" scenario {s}" if scenarios > 1 else ""),
                                 region, demand))
    return Instance(fabric, tuple(found))


def generate_tiny(seed: int) -> Instance:
    """A brute-forceable instance: one or two regions of 3 or 4 servers, alpha 1 or 2 of 3 NICs,
    one or two matrices per region with small integer volumes (some pairs silent)."""
    rng = np.random.default_rng([seed, 1515])
    fabric = Fabric(int(rng.integers(1, 3)), 3, 100e9)
    found = []
    regions = 1 if rng.random() < 0.7 else 2
    for region in range(regions):
        servers = int(rng.integers(3, 5)) if regions == 1 else 3
        for _ in range(1 if rng.random() < 0.6 else 2):
            volumes = rng.integers(0, 9, (servers, servers)) * (rng.random((servers, servers)) < 0.8)
            volumes[0, 1] = max(int(volumes[0, 1]), 1)
            demand = tuple(tuple(float(v) * 1e6 if i != j else 0.0 for j, v in enumerate(row))
                           for i, row in enumerate(volumes))
            found.append(Traffic("tiny", region, demand))
    return Instance(fabric, tuple(found))
