"""Schedules of the ``chase`` problem as index arrays, and the relaxations every method shares.

* :func:`replay_order` turns start times into the order a runtime replays them in;
* :func:`semi_active` is the decoder: for an assignment and a topological order, every task starts
  as soon as its device is free and its inputs have arrived (contention-free). Every optimal
  schedule is the decoding of its own start-time order with its own assignment, with no task
  later (by induction along the order: each predecessor and each earlier task of the device
  finishes no later than in the optimal schedule), so searching (assignment, order) loses nothing;
* :func:`heads` and :func:`tails` are the earliest start of a task on a device and the least time
  after it finishes there until the makespan (Arabnejad and Barbosa's optimistic cost table with
  the routed transfer times of this instance), both ignoring device conflicts: relaxations, so
  ``S_v >= head(v, p)`` and ``C >= S_v + t_v(p) + tail(v, p)`` hold in every schedule with ``v``
  on ``p``;
* :func:`serial_bound` is a makespan every instance can reach (the MILP's horizon without a warm
  start);
* :func:`device_classes` finds interchangeable devices (the MILP's symmetry breaking), and
  :func:`automorphisms` every relabelling of the devices that keeps the makespan of every schedule
  (swapping whole servers, for example);
* :func:`objective_grid` is the unit the optimal makespan is a multiple of, where there is one.
"""

from __future__ import annotations

import heapq
import math
from itertools import permutations
from typing import TYPE_CHECKING

from coopt.problem import grid_of

if TYPE_CHECKING:
    from coopt.problems.chase.instance import Instance, Tables


def replay_order(tab: Tables, assignment: list[int], start: list[float]) -> list[int]:
    """A topological order that lists tasks by start time wherever precedence allows (Kahn's
    algorithm, the ready task with the smallest (start, topological rank) first). Each device then
    runs its tasks in the order they appear here; for start times that respect precedence this is
    the start-time order itself."""
    indegree = [len(p) for p in tab.preds]
    ready = [(start[v], tab.position[v], v) for v in range(tab.n) if indegree[v] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, _, v = heapq.heappop(ready)
        order.append(v)
        for s, _ in tab.succs[v]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, (start[s], tab.position[s], s))
    return order


def semi_active(tab: Tables, assignment: list[int], order: list[int]) -> tuple[list[float], float]:
    """(start times, makespan) of the semi-active schedule of ``assignment`` in ``order`` (a
    topological order; each device runs its tasks in the order they appear). O(n + e)."""
    time, latency, inverse, data = tab.time, tab.latency, tab.inverse_bandwidth, tab.data
    free = [0.0] * tab.devices
    start = [0.0] * tab.n
    finish = [0.0] * tab.n
    span = 0.0
    for v in order:
        p = assignment[v]
        ready = free[p]
        for u, e in tab.preds[v]:
            q = assignment[u]
            arrive = finish[u] if q == p else finish[u] + latency[q][p] + data[e] * inverse[q][p]
            if arrive > ready:
                ready = arrive
        start[v] = ready
        end = ready + time[v][p]
        finish[v] = end
        free[p] = end
        if end > span:
            span = end
    return start, span


def heads(tab: Tables) -> list[list[float]]:
    """``head[v][p]``: earliest start of ``v`` on ``p`` when every predecessor chain runs on its
    best devices with no conflicts (``max_u min_q head(u,q) + t_u(q) + c_uv(q, p)``; inf where
    ``v`` cannot run on ``p``). O(e P^2)."""
    P = tab.devices
    head = [[math.inf] * P for _ in range(tab.n)]
    for v in tab.topo:
        for p in tab.compatible[v]:
            best = 0.0
            for u, e in tab.preds[v]:
                arrive = min(head[u][q] + tab.time[u][q] + tab.comm(e, q, p) for q in tab.compatible[u])
                if arrive > best:
                    best = arrive
            head[v][p] = best
    return head


def tails(tab: Tables) -> list[list[float]]:
    """``tail[v][p]``: least time from the end of ``v`` on ``p`` to the end of the schedule
    (``max_s min_q c_vs(p, q) + t_s(q) + tail(s, q)``, 0 for exit tasks; inf where ``v`` cannot run
    on ``p``): the optimistic cost table of PEFT with routed transfer times. O(e P^2)."""
    P = tab.devices
    tail = [[math.inf] * P for _ in range(tab.n)]
    for v in reversed(tab.topo):
        for p in tab.compatible[v]:
            best = 0.0
            for s, e in tab.succs[v]:
                rest = min(tab.comm(e, p, q) + tab.time[s][q] + tail[s][q] for q in tab.compatible[s])
                if rest > best:
                    best = rest
            tail[v][p] = best
    return tail


def critical_path_bound(tab: Tables, head: list[list[float]] | None = None,
                        tail: list[list[float]] | None = None) -> float:
    """``max_v min_p head(v,p) + t_v(p) + tail(v,p)``: no schedule is shorter."""
    head = heads(tab) if head is None else head
    tail = tails(tab) if tail is None else tail
    return max(min(head[v][p] + tab.time[v][p] + tail[v][p] for p in tab.compatible[v]) for v in range(tab.n))


def serial_bound(tab: Tables) -> float:
    """An upper bound on the optimal makespan computed without any heuristic: ``sum_v t_v(p_v) +
    sum_e c_e(p_u, p_v)`` with every task on its fastest device ``p_v`` (the first on ties).
    Proof: run the tasks one at a time in topological order on those devices, each as soon as the
    previous one has finished and its inputs have arrived. A task starts at most the longest
    transfer into it after the previous task ends, so the last one ends by the sum of all run
    times and of all transfers: a feasible schedule of that makespan exists. O(n P + e)."""
    fastest = [min(tab.compatible[v], key=lambda p: tab.time[v][p]) for v in range(tab.n)]
    run_times = sum(tab.time[v][fastest[v]] for v in range(tab.n))
    transfers = sum(tab.comm(e, fastest[u], fastest[v])
                    for e, (u, v) in enumerate(zip(tab.source, tab.target, strict=True)))
    return run_times + transfers


def device_classes(inst: Instance) -> list[list[int]]:
    """Classes of interchangeable devices (at least two each, ascending): every pair of a class
    has the same run time for every task (same compatibility) and is swappable in the routing
    table (:meth:`.hardware.Hardware.swappable`), so exchanging any two maps every schedule to
    one of the same makespan and the symmetric group of the class acts on the solutions."""
    tab, hw = inst.tables, inst.hardware
    P = tab.devices
    columns = [tuple(tab.time[v][p] for v in range(tab.n)) for p in range(P)]

    def same(p: int, s: int) -> bool:
        return columns[p] == columns[s] and hw.swappable(p, s)

    classes, placed = [], [False] * P
    for p in range(P):
        if placed[p]:
            continue
        members = [p]
        for s in range(p + 1, P):
            if not placed[s] and all(same(m, s) for m in members):
                members.append(s)
        for s in members:
            placed[s] = True
        if len(members) > 1:
            classes.append(members)
    return classes


def automorphisms(tab: Tables, most: int = 8) -> list[tuple[int, ...]]:
    """Every permutation ``g`` of the devices (as ``g[p]``, the identity included) under which each
    task has the same compatibility and run time on ``g[p]`` as on ``p`` and every transfer the same
    time between ``g[p]`` and ``g[q]`` as between ``p`` and ``q`` (route latency and inverse
    bandwidth equal, so ``c_e(g p, g q) = c_e(p, q)`` for every edge): moving every task of a
    schedule from ``p`` to ``g[p]`` keeps every start feasible, so the makespan, and the permutations
    form a group. Enumerated for at most ``most`` devices (``P!`` candidates), else the identity
    alone (a subgroup: any use of it stays valid)."""
    P = tab.devices
    identity = tuple(range(P))
    if most < P:
        return [identity]
    columns = [tuple(tab.time[v][p] if p in tab.compatible[v] else None for v in range(tab.n))
               for p in range(P)]
    links = [[(tab.latency[p][q], tab.inverse_bandwidth[p][q]) for q in range(P)] for p in range(P)]
    found = []
    for g in permutations(range(P)):
        if all(columns[g[p]] == columns[p] for p in range(P)) and all(
                links[g[p]][g[q]] == links[p][q] for p in range(P) for q in range(P) if p != q):
            found.append(g)
    return found


def canonical(inst: Instance, assignment: list[int], classes: list[list[int]]) -> list[int]:
    """The assignment with each class of identical devices relabelled in the order of the first
    task (by topological rank ``pi``, the order of the symmetry rows) each device runs, unused
    devices last: it satisfies the symmetry rows."""
    rank = inst.tables.position
    relabel = list(range(inst.n_devices))
    for members in classes:
        first = {p: min((rank[v] for v in range(inst.n_tasks) if assignment[v] == p), default=inst.n_tasks)
                 for p in members}
        ranked = sorted(members, key=lambda p: (first[p], p))
        for new, old in zip(members, ranked, strict=True):
            relabel[old] = new
    return [relabel[p] for p in assignment]


def reachability(tab: Tables) -> list[int]:
    """``reach[u]``: the tasks reachable from ``u`` along edges, as a bit set (bit ``v``)."""
    reach = [0] * tab.n
    for u in reversed(tab.topo):
        bits = 0
        for v, _ in tab.succs[u]:
            bits |= (1 << v) | reach[v]
        reach[u] = bits
    return reach


def objective_grid(inst: Instance) -> float | None:
    """The largest unit (:func:`coopt.problem.grid_of`) of which every run time on a compatible
    device and every transfer time between two distinct compatible devices is a multiple, or None.
    The optimal makespan is then a multiple of it: some optimum is the semi-active schedule of its
    assignment and order (:func:`semi_active`, module docstring), whose makespan is the length of
    a path of run times and transfer times."""
    tab = inst.tables
    values = [tab.time[v][p] for v in range(tab.n) for p in tab.compatible[v]]
    for e, (u, v) in enumerate(zip(tab.source, tab.target, strict=True)):
        values += [tab.comm(e, p, q) for p in tab.compatible[u] for q in tab.compatible[v] if p != q]
    return grid_of(values)
