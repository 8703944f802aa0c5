"""The channel MILP of Models A and B (the statement is in :mod:`coopt.formulations.provisioning.model`).

:func:`channel_model` builds the variables and rows (A1)-(A3) with two expressions, the served
weight W and the weighted degradation P; :func:`build` adds the one-number objective W - eps P
(the ``milp`` method, LP relaxation and export), and the exact route
(:mod:`coopt.solvers.provisioning.exact`) solves the same rows lexicographically: max W, then
min P at that W.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

import pyomo.environ as pyo

from coopt.formulations.provisioning.model import (
    Candidate,
    Instance,
    active_at,
    background_transponders,
    candidates,
    connection,
    end_time,
    epsilon,
    instants,
    request_ends,
    routes,
    solution_from,
)
from coopt.problem import Solution


def channel_model(instance: Instance, narrowest: bool = False, maximal_rows: bool = True,
                  symmetry: bool = False) -> pyo.ConcreteModel:
    """x, the rows (A1)-(A3), and the expressions ``served_weight`` (W) and ``degradation`` (P).

    ``narrowest`` keeps, per request and path, only the narrowest channel width. In the static
    model that loses nothing for max W: a channel of width n at first slot f covers the cells of
    the narrower one at f, and W does not depend on rho, so any solution stays feasible, with the
    same W, when every channel is narrowed in place. (Not in Model B: a narrower channel is held
    longer, t / rho.)

    ``maximal_rows``: Model B's (A2) rows only at the maximal instants of :func:`overlap_rows`.
    ``symmetry``: in the static model, of two identical requests (same node pair, bandwidth and
    class: the same candidates, cells and values) the one listed first is served whenever the
    other is: swapping their decisions maps any solution to one that obeys this, with the same
    W and P. Off by default: on generated size 6 it took seed 0 from 411 nodes to 1456 and gave
    seed 2 one unit of bound in 60 s (benchmarks/provisioning_scale.py)."""
    cands = candidates(instance, narrowest)
    model = pyo.ConcreteModel(name=f"provisioning_{instance.model}")
    model.candidates = cands
    model.x = pyo.Var(range(len(cands)), within=pyo.Binary)
    weight = [instance.classes[instance.requests[c.request].priority - 1].weight for c in cands]
    model.served_weight = pyo.Expression(expr=sum(w * model.x[i] for i, w in enumerate(weight)))
    model.degradation = pyo.Expression(
        expr=sum(w * (1.0 - c.retained) * model.x[i]
                 for i, (w, c) in enumerate(zip(weight, cands, strict=True)) if c.retained < 1.0))
    by_request: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(cands):
        by_request[c.request].append(i)
    model.one_decision = pyo.ConstraintList()
    for r in sorted(by_request):
        if len(by_request[r]) > 1:
            model.one_decision.add(sum(model.x[i] for i in by_request[r]) <= 1)
    model.no_overlap = pyo.ConstraintList()
    rows_seen: set[frozenset[int]] = set()
    for members in overlap_rows(instance, cands, maximal_rows):
        row = frozenset(members)
        if len({cands[i].request for i in members}) > 1 and row not in rows_seen:
            rows_seen.add(row)
            model.no_overlap.add(sum(model.x[i] for i in members) <= 1)
    model.symmetry = pyo.ConstraintList()
    if symmetry and instance.model == "static":
        for first, second in identical_pairs(instance):
            if by_request[first] and by_request[second]:
                model.symmetry.add(sum(model.x[i] for i in by_request[first])
                                   >= sum(model.x[i] for i in by_request[second]))
    model.transponders = pyo.ConstraintList()
    if instance.transponders_per_node:
        for q in instants(instance):
            active = [i for i, c in enumerate(cands) if active_at(instance, c, q)]
            for v in instance.nodes:
                members = [i for i in active if v in request_ends(instance, cands[i].request)]
                free = instance.transponders_per_node - background_transponders(instance, v, q)
                if len({cands[i].request for i in members}) > free:
                    model.transponders.add(sum(model.x[i] for i in members) <= max(free, 0))
    return model


def identical_pairs(instance: Instance) -> list[tuple[int, int]]:
    """(r, r') for consecutive requests of each group of identical ones (static model)."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for r, q in enumerate(instance.requests):
        ends = (q.source, q.target) if instance.directed else frozenset((q.source, q.target))
        groups[(ends, q.bandwidth_bps, q.priority)].append(r)
    return [(a, b) for members in groups.values() for a, b in zip(members, members[1:], strict=False)]


def overlap_rows(instance: Instance, cands: list[Candidate], maximal: bool = True) -> list[list[int]]:
    """The (A2) rows: candidates holding a cell (link, slot) at an instant q, one list per row.

    Static: one row per cell. Time-expanded: at instant q_i the row of a cell is the set A_i of
    its candidates active at q_i. A_i is contained in A_{i+1} when nothing in it ends by q_{i+1},
    so following i, i+1, ... every A_i lies in some A_k from which a candidate ends by q_{k+1}
    (the last instant always qualifies): those rows imply all others. Of them, A_k is also
    contained in A_{k-1} when nothing starts at q_k, and A_{k-1} is itself written when something
    ends by q_k; that row is dropped too. What is left are the maximal cliques of the interval
    graph in time (1-D Helly, as in the module docstring of :mod:`.model`)."""
    by_cell: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, c in enumerate(cands):
        for e in routes(instance, *request_ends(instance, c.request))[c.route].links:
            for s in range(c.first_slot, c.first_slot + c.slots):
                by_cell[(e, s)].append(i)
    if instance.model == "static":
        return [by_cell[cell] for cell in sorted(by_cell)]
    times = instants(instance)
    start = {}  # candidate -> (first instant index it is active at, one past the last)
    for i, c in enumerate(cands):
        req = instance.requests[c.request]
        end = end_time(req, c.retained)
        start[i] = (bisect.bisect_left(times, req.arrival_s), bisect.bisect_left(times, end))
    rows = []
    for cell in sorted(by_cell):
        members = by_cell[cell]
        opens = {start[i][0] for i in members}
        closes = {start[i][1] - 1 for i in members}
        for k in sorted(closes) if maximal else range(len(times)):
            if not maximal or k in opens or k - 1 not in closes:
                rows.append([i for i in members if start[i][0] <= k < start[i][1]])
    return rows


def build(instance: Instance) -> pyo.ConcreteModel:
    """The channel MILP (A1)-(A3) with the one-number objective W - eps P in problem units (not
    divided further: that would push the degradation coefficients eps w (1 - rho) toward HiGHS'
    dual feasibility tolerance)."""
    model = channel_model(instance)
    model.value = pyo.Objective(expr=model.served_weight - epsilon(instance) * model.degradation,
                                sense=pyo.maximize)
    model.objective_unit = 1.0
    return model


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    chosen = []
    for i, c in enumerate(model.candidates):
        if (pyo.value(model.x[i], exception=False) or 0.0) > 0.5:
            route = routes(instance, *request_ends(instance, c.request))[c.route]
            chosen.append(connection(instance, c.request, route, c.retained, c.first_slot))
    return solution_from(instance, chosen)
