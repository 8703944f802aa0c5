"""The channel MILP of Models A and B (the statement is in :mod:`coopt.formulations.provisioning.model`)."""

from __future__ import annotations

from collections import defaultdict

import pyomo.environ as pyo

from coopt.formulations.provisioning.model import (
    Instance,
    active_at,
    background_transponders,
    candidates,
    connection,
    instants,
    request_ends,
    request_value,
    routes,
    solution_from,
)
from coopt.problem import Solution


def build(instance: Instance) -> pyo.ConcreteModel:
    """The channel MILP (A1)-(A3) of the module docstring."""
    cands = candidates(instance)
    model = pyo.ConcreteModel(name=f"provisioning_{instance.model}")
    model.candidates = cands
    model.x = pyo.Var(range(len(cands)), within=pyo.Binary)
    total_weight = sum(instance.classes[r.priority - 1].weight for r in instance.requests) or 1.0
    model.objective_unit = total_weight
    values = [request_value(instance, instance.requests[c.request], c.retained) / total_weight for c in cands]
    model.value = pyo.Objective(
        expr=sum(v * model.x[i] for i, v in enumerate(values)) if cands else pyo.quicksum([]),
        sense=pyo.maximize,
    )
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


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    chosen = []
    for i, c in enumerate(model.candidates):
        if (pyo.value(model.x[i], exception=False) or 0.0) > 0.5:
            route = routes(instance, *request_ends(instance, c.request))[c.route]
            chosen.append(connection(instance, c.request, route, c.retained, c.first_slot))
    return solution_from(instance, chosen)


