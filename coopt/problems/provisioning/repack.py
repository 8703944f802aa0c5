"""Rip-up and re-insert: a local search that lets a blocked request in by moving lighter ones.

For a plan of the static model (Model A) the search takes the blocked requests heaviest class
first and, for each, every (path, first slot) of its narrowest channel: the connections whose
cells that channel would hit form its *conflict set*; a set holding a background lightpath is
never opened, nor one whose lighter members weigh as much as the blocked request. The cheapest
sets (least weight of members of the blocked one's class or heavier, which must find a new home
for the move to gain, then least weight of the lighter ones, then fewest connections, then path
and slot order; up to :data:`TRIES` per request) are tried for real: their connections leave,
the blocked request takes the channel, and the evicted ones come back, heaviest first, by first
fit of their narrowest channel on any of their K paths. The move is kept when it raises the
served weight W (the evicted that found no room stay blocked, and are blocked requests of the
next pass), else undone. Passes repeat until one gains
nothing or :data:`PASSES` have run; :func:`.rmsa.upgrade` then raises the fractions.

Guarantee: feasible in, feasible out (every channel is placed on cells free at that moment; the
transponder rows are checked the same way), W strictly rises with every kept move, so the plan
out serves at least the weight of the plan in. Deterministic (no random draw, no clock). Only the
static model is repacked; a Model B plan is returned as it came (the intervals make a conflict
set depend on time, which this search does not model). Cost per pass: O(B K |S| |path| n) for
the conflict sets of B blocked requests (n the channel width), plus TRIES evictions and re-insertions
of O(C K |path| |S|) each. Source: the rip-up and re-route scheme of VLSI routing (Nair, "A simple
yet effective technique for global wiring", IEEE TCAD, 1987), here on spectrum blocks; the moves are ours.
"""

from __future__ import annotations

from coopt.problem import Solution
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning import rmsa

#: Cheapest conflict sets tried per blocked request and pass.
TRIES = 4
#: Passes over the blocked requests at most.
PASSES = 4

_BACKGROUND = -2
_FREE = -1


class _Plan:
    """Who holds each cell (request index, _FREE or _BACKGROUND), the link masks for first fit and
    the transponders in use per node, kept in step by :meth:`put` and :meth:`take`."""

    def __init__(self, instance: P.Instance, solution: Solution):
        self.instance = instance
        self.state = rmsa.SpectrumState(len(instance.links), instance.num_slots)
        self.holder = [[_FREE] * instance.num_slots for _ in instance.links]
        self.ports = dict.fromkeys(instance.nodes, 0)
        self.conns: dict[int, dict] = {}
        self.links: dict[int, tuple[int, ...]] = {}
        for bg in instance.background:
            links = P.path_links(instance, bg.path)
            self.state.allocate(links, bg.first_slot, bg.slots)
            for e in links:
                for s in range(bg.first_slot, bg.first_slot + bg.slots):
                    self.holder[e][s] = _BACKGROUND
            for v in (bg.path[0], bg.path[-1]):
                self.ports[v] += 1
        for conn in solution["connections"]:
            self.put(conn["request"], dict(conn), P.path_links(instance, conn["path"]))

    def put(self, r: int, conn: dict, links: tuple[int, ...]) -> None:
        self.state.allocate(links, conn["first_slot"], conn["slots"])
        for e in links:
            for s in range(conn["first_slot"], conn["first_slot"] + conn["slots"]):
                self.holder[e][s] = r
        for v in P.request_ends(self.instance, r):
            self.ports[v] += 1
        self.conns[r], self.links[r] = conn, links

    def take(self, r: int) -> dict:
        conn, links = self.conns.pop(r), self.links.pop(r)
        self.state.release(links, conn["first_slot"], conn["slots"])
        for e in links:
            for s in range(conn["first_slot"], conn["first_slot"] + conn["slots"]):
                self.holder[e][s] = _FREE
        for v in P.request_ends(self.instance, r):
            self.ports[v] -= 1
        return conn

    def port_free(self, r: int, leaving: frozenset[int] = frozenset()) -> bool:
        """Whether both ends of request r have a free transponder once ``leaving`` have left."""
        cap = self.instance.transponders_per_node
        if not cap:
            return True
        ends = P.request_ends(self.instance, r)
        for v in ends:
            freed = sum(1 for q in leaving for u in P.request_ends(self.instance, q) if u == v)
            if self.ports[v] - freed + ends.count(v) > cap:
                return False
        return True

    def first_fit(self, r: int) -> bool:
        """Place request r by :func:`.rmsa.narrowest_choice` if it fits (transponders included)."""
        if not self.port_free(r):
            return False
        req = self.instance.requests[r]
        choice = rmsa.narrowest_choice(self.instance, self.state, req, P.routes(self.instance, req.source,
                                                                                 req.target))
        if choice is None:
            return False
        self.put(r, P.connection(self.instance, r, choice.route, choice.retained, choice.first_slot),
                 choice.route.links)
        return True


def _weight(instance: P.Instance, r: int) -> int:
    return instance.classes[instance.requests[r].priority - 1].weight


Opening = tuple[int, int, int, int, int, frozenset[int], P.Route, float, int]


def _openings(plan: _Plan, b: int) -> list[Opening]:
    """Every (path, first slot) of request b's narrowest channel whose conflict set may be opened,
    as (weight of the members as heavy as b or heavier, weight of the lighter ones, size, path
    index, first slot, conflict set, route, fraction, width), cheapest first."""
    instance = plan.instance
    req = instance.requests[b]
    w_b = _weight(instance, b)
    out = []
    for k, route in enumerate(P.routes(instance, req.source, req.target)):
        if route.modulation is None:
            continue
        rho = P.retained_levels(instance, req)[-1]
        n = P.slots_needed(rho * req.bandwidth_bps, route.modulation, instance.guard_band)
        if n > instance.num_slots:
            continue
        rows = [plan.holder[e] for e in route.links]
        for f in range(instance.num_slots - n + 1):
            hit: set[int] = set()
            for row in rows:
                hit.update(row[f:f + n])
            hit.discard(_FREE)
            if _BACKGROUND in hit:
                continue
            heavy = sum(_weight(instance, q) for q in hit if _weight(instance, q) >= w_b)
            cost = sum(_weight(instance, q) for q in hit if _weight(instance, q) < w_b)
            if cost < w_b:
                out.append((heavy, cost, len(hit), k, f, frozenset(hit), route, rho, n))
    out.sort(key=lambda item: item[:5])
    return out


def _try(plan: _Plan, b: int, opening: tuple) -> tuple[int, list[int], dict[int, dict]]:
    """Open ``opening`` for request b: evict its conflict set, place b, re-insert the evicted.
    Returns (gain in W, the evicted left out, the evicted connections as they were) and leaves
    the move applied."""
    instance = plan.instance
    _, _, _, _, f, hit, route, rho, _ = opening
    before = {q: plan.take(q) for q in sorted(hit)}
    plan.put(b, P.connection(instance, b, route, rho, f), route.links)
    left = [q for q in sorted(hit, key=lambda q: (-_weight(instance, q), q)) if not plan.first_fit(q)]
    return _weight(instance, b) - sum(_weight(instance, q) for q in left), left, before


def _undo(plan: _Plan, b: int, hit: frozenset[int], before: dict[int, dict]) -> None:
    plan.take(b)
    for q in hit:
        if q in plan.conns:
            plan.take(q)
    for q in sorted(before):
        plan.put(q, before[q], P.path_links(plan.instance, before[q]["path"]))


def repack(instance: P.Instance, solution: Solution, *, passes: int = PASSES, tries: int = TRIES) -> Solution:
    """The plan after rip-up-and-re-insert moves (module docstring), its fractions raised by
    :func:`.rmsa.upgrade`; a Model B plan comes back unchanged."""
    if instance.model != "static":
        return solution
    plan = _Plan(instance, solution)
    for _ in range(passes):
        gained = False
        blocked = sorted((r for r in range(len(instance.requests)) if r not in plan.conns),
                         key=lambda r: (-_weight(instance, r), r))
        for b in blocked:
            if b in plan.conns:
                continue
            best: tuple[int, tuple] | None = None
            for opening in _openings(plan, b)[:tries]:
                if not plan.port_free(b, opening[5]):
                    continue
                gain, _, before = _try(plan, b, opening)
                _undo(plan, b, opening[5], before)
                if gain > 0 and (best is None or gain > best[0]):
                    best = (gain, opening)
            if best is not None:
                _try(plan, b, best[1])
                gained = True
        if not gained:
            break
    return rmsa.upgrade(instance, P.solution_from(instance, list(plan.conns.values())))
