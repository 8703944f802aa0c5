"""The channel MILP of Models A and B (the statement is in :mod:`coopt.formulations.provisioning.model`).

:func:`channel_model` builds the variables and rows (A1)-(A3) with two expressions, the served
weight W and the weighted degradation P; :func:`build` adds the one-number objective W - eps P
(the ``milp`` method, LP relaxation and export), and the exact route
(:mod:`coopt.solvers.provisioning.exact`) solves the same rows lexicographically: max W, then
min P at that W.
"""

from __future__ import annotations

from collections import defaultdict

import pyomo.environ as pyo

from coopt.formulations.provisioning.model import (
    Instance,
    active_at,
    background_transponders,
    candidates,
    connection,
    epsilon,
    instants,
    request_ends,
    routes,
    solution_from,
)
from coopt.problem import Solution


def channel_model(instance: Instance) -> pyo.ConcreteModel:
    """x, the rows (A1)-(A3), and the expressions ``served_weight`` (W) and ``degradation`` (P)."""
    cands = candidates(instance)
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
    model.transponders = pyo.ConstraintList()
    rows_seen: set[frozenset[int]] = set()
    for q in instants(instance):
        active = [i for i, c in enumerate(cands) if active_at(instance, c, q)]
        cells: dict[tuple[int, int], list[int]] = defaultdict(list)
        for i in active:
            c = cands[i]
            route = routes(instance, *request_ends(instance, c.request))[c.route]
            for e in route.links:
                for s in range(c.first_slot, c.first_slot + c.slots):
                    cells[(e, s)].append(i)
        for cell in sorted(cells):
            members = cells[cell]
            row = frozenset(members)
            if len({cands[i].request for i in members}) < 2 or row in rows_seen:
                continue
            rows_seen.add(row)
            model.no_overlap.add(sum(model.x[i] for i in members) <= 1)
        if instance.transponders_per_node:
            for v in instance.nodes:
                members = [i for i in active if v in request_ends(instance, cands[i].request)]
                free = instance.transponders_per_node - background_transponders(instance, v, q)
                if len({cands[i].request for i in members}) > free:
                    model.transponders.add(sum(model.x[i] for i in members) <= max(free, 0))
    return model


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
