"""The disjunctive makespan MILP of the ``chase`` mapping problem (research notes 3.b (i)), with
the tightenings of the scheduling literature.

Data: tasks ``V`` (topological rank ``pi(v)``), edges ``E`` with data ``d_e``, devices ``P``;
``A(v)`` the devices that can run ``v``, ``t_vp`` its run time there; the routed transfer time
``c_e(p, q) = l_pq + d_e / B_pq`` (0 for ``p = q``); ``head_vp`` / ``tail_vp`` the conflict-free
earliest start of ``v`` on ``p`` and least time after it (:mod:`.schedule`); ``U`` the horizon:
the makespan of the incumbent (a checked schedule the runner hands in, the problem's warm start),
or without one the serial bound of :func:`.schedule.serial_bound` (every task on its fastest
device, one at a time: a makespan some schedule reaches, computed without a heuristic). Times are
divided by ``tau`` (objective in O(1); ``objective_unit = tau``): ``U`` with an incumbent, else
the critical-path lower bound (:func:`time_unit`).

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
* horizon ``C <= U``: ``U`` is the makespan of a feasible schedule (the incumbent's, or the
  serial schedule's bound), so every optimum has ``C* <= U``; in any schedule of makespan at
  most ``U`` every ``S_v`` lies in its window (by the two relaxations) and no ``v`` sits on a
  device where ``head + t + tail > U``; so the windows, the domain reduction and the big-M values
  (the largest left-hand side inside the windows) keep every schedule of makespan ``<= U``, the
  optima among them;
* symmetry: a class ``p_1 < ... < p_k`` of interchangeable devices (:func:`.schedule.device_classes`:
  equal run times and swappable routes for every pair, so every permutation of the class maps a
  schedule to one of equal makespan, windows and reductions included since they are symmetric).
  Relabel the devices of a class in the order of the first task (by ``pi``) each runs, unused
  devices last; then the first task of ``p_j`` comes after the first task of ``p_{j-1}``, so every
  task on ``p_j`` has an earlier task on ``p_{j-1}``: the row holds, and every solution has an
  equivalent one that satisfies it.

With an incumbent, its schedule is also the MILP start (relabelled to satisfy the symmetry rows);
``build`` never runs a heuristic itself. The checker counterpart of each row is listed in
:mod:`.model`.
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo

from coopt.problem import NoSolution, Solution
from coopt.problems.chase.model import Instance, Tables, make_solution
from coopt.problems.chase.schedule import (
    canonical,
    critical_path_bound,
    device_classes,
    heads,
    reachability,
    replay_order,
    semi_active,
    serial_bound,
    tails,
)

#: Slack of the horizon (relative), the windows and the big-M values (in units of ``tau``): far
#: above HiGHS' feasibility tolerance (1e-7 on the O(1) scaled times), so that presolve never reads
#: a window that rounding made narrower than that tolerance as empty (it then claims
#: infeasibility), and far below any difference between two makespans the tests tell apart. The
#: slack only widens the region, so nothing optimal is cut off.
HORIZON_SLACK = 1e-5
#: Largest number of incomparable pairs the MILP is built with (two binaries each).
MAX_PAIRS = 200_000


Start = tuple[list[int], list[float]]


def horizon(inst: Instance, incumbent: Solution | None) -> tuple[Start | None, float]:
    """The incumbent as index arrays (assignment, start times) and the horizon ``U``: its makespan,
    or the serial bound when there is none (then no start)."""
    tab = inst.tables
    if incumbent is None:
        return None, serial_bound(tab)
    device = {name: p for p, name in enumerate(tab.device_names)}
    assignment = [device[incumbent["assignment"][name]] for name in tab.task_names]
    start = [incumbent["start_s"][name] for name in tab.task_names]
    return (assignment, start), float(incumbent["objective"])


def build(inst: Instance, incumbent: Solution | None = None, *, pairs: bool = True) -> pyo.ConcreteModel:
    """The MILP above, within the horizon of ``incumbent`` (a checked schedule, also the MILP
    start) or, without one, of the serial bound. ``pairs=False`` leaves out the order variables
    and disjunctions (a relaxation whose LP scales to any size, used by the dual bound)."""
    tab = inst.tables
    start0, bound_u = horizon(inst, incumbent)
    head, tail = heads(tab), tails(tab)
    tau = time_unit(tab, head, tail, bound_u, cold=start0 is None)
    window = Windows(tab, head, tail, bound_u)
    classes = device_classes(inst) if pairs else []

    m = pyo.ConcreteModel(name="chase_makespan")
    m.objective_unit = tau
    _add_assignment(m, tab, window, tau)
    _add_cuts(m, tab, window.allowed, head, tail, tau)
    pair_list = incomparable_pairs(tab, window.allowed) if pairs else []
    _add_disjunctions(m, tab, window, pair_list, tau)
    _add_symmetry(m, tab, window.allowed, classes)
    m.warm_start = start0 is not None
    if start0 is not None:
        _set_start(m, inst, start0, classes, tau)
    m.tables = {"allowed": window.allowed, "pairs": len(pair_list), "classes": classes}
    return m


def time_unit(tab: Tables, head: list[list[float]], tail: list[list[float]], bound_u: float,
              cold: bool) -> float:
    """``tau``, the unit of every time in the model: the horizon ``U`` when it is an incumbent's
    makespan, else the critical-path lower bound, which lies below the optimum where the serial
    bound can lie far above it. HiGHS' absolute tolerances act on the scaled rows (the integrality
    tolerance times a big-M, summed along a chain of precedence rows), so the solver's value
    drifts from the optimum by a multiple of them in units of ``tau``: a unit near the optimum
    keeps that drift small (the extracted schedule is recomputed exactly). 1 where every time
    is 0."""
    unit = critical_path_bound(tab, head, tail) if cold else bound_u
    return unit if unit > 0 else (bound_u if bound_u > 0 else 1.0)


class Windows:
    """The devices each task may use within the horizon ``U`` (domain reduction) and its start
    window ``[earliest, latest]``; ``longest`` its longest run time there."""

    def __init__(self, tab: Tables, head: list[list[float]], tail: list[list[float]], bound_u: float):
        self.bound_u = bound_u
        limit = bound_u * (1 + HORIZON_SLACK)
        self.allowed = [[p for p in tab.compatible[v] if head[v][p] + tab.time[v][p] + tail[v][p] <= limit]
                        for v in range(tab.n)]
        if any(not a for a in self.allowed):  # cannot happen for a feasible horizon; say so if it does
            raise NoSolution("the horizon leaves a task without a device")
        allowed = self.allowed
        self.earliest = [min(head[v][p] for p in allowed[v]) for v in range(tab.n)]
        self.latest = [bound_u - min(tab.time[v][p] + tail[v][p] for p in allowed[v]) for v in range(tab.n)]
        self.longest = [max(tab.time[v][p] for p in allowed[v]) for v in range(tab.n)]


def _run(m: pyo.ConcreteModel, tab: Tables, allowed: list[list[int]], tau: float, v: int) -> Any:
    """The run time of ``v`` on its device, in units of ``tau``."""
    return sum(tab.time[v][p] / tau * m.x[v, p] for p in allowed[v])


def _add_assignment(m: pyo.ConcreteModel, tab: Tables, window: Windows, tau: float) -> None:
    """x, S, C, the objective, the assignment rows, z with its link rows, and precedence."""
    allowed, earliest, latest = window.allowed, window.earliest, window.latest
    m.V = pyo.RangeSet(0, tab.n - 1)
    m.XI = pyo.Set(initialize=[(v, p) for v in range(tab.n) for p in allowed[v]], dimen=2)
    m.x = pyo.Var(m.XI, domain=pyo.Binary)
    m.S = pyo.Var(m.V, bounds=lambda _, v: (max(0.0, earliest[v] / tau - HORIZON_SLACK),
                                         max(earliest[v], latest[v]) / tau + HORIZON_SLACK))
    m.C = pyo.Var(bounds=(0.0, window.bound_u / tau + HORIZON_SLACK))
    m.obj = pyo.Objective(expr=m.C, sense=pyo.minimize)
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
        return m.S[v] >= m.S[u] + _run(m, tab, allowed, tau, u) + transfer

    m.precedence = pyo.Constraint(m.E, rule=precedence)


def _add_cuts(m: pyo.ConcreteModel, tab: Tables, allowed: list[list[int]], head: list[list[float]],
              tail: list[list[float]], tau: float) -> None:
    """The tail, head and load cuts."""
    m.tail_cut = pyo.Constraint(m.V, rule=lambda _, v: m.S[v] + sum(
        (tab.time[v][p] + tail[v][p]) / tau * m.x[v, p] for p in allowed[v]) <= m.C)
    m.head_cut = pyo.Constraint(m.V, rule=lambda _, v: m.S[v] >= sum(
        head[v][p] / tau * m.x[v, p] for p in allowed[v]))
    m.load_cut = pyo.Constraint(range(tab.devices), rule=lambda _, p: sum(
        tab.time[v][p] / tau * m.x[v, p] for v in range(tab.n) if p in allowed[v]) <= m.C)


def incomparable_pairs(tab: Tables, allowed: list[list[int]]) -> list[tuple[int, int]]:
    """The pairs ``u < v`` that neither reaches the other and that share an allowed device."""
    reach = reachability(tab)
    pair_list = []
    for u in range(tab.n):
        for v in range(u + 1, tab.n):
            if (reach[u] >> v) & 1 or (reach[v] >> u) & 1:
                continue
            if set(allowed[u]) & set(allowed[v]):
                pair_list.append((u, v))
    if len(pair_list) > MAX_PAIRS:
        raise NoSolution(f"{len(pair_list)} task pairs need order variables, more than {MAX_PAIRS}")
    return pair_list


def _add_disjunctions(m: pyo.ConcreteModel, tab: Tables, window: Windows,
                      pair_list: list[tuple[int, int]], tau: float) -> None:
    """The order variables of the incomparable pairs and their disjunctive rows."""
    allowed, earliest, latest, longest = window.allowed, window.earliest, window.latest, window.longest
    m.PI = pyo.Set(initialize=pair_list, dimen=2)
    m.OI = pyo.Set(initialize=[k for u, v in pair_list for k in ((u, v), (v, u))], dimen=2)
    m.o = pyo.Var(m.OI, domain=pyo.Binary)
    m.same_device = pyo.Constraint(
        [(u, v, p) for u, v in pair_list for p in sorted(set(allowed[u]) & set(allowed[v]))],
        rule=lambda _, u, v, p: m.o[u, v] + m.o[v, u] >= m.x[u, p] + m.x[v, p] - 1)
    m.one_order = pyo.Constraint(m.PI, rule=lambda _, u, v: m.o[u, v] + m.o[v, u] <= 1)

    def big_m(u: int, v: int) -> float:
        return max(0.0, latest[u] + longest[u] - earliest[v]) / tau + 2 * HORIZON_SLACK

    m.disjunction = pyo.Constraint(m.OI, rule=lambda _, u, v: m.S[v] >= m.S[u] + _run(
        m, tab, allowed, tau, u) - big_m(u, v) * (1 - m.o[u, v]))


def _add_symmetry(m: pyo.ConcreteModel, tab: Tables, allowed: list[list[int]],
                  classes: list[list[int]]) -> None:
    """The symmetry rows of the classes of identical devices."""
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


def _set_start(m: pyo.ConcreteModel, inst: Instance, start0: Start, classes: list[list[int]],
               tau: float) -> None:
    """The incumbent's schedule as the MILP start, relabelled to satisfy the symmetry rows."""
    tab = inst.tables
    order = replay_order(tab, *start0)
    assignment = canonical(inst, start0[0], classes)
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
