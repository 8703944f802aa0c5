"""``plan_layout_grooming``: a searched plan of the plan relaxation, laid out by CP-SAT, then filled.

The plan relaxation (:mod:`coopt.problems.provisioning.grooming_bound`) chooses a lightpath kind
(path, width) per node pair and a virtual route per served request under transponder, per-link
slot-sum and per-pair capacity rows; it forgets only which slots each lightpath takes. This
heuristic takes the plan point of :func:`.grooming_heuristics.priority_degraded_grooming`'s
solution and improves it by the fix-and-optimize search of :mod:`.grooming_lns` (HiGHS on
sub-MILPs that free the lightpaths at a few nodes around an unserved request), then lays the
chosen lightpaths out exactly: one optional interval per lightpath (its width, first slot
in ``[0, |S| - w]``) on every link of its path, the intervals on a link pairwise disjoint (CP-SAT
``NoOverlap``), a planned request counted only where every lightpath of its virtual route is laid
out, maximizing the served weight (hint: the start's slots for the lightpaths it shares with the
plan, then first fit, widest footprint first). The laid-out lightpaths are set up, the requests
whose route they carry are served at their class floor, and every other request is then decided in
class order by the auxiliary-graph rule of :mod:`.grooming_heuristics` at its floor rate (existing
lightpaths' residual capacity, else a new lightpath by first fit). The rates are raised last by
:func:`.grooming_heuristics.reoptimize_rates`.

Why: the order-based heuristics build the lightpath graph one request at a time, and on the
paper-scale files the requests they block need a different set of lightpaths, not a different
order (docs/notes/provisioning.md); the plan chooses the set for all requests at once. A single
time-limited HiGHS solve of the whole plan relaxation finds poor incumbents (its root alone takes
seconds to tens of seconds), and stops on the wall clock; the sub-MILPs of the search are mostly
proved optimal in under a second.

Guarantee: feasible (every lightpath is placed on free slots, every connection checked against
the residual capacity of its hops), so the exact optimum bounds it; served rates within the class
windows; never below ``priority_degraded_grooming`` (its solution is a candidate). Deterministic
for a seed where every sub-MILP of the search is proved optimal within its limit and the search's
wall guard is not reached (:mod:`.grooming_lns`); CP-SAT runs one worker under a deterministic
limit (:data:`LAYOUT_DETERMINISTIC_SECONDS`) with a wall guard. Cost: at most
:data:`.grooming_lns.MAX_ROUNDS` sub-MILPs, one CP-SAT model of at most |V| T / 2 intervals, one
greedy pass of O(R |V| H K |W| |path| |S|), one LP. Source: ours (relax, then lay out exactly;
the same scheme as ``capacity_guided_cpsat`` of Models A/B); the interval and no-overlap
constraints are CP-SAT's (OR-Tools); the search's sources are in :mod:`.grooming_lns`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from ortools.sat.python import cp_model

from coopt.problem import Solution
from coopt.problems.provisioning import grooming_bound as GB
from coopt.problems.provisioning import grooming_heuristics as H
from coopt.problems.provisioning import grooming_lns as LNS
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning.grooming_lns import _kind_key
from coopt.problems.provisioning.layout import solve_one_worker
from coopt.problems.provisioning.rmsa import lowest_block

#: CP-SAT's deterministic time limit for the layout (its own work units, about seconds).
LAYOUT_DETERMINISTIC_SECONDS = 5.0
#: Wall-clock guard of the layout search, seconds.
GUARD_SECONDS = 20.0


def _hops(instance: G.Instance, route: tuple[str, ...]) -> list[tuple[str, str]]:
    return [G.pair(instance, a, b) for a, b in zip(route, route[1:], strict=False)]


def lay_out(instance: G.Instance, kinds: list[GB.Kind], routes: dict[int, tuple[str, ...]], seed: int = 0,
            preferred: dict[int, int] | None = None) -> dict[int, int]:
    """First slots of the kinds CP-SAT lays out (module docstring), as ``kind index -> slot``:
    the served weight of the planned requests whose hops are all laid out is maximized. The hint
    places the kinds of ``preferred`` (kind index -> slot) there first, every other kind by first
    fit, widest footprint first; it is the answer where the search finds nothing better."""
    index = {kind.ends: i for i, kind in enumerate(kinds)}
    needs = {r: [index[q] for q in _hops(instance, route)] for r, route in routes.items()
             if all(q in index for q in _hops(instance, route))}
    hint: dict[int, int] = {}
    taken = [0] * len(instance.links)  # bit masks of used slots per link
    preferred = preferred or {}
    for i in sorted(range(len(kinds)),
                    key=lambda i: (i not in preferred, -kinds[i].width * len(kinds[i].links))):
        free = ~_union(taken, kinds[i].links) & ((1 << instance.num_slots) - 1)
        f = preferred.get(i)
        if f is None or lowest_block(free >> f, kinds[i].width) != 0:
            f = lowest_block(free, kinds[i].width)
        if f is not None:
            hint[i] = f
            for e in kinds[i].links:
                taken[e] |= ((1 << kinds[i].width) - 1) << f
    if len(hint) == len(kinds):
        return hint
    model = cp_model.CpModel()
    present, start = [], []
    per_link: dict[int, list] = defaultdict(list)
    for i, kind in enumerate(kinds):
        p = model.NewBoolVar(f"p{i}")
        s = model.NewIntVar(0, instance.num_slots - kind.width, f"s{i}")
        interval = model.NewOptionalFixedSizeIntervalVar(s, kind.width, p, f"l{i}")
        for e in kind.links:
            per_link[e].append(interval)
        model.AddHint(p, i in hint)
        model.AddHint(s, hint.get(i, 0))
        present.append(p)
        start.append(s)
    for intervals in per_link.values():
        model.AddNoOverlap(intervals)
    served = {}
    for r, members in needs.items():
        served[r] = model.NewBoolVar(f"u{r}")
        for i in members:
            model.AddImplication(served[r], present[i])
        model.AddHint(served[r], all(i in hint for i in members))
    model.Maximize(sum(G.served_weight(instance, r) * u for r, u in served.items()))
    solver = solve_one_worker(model, seed, LAYOUT_DETERMINISTIC_SECONDS, GUARD_SECONDS)
    if solver is None:
        return hint
    return {i: int(solver.Value(start[i])) for i in range(len(kinds)) if solver.Value(present[i])}


def _union(masks: list[int], links: tuple[int, ...]) -> int:
    out = 0
    for e in links:
        out |= masks[e]
    return out


def plan_layout_grooming(instance: G.Instance, seed: int = 0) -> Solution:
    """The plan :func:`.grooming_lns.searched_plan` reaches from
    :func:`.grooming_heuristics.priority_degraded_grooming`'s solution, its lightpaths laid out
    by CP-SAT, its requests served on them at their floors, the rest decided greedily, rates
    re-optimized (module docstring); that start keeps its slots in the layout's hint for the
    lightpaths the plan shares with it, and is the answer where it serves more weight (ties: the
    higher value)."""
    start = H.priority_degraded_grooming(instance, seed)
    kinds, routes = LNS.searched_plan(instance, start, seed)
    return from_plan(instance, kinds, routes, start, seed)


def from_plan(instance: G.Instance, kinds: list[GB.Kind], routes: dict[int, tuple[str, ...]],
              start: Solution, seed: int = 0) -> Solution:
    """The steps of :func:`plan_layout_grooming` after the plan: layout, the planned requests at
    their floors, greedy fill, rates; ``start`` (a feasible plan) gives layout hints and is the
    answer where it serves more weight."""
    slot_of = {_kind_key(instance, record): record["first_slot"] for record in start["lightpaths"]}
    preferred = {i: slot_of[(kind.ends, kind.route, kind.width)] for i, kind in enumerate(kinds)
                 if (kind.ends, kind.route, kind.width) in slot_of}
    placed = lay_out(instance, kinds, routes, seed, preferred)
    state = H.GroomingState(instance)
    for i in sorted(placed):
        kind = kinds[i]
        route = state.pair_routes(kind.ends)[kind.route]
        hop = H._Hop(kind.ends, kind.capacity_bps, 0.0, route=route, width=kind.width, first_slot=placed[i])
        state.commit([hop], 0.0)
    connections = []
    done = set()
    for r in sorted(routes, key=lambda r: (instance.requests[r].priority, r)):
        hops = _hops(instance, routes[r])
        rate = G.min_rate_bps(instance, instance.requests[r])
        if not all(q in state.by_pair for q in hops):
            continue
        existing = [state.by_pair[q] for q in hops]
        if any(state.lightpaths[h].residual_bps < rate for h in existing):
            continue
        offers = [H._Hop(q, state.lightpaths[h].residual_bps, 0.0, existing=h)
                  for q, h in zip(hops, existing, strict=True)]
        connections.append(G.connection_record(instance, r, state.commit(offers, rate), rate))
        done.add(r)
    for r in sorted(range(len(instance.requests)), key=lambda r: (instance.requests[r].priority, r)):
        if r in done:
            continue
        request = instance.requests[r]
        floor = G.min_rate_bps(instance, request)
        decision = state.decide(dataclasses.replace(request, bandwidth_bps=floor), False, False)
        if decision is not None:
            hops, rate = decision
            connections.append(G.connection_record(instance, r, state.commit(hops, rate), rate))
    mine = H.reoptimize_rates(instance, state.solution(connections))
    return max((start, mine), key=lambda s: H._served_key(instance, s))
