"""``capacity_guided_first_fit``: the capacity relaxation's plan, laid out slot by slot.

The capacity relaxation of the bound (:func:`coopt.problems.provisioning.bound.capacity_bound`)
chooses at most one (path, retained fraction) per request so that every link (at every instant)
carries at most ``|S|`` slots and every node at most its free transponders, maximizing the served
weight; it forgets only spectrum contiguity and continuity. On the large files its plan serves
more weight than any first-fit order finds (USNET: 19.8 k of 22.0 k against 18.5 k), so this
heuristic solves it with :data:`MARGIN` of every link's slots held back (HiGHS, its root node
only, one thread) and then lays its choices out in the spectrum: requests replayed by arrival,
higher classes first, inside a class the relaxation's chosen requests before the others and the
widest footprints (slots x links) first, each on its chosen path and width by first fit, falling
back to :func:`.rmsa.narrowest_choice` on any of its K paths (and the unchosen ones to the same
rule). Squeaky-wheel rounds (Joslin and Clements, JAIR
10, 1999) move the blocked requests to the front of their class; a few seeded shuffles of the
ties restart it; the plan serving the most weight wins (ties: value), rip-up-and-re-insert moves
(:func:`.repack.repack`) let blocked requests in by moving lighter ones, and :func:`.rmsa.upgrade`
raises its fractions. :func:`.rmsa.multistart_first_fit` is a candidate too.

Guarantee: feasible and fixed for life (every connection is placed on free cells by the replay of
:mod:`.rmsa`, so the exact optimum bounds it), never below :func:`.rmsa.multistart_first_fit`.
Deterministic for a seed: the relaxation is stopped by a node limit (:data:`MIP_NODES`), not a
clock; a wall-clock guard (:data:`GUARD_SECONDS`) only stops a pathological solve early (then the
result depends on the machine). Cost: one 0-1 model of one column per (request, path, fraction)
and one row per (link, instant), plus ``(1 + RESTARTS)(1 + SQUEAKY_ROUNDS)`` replays of
``O(R K |Lambda| |path| |S|)``. Source: ours (relax-and-lay-out; the relaxation is the bound's).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import numpy as np

from coopt.problem import Solution
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning import repack, rmsa
from coopt.problems.provisioning.bound import Family, capacity_families, capacity_groups, families

#: Branch-and-bound nodes HiGHS may spend on the capacity relaxation (its deterministic budget).
MIP_NODES = 1
#: Wall-clock guard of that solve, seconds.
GUARD_SECONDS = 50.0
#: Slots per link the relaxation leaves free, as a fraction of ``|S|`` (rounded down): room for the
#: fragmentation that contiguity and continuity cost when the plan is laid out. Measured with the
#: rest as shipped: USNET 19249 / 19255 / 19377 / 19287 / 19179 served with 0 / 3 / 6 / 10 / 15 of
#: 100 slots left, NSFNET 14879 / 14893 / 14929 with 0 / 6 / 10.
MARGIN = 0.06
#: Seeded shuffles of the ties beyond the fixed order.
RESTARTS = 10
#: Squeaky-wheel rounds from each order.
SQUEAKY_ROUNDS = 10


def capacity_plan(instance: P.Instance, fams: list[Family], margin: float = MARGIN) -> dict[int, Family]:
    """The capacity relaxation's incumbent (node-limited; every link's capacity lowered by
    ``margin`` of ``|S|``, :data:`MARGIN` by default) as ``request -> chosen family``; where HiGHS
    has no incumbent, the LP relaxation's largest value per request at 1/2 or more."""
    import highspy
    from pyomo.common.tee import capture_output

    keep = capacity_families(instance, fams)
    if not keep:
        return {}
    with capture_output(capture_fd=True):  # the constructor prints a banner
        highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    highs.setOptionValue("mip_max_nodes", MIP_NODES)
    highs.setOptionValue("time_limit", GUARD_SECONDS)
    highs.setOptionValue("mip_rel_gap", 1e-4)
    rows: list[tuple[list[int], list[float], float]] = []
    by_request, cells, ports = capacity_groups(keep)
    for members in by_request.values():
        rows.append((members, [1.0] * len(members), 1.0))
    room = instance.num_slots - math.floor(margin * instance.num_slots)
    for members in cells.values():
        widths = [float(keep[i].width) for i in members]
        if sum(widths) > room:
            rows.append((members, widths, float(room)))
    if instance.transponders_per_node:
        times = P.instants(instance)
        for (v, q), members in ports.items():
            free = instance.transponders_per_node - P.background_transponders(instance, v, times[q])
            rows.append((members, [1.0] * len(members), float(max(0, free))))
    classes, requests = instance.classes, instance.requests
    weight = np.array([float(classes[requests[f.request].priority - 1].weight) for f in keep])
    n = len(keep)
    highs.addVars(n, np.zeros(n), np.ones(n))
    highs.changeColsCost(n, np.arange(n, dtype=np.int32), weight)
    highs.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
    for members, coefs, rhs in rows:
        index = np.array(members, dtype=np.int32)
        highs.addRow(-highspy.kHighsInf, rhs, len(members), index, np.array(coefs))
    highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    highs.run()
    values = np.asarray(highs.getSolution().col_value)
    highspy.Highs.resetGlobalScheduler(True)  # see coopt.problems.provisioning.grooming_heuristics
    if len(values) != n:
        return {}
    plan: dict[int, tuple[Family, float]] = {}
    for i, fam in enumerate(keep):
        if values[i] >= 0.5 and (fam.request not in plan or values[i] > plan[fam.request][1]):
            plan[fam.request] = (fam, float(values[i]))
    return {r: fam for r, (fam, _) in plan.items()}


def planned_choices(instance: P.Instance, request: P.Request, routes: tuple[P.Route, ...], fam: Family
                    ) -> Iterator[tuple[P.Route, float, int]]:
    """``(route, rho, slots)`` per route on ``fam``'s links with a format: the largest retained level
    ``rho`` whose channel takes exactly ``fam``'s width, in the routes' order (the replay's rules try
    a placement on each in turn)."""
    for route in routes:
        if route.links != fam.links or route.modulation is None:
            continue
        for rho in reversed(P.retained_levels(instance, request)):
            n = P.slots_needed(rho * request.bandwidth_bps, route.modulation, instance.guard_band)
            if n == fam.width:
                yield route, rho, n
                break


def planned_rule(instance: P.Instance, plan: dict[int, Family]) -> rmsa.ChoiceRule:
    """The replay's rule: a planned request on its planned path and width by first fit, else (and
    every unplanned request) :func:`.rmsa.narrowest_choice`."""
    index = {id(req): r for r, req in enumerate(instance.requests)}  # the replay hands the objects over

    def choose(instance: P.Instance, state: rmsa.SpectrumState, request: P.Request,
               routes: tuple[P.Route, ...]) -> rmsa.Choice | None:
        fam = plan.get(index[id(request)])
        if fam is not None:
            for route, rho, n in planned_choices(instance, request, routes, fam):
                f = state.first_fit(route.links, n)
                if f is not None:
                    return rmsa.Choice(route, rho, f, n)
        return rmsa.narrowest_choice(instance, state, request, routes)

    return choose


def capacity_guided_first_fit(instance: P.Instance, seed: int = 0, *, restarts: int = RESTARTS,
                              rounds: int = SQUEAKY_ROUNDS) -> Solution:
    """The capacity relaxation's plan laid out by first fit, with squeaky-wheel rounds and seeded
    restarts (module docstring). ``restarts`` and ``rounds`` default to :data:`RESTARTS` and
    :data:`SQUEAKY_ROUNDS`; fewer run the same steps fewer times (the tests use that to keep
    their cost down), never differently."""
    reqs = instance.requests
    plan = capacity_plan(instance, families(instance))
    rule = planned_rule(instance, plan)
    footprint = {r: len(fam.links) * fam.width for r, fam in plan.items()}
    rng = random.Random(seed)

    def weight(solution: Solution) -> int:
        return sum(instance.classes[reqs[c["request"]].priority - 1].weight for c in solution["connections"])

    best = rmsa.multistart_first_fit(instance, seed)
    best_key = (weight(best), best["objective"])
    for start in range(1 + restarts):
        noise = [rng.random() if start else 0.0 for _ in reqs]
        order = sorted(range(len(reqs)), key=lambda r: (reqs[r].arrival_s, reqs[r].priority, r not in plan,
                                                        -footprint.get(r, 0), noise[r], r))
        for _ in range(1 + rounds):
            solution = rmsa.upgrade(instance, rmsa.replay(instance, order, rule))
            key = (weight(solution), solution["objective"])
            if key > best_key:
                best, best_key = solution, key
            blocked = set(solution["blocked"])
            rank = {r: i for i, r in enumerate(order)}
            order = sorted(order, key=lambda r: (reqs[r].arrival_s, reqs[r].priority, r not in blocked,
                                                 rank[r]))
    return repack.repack(instance, best)
