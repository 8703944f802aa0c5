"""Brute force for both provisioning problems on instances small enough to list every decision:
the oracles the exact methods are checked against (``Problem.oracle``).

Both enumerations are written from the problem statements, not from the models: they find each
request's K shortest paths themselves (every simple path, sorted by length, hops, node sequence),
take every retained fraction of the class menu (dominated ones too), every width of the menu and
every first slot, and judge overlaps with their own rules. Only the objective's definition (the
class weights and eps of the module docstrings) is shared.

* :func:`provisioning_optimum`: depth-first over requests (skip, or one channel), pruned by an
  upper bound (the value so far plus every remaining request at full rate).
* :func:`grooming_optimum`: every assignment of requests to a virtual route (or none), every set
  of lightpaths on the pairs it uses; the served rates of one such choice are the optimum of a
  small LP (max weighted served fraction under the lightpath capacities), solved exactly by
  enumerating the LP's vertices.
"""

from __future__ import annotations

import itertools
import math
import random

import networkx as nx
import numpy as np

from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning import model as P

GBPS, KM = P.GBPS, P.KM


# -- shared ---------------------------------------------------------------------------------------


def k_paths(nodes: tuple[str, ...], links: tuple[P.Link, ...], directed: bool, k: int, s: str, d: str
            ) -> list[tuple[tuple[str, ...], float]]:
    """The K shortest simple paths of s -> d with their lengths, by listing all of them."""
    graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_nodes_from(nodes)
    for lk in links:
        graph.add_edge(lk.a, lk.b, length=lk.length_m)
    order = {v: i for i, v in enumerate(nodes)}
    found = [(nx.path_weight(graph, p, "length"), len(p), tuple(order[v] for v in p), tuple(p))
             for p in nx.all_simple_paths(graph, s, d)]
    found.sort()
    return [(path, length) for length, _, _, path in found[:k]]


def path_edges(path: tuple[str, ...], directed: bool) -> frozenset:
    pairs = zip(path, path[1:], strict=False)
    return frozenset(pairs if directed else (frozenset(e) for e in pairs))


def best_format(modulations: tuple[P.Modulation, ...], length_m: float) -> P.Modulation | None:
    fits = [m for m in modulations if m.reach_m >= length_m]
    return max(fits, key=lambda m: m.bps_per_slot) if fits else None


def width(rate_bps: float, modulation: P.Modulation, guard_band: int) -> int:
    return math.ceil(rate_bps / modulation.bps_per_slot - 1e-9) + guard_band


# -- provisioning (Models A and B) ----------------------------------------------------------------

RING = (("a", "b", 300), ("b", "c", 700), ("c", "d", 400), ("d", "a", 900))


def tiny_provisioning(seed: int) -> P.Instance:
    """A 4-node ring, 4 slots, K = 2, 3 or 4 requests; odd seeds time-expanded; some seeds with
    degradation off, a transponder limit, or a background lightpath."""
    rng = random.Random(seed)
    nodes = ("a", "b", "c", "d")
    timed = seed % 2 == 1
    requests = []
    for _ in range(rng.choice((3, 4))):
        s, d = rng.sample(nodes, 2)
        arrival = round(rng.uniform(0, 1.5), 2) if timed else 0.0
        requests.append(P.Request(s, d, rng.choice((50, 75, 100)) * GBPS, rng.choice((0.5, 1.0)), arrival,
                                  rng.randint(1, 3)))
    background = ()
    if rng.random() < 0.3:
        background = (P.Background(("b", "c"), rng.randint(0, 2), 1,
                                   round(rng.uniform(0.2, 1.0), 2) if timed else math.inf),)
    return P.Instance(
        nodes, tuple(P.Link(a, b, km * KM) for a, b, km in RING), False, 4, 12.5e9, rng.randint(0, 1), 2,
        (P.Modulation("QPSK", 25 * GBPS, 1500 * KM), P.Modulation("16QAM", 50 * GBPS, 800 * KM)),
        (P.PriorityClass("gold", rng.choice((100, 5)), 0.0), P.PriorityClass("silver", 10, 0.5),
         P.PriorityClass("bronze", 1, 0.75)),
        (1.0, 0.75, 0.5, 0.25), rng.random() < 0.8, "time_expanded" if timed else "static",
        rng.choice((0, 0, 1, 2)), tuple(requests), background,
    )


def _channels(instance: P.Instance, r: int) -> list[tuple]:
    """Every way to serve request r: (edges, first slot, width, start, end, ends, value)."""
    req = instance.requests[r]
    cls = instance.classes[req.priority - 1]
    menu = [rho for rho in instance.retained_fractions if rho >= 1 - cls.max_degradation - 1e-12] \
        if instance.degradation else [1.0]
    eps = 1.0 / (2 * len(instance.requests) * max(c.weight for c in instance.classes))
    held = [(path_edges(bg.path, instance.directed), bg.first_slot, bg.slots, bg.end_s)
            for bg in instance.background]
    out = []
    for path, length in k_paths(instance.nodes, instance.links, instance.directed, instance.k_paths,
                                req.source, req.target):
        mod = best_format(instance.modulations, length)
        if mod is None:
            continue
        edges = path_edges(path, instance.directed)
        for rho in menu:
            n = width(rho * req.bandwidth_bps, mod, instance.guard_band)
            end = req.arrival_s + req.holding_s / rho
            for f in range(instance.num_slots - n + 1):
                if any(edges & e and f < bf + bn and bf < f + n and
                       (instance.model == "static" or req.arrival_s < bend) for e, bf, bn, bend in held):
                    continue
                out.append((edges, f, n, req.arrival_s, end, (req.source, req.target),
                            cls.weight * (1 - eps * (1 - rho))))
    return out


def _clash(instance: P.Instance, x: tuple, y: tuple) -> bool:
    together = instance.model == "static" or (x[3] < y[4] and y[3] < x[4])
    return together and bool(x[0] & y[0]) and x[1] < y[1] + y[2] and y[1] < x[1] + x[2]


def _ports_ok(instance: P.Instance, chosen: list[tuple]) -> bool:
    """Transponders at every instant a connection starts (busy: background lightpaths' ends)."""
    limit = instance.transponders_per_node
    if not limit:
        return True
    moments = [0.0] if instance.model == "static" else sorted({c[3] for c in chosen})
    for t in moments:
        for v in instance.nodes:
            busy = sum(1 for bg in instance.background if v in (bg.path[0], bg.path[-1])
                       and (instance.model == "static" or t < bg.end_s))
            busy += sum(1 for c in chosen if v in c[5] and (instance.model == "static" or c[3] <= t < c[4]))
            if busy > limit:
                return False
    return True


def provisioning_optimum(instance: P.Instance) -> float:
    """The best value over every feasible set of channels (the empty one included)."""
    menus = [_channels(instance, r) for r in range(len(instance.requests))]
    tops = [max((c[6] for c in menu), default=0.0) for menu in menus]
    rest = [sum(tops[r:]) for r in range(len(menus) + 1)]
    best = 0.0

    def walk(r: int, chosen: list[tuple], value: float) -> None:
        nonlocal best
        if value + rest[r] <= best:
            return
        if r == len(menus):
            best = value
            return
        for option in menus[r]:
            if not any(_clash(instance, option, c) for c in chosen) \
                    and _ports_ok(instance, [*chosen, option]):
                walk(r + 1, [*chosen, option], value + option[6])
        walk(r + 1, chosen, value)

    walk(0, [], 0.0)
    return best


# -- provisioning_grooming (Model C) --------------------------------------------------------------

TRIANGLE = (("a", "b", 300), ("b", "c", 400), ("a", "c", 900))
SQUARE = (("a", "b", 300), ("b", "c", 400), ("c", "d", 500), ("a", "d", 900))


def tiny_grooming(seed: int) -> G.Instance:
    """A triangle or a 4-node ring, 3 slots, K = 2, widths {2, 3}, 3 requests of 30/50/80 Gbit/s;
    H = 1 or 2, 1 or 2 transponders per node, degradation on or off."""
    rng = random.Random(seed)
    shape = TRIANGLE if rng.random() < 0.6 else SQUARE
    nodes = tuple(sorted({v for a, b, _ in shape for v in (a, b)}))
    requests = []
    for _ in range(3):
        s, d = rng.sample(nodes, 2)
        requests.append(P.Request(s, d, rng.choice((30, 50, 80)) * GBPS, 1.0, 0.0, rng.randint(1, 3)))
    return G.Instance(
        nodes, tuple(P.Link(a, b, km * KM) for a, b, km in shape), 3, 12.5e9, 1, 2,
        (P.Modulation("QPSK", 25 * GBPS, 2000 * KM), P.Modulation("16QAM", 50 * GBPS, 500 * KM)),
        (P.PriorityClass("gold", rng.choice((100, 7)), 0.25), P.PriorityClass("silver", 10, 0.5),
         P.PriorityClass("bronze", 1, 0.75)),
        (2, 3), rng.choice((1, 2)), rng.choice((1, 2)), rng.random() < 0.7, tuple(requests),
    )


def _pair(instance: G.Instance, u: str, v: str) -> tuple[str, str]:
    return (u, v) if instance.nodes.index(u) < instance.nodes.index(v) else (v, u)


def _lightpath_options(instance: G.Instance, q: tuple[str, str]) -> list[tuple[frozenset, int, int, float]]:
    """(edges, first slot, width, capacity in bit/s) of every lightpath the pair may set up."""
    out = []
    for path, length in k_paths(instance.nodes, instance.links, False, instance.k_paths, *q):
        mod = best_format(instance.modulations, length)
        if mod is None:
            continue
        for w in instance.lightpath_widths:
            out += [(path_edges(path, False), f, w, (w - instance.guard_band) * mod.bps_per_slot)
                    for f in range(instance.num_slots - w + 1)]
    return out


def best_fractions(weights: list[float], low: list[float], uses: list[list[int]], demand: list[float],
                   capacity: list[float]) -> float | None:
    """max sum_r weights_r rho_r s.t. sum_{r uses q} demand_r rho_r <= capacity_q, low_r <= rho_r <= 1,
    by enumerating the vertices of the polytope (every choice of len(weights) tight rows); None
    if it is empty."""
    n = len(weights)
    if n == 0:
        return 0.0
    rows, rhs = [], []
    for q, cap in enumerate(capacity):
        rows.append([demand[r] if q in uses[r] else 0.0 for r in range(n)])
        rhs.append(cap)
    for r in range(n):
        rows.append([1.0 if j == r else 0.0 for j in range(n)])
        rhs.append(1.0)
        rows.append([-1.0 if j == r else 0.0 for j in range(n)])
        rhs.append(-low[r])
    a, b = np.array(rows), np.array(rhs)
    best = None
    for tight in itertools.combinations(range(len(rows)), n):
        sub = a[list(tight)]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        x = np.linalg.solve(sub, b[list(tight)])
        if np.all(a @ x <= b + 1e-9 * np.maximum(1.0, np.abs(b))):
            value = float(np.dot(weights, x))
            best = value if best is None else max(best, value)
    return best


def _virtual_route_choices(instance: G.Instance) -> list[list[tuple[str, ...] | None]]:
    """Per request: unserved (None), direct, or (with H >= 2) through each other node."""
    choices = []
    for req in instance.requests:
        routes = [(req.source, req.target)]
        if instance.max_virtual_hops >= 2:
            routes += [(req.source, m, req.target) for m in instance.nodes
                       if m not in (req.source, req.target)]
        choices.append([None, *routes])
    return choices


def _best_kept_weight(instance: G.Instance, served: list[int], assignment: tuple, pairs: list,
                      options: dict) -> float | None:
    """The largest weighted served fraction over every set of non-overlapping lightpaths on
    ``pairs`` (one per pair) for the requests ``served`` on their virtual routes (None: no set
    carries every class floor)."""
    uses = [[pairs.index(_pair(instance, a, b))
             for a, b in zip(assignment[r], assignment[r][1:], strict=False)] for r in served]
    reqs = [instance.requests[r] for r in served]
    weights = [instance.classes[q.priority - 1].weight for q in reqs]
    low = [1 - instance.classes[q.priority - 1].max_degradation if instance.degradation else 1.0
           for q in reqs]
    best = None
    tried = set()
    for lightpaths in itertools.product(*(options[q] for q in pairs)):
        if any(x[0] & y[0] and x[1] < y[1] + y[2] and y[1] < x[1] + x[2]
               for x, y in itertools.combinations(lightpaths, 2)):
            continue
        capacity = tuple(lp[3] for lp in lightpaths)
        if capacity in tried:
            continue
        tried.add(capacity)
        kept = best_fractions(weights, low, uses, [q.bandwidth_bps for q in reqs], list(capacity))
        if kept is not None and (best is None or kept > best):
            best = kept
    return best


def grooming_optimum(instance: G.Instance) -> float:
    """The best value over every assignment of requests to virtual routes (or none) and every
    set of lightpaths on the pairs it uses, with the best served rates of each."""
    eps1 = 1.0 / (4 * len(instance.requests) * max(c.weight for c in instance.classes))
    eps2 = 1.0 / (2 * len(instance.nodes) * instance.transponders_per_node + 4)
    options = {}
    best = 0.0
    for assignment in itertools.product(*_virtual_route_choices(instance)):
        served = [r for r, vr in enumerate(assignment) if vr is not None]
        pairs = sorted({_pair(instance, a, b) for r in served
                        for a, b in zip(assignment[r], assignment[r][1:], strict=False)})
        weight = sum(instance.classes[instance.requests[r].priority - 1].weight for r in served)
        if weight - eps2 * len(pairs) <= best:
            continue
        for q in pairs:
            options.setdefault(q, _lightpath_options(instance, q))
        if any(sum(v in q for q in pairs) > instance.transponders_per_node for v in instance.nodes):
            continue
        kept = _best_kept_weight(instance, served, assignment, pairs, options)
        if kept is not None:
            best = max(best, weight - eps1 * (weight - kept) - eps2 * len(pairs))
    return best
