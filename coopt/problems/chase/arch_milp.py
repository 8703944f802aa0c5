"""The architecture feasibility MILP of ``chase_arch``: the rows of :mod:`.arch_model` with integer
counts, maximising the capability proxy. The objective is divided by the capability of every
allowed device (O(1); ``objective_unit`` gives it back).

One restriction, with its proof: racks are identical (same power, space and cabling; the
spines live apart), so permuting the racks of a design gives a design of the same capability and
cost; sorting any design's racks by capability gives one with ``K_1 >= K_2 >= ... >= K_R``
(``K_r = sum_tau kappa_tau n_{tau r}``), so the rows ``K_r >= K_{r+1}`` keep an optimum.
"""

from __future__ import annotations

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.chase.arch_model import ArchInstance, Design, design_solution


def build(inst: ArchInstance) -> pyo.ConcreteModel:
    T = range(len(inst.types))
    R = range(inst.racks)
    types = inst.types
    scale = sum(t.capability * t.max_count for t in types) or 1.0
    m = pyo.ConcreteModel(name="chase_arch")
    m.objective_unit = scale
    m.n = pyo.Var(R, T, domain=pyo.NonNegativeIntegers, bounds=lambda _, r, i: (0, types[i].max_count))
    m.t = pyo.Var(R, domain=pyo.NonNegativeIntegers)
    m.u = pyo.Var(R, domain=pyo.NonNegativeIntegers)
    m.s = pyo.Var(domain=pyo.NonNegativeIntegers)

    def rack_capability(r: int) -> pyo.Expression:
        return sum(types[i].capability * m.n[r, i] for i in T)

    m.obj = pyo.Objective(expr=sum(rack_capability(r) for r in R) / scale, sense=pyo.maximize)
    m.power = pyo.Constraint(R, rule=lambda _, r: sum(types[i].device.power * m.n[r, i] for i in T)
                             + inst.switch_power * m.t[r] <= inst.rack_power)
    m.space = pyo.Constraint(R, rule=lambda _, r: sum(types[i].device.rack_units * m.n[r, i] for i in T)
                             + inst.switch_units * m.t[r] <= inst.rack_units)
    m.tor_radix = pyo.Constraint(R, rule=lambda _, r: sum(types[i].nic_ports * m.n[r, i] for i in T)
                                 + m.u[r] <= inst.switch_radix * m.t[r])
    m.tor_uplinks = pyo.Constraint(R, rule=lambda _, r: m.u[r] >= m.t[r])
    m.spine_radix = pyo.Constraint(expr=sum(m.u[r] for r in R) <= inst.switch_radix * m.s)
    m.network_power = pyo.Constraint(expr=inst.switch_power * m.s <= inst.rack_power)
    m.network_space = pyo.Constraint(expr=inst.switch_units * m.s <= inst.rack_units)
    # in Gbyte/s so the row's coefficients stay O(1..1e3)
    capacity = inst.oversubscription * inst.uplink_bandwidth / 1e9
    m.oversubscription = pyo.Constraint(R, rule=lambda _, r: capacity * m.u[r] >= sum(
        types[i].nic_ports * types[i].nic_bandwidth / 1e9 * m.n[r, i] for i in T))
    device_cost = sum(types[i].device.cost * m.n[r, i] for r in R for i in T)
    copper = sum(types[i].nic_ports * m.n[r, i] for r in R for i in T)
    m.budget = pyo.Constraint(expr=device_cost + inst.switch_cost * (sum(m.t[r] for r in R) + m.s)
                              + inst.copper_cost * copper + inst.optical_cost * sum(m.u[r] for r in R)
                              <= inst.budget)
    m.memory = pyo.Constraint(expr=sum(types[i].device.memory / 1e9 * m.n[r, i] for r in R for i in T)
                              >= inst.memory_required / 1e9)
    m.count = pyo.Constraint(T, rule=lambda _, i: sum(m.n[r, i] for r in R) <= types[i].max_count)
    m.rack_order = pyo.Constraint([r for r in R if r + 1 < inst.racks],
                                  rule=lambda _, r: rack_capability(r) >= rack_capability(r + 1))
    return m


def extract(m: pyo.ConcreteModel, inst: ArchInstance) -> Solution:
    R, T = range(inst.racks), range(len(inst.types))
    counts = tuple(tuple(round(pyo.value(m.n[r, i])) for i in T) for r in R)
    design = Design(counts, tuple(round(pyo.value(m.t[r])) for r in R),
                    tuple(round(pyo.value(m.u[r])) for r in R), round(pyo.value(m.s)))
    return design_solution(inst, design)
