"""The MILP of Model C (the statement is in :mod:`coopt.formulations.provisioning.grooming`)."""

from __future__ import annotations

from collections import defaultdict

import pyomo.environ as pyo

from coopt.formulations.provisioning.grooming import (
    GBPS,
    Instance,
    capacity_bps,
    connection_record,
    epsilons,
    lightpath_candidates,
    lightpath_record,
    min_rate_bps,
    pair,
    pair_routes,
    solution_from,
    virtual_routes,
)
from coopt.problem import Solution


def build(instance: Instance) -> pyo.ConcreteModel:
    """The grooming MILP (C1)-(C6) of the module docstring."""
    lps = lightpath_candidates(instance)
    reqs = instance.requests
    model = pyo.ConcreteModel(name="provisioning_grooming")
    model.lightpaths = lps
    model.routes_of = [virtual_routes(instance, r) for r in reqs]
    index = [(r, i) for r in range(len(reqs)) for i in range(len(model.routes_of[r]))]
    model.y = pyo.Var(range(len(lps)), within=pyo.Binary)
    model.z = pyo.Var(range(len(reqs)), within=pyo.Binary)
    model.lam = pyo.Var(index, within=pyo.Binary)
    model.h = pyo.Var(index, within=pyo.NonNegativeReals)
    model.g = pyo.Var(range(len(reqs)), within=pyo.NonNegativeReals)
    gbps = [r.bandwidth_bps / GBPS for r in reqs]
    weight = [instance.classes[r.priority - 1].weight for r in reqs]
    eps1, eps2 = epsilons(instance)
    total = sum(weight) or 1.0
    model.objective_unit = total
    model.value = pyo.Objective(
        expr=(sum(weight[r] * model.z[r] - eps1 * weight[r] * (model.z[r] - model.g[r] / gbps[r])
                  for r in range(len(reqs)))
              - eps2 * sum(model.y[i] for i in range(len(lps)))) / total,
        sense=pyo.maximize,
    )
    model.rows = pyo.ConstraintList()
    uses: dict[tuple[str, str], list] = defaultdict(list)
    for r in range(len(reqs)):
        mine = [(r, i) for i in range(len(model.routes_of[r]))]
        model.rows.add(sum(model.lam[j] for j in mine) == model.z[r])
        model.rows.add(sum(model.h[j] for j in mine) == model.g[r])
        for j in mine:
            model.rows.add(model.h[j] <= gbps[r] * model.lam[j])
            vr = model.routes_of[r][j[1]]
            for a, b in zip(vr, vr[1:], strict=False):
                uses[pair(instance, a, b)].append(j)
        model.rows.add(model.g[r] <= gbps[r] * model.z[r])
        model.rows.add(model.g[r] >= min_rate_bps(instance, reqs[r]) / GBPS * model.z[r])
    supply: dict[tuple[str, str], list] = defaultdict(list)
    cells: dict[tuple[int, int], list[int]] = defaultdict(list)
    at_node: dict[str, list[int]] = defaultdict(list)
    for i, lp in enumerate(lps):
        route = pair_routes(instance, lp.ends)[lp.route]
        supply[lp.ends].append((i, capacity_bps(instance, route, lp.width) / GBPS))
        for e in route.links:
            for s in range(lp.first_slot, lp.first_slot + lp.width):
                cells[(e, s)].append(i)
        for v in lp.ends:
            at_node[v].append(i)
    for q in sorted(uses):
        model.rows.add(sum(model.h[j] for j in uses[q]) <= sum(c * model.y[i] for i, c in supply[q]))
        if len(supply[q]) > 1:
            model.rows.add(sum(model.y[i] for i, _ in supply[q]) <= 1)
    for cell in sorted(cells):
        if len(cells[cell]) > 1:
            model.rows.add(sum(model.y[i] for i in cells[cell]) <= 1)
    for v in instance.nodes:
        if len(at_node[v]) > instance.transponders_per_node:
            model.rows.add(sum(model.y[i] for i in at_node[v]) <= instance.transponders_per_node)
    return model


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    chosen = [i for i in range(len(model.lightpaths)) if (pyo.value(model.y[i], exception=False) or 0) > 0.5]
    records, by_pair = [], defaultdict(list)
    for i in chosen:
        lp = model.lightpaths[i]
        route = pair_routes(instance, lp.ends)[lp.route]
        by_pair[lp.ends].append(len(records))
        records.append(lightpath_record(instance, lp.ends, route, lp.width, lp.first_slot))
    connections = []
    for r, req in enumerate(instance.requests):
        if (pyo.value(model.z[r], exception=False) or 0) < 0.5:
            continue
        j = max(range(len(model.routes_of[r])), key=lambda i: pyo.value(model.lam[(r, i)]))
        vr = model.routes_of[r][j]
        rate = min(max(pyo.value(model.g[r]), min_rate_bps(instance, req) / GBPS), req.bandwidth_bps / GBPS)
        hops = [by_pair[pair(instance, a, b)][0] for a, b in zip(vr, vr[1:], strict=False)]
        connections.append(connection_record(instance, r, hops, rate * GBPS))
    return solution_from(instance, records, connections)


