"""TopoOpt's exact model P1 (symbols as in :mod:`coopt.problems.topoopt.model`).

Formulation P1 (topology + routing + ring split, max concurrent flow) [proposed in the notes;
here the AllReduce ring split is a decision too, which keeps the model linear because the
demand enters only through ``mu_gq = theta * lambda_gq``]::

    max  theta
    s.t. sum_j x_ij = d, sum_i x_ij = d,  x_ii = 0,  x_ij in {0..d}
         x_ij = x_ji                                                  (link_symmetry = symmetric)
         sum_q mu_gq = theta                                          for every group g
         sum_j f^s_vj - sum_i f^s_iv = theta M_sv* + sum_g c_g sum_q mu_gq           (v = s)
                                     = -(theta M_sv + sum_g c_g sum_{q: s+q=v} mu_gq)  (v != s)
         sum_s f^s_ij <= (B / 8) x_ij
         theta >= (B / 8) / sum_st D_st                                (theta_floor, below)
         f, mu, theta >= 0

with ``M_sv* = sum_t M_st``: source-aggregated flows ``f^s``, one commodity per source.
``theta`` is in iterations per second: the iteration's communication takes ``1/theta`` s. The
model is scaled so that the busiest server sends one unit and a port carries one unit per
time unit; ``objective_unit`` turns the scaled ``theta`` back into iterations per second.

``theta_floor`` loses nothing: on any topology on which the demand can be routed at all, routing it
along simple paths loads every arc with at most the total demand ``sum_st D_st`` (any split gives the
same total), and an arc in use has at least one link, so that topology reaches ``theta`` at least
``(B/8) / sum D``. The floor only removes ``theta = 0`` (the demand left unrouted), so P1 is
infeasible exactly when no topology routes the demand (possible with ``symmetric`` links and
``d = 1``, a perfect matching), and otherwise its optimum is untouched.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyomo.environ as pyo

from coopt.errors import CooptError
from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.bound import moore_bound, port_bound
from coopt.problems.topoopt.model import (
    Instance,
    busiest_sender,
    candidate_strides,
    mp_matrix,
    ring_bytes,
)

#: Largest n for which ``build`` makes the P1 MILP (n^2 (n - 1) flow variables: 108 k at 48).
MAX_P1_SERVERS = 48
#: Conservation and capacity rows are multiplied by this: HiGHS accepts a MIP solution whose rows are
#: off by its feasibility tolerance (1e-6, absolute), which on rows of O(1) overstates ``theta`` by up
#: to ~1e-6 relative; on rows scaled by 1e3 the same tolerance is 1e-9 of a unit of flow.
ROW_SCALE = 1e3


class ModelTooLarge(NoSolution, CooptError):
    """P1 refused before anything is built: a ``no_solution`` for the runner, one line for the CLI."""


def arcs_of(n: int, links: np.ndarray | None) -> list[tuple[int, int]]:
    """The arcs P1 may use: every ordered pair of distinct servers, or those with a link."""
    return [(i, j) for i in range(n) for j in range(n) if i != j and (links is None or links[i][j] > 0)]


def total_demand(instance: Instance) -> float:
    """``sum_st D_st`` in bytes (the same for every ring split)."""
    n = instance.servers
    return float(mp_matrix(instance).sum()) + n * sum(ring_bytes(g) for g in instance.allreduce)


def build(
    instance: Instance, incumbent: Solution | None = None, *, links: np.ndarray | None = None,
    bound_cut: bool = True,
) -> pyo.ConcreteModel:
    """P1 as in the module docstring, scaled so the busiest server sends 1 and a port carries 1.

    With ``links`` given the topology is fixed (a parameter, arcs restricted to existing links)
    and the model is the routing + ring-split LP on that topology. Otherwise, by default, ``theta``
    is capped by the port and Moore bounds (``bound_cut``, valid for every topology:
    :mod:`.bound`), and HiGHS starts from ``incumbent`` where one is given (a checked solution; the
    problem's warm start is :func:`coopt.problems.topoopt.heuristics.warm_start`). Without one the
    model is complete and cold: nothing in it depends on a heuristic.
    """
    n = instance.servers
    if links is None and n > MAX_P1_SERVERS:
        raise ModelTooLarge(
            f"P1 has n^2 (n - 1) = {n * n * (n - 1)} flow variables at n = {n}; it is built for "
            f"n <= {MAX_P1_SERVERS} (use a heuristic, e.g. --method topology_finder_lp, or --method bound)"
        )
    unit = busiest_sender(instance)
    m_scaled = mp_matrix(instance) / unit
    arcs = arcs_of(n, links)
    out_arcs: list[list[int]] = [[] for _ in range(n)]
    in_arcs: list[list[int]] = [[] for _ in range(n)]
    for i, j in arcs:
        out_arcs[i].append(j)
        in_arcs[j].append(i)
    shares = [(g, q) for g, group in enumerate(instance.allreduce) for q in candidate_strides(n, group.size)]
    ring_c = [ring_bytes(g) / unit for g in instance.allreduce]

    model = pyo.ConcreteModel(name="topoopt_P1")
    model.objective_unit = instance.port_rate / unit
    model.N = pyo.Set(initialize=range(n))
    model.A = pyo.Set(initialize=arcs, dimen=2)
    model.G = pyo.Set(initialize=range(len(instance.allreduce)))
    model.Q = pyo.Set(initialize=shares, dimen=2)
    if links is None:
        _link_variables(model, instance, out_arcs, in_arcs)
    else:
        model.links = pyo.Param(model.A, initialize={(i, j): int(links[i][j]) for i, j in arcs})
    model.flow = pyo.Var(model.N, model.A, domain=pyo.NonNegativeReals)
    model.ring = pyo.Var(model.Q, domain=pyo.NonNegativeReals)  # mu_gq = theta * lambda_gq
    model.theta = pyo.Var(domain=pyo.NonNegativeReals)

    model.split = pyo.Constraint(
        model.G, rule=lambda m, g: sum(m.ring[h, q] for h, q in m.Q if h == g) == m.theta
    )

    def conservation(m: pyo.ConcreteModel, s: int, v: int) -> Any:
        net = sum(m.flow[s, v, j] for j in out_arcs[v]) - sum(m.flow[s, i, v] for i in in_arcs[v])
        if v == s:
            sent = m.theta * float(m_scaled[s].sum()) + sum(ring_c[g] * m.ring[g, q] for g, q in shares)
            return ROW_SCALE * net == ROW_SCALE * sent
        received = m.theta * float(m_scaled[s, v]) + sum(
            ring_c[g] * m.ring[g, q] for g, q in shares if (s + q) % n == v
        )
        return ROW_SCALE * net == -ROW_SCALE * received

    model.conservation = pyo.Constraint(model.N, model.N, rule=conservation)
    model.capacity = pyo.Constraint(
        model.A,
        rule=lambda m, i, j: ROW_SCALE * sum(m.flow[s, i, j] for s in range(n)) <= ROW_SCALE * m.links[i, j],
    )
    if links is None:
        model.theta_floor = pyo.Constraint(expr=model.theta >= unit / total_demand(instance))
        if bound_cut:
            cap = min(port_bound(instance), moore_bound(instance)) / model.objective_unit
            model.theta_cap = pyo.Constraint(expr=model.theta <= cap * (1 + 1e-9))
        if incumbent is not None:
            _set_start(model, instance, incumbent, unit)
    model.obj = pyo.Objective(expr=model.theta, sense=pyo.maximize)
    return model


def _set_start(model: pyo.ConcreteModel, instance: Instance, solution: Solution, unit: float) -> None:
    """Load a checker-feasible solution into P1's variables (scaled) and ask for a warm start."""
    theta = solution["objective"] * unit / instance.port_rate
    x = solution["links"]
    if instance.symmetric:
        for i, j in model.P:
            model.pair[i, j].set_value(x[i][j])
    else:
        for i, j in model.A:
            model.links[i, j].set_value(x[i][j])
    for index in model.flow:
        model.flow[index].set_value(0.0)
    for s, i, j, amount in solution["flows"]:
        if (i, j) in model.A:
            model.flow[s, i, j].set_value(model.flow[s, i, j].value + theta * amount / unit)
    for h, q in model.Q:
        model.ring[h, q].set_value(0.0)
    for g, entries in enumerate(solution["ring_share"]):
        for q, share in entries:
            model.ring[g, q].set_value(theta * share)
    model.theta.set_value(theta)
    model.warm_start = True


def _link_variables(
    model: pyo.ConcreteModel, instance: Instance, out_arcs: list[list[int]], in_arcs: list[list[int]]
) -> None:
    """``x`` as integer variables with the degree rows; with symmetric links one variable per pair,
    ``links[i, j]`` and ``links[j, i]`` both naming it."""
    n, d = instance.servers, instance.degree
    if instance.symmetric:
        model.P = pyo.Set(initialize=[(i, j) for i in range(n) for j in range(i + 1, n)], dimen=2)
        model.pair = pyo.Var(model.P, domain=pyo.NonNegativeIntegers, bounds=(0, d))
        model.links = pyo.Expression(model.A, rule=lambda m, i, j: m.pair[min(i, j), max(i, j)])
        model.degree_rows = pyo.Constraint(
            model.N, rule=lambda m, i: sum(m.pair[min(i, j), max(i, j)] for j in out_arcs[i]) == d
        )
        return
    model.links = pyo.Var(model.A, domain=pyo.NonNegativeIntegers, bounds=(0, d))
    model.out_degree = pyo.Constraint(model.N, rule=lambda m, i: sum(m.links[i, j] for j in out_arcs[i]) == d)
    model.in_degree = pyo.Constraint(model.N, rule=lambda m, j: sum(m.links[i, j] for i in in_arcs[j]) == d)


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    n = instance.servers
    unit = busiest_sender(instance)
    links = [[0] * n for _ in range(n)]
    for i, j in model.A:
        links[i][j] = int(round(pyo.value(model.links[i, j])))
    theta = pyo.value(model.theta)
    shares: list[list[list[float]]] = []
    for g, _ in enumerate(instance.allreduce):
        mu = {q: max(0.0, pyo.value(model.ring[h, q])) for h, q in model.Q if h == g}
        total = sum(mu.values())
        shares.append([[q, v / total] for q, v in sorted(mu.items()) if v > 0])
    flows = []
    for s in range(n):
        for i, j in model.A:
            value = pyo.value(model.flow[s, i, j])
            if value > 1e-12:
                flows.append([s, i, j, value / theta * unit])
    return {"links": links, "ring_share": shares, "flows": flows}
