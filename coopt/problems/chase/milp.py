"""The disjunctive makespan MILP of the ``chase`` mapping problem (research notes 3.b (i)), with
the tightenings of the scheduling literature.

Data: tasks ``V`` (topological rank ``pi(v)``), edges ``E`` with data ``d_e``, devices ``P``;
``A(v)`` the devices that can run ``v``, ``t_vp`` its run time there; the routed transfer time
``c_e(p, q) = l_pq + d_e / B_pq`` (0 for ``p = q``); ``head_vp`` / ``tail_vp`` the conflict-free
earliest start of ``v`` on ``p`` and least time after it (:mod:`.schedule`); ``U`` the makespan of
a heuristic schedule (the warm start). Times are divided by ``tau = U`` (objective in O(1);
``objective_unit = tau``).

Variables: ``x_vp`` binary (``v`` on ``p``); ``S_v >= 0`` start; ``z_epq in [0, 1]`` for ``e = (u,
v)`` (``= x_up x_vq``); ``o_uv``, ``o_vu`` binary for every incomparable pair (neither reaches the
other) that shares a device (``u`` before ``v`` on one device); ``C`` the makespan::

    min C
    sum_{p in A(v)} x_vp = 1                                         (assign)
    sum_q z_epq = x_up,  sum_p z_epq = x_vq                          (link: z is the product)
    S_v >= S_u + sum_p t_up x_up + sum_{p != q} c_e(p,q) z_epq       (precedence)
    o_uv + o_vu >= x_up + x_vp - 1   for p in A(u) & A(v)            (same device: ordered)
    o_uv + o_vu <= 1
    S_v >= S_u + sum_p t_up x_up - M_uv (1 - o_uv)                   (disjunction, both ways)
    C >= S_v + sum_p (t_vp + tail_vp) x_vp                           (tail cut, implies C >= finish)
    S_v >= sum_p head_vp x_vp                                        (head cut)
    C >= sum_v t_vp x_vp            for every device p               (load cut)
    x_{v, p_j} <= sum_{pi(u) < pi(v)} x_{u, p_{j-1}}                 (symmetry, identical devices)
    C <= U;  head_min(v) <= S_v <= U - min_p (t_vp + tail_vp)        (horizon and windows)
    x_vp = 0 where head_vp + t_vp + tail_vp > U                      (domain reduction)

with ``M_uv = (U - min_p (t_up + tail_up)) + max_p t_up - head_min(v)`` (the largest ``S_u + t_u -
S_v`` inside the windows). Comparable pairs need no order variable: precedence already orders them
(transfer times and run times are >= 0).

Why nothing optimal is lost (each restriction, with its proof):

* heads, tails, loads: valid inequalities; in every schedule ``v`` on ``p`` starts no earlier
  than ``head_vp`` and the schedule lasts at least ``t_vp + tail_vp`` after ``v`` starts (both are
  conflict-free relaxations), and a device's load is a lower bound on the makespan;
* horizon ``C <= U``: ``U`` is the makespan of a feasible schedule, so every optimum has ``C* <=
  U``; in any schedule of makespan at most ``U`` every ``S_v`` lies in its window (by the two
  relaxations) and no ``v`` sits on a device where ``head + t + tail > U``; so the windows, the
  domain reduction and the big-M values (the largest left-hand side inside the windows) keep
  every schedule of makespan ``<= U``, the optima among them;
* symmetry: a class ``p_1 < ... < p_k`` of interchangeable devices (:func:`.schedule.device_classes`:
  equal run times and swappable routes for every pair, so every permutation of the class maps a
  schedule to one of equal makespan, windows and reductions included since they are symmetric).
  Relabel the devices of a class in the order of the first task (by ``pi``) each runs, unused
  devices last; then the first task of ``p_j`` comes after the first task of ``p_{j-1}``, so every
  task on ``p_j`` has an earlier task on ``p_{j-1}``: the row holds, and every solution has an
  equivalent one that satisfies it.

The warm start is the best heuristic's schedule (relabelled to satisfy the symmetry rows). The
checker counterpart of each row is listed in :mod:`.model`.
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo

from coopt.problem import NoSolution, Solution
from coopt.problems.chase.model import Instance, make_solution
from coopt.problems.chase.schedule import (
    canonical,
    device_classes,
    heads,
    reachability,
    replay_order,
    semi_active,
    tails,
)

#: Slack of the horizon, the windows and the big-M values, in units of the horizon: far above
#: HiGHS' feasibility tolerance (1e-7 on the O(1) scaled times), so that presolve never reads a
#: window that rounding made narrower than that tolerance as empty (it then claims infeasibility),
#: and far below any difference between two makespans the tests tell apart. The slack only
#: widens the region, so nothing optimal is cut off.
HORIZON_SLACK = 1e-5
#: Largest number of incomparable pairs the MILP is built with (two binaries each).
MAX_PAIRS = 200_000


def incumbent(inst: Instance) -> tuple[list[int], list[float], float]:
    """The warm start: the best heuristic schedule (assignment, start times, makespan)."""
    from coopt.problems.chase.mapping import local_search

    solution = local_search(inst)
    tab = inst.tables
    device = {name: p for p, name in enumerate(tab.device_names)}
    assignment = [device[solution["assignment"][name]] for name in tab.task_names]
    start = [solution["start_s"][name] for name in tab.task_names]
    return assignment, start, solution["objective"]


def build(inst: Instance, *, pairs: bool = True, upper: tuple[list[int], list[float], float] | None = None
          ) -> pyo.ConcreteModel:
    """The MILP above. ``pairs=False`` leaves out the order variables and disjunctions (a
    relaxation whose LP scales to any size, used by the dual bound); ``upper`` replaces the
    heuristic warm start (assignment, starts, makespan)."""
    tab = inst.tables
    P = tab.devices
    assignment0, start0, bound_u = upper if upper is not None else incumbent(inst)
    tau = bound_u
    head, tail = heads(tab), tails(tab)
    limit = bound_u * (1 + HORIZON_SLACK)
    allowed = [[p for p in tab.compatible[v] if head[v][p] + tab.time[v][p] + tail[v][p] <= limit]
               for v in range(tab.n)]
    if any(not a for a in allowed):  # cannot happen for a feasible warm start; say so if it does
        raise NoSolution("the horizon of the warm start leaves a task without a device")
    classes = device_classes(inst) if pairs else []
    earliest = [min(head[v][p] for p in allowed[v]) for v in range(tab.n)]
    latest = [bound_u - min(tab.time[v][p] + tail[v][p] for p in allowed[v]) for v in range(tab.n)]
    longest = [max(tab.time[v][p] for p in allowed[v]) for v in range(tab.n)]

    m = pyo.ConcreteModel(name="chase_makespan")
    m.objective_unit = tau
    m.V = pyo.RangeSet(0, tab.n - 1)
    m.XI = pyo.Set(initialize=[(v, p) for v in range(tab.n) for p in allowed[v]], dimen=2)
    m.x = pyo.Var(m.XI, domain=pyo.Binary)
    m.S = pyo.Var(m.V, bounds=lambda _, v: (max(0.0, earliest[v] / tau - HORIZON_SLACK),
                                         max(earliest[v], latest[v]) / tau + HORIZON_SLACK))
    m.C = pyo.Var(bounds=(0.0, 1.0 + HORIZON_SLACK))
    m.obj = pyo.Objective(expr=m.C, sense=pyo.minimize)

    def run(v: int) -> Any:
        return sum(tab.time[v][p] / tau * m.x[v, p] for p in allowed[v])

    m.assign = pyo.Constraint(m.V, rule=lambda _, v: sum(m.x[v, p] for p in allowed[v]) == 1)
    z_index = [(e, p, q) for e in range(len(tab.data))
               for p in allowed[tab.source[e]] for q in allowed[tab.target[e]]]
    m.ZI = pyo.Set(initialize=z_index, dimen=3)
    m.z = pyo.Var(m.ZI, bounds=(0.0, 1.0))
    m.E = pyo.RangeSet(0, len(tab.data) - 1) if tab.data else pyo.Set(initialize=[])
    m.link_out = pyo.Constraint(
        [(e, p) for e in range(len(tab.data)) for p in allowed[tab.source[e]]],
        rule=lambda _, e, p: sum(m.z[e, p, q] for q in allowed[tab.target[e]]) == m.x[tab.source[e], p])
    m.link_in = pyo.Constraint(
        [(e, q) for e in range(len(tab.data)) for q in allowed[tab.target[e]]],
        rule=lambda _, e, q: sum(m.z[e, p, q] for p in allowed[tab.source[e]]) == m.x[tab.target[e], q])

    def precedence(_: Any, e: int) -> Any:
        u, v = tab.source[e], tab.target[e]
        transfer = sum(tab.comm(e, p, q) / tau * m.z[e, p, q]
                       for p in allowed[u] for q in allowed[v] if p != q)
        return m.S[v] >= m.S[u] + run(u) + transfer

    m.precedence = pyo.Constraint(m.E, rule=precedence)
    m.tail_cut = pyo.Constraint(m.V, rule=lambda _, v: m.S[v] + sum(
        (tab.time[v][p] + tail[v][p]) / tau * m.x[v, p] for p in allowed[v]) <= m.C)
    m.head_cut = pyo.Constraint(m.V, rule=lambda _, v: m.S[v] >= sum(
        head[v][p] / tau * m.x[v, p] for p in allowed[v]))
    m.load_cut = pyo.Constraint(range(P), rule=lambda _, p: sum(
        tab.time[v][p] / tau * m.x[v, p] for v in range(tab.n) if p in allowed[v]) <= m.C)

    pair_list: list[tuple[int, int]] = []
    if pairs:
        reach = reachability(tab)
        for u in range(tab.n):
            for v in range(u + 1, tab.n):
                if (reach[u] >> v) & 1 or (reach[v] >> u) & 1:
                    continue
                if set(allowed[u]) & set(allowed[v]):
                    pair_list.append((u, v))
        if len(pair_list) > MAX_PAIRS:
            raise NoSolution(f"{len(pair_list)} task pairs need order variables, more than {MAX_PAIRS}")
    m.PI = pyo.Set(initialize=pair_list, dimen=2)
    m.OI = pyo.Set(initialize=[k for u, v in pair_list for k in ((u, v), (v, u))], dimen=2)
    m.o = pyo.Var(m.OI, domain=pyo.Binary)
    m.same_device = pyo.Constraint(
        [(u, v, p) for u, v in pair_list for p in sorted(set(allowed[u]) & set(allowed[v]))],
        rule=lambda _, u, v, p: m.o[u, v] + m.o[v, u] >= m.x[u, p] + m.x[v, p] - 1)
    m.one_order = pyo.Constraint(m.PI, rule=lambda _, u, v: m.o[u, v] + m.o[v, u] <= 1)

    def big_m(u: int, v: int) -> float:
        return max(0.0, latest[u] + longest[u] - earliest[v]) / tau + 2 * HORIZON_SLACK

    m.disjunction = pyo.Constraint(
        m.OI, rule=lambda _, u, v: m.S[v] >= m.S[u] + run(u) - big_m(u, v) * (1 - m.o[u, v]))

    symmetry = []
    for members in classes:
        for j in range(1, len(members)):
            for v in range(tab.n):
                if members[j] in allowed[v]:
                    symmetry.append((members[j - 1], members[j], v))
    def symmetry_row(_: Any, k: int) -> Any:
        before, after, v = symmetry[k]
        earlier = [u for u in range(tab.n) if tab.position[u] < tab.position[v] and before in allowed[u]]
        return m.x[v, after] <= sum(m.x[u, before] for u in earlier)

    m.symmetry = pyo.Constraint(range(len(symmetry)), rule=symmetry_row)

    # warm start: the heuristic schedule, relabelled to satisfy the symmetry rows
    order = replay_order(tab, assignment0, start0)
    assignment = canonical(inst, assignment0, classes)
    start, span = semi_active(tab, assignment, order)
    position = {v: i for i, v in enumerate(order)}
    for v, p in m.XI:
        m.x[v, p].value = 1.0 if assignment[v] == p else 0.0
    for v in range(tab.n):
        m.S[v].value = start[v] / tau
    m.C.value = span / tau
    for e, p, q in m.ZI:
        m.z[e, p, q].value = 1.0 if (assignment[tab.source[e]], assignment[tab.target[e]]) == (p, q) else 0.0
    for u, v in m.OI:
        m.o[u, v].value = 1.0 if assignment[u] == assignment[v] and position[u] < position[v] else 0.0
    m.warm_start = True
    m.tables = {"allowed": allowed, "pairs": len(pair_list), "classes": classes}
    return m


def extract(m: pyo.ConcreteModel, inst: Instance) -> Solution:
    """The mapping of the solved model, compacted to its semi-active schedule (start times are
    recomputed from the assignment and the model's order, so no solver rounding reaches them)."""
    tab = inst.tables
    assignment = [0] * tab.n
    for v in range(tab.n):
        assignment[v] = max(m.tables["allowed"][v], key=lambda p: (pyo.value(m.x[v, p]), -p))
    start = [pyo.value(m.S[v]) * m.objective_unit for v in range(tab.n)]
    order = replay_order(tab, assignment, start)
    tight, _ = semi_active(tab, assignment, order)
    return make_solution(inst, assignment, tight)
