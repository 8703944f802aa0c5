"""The hardware side of CHASE: a hierarchical typed graph of devices, switches, links and racks,
its deployment rules, and the routing table every method reads.

Nodes are typed: a *device* (compute die, accelerator, CPU, memory node) has a *device type*
(peak FLOP/s, memory bandwidth and capacity, power, rack units, cost, ports); a *switch* has a
radix. *Links* join two nodes (device or switch), full duplex, with a bandwidth per direction and a
latency. *Racks* contain devices and switches (containment edges) and carry a power and a space
limit. All quantities are SI (bytes, seconds, bytes/s, FLOP/s, watts, US$).

Routing (instance data that every method and the checker read). Between two devices ``p != q``
the route is the path minimising ``sum_e (alpha_e + m_ref / B_e)`` with ``m_ref = 1 MB`` (the time
a 1 MB message needs hop by hop, OSPF's reference-bandwidth cost plus latency), ties broken by
fewer hops, then by the smaller sequence of node indices (devices first, then switches, in file
order). A transfer of ``d`` bytes from ``p`` to ``q`` then takes, without contention::

    c(p, q, d) = l_pq + d / B_pq      l_pq = sum of the route's link latencies,
                                      B_pq = its bottleneck (smallest) link bandwidth,

(cut-through: the message is pipelined over the hops) and ``c(p, p, d) = 0``.

Deployment rules (:func:`deployment_errors`, checked when a file is loaded, each broken rule one
line naming the field): every link joins two distinct known nodes; a switch has at most ``radix``
links and a device at most its type's ``ports`` (0: not limited); the devices and switches of a
rack draw at most its power and fill at most its units; every device reaches every other device.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import cached_property

#: Reference message of the routing cost (bytes): the route minimises the hop-by-hop time of 1 MB.
ROUTE_REFERENCE_BYTES = 1e6


@dataclass(frozen=True)
class DeviceType:
    """What one kind of device can do and what it costs to deploy (SI units)."""

    name: str
    peak_flops: float = 0.0  # FLOP/s
    memory_bandwidth: float = 0.0  # bytes/s
    memory: float = 0.0  # bytes; 0: not modelled
    compute_efficiency: float = 1.0  # achieved share of peak FLOP/s (eta_c)
    memory_efficiency: float = 1.0  # achieved share of peak memory bandwidth (eta_m)
    launch: float = 0.0  # seconds added to every task (kernel launch, dispatch)
    power: float = 0.0  # W
    rack_units: float = 0.0  # U
    cost: float = 0.0  # US$
    ports: int = 0  # links it may have; 0: not limited


@dataclass(frozen=True)
class Device:
    name: str
    type: str
    rack: str = ""


@dataclass(frozen=True)
class Switch:
    name: str
    radix: int
    rack: str = ""
    power: float = 0.0
    rack_units: float = 0.0
    cost: float = 0.0


@dataclass(frozen=True)
class Link:
    """A full-duplex link: ``bandwidth`` bytes/s in each direction, ``latency`` seconds."""

    ends: tuple[str, str]
    bandwidth: float
    latency: float = 0.0


@dataclass(frozen=True)
class Rack:
    name: str
    power: float  # W
    units: int  # U


@dataclass(frozen=True)
class Routes:
    """Device-to-device routes: ``latency[p][q]`` (s), ``bandwidth[p][q]`` (bytes/s, the
    bottleneck; inf on the diagonal), ``inverse_bandwidth[p][q]`` (0 on the diagonal) and
    ``path[p][q]``, the route as (link index, direction) pairs (direction 0: from ``ends[0]`` to
    ``ends[1]``); ``None`` where ``q`` cannot be reached."""

    latency: tuple[tuple[float, ...], ...]
    bandwidth: tuple[tuple[float, ...], ...]
    inverse_bandwidth: tuple[tuple[float, ...], ...]
    path: tuple[tuple[tuple[tuple[int, int], ...] | None, ...], ...]


@dataclass(frozen=True)
class Hardware:
    """One hardware graph. Devices are indexed in file order (``0..P-1``)."""

    device_types: tuple[DeviceType, ...]
    devices: tuple[Device, ...]
    switches: tuple[Switch, ...] = ()
    links: tuple[Link, ...] = ()
    racks: tuple[Rack, ...] = ()

    @cached_property
    def type_of(self) -> tuple[DeviceType, ...]:
        """The device type of every device, by device index."""
        types = {t.name: t for t in self.device_types}
        return tuple(types[d.type] for d in self.devices)

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Devices first (their index), then switches."""
        names = [d.name for d in self.devices] + [s.name for s in self.switches]
        return {name: i for i, name in enumerate(names)}

    @cached_property
    def routes(self) -> Routes:
        return _routes(self)

    def transfer_time(self, p: int, q: int, data: float) -> float:
        """Contention-free time to move ``data`` bytes from device ``p`` to device ``q``."""
        if p == q:
            return 0.0
        r = self.routes
        return r.latency[p][q] + data * r.inverse_bandwidth[p][q]

    def swappable(self, p: int, s: int) -> bool:
        """Whether exchanging devices ``p`` and ``s`` maps the hardware onto itself as far as a
        contention-free makespan sees it: one device type, and the same route latency and
        bottleneck to and from every other device, and between the two both ways."""
        r = self.routes
        if self.devices[p].type != self.devices[s].type:
            return False
        if r.latency[p][s] != r.latency[s][p] or r.bandwidth[p][s] != r.bandwidth[s][p]:
            return False
        for q in range(len(self.devices)):
            if q in (p, s):
                continue
            if (r.latency[p][q], r.bandwidth[p][q]) != (r.latency[s][q], r.bandwidth[s][q]):
                return False
            if (r.latency[q][p], r.bandwidth[q][p]) != (r.latency[q][s], r.bandwidth[q][s]):
                return False
        return True


def _routes(hw: Hardware) -> Routes:
    """Route every ordered device pair (see the module docstring): one Dijkstra per device over
    the cost ``alpha_e + m_ref / B_e``, labels (cost, hops, node sequence)."""
    index = hw.node_index
    nodes = len(index)
    adjacency: list[list[tuple[int, int, int]]] = [[] for _ in range(nodes)]
    for i, link in enumerate(hw.links):
        a, b = index[link.ends[0]], index[link.ends[1]]
        adjacency[a].append((b, i, 0))
        adjacency[b].append((a, i, 1))
    count = len(hw.devices)
    latency = [[0.0] * count for _ in range(count)]
    bandwidth = [[math.inf] * count for _ in range(count)]
    inverse = [[0.0] * count for _ in range(count)]
    paths: list[list[tuple[tuple[int, int], ...] | None]] = [[()] * count for _ in range(count)]
    for source in range(count):
        best: dict[int, tuple[float, int, tuple[int, ...]]] = {}
        via: dict[int, tuple[tuple[int, int], ...]] = {source: ()}
        heap: list[tuple[float, int, tuple[int, ...], int, tuple[tuple[int, int], ...]]] = [
            (0.0, 0, (source,), source, ())]
        while heap:
            cost, hops, seq, node, hops_links = heapq.heappop(heap)
            if node in best:
                continue
            best[node] = (cost, hops, seq)
            via[node] = hops_links
            for nxt, link, direction in adjacency[node]:
                if nxt in best:
                    continue
                e = hw.links[link]
                step = e.latency + ROUTE_REFERENCE_BYTES / e.bandwidth
                label = (cost + step, hops + 1, (*seq, nxt), nxt, (*hops_links, (link, direction)))
                heapq.heappush(heap, label)
        for target in range(count):
            if target == source:
                continue
            if target not in best:
                paths[source][target] = None
                latency[source][target] = math.inf
                bandwidth[source][target] = 0.0
                inverse[source][target] = math.inf
                continue
            route = via[target]
            paths[source][target] = route
            latency[source][target] = sum(hw.links[i].latency for i, _ in route)
            bottleneck = min(hw.links[i].bandwidth for i, _ in route)
            bandwidth[source][target] = bottleneck
            inverse[source][target] = 1.0 / bottleneck
    return Routes(
        latency=tuple(map(tuple, latency)),
        bandwidth=tuple(map(tuple, bandwidth)),
        inverse_bandwidth=tuple(map(tuple, inverse)),
        path=tuple(map(tuple, paths)),
    )


def deployment_errors(hw: Hardware) -> list[tuple[str, str]]:
    """Every broken deployment rule as (field, what was expected), in file order. Names and
    references are checked first; the power, space, radix and reachability rules only when they
    hold (they read the references)."""
    errors = _name_errors(hw)
    if errors:
        return errors
    errors = _reference_errors(hw)
    if errors:
        return errors
    return _port_errors(hw) + _rack_errors(hw) + _reach_errors(hw)


def _reference_errors(hw: Hardware) -> list[tuple[str, str]]:
    """Device types and racks that are not declared, link ends that are not nodes, self-loops."""
    errors: list[tuple[str, str]] = []
    types = {t.name for t in hw.device_types}
    racks = {r.name for r in hw.racks}
    nodes = hw.node_index
    for i, d in enumerate(hw.devices):
        if d.type not in types:
            errors.append((f"devices[{i}].type", f"device '{d.name}' has type '{d.type}', which is not "
                           f"a declared device type ({', '.join(sorted(types))})"))
        if d.rack and d.rack not in racks:
            errors.append((f"devices[{i}].rack",
                           f"device '{d.name}' is in rack '{d.rack}', which is not declared"))
    for i, s in enumerate(hw.switches):
        if s.rack and s.rack not in racks:
            errors.append((f"switches[{i}].rack",
                           f"switch '{s.name}' is in rack '{s.rack}', which is not declared"))
    for i, link in enumerate(hw.links):
        for end in link.ends:
            if end not in nodes:
                errors.append((f"links[{i}].ends",
                               f"link {i} names '{end}', which is not a device or switch"))
        if link.ends[0] == link.ends[1]:
            errors.append((f"links[{i}].ends", f"link {i} joins '{link.ends[0]}' to itself"))
    return errors


def _port_errors(hw: Hardware) -> list[tuple[str, str]]:
    """Switches with more links than their radix, devices with more than their type's ports."""
    errors: list[tuple[str, str]] = []
    nodes = hw.node_index
    degree = [0] * len(nodes)
    for link in hw.links:
        for end in link.ends:
            degree[nodes[end]] += 1
    for i, s in enumerate(hw.switches):
        used = degree[nodes[s.name]]
        if used > s.radix:
            errors.append((f"switches[{i}].radix",
                           f"switch '{s.name}' has {used} links, more than its radix {s.radix}"))
    for i, d in enumerate(hw.devices):
        ports = hw.type_of[i].ports
        if ports and degree[i] > ports:
            errors.append((f"devices[{i}]", f"device '{d.name}' has {degree[i]} links, more than the "
                           f"{ports} ports of type '{d.type}'"))
    return errors


def _rack_errors(hw: Hardware) -> list[tuple[str, str]]:
    """Racks whose devices and switches draw more power or take more space than they have."""
    errors: list[tuple[str, str]] = []
    for i, rack in enumerate(hw.racks):
        members = [hw.type_of[j] for j, d in enumerate(hw.devices) if d.rack == rack.name]
        switches = [s for s in hw.switches if s.rack == rack.name]
        power = sum(t.power for t in members) + sum(s.power for s in switches)
        space = sum(t.rack_units for t in members) + sum(s.rack_units for s in switches)
        if power > rack.power * (1 + 1e-12):
            errors.append((f"racks[{i}].power_w", f"rack '{rack.name}' holds devices and switches drawing "
                           f"{power:g} W, more than its {rack.power:g} W"))
        if space > rack.units * (1 + 1e-12):
            errors.append((f"racks[{i}].units", f"rack '{rack.name}' holds devices and switches filling "
                           f"{space:g} U, more than its {rack.units} U"))
    return errors


def _reach_errors(hw: Hardware) -> list[tuple[str, str]]:
    """The first device that cannot reach every other device over the links."""
    routes = hw.routes
    for p, d in enumerate(hw.devices):
        missing = [hw.devices[q].name for q in range(len(hw.devices)) if routes.path[p][q] is None]
        if missing:
            return [("links", f"device '{d.name}' cannot reach device '{missing[0]}' over the links")]
    return []


def _name_errors(hw: Hardware) -> list[tuple[str, str]]:
    errors = []
    for field, items in (("device_types", hw.device_types), ("racks", hw.racks)):
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item.name in seen:
                errors.append((f"{field}[{i}].name", f"'{item.name}' is declared twice"))
            seen.add(item.name)
    seen = set()
    for field, items in (("devices", hw.devices), ("switches", hw.switches)):
        for i, item in enumerate(items):
            if item.name in seen:
                errors.append((f"{field}[{i}].name", f"'{item.name}' is declared twice (devices and "
                               "switches share one namespace)"))
            seen.add(item.name)
    return errors
