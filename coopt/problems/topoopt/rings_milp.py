"""P2: TopoOpt's own search space (stride rings from the totient candidates plus matching links)
as a minimum-time MILP; the outer loop over ring counts is :func:`coopt.problems.topoopt.p2.solve_p2`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyomo.environ as pyo

from coopt.problems.topoopt.model import (
    Instance,
    busiest_sender,
    candidate_strides,
    mp_matrix,
    ring_bytes,
)


def ring_strides(instance: Instance) -> list[int]:
    """P2's ring candidates: ``C_k``, or with symmetric links one representative ``q <= n/2`` of each
    duplex ring ``{q, n - q}``."""
    n, k = instance.servers, instance.allreduce[0].size
    strides = candidate_strides(n, k)
    return [q for q in strides if 2 * q <= n] if instance.symmetric else strides


def ring_ports(n: int, q: int, symmetric: bool) -> int:
    """Ports a ring of stride ``q`` uses: 1, or 2 for a duplex ring (``q = n/2`` is its own reverse)."""
    return 2 if symmetric and 2 * q != n else 1


def build_p2(instance: Instance, rings: int) -> pyo.ConcreteModel:
    """P2 for one AllReduce group and a fixed ring count ``r`` (the outer loop of :func:`solve_p2`)::

        min  tau
        s.t. sum_q y_q = r                               y_q in {0,1}, q in C_k   (ring strides)
             sum_{j != i} m_ij + sum_q p_q y_q = d      m_ij = m_ji in {0..d}     (matching links)
             x_ij = sum_q y_q [j = i + q] + m_ij = sum_l u_ijl,  u_ijl >= u_ij(l+1),  u binary
             sum_j f^s_vj - sum_i f^s_iv = M_sv* (v = s), -M_sv (v != s)       (MP, unscaled)
             sum_s f^s_ij + (c / r) sum_q y_q [j = i + q] <= B sum_l w_ijl
             w_ijl <= tau_max u_ijl,  w_ijl <= tau,  w_ijl >= tau - tau_max (1 - u_ijl),  w >= 0
             c / (r B) <= tau <= tau_max

    ``p_q`` is the ports ring ``q`` uses: 1, or with symmetric links 2 (a duplex ring lays ``q`` and
    ``n - q``, and ``[j = i + q]`` then reads ``[j = i + q or j = i - q]``; ``q = n/2`` uses 1 port).
    ``w_ijl = tau u_ijl`` exactly (McCormick on a binary), so ``B tau x_ij`` is linear without
    approximation. ``tau_max = (sum M + c) / B``: some optimal routing is acyclic, so no arc carries
    more than all the bytes. Each of the ``r`` rings carries ``1/r`` of the AllReduce on its own arcs.
    Scaled: bytes in units of the busiest sender, time in units of that many bytes over one port.
    """
    if len(instance.allreduce) != 1:
        raise ValueError("P2 is stated for exactly one AllReduce group")
    n, d = instance.servers, instance.degree
    group = instance.allreduce[0]
    unit = busiest_sender(instance)
    mp = mp_matrix(instance) / unit
    strides = ring_strides(instance)
    # every ring splits the AllReduce evenly over its directions (both for a duplex ring)
    directions = rings * max(ring_ports(n, q, instance.symmetric) for q in strides)
    ring_load = ring_bytes(group) / unit / directions
    tau_max = float(mp.sum()) + ring_bytes(group) / unit
    arcs = [(i, j) for i in range(n) for j in range(n) if i != j]
    pairs = [(i, j) for i, j in arcs if i < j]
    levels = range(1, d + 1)

    model = pyo.ConcreteModel(name="topoopt_P2")
    model.objective_unit = unit / instance.port_rate
    model.A = pyo.Set(initialize=arcs, dimen=2)
    model.ring = pyo.Var(strides, domain=pyo.Binary)
    model.match = pyo.Var(pairs, domain=pyo.NonNegativeIntegers, bounds=(0, d))
    model.unit_link = pyo.Var(model.A, levels, domain=pyo.Binary)
    model.scaled = pyo.Var(model.A, levels, domain=pyo.NonNegativeReals)
    model.flow = pyo.Var(range(n), model.A, domain=pyo.NonNegativeReals)
    model.tau = pyo.Var(bounds=(ring_load, tau_max))

    def on_ring(m: pyo.ConcreteModel, i: int, j: int) -> Any:
        forward = sum(m.ring[q] for q in strides if (i + q) % n == j)
        if not instance.symmetric:
            return forward
        return forward + sum(m.ring[q] for q in strides if 2 * q != n and (i - q) % n == j)

    ports = sum(ring_ports(n, q, instance.symmetric) * model.ring[q] for q in strides)
    model.ring_count = pyo.Constraint(expr=sum(model.ring[q] for q in strides) == rings)
    model.match_degree = pyo.Constraint(
        range(n),
        rule=lambda m, i: sum(m.match[min(i, j), max(i, j)] for j in range(n) if j != i) + ports == d,
    )
    model.expansion = pyo.Constraint(
        model.A,
        rule=lambda m, i, j: (
            on_ring(m, i, j) + m.match[min(i, j), max(i, j)] == sum(m.unit_link[i, j, l] for l in levels)
        ),
    )
    _add_link_time(model, levels, d, tau_max)
    _add_routing(model, n, mp, ring_load, on_ring, levels)
    model.obj = pyo.Objective(expr=model.tau, sense=pyo.minimize)
    return model


def _add_link_time(model: pyo.ConcreteModel, levels: range, d: int, tau_max: float) -> None:
    """``w_ijl = tau u_ijl`` exactly (McCormick on a binary), with the unary links ordered."""
    model.ordered = pyo.Constraint(
        model.A,
        levels,
        rule=lambda m, i, j, l: (
            m.unit_link[i, j, l + 1] <= m.unit_link[i, j, l] if l < d else pyo.Constraint.Skip
        ),
    )
    model.w_upper_u = pyo.Constraint(
        model.A, levels, rule=lambda m, i, j, l: m.scaled[i, j, l] <= tau_max * m.unit_link[i, j, l]
    )
    model.w_upper_tau = pyo.Constraint(model.A, levels, rule=lambda m, i, j, l: m.scaled[i, j, l] <= m.tau)
    model.w_lower = pyo.Constraint(
        model.A,
        levels,
        rule=lambda m, i, j, l: m.scaled[i, j, l] >= m.tau - tau_max * (1 - m.unit_link[i, j, l]),
    )


def _add_routing(model: pyo.ConcreteModel, n: int, mp: Any, ring_load: float,
                 on_ring: Callable[[pyo.ConcreteModel, int, int], Any], levels: range) -> None:
    """The model-parallel flows (one commodity per source) and the arc capacities they share with
    the rings, ``B tau x_ij`` in the scaled units."""

    def conservation(m: pyo.ConcreteModel, s: int, v: int) -> Any:
        net = sum(m.flow[s, v, j] for j in range(n) if j != v) - sum(
            m.flow[s, i, v] for i in range(n) if i != v
        )
        return net == (float(mp[s].sum()) if v == s else -float(mp[s, v]))

    model.conservation = pyo.Constraint(range(n), range(n), rule=conservation)
    model.capacity = pyo.Constraint(
        model.A,
        rule=lambda m, i, j: (
            sum(m.flow[s, i, j] for s in range(n)) + ring_load * on_ring(m, i, j)
            <= sum(m.scaled[i, j, l] for l in levels)
        ),
    )
