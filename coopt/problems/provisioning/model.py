"""QoS-assured degraded provisioning in a service-differentiated elastic optical network.

Source: Zhong, Li, Hua, Figueiredo, Li, Zheng, Mukherjee, "On QoS-assured degraded provisioning
in service-differentiated multi-layer elastic optical networks", IEEE GLOBECOM 2016
(arXiv 1607.04695). Only the paper's abstract and framing could be read; the exact models below
are the team's reconstruction (research-degraded-provisioning.md, sections c.1 and c.2), built on
the channel-based RSA of Velasco, Klinkowski, Ruiz and Comellas (Photonic Netw. Commun. 24, 2012).

The problem
-----------
A batch of requests r = (s_r, d_r, b_r, t_r, a_r, p_r) (source, destination, bandwidth, holding
time, arrival time, priority class) is offered to a flexgrid network G = (V, E) with |S| slots per
link. A request is served on one of its K shortest paths k in K_r (by length; ties by hops, then
node sequence: :func:`routes`) with the most spectrally efficient format m(k) whose reach covers
the path, on one contiguous block of slots that is the same on every link of the path
(continuity, contiguity). A request of class p may be *degraded*: it gets a retained fraction rho
of its bandwidth from the menu Lambda_r = {rho in Lambda : rho >= 1 - delta_p}, starts at once
(immediate access) and is held for the prolonged time t_r / rho, so its data volume b_r t_r is
kept. It then needs

    n_{r,k,rho} = ceil(rho b_r / c_{m(k)}) + GB      slots (GB guard-band slots included)

on first slots f in F_{r,k,rho} = {0, ..., |S| - n_{r,k,rho}}, and occupies them during
I_{r,rho} = [a_r, a_r + t_r / rho). With ``degradation = false`` every menu is {1}. The path set
K_r, the format m(k) and the width n are part of the problem: the checker refuses a connection on
any other path, format or width, so no method can "beat" the model on decisions it cannot take.

Objective (lexicographic, in one number). With integer class weights w_p >= 1,

    value = W - eps P,   W = sum_{served r} w_{p_r},   P = sum_{served r} w_{p_r} (1 - rho_r),
    eps = 1 / (2 |R| w_max).

P < |R| w_max, so eps P < 1/2, while two different W differ by at least 1 (integer weights):
the value orders solutions by served weight first and, among equal served weight, by least
weighted degradation. This is exactly the order of the two-stage (lexicographic) solve of the
exact route (:mod:`coopt.problems.provisioning.exact`); it is the paper's goal of reducing
service failures by priority, with degradation as the means, not an end.

Channel encoding: x_{r,k,rho,f} in {0, 1} (one per request, path, retained fraction, first slot).

    max  sum_{r,k,rho,f} w_{p_r} (1 - eps (1 - rho)) x_{r,k,rho,f}
    s.t. (A1) sum_{k,rho,f} x_{r,k,rho,f} <= 1                                 for every r
         (A2) sum { x_{r,k,rho,f} : e in k, f <= s < f + n_{r,k,rho}, q in I_{r,rho} } <= 1
                                                        for every link e, slot s, instant q
         (A3) sum { x_{r,k,rho,f} : v in {s_r, d_r}, q in I_{r,rho} } <= T_v - busy_v(q)
                                                        for every node v, instant q (optional)

Two models share this code, chosen by the instance field ``model``:

* ``static`` (Model A): every request is concurrent, so (A2) and (A3) are written once, for
  the single instant "now". With degradation off this is exactly the channel-based RSA.
* ``time_expanded`` (Model B): the instants q are the distinct arrival times. Checking overlap
  only at arrivals is exact: all intervals are half-open and start at an arrival, and a set of
  pairwise-overlapping intervals has a common point, the latest start (one-dimensional Helly
  property). Background lightpaths only depart, so they do not break the argument.

Restrictions of the candidate set, each without loss:

* A channel that hits a background lightpath (beta_{e,s}(q) = 1 at its arrival) is never
  generated: the checker refuses it too (``non_overlap`` with the background).
* A retained fraction that needs as many slots as a larger one on the same path is dropped. Proof:
  swap it for the larger fraction on the same slots; the slots are the same, the interval
  [a, a + t / rho) only gets shorter (so no new conflict in (A2), (A3)), and the value
  w (1 - eps (1 - rho)) only grows. The checker accepts such a fraction (it is feasible), so the
  optimum over the checker's problem equals the model's.

Model row -> checker violation (and back; every check of :func:`check` is one of these):

    ===========================================  =======================================
    model                                        checker
    ===========================================  =======================================
    candidate path k in K_r (K shortest)         ``path_set`` (and ``continuity``: a path
                                                 along links from s_r to d_r)
    format m(k), the most efficient that reaches ``modulation``, ``reach``
    width n_{r,k,rho}, guard band included       ``width``
    first slot f in F_{r,k,rho}                  ``contiguity``
    rho in Lambda_r                              ``class_bound``; rate = rho b: ``rate``
    start a_r, end a_r + t_r / rho               ``immediate_access``, ``data_volume``
    (A1)                                         ``one_decision``
    (A2), background cells                       ``non_overlap``
    (A3)                                         ``transponders``
    ===========================================  =======================================

Malformed records (a missing key, a wrong type, a non-finite number) are ``format`` or ``finite``
violations. The model's objective is divided by w_max (``model.objective_unit``), so its
coefficients are at most 1.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cache
from typing import Any

import networkx as nx

from coopt.errors import InstanceError, UsageError
from coopt.fields import Fields
from coopt.problem import Solution, Violation
from coopt.schema import Field, Schema, Values

MODELS = ("static", "time_expanded")
GBPS = 1e9
KM = 1e3
GHZ = 1e9
#: Relative tolerance of the data-volume and rate checks.
VOLUME_TOL = 1e-9


# -- data model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    a: str
    b: str
    length_m: float


@dataclass(frozen=True)
class Modulation:
    name: str
    bps_per_slot: float
    reach_m: float


@dataclass(frozen=True)
class PriorityClass:
    """Class p: objective weight w_p (an integer >= 1) and maximum degradation ratio delta_p."""

    name: str
    weight: int
    max_degradation: float


@dataclass(frozen=True)
class Request:
    source: str
    target: str
    bandwidth_bps: float
    holding_s: float
    arrival_s: float
    priority: int  # 1 is the highest class


@dataclass(frozen=True)
class Background:
    """A lightpath already in service: slots [first_slot, first_slot + slots) on every link of
    ``path`` until ``end_s`` (math.inf: for the whole horizon)."""

    path: tuple[str, ...]
    first_slot: int
    slots: int
    end_s: float


@dataclass(frozen=True)
class Instance:
    nodes: tuple[str, ...]
    links: tuple[Link, ...]
    directed: bool
    num_slots: int
    slot_width_hz: float
    guard_band: int
    k_paths: int
    modulations: tuple[Modulation, ...]
    classes: tuple[PriorityClass, ...]
    retained_fractions: tuple[float, ...]
    degradation: bool
    model: str
    transponders_per_node: int  # 0: unlimited
    requests: tuple[Request, ...]
    background: tuple[Background, ...] = ()


@dataclass(frozen=True)
class Network:
    """The fields every provisioning model shares (read by :func:`read_network`)."""

    nodes: tuple[str, ...]
    links: tuple[Link, ...]
    num_slots: int
    slot_width_hz: float
    guard_band: int
    k_paths: int
    modulations: tuple[Modulation, ...]
    classes: tuple[PriorityClass, ...]


# -- declared fields ------------------------------------------------------------------------------

#: Largest number of a field that still means something physical (so no model overflows).
MAX_KM = 1e5
MAX_GBIT_PER_S = 1e5
MAX_SECONDS = 1e9

NETWORK_FIELDS = (
    Field("nodes", "strs", "node names", min_length=2, example=["a", "b", "c"]),
    Field("links", "tables", "fibre links: two nodes and a length", min_length=1, fields=(
        Field("ends", "strs", "the two nodes the link joins"),
        Field("length_km", "float", "fibre length", unit="km", si=KM, positive=True, max=MAX_KM),
    ), example=[{"ends": ["a", "b"], "length_km": 400.0}, {"ends": ["b", "c"], "length_km": 300.0},
                {"ends": ["a", "c"], "length_km": 900.0}]),
    Field("num_slots", "int", "frequency slots per link", min=1, max=4096, example=8),
    Field("slot_width_ghz", "float", "width of one frequency slot (documentation; capacities come "
          "from the modulation table)", unit="GHz", si=GHZ, default=12.5, positive=True, max=1e4),
    Field("guard_band_slots", "int", "guard-band slots added to every channel or lightpath", min=0,
          max=4095, example=1),
    Field("k_paths", "int", "candidate paths per node pair: the K shortest by length (ties: fewer "
          "hops, then the lower node sequence)", min=1, max=20, example=2),
    Field("modulations", "tables", "modulation formats; a path uses the most efficient one that "
          "reaches", min_length=1, fields=(
              Field("name", "str", "format name"),
              Field("gbit_per_s_per_slot", "float", "data rate one slot carries", unit="Gbit/s",
                    si=GBPS, positive=True, max=1e4),
              Field("reach_km", "float", "longest path the format reaches", unit="km", si=KM,
                    positive=True, max=1e6),
          ), example=[{"name": "QPSK", "gbit_per_s_per_slot": 25.0, "reach_km": 2500.0},
                      {"name": "16QAM", "gbit_per_s_per_slot": 50.0, "reach_km": 625.0}]),
    Field("classes", "tables", "priority classes, highest first", min_length=1, fields=(
        Field("name", "str", "class name"),
        Field("weight", "int", "objective weight of one served request of the class (an integer, so "
              "served weight is exact)", min=1, max=10**6),
        Field("max_degradation", "float", "largest fraction of the bandwidth that may be withheld "
              "(delta_p)", min=0.0, max=0.999),
    ), example=[{"name": "gold", "weight": 100, "max_degradation": 0.25},
                {"name": "bronze", "weight": 1, "max_degradation": 0.75}]),
)


def request_fields(timed: bool) -> Field:
    """The ``[[requests]]`` table; ``timed``: with arrival times (the single-layer models)."""
    arrival = (Field("arrival_s", "float", "arrival time (time_expanded model)", unit="s", default=0.0,
                     min=0.0, max=MAX_SECONDS),) if timed else ()
    return Field("requests", "tables", "the batch of requests", default=(), fields=(
        Field("source", "str", "source node"),
        Field("target", "str", "destination node"),
        Field("bandwidth_gbit_per_s", "float", "requested data rate b", unit="Gbit/s", si=GBPS,
              positive=True, max=MAX_GBIT_PER_S),
        Field("holding_s", "float", "holding time t at the full rate", unit="s", default=1.0, positive=True,
              max=MAX_SECONDS),
        *arrival,
        Field("priority", "int", "priority class, 1 = the first (highest) of 'classes'", min=1, max=1000),
    ), example=[{"source": "a", "target": "c", "bandwidth_gbit_per_s": 50.0, "priority": 1},
                {"source": "b", "target": "c", "bandwidth_gbit_per_s": 75.0, "priority": 2}])


#: What changed in version 2 (both problems).
CHANGES_V1 = ("bandwidth_gbps (Gbit/s) is now bandwidth_gbit_per_s, modulations' gbps_per_slot is now "
              "gbit_per_s_per_slot, class weights are integers")

SCHEMA = Schema((
    *NETWORK_FIELDS,
    Field("directed", "bool", "links are one-way arcs (one fibre per direction) instead of shared "
          "undirected fibres", default=False),
    Field("retained_fractions", "floats", "menu Lambda of retained fractions rho (must include 1)",
          default=(1.0,), positive=True, max=1.0, min_length=1),
    Field("degradation", "bool", "whether requests may be degraded (false: every menu is {1})"),
    Field("model", "str", "static: all requests concurrent (Model A); time_expanded: intervals "
          "[a, a + t / rho) (Model B)", choices=MODELS),
    Field("transponders_per_node", "int", "transponders per node, 0 = unlimited", default=0, min=0,
          max=10**6),
    request_fields(timed=True),
    Field("background", "tables", "lightpaths already in service (time_expanded: until end_s)", default=(),
          fields=(
              Field("path", "strs", "node sequence along links", min_length=2),
              Field("first_slot", "int", "first slot of its block", min=0, max=4095),
              Field("slots", "int", "width of its block", min=1, max=4096),
              Field("end_s", "float", "departure time (default: never)", unit="s", default=math.inf,
                    min=0.0),
          )),
), version=2, changes={1: CHANGES_V1})


class CrossChecks:
    """Cross-field errors of one file, collected so that all of them are reported at once."""

    def __init__(self, fields: Fields):
        self.fields = fields
        self.errors: list[InstanceError] = []

    def add(self, key: str, expected: str) -> None:
        self.errors.append(InstanceError(self.fields.path, self.fields.name(key), expected))

    def raise_any(self) -> None:
        if self.errors:
            raise InstanceError.combine(self.errors)


def read_network(values: Values, checks: CrossChecks, directed: bool) -> Network:
    """The shared fields as data, with their cross-field checks."""
    nodes = tuple(values.nodes)
    if len(set(nodes)) != len(nodes):
        checks.add("nodes", "expected distinct node names")
    known = set(nodes)
    links, seen = [], set()
    for i, lk in enumerate(values.links):
        ends = tuple(lk.ends)
        if len(ends) != 2 or ends[0] == ends[1] or not set(ends) <= known:
            checks.add(f"links[{i}].ends", f"expected two different nodes from 'nodes', got {list(ends)}")
            continue
        key = ends if directed else frozenset(ends)
        if key in seen:
            checks.add(f"links[{i}].ends", f"expected no parallel links, {list(ends)} repeats")
        seen.add(key)
        links.append(Link(ends[0], ends[1], lk.length_km))
    if values.guard_band_slots >= values.num_slots:
        checks.add("guard_band_slots", f"expected fewer than num_slots = {values.num_slots}, "
                                         f"got {values.guard_band_slots}")
    modulations = tuple(Modulation(m.name, m.gbit_per_s_per_slot, m.reach_km) for m in values.modulations)
    if len({m.name for m in modulations}) != len(modulations):
        checks.add("modulations", "expected distinct modulation names")
    classes = tuple(PriorityClass(c.name, c.weight, c.max_degradation) for c in values.classes)
    return Network(nodes, tuple(links), values.num_slots, values.slot_width_ghz, values.guard_band_slots,
                   values.k_paths, modulations, classes)


def read_requests(values: Values, network: Network, checks: CrossChecks) -> tuple[Request, ...]:
    requests = []
    known = set(network.nodes)
    for i, rq in enumerate(values.requests):
        if rq.source not in known or rq.target not in known or rq.source == rq.target:
            checks.add(f"requests[{i}]",
                         f"expected two different nodes from 'nodes', got {rq.source!r} -> {rq.target!r}")
        if rq.priority > len(network.classes):
            checks.add(f"requests[{i}].priority",
                         f"expected a class from 1 to {len(network.classes)}, got {rq.priority}")
        arrival = rq.arrival_s if "arrival_s" in rq else 0.0
        requests.append(Request(rq.source, rq.target, rq.bandwidth_gbit_per_s, rq.holding_s, arrival,
                                rq.priority))
    return tuple(requests)


def load(fields: Fields) -> Instance:
    values = SCHEMA.read(fields)
    checks = CrossChecks(fields)
    net = read_network(values, checks, values.directed)
    fractions = tuple(values.retained_fractions)
    if 1.0 not in fractions or len(set(fractions)) != len(fractions):
        checks.add("retained_fractions",
                   f"expected distinct fractions in (0, 1] including 1, got {list(fractions)}")
    requests = read_requests(values, net, checks)
    background = []
    for i, bg in enumerate(values.background):
        if bg.first_slot + bg.slots > net.num_slots:
            checks.add(f"background[{i}]", f"expected first_slot + slots <= num_slots = {net.num_slots}")
        background.append(Background(tuple(bg.path), bg.first_slot, bg.slots, bg.end_s))
    checks.raise_any()
    instance = Instance(
        net.nodes, net.links, values.directed, net.num_slots, net.slot_width_hz, net.guard_band, net.k_paths,
        net.modulations, net.classes, fractions, values.degradation, values.model,
        values.transponders_per_node, requests, tuple(background),
    )
    for i, bg in enumerate(background):
        if path_links(instance, bg.path) is None:
            checks.add(f"background[{i}].path", f"expected a path along existing links, got {list(bg.path)}")
    checks.raise_any()
    return instance


def dump_network(instance: Any) -> dict[str, Any]:
    """The shared fields of :class:`Network` (any instance carrying them) in file units."""
    return {
        "nodes": list(instance.nodes),
        "num_slots": instance.num_slots,
        "slot_width_ghz": instance.slot_width_hz / GHZ,
        "guard_band_slots": instance.guard_band,
        "k_paths": instance.k_paths,
        "links": [{"ends": [lk.a, lk.b], "length_km": lk.length_m / KM} for lk in instance.links],
        "modulations": [
            {"name": m.name, "gbit_per_s_per_slot": m.bps_per_slot / GBPS, "reach_km": m.reach_m / KM}
            for m in instance.modulations
        ],
        "classes": [
            {"name": c.name, "weight": c.weight, "max_degradation": c.max_degradation}
            for c in instance.classes
        ],
    }


def dump_request(request: Request, timed: bool) -> dict[str, Any]:
    out = {"source": request.source, "target": request.target,
           "bandwidth_gbit_per_s": request.bandwidth_bps / GBPS, "holding_s": request.holding_s}
    if timed:
        out["arrival_s"] = request.arrival_s
    return out | {"priority": request.priority}


def dump(instance: Instance) -> dict[str, Any]:
    out = dump_network(instance) | {
        "directed": instance.directed,
        "retained_fractions": list(instance.retained_fractions),
        "degradation": instance.degradation,
        "model": instance.model,
        "transponders_per_node": instance.transponders_per_node,
        "requests": [dump_request(r, timed=True) for r in instance.requests],
    }
    if instance.background:
        out["background"] = [
            {"path": list(bg.path), "first_slot": bg.first_slot, "slots": bg.slots}
            | ({} if math.isinf(bg.end_s) else {"end_s": bg.end_s})
            for bg in instance.background
        ]
    return out


# -- derived network data (shared with the heuristics and the simulator) ------------------------


@dataclass(frozen=True)
class Route:
    """One candidate path of a node pair with its distance-adaptive format."""

    nodes: tuple[str, ...]
    links: tuple[int, ...]
    length_m: float
    modulation: Modulation | None  # None: no format reaches this far


def link_index(instance: Instance) -> dict[Any, int]:
    """Link key -> index; undirected links are keyed by both orientations."""
    return _link_index(instance.links, instance.directed)


@cache
def _link_index(links: tuple[Link, ...], directed: bool) -> dict[Any, int]:
    index: dict[Any, int] = {}
    for i, lk in enumerate(links):
        index[(lk.a, lk.b)] = i
        if not directed:
            index[(lk.b, lk.a)] = i
    return index


def path_links(instance: Instance, path: Any) -> tuple[int, ...] | None:
    """The link indices of a node path, or None if it is not a simple path along links."""
    index = link_index(instance)
    if isinstance(path, str):
        return None
    try:
        nodes = [v if isinstance(v, str) else None for v in path]
    except TypeError:
        return None
    if len(nodes) < 2 or None in nodes or len(set(nodes)) != len(nodes):
        return None
    out = []
    for u, v in zip(nodes, nodes[1:], strict=False):
        if (u, v) not in index:
            return None
        out.append(index[(u, v)])
    return tuple(out)


def best_modulation(modulations: tuple[Modulation, ...], length_m: float) -> Modulation | None:
    """The most spectrally efficient format whose reach covers ``length_m`` (ties: table order)."""
    fits = [m for m in modulations if m.reach_m >= length_m]
    return max(fits, key=lambda m: m.bps_per_slot) if fits else None


def slots_needed(bandwidth_bps: float, modulation: Modulation, guard_band: int) -> int:
    """n = ceil(rate / c_m) + GB; the 1e-9 keeps exact quotients such as 75/25 from rounding up."""
    return math.ceil(bandwidth_bps / modulation.bps_per_slot - 1e-9) + guard_band


def routes(instance: Instance, source: str, target: str) -> tuple[Route, ...]:
    """The K shortest simple paths by length; ties broken by hop count, then node sequence."""
    return k_shortest_routes(instance.nodes, instance.links, instance.directed, instance.modulations,
                             instance.k_paths, source, target)


@cache
def k_shortest_routes(
    nodes: tuple[str, ...], links: tuple[Link, ...], directed: bool, modulations: tuple[Modulation, ...],
    k: int, source: str, target: str,
) -> tuple[Route, ...]:
    """:func:`routes` from the network fields alone (shared with the multi-layer model)."""
    graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_nodes_from(nodes)
    for lk in links:
        graph.add_edge(lk.a, lk.b, length=lk.length_m)
    order = {v: i for i, v in enumerate(nodes)}
    found: list[tuple[float, int, tuple[int, ...], tuple[str, ...]]] = []
    try:
        for path in nx.shortest_simple_paths(graph, source, target, weight="length"):
            length = nx.path_weight(graph, path, "length")
            # Paths come in nondecreasing length: past the k-th, only exact ties can still enter.
            if len(found) >= k and length > found[k - 1][0] * (1 + 1e-12):
                break
            found.append((length, len(path), tuple(order[v] for v in path), tuple(path)))
            found.sort()
    except nx.NetworkXNoPath:
        return ()
    index = _link_index(links, directed)
    out = []
    for length, _, _, path in found[:k]:
        lks = tuple(index[(u, v)] for u, v in zip(path, path[1:], strict=False))
        out.append(Route(path, lks, length, best_modulation(modulations, length)))
    return tuple(out)


def route_of(instance: Instance, request: Request, path: Any) -> Route | None:
    """The candidate route of ``request`` whose node sequence is ``path``, or None (not in K_r)."""
    for route in routes(instance, request.source, request.target):
        if list(route.nodes) == path:
            return route
    return None


def retained_levels(instance: Instance, request: Request) -> tuple[float, ...]:
    """Lambda_r in decreasing order: the menu above the class bound (just 1 without degradation)."""
    if not instance.degradation:
        return (1.0,)
    floor = 1.0 - instance.classes[request.priority - 1].max_degradation
    return tuple(sorted((rho for rho in instance.retained_fractions if rho >= floor - 1e-12), reverse=True))


def epsilon(instance: Instance) -> float:
    """Degradation penalty weight: all penalties together stay below 1/2, the least difference
    between two served weights being 1 (integer weights)."""
    return 1.0 / (2 * max(1, len(instance.requests)) * max(c.weight for c in instance.classes))


def request_value(instance: Instance, request: Request, retained: float) -> float:
    """Objective contribution of serving ``request`` at retained fraction ``retained``."""
    weight = instance.classes[request.priority - 1].weight
    return weight * (1.0 - epsilon(instance) * (1.0 - retained))


def end_time(request: Request, retained: float) -> float:
    """Departure after the prolonged holding time t / rho (same data volume)."""
    return request.arrival_s + request.holding_s / retained


def concurrent(instance: Instance, start1: float, end1: float, start2: float, end2: float) -> bool:
    """Half-open intervals overlap; in the static model everything is concurrent."""
    return instance.model == "static" or (start1 < end2 and start2 < end1)


# -- formulation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """x_{r,k,rho,f}: request r on route k at retained fraction rho from first slot f."""

    request: int
    route: int
    retained: float
    first_slot: int
    slots: int


def candidates(instance: Instance, narrowest: bool = False) -> list[Candidate]:
    """Every non-dominated channel that avoids the background, in (r, k, rho desc, f) order.
    ``narrowest``: per (request, path) only the narrowest width (its largest fraction), which is
    all that maximizing served weight in the static model needs (see :mod:`.milp`)."""
    out = []
    for r, req in enumerate(instance.requests):
        for k, route in enumerate(routes(instance, req.source, req.target)):
            if route.modulation is None:
                continue
            levels = []  # (rho, n), n strictly decreasing: the non-dominated fractions
            for rho in retained_levels(instance, req):
                n = slots_needed(rho * req.bandwidth_bps, route.modulation, instance.guard_band)
                if n <= instance.num_slots and (not levels or n < levels[-1][1]):
                    levels.append((rho, n))  # a fraction as wide as a larger one is dominated
            blocked = _background_cells(instance, route.links, req.arrival_s)
            for rho, n in levels[-1:] if narrowest else levels:
                for f in range(instance.num_slots - n + 1):
                    if not any((e, s) in blocked for e in route.links for s in range(f, f + n)):
                        out.append(Candidate(r, k, rho, f, n))
    return out


def _background_cells(instance: Instance, link_ids: tuple[int, ...], time_s: float) -> set[tuple[int, int]]:
    """Cells (link, slot) held by background lightpaths at ``time_s`` on the given links."""
    cells = set()
    for bg in instance.background:
        if instance.model == "static" or time_s < bg.end_s:
            for e in path_links(instance, bg.path) or ():
                if e in link_ids:
                    cells.update((e, s) for s in range(bg.first_slot, bg.first_slot + bg.slots))
    return cells


def instants(instance: Instance) -> list[float]:
    if instance.model == "static":
        return [0.0]
    return sorted({r.arrival_s for r in instance.requests})


def active_at(instance: Instance, cand: Candidate, q: float) -> bool:
    req = instance.requests[cand.request]
    return instance.model == "static" or req.arrival_s <= q < end_time(req, cand.retained)


def background_transponders(instance: Instance, node: str, q: float) -> int:
    return sum(1 for bg in instance.background
               if node in (bg.path[0], bg.path[-1]) and (instance.model == "static" or q < bg.end_s))


def request_ends(instance: Instance, r: int) -> tuple[str, str]:
    req = instance.requests[r]
    return req.source, req.target


# -- extraction ---------------------------------------------------------------------------------


def connection(instance: Instance, r: int, route: Route, retained: float, first_slot: int) -> dict[str, Any]:
    """The solution record of request r served on ``route`` (used by every method)."""
    req = instance.requests[r]
    slots = slots_needed(retained * req.bandwidth_bps, route.modulation, instance.guard_band)
    return {
        "request": r,
        "path": list(route.nodes),
        "modulation": route.modulation.name,
        "retained": retained,
        "rate_gbit_per_s": retained * req.bandwidth_bps / GBPS,
        "first_slot": first_slot,
        "slots": slots,
        "start_s": req.arrival_s,
        "end_s": end_time(req, retained),
    }


def solution_from(instance: Instance, connections: list[dict[str, Any]]) -> Solution:
    """A solution dict with its objective and per-class summary."""
    connections = sorted(connections, key=lambda c: c["request"])
    served = {c["request"] for c in connections}
    per_class = []
    for p, cls in enumerate(instance.classes, start=1):
        reqs = [r for r, req in enumerate(instance.requests) if req.priority == p]
        per_class.append({
            "class": cls.name,
            "offered": len(reqs),
            "served": sum(1 for r in reqs if r in served),
            "degraded": sum(1 for c in connections
                            if instance.requests[c["request"]].priority == p and c["retained"] < 1.0),
        })
    solution: Solution = {
        "connections": connections,
        "blocked": [r for r in range(len(instance.requests)) if r not in served],
        "per_class": per_class,
    }
    solution["objective"] = objective(instance, solution)
    return solution


# -- checker ------------------------------------------------------------------------------------


def finite_number(value: Any) -> float | None:
    """``value`` as a float if it is a finite real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def claimed_objective(solution: Any) -> list[Violation]:
    """A claimed objective must be a finite number (the checker recomputes it anyway)."""
    claimed = solution.get("objective") if isinstance(solution, dict) else None
    if claimed is not None and finite_number(claimed) is None:
        return [Violation("finite", f"the claimed objective {claimed!r} is not a finite number")]
    return []


def check(instance: Instance, solution: Solution) -> list[Violation]:
    """Recompute feasibility from the instance alone (the table of the module docstring): every
    served connection must use one of its request's K candidate paths with that path's format, a
    block of exactly n_{r,k,rho} slots inside the spectrum, a retained fraction from its class's
    menu, start at arrival and keep its data volume; no two concurrent connections (nor a
    background lightpath) may share a slot on a link, guard bands included; transponder counts
    hold at every instant."""
    conns = solution.get("connections") if isinstance(solution, dict) else None
    if not isinstance(conns, list):
        return [Violation("format", "solution has no 'connections' list")]
    out = claimed_objective(solution)
    n_req = len(instance.requests)
    good: list[tuple[int, tuple[int, ...], int, int, float, float]] = []
    seen: set[int] = set()
    for j, c in enumerate(conns):
        if not isinstance(c, dict):
            out.append(Violation("format", f"connection {j} is not a table"))
            continue
        r = c.get("request")
        if not is_index(r) or not 0 <= r < n_req:
            out.append(Violation("format", f"connection {j}: 'request' must be below {n_req}, got {r!r}"))
            continue
        if r in seen:
            out.append(Violation("one_decision", f"request {r} is served twice"))
            continue
        seen.add(r)
        out.extend(_check_connection(instance, r, c, good))
    out.extend(_overlaps(instance, good))
    out.extend(_transponder_use(instance, good))
    return out


def _check_connection(instance: Instance, r: int, c: dict, good: list) -> list[Violation]:
    """The per-connection rows of the table; appends the connection to ``good`` if it is placed."""
    out = []
    req = instance.requests[r]
    where = f"request {r}"
    path = c.get("path")
    lks = path_links(instance, path) if isinstance(path, list) else None
    if lks is None:
        return [Violation("continuity", f"{where}: path {path!r} is not a simple path along links")]
    if path[0] != req.source or path[-1] != req.target:
        return [Violation("continuity", f"{where}: path runs {path[0]} -> {path[-1]}, "
                                        f"expected {req.source} -> {req.target}")]
    route = route_of(instance, req, path)
    if route is None:
        return [Violation("path_set", f"{where}: path {'-'.join(path)} is not among the "
                                      f"{instance.k_paths} shortest paths of {req.source} -> {req.target}")]
    if route.modulation is None:
        return [Violation("reach", f"{where}: no format reaches {route.length_m / KM:g} km")]
    if c.get("modulation") != route.modulation.name:
        out.append(Violation("modulation", f"{where}: modulation {c.get('modulation')!r}, the path's "
                                           f"format is {route.modulation.name}"))
    rho, f, n = finite_number(c.get("retained")), c.get("first_slot"), c.get("slots")
    start, end, rate = (finite_number(c.get(key)) for key in ("start_s", "end_s", "rate_gbit_per_s"))
    if rho is None or start is None or end is None or rate is None or not (is_index(f) and is_index(n)):
        out.append(Violation("format", f"{where}: needs finite retained, rate_gbit_per_s, start_s, end_s "
                                       "and integer first_slot, slots"))
        return out
    menu = retained_levels(instance, req)
    if not any(math.isclose(rho, lv, rel_tol=VOLUME_TOL) for lv in menu):
        out.append(Violation("class_bound", f"{where}: retained fraction {rho:g} is not in the menu "
                                            f"{list(menu)} of class {req.priority}"))
    elif n != slots_needed(rho * req.bandwidth_bps, route.modulation, instance.guard_band):
        need = slots_needed(rho * req.bandwidth_bps, route.modulation, instance.guard_band)
        out.append(Violation("width", f"{where}: {n} slots, the channel of {rho:g} x "
                                      f"{req.bandwidth_bps / GBPS:g} Gbit/s in {route.modulation.name} "
                                      f"with {instance.guard_band} guard slots is {need} wide"))
    if not math.isclose(rate * GBPS, rho * req.bandwidth_bps, rel_tol=VOLUME_TOL):
        out.append(Violation("rate", f"{where}: rate {rate:g} Gbit/s != retained x bandwidth"))
    if f < 0 or n < 1 or f + n > instance.num_slots:
        out.append(Violation("contiguity", f"{where}: slots [{f}, {f + n}) outside 0..{instance.num_slots}"))
    if start != req.arrival_s:
        out.append(Violation("immediate_access",
                             f"{where}: starts at {start:g}, arrived at {req.arrival_s:g}"))
    volume = req.bandwidth_bps * req.holding_s
    if not math.isclose(rate * GBPS * (end - start), volume, rel_tol=VOLUME_TOL):
        out.append(Violation("data_volume", f"{where}: rate x time = {rate * (end - start):g} Gbit, "
                                            f"expected {volume / GBPS:g} Gbit"))
    good.append((r, lks, f, n, start, end))
    return out


def _overlaps(instance: Instance, good: list) -> list[Violation]:
    out = []
    holders: list[tuple[str, tuple[int, ...], int, int, float, float]] = [
        (f"request {r}", lks, f, n, s, e) for r, lks, f, n, s, e in good
    ]
    backgrounds = [
        (f"background {i}", path_links(instance, bg.path), bg.first_slot, bg.slots, -math.inf, bg.end_s)
        for i, bg in enumerate(instance.background)
    ]
    for i, (name1, l1, f1, n1, s1, e1) in enumerate(holders):
        for name2, l2, f2, n2, s2, e2 in holders[i + 1:] + backgrounds:
            shared = set(l1) & set(l2)
            if shared and f1 < f2 + n2 and f2 < f1 + n1 and concurrent(instance, s1, e1, s2, e2):
                link = instance.links[min(shared)]
                out.append(Violation("non_overlap", f"{name1} and {name2} share slots on link "
                                                    f"{link.a}-{link.b}"))
    return out


def _transponder_use(instance: Instance, good: list) -> list[Violation]:
    if not instance.transponders_per_node:
        return []
    out = []
    starts = sorted({s for *_, s, _ in good}) if instance.model != "static" else [0.0]
    for q in starts:
        for v in instance.nodes:
            used = background_transponders(instance, v, q) + sum(
                1 for r, _, _, _, s, e in good
                if v in request_ends(instance, r) and (instance.model == "static" or s <= q < e))
            if used > instance.transponders_per_node:
                out.append(Violation("transponders", f"node {v} uses {used} transponders at t = {q:g}, "
                                                     f"has {instance.transponders_per_node}"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """W - eps P over served requests (module docstring); malformed records count nothing."""
    total = 0.0
    served: set[int] = set()
    conns = solution.get("connections") if isinstance(solution, dict) else None
    for c in conns if isinstance(conns, list) else []:
        r = c.get("request") if isinstance(c, dict) else None
        rho = finite_number(c.get("retained")) if isinstance(c, dict) else None
        if is_index(r) and 0 <= r < len(instance.requests) and r not in served and rho is not None:
            served.add(r)
            total += request_value(instance, instance.requests[r], rho)
    return total


# -- generator ----------------------------------------------------------------------------------

#: The synthetic 6-node / 9-link network of the research notes (section f.1): lengths straddle the
#: 625 / 1250 / 2500 km reach thresholds of the modulation table below.
SIX_NODE_LINKS = ((1, 2, 400), (1, 3, 800), (2, 3, 300), (2, 4, 700), (3, 4, 1000),
                  (3, 5, 600), (4, 5, 300), (4, 6, 500), (5, 6, 900))
#: BPSK..16QAM, Gb/s per 12.5 GHz slot and reach in km (XLRON modulations_deeprmsa.csv).
MODULATION_TABLE = (("BPSK", 12.5, 100000), ("QPSK", 25, 2500), ("8QAM", 37.5, 1250), ("16QAM", 50, 625))
#: Three classes [reconstructed]: weights 100/10/1, degradation bounds 0.25/0.5/0.75.
CLASS_TABLE = (("gold", 100, 0.25), ("silver", 10, 0.5), ("bronze", 1, 0.75))


def six_node_network() -> tuple[tuple[str, ...], tuple[Link, ...], tuple[Modulation, ...],
                               tuple[PriorityClass, ...]]:
    """Nodes, links, modulation table and classes of the 6-node exact family."""
    nodes = tuple(str(i) for i in range(1, 7))
    links = tuple(Link(str(a), str(b), km * KM) for a, b, km in SIX_NODE_LINKS)
    modulations = tuple(Modulation(n, c * GBPS, km * KM) for n, c, km in MODULATION_TABLE)
    return nodes, links, modulations, tuple(PriorityClass(*c) for c in CLASS_TABLE)


#: The largest ``size`` :func:`generate` accepts (8 size requests).
MAX_SIZE = 1000


def generate(seed: int, size: int) -> Instance:
    """The 6-node exact family: 8 x size requests with b in {25, 50, 75, 100} Gb/s, classes
    equiprobable, on 16 slots with 1 guard slot, K = 3, Lambda = {1, .75, .5, .25}; odd seeds
    give the time-expanded model (Poisson arrivals at rate 8 x size / 1.5 per unit time, Exp(1)
    holding times, so most requests overlap and the network congests), even seeds the static
    one."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size is 1..{MAX_SIZE} (8 size requests), got {size}")
    rng = random.Random(seed)
    nodes, links, modulations, classes = six_node_network()
    count = 8 * size
    time_expanded = seed % 2 == 1
    arrivals = []
    clock = 0.0
    for _ in range(count):
        arrivals.append(round(clock, 4) if time_expanded else 0.0)
        clock += rng.expovariate(count / 1.5)
    requests = []
    for a in arrivals:
        s, d = rng.sample(nodes, 2)
        requests.append(Request(s, d, rng.choice((25, 50, 75, 100)) * GBPS,
                                round(rng.expovariate(1.0) + 0.05, 4), a, rng.randint(1, 3)))
    return Instance(
        nodes, links, False, 16, 12.5 * GHZ, 1, 3, modulations, classes,
        (1.0, 0.75, 0.5, 0.25), True, "time_expanded" if time_expanded else "static", 0,
        tuple(requests),
    )
