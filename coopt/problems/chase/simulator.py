"""Discrete-event simulator of a mapping on the hardware graph, with link contention.

A mapping (an assignment and a topological order; each device runs its tasks in the order they
appear) becomes an event trace and is replayed *self-timed*: a task starts as soon as it is next
on its device, the device is idle and all its inputs have arrived. A data edge between two
devices is a *flow* along the route of the routing table (:mod:`.hardware`): it is transmitted
cut-through over every link of the route at once and shares each link direction with the other
flows crossing it by max-min fairness (progressive filling, as in flow-level network simulators
such as SimGrid); its data arrives the route latency ``l_pq`` after the last byte is sent. An edge
within a device arrives at once; an edge with no data arrives after the latency.

Relation to the contention-free makespan (the MILP's objective). A flow never runs faster than its
route's bottleneck bandwidth ``B_pq``, so each transfer takes at least ``l_pq + d / B_pq``: the
contention-free time. By induction along the order (each task starts at the later of its device's
previous finish and its inputs' arrivals, each at least its contention-free counterpart), every
task starts no earlier than in the contention-free semi-active schedule of the same mapping
(:func:`.schedule.semi_active`), so the simulated makespan is never below it; the two are equal
when no two flows share a link direction at the same time. ``contention=False`` replays with
every transfer at its contention-free time and gives the semi-active schedule exactly.

Seeded and deterministic: events at equal times are processed in a fixed order, and the optional
``jitter`` lengthens every run time by a factor drawn uniformly from ``[1, 1 + jitter]`` with
``random.Random(seed)`` (task index order); jitter only lengthens, so the bound above still holds.

Telemetry: per device busy time (the sum of its run times), per link direction the bytes that
crossed it (the sum of the flows routed over it) and its busy time, every transfer, and the
critical path of the replay with its blame: run time per device type, transfer time per
bottleneck link, and the delay contention added.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coopt.problems.chase.model import Instance

FINISH, ARRIVE = 0, 1


@dataclass(frozen=True)
class Transfer:
    """One data edge between two devices: sent at ``send``, last byte out at ``sent``, data in
    place at ``arrive``; ``ideal`` is its contention-free duration ``l + d / B``."""

    edge: int
    send: float
    sent: float
    arrive: float
    ideal: float
    bottleneck: int  # link index of the route's narrowest link (-1: no link crossed)


@dataclass
class Telemetry:
    makespan: float
    start: list[float]
    finish: list[float]
    device_busy: list[float]
    link_bytes: list[float]  # per link direction: index 2 * link + direction
    link_busy: list[float]
    transfers: dict[int, Transfer] = field(default_factory=dict)
    #: Critical path blame: ("compute", device type) / ("transfer", link index) / ("contention",
    #: link index) -> seconds on the critical path.
    blame: dict[tuple[str, str | int], float] = field(default_factory=dict)

    def link_bytes_total(self, link: int) -> float:
        return self.link_bytes[2 * link] + self.link_bytes[2 * link + 1]


def _fair_rates(flows: dict[int, list], capacity: list[float]) -> None:
    """Max-min fair rates by progressive filling; sets ``flow[3]`` (rate) of every flow in place."""
    remaining_capacity: dict[int, float] = {}
    users: dict[int, list[int]] = {}
    for fid, flow in flows.items():
        for res in flow[2]:
            users.setdefault(res, []).append(fid)
            remaining_capacity[res] = capacity[res]
    unfrozen = set(flows)
    while unfrozen:
        share, chosen = math.inf, None
        for res, fids in users.items():
            active = sum(1 for f in fids if f in unfrozen)
            if active:
                value = remaining_capacity[res] / active
                if value < share:
                    share, chosen = value, res
        if chosen is None:  # flows over no link cannot exist; guard the loop anyway
            break
        for fid in [f for f in users[chosen] if f in unfrozen]:
            flows[fid][3] = share
            unfrozen.discard(fid)
            for res in flows[fid][2]:
                remaining_capacity[res] -= share


def simulate(
    inst: Instance,
    assignment: list[int],
    order: list[int],
    *,
    contention: bool = True,
    jitter: float = 0.0,
    seed: int = 0,
) -> Telemetry:
    """Replay ``assignment`` in ``order`` (see the module docstring) and return its telemetry."""
    tab, hw = inst.tables, inst.hardware
    routes = hw.routes
    n, P = tab.n, tab.devices
    rng = random.Random(seed)
    duration = [tab.time[v][assignment[v]] * (1.0 + jitter * rng.random() if jitter else 1.0)
                for v in range(n)]
    queue: list[list[int]] = [[] for _ in range(P)]
    for v in order:
        queue[assignment[v]].append(v)
    pointer = [0] * P
    idle = [True] * P
    waiting = [len(tab.preds[v]) for v in range(n)]
    last_arrival = [-1] * n  # the edge whose data arrived last (-1: none yet)
    arrival_time = [0.0] * n
    start, finish = [math.nan] * n, [math.nan] * n
    previous_on_device = [-1] * n
    last_finished = [-1] * P
    busy = [0.0] * P
    links = len(hw.links)
    capacity = [hw.links[i // 2].bandwidth for i in range(2 * links)]
    link_bytes, link_busy = [0.0] * (2 * links), [0.0] * (2 * links)
    transfers: dict[int, Transfer] = {}
    events: list[tuple[float, int, int, int]] = []  # (time, sequence, kind, task or edge)
    sequence = 0
    flows: dict[int, list] = {}  # edge -> [remaining bytes, send time, resources, rate]
    now = 0.0

    def push(time: float, kind: int, what: int) -> None:
        nonlocal sequence
        heapq.heappush(events, (time, sequence, kind, what))
        sequence += 1

    def try_start(p: int, at: float) -> None:
        if not idle[p] or pointer[p] == len(queue[p]):
            return
        v = queue[p][pointer[p]]
        if waiting[v]:
            return
        pointer[p] += 1
        idle[p] = False
        start[v] = at
        previous_on_device[v] = last_finished[p]
        finish[v] = at + duration[v]
        busy[p] += duration[v]
        push(finish[v], FINISH, v)

    def bottleneck_link(route: tuple[tuple[int, int], ...]) -> int:
        return min(route, key=lambda hop: (hw.links[hop[0]].bandwidth, hop[0]))[0] if route else -1

    for p in range(P):
        try_start(p, 0.0)
    while events or flows:
        done_at = {e: now + flow[0] / flow[3] for e, flow in flows.items()}
        next_flow = min(done_at.values(), default=math.inf)
        next_event = events[0][0] if events else math.inf
        at = min(next_flow, next_event)
        if flows:
            step = at - now
            touched = set()
            for flow in flows.values():
                flow[0] -= flow[3] * step
                touched.update(flow[2])
            for res in touched:
                link_busy[res] += step
        now = at
        if next_flow <= next_event:
            for e in [e for e, t in done_at.items() if t <= next_flow * (1 + 1e-12)]:
                flow = flows.pop(e)
                u, v = tab.source[e], tab.target[e]
                p, q = assignment[u], assignment[v]
                arrive = now + routes.latency[p][q]
                ideal = routes.latency[p][q] + tab.data[e] * routes.inverse_bandwidth[p][q]
                transfers[e] = Transfer(e, flow[1], now, arrive, ideal, bottleneck_link(routes.path[p][q]))
                push(arrive, ARRIVE, e)
            if flows:
                _fair_rates(flows, capacity)
            continue
        _, _, kind, what = heapq.heappop(events)
        if kind == FINISH:
            v = what
            p = assignment[v]
            idle[p] = True
            last_finished[p] = v
            started = False
            for s, e in tab.succs[v]:
                q = assignment[s]
                if q == p:
                    push(now, ARRIVE, e)
                    continue
                route = routes.path[p][q]
                for link, direction in route:
                    link_bytes[2 * link + direction] += tab.data[e]
                ideal = routes.latency[p][q] + tab.data[e] * routes.inverse_bandwidth[p][q]
                if not contention or tab.data[e] == 0:
                    arrive = finish[v] + routes.latency[p][q] + tab.data[e] * routes.inverse_bandwidth[p][q]
                    transfers[e] = Transfer(e, now, arrive - routes.latency[p][q], arrive, ideal,
                                            bottleneck_link(route))
                    push(arrive, ARRIVE, e)
                else:
                    flows[e] = [tab.data[e], now, [2 * link + direction for link, direction in route], 0.0]
                    started = True
            if started:
                _fair_rates(flows, capacity)
            try_start(p, now)
        else:
            e = what
            v = tab.target[e]
            waiting[v] -= 1
            if now >= arrival_time[v]:
                arrival_time[v], last_arrival[v] = now, e
            try_start(assignment[v], now)
    if any(math.isnan(f) for f in finish):
        raise ValueError("the order is not a topological order of the task graph")
    telemetry = Telemetry(max(finish, default=0.0), start, finish, busy, link_bytes, link_busy, transfers)
    telemetry.blame = _blame(inst, assignment, telemetry, previous_on_device, last_arrival, duration)
    return telemetry


def _blame(inst: Instance, assignment: list[int], tel: Telemetry, previous: list[int],
           last_arrival: list[int], duration: list[float]) -> dict[tuple[str, str | int], float]:
    """Walk the critical path back from the last task to finish: each task's run time goes to its
    device type; where a task waited for data (its inputs arrived after its device was free), the
    transfer's contention-free time goes to its bottleneck link and the rest to contention."""
    tab, kinds = inst.tables, inst.hardware.type_of
    blame: dict[tuple[str, str | int], float] = {}
    if not tab.n:
        return blame
    v = max(range(tab.n), key=lambda k: (tel.finish[k], -k))
    while v >= 0:
        key = ("compute", kinds[assignment[v]].name)
        blame[key] = blame.get(key, 0.0) + duration[v]
        before = previous[v]
        device_free = tel.finish[before] if before >= 0 else 0.0
        e = last_arrival[v]
        if e >= 0 and tel.start[v] > device_free:
            transfer = tel.transfers.get(e)
            if transfer is not None:
                link = transfer.bottleneck
                blame[("transfer", link)] = blame.get(("transfer", link), 0.0) + transfer.ideal
                extra = max(0.0, transfer.arrive - transfer.send - transfer.ideal)
                if extra:
                    blame[("contention", link)] = blame.get(("contention", link), 0.0) + extra
            v = tab.source[e]
        else:
            v = before
    return blame
