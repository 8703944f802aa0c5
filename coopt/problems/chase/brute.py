"""Brute force for tiny ``chase`` and ``chase_arch`` instances: the oracles of the exact methods.

:func:`enumerate_optimum` tries every assignment of tasks to compatible devices and, for each,
every order of the tasks on each device (the product of the per-device permutations), keeps the
combinations whose device orders and edges form no cycle, and takes the longest path of each:
the earliest schedule of that mapping and order, so the least of them is the optimum (every
schedule is dominated by the earliest schedule of its own assignment and device orders). It
shares nothing with the MILP or the decoder of :mod:`.schedule` but the instance's run-time and
routing tables. Cost: ``sum over assignments of prod_p n_p!`` longest paths (``n! * C(n+P-1, P-1)``
at most), so ``n <= 6`` and ``P <= 3``.

:func:`tiny` makes the seeded instances the contract suite and ``benchmarks/regression/differential.py``
compare on: 3 to 5 tasks on 2 or 3 devices, unrelated run times or rooflines, some tasks limited
to one device type, a random hardware graph (a switch, direct links or both, random bandwidths
and latencies), and every fourth seed a pair of identical devices (so the symmetry rows are
exercised).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

from coopt.problems.chase.arch_model import (
    ARCH_TYPES,
    ArchInstance,
    capability,
    make_types,
    minimal_network,
    violations,
)
from coopt.problems.chase.hardware import Device, DeviceType, Hardware, Link, Switch
from coopt.problems.chase.model import Instance
from coopt.problems.chase.workloads import Edge, Task, Workload


def _longest_path(inst: Instance, assignment: tuple[int, ...], sequences: list[tuple[int, ...]]) -> float:
    """Makespan of the earliest schedule with these device orders (inf if they close a cycle)."""
    tab = inst.tables
    n = tab.n
    incoming: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for e, (u, v) in enumerate(zip(tab.source, tab.target, strict=True)):
        incoming[v].append((u, tab.time[u][assignment[u]] + tab.comm(e, assignment[u], assignment[v])))
    for seq in sequences:
        for u, v in itertools.pairwise(seq):
            incoming[v].append((u, tab.time[u][assignment[u]]))
    start = [math.nan] * n
    state = [0] * n  # 0 new, 1 on the stack, 2 done

    def visit(v: int) -> bool:
        state[v] = 1
        best = 0.0
        for u, lag in incoming[v]:
            if state[u] == 1 or (state[u] == 0 and not visit(u)):
                return False
            best = max(best, start[u] + lag)
        start[v] = best
        state[v] = 2
        return True

    for v in range(n):
        if state[v] == 0 and not visit(v):
            return math.inf
    return max(start[v] + tab.time[v][assignment[v]] for v in range(n))


def enumerate_optimum(inst: Instance) -> float | None:
    """The least makespan over every mapping and device order (None: no feasible mapping)."""
    tab = inst.tables
    best = math.inf
    for assignment in itertools.product(*tab.compatible):
        groups = [[v for v in range(tab.n) if assignment[v] == p] for p in range(tab.devices)]
        for sequences in itertools.product(*(itertools.permutations(g) for g in groups)):
            best = min(best, _longest_path(inst, assignment, list(sequences)))
    return None if math.isinf(best) else best


def tiny(seed: int) -> Instance:
    """A seeded tiny instance (see the module docstring)."""
    rng = random.Random(seed)
    n = 3 + seed % 3
    count = 2 + (seed // 3) % 2
    twins = seed % 4 == 0
    kinds = [DeviceType("a", 100e12, 1e12), DeviceType("b", 40e12, 2e12, launch=2e-6),
             DeviceType("c", 10e12, 0.5e12)]
    types = [kinds[0], kinds[0]] + kinds[1:count - 1] if twins else [rng.choice(kinds) for _ in range(count)]
    devices = tuple(Device(f"d{p}", types[p].name) for p in range(count))
    used = tuple(dict.fromkeys(types))
    switches: tuple[Switch, ...] = ()
    links: list[Link] = []
    if twins or rng.random() < 0.5:
        switches = (Switch("sw", 8),)
        bandwidth, latency = rng.choice((10e9, 50e9)), rng.choice((0.0, 2e-6))
        links = [Link((d.name, "sw"), bandwidth, latency) for d in devices]
        if not twins and rng.random() < 0.5:
            links.append(Link(("d0", "d1"), rng.uniform(50e9, 400e9), rng.uniform(0.0, 1e-6)))
    else:
        for p, q in itertools.combinations(range(count), 2):
            if q == p + 1 or rng.random() < 0.5:
                links.append(Link((f"d{p}", f"d{q}"), rng.uniform(5e9, 100e9), rng.uniform(0.0, 5e-6)))
    hardware = Hardware(used, devices, switches, tuple(links))
    explicit = not twins and rng.random() < 0.5
    tasks = []
    for v in range(n):
        restrict = None
        if not twins and rng.random() < 0.2:
            restrict = (rng.choice(used).name,)
        if explicit:
            tasks.append(Task(f"t{v}", times=tuple(round(rng.uniform(1e-4, 1e-3), 7) for _ in range(count)),
                              types=restrict))
        else:
            flops = rng.uniform(1e9, 5e10)
            tasks.append(Task(f"t{v}", flops=flops, traffic=flops / rng.uniform(5, 200), types=restrict))
    edges = []
    for u, v in itertools.combinations(range(n), 2):
        if rng.random() < 0.45:
            edges.append(Edge(f"t{u}", f"t{v}", round(rng.uniform(0.0, 4e6), 1)))
    return Instance(hardware, Workload(tuple(tasks), tuple(edges)))


# -- chase_arch ------------------------------------------------------------------------------------


def arch_optimum(inst: ArchInstance) -> float | None:
    """The largest capability over every split of device counts over the racks, each with its
    minimal network (None: nothing feasible). Exact: every row is monotone in the network counts
    (more ToRs, uplinks or spines only add power, space and cost and take ports), and the minimal
    network meets the radix and oversubscription rows whenever any network does."""
    per_type = []
    for t in inst.types:
        splits = [split for split in itertools.product(range(t.max_count + 1), repeat=inst.racks)
                  if sum(split) <= t.max_count]
        per_type.append(splits)
    best = None
    for choice in itertools.product(*per_type):
        counts = tuple(tuple(choice[i][r] for i in range(len(inst.types))) for r in range(inst.racks))
        design = minimal_network(inst, counts)
        if violations(inst, design):
            continue
        value = capability(inst, design)
        if best is None or value > best:
            best = value
    return best


def tiny_arch(seed: int) -> ArchInstance:
    """A seeded design space small enough to enumerate: 2 or 3 device types with at most 2-3 of
    each, 1 or 2 racks, a tight budget, rack power or switch radix (by seed)."""
    rng = random.Random(seed)
    count = 2 + seed % 2
    rows = random.Random(seed).sample(ARCH_TYPES, count)
    types = make_types(tuple(rows), 1)
    types = tuple(replace(t, max_count=rng.choice((2, 3)), capability=float(rng.randint(1, 9)))
                  for t in types)
    full = sum(t.device.cost * t.max_count for t in types)
    return ArchInstance(
        types=types, racks=1 + (seed // 2) % 2, rack_power=rng.choice((2000.0, 4000.0, 40000.0)),
        rack_units=rng.choice((4, 42)), switch_radix=rng.choice((2, 4, 32)), switch_power=300.0,
        switch_units=1.0, switch_cost=rng.choice((1000.0, 20000.0)), uplink_bandwidth=50e9,
        copper_cost=100.0, optical_cost=1000.0, copper_latency=1e-6, optical_latency=2e-6,
        island_latency=0.5e-6, budget=round(rng.uniform(0.3, 0.9) * full + 30_000, -2),
        oversubscription=float(rng.choice((1, 2, 4))),
        memory_required=rng.choice((0.0, 100e9)))
