"""The architecture side of CHASE: which devices, switches and cables to deploy in which racks
(the ``chase_arch`` problem), its checker, and the hardware graph a design becomes.

Design space (one instance): device types ``tau`` (power ``P_tau``, rack units ``U_tau``, price
``c_tau``, NIC ports ``k_tau`` of ``B_tau`` bytes/s each, memory ``m_tau``, a capability ``kappa_tau``
(default its peak TFLOP/s) and at most ``N_tau`` of them); ``R`` identical racks (``P_rack``,
``U_rack``); one switch model (radix ``R_sw``, ``P_sw``, ``U_sw``, ``c_sw``) used as top-of-rack
(ToR) and as spine, whose uplink ports carry ``B_up``; copper cables inside a rack (device to ToR,
``c_cu``) and optical cables between racks (ToR to spine, ``c_opt``); a budget, an allowed
oversubscription ``omega >= 1`` and a memory requirement ``M_req``. The spines fill one network
rack of the same power and space.

A design: ``n_{tau r}`` devices of each type in each rack, ``t_r`` ToRs and ``u_r`` uplinks per rack,
``s`` spines (research notes 3.b (ii))::

    max  sum_{tau, r} kappa_tau n_{tau r}                                (capability proxy)
    sum_tau P_tau n_{tau r} + P_sw t_r <= P_rack                         (rack power)
    sum_tau U_tau n_{tau r} + U_sw t_r <= U_rack                         (rack space)
    sum_tau k_tau n_{tau r} + u_r <= R_sw t_r                            (ToR radix)
    u_r >= t_r                                                           (every ToR reaches a spine)
    sum_r u_r <= R_sw s;  P_sw s <= P_rack;  U_sw s <= U_rack            (spine radix, network rack)
    omega B_up u_r >= sum_tau k_tau B_tau n_{tau r}                      (oversubscription)
    kappa_cu = sum k_tau n_{tau r} (copper),  kappa_opt = sum u_r         (cabling classes)
    sum c_tau n + c_sw (sum t_r + s) + c_cu kappa_cu + c_opt kappa_opt <= budget
    sum m_tau n_{tau r} >= M_req                                         (workload memory)
    sum_r n_{tau r} <= N_tau                                             (design space)

The checker (``check``) enforces every row above (to float round-off), one violation name
each: ``rack_power``, ``rack_space``, ``tor_radix``, ``tor_uplinks``, ``spine_radix``,
``network_rack``, ``oversubscription``, ``budget``, ``memory``, ``count`` (and ``design`` for a
malformed one); the cable counts and the objective are recomputed from the counts, never read.
The MILP's only extra row, racks in non-increasing order of capability, is a symmetry
restriction (the racks are identical, so sorting any design's racks by capability gives an
equivalent design that satisfies it) with nothing to check.

:func:`hardware_of` turns a design into a :class:`~.hardware.Hardware` graph for the mapper and
the simulator: every device joins the ToRs of its rack (each port on the least used ToR,
parallel ports to one ToR as one link of their summed bandwidth); a device type with an
``island_size`` also forms scale-up islands of that many devices in a rack around an island
switch (NVLink-style, ``island_bandwidth``); the uplinks of a rack give every ToR one, then go
to the least used ToRs, round-robin over the spines (parallel uplinks as one link). The spines
act as one core switch (a modular chassis): a backplane link of ``R_sw B_up`` joins consecutive
spines, so every ToR reaches every other. The minimal network of a set of device counts
(:func:`minimal_network`) is the least ToRs, uplinks and spines the radix, uplink and
oversubscription rows allow.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from coopt.errors import InstanceError, UsageError
from coopt.problem import Solution, Violation
from coopt.problems.chase.hardware import Device, DeviceType, Hardware, Link, Rack, Switch
from coopt.schema import Field, Schema

# -- declared fields -----------------------------------------------------------------------------

SCHEMA = Schema(
    [
        Field("device_types", "tables", "the device types that may be deployed", min_length=1, fields=(
            Field("name", "str", "device type name", example="gpu"),
            Field("peak_tflops", "float", "peak compute rate", unit="TFLOP/s", si=1e12, min=0, max=1e6,
                  default=0.0, example=989.0),
            Field("memory_bandwidth_tbyte_per_s", "float", "peak memory bandwidth", unit="TB/s",
                  si=1e12, min=0, max=1e3, default=0.0, example=3.35),
            Field("memory_gb", "float", "device memory", unit="GB", si=1e9, min=0, max=1e6, default=0.0),
            Field("compute_efficiency", "float", "achieved share of the peak compute rate",
                  positive=True, max=1.0, default=1.0),
            Field("memory_efficiency", "float", "achieved share of the peak memory bandwidth",
                  positive=True, max=1.0, default=1.0),
            Field("launch_us", "float", "time added to every task", unit="us", si=1e-6, min=0,
                  max=1e9, default=0.0),
            Field("power_w", "float", "power drawn by one device", unit="W", min=0, max=1e6, example=700.0),
            Field("rack_units", "float", "rack space of one device", unit="U", min=0, max=100, example=1.0),
            Field("cost_usd", "float", "price of one device", unit="US$", min=0, max=1e9, example=30000.0),
            Field("nic_ports", "int", "NIC ports to the top-of-rack switch", min=1, max=64, default=1),
            Field("nic_gbyte_per_s", "float", "bandwidth of one NIC port", unit="GB/s", si=1e9,
                  positive=True, max=1e6, example=50.0),
            Field("island_size", "int", "devices per scale-up island in a rack (1: none)", min=1,
                  max=1024, default=1),
            Field("island_gbyte_per_s", "float", "bandwidth of a device's link into its island",
                  unit="GB/s", si=1e9, positive=True, max=1e6, default=450.0),
            Field("capability", "float", "capability proxy of one device (default: its peak TFLOP/s)",
                  min=0, max=1e9, default=None),
            Field("max_count", "int", "at most this many devices of the type", min=0, max=100_000,
                  example=8),
        )),
        Field("racks", "int", "identical racks available", min=1, max=1000, example=2),
        Field("rack_power_w", "float", "power one rack can deliver", unit="W", positive=True, max=1e7,
              example=40000.0),
        Field("rack_units", "int", "rack units of one rack", min=1, max=1000, default=42),
        Field("switch", "table", "the switch model (top-of-rack and spine)", fields=(
            Field("radix", "int", "ports of the switch", min=2, max=100_000, example=64),
            Field("power_w", "float", "power drawn", unit="W", min=0, max=1e6, default=600.0),
            Field("rack_units", "float", "rack space", unit="U", min=0, max=100, default=1.0),
            Field("cost_usd", "float", "price", unit="US$", min=0, max=1e9, default=20000.0),
            Field("uplink_gbyte_per_s", "float", "bandwidth of one ToR-to-spine port", unit="GB/s",
                  si=1e9, positive=True, max=1e6, example=50.0),
        ), example={"radix": 64, "uplink_gbyte_per_s": 50.0}),
        Field("copper_cable_usd", "float", "price of a copper cable (device to ToR, inside a rack)",
              unit="US$", min=0, max=1e7, default=100.0),
        Field("optical_cable_usd", "float", "price of an optical cable (ToR to spine)", unit="US$",
              min=0, max=1e7, default=1000.0),
        Field("copper_latency_us", "float", "latency of a copper hop", unit="us", si=1e-6, min=0,
              max=1e9, default=1.0),
        Field("optical_latency_us", "float", "latency of an optical hop", unit="us", si=1e-6, min=0,
              max=1e9, default=2.0),
        Field("island_latency_us", "float", "latency of an island hop", unit="us", si=1e-6, min=0,
              max=1e9, default=0.5),
        Field("budget_usd", "float", "the cost budget", unit="US$", positive=True, max=1e13,
              example=500000.0),
        Field("oversubscription", "float", "allowed ratio of a rack's device NIC bandwidth to its "
              "uplink bandwidth", min=1.0, max=1e6, default=1.0),
        Field("memory_required_gb", "float", "device memory the workloads need in total", unit="GB",
              si=1e9, min=0, max=1e9, default=0.0),
    ],
    version=1,
)

#: Relative slack of the checker's rows: float round-off only. The counts are integers, so a row
#: holds or fails by whole devices, and the MILP's integer solution meets its rows exactly (a
#: wider slack would accept designs the MILP excludes).
ROUNDING = 1e-12

# -- data model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchType:
    """A deployable device type: the device (:class:`~.hardware.DeviceType`) and its deployment data."""

    device: DeviceType
    nic_ports: int
    nic_bandwidth: float  # bytes/s per port
    island_size: int
    island_bandwidth: float
    capability: float
    max_count: int

    @property
    def name(self) -> str:
        return self.device.name


@dataclass(frozen=True)
class ArchInstance:
    types: tuple[ArchType, ...]
    racks: int
    rack_power: float
    rack_units: int
    switch_radix: int
    switch_power: float
    switch_units: float
    switch_cost: float
    uplink_bandwidth: float
    copper_cost: float
    optical_cost: float
    copper_latency: float
    optical_latency: float
    island_latency: float
    budget: float
    oversubscription: float
    memory_required: float


@dataclass(frozen=True)
class Design:
    """``counts[r][i]`` devices of type ``i`` in rack ``r``; ``tors[r]``, ``uplinks[r]``; ``spines``."""

    counts: tuple[tuple[int, ...], ...]
    tors: tuple[int, ...]
    uplinks: tuple[int, ...]
    spines: int


def load(fields: Any) -> ArchInstance:
    values = SCHEMA.read(fields)
    types = []
    seen: set[str] = set()
    errors = []
    for i, t in enumerate(values.device_types):
        if t.name in seen:
            errors.append(InstanceError(fields.path, f"device_types[{i}].name",
                                        f"'{t.name}' is declared twice"))
        seen.add(t.name)
        device = DeviceType(t.name, t.peak_tflops, t.memory_bandwidth_tbyte_per_s, t.memory_gb,
                            t.compute_efficiency, t.memory_efficiency, t.launch_us, t.power_w,
                            t.rack_units, t.cost_usd, t.nic_ports + (1 if t.island_size > 1 else 0))
        capability = t.capability if t.capability is not None else t.peak_tflops / 1e12
        types.append(ArchType(device, t.nic_ports, t.nic_gbyte_per_s, t.island_size,
                              t.island_gbyte_per_s, capability, t.max_count))
    sw = values.switch
    if sw.radix < 2:
        errors.append(InstanceError(fields.path, "switch.radix", "expected at least 2 ports"))
    if errors:
        raise InstanceError.combine(errors)
    return ArchInstance(
        types=tuple(types), racks=values.racks, rack_power=values.rack_power_w, rack_units=values.rack_units,
        switch_radix=sw.radix, switch_power=sw.power_w, switch_units=sw.rack_units, switch_cost=sw.cost_usd,
        uplink_bandwidth=sw.uplink_gbyte_per_s, copper_cost=values.copper_cable_usd,
        optical_cost=values.optical_cable_usd, copper_latency=values.copper_latency_us,
        optical_latency=values.optical_latency_us, island_latency=values.island_latency_us,
        budget=values.budget_usd, oversubscription=values.oversubscription,
        memory_required=values.memory_required_gb)


def dump(inst: ArchInstance) -> dict[str, Any]:
    return {
        "device_types": [{
            "name": t.name, "peak_tflops": t.device.peak_flops / 1e12,
            "memory_bandwidth_tbyte_per_s": t.device.memory_bandwidth / 1e12,
            "memory_gb": t.device.memory / 1e9, "compute_efficiency": t.device.compute_efficiency,
            "memory_efficiency": t.device.memory_efficiency, "launch_us": t.device.launch / 1e-6,
            "power_w": t.device.power, "rack_units": t.device.rack_units, "cost_usd": t.device.cost,
            "nic_ports": t.nic_ports, "nic_gbyte_per_s": t.nic_bandwidth / 1e9,
            "island_size": t.island_size, "island_gbyte_per_s": t.island_bandwidth / 1e9,
            "capability": t.capability, "max_count": t.max_count} for t in inst.types],
        "racks": inst.racks, "rack_power_w": inst.rack_power, "rack_units": inst.rack_units,
        "switch": {"radix": inst.switch_radix, "power_w": inst.switch_power,
                   "rack_units": inst.switch_units, "cost_usd": inst.switch_cost,
                   "uplink_gbyte_per_s": inst.uplink_bandwidth / 1e9},
        "copper_cable_usd": inst.copper_cost, "optical_cable_usd": inst.optical_cost,
        "copper_latency_us": inst.copper_latency / 1e-6, "optical_latency_us": inst.optical_latency / 1e-6,
        "island_latency_us": inst.island_latency / 1e-6, "budget_usd": inst.budget,
        "oversubscription": inst.oversubscription, "memory_required_gb": inst.memory_required / 1e9,
    }


# -- designs -------------------------------------------------------------------------------------


def capability(inst: ArchInstance, design: Design) -> float:
    return sum(t.capability * row[i] for row in design.counts for i, t in enumerate(inst.types))


def cost(inst: ArchInstance, design: Design) -> float:
    devices = sum(t.device.cost * row[i] for row in design.counts for i, t in enumerate(inst.types))
    copper = sum(t.nic_ports * row[i] for row in design.counts for i, t in enumerate(inst.types))
    switches = sum(design.tors) + design.spines
    return (devices + inst.switch_cost * switches + inst.copper_cost * copper
            + inst.optical_cost * sum(design.uplinks))


def rack_network(inst: ArchInstance, ports: int, demand: float) -> tuple[int, int]:
    """(ToRs, uplinks) of a rack with ``ports`` device NIC ports of ``demand`` bytes/s in all: the
    uplinks the oversubscription row needs, then alternately ``t = ceil((ports + u) / R_sw)`` and
    ``u = max(u, t)`` (one uplink per ToR) until both hold; ``u`` and ``t`` only grow, and ``t <=
    (ports + u) / 2 + 1`` for ``R_sw >= 2``, so it stops."""
    capacity = inst.oversubscription * inst.uplink_bandwidth
    up = math.ceil(demand / capacity * (1 - 1e-12)) if demand else 0
    tor = 0
    while ports + up:
        tor = math.ceil((ports + up) / inst.switch_radix)
        if up >= tor:
            break
        up = tor
    return tor, up


def minimal_network(inst: ArchInstance, counts: tuple[tuple[int, ...], ...]) -> Design:
    """The fewest uplinks, ToRs (:func:`rack_network`) and spines (radix) for these counts."""
    tors, uplinks = [], []
    for row in counts:
        ports = sum(t.nic_ports * row[i] for i, t in enumerate(inst.types))
        demand = sum(t.nic_ports * t.nic_bandwidth * row[i] for i, t in enumerate(inst.types))
        tor, up = rack_network(inst, ports, demand)
        tors.append(tor)
        uplinks.append(up)
    spines = math.ceil(sum(uplinks) / inst.switch_radix) if sum(uplinks) else 0
    return Design(tuple(tuple(row) for row in counts), tuple(tors), tuple(uplinks), spines)


def design_solution(inst: ArchInstance, design: Design) -> Solution:
    return {
        "objective": capability(inst, design),
        "racks": [{"devices": {t.name: row[i] for i, t in enumerate(inst.types) if row[i]},
                   "tors": design.tors[r], "uplinks": design.uplinks[r]}
                  for r, row in enumerate(design.counts)],
        "spines": design.spines,
        "cost_usd": cost(inst, design),
    }


def parse(inst: ArchInstance, solution: Solution) -> tuple[Design | None, list[Violation]]:
    racks = solution.get("racks") if isinstance(solution, dict) else None
    if not isinstance(racks, list) or len(racks) > inst.racks:
        return None, [Violation("design", f"expected 'racks': a list of at most {inst.racks} racks")]
    names = {t.name: i for i, t in enumerate(inst.types)}
    counts, tors, uplinks = [], [], []

    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    for r, rack in enumerate(racks):
        if not isinstance(rack, dict) or not isinstance(rack.get("devices", {}), dict):
            return None, [Violation("design", f"racks[{r}] is not {{devices, tors, uplinks}}")]
        row = [0] * len(inst.types)
        for name, value in rack.get("devices", {}).items():
            if name not in names or count(value) is None:
                return None, [Violation("design", f"racks[{r}].devices: {name!r} = {value!r} is not a "
                                        "declared type with a count >= 0")]
            row[names[name]] = value
        t, u = count(rack.get("tors")), count(rack.get("uplinks"))
        if t is None or u is None:
            return None, [Violation("design", f"racks[{r}]: tors and uplinks must be integers >= 0")]
        counts.append(tuple(row))
        tors.append(t)
        uplinks.append(u)
    spines = count(solution.get("spines"))
    if spines is None:
        return None, [Violation("design", "spines must be an integer >= 0")]
    return Design(tuple(counts), tuple(tors), tuple(uplinks), spines), []


def violations(inst: ArchInstance, design: Design) -> list[Violation]:
    """Every row of the model that ``design`` breaks (see the module docstring)."""
    out = []
    slack = 1 + ROUNDING
    for r, row in enumerate(design.counts):
        power = (sum(t.device.power * row[i] for i, t in enumerate(inst.types))
                 + inst.switch_power * design.tors[r])
        space = (sum(t.device.rack_units * row[i] for i, t in enumerate(inst.types))
                 + inst.switch_units * design.tors[r])
        ports = sum(t.nic_ports * row[i] for i, t in enumerate(inst.types))
        demand = sum(t.nic_ports * t.nic_bandwidth * row[i] for i, t in enumerate(inst.types))
        if power > inst.rack_power * slack:
            out.append(Violation("rack_power", f"rack {r} draws {power:g} W > {inst.rack_power:g} W"))
        if space > inst.rack_units * slack:
            out.append(Violation("rack_space", f"rack {r} fills {space:g} U > {inst.rack_units} U"))
        if design.uplinks[r] < design.tors[r]:
            out.append(Violation("tor_uplinks", f"rack {r}: {design.tors[r]} ToRs but {design.uplinks[r]} "
                                 "uplinks (every ToR needs one)"))
        if ports + design.uplinks[r] > inst.switch_radix * design.tors[r]:
            out.append(Violation("tor_radix", f"rack {r}: {ports} device ports + {design.uplinks[r]} "
                                 "uplinks > "
                                 f"{design.tors[r]} ToRs x radix {inst.switch_radix}"))
        if inst.oversubscription * inst.uplink_bandwidth * design.uplinks[r] < demand / slack:
            out.append(Violation("oversubscription", f"rack {r}: {design.uplinks[r]} uplinks carry less than "
                                 f"1/{inst.oversubscription:g} of its {demand / 1e9:g} GB/s of NICs"))
    if sum(design.uplinks) > inst.switch_radix * design.spines:
        out.append(Violation("spine_radix", f"{sum(design.uplinks)} uplinks > {design.spines} spines x "
                             f"radix {inst.switch_radix}"))
    if (inst.switch_power * design.spines > inst.rack_power * slack
            or inst.switch_units * design.spines > inst.rack_units * slack):
        out.append(Violation("network_rack", f"{design.spines} spines do not fit the network rack"))
    spent = cost(inst, design)
    if spent > inst.budget * slack:
        out.append(Violation("budget", f"the design costs {spent:g} US$ > {inst.budget:g} US$"))
    memory = sum(t.device.memory * row[i] for row in design.counts for i, t in enumerate(inst.types))
    if memory < inst.memory_required / slack:
        out.append(Violation("memory", f"{memory / 1e9:g} GB of device memory < "
                             f"{inst.memory_required / 1e9:g} GB"))
    for i, t in enumerate(inst.types):
        total = sum(row[i] for row in design.counts)
        if total > t.max_count:
            out.append(Violation("count", f"{total} devices of type '{t.name}' > {t.max_count}"))
    return out


def check(inst: ArchInstance, solution: Solution) -> list[Violation]:
    design, problems = parse(inst, solution)
    return problems if design is None else violations(inst, design)


def objective(inst: ArchInstance, solution: Solution) -> float:
    design, problems = parse(inst, solution)
    if design is None:
        raise ValueError(str(problems[0]))
    return capability(inst, design)


# -- the hardware graph of a design --------------------------------------------------------------


def hardware_of(inst: ArchInstance, design: Design) -> Hardware:
    """The :class:`~.hardware.Hardware` graph of ``design`` (see the module docstring)."""
    devices, switches, links = [], [], []
    racks = [Rack(f"rack{r}", inst.rack_power, inst.rack_units) for r in range(len(design.counts))]
    spines = [f"spine{s}" for s in range(design.spines)]
    if spines:
        racks.append(Rack("network", inst.rack_power, inst.rack_units))
    # the spines act as one core: a backplane joins consecutive spines (two extra ports each)
    switches += [Switch(name, inst.switch_radix + 2, "network", inst.switch_power, inst.switch_units,
                        inst.switch_cost) for name in spines]
    links += [Link((a, b), inst.switch_radix * inst.uplink_bandwidth, inst.optical_latency)
              for a, b in zip(spines, spines[1:], strict=False)]
    for r, row in enumerate(design.counts):
        tors = [f"r{r}.tor{k}" for k in range(design.tors[r])]
        switches += [Switch(name, inst.switch_radix, f"rack{r}", inst.switch_power, inst.switch_units,
                            inst.switch_cost) for name in tors]
        # one uplink per ToR first, then device ports and the other uplinks on the least used ToR
        used = [1 if k < design.uplinks[r] else 0 for k in range(len(tors))]
        trunks: dict[tuple[str, str], int] = {}
        for k in range(min(len(tors), design.uplinks[r])):
            trunks[(tors[k], spines[k % len(spines)])] = 1

        def least_used(used: list[int] = used) -> int:
            k = min(range(len(used)), key=lambda j: (used[j], j))
            used[k] += 1
            return k

        for i, t in enumerate(inst.types):
            members = []
            for k in range(row[i]):
                name = f"r{r}.{t.name}{k}"
                devices.append(Device(name, t.name, f"rack{r}"))
                members.append(name)
                share: dict[str, int] = {}
                for _ in range(t.nic_ports):
                    tor = tors[least_used()]
                    share[tor] = share.get(tor, 0) + 1
                links += [Link((name, tor), ports * t.nic_bandwidth, inst.copper_latency)
                          for tor, ports in share.items()]
            if t.island_size > 1:
                for first in range(0, len(members), t.island_size):
                    island = members[first:first + t.island_size]
                    if len(island) < 2:
                        continue
                    hub = f"r{r}.{t.name}.island{first // t.island_size}"
                    switches.append(Switch(hub, max(2, len(island)), f"rack{r}"))
                    links += [Link((name, hub), t.island_bandwidth, inst.island_latency) for name in island]
        for k in range(len(tors), design.uplinks[r]):
            pair = (tors[least_used()], spines[k % len(spines)])
            trunks[pair] = trunks.get(pair, 0) + 1
        links += [Link(pair, count * inst.uplink_bandwidth, inst.optical_latency)
                  for pair, count in trunks.items()]
    kinds = tuple(t.device for t in inst.types)
    return Hardware(kinds, tuple(devices), tuple(switches), tuple(links), tuple(racks))


# -- generator -----------------------------------------------------------------------------------

#: Deployable device types of the generated design spaces, research notes 3.e [S].
ARCH_TYPES = (
    ("gpu", 989.0, 3.35, 80.0, 700.0, 1.0, 30_000.0, 1, 50.0, 8),
    ("old_gpu", 312.0, 2.0, 80.0, 400.0, 1.0, 12_000.0, 1, 25.0, 8),
    ("npu", 400.0, 1.6, 64.0, 350.0, 1.0, 8_000.0, 1, 25.0, 1),
    ("cpu", 5.0, 0.3, 512.0, 350.0, 1.0, 10_000.0, 1, 25.0, 1),
)


def make_types(rows: tuple, scale: int) -> tuple[ArchType, ...]:
    types = []
    for name, tflops, tbs, gb, watts, units, usd, ports, nic, island in rows:
        device = DeviceType(name, tflops * 1e12, tbs * 1e12, gb * 1e9, 0.7, 0.8, 5 * 1e-6, watts, units, usd,
                            ports + (1 if island > 1 else 0))
        types.append(ArchType(device, ports, nic * 1e9, island, 450e9, tflops, 4 * scale))
    return tuple(types)


#: The largest ``size`` :func:`generate` accepts (size // 2 racks, the schema allows 1000).
MAX_SIZE = 2000


def generate(seed: int, size: int) -> ArchInstance:
    """A seeded design space: the four device types of research notes 3.e with at most ``4 size``
    of each, ``max(1, size // 2)`` racks of 40 kW (at most 1000, the schema's limit), a radix-32
    switch, a budget drawn between 25 % and 60 % of the price of every allowed device,
    oversubscription 1-3 and a memory need of 0-20 % of the total."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size is 1..{MAX_SIZE} (size // 2 racks, the schema allows 1000), got {size}")
    rng = random.Random(seed)
    types = make_types(ARCH_TYPES, size)
    full = sum(t.device.cost * t.max_count for t in types)
    memory = sum(t.device.memory * t.max_count for t in types)
    return ArchInstance(
        types=types, racks=min(1000, max(1, size // 2)), rack_power=40e3, rack_units=42, switch_radix=32,
        switch_power=600.0, switch_units=1.0, switch_cost=20_000.0, uplink_bandwidth=50e9,
        copper_cost=100.0, optical_cost=1000.0, copper_latency=1e-6, optical_latency=2e-6,
        island_latency=0.5e-6, budget=round(rng.uniform(0.25, 0.6) * full, -3),
        oversubscription=float(rng.choice((1, 2, 3))),
        memory_required=round(rng.uniform(0.0, 0.2) * memory / 1e9) * 1e9)
