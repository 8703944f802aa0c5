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
    from coopt.problems.chase.instance import Instance

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
    rng = random.Random(seed)
    tab = inst.tables
    duration = [tab.time[v][assignment[v]] * (1.0 + jitter * rng.random() if jitter else 1.0)
                for v in range(tab.n)]
    replay = _Replay(inst, assignment, order, duration, contention)
    replay.run()
    if any(math.isnan(f) for f in replay.finish):
        raise ValueError("the order is not a topological order of the task graph")
    telemetry = Telemetry(max(replay.finish, default=0.0), replay.start, replay.finish, replay.busy,
                          replay.link_bytes, replay.link_busy, replay.transfers)
    telemetry.blame = _blame(inst, assignment, telemetry, replay.previous_on_device, replay.last_arrival,
                             duration)
    return telemetry


class _Replay:
    """The state of one replay: device queues, the event heap (finishes and arrivals, in time
    and then insertion order) and the flows in flight with their max-min fair rates."""

    def __init__(self, inst: Instance, assignment: list[int], order: list[int], duration: list[float],
                 contention: bool):
        tab, hw = inst.tables, inst.hardware
        self.tab, self.hw, self.routes = tab, hw, hw.routes
        self.assignment, self.duration, self.contention = assignment, duration, contention
        n, P = tab.n, tab.devices
        self.queue: list[list[int]] = [[] for _ in range(P)]
        for v in order:
            self.queue[assignment[v]].append(v)
        self.pointer = [0] * P
        self.idle = [True] * P
        self.waiting = [len(tab.preds[v]) for v in range(n)]
        self.last_arrival = [-1] * n  # the edge whose data arrived last (-1: none yet)
        self.arrival_time = [0.0] * n
        self.start, self.finish = [math.nan] * n, [math.nan] * n
        self.previous_on_device = [-1] * n
        self.last_finished = [-1] * P
        self.busy = [0.0] * P
        links = len(hw.links)
        self.capacity = [hw.links[i // 2].bandwidth for i in range(2 * links)]
        self.link_bytes, self.link_busy = [0.0] * (2 * links), [0.0] * (2 * links)
        self.transfers: dict[int, Transfer] = {}
        self.events: list[tuple[float, int, int, int]] = []  # (time, sequence, kind, task or edge)
        self.sequence = 0
        self.flows: dict[int, list] = {}  # edge -> [remaining bytes, send time, resources, rate]
        self.now = 0.0

    def push(self, time: float, kind: int, what: int) -> None:
        heapq.heappush(self.events, (time, self.sequence, kind, what))
        self.sequence += 1

    def try_start(self, p: int, at: float) -> None:
        if not self.idle[p] or self.pointer[p] == len(self.queue[p]):
            return
        v = self.queue[p][self.pointer[p]]
        if self.waiting[v]:
            return
        self.pointer[p] += 1
        self.idle[p] = False
        self.start[v] = at
        self.previous_on_device[v] = self.last_finished[p]
        self.finish[v] = at + self.duration[v]
        self.busy[p] += self.duration[v]
        self.push(self.finish[v], FINISH, v)

    def bottleneck_link(self, route: tuple[tuple[int, int], ...]) -> int:
        return min(route, key=lambda hop: (self.hw.links[hop[0]].bandwidth, hop[0]))[0] if route else -1

    def run(self) -> None:
        for p in range(self.tab.devices):
            self.try_start(p, 0.0)
        while self.events or self.flows:
            done_at = {e: self.now + flow[0] / flow[3] for e, flow in self.flows.items()}
            next_flow = min(done_at.values(), default=math.inf)
            next_event = self.events[0][0] if self.events else math.inf
            self.advance(min(next_flow, next_event))
            if next_flow <= next_event:
                self.land([e for e, t in done_at.items() if t <= next_flow * (1 + 1e-12)])
                continue
            _, _, kind, what = heapq.heappop(self.events)
            if kind == FINISH:
                self.on_finish(what)
            else:
                self.on_arrive(what)

    def advance(self, at: float) -> None:
        """Move the flows in flight on to time ``at`` (bytes sent, link busy time)."""
        if self.flows:
            step = at - self.now
            touched = set()
            for flow in self.flows.values():
                flow[0] -= flow[3] * step
                touched.update(flow[2])
            for res in touched:
                self.link_busy[res] += step
        self.now = at

    def land(self, edges: list[int]) -> None:
        """The flows of ``edges`` have sent their last byte: their data arrives a latency later."""
        tab, routes, now = self.tab, self.routes, self.now
        for e in edges:
            flow = self.flows.pop(e)
            p, q = self.assignment[tab.source[e]], self.assignment[tab.target[e]]
            arrive = now + routes.latency[p][q]
            ideal = routes.latency[p][q] + tab.data[e] * routes.inverse_bandwidth[p][q]
            self.transfers[e] = Transfer(e, flow[1], now, arrive, ideal,
                                         self.bottleneck_link(routes.path[p][q]))
            self.push(arrive, ARRIVE, e)
        if self.flows:
            _fair_rates(self.flows, self.capacity)

    def on_finish(self, v: int) -> None:
        """Task ``v`` ends: its device frees, and its outputs leave (at once on the same device)."""
        tab, routes, now = self.tab, self.routes, self.now
        p = self.assignment[v]
        self.idle[p] = True
        self.last_finished[p] = v
        started = False
        for s, e in tab.succs[v]:
            q = self.assignment[s]
            if q == p:
                self.push(now, ARRIVE, e)
                continue
            route = routes.path[p][q]
            for link, direction in route:
                self.link_bytes[2 * link + direction] += tab.data[e]
            ideal = routes.latency[p][q] + tab.data[e] * routes.inverse_bandwidth[p][q]
            if not self.contention or tab.data[e] == 0:
                arrive = self.finish[v] + routes.latency[p][q] + tab.data[e] * routes.inverse_bandwidth[p][q]
                self.transfers[e] = Transfer(e, now, arrive - routes.latency[p][q], arrive, ideal,
                                             self.bottleneck_link(route))
                self.push(arrive, ARRIVE, e)
            else:
                self.flows[e] = [tab.data[e], now, [2 * link + direction for link, direction in route], 0.0]
                started = True
        if started:
            _fair_rates(self.flows, self.capacity)
        self.try_start(p, now)

    def on_arrive(self, e: int) -> None:
        """The data of edge ``e`` has arrived at its consumer."""
        v = self.tab.target[e]
        self.waiting[v] -= 1
        if self.now >= self.arrival_time[v]:
            self.arrival_time[v], self.last_arrival[v] = self.now, e
        self.try_start(self.assignment[v], self.now)


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
