"""Model C: multi-layer degraded provisioning with traffic grooming (snapshot).

Source: Zhong et al., "On QoS-assured degraded provisioning in service-differentiated multi-layer
elastic optical networks", GLOBECOM 2016 (arXiv 1607.04695): the enhanced multi-layer
architecture in which a request may be degraded in the optical layer (a narrower lightpath) or
in the electrical layer (a lower groomed rate, continuous). The model is the team's
reconstruction (research-degraded-provisioning.md, section c.3), a flexgrid version of the
grooming ILP of Zhu and Mukherjee (JSAC 2002) with channel-encoded lightpaths.

A batch of concurrent requests r = (s_r, d_r, b_r, t_r, p_r) is carried over *lightpaths* set up
now between two nodes on one of their K shortest physical paths k with format m(k), a width w
from the menu W (guard band included) and a first slot f: candidate l = (u, v, k, w, f) with
capacity cap_l = (w - GB) c_{m(k)}. A request follows a virtual route pi of at most H lightpath
hops (H <= 2: direct, or through one intermediate node where it is groomed electrically),
unsplit, at a served rate g_r that may be degraded continuously down to (1 - delta_p) b_r; it is
then held for t_r b_r / g_r (same data volume), starting at once.

    max  sum_r w_p z_r - eps1 sum_r w_p (b_r z_r - g_r) / b_r - eps2 sum_l y_l
    s.t. (C1) sum_pi lambda_{r,pi} = z_r                                  (one virtual route)
         (C2) h_{r,pi} <= b_r lambda_{r,pi};  sum_pi h_{r,pi} = g_r
         (C3) (1 - delta_p) b_r z_r <= g_r <= b_r z_r       (delta_p = 0 without degradation)
         (C4) sum_{(r,pi) : q in pi} h_{r,pi} <= sum_{l in L(q)} cap_l y_l   for every node pair q
         (C5) sum { y_l : e in k(l), f(l) <= s < f(l) + w(l) } <= 1          for every link e, slot s
         (C6) sum { y_l : v in ends(l) } <= T_v                              for every node v
         (C7) sum_{l in L(q)} y_l <= 1                                       for every node pair q
         y, z, lambda binary; h, g >= 0

(C7), one lightpath per node pair, keeps (C4) exact for unsplit requests: with parallel
lightpaths an aggregate capacity row could accept loads no assignment of whole requests to
lightpaths can pack, and exactness would need one assignment variable per (request, hop,
lightpath).

eps1 = w_min / (4 |R| w_max) and eps2 = w_min / (2 |V| T + 4): all penalties together stay below
half the lightest request, so the model serves the most priority weight, then degrades the
least, then sets up the fewest lightpaths. Links are undirected and lightpaths bidirectional: a
pair's capacity is shared by both directions (conservative). Rates are in Gb/s inside the model;
the objective is divided by sum_r w_p (``model.objective_unit``).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from coopt.formulations.provisioning import model as P
from coopt.instance import Fields
from coopt.problem import Solution, Violation

GBPS = P.GBPS
#: Gb/s slack on rate and capacity checks: HiGHS' primal feasibility tolerance on continuous rates.
RATE_TOL = 1e-6


# -- data model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    nodes: tuple[str, ...]
    links: tuple[P.Link, ...]
    num_slots: int
    slot_width_hz: float
    guard_band: int
    k_paths: int
    modulations: tuple[P.Modulation, ...]
    classes: tuple[P.PriorityClass, ...]
    lightpath_widths: tuple[int, ...]  # slots, guard band included, increasing
    max_virtual_hops: int
    transponders_per_node: int
    degradation: bool
    requests: tuple[P.Request, ...]
    directed: bool = False


def load(fields: Fields) -> Instance:
    net = P.load_network(fields)
    if net.directed:
        fields.fail("directed", "expected false: the multi-layer model uses undirected links")
    widths = fields.numbers("lightpath_widths", min_length=1, integer=True, min=net.guard_band + 1,
                            max=net.num_slots)
    if len(set(widths)) != len(widths):
        fields.fail("lightpath_widths", f"expected distinct widths, got {list(widths)}")
    hops = fields.int("max_virtual_hops", min=1, max=2)
    transponders = fields.int("transponders_per_node", min=1)
    degradation = fields.bool("degradation")
    return Instance(net.nodes, net.links, net.num_slots, net.slot_width_hz, net.guard_band, net.k_paths,
                    net.modulations, net.classes, tuple(sorted(widths)), hops, transponders, degradation,
                    P.load_requests(fields, net))


def dump(instance: Instance) -> dict[str, Any]:
    return P.dump_network(instance) | {
        "lightpath_widths": list(instance.lightpath_widths),
        "max_virtual_hops": instance.max_virtual_hops,
        "transponders_per_node": instance.transponders_per_node,
        "degradation": instance.degradation,
    }


# -- derived data ---------------------------------------------------------------------------------


def pair(instance: Instance, u: str, v: str) -> tuple[str, str]:
    """A node pair in node-list order (lightpaths are bidirectional)."""
    order = instance.nodes.index
    return (u, v) if order(u) < order(v) else (v, u)


def pair_routes(instance: Instance, q: tuple[str, str]) -> tuple[P.Route, ...]:
    return P.k_shortest_routes(instance.nodes, instance.links, False, instance.modulations,
                               instance.k_paths, q[0], q[1])


def capacity_bps(instance: Instance, route: P.Route, width: int) -> float:
    return (width - instance.guard_band) * route.modulation.bps_per_slot


def min_rate_bps(instance: Instance, request: P.Request) -> float:
    """(1 - delta_p) b_r with degradation, b_r without."""
    if not instance.degradation:
        return request.bandwidth_bps
    return (1.0 - instance.classes[request.priority - 1].max_degradation) * request.bandwidth_bps


def virtual_routes(instance: Instance, request: P.Request) -> list[tuple[str, ...]]:
    """Node sequences s -> d with at most H hops: direct first, then via each other node."""
    out = [(request.source, request.target)]
    if instance.max_virtual_hops >= 2:
        out += [(request.source, m, request.target) for m in instance.nodes
                if m not in (request.source, request.target)]
    return out


def epsilons(instance: Instance) -> tuple[float, float]:
    weights = [c.weight for c in instance.classes]
    eps1 = min(weights) / (4 * max(1, len(instance.requests)) * max(weights))
    eps2 = min(weights) / (2 * len(instance.nodes) * instance.transponders_per_node + 4)
    return eps1, eps2


# -- formulation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lightpath:
    """Candidate l = (u, v, k, w, f)."""

    ends: tuple[str, str]
    route: int
    width: int
    first_slot: int


def lightpath_candidates(instance: Instance) -> list[Lightpath]:
    """Every channel of every pair some request's virtual routes use, in sorted order."""
    pairs = {pair(instance, a, b) for r in instance.requests for vr in virtual_routes(instance, r)
             for a, b in zip(vr, vr[1:], strict=False)}
    pairs = sorted(pairs, key=lambda q: tuple(map(instance.nodes.index, q)))
    out = []
    for q in pairs:
        for k, route in enumerate(pair_routes(instance, q)):
            if route.modulation is None:
                continue
            for w in instance.lightpath_widths:
                out += [Lightpath(q, k, w, f) for f in range(instance.num_slots - w + 1)]
    return out


# -- extraction ---------------------------------------------------------------------------------


def lightpath_record(instance: Instance, ends: tuple[str, str], route: P.Route, width: int,
                     first_slot: int) -> dict[str, Any]:
    return {"ends": list(ends), "path": list(route.nodes), "modulation": route.modulation.name,
            "first_slot": first_slot, "slots": width,
            "capacity_gbps": capacity_bps(instance, route, width) / GBPS}


def connection_record(instance: Instance, r: int, hops: list[int], rate_bps: float) -> dict[str, Any]:
    req = instance.requests[r]
    return {"request": r, "hops": hops, "rate_gbps": rate_bps / GBPS,
            "start_s": req.arrival_s, "end_s": req.arrival_s + req.holding_s * req.bandwidth_bps / rate_bps}


def solution_from(instance: Instance, lightpaths: list[dict], connections: list[dict]) -> Solution:
    connections = sorted(connections, key=lambda c: c["request"])
    served = {c["request"] for c in connections}
    solution: Solution = {"lightpaths": lightpaths, "connections": connections,
                          "blocked": [r for r in range(len(instance.requests)) if r not in served]}
    solution["objective"] = objective(instance, solution)
    return solution


# -- checker ------------------------------------------------------------------------------------


def check(instance: Instance, solution: Solution) -> list[Violation]:
    """Lightpaths: simple paths along links, a format that reaches, a width from the menu inside
    the spectrum, pairwise disjoint spectrum on shared links (guard bands included), transponder
    counts; connections: a chain of at most H lightpaths from source to target, a rate within
    the class window, volume preserved, immediate start, and lightpath capacities respected."""
    out: list[Violation] = []
    lps = solution.get("lightpaths") if isinstance(solution, dict) else None
    conns = solution.get("connections") if isinstance(solution, dict) else None
    if not isinstance(lps, list) or not isinstance(conns, list):
        return [Violation("format", "solution needs 'lightpaths' and 'connections' lists")]
    mods = {m.name: m for m in instance.modulations}
    single = P.Instance(instance.nodes, instance.links, False, instance.num_slots, instance.slot_width_hz,
                        instance.guard_band, instance.k_paths, instance.modulations, instance.classes, (1.0,),
                        False, "static", 0, ())
    valid: dict[int, tuple[tuple[str, str], float]] = {}  # lightpath -> (ends, capacity in bit/s)
    placed = []
    ends_count: dict[str, int] = defaultdict(int)
    for i, lp in enumerate(lps):
        if not isinstance(lp, dict):
            out.append(Violation("format", f"lightpath {i} is not a table"))
            continue
        path, f, w = lp.get("path"), lp.get("first_slot"), lp.get("slots")
        links = P.path_links(single, path) if isinstance(path, list) else None
        mod = mods.get(lp.get("modulation")) if isinstance(lp.get("modulation"), str) else None
        integral = all(isinstance(x, int) and not isinstance(x, bool) for x in (f, w))
        if links is None or mod is None or not integral:
            out.append(Violation("format", f"lightpath {i}: needs a path along links, a known modulation, "
                                           "integer first_slot and slots"))
            continue
        length = sum(instance.links[e].length_m for e in links)
        if mod.reach_m < length:
            out.append(Violation("reach", f"lightpath {i}: {mod.name} does not reach {length / P.KM:g} km"))
        if w not in instance.lightpath_widths:
            out.append(Violation("width", f"lightpath {i}: width {w} not in the menu "
                                          f"{list(instance.lightpath_widths)}"))
        if f < 0 or f + w > instance.num_slots:
            out.append(Violation("contiguity", f"lightpath {i}: slots [{f}, {f + w}) outside the spectrum"))
        for v in (path[0], path[-1]):
            ends_count[v] += 1
        placed.append((i, set(links), f, w))
        q = pair(instance, path[0], path[-1])
        if any(ends == q for ends, _ in valid.values()):
            out.append(Violation("one_per_pair", f"lightpath {i}: a second one between {q[0]} and {q[1]}"))
        valid[i] = (q, (w - instance.guard_band) * mod.bps_per_slot)
    for a, (i, la, fa, wa) in enumerate(placed):
        for j, lb, fb, wb in placed[a + 1:]:
            if la & lb and fa < fb + wb and fb < fa + wa:
                out.append(Violation("non_overlap", f"lightpaths {i} and {j} share slots on a link"))
    for v, count in sorted(ends_count.items()):
        if count > instance.transponders_per_node:
            out.append(Violation("transponders", f"node {v} terminates {count} lightpaths, "
                                                 f"has {instance.transponders_per_node} transponders"))
    load_on: dict[int, float] = defaultdict(float)
    seen: set[int] = set()
    for c in conns:
        r = c.get("request") if isinstance(c, dict) else None
        if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < len(instance.requests) or r in seen:
            out.append(Violation("format", f"connection {c!r:.60}: 'request' must be a new request index"))
            continue
        seen.add(r)
        req = instance.requests[r]
        hops, rate = c.get("hops"), P.finite_number(c.get("rate_gbps"))
        start, end = P.finite_number(c.get("start_s")), P.finite_number(c.get("end_s"))
        if not isinstance(hops, list) or rate is None or start is None or end is None or rate <= 0:
            out.append(Violation("format", f"request {r}: needs hops, positive rate_gbps, start_s and end_s"))
            continue
        if not 1 <= len(hops) <= instance.max_virtual_hops or not all(h in valid for h in hops):
            out.append(Violation("virtual_route", f"request {r}: hops {hops} must be 1 to "
                                                  f"{instance.max_virtual_hops} valid lightpaths"))
            continue
        at, visited = req.source, [req.source]
        for h in hops:
            a, b = valid[h][0]
            if at not in (a, b):
                break
            at = b if at == a else a
            visited.append(at)
        if at != req.target or len(set(visited)) != len(visited) or len(visited) != len(hops) + 1:
            out.append(Violation("virtual_route", f"request {r}: lightpaths {hops} do not chain "
                                                  f"{req.source} -> {req.target}"))
            continue
        low, high = min_rate_bps(instance, req) / GBPS, req.bandwidth_bps / GBPS
        if not low - RATE_TOL <= rate <= high + RATE_TOL:
            detail = f"request {r}: rate {rate:g} not in [{low:g}, {high:g}] Gb/s"
            out.append(Violation("class_bound", detail))
        if start != req.arrival_s:
            out.append(Violation("immediate_access", f"request {r}: starts at {start:g}"))
        if abs(rate * (end - start) - high * req.holding_s) > 1e-9 * high * req.holding_s:
            out.append(Violation("data_volume", f"request {r}: rate x time {rate * (end - start):g} Gb, "
                                                f"expected {high * req.holding_s:g} Gb"))
        for h in hops:
            load_on[h] += rate
    for h, used in sorted(load_on.items()):
        if used > valid[h][1] / GBPS + RATE_TOL:
            out.append(Violation("capacity", f"lightpath {h} carries {used:g} Gb/s, "
                                             f"capacity {valid[h][1] / GBPS:g} Gb/s"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """sum w_p - eps1 sum w_p (1 - g/b) over served requests - eps2 (number of lightpaths)."""
    eps1, eps2 = epsilons(instance)
    lps = solution.get("lightpaths") if isinstance(solution, dict) else None
    conns = solution.get("connections") if isinstance(solution, dict) else None
    total = -eps2 * (len(lps) if isinstance(lps, list) else 0)
    seen: set[int] = set()
    for c in conns if isinstance(conns, list) else []:
        r = c.get("request") if isinstance(c, dict) else None
        rate = P.finite_number(c.get("rate_gbps")) if isinstance(c, dict) else None
        if isinstance(r, int) and not isinstance(r, bool) and 0 <= r < len(instance.requests) \
                and r not in seen and rate is not None:
            seen.add(r)
            req = instance.requests[r]
            weight = instance.classes[req.priority - 1].weight
            total += weight * (1 - eps1 * (1 - rate * GBPS / req.bandwidth_bps))
    return total


# -- generator ----------------------------------------------------------------------------------


def generate(seed: int, size: int) -> Instance:
    """The 6-node exact family in two layers: 4 x size requests (b in {10, 25, 40, 60} Gb/s, so
    several fit one lightpath), 8 slots, guard band 1, K = 2, widths {2, 3, 5}, H = 2, 2
    transponders per node; degradation on."""
    rng = random.Random(seed)
    base = P.generate(seed, 1)
    nodes = base.nodes
    requests = []
    for _ in range(4 * size):
        s, d = rng.sample(nodes, 2)
        bandwidth = rng.choice((10, 25, 40, 60)) * GBPS
        holding = round(rng.expovariate(1.0) + 0.05, 4)
        requests.append(P.Request(s, d, bandwidth, holding, 0.0, rng.randint(1, 3)))
    return Instance(nodes, base.links, 8, base.slot_width_hz, 1, 2, base.modulations, base.classes, (2, 3, 5),
                    2, 2, True, tuple(requests))


