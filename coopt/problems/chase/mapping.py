"""Heuristics of the ``chase`` mapping problem: HEFT, CPOP and PEFT as their papers state them,
the topology-aware mapper of CHASE, and our iterated local search.

Symbols as in :mod:`coopt.problems.chase`: ``n`` tasks, ``e`` edges, ``P`` devices. Every
heuristic returns the contention-free semi-active schedule of the mapping it chose (assignment and
per-device order; :func:`coopt.problems.chase.schedule.semi_active`), so its objective is the
makespan the MILP optimises, and the solution carries the simulated makespan with contention.

Averages (HEFT, CPOP, PEFT). Topcuoglu et al. 2002 (section 3) average a task's run time over the
processors and an edge's cost as ``c_bar = L_bar + d / B_bar`` with ``L_bar`` the mean start-up
latency and ``B_bar`` the mean transfer rate between processors; we take the means over the
task's compatible devices and over ordered device pairs ``p != q`` of the routing table, as
``mackncheesiest/heft`` does (heft/heft.py lines 213-223, commit 591508e: masked mean over finite
run times, off-diagonal mean of the bandwidth matrix). PEFT (Arabnejad and Barbosa 2014,
section 4, eq. 6-8) uses the same average edge cost ``c_bar`` inside its optimistic cost table;
``ANRGUSC/saga`` uses the actual link cost instead (src/saga/schedulers/peft.py lines 12-20,
commit 29defc0), which we do not follow: our baseline is the paper's.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator
import random
from collections.abc import Callable, Iterator

from coopt.problem import Solution
from coopt.problems.chase.model import Instance, Tables, make_solution
from coopt.problems.chase.schedule import (
    canonical,
    critical_path_bound,
    device_classes,
    replay_order,
    semi_active,
    tails,
)

# -- shared machinery ----------------------------------------------------------------------------


class Timeline:
    """The busy intervals of one device, sorted; :meth:`earliest` is the insertion policy of
    HEFT (the earliest idle gap after ``ready`` that holds the task). O(log k + gaps scanned)."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def earliest(self, ready: float, duration: float) -> float:
        i = bisect.bisect_right(self.ends, ready)
        t = ready
        while i < len(self.starts):
            if t + duration <= self.starts[i]:
                return t
            if self.ends[i] > t:
                t = self.ends[i]
            i += 1
        return t

    def insert(self, start: float, end: float) -> None:
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)


def mean_edge_costs(tab: Tables) -> list[float]:
    """Topcuoglu's ``c_bar_e = L_bar + d_e / B_bar`` over ordered device pairs (0 with one device)."""
    P = tab.devices
    pairs = [(p, q) for p in range(P) for q in range(P) if p != q]
    if not pairs:
        return [0.0] * len(tab.data)
    mean_latency = sum(tab.latency[p][q] for p, q in pairs) / len(pairs)
    mean_bandwidth = sum(1.0 / tab.inverse_bandwidth[p][q] for p, q in pairs) / len(pairs)
    return [mean_latency + d / mean_bandwidth for d in tab.data]


def mean_times(tab: Tables) -> list[float]:
    """Mean run time of each task over its compatible devices."""
    return [sum(tab.time[v][p] for p in tab.compatible[v]) / len(tab.compatible[v]) for v in range(tab.n)]


def upward_ranks(tab: Tables, edge_cost: list[float], times: list[float]) -> list[float]:
    """``rank_u(v) = w_bar_v + max_s (c_bar_vs + rank_u(s))`` (Topcuoglu et al. 2002, eq. 4)."""
    rank = [0.0] * tab.n
    for v in reversed(tab.topo):
        rank[v] = times[v] + max((edge_cost[e] + rank[s] for s, e in tab.succs[v]), default=0.0)
    return rank


def rank_keys(rank: list[float]) -> list[tuple[float, int]]:
    """Sort keys for "decreasing rank, lower index on ties", ranks equal to 1e-9 of the largest
    counting as ties (the papers' ties are exact; floating point splits them)."""
    top = max((abs(r) for r in rank), default=0.0) or 1.0
    return [(-round(r / top, 9), v) for v, r in enumerate(rank)]


def rank_order(tab: Tables, rank: list[float]) -> list[int]:
    """Tasks by decreasing ``rank`` (ties within 1e-9 of the largest rank: the lower index first),
    taken as a ready list so that the order stays topological even where floating point makes a
    predecessor's rank no larger than its successor's (tasks far shorter than the ranks)."""
    key = rank_keys(rank)
    waiting = [len(tab.preds[v]) for v in range(tab.n)]
    ready = [key[v] for v in range(tab.n) if not waiting[v]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, v = heapq.heappop(ready)
        order.append(v)
        for s, _ in tab.succs[v]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, key[s])
    return order


def downward_ranks(tab: Tables, edge_cost: list[float], times: list[float]) -> list[float]:
    """``rank_d(v) = max_u (rank_d(u) + w_bar_u + c_bar_uv)`` (Topcuoglu et al. 2002, eq. 5)."""
    rank = [0.0] * tab.n
    for v in tab.topo:
        rank[v] = max((rank[u] + times[u] + edge_cost[e] for u, e in tab.preds[v]), default=0.0)
    return rank


class Builder:
    """A schedule under construction: insertion-based earliest start on every device."""

    def __init__(self, tab: Tables):
        self.tab = tab
        self.lines = [Timeline() for _ in range(tab.devices)]
        self.device = [-1] * tab.n
        self.start = [0.0] * tab.n
        self.finish = [0.0] * tab.n

    def ready(self, v: int, p: int) -> float:
        """When every input of ``v`` would be on device ``p``."""
        tab = self.tab
        t = 0.0
        for u, e in tab.preds[v]:
            arrive = self.finish[u] + tab.comm(e, self.device[u], p)
            if arrive > t:
                t = arrive
        return t

    def eft(self, v: int, p: int) -> tuple[float, float]:
        """(earliest start, earliest finish) of ``v`` on ``p`` with insertion."""
        duration = self.tab.time[v][p]
        begin = self.lines[p].earliest(self.ready(v, p), duration)
        return begin, begin + duration

    def place(self, v: int, p: int, begin: float) -> None:
        end = begin + self.tab.time[v][p]
        self.device[v], self.start[v], self.finish[v] = p, begin, end
        self.lines[p].insert(begin, end)

    def best_eft(self, v: int, devices: list[int], extra: Callable[[int], float] | None = None) -> None:
        """Place ``v`` on the device of least EFT (plus ``extra(p)``), the first such on ties."""
        best = None
        for p in devices:
            begin, end = self.eft(v, p)
            key = end + (extra(p) if extra is not None else 0.0)
            if best is None or key < best[0]:
                best = (key, p, begin)
        self.place(v, best[1], best[2])


Mapping = tuple[list[int], list[int]]  # (device per task, topological order)


def compacted(inst: Instance, mapping: Mapping) -> Solution:
    """The solution of a mapping: its semi-active schedule (never later than the start times the
    mapping came from), with the simulated makespan."""
    assignment, order = mapping
    start, _ = semi_active(inst.tables, assignment, order)
    return make_solution(inst, assignment, start)


def mapping_of(build: Builder) -> Mapping:
    """The assignment of a finished schedule and the order its start times give."""
    return build.device, replay_order(build.tab, build.device, build.start)


# -- the papers' list schedulers -----------------------------------------------------------------


def heft(inst: Instance, seed: int = 0) -> Solution:
    """HEFT: tasks by decreasing upward rank, each on the device of least earliest finish time
    with the insertion policy.

    Guarantee: a feasible schedule; none on its quality (list scheduling). Running time
    O(e P + n P g), ``g`` the idle gaps scanned per device (at most the tasks placed there).
    Source: Topcuoglu, Hariri, Wu, "Performance-effective and low-complexity task scheduling for
    heterogeneous computing", IEEE TPDS 13(3), 2002, section 4.1 (Fig. 3); averages as in the
    module docstring; ties: the lower task index first (stable sort, mackncheesiest/heft
    heft/heft.py line 115; ranks equal to 1e-9 count as ties, and the order is kept topological,
    :func:`rank_order`) and the first device of least EFT (line 166). Topcuoglu's 10-task
    example gives 80 (tests/test_chase.py). ``seed`` is unused (deterministic)."""
    return compacted(inst, heft_mapping(inst.tables))


def heft_mapping(tab: Tables) -> Mapping:
    rank = upward_ranks(tab, mean_edge_costs(tab), mean_times(tab))
    build = Builder(tab)
    for v in rank_order(tab, rank):
        build.best_eft(v, tab.compatible[v])
    return mapping_of(build)


def cpop(inst: Instance, seed: int = 0) -> Solution:
    """CPOP: priority ``rank_u + rank_d``; the tasks of one critical path (followed from the entry
    of largest priority through successors of equal priority) all go to the one device that runs
    them fastest in total, the others to their least-EFT device; tasks leave a ready queue by
    decreasing priority (ties: lower index).

    Guarantee: a feasible schedule. Running time O(e P + n P g + n log n). Source: Topcuoglu et
    al. 2002, section 4.2 (Fig. 5). Where no device can run every critical-path task, the critical
    path tasks are placed by EFT like the others. ``seed`` is unused."""
    return compacted(inst, cpop_mapping(inst.tables))


def cpop_mapping(tab: Tables) -> Mapping:
    costs, times = mean_edge_costs(tab), mean_times(tab)
    up, down = upward_ranks(tab, costs, times), downward_ranks(tab, costs, times)
    priority = [up[v] + down[v] for v in range(tab.n)]
    entries = [v for v in range(tab.n) if not tab.preds[v]]
    current = max(entries, key=lambda v: (priority[v], -v))
    length = priority[current]
    path = [current]
    while tab.succs[current]:
        following = [s for s, _ in tab.succs[current] if math.isclose(priority[s], length, rel_tol=1e-9)]
        if not following:
            break
        current = min(following)
        path.append(current)
    on_path = set(path)
    shared = [p for p in range(tab.devices) if all(math.isfinite(tab.time[v][p]) for v in path)]
    cp_device = min(shared, key=lambda p: (sum(tab.time[v][p] for v in path), p)) if shared else None
    build = Builder(tab)
    waiting = [len(tab.preds[v]) for v in range(tab.n)]
    key = rank_keys(priority)
    ready = [key[v] for v in entries]
    heapq.heapify(ready)
    while ready:
        _, v = heapq.heappop(ready)
        if v in on_path and cp_device is not None:
            begin, _ = build.eft(v, cp_device)
            build.place(v, cp_device, begin)
        else:
            build.best_eft(v, tab.compatible[v])
        for s, _ in tab.succs[v]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, key[s])
    return mapping_of(build)


def optimistic_cost_table(tab: Tables, edge_cost: list[float]) -> list[list[float]]:
    """PEFT's ``OCT(v, p) = max_s min_q (OCT(s, q) + w(s, q) + [q != p] c_bar_vs)``, 0 for exit
    tasks (Arabnejad and Barbosa 2014, eq. 7), over compatible devices. O(e P^2)."""
    P = tab.devices
    table = [[0.0] * P for _ in range(tab.n)]
    for v in reversed(tab.topo):
        row = table[v]
        for p in range(P):
            worst = 0.0
            for s, e in tab.succs[v]:
                best = min(table[s][q] + tab.time[s][q] + (edge_cost[e] if q != p else 0.0)
                           for q in tab.compatible[s])
                if best > worst:
                    worst = best
            row[p] = worst
    return table


def peft(inst: Instance, seed: int = 0) -> Solution:
    """PEFT: rank by the mean optimistic cost ``rank_oct``; the ready task of largest rank goes
    to the device minimising ``EFT + OCT`` (insertion policy).

    Guarantee: a feasible schedule. Running time O(e P^2 + n P g + n^2) (the ready list is
    scanned). Source: Arabnejad and Barbosa, "List scheduling algorithm for heterogeneous systems
    by an optimistic cost table", IEEE TPDS 25(3), 2014, Algorithm 1; the mean of ``rank_oct`` is
    over the task's compatible devices, ties go to the lower index. ``seed`` is unused."""
    return compacted(inst, peft_mapping(inst.tables))


def peft_mapping(tab: Tables) -> Mapping:
    table = optimistic_cost_table(tab, mean_edge_costs(tab))
    rank = [sum(table[v][p] for p in tab.compatible[v]) / len(tab.compatible[v]) for v in range(tab.n)]
    build = Builder(tab)
    waiting = [len(tab.preds[v]) for v in range(tab.n)]
    key = rank_keys(rank)
    ready = [key[v] for v in range(tab.n) if not waiting[v]]
    heapq.heapify(ready)
    while ready:
        _, v = heapq.heappop(ready)
        build.best_eft(v, tab.compatible[v], extra=lambda p, row=table[v]: row[p])
        for s, _ in tab.succs[v]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, key[s])
    return mapping_of(build)


# -- CHASE's topology-aware mapper -----------------------------------------------------------------

#: Devices the topology-aware mapper tries besides the heaviest predecessor's neighbourhood.
GLOBAL_CANDIDATES = 2


def chase_mapper(inst: Instance, seed: int = 0) -> Solution:
    """CHASE's topology-aware mapper (reconstructed): upward rank with topology-aware transfer
    costs, a device pre-filter, and EFT with link reservation.

    * priority: ``rank_u`` with each edge costed by the mean *routed* transfer time
      ``mean_{p != q} (l_pq + d / B_pq)`` instead of HEFT's ``L_bar + d / B_bar``;
    * candidates of a task: the device of its heaviest predecessor (largest data edge) and the
      devices nearest it (least route latency), plus the ``GLOBAL_CANDIDATES`` compatible devices
      that run it fastest; an entry task tries every compatible device;
    * EFT with link reservation: each input transfer waits until every link direction of its
      route is free (FIFO per link direction) and then holds them for ``d / B_pq``; the task's EFT
      on a device counts those waits, so the choice avoids busy links; the reservations of the
      chosen device are kept.

    The result is then compacted to the contention-free semi-active schedule of its mapping (the
    objective); its simulated makespan is reported beside it.

    Guarantee: a feasible schedule. Running time O(e P + n (c + 1) (deg h + g)) for ``c``
    candidates, route length ``h``: cheaper than PEFT's O(e P^2) table when ``c`` is small.
    Source: research notes 3.c (TopoMapper pseudo-code), after CHASE (2026), abstract only; no
    code is public, so this is our reading of it. ``seed`` is unused."""
    return compacted(inst, chase_mapping(inst))


def chase_mapping(inst: Instance) -> Mapping:
    tab, hw = inst.tables, inst.hardware
    routes = hw.routes
    P = tab.devices
    pairs = [(p, q) for p in range(P) for q in range(P) if p != q]
    if pairs:
        mean_latency = sum(tab.latency[p][q] for p, q in pairs) / len(pairs)
        mean_inverse = sum(tab.inverse_bandwidth[p][q] for p, q in pairs) / len(pairs)
        costs = [mean_latency + d * mean_inverse for d in tab.data]
    else:
        costs = [0.0] * len(tab.data)
    rank = upward_ranks(tab, costs, mean_times(tab))
    nearest = []
    for p in range(P):
        others = [q for q in range(P) if q != p]
        closest = min((tab.latency[p][q] for q in others), default=0.0)
        nearest.append([p] + [q for q in others if tab.latency[p][q] == closest])
    fastest = [sorted(tab.compatible[v], key=lambda p, v=v: (tab.time[v][p], p))[:GLOBAL_CANDIDATES]
               for v in range(tab.n)]
    link_free = [0.0] * (2 * len(hw.links))
    build = Builder(tab)
    for v in rank_order(tab, rank):
        if tab.preds[v]:
            heaviest, _ = max(tab.preds[v], key=lambda ue: (tab.data[ue[1]], -ue[0]))
            near = [p for p in nearest[build.device[heaviest]] if math.isfinite(tab.time[v][p])]
            candidates = sorted(set(near) | set(fastest[v]))
        else:
            candidates = tab.compatible[v]
        best = None
        for p in candidates:
            ready, reserved = 0.0, []
            for u, e in tab.preds[v]:
                q = build.device[u]
                if q == p:
                    arrive = build.finish[u]
                else:
                    route = [2 * link + direction for link, direction in routes.path[q][p]]
                    send = max([build.finish[u], *(link_free[r] for r in route)])
                    busy_until = send + tab.data[e] * tab.inverse_bandwidth[q][p]
                    arrive = busy_until + tab.latency[q][p]
                    reserved.append((route, busy_until))
                ready = max(ready, arrive)
            begin = build.lines[p].earliest(ready, tab.time[v][p])
            end = begin + tab.time[v][p]
            if best is None or end < best[0]:
                best = (end, p, begin, reserved)
        _, p, begin, reserved = best
        build.place(v, p, begin)
        for route, busy_until in reserved:
            for r in route:
                link_free[r] = max(link_free[r], busy_until)
    return mapping_of(build)


# -- our iterated local search -------------------------------------------------------------------


class Decoder:
    """The semi-active decoder with a snapshot per position of the current state, so that a
    move that leaves positions ``< k`` of the order untouched is evaluated from ``k`` on, and
    abandoned as soon as a task ends after ``cutoff``. Values are (makespan, sum of finishes).

    Everything the inner loops read is a flat list indexed by task, device or position, built
    once per instance (``inputs[v]``: (predecessor, bytes) pairs; ``devices_of[v]`` and
    ``tasks_of[p]``: compatibility as bit sets) or once per state by :meth:`load` (``position``,
    the device predecessor and successor of each task, ``on_device[p]`` as a bit set), so a
    neighbourhood costs O(|path| (deg + P)) on top of the O(n P) load, and a trial changes the
    current assignment in place and restores it (:meth:`attempt`) instead of copying it."""

    def __init__(self, tab: Tables, tail: list[list[float]] | None = None):
        self.tab = tab
        self.tail = tails(tab) if tail is None else tail
        self.time, self.latency, self.inverse = tab.time, tab.latency, tab.inverse_bandwidth
        self.inputs = [tuple((u, tab.data[e]) for u, e in tab.preds[v]) for v in range(tab.n)]
        self.pred_tasks = [tuple(u for u, _ in tab.preds[v]) for v in range(tab.n)]
        self.succ_tasks = [tuple(s for s, _ in tab.succs[v]) for v in range(tab.n)]
        self.devices_of = [sum(1 << p for p in devices) for devices in tab.compatible]
        self.tasks_of = [0] * tab.devices
        for v, devices in enumerate(tab.compatible):
            for p in devices:
                self.tasks_of[p] |= 1 << v
        #: the device moves of ``v`` when it runs on ``p`` and its exchanges with each task, the
        #: move tuples of :func:`_moves` (devices ascending); exchanges only up to EXCHANGE_ALL
        self.device_moves = [[[("device", v, q) for q in sorted(devices) if q != p]
                              for p in range(tab.devices)] for v, devices in enumerate(tab.compatible)]
        #: the local optima scanned so far (:func:`_descend`), with the size of their neighbourhoods
        self.optima: dict[tuple[int, ...], int] = {}
        #: the members of the bit sets of exchange partners met so far (:func:`_moves`)
        self.member_lists: dict[int, list[int]] = {}
        self.universal = [len(devices) == tab.devices for devices in tab.compatible]
        self.exchange_moves = ([[("exchange", v, w) for w in range(tab.n)] for v in range(tab.n)]
                               if tab.n <= EXCHANGE_ALL else [])

    def load(self, assignment: list[int], order: list[int]) -> tuple[float, float]:
        """Make (assignment, order) the current state and return its value: its semi-active
        schedule (the arithmetic of :func:`.schedule.semi_active`), then per position the
        devices' free times and the running makespan and sum, and the index tables above."""
        time, latency, inverse, inputs = self.time, self.latency, self.inverse, self.inputs
        n, P = self.tab.n, self.tab.devices
        start, finish = [0.0] * n, [0.0] * n
        position, previous, following = [0] * n, [-1] * n, [-1] * n
        on_device, last = [0] * P, [-1] * P
        free = [0.0] * P
        free_before: list[list[float]] = []
        total_before, span_before = [0.0], [0.0]
        span = total = 0.0
        for i, v in enumerate(order):
            p = assignment[v]
            free_before.append(free[:])
            ready = free[p]
            for u, d in inputs[v]:
                q = assignment[u]
                arrive = finish[u] if q == p else finish[u] + latency[q][p] + d * inverse[q][p]
                if arrive > ready:
                    ready = arrive
            start[v] = ready
            end = finish[v] = free[p] = ready + time[v][p]
            total += end
            if end > span:
                span = end
            total_before.append(total)
            span_before.append(span)
            position[v] = i
            u = previous[v] = last[p]
            if u >= 0:
                following[u] = v
            last[p] = v
            on_device[p] |= 1 << v
        self.free_before, self.total_before, self.span_before = free_before, total_before, span_before
        self.position, self.previous, self.following = position, previous, following
        self.on_device = on_device
        self.assignment, self.order, self.start, self.finish = list(assignment), list(order), start, finish
        self.value = (span, total)
        return self.value

    def trial(self, assignment: list[int], order: list[int], k: int,
              cutoff: float) -> tuple[float, float] | None:
        """The value of a state equal to the current one before position ``k`` (None: some task
        ends after ``cutoff``).

        A task ``v`` on ``p`` that ends at ``end`` with ``end + tail(v, p) > cutoff (1 + 1e-9)``
        stops the decode with None as well: the tail is a lower bound on the time from its end
        to the makespan of any schedule with ``v`` on ``p`` (:func:`.schedule.tails`), so some
        later task of this decode ends after ``cutoff``; the margin ``1e-9 cutoff`` is far above
        the rounding of the sums (about ``n`` ulps), so the answer is the full decode's."""
        time, latency, inverse, inputs, tail = self.time, self.latency, self.inverse, self.inputs, self.tail
        limit = cutoff * (1 + 1e-9)
        free = self.free_before[k][:]
        finish = self.finish[:]
        span, total = self.span_before[k], self.total_before[k]
        for v in order[k:]:
            p = assignment[v]
            ready = free[p]
            for u, d in inputs[v]:
                q = assignment[u]
                arrive = finish[u] if q == p else finish[u] + latency[q][p] + d * inverse[q][p]
                if arrive > ready:
                    ready = arrive
            end = ready + time[v][p]
            if end > cutoff or end + tail[v][p] > limit:
                return None
            finish[v] = free[p] = end
            total += end
            if end > span:
                span = end
        return span, total

    def attempt(self, move: tuple, cutoff: float) -> tuple[float, float] | None:
        """:meth:`trial` of the state ``move`` leads to (as :func:`_apply` builds it), with the
        current assignment changed in place for the trial and restored after it."""
        kind, subject, choice = move
        assignment, position = self.assignment, self.position
        if kind == "exchange":  # the most frequent kind first
            mine, theirs = assignment[subject], assignment[choice]
            assignment[subject], assignment[choice] = theirs, mine
            i, j = position[subject], position[choice]
            value = self.trial(assignment, self.order, i if i < j else j, cutoff)
            assignment[subject], assignment[choice] = mine, theirs
        elif kind == "device":
            before = assignment[subject]
            assignment[subject] = choice
            value = self.trial(assignment, self.order, position[subject], cutoff)
            assignment[subject] = before
        elif kind == "chain":
            saved = [assignment[v] for v in subject]
            for v in subject:
                assignment[v] = choice
            value = self.trial(assignment, self.order, min(map(position.__getitem__, subject)), cutoff)
            for v, p in zip(subject, saved, strict=True):
                assignment[v] = p
        else:
            return self.trial(*_apply(self, move), cutoff)
        return value

    def critical_path(self) -> tuple[list[int], list[int]]:
        """(one critical path of the current schedule, last task first; each task's predecessor
        on its device or -1): each task of the path starts exactly when its device predecessor
        ends or when the input from the previous path task arrives."""
        tab, assignment, start, finish = self.tab, self.assignment, self.start, self.finish
        previous, latency, inverse, data = self.previous, self.latency, self.inverse, tab.data
        v = finish.index(self.value[0])  # the last task to end, the lowest index on ties
        path = []
        while v >= 0:
            path.append(v)
            u = previous[v]
            if u >= 0 and finish[u] == start[v]:
                v = u
                continue
            p, begin = assignment[v], start[v]
            for w, e in tab.preds[v]:  # the input that arrives last (Tables.comm's arithmetic)
                q = assignment[w]
                if (finish[w] if q == p else finish[w] + (latency[q][p] + data[e] * inverse[q][p])) == begin:
                    v = w
                    break
            else:
                v = -1
        return path, previous


#: Up to this many tasks a critical task may exchange devices with every task; beyond, with the
#: tasks of each other device that run concurrently and ``EXCHANGE_NEAR`` before and after them
#: (the neighbourhood then stays O(|path| P) and the search O(sqrt(n) (n + e))).
EXCHANGE_ALL = 32
EXCHANGE_NEAR = 2


def _members(bits: int) -> Iterator[int]:
    """The elements of a bit set, ascending."""
    while bits:
        low = bits & -bits
        yield low.bit_length() - 1
        bits ^= low


def _moves(tab: Tables, decoder: Decoder) -> list[tuple]:
    """The neighbourhood of the current state: moves that touch its critical path.

    ``("device", v, p)`` puts critical task ``v`` on device ``p``; ``("position", v, j)`` moves
    ``v`` to position ``j`` of the order (right after its last predecessor, before its device
    predecessor, or after its device successor, where precedence allows); ``("chain", tasks,
    p)`` puts 2 or 3 consecutive critical tasks on one device ``p`` (removing the transfers
    between them); ``("exchange", v, w)`` swaps the devices of ``v`` and a task ``w`` of another
    device: any (``n <= EXCHANGE_ALL``), else one that runs while ``v`` does or within
    ``EXCHANGE_NEAR`` positions of those on its device. Moves come per critical task (device,
    position, exchange; devices and partners ascending), then the chains of 2, then of 3.

    The device and exchange moves are the decoder's tuples, made once per instance
    (:class:`Decoder`), so a neighbourhood is mostly list extensions: it is built for every
    accepted move, and a first-improvement scan usually looks at a small part of it."""
    assignment = decoder.assignment
    path, previous = decoder.critical_path()
    device_moves = decoder.device_moves
    near = None if tab.n <= EXCHANGE_ALL else _running_order(tab, decoder)
    moves: list[tuple] = []
    for v in path:
        p = assignment[v]
        moves += device_moves[v][p]
        _add_position_moves(decoder, v, previous[v], moves)
        if near is None:
            _add_all_exchanges(tab, decoder, v, p, moves)
        else:
            _add_near_exchanges(tab, decoder, v, p, near, moves)
    _add_chains(decoder, path, moves)
    return moves


def _add_position_moves(decoder: Decoder, v: int, u: int, moves: list[tuple]) -> None:
    """Move critical task ``v`` right after its last predecessor, before its device predecessor
    ``u``, or after its device successor, where precedence allows."""
    position = decoder.position
    at = position.__getitem__
    last_pred = max(map(at, decoder.pred_tasks[v]), default=-1)
    if last_pred + 1 < position[v]:
        moves.append(("position", v, last_pred + 1))
    if u >= 0 and last_pred < position[u]:
        moves.append(("position", v, position[u]))
    w = decoder.following[v]
    if w >= 0 and min(map(at, decoder.succ_tasks[v]), default=len(decoder.order)) > position[w]:
        moves.append(("position", v, position[w] + 1))


def _add_all_exchanges(tab: Tables, decoder: Decoder, v: int, p: int, moves: list[tuple]) -> None:
    """Exchange the devices of ``v`` (on ``p``) and of any task off ``p`` where both can run."""
    on_device, tasks_of = decoder.on_device, decoder.tasks_of
    if decoder.universal[v]:  # every task off p that can run on p
        partners = tasks_of[p] & ~on_device[p]
    else:
        partners = 0
        for q in tab.compatible[v]:
            if q != p:
                partners |= on_device[q]
        partners &= tasks_of[p]
    member_lists = decoder.member_lists
    members = member_lists.get(partners)
    if members is None:
        members = member_lists[partners] = [*_members(partners)]
    if members:
        exchanges = operator.itemgetter(*members)(decoder.exchange_moves[v])
        if len(members) == 1:
            moves.append(exchanges)
        else:
            moves += exchanges


def _running_order(tab: Tables, decoder: Decoder) -> tuple[list[list[int]], list[list[float]]]:
    """Each device's tasks in its running order (so by start time), and their start times."""
    on: list[list[int]] = [[] for _ in range(tab.devices)]
    for w in decoder.order:
        on[decoder.assignment[w]].append(w)
    return on, [[decoder.start[w] for w in tasks] for tasks in on]


def _add_near_exchanges(tab: Tables, decoder: Decoder, v: int, p: int,
                        near_by: tuple[list[list[int]], list[list[float]]], moves: list[tuple]) -> None:
    """Exchange ``v`` with the tasks of each other device that run while it does, and
    ``EXCHANGE_NEAR`` before and after them, where both can run on the other's device."""
    on, starts_on = near_by
    start, finish, devices_of = decoder.start, decoder.finish, decoder.devices_of
    near: set[int] = set()
    for q in tab.compatible[v]:
        if q == p or not on[q]:
            continue
        first = bisect.bisect_right(starts_on[q], start[v]) - 1
        last = bisect.bisect_left(starts_on[q], finish[v])
        near.update(on[q][max(0, first - EXCHANGE_NEAR):last + EXCHANGE_NEAR])
    moves += [("exchange", v, w) for w in sorted(near) if devices_of[w] >> p & 1]


def _add_chains(decoder: Decoder, path: list[int], moves: list[tuple]) -> None:
    """Put 2, then 3, consecutive critical tasks that are not all on one device on a device
    every one of them can run on."""
    held = [decoder.assignment[v] for v in path]
    runs = [decoder.devices_of[v] for v in path]
    for i in range(len(path) - 1):  # chains of 2
        if held[i] != held[i + 1]:
            shared = runs[i] & runs[i + 1]
            if shared:
                subject = (path[i], path[i + 1])
                moves += [("chain", subject, q) for q in _members(shared)]
    for i in range(len(path) - 2):  # chains of 3
        if not held[i] == held[i + 1] == held[i + 2]:
            shared = runs[i] & runs[i + 1] & runs[i + 2]
            if shared:
                subject = (path[i], path[i + 1], path[i + 2])
                moves += [("chain", subject, q) for q in _members(shared)]


def _apply(decoder: Decoder, move: tuple) -> tuple[list[int], list[int], int]:
    """(assignment, order, first position that changes) after ``move`` (new lists)."""
    assignment, order, position = decoder.assignment, decoder.order, decoder.position
    kind = move[0]
    if kind == "position":
        _, v, j = move
        i = position[v]
        new = order[:i] + order[i + 1:]
        new.insert(j - 1 if j > i else j, v)
        return assignment, new, min(i, j)
    changed = list(assignment)
    if kind == "device":
        _, v, q = move
        changed[v] = q
        tasks = (v,)
    elif kind == "chain":
        _, tasks, q = move
        for v in tasks:
            changed[v] = q
    else:
        _, v, w = move
        changed[v], changed[w] = assignment[w], assignment[v]
        tasks = (v, w)
    return changed, order, min(position[v] for v in tasks)


def _random_order(count: int, rng: random.Random) -> Iterator[int]:
    """The indices ``0..count-1`` in a seeded pseudo-random order, as ``(a + i s) mod count`` for
    a random offset ``a`` and a random step ``s`` coprime to ``count``: a first-improvement scan
    usually stops early, so this costs O(1) per index looked at, where a shuffle costs O(count)."""
    if count < 2:
        return iter(range(count))
    offset = rng.randrange(count)
    step = rng.randrange(1, count)
    while math.gcd(step, count) != 1:
        step = step % (count - 1) + 1
    return ((offset + i * step) % count for i in range(count))


def _descend(tab: Tables, decoder: Decoder, rng: random.Random, budget: int) -> int:
    """First-improvement descent of the decoder's current state over :func:`_moves` (in a seeded
    random order) until no move improves or ``budget`` trials are spent; returns the trials.

    A state whose whole neighbourhood was scanned without an improving move (a local optimum
    in ``decoder.optima``, with its neighbourhood's size) is not scanned again: a scan's outcome
    is the state's alone, so the descent ends there as the scan would, counting the trials the
    scan would spend and drawing the same random numbers (the scan's order), and the search
    goes on exactly as before (kicks and starts return to their local optima often: 3-16 % of
    the trials on the bench's slowest tasks)."""
    spent = 0
    attempt, optima = decoder.attempt, decoder.optima
    while spent < budget:
        key = (*decoder.assignment, *decoder.order)
        count = optima.get(key)
        if count is not None:
            _random_order(count, rng)
            return spent + min(count, budget - spent)
        moves = _moves(tab, decoder)
        current = decoder.value
        cutoff = current[0]
        scanned = 0
        for index in itertools.islice(_random_order(len(moves), rng), budget - spent):
            scanned += 1
            move = moves[index]
            value = attempt(move, cutoff)
            if value is not None and value < current:
                assignment, order, _ = _apply(decoder, move)
                decoder.load(assignment, order)
                break
        else:
            if scanned == len(moves):
                optima[key] = scanned
            return spent + scanned
        spent += scanned
    return spent


def load_bound(tab: Tables) -> float:
    """``sum_v min_p t_vp / P``: the work on the fastest devices shared perfectly."""
    return sum(min(tab.time[v][p] for p in tab.compatible[v]) for v in range(tab.n)) / tab.devices


def _starts(inst: Instance) -> list[Mapping]:
    """The starts of the local searches: HEFT, PEFT, CPOP, the CHASE mapper, then every device
    running all it can (the others on their fastest device); of the starts that differ only by
    identical devices (:func:`.schedule.device_classes`), the first."""
    tab = inst.tables
    starts = [heft_mapping(tab), peft_mapping(tab), cpop_mapping(tab), chase_mapping(inst)]
    fastest = [min(tab.compatible[v], key=lambda q, v=v: (tab.time[v][q], q)) for v in range(tab.n)]
    for p in range(tab.devices):
        serial = [p if p in tab.compatible[v] else fastest[v] for v in range(tab.n)]
        starts.append((serial, list(tab.topo)))
    classes = device_classes(inst)
    seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    unique = []
    for assignment, order in starts:
        key = (tuple(canonical(inst, assignment, classes)), tuple(order))
        if key not in seen:
            seen.add(key)
            unique.append((assignment, order))
    return unique


State = tuple[tuple[float, float], list[int], list[int]]  # (value, assignment, order)


def _kick(tab: Tables, decoder: Decoder, best: State, rng: random.Random,
          budget: int) -> tuple[int, bool, State]:
    """One round of the iterated search: ``KICK`` random tasks of the best state to random
    compatible devices, then the descent from there (at most ``budget`` trials, the kick counting
    one). Returns (trials, whether the result beats the best, the best state after the round:
    the result where it is at least as good)."""
    assignment = list(best[1])
    for v in rng.sample(range(tab.n), min(KICK, tab.n)):
        assignment[v] = rng.choice(tab.compatible[v])
    decoder.load(assignment, best[2])
    trials = 1 + _descend(tab, decoder, rng, budget - 1)
    better = decoder.value < best[0]
    if decoder.value <= best[0]:
        best = (decoder.value, decoder.assignment, decoder.order)
    return trials, better, best


#: The local search's trial unit ``B = TRIALS_PER_ROOT_N * sqrt(n)``: it stops after
#: ``PATIENCE * B`` trials without a better schedule, and after ``CAP * B`` trials in all.
TRIALS_PER_ROOT_N = 400
PATIENCE = 1.0
CAP = 2
#: Tasks moved to random devices by a kick.
KICK = 3


def local_search(inst: Instance, seed: int = 0) -> Solution:
    """Iterated local search over (assignment, order) from the list schedulers and the serial
    schedules.

    A state is an assignment and a topological order; its value is the makespan (then the sum of
    finish times, to move along plateaus) of its semi-active decoding, a search space that holds
    an optimum (:mod:`coopt.problems.chase.schedule`). The neighbourhood (:func:`_moves`)
    touches one critical path of the current schedule, the only tasks whose change can shorten
    it: move a task to another device, shift it in the order, move a chain of 2-3 critical tasks
    to one device, or exchange the devices of a critical task and another. Each start (HEFT,
    PEFT, CPOP, the CHASE mapper, and every device running all it can; starts that differ only
    by identical devices once) descends by first improvement (seeded random order) to a local
    optimum; then kicks of ``KICK`` random tasks to
    random compatible devices restart the descent from the best state, which a kicked descent
    replaces when it is at least as good. With ``B = TRIALS_PER_ROOT_N * sqrt(n)`` trial
    decodes, the search stops after ``PATIENCE * B`` trials without a better schedule, after
    ``CAP * B`` in all, or when the makespan meets the critical-path or load bound.

    Guarantee: never worse than the best of its starts (so than HEFT, PEFT, CPOP and the CHASE
    mapper). Running time O(e P^2) for the starts and bounds, then at most ``CAP * B`` =
    O(sqrt(n)) trials of O(n + e) each (a trial decodes the suffix of the order that the move
    changes and stops at the first task past the current makespan): O(e P^2 + sqrt(n) (n + e))
    in all, plus the neighbourhood lists (O(n) per critical task). Source: ours; critical-path
    neighbourhoods after Nowicki and Smutnicki's tabu search for the job shop (Management
    Science 42(6), 1996), iterated local search after Lourenco, Martin and Stutzle (Handbook of
    Metaheuristics, 2003)."""
    tab = inst.tables
    rng = random.Random(seed)
    budget = int(TRIALS_PER_ROOT_N * math.sqrt(tab.n))
    tail = tails(tab)
    floor = max(critical_path_bound(tab, tail=tail), load_bound(tab)) * (1 + 1e-12)
    unique = _starts(inst)
    decoder = Decoder(tab, tail)
    cap = CAP * budget
    spent = last = 0
    best: State | None = None
    for assignment, order in unique:
        decoder.load(assignment, order)
        spent += _descend(tab, decoder, rng, cap - spent)
        if best is None or decoder.value < best[0]:
            best, last = (decoder.value, decoder.assignment, decoder.order), spent
        if spent >= cap:
            break
    assert best is not None
    while spent < cap and spent - last < PATIENCE * budget and best[0][0] > floor:
        trials, better, best = _kick(tab, decoder, best, rng, cap - spent)
        spent += trials
        if better:
            last = spent
    return compacted(inst, (best[1], best[2]))


#: :func:`fast_local_search`'s trial unit ``B = FAST_TRIALS_PER_ROOT_N * sqrt(n)`` (with
#: ``PATIENCE`` and ``CAP`` as above), and one round in ``START_EVERY`` descends the next start.
FAST_TRIALS_PER_ROOT_N = 150
START_EVERY = 2


def fast_local_search(inst: Instance, seed: int = 0) -> Solution:
    """:func:`local_search` with lazy starts and a budget that begins after the first descent.

    Same states, values, neighbourhood, descent and kicks as :func:`local_search`. The starts are
    ranked by their own value and only the best descends first; then rounds alternate as long
    as the search runs: a kick of the best state and its descent, and, one round in
    ``START_EVERY`` while starts remain, the descent of the next start instead. With
    ``B = FAST_TRIALS_PER_ROOT_N * sqrt(n)`` trial decodes counted from the end of the first
    descent, the rounds stop after ``PATIENCE * B`` trials without a better schedule, after
    ``CAP * B`` trials, or at the critical-path or load bound. Where :func:`local_search` spends
    a third to two thirds of its time descending every start, however poor, before its first
    kick, this one descends a start only while the search has not settled (2-3x less
    CPU on the bench's tasks; gaps to the optimum on its families 0.42 / 3.82 % geomean / worst
    against 0.32 / 3.61 %, docs/chase.md).

    Guarantee: never worse than the best of its starts (HEFT, PEFT, CPOP, the CHASE mapper):
    that start descends first. Running time O(e P^2) for the starts and bounds, one descent, then
    at most ``CAP * B`` = O(sqrt(n)) trials of O(n + e) each: O(e P^2 + sqrt(n) (n + e)) besides
    the first descent, plus the neighbourhood lists. Source: ours (as :func:`local_search`)."""
    tab = inst.tables
    rng = random.Random(seed)
    budget = int(FAST_TRIALS_PER_ROOT_N * math.sqrt(tab.n))
    tail = tails(tab)
    floor = max(critical_path_bound(tab, tail=tail), load_bound(tab)) * (1 + 1e-12)
    decoder = Decoder(tab, tail)
    starts = sorted(_starts(inst), key=lambda start: decoder.load(*start))  # stable on ties
    decoder.load(*starts[0])
    spent = _descend(tab, decoder, rng, CAP * budget)
    best = (decoder.value, decoder.assignment, decoder.order)
    last, cap = spent, spent + CAP * budget
    pending = starts[:0:-1]  # the other starts, the next best last (popped first)
    rounds = 0
    while spent < cap and spent - last < PATIENCE * budget and best[0][0] > floor:
        rounds += 1
        if pending and rounds % START_EVERY == 0:
            decoder.load(*pending.pop())
            spent += _descend(tab, decoder, rng, cap - spent)
            if decoder.value < best[0]:
                best, last = (decoder.value, decoder.assignment, decoder.order), spent
            continue
        trials, better, best = _kick(tab, decoder, best, rng, cap - spent)
        spent += trials
        if better:
            last = spent
    return compacted(inst, (best[1], best[2]))


HEURISTICS = {
    "chase_mapper": chase_mapper,
    "cpop": cpop,
    "fast_local_search": fast_local_search,
    "heft": heft,
    "local_search": local_search,
    "peft": peft,
}
