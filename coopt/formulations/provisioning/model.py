"""QoS-assured degraded provisioning in a service-differentiated elastic optical network.

Source: Zhong, Li, Hua, Figueiredo, Li, Zheng, Mukherjee, "On QoS-assured degraded provisioning
in service-differentiated multi-layer elastic optical networks", IEEE GLOBECOM 2016
(arXiv 1607.04695). Only the paper's framing could be read; the exact models below are the
team's reconstruction (research-degraded-provisioning.md, sections c.1 and c.2), built on the
channel-based RSA of Velasco, Klinkowski, Ruiz and Comellas (Photonic Netw. Commun. 24, 2012).

The problem
-----------
A batch of requests r = (s_r, d_r, b_r, t_r, a_r, p_r) (source, destination, bandwidth, holding
time, arrival time, priority class) is offered to a flexgrid network G = (V, E) with |S| slots per
link. A request is served on one of its K shortest paths k (by length; ties by hops, then node
sequence) with the most spectrally efficient format m(k) whose reach covers the path, on one
contiguous block of slots that is the same on every link of the path (continuity, contiguity).
A request of class p may be *degraded*: it gets a retained fraction rho of its bandwidth from the
menu Lambda_r = {rho in Lambda : rho >= 1 - delta_p}, starts at once (immediate access) and is held
for the prolonged time t_r / rho, so the data volume b_r t_r is preserved. It then needs

    n_{r,k,rho} = ceil(rho b_r / c_{m(k)}) + GB      slots (GB guard-band slots included),

on first slots f in F_{r,k,rho} = {0, ..., |S| - n_{r,k,rho}}, and occupies them during
I_{r,rho} = [a_r, a_r + t_r / rho). With ``degradation = false`` every menu is {1}.

Channel encoding: x_{r,k,rho,f} in {0, 1} (one per request, path, retained fraction, first slot).

    max  sum_{r,k,rho,f} w_{p_r} (1 - eps (1 - rho)) x_{r,k,rho,f},   eps = w_min / (2 |R| w_max)
    s.t. (A1) sum_{k,rho,f} x_{r,k,rho,f} <= 1                                 for every r
         (A2) sum { x_{r,k,rho,f} : e in k, f <= s < f + n_{r,k,rho}, q in I_{r,rho} } <= 1
                                                        for every link e, slot s, instant q
         (A3) sum { x_{r,k,rho,f} : v in {s_r, d_r}, q in I_{r,rho} } <= T_v - busy_v(q)
                                                        for every node v, instant q (optional)

The objective serves the most priority weight first; eps is small enough that all degradation
penalties together weigh less than the lightest request, so among maximal-weight decisions the
one degrading the least (weighted) is chosen.

Two models share this code, chosen by the instance field ``model``:

* ``static`` (Model A): every request is concurrent, so (A2) and (A3) are written once, for
  the single instant "now". With degradation off this is exactly the channel-based RSA.
* ``time_expanded`` (Model B): the instants q are the distinct arrival times. Checking overlap
  only at arrivals is exact: all intervals are half-open and start at an arrival, and a set of
  pairwise-overlapping intervals has a common point, the latest start (one-dimensional Helly
  property). Background lightpaths only depart, so they do not break the argument.

Candidates that hit a background lightpath (beta_{e,s}(q) = 1) are never generated, and a
retained fraction that needs as many slots as a larger one on the same path is dropped (same
slots, longer holding time, larger penalty: dominated), so (A2) keeps only rows with two or more
requests. The objective is divided by sum_r w_{p_r} (``model.objective_unit``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cache
from typing import Any

import networkx as nx

from coopt.instance import Fields
from coopt.problem import Solution, Violation

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
    """Class p: objective weight w_p and maximum degradation ratio delta_p."""

    name: str
    weight: float
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
    """The fields every provisioning model shares (read by :func:`load_network`)."""

    nodes: tuple[str, ...]
    links: tuple[Link, ...]
    directed: bool
    num_slots: int
    slot_width_hz: float
    guard_band: int
    k_paths: int
    modulations: tuple[Modulation, ...]
    classes: tuple[PriorityClass, ...]


def load_network(fields: Fields) -> Network:
    nodes = fields.strings("nodes", min_length=2)
    if len(set(nodes)) != len(nodes):
        fields.fail("nodes", "expected distinct node names")
    known = set(nodes)
    directed = fields.bool("directed", default=False)
    links = []
    seen: set = set()
    for i, lf in enumerate(fields.tables("links", min_length=1)):
        ends = lf.strings("ends")
        if len(ends) != 2 or ends[0] == ends[1] or not set(ends) <= known:
            fields.fail(f"links[{i}].ends", f"expected two different nodes from 'nodes', got {list(ends)}")
        key = tuple(ends) if directed else frozenset(ends)
        if key in seen:
            fields.fail(f"links[{i}].ends", f"expected no parallel links, {list(ends)} repeats")
        seen.add(key)
        links.append(Link(ends[0], ends[1], lf.float("length_km", positive=True) * KM))
    num_slots = fields.int("num_slots", min=1, max=4096)
    slot_width_hz = fields.float("slot_width_ghz", positive=True, default=12.5) * GHZ
    guard_band = fields.int("guard_band_slots", min=0, max=num_slots - 1)
    k_paths = fields.int("k_paths", min=1, max=20)
    modulations = []
    for mf in fields.tables("modulations", min_length=1):
        modulations.append(
            Modulation(mf.str("name"), mf.float("gbps_per_slot", positive=True) * GBPS,
                       mf.float("reach_km", positive=True) * KM)
        )
    if len({m.name for m in modulations}) != len(modulations):
        fields.fail("modulations", "expected distinct modulation names")
    classes = []
    for cf in fields.tables("classes", min_length=1):
        classes.append(
            PriorityClass(cf.str("name"), cf.float("weight", positive=True),
                          cf.float("max_degradation", min=0.0, max=0.999))
        )
    return Network(tuple(nodes), tuple(links), directed, num_slots, slot_width_hz, guard_band, k_paths,
                   tuple(modulations), tuple(classes))


def load_requests(fields: Fields, network: Network) -> tuple[Request, ...]:
    requests = []
    known = set(network.nodes)
    for i, rf in enumerate(fields.tables("requests", default=[])):
        source, target = rf.str("source"), rf.str("target")
        if source not in known or target not in known or source == target:
            fields.fail(f"requests[{i}]",
                        f"expected two different nodes from 'nodes', got {source!r} -> {target!r}")
        requests.append(Request(
            source, target, rf.float("bandwidth_gbps", positive=True) * GBPS,
            rf.float("holding_s", positive=True, default=1.0), rf.float("arrival_s", min=0.0, default=0.0),
            rf.int("priority", min=1, max=len(network.classes)),
        ))
    return tuple(requests)


def load(fields: Fields) -> Instance:
    net = load_network(fields)
    fractions = fields.numbers("retained_fractions", min_length=1, positive=True, max=1.0, default=(1.0,))
    if 1.0 not in fractions or len(set(fractions)) != len(fractions):
        fields.fail("retained_fractions",
                    f"expected distinct fractions in (0, 1] including 1, got {list(fractions)}")
    degradation = fields.bool("degradation")
    model = fields.str("model", choices=MODELS)
    transponders = fields.int("transponders_per_node", min=0, default=0)
    requests = load_requests(fields, net)
    background = []
    for i, bf in enumerate(fields.tables("background", default=[])):
        path = bf.strings("path", min_length=2)
        first, slots = bf.int("first_slot", min=0), bf.int("slots", min=1)
        if first + slots > net.num_slots:
            fields.fail(f"background[{i}]", f"expected first_slot + slots <= num_slots = {net.num_slots}")
        background.append(Background(tuple(path), first, slots, bf.float("end_s", min=0.0, default=math.inf)))
    instance = Instance(
        net.nodes, net.links, net.directed, net.num_slots, net.slot_width_hz, net.guard_band, net.k_paths,
        net.modulations, net.classes, tuple(fractions), degradation, model, transponders,
        requests, tuple(background),
    )
    for i, bg in enumerate(background):
        if path_links(instance, bg.path) is None:
            fields.fail(f"background[{i}].path", f"expected a path along existing links, got {list(bg.path)}")
    return instance


def dump_network(instance: Any) -> dict[str, Any]:
    """The shared fields of :class:`Network` (any instance carrying them) as TOML-ready values."""
    return {
        "nodes": list(instance.nodes),
        "directed": instance.directed,
        "num_slots": instance.num_slots,
        "slot_width_ghz": instance.slot_width_hz / GHZ,
        "guard_band_slots": instance.guard_band,
        "k_paths": instance.k_paths,
        "links": [{"ends": [lk.a, lk.b], "length_km": lk.length_m / KM} for lk in instance.links],
        "modulations": [
            {"name": m.name, "gbps_per_slot": m.bps_per_slot / GBPS, "reach_km": m.reach_m / KM}
            for m in instance.modulations
        ],
        "classes": [
            {"name": c.name, "weight": c.weight, "max_degradation": c.max_degradation}
            for c in instance.classes
        ],
        "requests": [
            {"source": r.source, "target": r.target, "bandwidth_gbps": r.bandwidth_bps / GBPS,
             "holding_s": r.holding_s, "arrival_s": r.arrival_s, "priority": r.priority}
            for r in instance.requests
        ],
    }


def dump(instance: Instance) -> dict[str, Any]:
    out = dump_network(instance) | {
        "retained_fractions": list(instance.retained_fractions),
        "degradation": instance.degradation,
        "model": instance.model,
        "transponders_per_node": instance.transponders_per_node,
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
    try:
        nodes = [str(v) for v in path]
    except TypeError:
        return None
    if len(nodes) < 2 or len(set(nodes)) != len(nodes):
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


def retained_levels(instance: Instance, request: Request) -> tuple[float, ...]:
    """Lambda_r in decreasing order: the menu above the class bound (just 1 without degradation)."""
    if not instance.degradation:
        return (1.0,)
    floor = 1.0 - instance.classes[request.priority - 1].max_degradation
    return tuple(sorted((rho for rho in instance.retained_fractions if rho >= floor - 1e-12), reverse=True))


def epsilon(instance: Instance) -> float:
    """Degradation penalty weight: all penalties together stay below the lightest request."""
    weights = [c.weight for c in instance.classes]
    return min(weights) / (2 * max(1, len(instance.requests)) * max(weights))


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


def candidates(instance: Instance) -> list[Candidate]:
    """Every non-dominated channel that avoids the background, in (r, k, rho desc, f) order."""
    out = []
    for r, req in enumerate(instance.requests):
        for k, route in enumerate(routes(instance, req.source, req.target)):
            if route.modulation is None:
                continue
            widths_seen: set[int] = set()
            blocked = _background_cells(instance, route.links, req.arrival_s)
            for rho in retained_levels(instance, req):
                n = slots_needed(rho * req.bandwidth_bps, route.modulation, instance.guard_band)
                if n > instance.num_slots or n in widths_seen:
                    continue  # too wide, or as wide as a larger fraction (dominated)
                widths_seen.add(n)
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
        "rate_gbps": retained * req.bandwidth_bps / GBPS,
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


def check(instance: Instance, solution: Solution) -> list[Violation]:
    """Recompute feasibility from the instance alone: every served connection must be a simple
    path along links, with a format that reaches, a contiguous block inside the spectrum that is
    wide enough for its rate, a retained fraction from its class's menu, start at arrival and
    preserve its data volume; no two concurrent connections (nor a background lightpath) may
    share a slot on a link, guard bands included; transponder counts hold at every instant."""
    out: list[Violation] = []
    conns = solution.get("connections") if isinstance(solution, dict) else None
    if not isinstance(conns, list):
        return [Violation("format", "solution has no 'connections' list")]
    n_req = len(instance.requests)
    good: list[tuple[int, tuple[int, ...], int, int, float, float]] = []
    seen: set[int] = set()
    mods = {m.name: m for m in instance.modulations}
    for j, c in enumerate(conns):
        if not isinstance(c, dict):
            out.append(Violation("format", f"connection {j} is not a table"))
            continue
        r = c.get("request")
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < n_req:
            out.append(Violation("format", f"connection {j}: 'request' must be below {n_req}, got {r!r}"))
            continue
        if r in seen:
            out.append(Violation("one_decision", f"request {r} is served twice"))
            continue
        seen.add(r)
        req = instance.requests[r]
        where = f"request {r}"
        path = c.get("path")
        lks = path_links(instance, path) if isinstance(path, list) else None
        if lks is None:
            out.append(Violation("continuity", f"{where}: path {path!r} is not a simple path along links"))
            continue
        if path[0] != req.source or path[-1] != req.target:
            out.append(Violation("continuity", f"{where}: path runs {path[0]} -> {path[-1]}, "
                                                f"expected {req.source} -> {req.target}"))
            continue
        length = sum(instance.links[e].length_m for e in lks)
        mod = mods.get(c.get("modulation")) if isinstance(c.get("modulation"), str) else None
        if mod is None:
            out.append(Violation("modulation", f"{where}: unknown modulation {c.get('modulation')!r}"))
            continue
        if mod.reach_m < length:
            out.append(Violation("reach", f"{where}: {mod.name} reaches {mod.reach_m / KM:g} km, "
                                          f"path is {length / KM:g} km"))
        rho, f, n = finite_number(c.get("retained")), c.get("first_slot"), c.get("slots")
        start, end, rate = (finite_number(c.get(key)) for key in ("start_s", "end_s", "rate_gbps"))
        integral = all(isinstance(v, int) and not isinstance(v, bool) for v in (f, n))
        if rho is None or start is None or end is None or rate is None or not integral:
            out.append(Violation("format", f"{where}: needs numeric retained, rate_gbps, start_s, end_s "
                                           "and integer first_slot, slots"))
            continue
        if not any(math.isclose(rho, lv, rel_tol=VOLUME_TOL) for lv in retained_levels(instance, req)):
            menu = list(retained_levels(instance, req))
            out.append(Violation("class_bound", f"{where}: retained fraction {rho:g} is not in the menu "
                                                f"{menu} of class {req.priority}"))
        if not math.isclose(rate * GBPS, rho * req.bandwidth_bps, rel_tol=VOLUME_TOL):
            out.append(Violation("rate", f"{where}: rate {rate:g} Gb/s != retained x bandwidth"))
        if f < 0 or n < 1 or f + n > instance.num_slots:
            out.append(Violation("contiguity",
                                 f"{where}: slots [{f}, {f + n}) outside 0..{instance.num_slots}"))
        elif (n - instance.guard_band) * mod.bps_per_slot < rate * GBPS * (1 - VOLUME_TOL):
            out.append(Violation("width", f"{where}: {n} slots ({instance.guard_band} guard) of {mod.name} "
                                          f"carry less than {rate:g} Gb/s"))
        if start != req.arrival_s:
            out.append(Violation("immediate_access",
                                 f"{where}: starts at {start:g}, arrived at {req.arrival_s:g}"))
        volume = req.bandwidth_bps * req.holding_s
        if not math.isclose(rate * GBPS * (end - start), volume, rel_tol=VOLUME_TOL):
            out.append(Violation("data_volume", f"{where}: rate x time = {rate * (end - start):g} Gb, "
                                                f"expected {req.bandwidth_bps * req.holding_s / GBPS:g} Gb"))
        good.append((r, lks, f, n, start, end))
    out.extend(_overlaps(instance, good))
    out.extend(_transponder_use(instance, good))
    return out


def _overlaps(instance: Instance, good: list) -> list[Violation]:
    out = []
    holders: list[tuple[str, tuple[int, ...], int, int, float, float]] = [
        (f"request {r}", lks, f, n, s, e) for r, lks, f, n, s, e in good
    ]
    holders += [
        (f"background {i}", path_links(instance, bg.path), bg.first_slot, bg.slots, -math.inf, bg.end_s)
        for i, bg in enumerate(instance.background)
    ]
    for i, (name1, l1, f1, n1, s1, e1) in enumerate(holders):
        for name2, l2, f2, n2, s2, e2 in holders[i + 1:]:
            if name1.startswith("background") and name2.startswith("background"):
                continue
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
    instants = sorted({s for *_, s, _ in good}) if instance.model != "static" else [0.0]
    for q in instants:
        for v in instance.nodes:
            used = background_transponders(instance, v, q) + sum(
                1 for r, _, _, _, s, e in good
                if v in request_ends(instance, r) and (instance.model == "static" or s <= q < e))
            if used > instance.transponders_per_node:
                out.append(Violation("transponders", f"node {v} uses {used} transponders at t = {q:g}, "
                                                     f"has {instance.transponders_per_node}"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """sum over served requests of w_p (1 - eps (1 - rho)); malformed records count nothing."""
    total = 0.0
    served: set[int] = set()
    conns = solution.get("connections") if isinstance(solution, dict) else None
    for c in conns if isinstance(conns, list) else []:
        r = c.get("request") if isinstance(c, dict) else None
        rho = finite_number(c.get("retained")) if isinstance(c, dict) else None
        if isinstance(r, int) and not isinstance(r, bool) and 0 <= r < len(instance.requests) \
                and r not in served and rho is not None:
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
CLASS_TABLE = (("gold", 100.0, 0.25), ("silver", 10.0, 0.5), ("bronze", 1.0, 0.75))


def generate(seed: int, size: int) -> Instance:
    """The 6-node exact family: 8 x size requests with b in {25, 50, 75, 100} Gb/s, classes
    equiprobable, on 16 slots with 1 guard slot, K = 3, Lambda = {1, .75, .5, .25}; odd seeds
    give the time-expanded model (Poisson arrivals at rate 8 x size / 1.5 per unit time, Exp(1)
    holding times, so most requests overlap and the network congests), even seeds the static
    one."""
    rng = random.Random(seed)
    nodes = tuple(str(i) for i in range(1, 7))
    links = tuple(Link(str(a), str(b), km * KM) for a, b, km in SIX_NODE_LINKS)
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
        nodes, links, False, 16, 12.5 * GHZ, 1, 3,
        tuple(Modulation(n, c * GBPS, km * KM) for n, c, km in MODULATION_TABLE),
        tuple(PriorityClass(*c) for c in CLASS_TABLE),
        (1.0, 0.75, 0.5, 0.25), True, "time_expanded" if time_expanded else "static", 0,
        tuple(requests),
    )


