"""Declared fields, loader, checker and generator of the ``chase`` mapping problem (see
:mod:`coopt.problems.chase` for the formulation, its symbols and sources; the data model,
:class:`Instance` and its :class:`Tables`, is in :mod:`.instance`).

A solution maps every task to a device and gives its start time::

    {"objective": C, "assignment": {task: device}, "start_s": {task: seconds},
     "simulated_makespan_s": T}

``C`` is the contention-free makespan ``max_v (S_v + t_v(p_v))``, the objective the MILP
minimises; ``T`` is the makespan of the same mapping replayed by the discrete-event simulator with
link contention (:mod:`.simulator`), which the checker recomputes and compares.

Checker (``check``) against the MILP (:mod:`.milp`), row by row:

================================================  =============================================
model                                             checker violation
================================================  =============================================
``sum_p x_vp = 1`` over compatible devices         ``assignment`` (one known device per task),
                                                  ``compatible`` (the task can run there)
``S_v >= 0``                                      ``start`` (finite, >= 0)
``S_v >= S_u + t_u + sum_pq c_uv(p,q) z_uvpq``    ``precedence`` (with the routed transfer time)
disjunctive pair rows (same device, ``o_uv``)     ``overlap`` (consecutive tasks of a device)
``C >= S_v + t_v`` (objective)                    ``objective`` recomputed as the largest finish
``z`` transportation rows                         (they state ``z = x_u x_v``; no decision of
                                                  their own)
heads, tails, loads, horizon, symmetry, windows   valid inequalities and restrictions proved to
                                                  keep an optimum (``milp`` docstring); nothing
                                                  for the checker to enforce
(none)                                            ``simulated_makespan`` (the reported replay)
================================================  =============================================

Every check allows a slack of ``TOL`` times the makespan (the suite's tolerance).
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from typing import Any

from coopt.errors import InstanceError, UsageError
from coopt.problem import ABS_FLOOR, TOL, Solution, Violation
from coopt.problems.chase.hardware import (
    Device,
    DeviceType,
    Hardware,
    Link,
    Rack,
    Switch,
    deployment_errors,
)
from coopt.problems.chase.instance import Instance, Tables
from coopt.problems.chase.schedule import replay_order
from coopt.problems.chase.simulator import simulate
from coopt.problems.chase.workloads import Edge, Task, Workload, random_layered
from coopt.schema import Field, Schema

#: Largest sizes a file may declare (the all-pairs routing table and the MILP grow with them).
MAX_DEVICES = 1024
MAX_TASKS = 50_000

# -- declared fields -----------------------------------------------------------------------------

_TYPE_FIELDS = (
    Field("name", "str", "device type name (devices refer to it)", example="gpu"),
    Field("peak_tflops", "float", "peak compute rate (the workload's precision, e.g. dense BF16)",
          unit="TFLOP/s", si=1e12, min=0, max=1e6, default=0.0, example=989.0),
    Field("memory_bandwidth_tbyte_per_s", "float", "peak memory bandwidth", unit="TB/s", si=1e12,
          min=0, max=1e3, default=0.0, example=3.35),
    Field("memory_gb", "float", "device memory; a task whose footprint exceeds it cannot run there "
          "(0: not modelled)", unit="GB", si=1e9, min=0, max=1e6, default=0.0),
    Field("compute_efficiency", "float", "achieved share of the peak compute rate (eta_c)",
          positive=True, max=1.0, default=1.0),
    Field("memory_efficiency", "float", "achieved share of the peak memory bandwidth (eta_m)",
          positive=True, max=1.0, default=1.0),
    Field("launch_us", "float", "time added to every task on this type (launch, dispatch)",
          unit="us", si=1e-6, min=0, max=1e9, default=0.0),
    Field("power_w", "float", "power drawn by one device (rack power rule)", unit="W", min=0,
          max=1e6, default=0.0),
    Field("rack_units", "float", "space one device takes in a rack (rack space rule)", unit="U",
          min=0, max=100, default=0.0),
    Field("cost_usd", "float", "price of one device", unit="US$", min=0, max=1e9, default=0.0),
    Field("ports", "int", "links a device of this type may have (0: not limited)", min=0,
          max=4096, default=0),
)

SCHEMA = Schema(
    [
        Field("device_types", "tables", "the device types (compute dies, accelerators, CPUs, "
              "memory nodes)", min_length=1, fields=_TYPE_FIELDS,
              example=[{"name": "gpu", "peak_tflops": 989.0, "memory_bandwidth_tbyte_per_s": 3.35}]),
        Field("racks", "tables", "racks: containers with a power and a space limit", default=(),
              fields=(
                  Field("name", "str", "rack name (devices and switches refer to it)", example="r0"),
                  Field("power_w", "float", "power the rack can deliver", unit="W", positive=True,
                        max=1e7, example=40000.0),
                  Field("units", "int", "rack units of space", min=1, max=1000, example=42),
              )),
        Field("devices", "tables", "the devices, in the order of the cost matrices (time_s)",
              min_length=1, fields=(
                  Field("name", "str", "device name (links and solutions refer to it)", example="gpu0"),
                  Field("type", "str", "its device type", example="gpu"),
                  Field("rack", "str", "the rack it sits in ('' : none)", default=""),
              ), example=[{"name": "gpu0", "type": "gpu"}, {"name": "gpu1", "type": "gpu"}]),
        Field("switches", "tables", "switches", default=(), fields=(
            Field("name", "str", "switch name (links refer to it)", example="sw0"),
            Field("radix", "int", "ports of the switch (links it may have)", min=1, max=100_000, example=64),
            Field("rack", "str", "the rack it sits in ('' : none)", default=""),
            Field("power_w", "float", "power drawn", unit="W", min=0, max=1e6, default=0.0),
            Field("rack_units", "float", "rack space taken", unit="U", min=0, max=100, default=0.0),
            Field("cost_usd", "float", "price", unit="US$", min=0, max=1e9, default=0.0),
        ), example=[{"name": "sw0", "radix": 64}]),
        Field("links", "tables", "full-duplex links between two nodes (devices or switches)",
              default=(), fields=(
                  Field("ends", "strs", "the two nodes it joins", min_length=2, example=["gpu0", "sw0"]),
                  Field("bandwidth_gbyte_per_s", "float", "bandwidth in each direction",
                        unit="GB/s", si=1e9, positive=True, max=1e6, example=50.0),
                  Field("latency_us", "float", "latency of one traversal", unit="us", si=1e-6,
                        min=0, max=1e9, default=0.0),
              ), example=[{"ends": ["gpu0", "sw0"], "bandwidth_gbyte_per_s": 50.0, "latency_us": 2.0},
                          {"ends": ["gpu1", "sw0"], "bandwidth_gbyte_per_s": 50.0, "latency_us": 2.0}]),
        Field("tasks", "tables", "the tasks of the workload DAG", min_length=1, fields=(
            Field("name", "str", "task name (edges and solutions refer to it)", example="t0"),
            Field("gflop", "float", "floating-point work (roofline)", unit="GFLOP", si=1e9, min=0,
                  max=1e12, default=0.0),
            Field("traffic_mb", "float", "memory traffic: bytes read and written (roofline)",
                  unit="MB", si=1e6, min=0, max=1e12, default=0.0),
            Field("footprint_gb", "float", "device memory the task needs", unit="GB", si=1e9,
                  min=0, max=1e6, default=0.0),
            Field("time_s", "floats", "explicit run time on each device, in device order (a "
                  "Topcuoglu-style cost matrix row; replaces the roofline)", unit="s",
                  positive=True, max=1e9, length="devices", default=None),
            Field("types", "strs", "device types the task may run on (default: every type)",
                  default=None),
        ), example=[{"name": "t0", "gflop": 500.0, "traffic_mb": 100.0},
                    {"name": "t1", "gflop": 200.0, "traffic_mb": 4000.0}]),
        Field("edges", "tables", "data dependencies: 'to' starts after 'from' has finished and its "
              "data has arrived", default=(), fields=(
                  Field("from", "str", "producing task", example="t0"),
                  Field("to", "str", "consuming task", example="t1"),
                  Field("data_mb", "float", "data moved", unit="MB", si=1e6, min=0, max=1e12, default=0.0),
              ), example=[{"from": "t0", "to": "t1", "data_mb": 50.0}]),
    ],
    version=1,
)

# -- rules ---------------------------------------------------------------------------------------


def workload_errors(inst: Instance) -> list[tuple[str, str]]:
    """Every broken workload rule as (field, expected): unique task names, known device types,
    explicit times or a roofline but not both, a compatible device with a positive run time for
    every task, edges between two distinct known tasks, no duplicate edge, no cycle."""
    hw, wl = inst.hardware, inst.workload
    errors: list[tuple[str, str]] = []
    types = {t.name for t in hw.device_types}
    names: dict[str, int] = {}
    for i, task in enumerate(wl.tasks):
        if task.name in names:
            errors.append((f"tasks[{i}].name", f"'{task.name}' is declared twice"))
        names[task.name] = i
        for t in task.types or ():
            if t not in types:
                errors.append((f"tasks[{i}].types", f"task '{task.name}' names device type '{t}', "
                               f"which is not declared ({', '.join(sorted(types))})"))
        if task.times is not None and (task.flops or task.traffic):
            errors.append((f"tasks[{i}].time_s", f"task '{task.name}' gives both time_s and a roofline "
                           "(gflop, traffic_mb); give one"))
    seen: set[tuple[str, str]] = set()
    for i, edge in enumerate(wl.edges):
        for key, end in (("from", edge.source), ("to", edge.target)):
            if end not in names:
                errors.append((f"edges[{i}].{key}", f"edge {i} names task '{end}', which is not declared"))
        if edge.source == edge.target:
            errors.append((f"edges[{i}]", f"edge {i} joins task '{edge.source}' to itself"))
        if (edge.source, edge.target) in seen:
            errors.append((f"edges[{i}]", f"edge {edge.source} -> {edge.target} is declared twice"))
        seen.add((edge.source, edge.target))
    if errors:
        return errors
    tab = inst.tables
    for v, task in enumerate(wl.tasks):
        if not tab.compatible[v]:
            errors.append((f"tasks[{v}]", f"task '{task.name}' has no compatible device (types "
                           f"{list(task.types) if task.types else 'any'}, footprint "
                           f"{task.footprint / 1e9:g} GB, and a finite roofline are needed)"))
        elif any(tab.time[v][p] <= 0 for p in tab.compatible[v]):
            p = next(p for p in tab.compatible[v] if tab.time[v][p] <= 0)
            errors.append((f"tasks[{v}]", f"task '{task.name}' would run in zero time on device "
                           f"'{tab.device_names[p]}'; give it FLOPs, traffic or a launch time"))
    if not tab.acyclic:
        errors.append(("edges", f"the task graph has a cycle: {_cycle(tab)}"))
    return errors


def _cycle(tab: Tables) -> str:
    """One cycle of a cyclic task graph, as 'a -> b -> a'."""
    import networkx as nx

    graph = nx.DiGraph(zip(tab.source, tab.target, strict=True))
    cycle = nx.find_cycle(graph)
    names = [tab.task_names[u] for u, _ in cycle] + [tab.task_names[cycle[0][0]]]
    return " -> ".join(names)


def load(fields: Any) -> Instance:
    values = SCHEMA.read(fields)
    hw = Hardware(
        device_types=tuple(DeviceType(
            name=t.name, peak_flops=t.peak_tflops, memory_bandwidth=t.memory_bandwidth_tbyte_per_s,
            memory=t.memory_gb, compute_efficiency=t.compute_efficiency,
            memory_efficiency=t.memory_efficiency, launch=t.launch_us, power=t.power_w,
            rack_units=t.rack_units, cost=t.cost_usd, ports=t.ports) for t in values.device_types),
        devices=tuple(Device(d.name, d.type, d.rack) for d in values.devices),
        switches=tuple(Switch(s.name, s.radix, s.rack, s.power_w, s.rack_units, s.cost_usd)
                       for s in values.switches),
        links=tuple(Link(tuple(link.ends), link.bandwidth_gbyte_per_s, link.latency_us)
                    for link in values.links),
        racks=tuple(Rack(r.name, r.power_w, r.units) for r in values.racks),
    )
    workload = Workload(
        tasks=tuple(Task(t.name, flops=t.gflop, traffic=t.traffic_mb, footprint=t.footprint_gb,
                         times=t.time_s, types=t.types) for t in values.tasks),
        edges=tuple(Edge(e["from"], e["to"], e.data_mb) for e in values.edges),
    )
    errors = []
    if len(hw.devices) > MAX_DEVICES:
        errors.append(("devices", f"at most {MAX_DEVICES} devices, got {len(hw.devices)}"))
    if len(workload.tasks) > MAX_TASKS:
        errors.append(("tasks", f"at most {MAX_TASKS} tasks, got {len(workload.tasks)}"))
    for i, link in enumerate(hw.links):
        if len(link.ends) != 2:
            errors.append((f"links[{i}].ends", f"expected 2 node names, got {len(link.ends)}"))
    if not errors:
        inst = Instance(hw, workload)
        errors = deployment_errors(hw)
        errors += workload_errors(inst) if not errors else []
    if errors:
        raise InstanceError.combine([InstanceError(fields.path, fields.name(key), text)
                                     for key, text in errors])
    return inst


def _without_defaults(row: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in defaults or v != defaults[k]}


_TYPE_DEFAULTS = {"peak_tflops": 0.0, "memory_bandwidth_tbyte_per_s": 0.0, "memory_gb": 0.0,
                  "compute_efficiency": 1.0, "memory_efficiency": 1.0, "launch_us": 0.0, "power_w": 0.0,
                  "rack_units": 0.0, "cost_usd": 0.0, "ports": 0}
_PLACE_DEFAULTS = {"rack": "", "power_w": 0.0, "rack_units": 0.0, "cost_usd": 0.0, "latency_us": 0.0}


def dump(inst: Instance) -> dict[str, Any]:
    """The instance in file units (the inverse of :func:`load`; fields at their default left out)."""
    hw, wl = inst.hardware, inst.workload
    out: dict[str, Any] = {
        "device_types": [_without_defaults({
            "name": t.name, "peak_tflops": t.peak_flops / 1e12,
            "memory_bandwidth_tbyte_per_s": t.memory_bandwidth / 1e12, "memory_gb": t.memory / 1e9,
            "compute_efficiency": t.compute_efficiency, "memory_efficiency": t.memory_efficiency,
            "launch_us": t.launch / 1e-6, "power_w": t.power, "rack_units": t.rack_units,
            "cost_usd": t.cost, "ports": t.ports}, _TYPE_DEFAULTS) for t in hw.device_types],
    }
    if hw.racks:
        out["racks"] = [{"name": r.name, "power_w": r.power, "units": r.units} for r in hw.racks]
    out["devices"] = [_without_defaults({"name": d.name, "type": d.type, "rack": d.rack}, _PLACE_DEFAULTS)
                      for d in hw.devices]
    if hw.switches:
        out["switches"] = [_without_defaults({
            "name": s.name, "radix": s.radix, "rack": s.rack, "power_w": s.power,
            "rack_units": s.rack_units, "cost_usd": s.cost}, _PLACE_DEFAULTS) for s in hw.switches]
    if hw.links:
        out["links"] = [_without_defaults({
            "ends": list(link.ends), "bandwidth_gbyte_per_s": link.bandwidth / 1e9,
            "latency_us": link.latency / 1e-6}, _PLACE_DEFAULTS) for link in hw.links]
    tasks = []
    for t in wl.tasks:
        row: dict[str, Any] = {"name": t.name}
        if t.times is not None:
            row["time_s"] = list(t.times)
        else:
            if t.flops:
                row["gflop"] = t.flops / 1e9
            if t.traffic:
                row["traffic_mb"] = t.traffic / 1e6
        if t.footprint:
            row["footprint_gb"] = t.footprint / 1e9
        if t.types is not None:
            row["types"] = list(t.types)
        tasks.append(row)
    out["tasks"] = tasks
    if wl.edges:
        out["edges"] = [{"from": e.source, "to": e.target, "data_mb": e.data / 1e6} for e in wl.edges]
    return out


# -- solutions -----------------------------------------------------------------------------------


def makespan(inst: Instance, assignment: list[int], start: list[float]) -> float:
    """``max_v (S_v + t_v(p_v))``: the contention-free makespan of a schedule (seconds)."""
    time = inst.tables.time
    return max(start[v] + time[v][assignment[v]] for v in range(inst.n_tasks))


def make_solution(inst: Instance, assignment: list[int], start: list[float]) -> Solution:
    """The JSON solution of a schedule: its makespan, mapping, start times and the makespan the
    simulator with link contention gives the same mapping (:func:`.simulator.simulate`)."""
    tab = inst.tables
    order = replay_order(tab, assignment, start)
    return {
        "objective": makespan(inst, assignment, start),
        "assignment": {tab.task_names[v]: tab.device_names[assignment[v]] for v in range(tab.n)},
        "start_s": {tab.task_names[v]: start[v] for v in range(tab.n)},
        "simulated_makespan_s": simulate(inst, assignment, order).makespan,
    }


def parse(inst: Instance, solution: Solution) -> tuple[tuple[list[int], list[float]] | None, list[Violation]]:
    """(device index per task, start per task) of a solution, or why it is malformed."""
    tab = inst.tables
    if not isinstance(solution, dict):
        return None, [Violation("solution", "expected a JSON object")]
    mapping, starts = solution.get("assignment"), solution.get("start_s")
    if not isinstance(mapping, dict) or not isinstance(starts, dict):
        return None, [Violation("solution",
                                "expected 'assignment' {task: device} and 'start_s' {task: seconds}")]
    device_index = {name: p for p, name in enumerate(tab.device_names)}
    violations = []
    assignment, start = [0] * tab.n, [0.0] * tab.n
    for v, name in enumerate(tab.task_names):
        device = mapping.get(name)
        if not isinstance(device, str) or device not in device_index:
            violations.append(Violation("assignment",
                                        f"task '{name}' is mapped to {device!r}, not to a device"))
        else:
            assignment[v] = device_index[device]
        value = starts.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            violations.append(Violation("start",
                                        f"task '{name}' has start {value!r}, expected a finite number"))
        else:
            start[v] = float(value)
    for key, table in (("assignment", mapping), ("start_s", starts)):
        extra = sorted(set(table) - set(tab.task_names))
        if extra:
            violations.append(Violation(key, f"names tasks that do not exist: {extra[:3]}"))
    if violations:
        return None, violations
    return (assignment, start), []


def check(inst: Instance, solution: Solution) -> list[Violation]:
    parsed, violations = parse(inst, solution)
    if parsed is None:
        return violations
    assignment, start = parsed
    tab = inst.tables
    for v in range(tab.n):
        p = assignment[v]
        if not math.isfinite(tab.time[v][p]):
            violations.append(Violation("compatible", f"task '{tab.task_names[v]}' cannot run on "
                                        f"device '{tab.device_names[p]}'"))
    if violations:
        return violations
    finish = [start[v] + tab.time[v][assignment[v]] for v in range(tab.n)]
    slack = TOL * max(finish) + ABS_FLOOR
    for v in range(tab.n):
        if start[v] < -slack:
            violations.append(Violation("start", f"task '{tab.task_names[v]}' starts at {start[v]!r} < 0"))
    for e, (u, v) in enumerate(zip(tab.source, tab.target, strict=True)):
        ready = finish[u] + tab.comm(e, assignment[u], assignment[v])
        if start[v] < ready - slack:
            violations.append(Violation("precedence",
                                        f"task '{tab.task_names[v]}' starts at {start[v]:.9g} s, "
                                        f"before the data of '{tab.task_names[u]}' arrives at {ready:.9g} s"))
    order = replay_order(tab, assignment, start)
    last: dict[int, int] = {}
    for v in order:
        p = assignment[v]
        if p in last and start[v] < finish[last[p]] - slack:
            u = last[p]
            violations.append(Violation("overlap", f"tasks '{tab.task_names[u]}' and '{tab.task_names[v]}' "
                                        f"overlap on device '{tab.device_names[p]}' ({start[v]:.9g} s < "
                                        f"{finish[u]:.9g} s)"))
        last[p] = v
    if violations:
        return violations
    simulated = simulate(inst, assignment, order).makespan
    claimed = solution.get("simulated_makespan_s")
    if (isinstance(claimed, bool) or not isinstance(claimed, int | float)
            or not math.isclose(claimed, simulated, rel_tol=TOL, abs_tol=ABS_FLOOR)):
        violations.append(Violation("simulated_makespan", f"claimed {claimed!r}, the simulator gives "
                                    f"{simulated!r} s for this mapping"))
    return violations


def objective(inst: Instance, solution: Solution) -> float:
    parsed, violations = parse(inst, solution)
    if parsed is None:
        raise ValueError(str(violations[0]))
    return makespan(inst, *parsed)


# -- generator -----------------------------------------------------------------------------------

#: Device types of the generated platforms, research notes 3.e [S]: (TFLOP/s, TB/s, GB, W, US$).
GPU = DeviceType("gpu", 989e12, 3.35e12, 80e9, 0.7, 0.8, 5 * 1e-6, 700.0, 0.0, 30_000.0)
OLD_GPU = DeviceType("old_gpu", 312e12, 2.0e12, 80e9, 0.7, 0.8, 5 * 1e-6, 400.0, 0.0, 12_000.0)
NPU = DeviceType("npu", 400e12, 1.6e12, 64e9, 0.8, 0.8, 10 * 1e-6, 350.0, 0.0, 8_000.0)
CPU = DeviceType("cpu", 5e12, 0.3e12, 512e9, 0.6, 0.7, 1e-6, 350.0, 0.0, 10_000.0)

#: Links of the generated platforms [S]: intra-node 450 GB/s at 1 us, NIC 50 GB/s at 5 us.
INTRA_NODE, NIC = (450e9, 1e-6), (50e9, 5 * 1e-6)


def platform(kind: str) -> Hardware:
    """A generated 4-device platform:

    * ``switch``: 2 GPUs and 2 NPUs on one switch (NIC links): two pairs of identical devices;
    * ``servers``: two servers of one GPU and one NPU each, joined inside by an intra-node link and
      to a top-of-rack switch by their NICs (GPU-NPU in a server is fast, across servers slow);
    * ``mixed``: a GPU, an older GPU, an NPU and a CPU on one switch;
    * ``identical``: 4 GPUs on one switch (the homogeneous case of the list-scheduling theory).
    """
    def star(types: list[DeviceType]) -> Hardware:
        devices = tuple(Device(f"{t.name}{i}", t.name) for i, t in enumerate(types))
        links = tuple(Link((d.name, "sw0"), *NIC) for d in devices)
        kinds = tuple(dict.fromkeys(types))
        return Hardware(kinds, devices, (Switch("sw0", 64),), links)

    if kind == "switch":
        return star([GPU, GPU, NPU, NPU])
    if kind == "mixed":
        return star([GPU, OLD_GPU, NPU, CPU])
    if kind == "identical":
        return star([GPU] * 4)
    if kind == "servers":
        devices = (Device("gpu0", "gpu"), Device("npu0", "npu"), Device("gpu1", "gpu"), Device("npu1", "npu"))
        links = (Link(("gpu0", "npu0"), *INTRA_NODE), Link(("gpu1", "npu1"), *INTRA_NODE),
                 *(Link((d.name, "tor"), *NIC) for d in devices))
        return Hardware((GPU, NPU), devices, (Switch("tor", 64),), links)
    raise ValueError(f"unknown platform {kind!r}")


PLATFORMS = ("switch", "servers", "mixed", "identical")

#: A server switch (NVSwitch-like) and a top-of-rack / spine switch [S]: radix, W, U, US$.
SERVER_SWITCH = dict(radix=64, power=500.0, rack_units=0.0, cost=10_000.0)
TOR_SWITCH = dict(radix=64, power=600.0, rack_units=1.0, cost=20_000.0)


def server_cluster(
    servers: int,
    kinds: list[DeviceType],
    *,
    servers_per_rack: int = 4,
    server_units: float = 4.0,
    intra: tuple[float, float] = INTRA_NODE,
    nic: tuple[float, float] = NIC,
    uplink: tuple[float, float] = (400e9, 2e-6),
    rack_power: float = 40e3,
    rack_units: int = 42,
) -> Hardware:
    """``servers`` servers, each holding one device of every type in ``kinds``: inside a server
    every device links to the server switch (``intra``); every device also has a NIC link to its
    rack's top-of-rack switch (``nic``, rail style); with more than one rack the ToRs link to one
    spine (``uplink``). A server takes ``server_units`` U in its rack (spread over its devices);
    power is the devices' and switches'. The spine sits in the last rack."""
    racks = max(1, -(-servers // servers_per_rack))
    share = server_units / len(kinds)
    types = tuple(dict.fromkeys(replace(k, rack_units=share, ports=2) for k in kinds))
    by_name = {t.name: t for t in types}
    devices, switches, links = [], [], []
    for r in range(racks):
        switches.append(Switch(f"tor{r}", rack=f"rack{r}", **TOR_SWITCH))
    if racks > 1:
        switches.append(Switch("spine", rack=f"rack{racks - 1}", **TOR_SWITCH))
        links += [Link((f"tor{r}", "spine"), *uplink) for r in range(racks)]
    for s in range(servers):
        rack = f"rack{s // servers_per_rack}"
        switch = f"srv{s}.sw"
        switches.append(Switch(switch, rack=rack, **SERVER_SWITCH))
        for i, kind in enumerate(kinds):
            name = f"srv{s}.{kind.name}{i}"
            devices.append(Device(name, by_name[kind.name].name, rack))
            links.append(Link((name, switch), *intra))
            links.append(Link((name, f"tor{s // servers_per_rack}"), *nic))
    return Hardware(types, tuple(devices), tuple(switches), tuple(links),
                    tuple(Rack(f"rack{r}", rack_power, rack_units) for r in range(racks)))


def tasks_of_size(size: int) -> int:
    """Tasks of a generated instance of ``size``."""
    return 4 + 2 * size


#: The largest ``size`` :func:`generate` accepts (tasks, 4 + 2 size).
MAX_SIZE = 1000


def generate(seed: int, size: int) -> Instance:
    """A seeded layered random DAG of ``4 + 2 size`` tasks (:func:`.workloads.random_layered`) on
    one of the four 4-device platforms of :func:`platform` (``seed mod 4``), with a
    communication-to-computation ratio of 0.1, 1 or 10 (``seed mod 3``) on the reference GPU and
    NIC, so that any three consecutive seeds cover the three ratios."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size is 1..{MAX_SIZE} (tasks, 4 + 2 size), got {size}")
    rng = random.Random(seed)
    kind = PLATFORMS[seed % len(PLATFORMS)]
    ccr = (0.1, 1.0, 10.0)[seed % 3]
    workload = random_layered(rng, tasks_of_size(size), ccr=ccr)
    return Instance(platform(kind), workload)
