"""Model C: multi-layer degraded provisioning with traffic grooming (snapshot).

Source: Zhong et al., "On QoS-assured degraded provisioning in service-differentiated multi-layer
elastic optical networks", GLOBECOM 2016 (arXiv 1607.04695): the enhanced multi-layer
architecture in which a request may be degraded in the optical layer (a narrower lightpath) or
in the electrical layer (a lower groomed rate, continuous). The model is the team's
reconstruction (research-degraded-provisioning.md, section c.3), a flexgrid version of the
grooming ILP of Zhu and Mukherjee (JSAC 2002) with channel-encoded lightpaths.

A batch of concurrent requests r = (s_r, d_r, b_r, t_r, p_r) is carried over *lightpaths* set up
now between two nodes u, v on one of the pair's K shortest physical paths k (the same rule as
Models A and B) with its format m(k), a width w from the menu W (guard band included) and a first
slot f: candidate l = (u, v, k, w, f) with capacity cap_l = (w - GB) c_{m(k)}. A request follows a
virtual route pi of at most H lightpath hops (H <= 2: direct, or through one intermediate node
where it is groomed electrically), unsplit, at a served fraction rho_r of its bandwidth that may
be degraded continuously down to 1 - delta_p; it is then held for t_r / rho_r (same data volume),
starting at once.

Objective. With integer class weights and W = sum_{served} w_p (served weight),
P = sum_{served} w_p (1 - rho_r) (weighted degradation) and L the number of lightpaths,

    value = W - Q,   Q = eps1 P + eps2 L,   eps1 = 1 / (4 |R| w_max),   eps2 = 1 / (2 |V| T + 4).

eps1 P < 1/4 and eps2 L <= eps2 |V| T / 2 < 1/4 (each lightpath takes a transponder at both ends),
so Q < 1/2 while two served weights differ by at least 1: the value orders solutions by served
weight first, then by the smaller Q. Q itself is a weighted sum, not a second lexicographic
level: one lightpath fewer is worth eps2 / eps1 = 4 |R| w_max / (2 |V| T + 4) weighted units of
degradation, so among equal served weight the model sets up fewer lightpaths at the price of
degrading (within the class bounds), the electrical layer's "flexible time-bandwidth exchange".
The exact route solves the two levels lexicographically (:mod:`coopt.problems.provisioning.exact`).

    max  sum_r w_p z_r - eps1 sum_r w_p (z_r - rho_r) - eps2 sum_l y_l
    s.t. (C1) sum_pi lambda_{r,pi} = z_r                                  (one virtual route)
         (C2) h_{r,pi} <= lambda_{r,pi};  sum_pi h_{r,pi} = rho_r
         (C3) (1 - delta_p) z_r <= rho_r <= z_r            (delta_p = 0 without degradation)
         (C4) sum_{(r,pi) : q in pi} b_r h_{r,pi} <= sum_{l in L(q)} cap_l y_l   for every pair q
         (C5) sum { y_l : e in k(l), f(l) <= s < f(l) + w(l) } <= 1          for every link e, slot s
         (C6) sum { y_l : v in ends(l) } <= T_v                              for every node v
         (C7) sum_{l in L(q)} y_l <= 1                                       for every node pair q
         y, z, lambda binary; h, rho >= 0

(C7), one lightpath per node pair, keeps (C4) exact for unsplit requests: with parallel
lightpaths an aggregate capacity row could accept loads no assignment of whole requests to
lightpaths can pack, and exactness would need one assignment variable per (request, hop,
lightpath). Links are undirected and lightpaths bidirectional: a pair's capacity is shared by
both directions. The checker allows rates and loads a relative slack RATE_TOL (1e-6, HiGHS' MIP
feasibility tolerance) beyond the window and the capacity.

Restrictions of the candidate set, each without loss: lightpaths are generated only for pairs
some request's virtual routes use (a lightpath elsewhere carries nothing and costs eps2, so
removing it improves any solution; the checker accepts it, the optimum is the same), on the
pair's K shortest paths with format m(k) (enforced by the checker: ``path_set``, ``modulation``).

Model row -> checker violation (and back):

    ===========================================  =======================================
    model                                        checker
    ===========================================  =======================================
    lightpath path k in K_(u,v), format m(k)     ``path_set``, ``modulation``, ``reach``
    width w in W, first slot inside the spectrum ``width``, ``contiguity``
    (C5)                                         ``non_overlap``
    (C6)                                         ``transponders``
    (C7)                                         ``one_per_pair``
    (C1) virtual route of <= H hops, unsplit     ``virtual_route``
    (C3) rate window                             ``class_bound``
    (C4) capacity                                ``capacity``
    start now, end t b / g                       ``immediate_access``, ``data_volume``
    ===========================================  =======================================
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from coopt.errors import UsageError
from coopt.fields import Fields
from coopt.problem import Solution, Violation
from coopt.problems.provisioning import model as P
from coopt.schema import Field, Schema

GBPS = P.GBPS
#: Relative slack of the rate-window and capacity checks: HiGHS' MIP feasibility tolerance (1e-6),
#: which is what a served rate read from a solved model carries.
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
    directed: bool = False  # always: the multi-layer model uses undirected links


SCHEMA = Schema((
    *P.NETWORK_FIELDS,
    Field("lightpath_widths", "ints", "width menu W of a new lightpath, in slots (guard band included)",
          min=1, max=4096, min_length=1, example=[2, 3]),
    Field("max_virtual_hops", "int", "lightpaths a request may cross (1: direct only; 2: groomed through "
          "one intermediate node)", min=1, max=2, example=2),
    Field("transponders_per_node", "int", "transponders per node (one per lightpath end)", min=1,
          max=10**6, example=2),
    Field("degradation", "bool", "whether a request's rate may drop to (1 - delta_p) b"),
    P.request_fields(timed=False),
), version=2, changes={1: P.CHANGES_V1 + "; the multi-layer model has no 'directed' field (links are "
                          "undirected) and its requests no 'arrival_s' (a snapshot: all start now)"})


def load(fields: Fields) -> Instance:
    values = SCHEMA.read(fields)
    checks = P.CrossChecks(fields)
    net = P.read_network(values, checks, directed=False)
    widths = tuple(values.lightpath_widths)
    if len(set(widths)) != len(widths):
        checks.add("lightpath_widths", f"expected distinct widths, got {list(widths)}")
    for i, w in enumerate(widths):
        if not net.guard_band < w <= net.num_slots:
            checks.add(f"lightpath_widths[{i}]", f"expected more than guard_band_slots = {net.guard_band} "
                                                 f"and at most num_slots = {net.num_slots}, got {w}")
    requests = P.read_requests(values, net, checks)
    checks.raise_any()
    return Instance(net.nodes, net.links, net.num_slots, net.slot_width_hz, net.guard_band, net.k_paths,
                    net.modulations, net.classes, tuple(sorted(widths)), values.max_virtual_hops,
                    values.transponders_per_node, values.degradation, requests)


def dump(instance: Instance) -> dict[str, Any]:
    return P.dump_network(instance) | {
        "lightpath_widths": list(instance.lightpath_widths),
        "max_virtual_hops": instance.max_virtual_hops,
        "transponders_per_node": instance.transponders_per_node,
        "degradation": instance.degradation,
        "requests": [P.dump_request(r, timed=False) for r in instance.requests],
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


def min_fraction(instance: Instance, request: P.Request) -> float:
    """1 - delta_p with degradation, 1 without."""
    if not instance.degradation:
        return 1.0
    return 1.0 - instance.classes[request.priority - 1].max_degradation


def min_rate_bps(instance: Instance, request: P.Request) -> float:
    """(1 - delta_p) b_r with degradation, b_r without."""
    return min_fraction(instance, request) * request.bandwidth_bps


def virtual_routes(instance: Instance, request: P.Request) -> list[tuple[str, ...]]:
    """Node sequences s -> d with at most H hops: direct first, then via each other node."""
    out = [(request.source, request.target)]
    if instance.max_virtual_hops >= 2:
        out += [(request.source, m, request.target) for m in instance.nodes
                if m not in (request.source, request.target)]
    return out


def epsilons(instance: Instance) -> tuple[float, float]:
    """(eps1, eps2) of the module docstring."""
    eps1 = 1.0 / (4 * max(1, len(instance.requests)) * max(c.weight for c in instance.classes))
    eps2 = 1.0 / (2 * len(instance.nodes) * instance.transponders_per_node + 4)
    return eps1, eps2


def served_weight(instance: Instance, r: int) -> int:
    return instance.classes[instance.requests[r].priority - 1].weight


# -- formulation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lightpath:
    """Candidate l = (u, v, k, w, f)."""

    ends: tuple[str, str]
    route: int
    width: int
    first_slot: int


def used_pairs(instance: Instance) -> list[tuple[str, str]]:
    """Every node pair some request's virtual routes cross, in node order."""
    pairs = {pair(instance, a, b) for r in instance.requests for vr in virtual_routes(instance, r)
             for a, b in zip(vr, vr[1:], strict=False)}
    return sorted(pairs, key=lambda q: tuple(map(instance.nodes.index, q)))


def lightpath_candidates(instance: Instance) -> list[Lightpath]:
    """Every channel of every pair some request's virtual routes use, in sorted order."""
    out = []
    for q in used_pairs(instance):
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
            "capacity_gbit_per_s": capacity_bps(instance, route, width) / GBPS}


def connection_record(instance: Instance, r: int, hops: list[int], rate_bps: float) -> dict[str, Any]:
    req = instance.requests[r]
    return {"request": r, "hops": hops, "rate_gbit_per_s": rate_bps / GBPS,
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
    """The rows of the module docstring's table, recomputed from the instance alone."""
    lps = solution.get("lightpaths") if isinstance(solution, dict) else None
    conns = solution.get("connections") if isinstance(solution, dict) else None
    if not isinstance(lps, list) or not isinstance(conns, list):
        return [Violation("format", "solution needs 'lightpaths' and 'connections' lists")]
    out = P.claimed_objective(solution)
    valid, violations = _check_lightpaths(instance, lps)
    out.extend(violations)
    out.extend(_check_connections(instance, conns, valid))
    return out


def _check_lightpaths(instance: Instance, lps: list) -> tuple[dict[int, tuple[tuple[str, str], float]],
                                                               list[Violation]]:
    """Lightpath index -> (pair, capacity in bit/s) of every well-formed lightpath, and the
    violations of the lightpath rows."""
    out: list[Violation] = []
    valid: dict[int, tuple[tuple[str, str], float]] = {}
    placed = []
    ends_count: dict[str, int] = defaultdict(int)
    for i, lp in enumerate(lps):
        path = lp.get("path") if isinstance(lp, dict) else None
        links = P.path_links(instance, path) if isinstance(path, list) else None
        f, w = (lp.get("first_slot"), lp.get("slots")) if isinstance(lp, dict) else (None, None)
        if links is None or not (P.is_index(f) and P.is_index(w)):
            out.append(Violation("format", f"lightpath {i}: needs a path along links and integer "
                                           "first_slot and slots"))
            continue
        q = pair(instance, path[0], path[-1])
        route = next((rt for rt in pair_routes(instance, q) if rt.nodes in (tuple(path), tuple(path[::-1]))),
                     None)
        if route is None:
            out.append(Violation("path_set", f"lightpath {i}: path {'-'.join(path)} is not among the "
                                             f"{instance.k_paths} shortest paths of {q[0]} - {q[1]}"))
            continue
        if route.modulation is None:
            out.append(Violation("reach", f"lightpath {i}: no format reaches {route.length_m / P.KM:g} km"))
            continue
        if lp.get("modulation") != route.modulation.name:
            out.append(Violation("modulation", f"lightpath {i}: modulation {lp.get('modulation')!r}, the "
                                               f"path's format is {route.modulation.name}"))
        if w not in instance.lightpath_widths:
            out.append(Violation("width", f"lightpath {i}: width {w} not in the menu "
                                          f"{list(instance.lightpath_widths)}"))
        if f < 0 or f + w > instance.num_slots:
            out.append(Violation("contiguity", f"lightpath {i}: slots [{f}, {f + w}) outside the spectrum"))
        for v in q:
            ends_count[v] += 1
        placed.append((i, set(links), f, w))
        if any(ends == q for ends, _ in valid.values()):
            out.append(Violation("one_per_pair", f"lightpath {i}: a second one between {q[0]} and {q[1]}"))
        valid[i] = (q, capacity_bps(instance, route, w))
    for a, (i, la, fa, wa) in enumerate(placed):
        for j, lb, fb, wb in placed[a + 1:]:
            if la & lb and fa < fb + wb and fb < fa + wa:
                out.append(Violation("non_overlap", f"lightpaths {i} and {j} share slots on a link"))
    for v, count in sorted(ends_count.items()):
        if count > instance.transponders_per_node:
            out.append(Violation("transponders", f"node {v} terminates {count} lightpaths, "
                                                 f"has {instance.transponders_per_node} transponders"))
    return valid, out


def _check_connections(instance: Instance, conns: list, valid: dict) -> list[Violation]:
    out: list[Violation] = []
    load_on: dict[int, float] = defaultdict(float)
    seen: set[int] = set()
    for c in conns:
        r = c.get("request") if isinstance(c, dict) else None
        if not P.is_index(r) or not 0 <= r < len(instance.requests) or r in seen:
            out.append(Violation("format", f"connection {c!r:.60}: 'request' must be a new request index"))
            continue
        seen.add(r)
        req = instance.requests[r]
        hops, rate = c.get("hops"), P.finite_number(c.get("rate_gbit_per_s"))
        start, end = P.finite_number(c.get("start_s")), P.finite_number(c.get("end_s"))
        if not isinstance(hops, list) or rate is None or start is None or end is None or rate <= 0:
            out.append(Violation("format", f"request {r}: needs hops, a finite positive rate_gbit_per_s, "
                                           "start_s and end_s"))
            continue
        if not 1 <= len(hops) <= instance.max_virtual_hops \
                or not all(P.is_index(h) and h in valid for h in hops):
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
        if not low * (1 - RATE_TOL) <= rate <= high * (1 + RATE_TOL):
            out.append(Violation("class_bound",
                                 f"request {r}: rate {rate:g} not in [{low:g}, {high:g}] Gbit/s"))
        if start != req.arrival_s:
            out.append(Violation("immediate_access", f"request {r}: starts at {start:g}"))
        if abs(rate * (end - start) - high * req.holding_s) > 1e-9 * high * req.holding_s:
            out.append(Violation("data_volume", f"request {r}: rate x time {rate * (end - start):g} Gbit, "
                                                f"expected {high * req.holding_s:g} Gbit"))
        for h in hops:
            load_on[h] += rate
    for h, used in sorted(load_on.items()):
        if used > valid[h][1] / GBPS * (1 + RATE_TOL):
            out.append(Violation("capacity", f"lightpath {h} carries {used:g} Gbit/s, "
                                             f"capacity {valid[h][1] / GBPS:g} Gbit/s"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """W - eps1 P - eps2 L (module docstring); malformed records count nothing."""
    eps1, eps2 = epsilons(instance)
    lps = solution.get("lightpaths") if isinstance(solution, dict) else None
    conns = solution.get("connections") if isinstance(solution, dict) else None
    total = -eps2 * (len(lps) if isinstance(lps, list) else 0)
    seen: set[int] = set()
    for c in conns if isinstance(conns, list) else []:
        r = c.get("request") if isinstance(c, dict) else None
        rate = P.finite_number(c.get("rate_gbit_per_s")) if isinstance(c, dict) else None
        if P.is_index(r) and 0 <= r < len(instance.requests) and r not in seen and rate is not None:
            seen.add(r)
            req = instance.requests[r]
            weight = served_weight(instance, r)
            total += weight * (1 - eps1 * (1 - rate * GBPS / req.bandwidth_bps))
    return total


# -- generator ----------------------------------------------------------------------------------


#: The largest ``size`` :func:`generate` accepts (4 size requests).
MAX_SIZE = 1000


def generate(seed: int, size: int) -> Instance:
    """The 6-node exact family in two layers: 4 x size requests (b in {10, 25, 40, 60} Gb/s, so
    several fit one lightpath), 8 slots, guard band 1, K = 2, widths {2, 3, 5}, H = 2, 2
    transponders per node; degradation on."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size is 1..{MAX_SIZE} (4 size requests), got {size}")
    rng = random.Random(seed)
    nodes, links, modulations, classes = P.six_node_network()
    requests = []
    for _ in range(4 * size):
        s, d = rng.sample(nodes, 2)
        bandwidth = rng.choice((10, 25, 40, 60)) * GBPS
        holding = round(rng.expovariate(1.0) + 0.05, 4)
        requests.append(P.Request(s, d, bandwidth, holding, 0.0, rng.randint(1, 3)))
    return Instance(nodes, links, 8, 12.5 * P.GHZ, 1, 2, modulations, classes, (2, 3, 5), 2, 2, True,
                    tuple(requests))
