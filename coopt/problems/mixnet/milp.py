"""M1 as a MILP (symbols as in :mod:`coopt.problems.mixnet.model`), every region and scenario
in one model with one worst-case ``theta``.

The rates are eliminated: at any ``theta`` the best split puts ``min(theta 8 D_ij, B x_ij)`` on the
circuit, so only the EPS share ``e_ij >= theta 8 D_ij - B x_ij`` needs a variable::

    max  theta
    s.t. e^t_ij >= theta d^t_ij - x_ij           every matrix t, ordered pair i != j with d^t_ij > 0
         sum_j e^t_ij <= b_E,  sum_i e^t_ij <= b_E        every matrix t, server i (j)
         sum_j x_ij <= alpha                              every server
         0 <= x_ij <= u_ij integer,  e >= 0,  0 <= theta <= theta_UB

scaled so that a circuit carries one unit per time unit and the model's ``theta`` is about
``10^3``: ``d = 8 D / L`` with ``L = 10^3 max_t max_i max(row_i, col_i)`` bits, rates in units of
``B``, ``b_E = (N - alpha) / o``; the model's ``theta`` times ``objective_unit = B / L`` is
all-to-alls per second. Why ``10^3``: HiGHS' domain propagation loosens the bounds it derives for
``theta`` by its absolute feasibility tolerance (1e-6), and the LP then rides on the loosened bound;
at ``theta`` near ``10^3`` that is 1e-9 relative, far below the 1e-7 at which the differential test
compares the MILP with brute force (at ``theta`` near 3 it overstated the optimum by 4e-7).

Restrictions, each without loss:

* ``theta <= theta_UB = min_t (alpha + b_E) / max_i max(row_i, col_i)``: every bit of server
  ``i`` leaves through its ``alpha`` circuits or its EPS share (the closed-form port bound).
* ``u_ij = min(alpha, ceil(theta_UB dmax_ij))`` with ``dmax_ij = max_t max(d^t_ij, d^t_ji)``:
  at any feasible ``theta``, ``ceil(theta_UB dmax_ij)`` circuits already carry the pair's whole
  traffic both ways, so lowering a larger ``x_ij`` to it keeps every ``e`` feasible and frees ports.
  A pair with no traffic either way gets no variable (``u_ij = 0``).
* the rates ``o`` are gone: given ``x`` and ``theta``, ``o = min(theta d, x)`` is feasible and the
  ``e`` left is the least possible, so a feasible ``(x, theta)`` here is one with rates there.

A valid inequality (it cuts fractional points only): with ``u = theta_UB d^t_ij`` and ``k = floor(u)``,
``e^t_ij >= theta d^t_ij - k - (u - k)(x_ij - k)``. At ``x = k`` it is the spill row; at ``x >=
k + 1`` its right side is at most ``d (theta - theta_UB) <= 0``; at ``x <= k - 1`` it is at most
``theta d - x`` because ``u - k <= 1``. So every integer point keeps it, while it removes the
fractional ``x = theta d`` that makes one circuit carry exactly a pair's need. On the measured EP16
and EP32 matrices it lowers the LP relaxation from 15 % and 14 % above the optimum to 6 % and 5 %.

The rates of the solution are recomputed from the circuits (:func:`model.solution_of`), so the
reported ``theta`` is exactly the circuits' throughput.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyomo.environ as pyo

from coopt.problem import NoSolution, Solution
from coopt.problems.mixnet.model import Instance, busiest, solution_of

#: The model's throughput is ``THETA_SCALE`` times the normalised one (module docstring).
THETA_SCALE = 1e3


def scale(instance: Instance) -> float:
    """``L``: the model's demand unit, ``THETA_SCALE`` times the bits of the busiest server."""
    return THETA_SCALE * max(busiest(t.bits()) for t in instance.traffic)


def pair_bounds(instance: Instance, unit: float) -> dict[tuple[int, int, int], int]:
    """``u_ij`` per (region, i, j), i < j, for pairs with traffic (module docstring)."""
    f = instance.fabric
    b_eps = f.eps_rate / f.nic_rate
    theta_ub = min((f.alpha + b_eps) / (busiest(t.bits()) / unit) for t in instance.traffic)
    bounds: dict[tuple[int, int, int], int] = {}
    for region in range(instance.regions):
        peak = np.zeros((instance.region_size(region),) * 2)
        for k in instance.traffic_of(region):
            d = instance.traffic[k].bits() / unit
            peak = np.maximum(peak, np.maximum(d, d.T))
        for i, j in zip(*np.nonzero(np.triu(peak, 1) > 0), strict=True):
            need = math.ceil(theta_ub * peak[i, j] * (1 + 1e-9))
            bounds[(region, int(i), int(j))] = min(f.alpha, need)
    return {key: u for key, u in bounds.items() if u > 0}


#: The MILP is built for at most this many circuit variables (a region of about 280 servers);
#: beyond, the heuristics and the LP bound answer.
MAX_PAIRS = 40_000


def build(instance: Instance, incumbent: Solution | None = None, limit: int | None = MAX_PAIRS
          ) -> pyo.ConcreteModel:
    """The MILP of the module docstring (refused beyond ``limit`` circuit variables; the LP bound
    builds it without a limit). Given an ``incumbent`` (a checked solution: the problem's warm start
    is :func:`coopt.problems.mixnet.circuits.fill_and_swap`), HiGHS starts from its circuits (each
    count capped at its ``u_ij``, which loses nothing by the proof above) and completes the rates
    itself; without one the model is cold."""
    f = instance.fabric
    unit = scale(instance)
    b_eps = f.eps_rate / f.nic_rate
    bounds = pair_bounds(instance, unit)
    if limit is not None and len(bounds) > limit:
        raise NoSolution(f"the M1 MILP would have {len(bounds)} circuit variables, more than {MAX_PAIRS}; "
                         "use a heuristic (fill_and_swap) and the bound")
    theta_ub = min((f.alpha + b_eps) / (busiest(t.bits()) / unit) for t in instance.traffic)

    model = pyo.ConcreteModel(name="mixnet_M1")
    model.objective_unit = f.nic_rate / unit
    model.P = pyo.Set(initialize=sorted(bounds), dimen=3)
    model.x = pyo.Var(model.P, domain=pyo.NonNegativeIntegers, bounds=lambda m, r, i, j: (0, bounds[r, i, j]))
    model.theta = pyo.Var(bounds=(0.0, theta_ub))

    incident: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for key in bounds:
        r, i, j = key
        incident.setdefault((r, i), []).append(key)
        incident.setdefault((r, j), []).append(key)
    model.ports = pyo.Constraint(
        sorted(incident), rule=lambda m, r, i: sum(m.x[p] for p in incident[r, i]) <= f.alpha
    )

    flows: list[tuple[int, int, int]] = []
    demand: dict[tuple[int, int, int], float] = {}
    for k, t in enumerate(instance.traffic):
        d = t.bits() / unit
        for i, j in zip(*np.nonzero(d > 0), strict=True):
            flows.append((k, int(i), int(j)))
            demand[k, int(i), int(j)] = float(d[i, j])
    model.F = pyo.Set(initialize=flows, dimen=3)
    model.eps = pyo.Var(model.F, domain=pyo.NonNegativeReals)

    def circuit(m: Any, k: int, i: int, j: int) -> Any:
        key = (instance.traffic[k].region, min(i, j), max(i, j))
        return m.x[key] if key in bounds else 0.0

    model.spill = pyo.Constraint(
        model.F, rule=lambda m, k, i, j: m.eps[k, i, j] >= m.theta * demand[k, i, j] - circuit(m, k, i, j)
    )

    def last_circuit(m: Any, k: int, i: int, j: int) -> Any:
        """The last-circuit cut of the module docstring (skipped where the pair has no variable)."""
        key = (instance.traffic[k].region, min(i, j), max(i, j))
        if key not in bounds:
            return pyo.Constraint.Skip
        top = theta_ub * demand[k, i, j]
        step = math.floor(top)
        return m.eps[k, i, j] >= m.theta * demand[k, i, j] - step - (top - step) * (m.x[key] - step)

    model.last_circuit = pyo.Constraint(model.F, rule=last_circuit)
    senders: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    receivers: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for k, i, j in flows:
        senders.setdefault((k, i), []).append((k, i, j))
        receivers.setdefault((k, j), []).append((k, i, j))
    model.eps_out = pyo.Constraint(
        sorted(senders), rule=lambda m, k, i: sum(m.eps[q] for q in senders[k, i]) <= b_eps
    )
    model.eps_in = pyo.Constraint(
        sorted(receivers), rule=lambda m, k, j: sum(m.eps[q] for q in receivers[k, j]) <= b_eps
    )
    model.throughput = pyo.Objective(expr=model.theta, sense=pyo.maximize)
    if incumbent is not None:
        start = incumbent["regions"]
        for r, i, j in model.P:
            model.x[r, i, j].value = min(start[r]["circuits"][i][j], bounds[r, i, j])
        model.warm_start = True
    return model


def region_incumbent(incumbent: Solution | None, region: int) -> Solution | None:
    """The part of a solution that is one region's (the incumbent of ``instance.only_region``)."""
    return None if incumbent is None else {"regions": [incumbent["regions"][region]]}


def circuits_from(model: pyo.ConcreteModel, instance: Instance) -> list[np.ndarray]:
    """The integer circuit matrices of a solved model, one per region."""
    found = [np.zeros((instance.region_size(r),) * 2, dtype=int) for r in range(instance.regions)]
    for r, i, j in model.P:
        count = int(round(pyo.value(model.x[r, i, j])))
        found[r][i, j] = found[r][j, i] = count
    return found


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    return solution_of(instance, circuits_from(model, instance))
