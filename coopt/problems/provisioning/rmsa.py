"""Online heuristics for degraded provisioning, replayed on a batch of requests.

Each heuristic takes the requests in arrival order (ties: file order, or priority first where
the name says so), releases connections whose prolonged holding time has ended (time-expanded
model only), and decides each request once, for its whole life: fixed-for-life decisions are
what Models A and B can represent, so the exact optimum bounds every heuristic here. The
per-request decision rules (:func:`ksp_first_fit_choice`, :func:`degraded_choice`) and the
spectrum state are shared with the discrete-event simulator in :mod:`coopt.problems.provisioning.simulation`.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass

from coopt.problem import Solution
from coopt.problems.provisioning import model as P


class SpectrumState:
    """Per-link slot occupancy as Python-int bitmasks (bit s set: slot s in use)."""

    def __init__(self, num_links: int, num_slots: int):
        self.num_slots = num_slots
        self.full = (1 << num_slots) - 1
        self.masks = [0] * num_links

    def free_mask(self, links: tuple[int, ...]) -> int:
        """Slots free on every link of a path (spectrum continuity)."""
        used = 0
        for e in links:
            used |= self.masks[e]
        return ~used & self.full

    def first_fit(self, links: tuple[int, ...], slots: int) -> int | None:
        """Lowest first slot f with [f, f + slots) free on every link (f = |S| - slots included)."""
        return lowest_block(self.free_mask(links), slots)

    def allocate(self, links: tuple[int, ...], first_slot: int, slots: int) -> None:
        block = ((1 << slots) - 1) << first_slot
        for e in links:
            if self.masks[e] & block:
                raise ValueError(f"slots [{first_slot}, {first_slot + slots}) already used on link {e}")
            self.masks[e] |= block

    def release(self, links: tuple[int, ...], first_slot: int, slots: int) -> None:
        block = ((1 << slots) - 1) << first_slot
        for e in links:
            if self.masks[e] & block != block:
                raise ValueError(f"releasing slots [{first_slot}, {first_slot + slots}) not held on link {e}")
            self.masks[e] &= ~block


def lowest_block(free: int, slots: int) -> int | None:
    """Lowest f such that bits f .. f + slots - 1 of ``free`` are all set, or None."""
    starts = free
    for i in range(1, slots):
        starts &= free >> i
        if not starts:
            return None
    if not starts:
        return None
    return (starts & -starts).bit_length() - 1


@dataclass(frozen=True)
class Choice:
    route: P.Route
    retained: float
    first_slot: int
    slots: int


def ksp_first_fit_choice(
    instance: P.Instance, state: SpectrumState, request: P.Request, routes: tuple[P.Route, ...]
) -> Choice | None:
    """Baseline B0: the first of the K shortest ``routes`` with a first-fit block at full rate."""
    for route in routes:
        if route.modulation is None:
            continue
        n = P.slots_needed(request.bandwidth_bps, route.modulation, instance.guard_band)
        if n <= instance.num_slots:
            f = state.first_fit(route.links, n)
            if f is not None:
                return Choice(route, 1.0, f, n)
    return None


def degraded_choice(
    instance: P.Instance, state: SpectrumState, request: P.Request, routes: tuple[P.Route, ...]
) -> Choice | None:
    """Two-stage QoS-assured degraded provisioning for one request.

    Stage 1, degraded routing: each of the K shortest paths offers the largest retained fraction
    of the class menu for which a first-fit block exists (a path that cannot carry
    (1 - delta_p) b is dropped). Stage 2, degraded resource allocation: the path offering the
    largest rate wins (ties: K order), at that fraction, on its first-fit block. With every
    delta_p = 0 this is exactly :func:`ksp_first_fit_choice`.
    """
    best: Choice | None = None
    for route in routes:
        if route.modulation is None:
            continue
        for rho in P.retained_levels(instance, request):
            if best is not None and rho <= best.retained:
                break
            n = P.slots_needed(rho * request.bandwidth_bps, route.modulation, instance.guard_band)
            f = state.first_fit(route.links, n) if n <= instance.num_slots else None
            if f is not None:
                best = Choice(route, rho, f, n)
                break
        if best is not None and best.retained == 1.0:
            break
    return best


ChoiceRule = Callable[[P.Instance, SpectrumState, P.Request, tuple[P.Route, ...]], "Choice | None"]


def replay(instance: P.Instance, order: list[int], rule: ChoiceRule) -> Solution:
    """Decide requests in ``order`` (nondecreasing arrival) with ``rule``; departures free their
    slots and transponders first (time-expanded model). O(R (K |path| |S| |Lambda| + log R))."""
    state = SpectrumState(len(instance.links), instance.num_slots)
    busy = dict.fromkeys(instance.nodes, 0)
    departures: list[tuple[float, int, tuple[int, ...], int, int, tuple[str, str]]] = []
    for i, bg in enumerate(instance.background):
        links = P.path_links(instance, bg.path)
        state.allocate(links, bg.first_slot, bg.slots)
        ends = (bg.path[0], bg.path[-1])
        for v in ends:
            busy[v] += 1
        if instance.model != "static" and bg.end_s != float("inf"):
            heapq.heappush(departures, (bg.end_s, -1 - i, links, bg.first_slot, bg.slots, ends))
    connections = []
    for r in order:
        request = instance.requests[r]
        while departures and departures[0][0] <= request.arrival_s:
            _, _, links, f, n, ends = heapq.heappop(departures)
            state.release(links, f, n)
            for v in ends:
                busy[v] -= 1
        ends = (request.source, request.target)
        if instance.transponders_per_node and any(busy[v] >= instance.transponders_per_node for v in ends):
            continue
        choice = rule(instance, state, request, P.routes(instance, request.source, request.target))
        if choice is None:
            continue
        state.allocate(choice.route.links, choice.first_slot, choice.slots)
        for v in ends:
            busy[v] += 1
        conn = P.connection(instance, r, choice.route, choice.retained, choice.first_slot)
        connections.append(conn)
        if instance.model != "static":
            entry = (conn["end_s"], r, choice.route.links, choice.first_slot, choice.slots, ends)
            heapq.heappush(departures, entry)
    return P.solution_from(instance, connections)


def arrival_order(instance: P.Instance) -> list[int]:
    return sorted(range(len(instance.requests)), key=lambda r: (instance.requests[r].arrival_s, r))


def ksp_first_fit(instance: P.Instance, seed: int = 0) -> Solution:
    """Baseline B0: K-shortest-path first-fit RMSA without degradation, in arrival order.

    Guarantee: feasible (continuity, contiguity, guard bands, reach); no optimality bound.
    Complexity O(R K |path| |S|) bit operations. Source: the standard KSP-FF RMSA (e.g.
    optical-rl-gym's RMSA baseline), with the last start slot |S| - n included. ``seed`` is
    unused (deterministic)."""
    return replay(instance, arrival_order(instance), ksp_first_fit_choice)


def degraded_first_fit(instance: P.Instance, seed: int = 0) -> Solution:
    """Two-stage QoS-assured degraded provisioning (degraded routing, then degraded resource
    allocation; :func:`degraded_choice`), in arrival order, fixed for life.

    Guarantee: feasible, every class bound met, data volume preserved, immediate access; equals
    :func:`ksp_first_fit` when degradation is off. Complexity O(R K |Lambda| |path| |S|).
    Source: Zhong et al., GLOBECOM 2016 (two-stage structure; rules reconstructed)."""
    return replay(instance, arrival_order(instance), degraded_choice)


def priority_degraded_first_fit(instance: P.Instance, seed: int = 0) -> Solution:
    """:func:`degraded_first_fit` that, among requests arriving at the same instant, decides the
    higher classes first (in a static batch: all gold, then silver, ...).

    Guarantee and complexity as :func:`degraded_first_fit`, plus an O(R log R) sort.
    Source: priority-ordered admission, research notes section e.2."""
    order = sorted(range(len(instance.requests)),
                   key=lambda r: (instance.requests[r].arrival_s, instance.requests[r].priority, r))
    return replay(instance, order, degraded_choice)


def narrowest_choice(
    instance: P.Instance, state: SpectrumState, request: P.Request, routes: tuple[P.Route, ...]
) -> Choice | None:
    """The first of the K paths with a first-fit block for the narrowest channel of the class
    menu (the deepest degradation): the rule that packs the most requests into the spectrum."""
    for route in routes:
        if route.modulation is None:
            continue
        for rho in reversed(P.retained_levels(instance, request)):
            n = P.slots_needed(rho * request.bandwidth_bps, route.modulation, instance.guard_band)
            f = state.first_fit(route.links, n) if n <= instance.num_slots else None
            if f is not None:
                return Choice(route, rho, f, n)
    return None


#: Random within-class orders tried by :func:`multistart_first_fit` beyond its fixed ones.
RESTARTS = 2
#: Rounds of "blocked requests first" re-ordering from each of its starting orders.
SQUEAKY_ROUNDS = 3


def multistart_first_fit(instance: P.Instance, seed: int = 0) -> Solution:
    """:func:`priority_degraded_first_fit` over several orders and two rules, the best kept, its
    fractions then raised by :func:`upgrade`. Orders keep arrival time first and the classes
    highest first; within a class: file order, the fewest slot-links first (narrowest channel on
    the shortest path), the fewest at the full rate, and :data:`RESTARTS` shuffles from ``seed``;
    from each, :data:`SQUEAKY_ROUNDS` rounds move the requests the last round blocked to the front
    of their class (squeaky wheel, Joslin and Clements, JAIR 10, 1999). Rules:
    :func:`degraded_choice` and :func:`narrowest_choice` (pack at the deepest degradation, let
    :func:`upgrade` raise the fractions). The plan serving the most weight wins (ties: value).

    Guarantee: feasible, fixed for life (so the exact optimum bounds it), never below
    :func:`priority_degraded_first_fit` (its order and rule are the first tried).
    Complexity O((3 + RESTARTS)(1 + SQUEAKY_ROUNDS) x 2 x R K |Lambda| |path| |S|) plus
    :func:`upgrade`; an (order, rule) already replayed is not replayed again (on the bench's
    files 40 replays are 2-32 distinct ones). Source: ours."""
    rng = random.Random(seed)
    reqs = instance.requests

    def footprint(r: int, deepest: bool) -> int:
        req, best = reqs[r], instance.num_slots * len(instance.links) + 1
        rho = P.retained_levels(instance, req)[-1 if deepest else 0]
        for route in P.routes(instance, req.source, req.target):
            if route.modulation is not None:
                best = min(best, len(route.links) * P.slots_needed(rho * req.bandwidth_bps, route.modulation,
                                                                   instance.guard_band))
        return best

    def ordered(key) -> list[int]:
        return sorted(range(len(reqs)), key=lambda r: (reqs[r].arrival_s, reqs[r].priority, key(r)))

    starts = [ordered(lambda r: r), ordered(lambda r: footprint(r, True)),
              ordered(lambda r: footprint(r, False))]
    for _ in range(RESTARTS):
        noise = [rng.random() for _ in reqs]
        starts.append(ordered(lambda r, noise=noise: noise[r]))
    best, best_key = None, None
    replayed: dict[tuple, Solution] = {}  # the replays are deterministic, and orders repeat
    for order in starts:
        for _ in range(1 + SQUEAKY_ROUNDS):
            for rule in (degraded_choice, narrowest_choice):
                key = (rule, tuple(order))
                if key not in replayed:
                    replayed[key] = replay(instance, order, rule)
                solution = replayed[key]
                served = sum(instance.classes[reqs[c["request"]].priority - 1].weight
                             for c in solution["connections"])
                if best_key is None or (served, solution["objective"]) > best_key:
                    best, best_key = solution, (served, solution["objective"])
            blocked = set(solution["blocked"])
            rank = {r: i for i, r in enumerate(order)}
            order = sorted(order, key=lambda r: (reqs[r].arrival_s, reqs[r].priority, r not in blocked,
                                                 rank[r]))
    return upgrade(instance, best)


HEURISTICS = {
    "ksp_first_fit": ksp_first_fit,
    "degraded_first_fit": degraded_first_fit,
    "priority_degraded_first_fit": priority_degraded_first_fit,
    "multistart_first_fit": multistart_first_fit,
}



def best_heuristic_solution(instance: P.Instance) -> Solution:
    """The best solution of the fixed-for-life heuristics (ties: the first in :data:`HEURISTICS`
    order): the exact route's starting incumbent."""
    return max((fn(instance) for fn in HEURISTICS.values()), key=lambda s: s["objective"])


def upgrade(instance: P.Instance, solution: Solution) -> Solution:
    """Raise retained fractions without changing who is served: each degraded connection, heaviest
    class first, takes the largest fraction of its menu whose channel fits among the others (on
    its own path at its own first slot, else first fit on any of its K paths); repeated until
    nothing moves. In the time-expanded model a larger fraction is also a shorter interval, so it
    never creates a conflict the check below misses.

    Guarantee: feasible in, feasible out, same served set and W, P never larger.
    Complexity per pass: O(R K |Lambda| |path|) bit operations in the static model (the others'
    slots are kept as link masks), O(R^2 |path|) in the time-expanded one (the concurrent others
    are found by a scan); a pass raises at least one fraction, so passes <= R |Lambda|.
    Source: ours (the exact route's stage-2 incumbent)."""
    conns = {c["request"]: dict(c) for c in solution["connections"]}
    links_of = {r: P.path_links(instance, c["path"]) for r, c in conns.items()}
    static = instance.model == "static"
    masks = [0] * len(instance.links)
    background = [(P.path_links(instance, bg.path), ((1 << bg.slots) - 1) << bg.first_slot, bg.end_s)
                  for bg in instance.background]

    def block(c: dict) -> int:
        return ((1 << c["slots"]) - 1) << c["first_slot"]

    if static:
        for r, c in conns.items():
            for e in links_of[r]:
                masks[e] |= block(c)
        for links, bits, _ in background:
            for e in links:
                masks[e] |= bits
    moved = True
    while moved:
        moved = False
        order = sorted((r for r, c in conns.items() if c["retained"] < 1.0),
                       key=lambda r: (-instance.classes[instance.requests[r].priority - 1].weight,
                                      conns[r]["retained"], r))
        for r in order:
            req, conn = instance.requests[r], conns[r]
            if static:
                for e in links_of[r]:
                    masks[e] &= ~block(conn)
            for rho in P.retained_levels(instance, req):
                if rho <= conn["retained"]:
                    break
                busy = masks if static else _busy_at(instance, conns, links_of, background, r,
                                                     P.end_time(req, rho))
                placed = _place(instance, req, rho, busy, conn)
                if placed is not None:
                    conn = conns[r] = P.connection(instance, r, placed[0], rho, placed[1])
                    links_of[r] = placed[0].links
                    moved = True
                    break
            if static:
                for e in links_of[r]:
                    masks[e] |= block(conn)
    return P.solution_from(instance, list(conns.values()))


def _busy_at(instance: P.Instance, conns: dict, links_of: dict, background: list, r: int, end: float
             ) -> list[int]:
    """Link masks of the slots the others hold while request r would be in service, [a_r, end)."""
    start = instance.requests[r].arrival_s
    busy = [0] * len(instance.links)
    for other, c in conns.items():
        if other != r and c["start_s"] < end and start < c["end_s"]:
            bits = ((1 << c["slots"]) - 1) << c["first_slot"]
            for e in links_of[other]:
                busy[e] |= bits
    for links, bits, until in background:
        if start < until:
            for e in links:
                busy[e] |= bits
    return busy


def _place(instance: P.Instance, req: P.Request, rho: float, busy: list[int], conn: dict
           ) -> tuple[P.Route, int] | None:
    """(route, first slot) for ``req`` at ``rho`` on the free cells: its own path and first slot if
    they fit, else first fit on its K paths in order; None if nothing fits."""
    full = (1 << instance.num_slots) - 1
    own = P.route_of(instance, req, conn["path"])
    candidates = [own] + [rt for rt in P.routes(instance, req.source, req.target) if rt is not own]
    for i, route in enumerate(candidates):
        if route is None or route.modulation is None:
            continue
        n = P.slots_needed(rho * req.bandwidth_bps, route.modulation, instance.guard_band)
        if n > instance.num_slots:
            continue
        used = 0
        for e in route.links:
            used |= busy[e]
        if i == 0 and conn["first_slot"] + n <= instance.num_slots:
            block = ((1 << n) - 1) << conn["first_slot"]
            if not used & block:
                return route, conn["first_slot"]
        f = lowest_block(~used & full, n)
        if f is not None:
            return route, f
    return None
