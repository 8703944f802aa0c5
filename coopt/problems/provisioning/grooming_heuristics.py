"""Multi-layer heuristics for Model C: grooming on an auxiliary graph, without and with degradation.

Both take the requests in file order and decide each once. For each request they look at every
virtual route of at most H hops (direct, then through each other node) on the auxiliary graph
whose edges are the existing lightpath of a node pair (weight 1) or, where the pair has none and
both ends have a free transponder, a new lightpath set up first-fit on the pair's K shortest
paths (weight 10 + its width). Same state, same tie-breaks: with degradation off the degraded
variant makes exactly the baseline's decisions.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from coopt.problem import Solution
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning.rmsa import SpectrumState, lowest_block
from coopt.solvers.highs import max_weight_lp

WEIGHT_EXISTING = 1.0
WEIGHT_NEW = 10.0


@dataclass
class _Lightpath:
    ends: tuple[str, str]
    route: G.P.Route
    width: int
    first_slot: int
    residual_bps: float


@dataclass(frozen=True)
class _Hop:
    """One virtual hop of a plan: an existing lightpath (index) or a new one (route, width, slot)."""

    ends: tuple[str, str]
    offer_bps: float
    weight: float
    existing: int | None = None
    route: G.P.Route | None = None
    width: int = 0
    first_slot: int = 0


class GroomingState:
    """Lightpaths in service (with residual capacity and users), spectrum and transponders.
    Shared with the multi-layer simulator, which also releases connections."""

    def __init__(self, instance: G.Instance, widest_first: bool = False,
                 routes: dict[tuple[str, str], tuple[G.P.Route, ...]] | None = None):
        self.instance = instance
        self.widest_first = widest_first
        self.spectrum = SpectrumState(len(instance.links), instance.num_slots)
        self.lightpaths: list[_Lightpath | None] = []  # None: torn down
        self.by_pair: dict[tuple[str, str], int] = {}
        self.users: dict[int, int] = {}
        self.transponders = dict.fromkeys(instance.nodes, 0)
        self._order = {v: i for i, v in enumerate(instance.nodes)}
        self._routes = {} if routes is None else routes  # shared by the passes of one heuristic
        self._narrowest = sorted(instance.lightpath_widths)
        self._widest = sorted(instance.lightpath_widths, reverse=True)

    def pair(self, u: str, v: str) -> tuple[str, str]:
        """:func:`G.pair` with the node order looked up once."""
        return (u, v) if self._order[u] < self._order[v] else (v, u)

    def pair_routes(self, q: tuple[str, str]) -> tuple[G.P.Route, ...]:
        """:func:`G.pair_routes`, memoized per state (its cache key hashes the whole network)."""
        if q not in self._routes:
            self._routes[q] = G.pair_routes(self.instance, q)
        return self._routes[q]

    def new_lightpath(self, q: tuple[str, str], need_bps: float, largest: bool) -> _Hop | None:
        """First fit on the pair's K shortest paths: the narrowest width carrying ``need_bps``
        (the widest with ``widest_first``, leaving room to groom later requests); with
        ``largest``, the widest width that fits and carries at least ``need_bps``."""
        inst = self.instance
        best: _Hop | None = None
        widths = self._widest if largest or self.widest_first else self._narrowest
        for route in self.pair_routes(q):
            if route.modulation is None:
                continue
            free = None  # the path's free slots, read once for every width
            for w in widths:
                cap = G.capacity_bps(inst, route, w)
                if cap < need_bps * (1 - 1e-12):
                    continue
                if free is None:
                    free = self.spectrum.free_mask(route.links)
                f = lowest_block(free, w)
                if f is None:
                    continue
                hop = _Hop(q, cap, WEIGHT_NEW + w, route=route, width=w, first_slot=f)
                if not largest:
                    return hop
                if best is None or cap > best.offer_bps:
                    best = hop
                break
        return best

    def plan(self, request: G.P.Request, route_nodes: tuple[str, ...], existing_floor: float,
             new_floor: float) -> list[_Hop] | None:
        """Hops for one virtual route: an existing lightpath must have ``existing_floor`` left; a
        new one is the narrowest carrying the full rate, else (if ``new_floor`` is lower) the
        widest that fits and carries ``new_floor``. New lightpaths are placed tentatively (two
        new hops cannot take the same slots) and released before returning."""
        inst = self.instance
        hops: list[_Hop] = []
        taken: list[_Hop] = []
        used = dict.fromkeys(inst.nodes, 0)
        try:
            for a, b in zip(route_nodes, route_nodes[1:], strict=False):
                q = self.pair(a, b)
                if q in self.by_pair:
                    lp = self.by_pair[q]
                    residual = self.lightpaths[lp].residual_bps
                    if residual < existing_floor * (1 - 1e-12):
                        return None
                    hops.append(_Hop(q, residual, WEIGHT_EXISTING, existing=lp))
                    continue
                if any(self.transponders[v] + used[v] >= inst.transponders_per_node for v in q):
                    return None
                hop = self.new_lightpath(q, request.bandwidth_bps, largest=False)
                if hop is None and new_floor < request.bandwidth_bps:
                    hop = self.new_lightpath(q, new_floor, largest=True)
                if hop is None:
                    return None
                self.spectrum.allocate(hop.route.links, hop.first_slot, hop.width)
                taken.append(hop)
                for v in q:
                    used[v] += 1
                hops.append(hop)
            return hops
        finally:
            for hop in taken:
                self.spectrum.release(hop.route.links, hop.first_slot, hop.width)

    def decide(
        self, request: G.P.Request, optical: bool, electrical: bool
    ) -> tuple[list[_Hop], float] | None:
        """Stage 1 and 2 for one request: the least-weight full-rate virtual route (ties: direct
        first); failing that, with a degradation switch on, the route offering the highest rate
        of at least (1 - delta_p) b (ties: weight, order). Returns the hops and the rate."""
        inst = self.instance
        b = request.bandwidth_bps
        full = []
        for order, nodes in enumerate(G.virtual_routes(inst, request)):
            hops = self.plan(request, nodes, b, b)
            if hops is not None:
                full.append((sum(h.weight for h in hops), order, hops))
        if full:
            return min(full, key=lambda x: x[:2])[2], b
        if not (optical or electrical):
            return None
        floor = G.min_rate_bps(inst, request)
        partial = []
        for order, nodes in enumerate(G.virtual_routes(inst, request)):
            hops = self.plan(request, nodes, floor if electrical else b, floor if optical else b)
            if hops is not None:
                rate = min(min(h.offer_bps for h in hops), b)
                partial.append((-rate, sum(h.weight for h in hops), order, hops))
        if not partial:
            return None
        best = min(partial, key=lambda x: x[:3])
        return best[3], -best[0]

    def commit(self, hops: list[_Hop], rate_bps: float) -> list[int]:
        out = []
        for hop in hops:
            if hop.existing is None:
                self.spectrum.allocate(hop.route.links, hop.first_slot, hop.width)
                for v in hop.ends:
                    self.transponders[v] += 1
                self.by_pair[hop.ends] = len(self.lightpaths)
                self.users[len(self.lightpaths)] = 0
                self.lightpaths.append(_Lightpath(hop.ends, hop.route, hop.width, hop.first_slot,
                                                  G.capacity_bps(self.instance, hop.route, hop.width)))
            index = self.by_pair[hop.ends]
            self.lightpaths[index].residual_bps -= rate_bps
            self.users[index] += 1
            out.append(index)
        return out

    def release(self, hops: list[int], rate_bps: float) -> None:
        """A connection leaves: its rate returns to every hop; a lightpath nobody uses is torn
        down (slots and transponders freed)."""
        for index in hops:
            lp = self.lightpaths[index]
            lp.residual_bps += rate_bps
            self.users[index] -= 1
            if self.users[index] == 0:
                self.spectrum.release(lp.route.links, lp.first_slot, lp.width)
                for v in lp.ends:
                    self.transponders[v] -= 1
                del self.by_pair[lp.ends], self.users[index]
                self.lightpaths[index] = None

    def solution(self, connections: list[dict]) -> Solution:
        records = [G.lightpath_record(self.instance, lp.ends, lp.route, lp.width, lp.first_slot)
                   for lp in self.lightpaths]
        return G.solution_from(self.instance, records, connections)


def _provision(instance: G.Instance, degrade: bool, order: list[int] | None = None,
               widest_first: bool = False, floor_rates: bool = False,
               routes: dict[tuple[str, str], tuple[G.P.Route, ...]] | None = None) -> Solution:
    """Decide the requests in ``order`` (file order) one by one. ``floor_rates``: plan every
    request at its class floor (1 - delta_p) b, the rate that packs the most weight, and leave
    the rates to :func:`reoptimize_rates`."""
    state = GroomingState(instance, widest_first=widest_first, routes=routes)
    connections = []
    for r in range(len(instance.requests)) if order is None else order:
        request = instance.requests[r]
        if floor_rates:  # the floor itself, never less: the class window must hold
            request = dataclasses.replace(request, bandwidth_bps=G.min_rate_bps(instance, request))
        flexible = degrade and not floor_rates
        decision = state.decide(request, optical=flexible, electrical=flexible)
        if decision is not None:
            hops, rate = decision
            connections.append(G.connection_record(instance, r, state.commit(hops, rate), rate))
    return state.solution(connections)


def grooming_first_fit(instance: G.Instance, seed: int = 0) -> Solution:
    """Baseline B1: multi-layer grooming on an auxiliary graph, no degradation. Among virtual
    routes of at most H hops that carry the full rate, the one of least weight (existing
    lightpath 1, new lightpath 10 + width; ties: direct first) wins; new lightpaths take the
    narrowest width of the menu that carries the request, first fit.

    Guarantee: feasible; no optimality bound. Complexity O(R |V| H K |W| |path| |S|).
    Source: research notes d.2 (auxiliary-graph grooming); ``seed`` unused."""
    return _provision(instance, degrade=False)


def degraded_grooming(instance: G.Instance, seed: int = 0) -> Solution:
    """Two-stage QoS-assured degraded provisioning in two layers: as :func:`grooming_first_fit`
    when the full rate fits; otherwise degraded routing keeps every virtual route whose hops
    all offer at least (1 - delta_p) b (an existing lightpath's residual: electrical-layer
    degradation; the widest new lightpath that fits: optical-layer degradation), and degraded
    resource allocation serves the route offering the highest rate, continuously, held for
    t b / rate.

    Guarantee: feasible, class windows and data volume kept; equals :func:`grooming_first_fit`
    without degradation. Complexity as the baseline, twice. Source: Zhong et al., GLOBECOM 2016
    (two-stage structure; rules reconstructed, research notes d.3)."""
    return _provision(instance, degrade=instance.degradation)


#: Random orders tried by :func:`priority_degraded_grooming` beyond its fixed ones.
RESTARTS = 1
#: Rounds of "blocked requests first" re-ordering from each of its starting orders.
SQUEAKY_ROUNDS = 3
#: (widest new lightpaths, plan at the floor rates) of each pass.
VARIANTS = ((False, False), (True, True))


def priority_degraded_grooming(instance: G.Instance, seed: int = 0) -> Solution:
    """:func:`degraded_grooming` run over several request orders, the best kept, its rates then
    re-optimized (:func:`reoptimize_rates`). Every order decides the classes highest first. The
    starting orders within a class: bandwidth descending, bandwidth ascending, file order, and
    :data:`RESTARTS` shuffles drawn from ``seed``; from each, :data:`SQUEAKY_ROUNDS` rounds of
    squeaky-wheel re-ordering move the requests the last round blocked to the front of their
    class (Joslin and Clements, JAIR 10, 1999). Each order is tried twice (:data:`VARIANTS`):
    with the narrowest new lightpaths that carry the full rate, and with the widest new
    lightpaths while every request is planned at its class floor rate (the most weight packed;
    the LP then raises the rates). The plan that serves the most weight wins (ties: the higher
    value). A third variant (widest lightpaths at full rates) found no better plan on generated
    sizes 1-3, seeds 0-2, and cost a third more time.

    Guarantee: feasible, class windows and data volume kept. Complexity
    O((3 + RESTARTS)(1 + SQUEAKY_ROUNDS) x 2 x R |V| H K |W| |path| |S|) plus one LP with R
    columns. Source: ours; the per-request rule is :func:`degraded_grooming`'s."""
    starts = _starts(instance, random.Random(seed), RESTARTS)
    return reoptimize_rates(instance, _order_search(instance, starts, SQUEAKY_ROUNDS, VARIANTS))


def _starts(instance: G.Instance, rng: random.Random, restarts: int) -> list[list[int]]:
    """The order searches' starting orders, each by class: widest requests first, narrowest first,
    by index, then ``restarts`` seeded shuffles drawn from ``rng``."""
    reqs = instance.requests
    starts = [_by_class(instance, lambda r: -reqs[r].bandwidth_bps),
              _by_class(instance, lambda r: reqs[r].bandwidth_bps), _by_class(instance, lambda r: r)]
    for _ in range(restarts):
        noise = [rng.random() for _ in reqs]
        starts.append(_by_class(instance, lambda r, noise=noise: noise[r]))
    return starts


def _served_key(instance: G.Instance, solution: Solution) -> tuple[int, float]:
    """(served weight, value): the order in which the order searches rank plans."""
    weight = sum(G.served_weight(instance, c["request"]) for c in solution["connections"])
    return weight, solution["objective"]


def _by_class(instance: G.Instance, key) -> list[int]:
    reqs = instance.requests
    return sorted(range(len(reqs)), key=lambda r: (reqs[r].priority, key(r)))


def _order_search(instance: G.Instance, starts: list[list[int]], rounds: int,
                  variants: tuple[tuple[bool, bool], ...]) -> Solution:
    """From each starting order, ``rounds`` squeaky-wheel re-orderings (the requests the last
    variant blocked move to the front of their class), each order decided once per variant
    (widest new lightpaths, plan at the floor rates); the plan of the highest
    :func:`_served_key` (rates not re-optimized)."""
    reqs = instance.requests
    best, best_key = None, None
    routes: dict[tuple[str, str], tuple[G.P.Route, ...]] = {}
    for order in starts:
        for _ in range(1 + rounds):
            for widest, floor in variants:
                solution = _provision(instance, instance.degradation, order, widest, floor, routes)
                key = _served_key(instance, solution)
                if best_key is None or key > best_key:
                    best, best_key = solution, key
            blocked = set(solution["blocked"])
            rank = {r: i for i, r in enumerate(order)}
            order = sorted(order, key=lambda r: (reqs[r].priority, r not in blocked, rank[r]))
    return best


#: Random orders tried by :func:`deep_degraded_grooming` beyond its fixed ones.
DEEP_RESTARTS = 8
#: Squeaky-wheel rounds of :func:`deep_degraded_grooming` from each starting order.
DEEP_ROUNDS = 12
#: The variants of :func:`deep_degraded_grooming`: :data:`VARIANTS` and the narrowest new
#: lightpaths at the floor rates.
DEEP_VARIANTS = (*VARIANTS, (False, True))


def deep_degraded_grooming(instance: G.Instance, seed: int = 0) -> Solution:
    """:func:`priority_degraded_grooming` searched longer: its plan, and beside it the same
    search with a third variant (the narrowest new lightpaths that carry the class floor rate:
    more, narrower lightpaths, more transponders and spectrum left for the pairs that follow),
    :data:`DEEP_ROUNDS` squeaky-wheel rounds from each starting order and :data:`DEEP_RESTARTS`
    seeded shuffles; the plan of the most served weight (ties: the higher value) wins, its rates
    re-optimized. On the paper-scale files the longer search is what counts: NSFNET
    2745.9 -> 2936.8, USNET 3905.8 -> 4197.8 (docs/notes/provisioning.md).

    Guarantee: feasible, class windows and data volume kept; never below
    :func:`priority_degraded_grooming` with the same seed (its plan is a candidate).
    Deterministic for a seed. Complexity O((3 + DEEP_RESTARTS)(1 + DEEP_ROUNDS) x 3 x
    R |V| H K |W| |path| |S|) plus that of :func:`priority_degraded_grooming` and two LPs with R
    columns. Source: ours (multi-start squeaky wheel, Joslin and Clements, JAIR 10, 1999)."""
    base = priority_degraded_grooming(instance, seed)
    starts = _starts(instance, random.Random(seed + 1), DEEP_RESTARTS)
    deep = reoptimize_rates(instance, _order_search(instance, starts, DEEP_ROUNDS, DEEP_VARIANTS))
    return max((base, deep), key=lambda s: _served_key(instance, s))


HEURISTICS = {
    "grooming_first_fit": grooming_first_fit,
    "degraded_grooming": degraded_grooming,
    "priority_degraded_grooming": priority_degraded_grooming,
    "deep_degraded_grooming": deep_degraded_grooming,
}


def best_heuristic_solution(instance: G.Instance) -> Solution:
    """The best of the heuristics, its rates re-optimized: the exact route's starting incumbent."""
    return max((reoptimize_rates(instance, fn(instance)) for fn in HEURISTICS.values()),
               key=lambda s: s["objective"])


def reoptimize_rates(instance: G.Instance, solution: Solution) -> Solution:
    """Keep the lightpaths and every request's virtual route, choose the served rates anew: the LP

        max sum_r w_r rho_r  s.t.  sum_{r on l} b_r rho_r <= cap_l  (every lightpath l),
                                   1 - delta_r <= rho_r <= 1,

    then drop the lightpaths nobody uses. The rates the solution had are feasible for the LP, so
    nothing gets worse. Guarantee: feasible in, feasible out; same served set and W; P and L never
    larger. Complexity: one LP with R columns and |lightpaths| rows (HiGHS).
    Source: ours (re-optimizing the degraded requests' rates after routing)."""
    conns = solution["connections"]
    if not conns:
        return G.solution_from(instance, [], [])
    lightpaths = solution["lightpaths"]
    requests = [instance.requests[c["request"]] for c in conns]
    low = np.array([G.min_fraction(instance, q) for q in requests])
    weight = np.array([float(G.served_weight(instance, c["request"])) for c in conns])
    rows: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for j, (c, q) in enumerate(zip(conns, requests, strict=True)):
        for h in c["hops"]:
            rows[h].append((j, q.bandwidth_bps / G.GBPS))
    order = sorted(rows)
    capacity = np.array([lightpaths[h]["capacity_gbit_per_s"] for h in order])
    fractions = _max_weighted_fractions(weight, low, [rows[h] for h in order], capacity)
    if fractions is None:  # keep the rates the solution had
        fractions = [c["rate_gbit_per_s"] * G.GBPS / q.bandwidth_bps
                     for c, q in zip(conns, requests, strict=True)]
    used = sorted({h for c in conns for h in c["hops"]})
    renumber = {h: i for i, h in enumerate(used)}
    out = []
    for c, q, rho in zip(conns, requests, fractions, strict=True):
        rate = min(max(rho, G.min_fraction(instance, q)), 1.0) * q.bandwidth_bps
        out.append(G.connection_record(instance, c["request"], [renumber[h] for h in c["hops"]], rate))
    return G.solution_from(instance, [lightpaths[h] for h in used], out)


def _max_weighted_fractions(weight: np.ndarray, low: np.ndarray, rows: list[list[tuple[int, float]]],
                            capacity: np.ndarray) -> np.ndarray | None:
    """The LP of :func:`reoptimize_rates` (column j: weight, bounds [low_j, 1]; row i: the
    (column, Gbit/s) pairs of lightpath i, at most capacity_i), solved by HiGHS; None if HiGHS
    does not report it optimal."""
    columns = np.array([j for row in rows for j, _ in row], dtype=np.int32)
    owners = np.array([i for i, row in enumerate(rows) for _ in row], dtype=np.int32)
    values = np.array([value for row in rows for _, value in row], dtype=np.float64)
    solved = max_weight_lp(weight, low, columns, owners, values, capacity)
    return None if solved is None else solved[0]
