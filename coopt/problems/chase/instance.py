"""The data model of the ``chase`` mapping problem: an :class:`Instance` (a hardware graph and a
workload DAG, SI units inside) and its index-based :class:`Tables`, the views every method reads
(run times, compatibility, edges, a topological order, the routing table). Fields, loader,
checker and generator are in :mod:`.model`; this module sits below :mod:`.schedule` and
:mod:`.simulator`, which read the tables."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import cached_property

from coopt.problems.chase.hardware import Hardware
from coopt.problems.chase.workloads import Workload, run_time


class Tables:
    """Index-based views of one instance for the methods (built once, read often).

    ``time[v][p]`` run time (inf: incompatible); ``compatible[v]`` devices in index order;
    ``preds[v]`` / ``succs[v]`` lists of (task, edge); ``source``, ``target``, ``data`` per edge;
    ``topo`` a topological order (Kahn, smallest index first) and ``position[v]`` its rank;
    ``latency`` and ``inverse_bandwidth`` the routing table (device x device)."""

    def __init__(self, inst: Instance):
        hw, wl = inst.hardware, inst.workload
        self.n, self.devices = len(wl.tasks), len(hw.devices)
        self.task_names = [t.name for t in wl.tasks]
        self.device_names = [d.name for d in hw.devices]
        index = {name: v for v, name in enumerate(self.task_names)}
        kinds = hw.type_of
        self.time = [[run_time(task, p, kinds[p]) for p in range(self.devices)] for task in wl.tasks]
        self.compatible = [[p for p in range(self.devices) if math.isfinite(row[p])] for row in self.time]
        self.source = [index[e.source] for e in wl.edges]
        self.target = [index[e.target] for e in wl.edges]
        self.data = [e.data for e in wl.edges]
        self.preds: list[list[tuple[int, int]]] = [[] for _ in range(self.n)]
        self.succs: list[list[tuple[int, int]]] = [[] for _ in range(self.n)]
        for e, (u, v) in enumerate(zip(self.source, self.target, strict=True)):
            self.preds[v].append((u, e))
            self.succs[u].append((v, e))
        self.topo = _kahn(self.n, self.succs, [len(p) for p in self.preds])
        self.position = [0] * self.n
        for rank, v in enumerate(self.topo):
            self.position[v] = rank
        routes = hw.routes
        self.latency = [list(row) for row in routes.latency]
        self.inverse_bandwidth = [list(row) for row in routes.inverse_bandwidth]

    @property
    def acyclic(self) -> bool:
        return len(self.topo) == self.n

    def comm(self, e: int, p: int, q: int) -> float:
        """Contention-free transfer time of edge ``e`` from device ``p`` to device ``q``."""
        if p == q:
            return 0.0
        return self.latency[p][q] + self.data[e] * self.inverse_bandwidth[p][q]


def _kahn(n: int, succs: list[list[tuple[int, int]]], indegree: list[int]) -> list[int]:
    """A topological order, smallest ready index first (fewer than ``n`` entries on a cycle)."""
    indegree = list(indegree)
    ready = [v for v in range(n) if indegree[v] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for s, _ in succs[v]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, s)
    return order


@dataclass(frozen=True)
class Instance:
    """A hardware graph and a workload DAG (SI units inside)."""

    hardware: Hardware
    workload: Workload

    @cached_property
    def tables(self) -> Tables:
        return Tables(self)

    @property
    def n_tasks(self) -> int:
        return len(self.workload.tasks)

    @property
    def n_devices(self) -> int:
        return len(self.hardware.devices)
