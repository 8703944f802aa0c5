"""``plan_layout_grooming``: a searched plan of the plan relaxation, laid out by CP-SAT, then filled.

The plan relaxation (:mod:`coopt.problems.provisioning.grooming_bound`) chooses a lightpath kind
(path, width) per node pair and a virtual route per served request under transponder, per-link
slot-sum and per-pair capacity rows; it forgets only which slots each lightpath takes. This
heuristic takes the plan point of :func:`.grooming_heuristics.priority_degraded_grooming`'s
solution and improves it by the fix-and-optimize search of :mod:`.grooming_lns` (HiGHS on sub-MILPs
that free the lightpaths at a few nodes around an unserved request and those competing for its
links), then lays the chosen lightpaths out exactly: one optional interval per lightpath (its
width, first slot in ``[0, |S| - w]``) on every link of its path, the intervals on a link pairwise
disjoint (CP-SAT ``NoOverlap``), a planned request counted only where every lightpath of its
virtual route is laid out, maximizing the served weight (hint: the start's slots for the lightpaths
it shares with the plan, then first fit, widest footprint first). Where that drops a planned
request, a second CP-SAT model, hinted at the first layout (so never worse), may give each planned
pair another kind of the pair instead (another candidate path or width), under the pair's capacity
row at its planned requests' floor rates (kbit/s, the rates rounded up and the capacities down);
the layout serving more planned weight is kept. The laid-out lightpaths are set up, the requests
whose route they carry are served at their class floor, and every other request is then decided in
class order by the auxiliary-graph rule of :mod:`.grooming_heuristics` at its floor rate (existing
lightpaths' residual capacity, else a new lightpath by first fit). The rates are raised last by
:func:`.grooming_heuristics.reoptimize_rates`. This is done for the search's last incumbents, best
first, at most :data:`LAYOUTS` of them, while the next one plans more weight than the best solution
so far (a plan may lose weight in the layout that an earlier, smaller one keeps). The search ends
:data:`SEARCH_SECONDS` after the heuristic starts, the layouts by :data:`BUDGET_SECONDS` (within the
60 s an exact route gets on the large tier).

Why: the order-based heuristics build the lightpath graph one request at a time, and on the
paper-scale files the requests they block need a different set of lightpaths, not a different
order (docs/notes/provisioning.md); the plan chooses the set for all requests at once. A single
time-limited HiGHS solve of the whole plan relaxation finds poor incumbents (its root alone takes
seconds to tens of seconds), and stops on the wall clock; the sub-MILPs of the search are small
(on NSFNET mostly proved optimal in under a second; on USNET many stop at their limit, with a
better plan found at the root).

Guarantee: feasible (every lightpath is placed on free slots, every connection checked against
the residual capacity of its hops), so the exact optimum bounds it; served rates within the class
windows; never below ``priority_degraded_grooming`` (its solution is a candidate). Deterministic
for a seed where every sub-MILP of the search is proved optimal within its limit and the search's
wall guard is not reached (:mod:`.grooming_lns`); CP-SAT runs one worker under a deterministic
limit (:data:`LAYOUT_DETERMINISTIC_SECONDS`) with a wall guard. Cost: at most
:data:`.grooming_lns.MAX_ROUNDS` sub-MILPs; per plan laid out, at most two CP-SAT models of at most
|V| T / 2 pairs (one interval per pair, or K |W| per pair in the second), one greedy pass of
O(R |V| H K |W| |path| |S|), one LP. Source: ours (relax, then lay out exactly;
the same scheme as ``capacity_guided_cpsat`` of Models A/B); the interval and no-overlap
constraints are CP-SAT's (OR-Tools); the search's sources are in :mod:`.grooming_lns`.
"""

from __future__ import annotations

import dataclasses
import math
import time
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
#: Whether the layout may give a planned pair another kind than the plan's (:func:`lay_out`).
ALTERNATIVES = True
#: Wall-clock guard of the layout search, seconds.
GUARD_SECONDS = 20.0
#: Wall seconds from the heuristic's start by which the plan search's last sub-MILP ends.
SEARCH_SECONDS = 46.0
#: Most plans of the search laid out (:func:`best_laid_out`).
LAYOUTS = 4
#: Wall seconds from the heuristic's start by which the layout search ends.
BUDGET_SECONDS = 53.0


def _hops(instance: G.Instance, route: tuple[str, ...]) -> list[tuple[str, str]]:
    return [G.pair(instance, a, b) for a, b in zip(route, route[1:], strict=False)]


def lay_out(instance: G.Instance, kinds: list[GB.Kind], routes: dict[int, tuple[str, ...]], seed: int = 0,
            preferred: dict[int, int] | None = None, guard: float = GUARD_SECONDS) -> dict[GB.Kind, int]:
    """First slots of the lightpaths CP-SAT lays out (module docstring), as ``kind -> slot``: the
    served weight of the planned requests whose hops are all laid out is maximized. The hint
    places the kinds of ``preferred`` (kind index -> slot) there first, every other kind by first
    fit, widest footprint first; it is the answer where the search finds nothing better. With
    :data:`ALTERNATIVES`, a planned pair may instead take any other kind of the pair (another
    candidate path or width), under the pair's capacity row at the planned requests' floor rates."""
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
        return {kinds[i]: f for i, f in hint.items()}
    began = time.perf_counter()
    placed = _solve_layout(instance, kinds, needs, list(kinds), hint, seed, guard)
    if ALTERNATIVES and any(not all(kinds[i] in placed for i in members) for members in needs.values()):
        # another kind for a pair the layout dropped: hinted with that layout, so never worse
        options = kinds + [kind for kind in GB.lightpath_kinds(instance)
                           if kind.ends in index and kind not in kinds]
        order = {kind: o for o, kind in enumerate(options)}
        better = _solve_layout(instance, kinds, needs, options, {order[k]: f for k, f in placed.items()},
                               seed, max(1.0, guard - (time.perf_counter() - began)))
        if _laid_weight(instance, kinds, needs, better) > _laid_weight(instance, kinds, needs, placed):
            placed = better
    return placed


def _laid_weight(instance: G.Instance, kinds: list[GB.Kind], needs: dict[int, list[int]],
                 placed: dict[GB.Kind, int]) -> int:
    """Served weight of the planned requests every hop of which a laid-out kind of its pair carries,
    the floor rates of each pair's requests fitting its capacity."""
    of_pair = {kind.ends: kind for kind in placed}
    load: dict[tuple[str, str], float] = defaultdict(float)
    for r, members in needs.items():
        for i in members:
            load[kinds[i].ends] += G.min_rate_bps(instance, instance.requests[r])
    fits = {q for q, kind in of_pair.items() if load[q] <= kind.capacity_bps}
    return sum(G.served_weight(instance, r) for r, members in needs.items()
               if all(kinds[i].ends in fits for i in members))


def _solve_layout(instance: G.Instance, kinds: list[GB.Kind], needs: dict[int, list[int]],
                  options: list[GB.Kind], hint: dict[int, int], seed: int,
                  guard: float) -> dict[GB.Kind, int]:
    """The CP-SAT model of :func:`lay_out` over ``options`` (the plan's ``kinds`` first, at most
    one option per pair; where an option is not the plan's kind, each pair's capacity row at its
    planned requests' floor rates, in kbit/s rounded against the option), hinted at ``hint``
    (option index -> slot); the hint where CP-SAT finds nothing."""
    index = {kind.ends: i for i, kind in enumerate(kinds)}
    model = cp_model.CpModel()
    present, start = [], []
    per_link: dict[int, list] = defaultdict(list)
    of_pair: dict[int, list[int]] = defaultdict(list)  # plan kind index -> its pair's options
    for o, kind in enumerate(options):
        p = model.NewBoolVar(f"p{o}")
        s = model.NewIntVar(0, instance.num_slots - kind.width, f"s{o}")
        interval = model.NewOptionalFixedSizeIntervalVar(s, kind.width, p, f"l{o}")
        for e in kind.links:
            per_link[e].append(interval)
        model.AddHint(p, o in hint)
        model.AddHint(s, hint.get(o, 0))
        present.append(p)
        start.append(s)
        of_pair[index[kind.ends]].append(o)
    for intervals in per_link.values():
        model.AddNoOverlap(intervals)
    served = {}
    for r, members in needs.items():
        served[r] = model.NewBoolVar(f"u{r}")
        for i in members:
            model.AddBoolOr([present[o] for o in of_pair[i]]).OnlyEnforceIf(served[r])
        model.AddHint(served[r], all(any(o in hint for o in of_pair[i]) for i in members))
    load: dict[int, list[int]] = defaultdict(list)
    for r, members in needs.items():
        for i in members:
            load[i].append(r)
    for i, group in of_pair.items():
        if len(group) > 1:
            model.AddAtMostOne(present[o] for o in group)
            model.Add(sum(math.ceil(G.min_rate_bps(instance, instance.requests[r]) / 1e3) * served[r]
                          for r in load[i])
                      <= sum(math.floor(options[o].capacity_bps / 1e3) * present[o] for o in group))
    model.Maximize(sum(G.served_weight(instance, r) * u for r, u in served.items()))
    solver = solve_one_worker(model, seed, LAYOUT_DETERMINISTIC_SECONDS, guard)
    if solver is None:
        return {options[o]: f for o, f in hint.items()}
    return {options[o]: int(solver.Value(start[o])) for o in range(len(options)) if solver.Value(present[o])}


def _union(masks: list[int], links: tuple[int, ...]) -> int:
    out = 0
    for e in links:
        out |= masks[e]
    return out


def plan_layout_grooming(instance: G.Instance, seed: int = 0) -> Solution:
    """The plans :func:`.grooming_lns.searched_plan` reaches from
    :func:`.grooming_heuristics.priority_degraded_grooming`'s solution, the last of them laid out
    by CP-SAT, their requests served on them at their floors, the rest decided greedily, rates
    re-optimized, the best kept (:func:`best_laid_out`, module docstring); that start keeps its
    slots in the layout's hint for the lightpaths a plan shares with it, and is the answer where it
    serves more weight (ties: the higher value)."""
    started = time.perf_counter()
    start = H.priority_degraded_grooming(instance, seed)
    history: list = []
    kinds, routes = LNS.searched_plan(instance, start, seed, started + SEARCH_SECONDS, history)
    return best_laid_out(instance, history or [(kinds, routes)], start, seed, started + BUDGET_SECONDS)


def best_laid_out(instance: G.Instance, plans: list, start: Solution, seed: int = 0,
                  deadline: float | None = None) -> Solution:
    """:func:`from_plan` on the last plans of ``plans`` (the search's incumbents, best last), the
    best by served weight kept (ties: the higher value): at most :data:`LAYOUTS` of them, while
    the next plan serves more weight than the best solution so far and the deadline allows."""
    best = None
    for kinds, routes in plans[::-1][:LAYOUTS]:
        planned = sum(G.served_weight(instance, r) for r in routes)
        if best is not None and (H._served_key(instance, best)[0] >= planned
                                 or (deadline is not None and time.perf_counter() > deadline - 1.0)):
            break
        mine = from_plan(instance, kinds, routes, start, seed, deadline)
        if best is None or H._served_key(instance, mine) > H._served_key(instance, best):
            best = mine
    return best


def from_plan(instance: G.Instance, kinds: list[GB.Kind], routes: dict[int, tuple[str, ...]],
              start: Solution, seed: int = 0, deadline: float | None = None) -> Solution:
    """The steps of :func:`plan_layout_grooming` after the plan: layout, the planned requests at
    their floors, greedy fill, rates; ``start`` (a feasible plan) gives layout hints and is the
    answer where it serves more weight; ``deadline`` (a :func:`time.perf_counter` instant) caps
    the layout's wall-clock guard (at least a second)."""
    slot_of = {_kind_key(instance, record): record["first_slot"] for record in start["lightpaths"]}
    preferred = {i: slot_of[(kind.ends, kind.route, kind.width)] for i, kind in enumerate(kinds)
                 if (kind.ends, kind.route, kind.width) in slot_of}
    guard = GUARD_SECONDS if deadline is None else min(GUARD_SECONDS, deadline - time.perf_counter())
    placed = lay_out(instance, kinds, routes, seed, preferred, max(1.0, guard))
    state = H.GroomingState(instance)
    for kind, f in sorted(placed.items(), key=lambda item: (item[0].ends, item[0].route, item[0].width)):
        route = state.pair_routes(kind.ends)[kind.route]
        hop = H._Hop(kind.ends, kind.capacity_bps, 0.0, route=route, width=kind.width, first_slot=f)
        state.commit([hop], 0.0)
    connections = []
    done = set()
    for r in sorted(routes, key=lambda r: (instance.requests[r].priority, r)):
        hops = _hops(instance, routes[r])
        rate = G.min_rate_bps(instance, instance.requests[r])
        if not all(q in state.by_pair for q in hops):
            continue
        existing = [state.by_pair[q] for q in hops]
        if any(state.lightpaths[h].residual_bps < rate * (1 - 1e-9) for h in existing):
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
