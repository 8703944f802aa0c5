"""The reconfiguration plan as one MILP (symbols as in :mod:`coopt.problems.mixnet.plan_model`).

With circuits fixed, a layer's time is the least ``T_l`` in which its volume fits: the circuits
carry ``B x T_l`` each way, the EPS ``B_E T_l`` per server side. The product ``x T_l`` is exact in
unary: ``x_l,ij = sum_k y_l,ijk`` with ``y_l,ijk = [x_l,ij >= k]`` binary, and ``z_l,ijk = y_l,ijk
T_l`` through ``z <= T_l`` and ``z <= M y`` (only upper bounds are needed: more circuit-time never
hurts, so every optimum has ``z = min(T_l, M y)``, which is ``y T_l`` as ``M >= T_l`` wherever the
circuit is needed)::

    min  sum_l T_l + sum_l e_l r_l                          (r_0 = 1: the first circuits are set)
    s.t. eps_l,ij >= v_l,ij - sum_k z_l,ijk                 ordered pairs with traffic in layer l
         sum_j eps_l,ij <= b_E T_l,  sum_i eps_l,ij <= b_E T_l
         z_l,ijk <= T_l,  z_l,ijk <= M_l,ij y_l,ijk
         y_l,ijk >= y_l,ij(k+1);   sum_j sum_k y_l,ijk <= alpha
         -r_l <= y_l,ijk - y_(l-1),ijk <= r_l               circuits change only where r_l = 1
         lo_l <= T_l <= hi_l;  y, r binary;  z, eps >= 0

Units: time in ``tau = sum_l n_l max_i max(row_i, col_i) / B_E / 10^3`` (a thousandth of the plan's
time with no circuits and no reconfiguration, so the objective is about ``10^3``: HiGHS loosens
the bounds its domain propagation derives by its absolute feasibility tolerance, 1e-6, which is then
1e-9 of the objective; see :mod:`.milp`); volume ``v_l = n_l 8 D_l / (B tau)`` (a circuit carries
one unit per time unit); ``b_E = B_E / B``; ``objective_unit = tau`` seconds.

Restrictions, each without loss:

* ``hi_l = n_l max_i max(row_i, col_i) / B_E``: the layer's time with no circuits, which no circuit
  set exceeds; ``lo_l = n_l max_i max(row_i, col_i) / (alpha B + B_E)``: the port bound.
* ``M_l,ij = min(hi_l, max(v_l,ij, v_l,ji))``: the k-th circuit never needs to carry more than the
  pair's larger direction, so capping its circuit-time there keeps every ``eps`` feasible.
* ``k <= u_ij = min(alpha, max_l ceil(max(v_l,ij, v_l,ji) / lo_l))``: that many circuits carry the
  pair's traffic in full in every layer at any feasible ``T_l``, so more would free no EPS; a pair
  that never has traffic gets no circuit variable.

:func:`build_segment` is the same model for one stretch of layers that keeps one circuit set (no
``r``, one ``y`` for all its layers, no exposure): the segment value of the DP.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.mixnet.model import busiest
from coopt.problems.mixnet.plan_model import Instance, solution_of

#: The model's time unit is the plan's circuit-free time over ``OBJECTIVE_SCALE`` (module docstring).
OBJECTIVE_SCALE = 1e3


def _data(instance: Instance, layers: range) -> dict[str, Any]:
    f = instance.fabric
    heavy = {l: instance.layers[l].all_to_alls * busiest(instance.layers[l].bits()) for l in layers}
    tau = sum(heavy[l] / f.eps_rate for l in layers) / OBJECTIVE_SCALE
    hi = {l: heavy[l] / f.eps_rate / tau for l in layers}
    lo = {l: heavy[l] / (f.alpha * f.nic_rate + f.eps_rate) / tau for l in layers}
    volume: dict[tuple[int, int, int], float] = {}
    for l in layers:
        v = instance.layers[l].all_to_alls * instance.layers[l].bits() / (f.nic_rate * tau)
        for i, j in zip(*np.nonzero(v > 0), strict=True):
            volume[l, int(i), int(j)] = float(v[i, j])
    pairs: dict[tuple[int, int], int] = {}
    for (l, i, j), v in volume.items():
        p = (min(i, j), max(i, j))
        larger = max(v, volume.get((l, j, i), 0.0))
        pairs[p] = max(pairs.get(p, 0), min(f.alpha, math.ceil(larger / lo[l] * (1 + 1e-9))))
    return {"tau": tau, "hi": hi, "lo": lo, "volume": volume, "units": pairs,
            "b_eps": f.eps_rate / f.nic_rate}


def _add_layer_flows(model: pyo.ConcreteModel, data: dict[str, Any], layers: range, circuit_var: Any) -> None:
    """Time, circuit-time, EPS and hose rows for ``layers``; ``circuit_var(l, p, k)`` is the
    binary ``y`` in force at layer ``l``."""
    volume, units, hi, lo = data["volume"], data["units"], data["hi"], data["lo"]
    model.L = pyo.Set(initialize=list(layers))
    model.T = pyo.Var(model.L, bounds=lambda m, l: (lo[l], hi[l]))
    zs = []
    for l in layers:
        for p, u in units.items():
            i, j = p
            larger = max(volume.get((l, i, j), 0.0), volume.get((l, j, i), 0.0))
            if larger > 0:
                zs += [(l, i, j, k) for k in range(1, u + 1)]
    model.Z = pyo.Set(initialize=zs, dimen=4)

    def cap(m: Any, l: int, i: int, j: int, k: int) -> tuple[float, float]:
        return (0.0, min(hi[l], max(volume.get((l, i, j), 0.0), volume.get((l, j, i), 0.0))))

    model.z = pyo.Var(model.Z, bounds=cap)
    model.z_time = pyo.Constraint(model.Z, rule=lambda m, l, i, j, k: m.z[l, i, j, k] <= m.T[l])
    model.z_open = pyo.Constraint(
        model.Z,
        rule=lambda m, l, i, j, k: m.z[l, i, j, k] <= cap(m, l, i, j, k)[1] * circuit_var(m, l, (i, j), k),
    )
    model.F = pyo.Set(initialize=sorted(volume), dimen=3)
    model.eps = pyo.Var(model.F, domain=pyo.NonNegativeReals)

    def carried(m: Any, l: int, i: int, j: int) -> Any:
        a, b = min(i, j), max(i, j)
        return sum(m.z[l, a, b, k] for k in range(1, units.get((a, b), 0) + 1))

    model.spill = pyo.Constraint(
        model.F, rule=lambda m, l, i, j: m.eps[l, i, j] >= volume[l, i, j] - carried(m, l, i, j)
    )
    senders: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    receivers: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for l, i, j in volume:
        senders.setdefault((l, i), []).append((l, i, j))
        receivers.setdefault((l, j), []).append((l, i, j))
    b_eps = data["b_eps"]
    model.eps_out = pyo.Constraint(
        sorted(senders), rule=lambda m, l, i: sum(m.eps[q] for q in senders[l, i]) <= b_eps * m.T[l]
    )
    model.eps_in = pyo.Constraint(
        sorted(receivers), rule=lambda m, l, j: sum(m.eps[q] for q in receivers[l, j]) <= b_eps * m.T[l]
    )


def _add_ports(model: pyo.ConcreteModel, alpha: int, units: dict[tuple[int, int], int], stages: list[int],
               circuit_var: Any, servers: int) -> None:
    incident = {s: [p for p in units if s in p] for s in range(servers)}
    index = [(l, s) for l in stages for s in range(servers) if incident[s]]
    model.ports = pyo.Constraint(
        index, rule=lambda m, l, s: sum(circuit_var(m, l, p, k) for p in incident[s]
                                        for k in range(1, units[p] + 1)) <= alpha
    )


def build(instance: Instance, incumbent: Solution | None = None) -> pyo.ConcreteModel:
    """The whole plan (module docstring). Given an ``incumbent`` (a checked plan: the problem's warm
    start is :func:`coopt.problems.mixnet.plan_heuristics.segment_dp`), HiGHS starts from its
    reconfigurations and circuits (counts capped at ``u_ij`` as above) and completes the times and
    volumes itself; without one the model is cold."""
    layers = range(len(instance.layers))
    data = _data(instance, layers)
    units = data["units"]
    model = pyo.ConcreteModel(name="mixnet_plan")
    model.objective_unit = data["tau"]
    model.Y = pyo.Set(initialize=[(l, i, j, k) for l in layers for (i, j), u in units.items()
                                  for k in range(1, u + 1)], dimen=4)
    model.y = pyo.Var(model.Y, domain=pyo.Binary)
    model.R = pyo.Set(initialize=list(layers)[1:])
    model.r = pyo.Var(model.R, domain=pyo.Binary)

    def circuit_var(m: Any, l: int, p: tuple[int, int], k: int) -> Any:
        return m.y[l, p[0], p[1], k]

    _add_layer_flows(model, data, layers, circuit_var)
    _add_ports(model, instance.fabric.alpha, units, list(layers), circuit_var, instance.servers)
    ladder = [(l, i, j, k) for l, i, j, k in model.Y if k > 1]
    model.unary = pyo.Constraint(ladder, rule=lambda m, l, i, j, k: m.y[l, i, j, k] <= m.y[l, i, j, k - 1])
    kept = [(l, i, j, k) for l, i, j, k in model.Y if l > 0]
    model.change_up = pyo.Constraint(
        kept, rule=lambda m, l, i, j, k: m.y[l, i, j, k] - m.y[l - 1, i, j, k] <= m.r[l])
    model.change_down = pyo.Constraint(
        kept, rule=lambda m, l, i, j, k: m.y[l - 1, i, j, k] - m.y[l, i, j, k] <= m.r[l])
    tau = data["tau"]
    model.total = pyo.Objective(
        expr=sum(model.T[l] for l in layers) + instance.exposed(0) / tau
        + sum(instance.exposed(l) / tau * model.r[l] for l in model.R),
        sense=pyo.minimize,
    )
    if incumbent is not None:
        plan = incumbent["segments"]
        starts = [s["first_layer"] for s in plan]
        for l in model.R:
            model.r[l].value = int(l in starts)
        for l, i, j, k in model.Y:
            segment = plan[max(n for n, first in enumerate(starts) if first <= l)]
            model.y[l, i, j, k].value = int(segment["circuits"][i][j] >= k)
        model.warm_start = True
    return model


def build_segment(instance: Instance, first: int, last: int) -> pyo.ConcreteModel:
    """Layers ``first..last`` on one circuit set: ``min sum_l T_l`` (no exposure); objective in
    seconds through ``objective_unit``."""
    layers = range(first, last + 1)
    data = _data(instance, layers)
    units = data["units"]
    model = pyo.ConcreteModel(name=f"mixnet_plan_segment_{first}_{last}")
    model.objective_unit = data["tau"]
    model.Y = pyo.Set(initialize=[(i, j, k) for (i, j), u in units.items() for k in range(1, u + 1)], dimen=3)
    model.y = pyo.Var(model.Y, domain=pyo.Binary)

    def circuit_var(m: Any, l: int, p: tuple[int, int], k: int) -> Any:
        return m.y[p[0], p[1], k]

    _add_layer_flows(model, data, layers, circuit_var)
    _add_ports(model, instance.fabric.alpha, units, [first], circuit_var, instance.servers)
    ladder = [(i, j, k) for i, j, k in model.Y if k > 1]
    model.unary = pyo.Constraint(ladder, rule=lambda m, i, j, k: m.y[i, j, k] <= m.y[i, j, k - 1])
    model.total = pyo.Objective(expr=sum(model.T[l] for l in layers), sense=pyo.minimize)
    return model


def segment_circuits(model: pyo.ConcreteModel, servers: int) -> np.ndarray:
    """The circuit matrix of a solved :func:`build_segment` model."""
    x = np.zeros((servers, servers), dtype=int)
    for i, j, _ in model.Y:
        if pyo.value(model.y[i, j, _]) > 0.5:
            x[i, j] += 1
            x[j, i] += 1
    return x


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    starts = [0] + [l for l in model.R if pyo.value(model.r[l]) > 0.5]
    circuits = []
    for first in starts:
        x = np.zeros((instance.servers, instance.servers), dtype=int)
        for l, i, j, k in model.Y:
            if l == first and pyo.value(model.y[l, i, j, k]) > 0.5:
                x[i, j] += 1
                x[j, i] += 1
        circuits.append(x)
    return solution_of(instance, starts, circuits)
