"""The MILP of Model C (the statement is in :mod:`coopt.problems.provisioning.grooming_model`).

:func:`grooming_model` builds the variables and rows (C1)-(C7) with the expressions W (served
weight), P (weighted degradation) and L (lightpaths); :func:`build` adds the one-number
objective W - eps1 P - eps2 L, and the exact route solves max W, then min Q = eps1 P + eps2 L.
Served rates are fractions rho_r of b_r, so the degradation coefficients are class weights, not
weights per Gbit/s.
"""

from __future__ import annotations

from collections import defaultdict

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.provisioning.grooming_model import (
    GBPS,
    Instance,
    capacity_bps,
    connection_record,
    epsilons,
    lightpath_candidates,
    lightpath_record,
    min_fraction,
    pair,
    pair_routes,
    served_weight,
    solution_from,
    virtual_routes,
)


def grooming_model(instance: Instance, lowest_rates: bool = False, linking: bool = True) -> pyo.ConcreteModel:
    """y, z, lambda, h, rho, the rows (C1)-(C7) and the expressions ``served_weight`` (W),
    ``degradation`` (P) and ``lightpath_count`` (L).

    ``linking`` adds lambda_{r,pi} <= sum_{l in L(q)} y_l for every hop q of pi: a virtual route
    needs a lightpath on each of its pairs. The rows are implied for integer points by (C4) and
    (C2) (a served request with h > 0 needs capacity, so some y_l = 1), not for the LP, where
    (C4) lets lambda = 1 ride on a sliver of y; they cut the stage-1 search from 2020 nodes to 75
    on generated seed 2, size 6 (benchmarks/figures/provisioning_scale.py).

    ``lowest_rates`` fixes every served fraction at its class floor, rho_r = (1 - delta_p) z_r,
    which loses nothing for max W: lowering a served rate only frees capacity in (C4), and W does
    not depend on it."""
    lps = lightpath_candidates(instance)
    reqs = instance.requests
    model = pyo.ConcreteModel(name="provisioning_grooming")
    model.lightpaths = lps
    model.routes_of = [virtual_routes(instance, r) for r in reqs]
    index = [(r, i) for r in range(len(reqs)) for i in range(len(model.routes_of[r]))]
    model.y = pyo.Var(range(len(lps)), within=pyo.Binary)
    model.z = pyo.Var(range(len(reqs)), within=pyo.Binary)
    model.lam = pyo.Var(index, within=pyo.Binary)
    model.h = pyo.Var(index, bounds=(0.0, 1.0))
    model.rho = pyo.Var(range(len(reqs)), bounds=(0.0, 1.0))
    weight = [served_weight(instance, r) for r in range(len(reqs))]
    model.served_weight = pyo.Expression(expr=sum(weight[r] * model.z[r] for r in range(len(reqs))))
    model.degradation = pyo.Expression(
        expr=sum(weight[r] * (model.z[r] - model.rho[r]) for r in range(len(reqs))))
    model.lightpath_count = pyo.Expression(expr=sum(model.y[i] for i in range(len(lps))))
    model.rows = pyo.ConstraintList()
    uses = _add_request_rows(model, instance, lowest_rates)
    supply, cells, at_node = _lightpath_resources(instance, lps)
    model.linking = pyo.ConstraintList()
    _add_pair_rows(model, instance, uses, supply, linking)
    for cell in sorted(cells):
        if len(cells[cell]) > 1:
            model.rows.add(sum(model.y[i] for i in cells[cell]) <= 1)
    for v in instance.nodes:
        if len(at_node[v]) > instance.transponders_per_node:
            model.rows.add(sum(model.y[i] for i in at_node[v]) <= instance.transponders_per_node)
    return model


def _add_request_rows(model: pyo.ConcreteModel, instance: Instance, lowest_rates: bool
                      ) -> dict[tuple[str, str], list]:
    """Per request: one virtual route if served, its rate split over that route, the class
    window of the rate (its floor only with ``lowest_rates``). Returns, per node pair, the
    (request, route) indices whose virtual route has a hop on it."""
    uses: dict[tuple[str, str], list] = defaultdict(list)
    for r, req in enumerate(instance.requests):
        mine = [(r, i) for i in range(len(model.routes_of[r]))]
        model.rows.add(sum(model.lam[j] for j in mine) == model.z[r])
        model.rows.add(sum(model.h[j] for j in mine) == model.rho[r])
        for j in mine:
            model.rows.add(model.h[j] <= model.lam[j])
            vr = model.routes_of[r][j[1]]
            for a, b in zip(vr, vr[1:], strict=False):
                uses[pair(instance, a, b)].append(j)
        model.rows.add(model.rho[r] <= model.z[r])
        if lowest_rates:
            model.rows.add(model.rho[r] == min_fraction(instance, req) * model.z[r])
        else:
            model.rows.add(model.rho[r] >= min_fraction(instance, req) * model.z[r])
    return uses


def _lightpath_resources(instance: Instance, lps: list) -> tuple[dict, dict, dict]:
    """What each candidate lightpath offers and holds: per node pair its (index, capacity in
    Gbit/s), per cell (link, slot) and per node the lightpaths using it."""
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
    return supply, cells, at_node


def _add_pair_rows(model: pyo.ConcreteModel, instance: Instance, uses: dict, supply: dict,
                   linking: bool) -> None:
    """Per node pair a virtual hop uses: the carried rate within the capacity of the pair's
    lightpath, at most one lightpath per pair, and (``linking``) no hop without one."""
    gbps = [req.bandwidth_bps / GBPS for req in instance.requests]
    for q in sorted(uses):
        carried = sum(gbps[j[0]] * model.h[j] for j in uses[q])
        model.rows.add(carried <= sum(c * model.y[i] for i, c in supply[q]))
        if len(supply[q]) > 1:
            model.rows.add(sum(model.y[i] for i, _ in supply[q]) <= 1)
        if linking:
            pair_open = sum(model.y[i] for i, _ in supply[q])
            for j in uses[q]:
                model.linking.add(model.lam[j] <= pair_open)


def build(instance: Instance, incumbent: Solution | None = None) -> pyo.ConcreteModel:
    """Model C with the one-number objective W - eps1 P - eps2 L in problem units. ``incumbent``
    (the runner's warm start) is not handed to HiGHS, for the reason of :func:`.milp.build`."""
    model = grooming_model(instance)
    eps1, eps2 = epsilons(instance)
    model.value = pyo.Objective(
        expr=model.served_weight - eps1 * model.degradation - eps2 * model.lightpath_count,
        sense=pyo.maximize)
    model.objective_unit = 1.0
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
        # the rate the capacity rows saw (h), inside the class window
        fraction = min(max(pyo.value(model.h[(r, j)]), min_fraction(instance, req)), 1.0)
        hops = [by_pair[pair(instance, a, b)][0] for a, b in zip(vr, vr[1:], strict=False)]
        connections.append(connection_record(instance, r, hops, fraction * req.bandwidth_bps))
    return solution_from(instance, records, connections)
