"""A fix-and-optimize search on the plan relaxation of Model C: the plan of ``plan_layout_grooming``.

The plan relaxation (:mod:`coopt.problems.provisioning.grooming_bound`) chooses one lightpath kind
(path, width) per node pair and one virtual route per served request. :func:`improve_plan` starts
from the plan point of a feasible solution (:func:`plan_point`) and repeats one move: pick an
unserved request r (the unserved taken in turn, highest weight first) and a node set N, keep the
incumbent's lightpath of every pair that has no end in N and is no competitor of r (fixed), let
every other pair take any kind or none, let every request take any virtual route, and solve that
sub-MILP with HiGHS, warm-started at the incumbent (a point of it, so it never ends below it); a
plan serving more weight becomes the incumbent. N is the source and target of r and size - 2 other
nodes drawn from a seeded generator; the competitors of r (with :data:`COMPETITORS`) are the pairs
whose incumbent lightpath shares a link with a candidate path of r's own pair, the lightpaths whose
slots r's direct lightpath would need. The size adapts: it starts at :data:`FIRST_SIZE`, grows by
one after a sub-MILP proved optimal within :data:`GROW_BELOW` of its limit, and shrinks by one (to
at least 2) after one stopped by its limit; a set already tried at the incumbent is skipped.

Stops when the plan serves every request (nothing left to gain), when a sub-MILP that frees
every pair (the whole plan relaxation) is proved optimal, after :data:`MAX_ROUNDS` moves, or when
less than :data:`LAST_SECONDS` is left before the deadline (a wall-clock instant the caller gives;
without one, :data:`GUARD_SECONDS` + :data:`SUB_SECONDS` after the start). Each sub-MILP has
:data:`SUB_SECONDS` of wall time, less where the deadline comes first.

Guarantee: every incumbent is a point of the plan relaxation (within HiGHS' feasibility tolerance:
a sub-MILP is the relaxation with some kinds removed and others fixed) and its served weight never
decreases; the layout that follows (:mod:`.grooming_layout`) checks every lightpath and connection
itself, so the final solution's feasibility does not rest on the plan. The moves and their order
are fixed by the seed, but a sub-MILP stopped by its limit, and the guard, depend on the machine's
load (a sub-MILP stopped by its limit is mostly still at its root node on USNET, so a node limit
would not make it deterministic). Cost: at most :data:`MAX_ROUNDS` MILPs of the plan relaxation
restricted to the incumbent's lightpaths and the kinds of the freed pairs (about (|N| |V| + C) K
|W| free binaries, C competitors). Source: fix-and-optimize (Helber and Sahling, Int. J. Production
Economics 123, 2010) and large neighbourhood search (Shaw, CP 1998; adaptive neighbourhood size as
in Ropke and Pisinger, Transportation Science 40, 2006); the neighbourhoods built around the
unserved requests are ours.
"""

from __future__ import annotations

import random
import time

import pyomo.environ as pyo

from coopt.problem import Solution, SolveOptions
from coopt.problems.provisioning import grooming_bound as GB
from coopt.problems.provisioning import grooming_model as G
from coopt.solvers.highs import solve_model

#: Size of the first node set N (module docstring).
FIRST_SIZE = 4
#: A sub-MILP proved optimal within this fraction of :data:`SUB_SECONDS` grows the next N by a node.
GROW_BELOW = 0.2
#: Most sub-MILPs one search solves.
MAX_ROUNDS = 80
#: Wall seconds of one sub-MILP.
SUB_SECONDS = 5.0
#: Wall seconds after which no new sub-MILP starts (without a deadline).
GUARD_SECONDS = 36.0
#: Free also the pairs whose lightpath shares a link with a candidate path of the request's pair.
COMPETITORS = True
#: Fewest wall seconds a sub-MILP gets: none starts with less left before the deadline.
LAST_SECONDS = 0.5


def _neighbourhood(instance: G.Instance, request: G.P.Request, size: int,
                  rng: random.Random) -> frozenset[str]:
    """N = {s_r, d_r} and size - 2 other nodes drawn by ``rng``."""
    nodes = {request.source, request.target}
    others = [v for v in instance.nodes if v not in nodes]
    return frozenset(nodes | set(rng.sample(others, min(len(others), max(0, size - 2)))))


def _competitors(instance: G.Instance, request: G.P.Request, chosen: list[GB.Kind]) -> set[tuple[str, str]]:
    """The pairs whose lightpath in ``chosen`` shares a link with a candidate path of the
    request's own pair (a path some format reaches)."""
    q = G.pair(instance, request.source, request.target)
    links = {e for route in G.pair_routes(instance, q) if route.modulation is not None for e in route.links}
    return {kind.ends for kind in chosen if links.intersection(kind.links)}


def improve_plan(instance: G.Instance, kinds: list[GB.Kind], routes: dict[int, tuple[str, ...]],
                 seed: int = 0, deadline: float | None = None,
                 history: list | None = None) -> tuple[list[GB.Kind], dict[int, tuple[str, ...]]]:
    """Run the search from the plan (``kinds``: the chosen lightpath kind of each open pair;
    ``routes``: the virtual route of each planned request), which must be a point of the plan
    relaxation (as :func:`plan_point` gives one); the best plan found, in the same form.

    Each sub-MILP is built over the kinds it may choose only (:func:`.grooming_bound.plan_model`
    with ``kinds``): the incumbent's kinds at the fixed pairs, fixed at 1, and every kind of the
    freed pairs (an end in N, or a competitor); a virtual route through a pair with neither is left
    out (its lam is 0 in every point of the sub-MILP), so the model stays small. ``deadline``: the
    :func:`time.perf_counter` instant by which the last sub-MILP ends (module docstring);
    ``history``, where given, receives every new incumbent, in order (the last is the answer)."""
    weight = [G.served_weight(instance, r) for r in range(len(instance.requests))]
    total = sum(weight)
    every = GB.lightpath_kinds(instance)
    chosen, planned = list(kinds), dict(routes)

    def served(routes: dict[int, tuple[str, ...]]) -> int:
        return sum(weight[r] for r in routes)

    value = served(planned)
    rng = random.Random(seed)
    size = FIRST_SIZE
    tried: set[frozenset[str]] = set()
    turn = 0
    end = time.perf_counter() + GUARD_SECONDS + SUB_SECONDS if deadline is None else deadline
    for _ in range(MAX_ROUNDS):
        left = end - time.perf_counter()
        if value >= total or left < LAST_SECONDS:
            break
        unserved = sorted((r for r in range(len(instance.requests)) if r not in planned),
                          key=lambda r: (-weight[r], r))
        target = instance.requests[unserved[turn % len(unserved)]]
        nodes = _neighbourhood(instance, target, size, rng)
        turn += 1
        if nodes in tried:
            continue
        tried.add(nodes)
        loose = _competitors(instance, target, chosen) if COMPETITORS else set()
        kept = [kind for kind in chosen if not nodes.intersection(kind.ends) and kind.ends not in loose]
        free = [kind for kind in every if nodes.intersection(kind.ends) or kind.ends in loose]
        model = GB.plan_model(instance, kept + free)
        open_now = set(chosen)
        for i, kind in enumerate(model.kinds):
            model.x[i].set_value(int(kind in open_now))
            if i < len(kept):
                model.x[i].fix(1)
        for r, j in model.lam:
            model.lam[(r, j)].set_value(int(planned.get(r) == model.routes_of[r][j]))
        model.warm_start = True
        result = solve_model(model, SolveOptions(time_limit=min(SUB_SECONDS, left), seed=seed))
        if result.termination != "optimal":
            size = max(2, size - 1)
        elif result.solve < GROW_BELOW * SUB_SECONDS:
            size = min(len(instance.nodes), size + 1)
        if result.objective is None:
            continue
        new_kinds, new_routes = plan_of(model)
        if served(new_routes) > value:
            chosen, planned, value = new_kinds, new_routes, served(new_routes)
            if history is not None:
                history.append((chosen, planned))
            tried.clear()
        if len(free) == len(every) and result.termination == "optimal":
            break  # every pair has an end in N: that sub-MILP was the whole plan relaxation
    return chosen, planned


def _kind_key(instance: G.Instance, record: dict) -> tuple[tuple[str, str], int, int] | None:
    """(pair, candidate path index, width) of a lightpath record, None if its path is no candidate."""
    q = G.pair(instance, record["path"][0], record["path"][-1])
    for k, route in enumerate(G.pair_routes(instance, q)):
        if route.nodes in (tuple(record["path"]), tuple(record["path"][::-1])):
            return q, k, record["slots"]
    return None


def plan_point(instance: G.Instance, model: pyo.ConcreteModel, solution: Solution) -> None:
    """Set the plan relaxation's variables to the point of a feasible ``solution`` (the map of
    :mod:`.grooming_bound`'s validity proof) and mark the model for a warm start."""
    kind_of = {(kind.ends, kind.route, kind.width): i for i, kind in enumerate(model.kinds)}
    for i in model.x:
        model.x[i].set_value(0)
    for j in model.lam:
        model.lam[j].set_value(0)
    records = solution["lightpaths"]
    for record in records:
        i = kind_of.get(_kind_key(instance, record))
        if i is not None:
            model.x[i].set_value(1)
    for c in solution["connections"]:
        r = c["request"]
        at, route = instance.requests[r].source, [instance.requests[r].source]
        for h in c["hops"]:
            a, b = records[h]["path"][0], records[h]["path"][-1]
            at = b if at == a else a
            route.append(at)
        j = model.routes_of[r].index(tuple(route)) if tuple(route) in model.routes_of[r] else None
        if j is not None and (r, j) in model.lam:
            model.lam[(r, j)].set_value(1)
    model.warm_start = True


def plan_of(model: pyo.ConcreteModel) -> tuple[list[GB.Kind], dict[int, tuple[str, ...]]]:
    """The chosen lightpath kinds and, per planned request, its virtual route, of the point the
    plan model holds."""
    kinds = [kind for i, kind in enumerate(model.kinds)
             if (pyo.value(model.x[i], exception=False) or 0) > 0.5]
    routes = {r: model.routes_of[r][j] for r, j in model.lam
              if (pyo.value(model.lam[(r, j)], exception=False) or 0) > 0.5}
    return kinds, routes


def searched_plan(instance: G.Instance, start: Solution, seed: int = 0, deadline: float | None = None,
                  history: list | None = None) -> tuple[list[GB.Kind], dict[int, tuple[str, ...]]]:
    """The plan :func:`improve_plan` reaches from the plan point of the feasible ``start``."""
    model = GB.plan_model(instance)
    plan_point(instance, model, start)
    return improve_plan(instance, *plan_of(model), seed=seed, deadline=deadline, history=history)
