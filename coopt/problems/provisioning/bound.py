"""Dual bounds for both provisioning problems at any size, without solving a MILP (method ``bound``).

``provisioning``: the LP relaxation of the channel model (:mod:`coopt.problems.provisioning.milp`)
by column generation, so that its millions of channels (USNET: 600 requests x 3 paths x 4
fractions x 100 first slots) are never built. The master LP holds the channels found so far;
pricing scans every (request, path, fraction) for its best first slot against the duals of the
cell rows, with sliding-window sums over the slots (numpy). Whatever the duals mu >= 0 of the cell
and transponder rows, the Lagrangian relaxation of those rows gives a valid upper bound

    L(mu) = sum_rows rhs mu + sum_r max(0, max_c (v_c - a_c mu)),

v_c = w (1 - eps (1 - rho)) the value of channel c and a_c its column: every feasible plan, and
every LP point, is worth at most L(mu). Each iteration's L(mu) is such a bound; at the LP optimum
it equals the LP value (no channel prices out). The master starts from the channels of a feasible
plan where the caller gives one (``incumbent``: the problem's warm start), else empty; the start
changes how soon the bound tightens, never its validity or the converged value. On the large
files the master LP becomes slow long before convergence (NSFNET: 380 s for its eighth
iteration), so a second bound runs beside it: the capacity
relaxation, a small 0-1 model (one variable per request, path and fraction; one row per link
and instant) whose dual bound HiGHS reports at any time (:func:`capacity_bound`). The bound
reported is the least of them, sharpened by integrality: no plan serves more than floor(L + 1/2)
of weight (its value is within 1/2 of its served weight, so W - 1/2 <= value <= L), and
value <= W.

``provisioning_grooming``: the least of two bounds on the value, each rounded as above.

* The LP relaxation of Model C itself (every row of ``build``, integer variables relaxed). On
  the paper-scale files it proves no more than "every request served" (the lightpath of a pair
  can be split thinly over the many virtual routes that use it), and on USNET it needs about
  80 s.
* The link-set knapsack (ours, in the spirit of the cut-set bounds of network design): for a
  set F of links, every lightpath l through F carries load_l <= (w_l - GB) c_l, and on each
  link of F the lightpaths through it occupy disjoint slots, so sum_{l through e} (w_l - GB) <= U,
  U the most guard-band-free slots menu widths fill on one link (:func:`usable_slots`). Hence

      sum_l load_l |l cap F| / c_l  <=  sum_l (w_l - GB) |l cap F|  <=  U |F|.

  A served request r sends at least its class floor f_r b_r over every lightpath of its virtual
  route, and each lightpath is a candidate path k of its pair, so its share of the left side is
  at least f_r b_r kappa_r(F), kappa_r(F) = min over r's virtual routes of the sum over their
  hops of min_k |k cap F| / c_k. Every plan therefore serves a request set with
  sum_r f_r b_r kappa_r(F) z_r <= U |F| for every F at once (a request with kappa infinite,
  no candidate path on some hop of every virtual route, is never served). Maximizing the served
  weight under these rows is a 0-1 knapsack with one row per F; its dual bound (HiGHS) bounds W
  and so the value. F ranges over each link, all links, and the cuts delta(X) of the balls X of
  the k nodes nearest each node (k <= |V| / 2). The loads and rates get the checker's relative
  slack RATE_TOL twice over, so a plan the checker accepts never exceeds a row.
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from dataclasses import dataclass, replace

import numpy as np
import pyomo.environ as pyo

from coopt.problem import Solution, SolveOptions
from coopt.problems.provisioning import grooming_milp
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning.exact import served_weight_cap
from coopt.solvers.highs import solve_model

#: Column generation stops when no channel prices out by more than this (objective units).
PRICE_TOL = 1e-9
#: ... or after this many rounds (a time limit stops it earlier); the bound stays valid.
MAX_ROUNDS = 500
#: Channels a (request, path, fraction) may bring into the master per round: its best first slots.
COLUMNS_PER_FAMILY = 3
#: Seconds the bound may take without a time limit.
DEFAULT_SECONDS = 120.0


def rounded(value: float) -> float:
    """min(L, floor(L + 1/2)) of the module docstring, with a slack for float rounding."""
    return min(value, float(math.floor(value + 0.5 + 1e-9 * max(1.0, abs(value)))))


@dataclass(frozen=True)
class Family:
    """The channels of one (request, path, fraction): width n on the links of the path, for
    first slots f in ``allowed`` (not hitting the background), held during instants [t0, t1)."""

    request: int
    links: tuple[int, ...]
    width: int
    value: float
    allowed: np.ndarray  # bool per first slot
    t0: int
    t1: int
    ends: tuple[str, str]


def families(instance: P.Instance) -> list[Family]:
    times = P.instants(instance)
    eps = P.epsilon(instance)
    out = []
    for r, req in enumerate(instance.requests):
        weight = instance.classes[req.priority - 1].weight
        for route in P.routes(instance, req.source, req.target):
            if route.modulation is None:
                continue
            blocked = np.zeros(instance.num_slots, dtype=bool)
            for _, s in P._background_cells(instance, route.links, req.arrival_s):
                blocked[s] = True
            last = None
            for rho in P.retained_levels(instance, req):
                n = P.slots_needed(rho * req.bandwidth_bps, route.modulation, instance.guard_band)
                if n > instance.num_slots or (last is not None and n >= last):
                    continue
                last = n
                hit = np.convolve(blocked, np.ones(n, dtype=int), mode="valid") > 0
                t0 = 0 if instance.model == "static" else bisect.bisect_left(times, req.arrival_s)
                t1 = 1 if instance.model == "static" else bisect.bisect_left(times, P.end_time(req, rho))
                out.append(Family(r, route.links, n, weight * (1 - eps * (1 - rho)), ~hit, t0, t1,
                                  (req.source, req.target)))
    return out


class ChannelLP:
    """The channel LP: rows = requests (<= 1), cells (link, slot, instant) (<= 1), transponders
    (node, instant) (<= free ports); columns added as pricing finds them."""

    def __init__(self, instance: P.Instance):
        import highspy
        from pyomo.common.tee import capture_output

        self.instance = instance
        self.times = P.instants(instance)
        self.shape = (len(instance.links), instance.num_slots, len(self.times))
        self.nodes = {v: i for i, v in enumerate(instance.nodes)}
        n_req, n_cells = len(instance.requests), int(np.prod(self.shape))
        self.ports = instance.transponders_per_node > 0
        free = [instance.transponders_per_node - P.background_transponders(instance, v, q)
                for v in instance.nodes for q in self.times] if self.ports else []
        self.rhs = np.concatenate([np.ones(n_req), np.ones(n_cells), np.maximum(0.0, free)])
        with capture_output(capture_fd=True):  # the constructor prints a banner
            self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("threads", 1)
        highspy.Highs.resetGlobalScheduler(True)  # see coopt.problems.provisioning.grooming_heuristics
        self.highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
        rows = len(self.rhs)
        self.highs.addRows(rows, np.full(rows, -highspy.kHighsInf), self.rhs, 0,
                           np.zeros(rows, dtype=np.int32), np.array([], dtype=np.int32),
                           np.array([], dtype=np.float64))
        self.columns: set[tuple[int, int]] = set()
        self.n_req, self.n_cells = n_req, n_cells

    def column(self, fam: Family, f: int) -> np.ndarray:
        """Row indices of the channel (family, first slot f)."""
        e, s, q = np.meshgrid(np.array(fam.links), np.arange(f, f + fam.width), np.arange(fam.t0, fam.t1),
                              indexing="ij")
        cells = self.n_req + np.ravel_multi_index((e.ravel(), s.ravel(), q.ravel()), self.shape)
        rows = [np.array([fam.request]), cells]
        if self.ports:
            q_len = len(self.times)
            for v in fam.ends:
                rows.append(self.n_req + self.n_cells + self.nodes[v] * q_len + np.arange(fam.t0, fam.t1))
        return np.concatenate(rows).astype(np.int32)

    def add(self, items: list[tuple[int, Family, int]]) -> int:
        """Add the channels (family index, family, first slot) not in the master yet."""
        fresh = [(k, fam, f) for k, fam, f in items if (k, f) not in self.columns]
        if not fresh:
            return 0
        starts, index = [0], []
        for k, fam, f in fresh:
            self.columns.add((k, f))
            index.append(self.column(fam, f))
            starts.append(starts[-1] + len(index[-1]))
        index_all = np.concatenate(index)
        self.highs.addCols(len(fresh), np.array([fam.value for _, fam, _ in fresh]), np.zeros(len(fresh)),
                           np.full(len(fresh), np.inf), len(index_all), np.array(starts[:-1], dtype=np.int32),
                           index_all, np.ones(len(index_all)))
        return len(fresh)

    def solve(self, seconds: float) -> tuple[float, np.ndarray] | None:
        """(master value, row duals as multipliers >= 0 of a max problem), or None (not solved
        to optimality within ``seconds``)."""
        import highspy

        self.highs.setOptionValue("time_limit", max(0.1, seconds))
        self.highs.run()
        if self.highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        duals = np.abs(np.array(self.highs.getSolution().row_dual))
        return self.highs.getInfo().objective_function_value, duals

    def close(self) -> None:
        import highspy

        highspy.Highs.resetGlobalScheduler(True)


def _prices(lp: ChannelLP, fams: list[Family], duals: np.ndarray, pi: np.ndarray
            ) -> tuple[np.ndarray, list[tuple[int, Family, int]]]:
    """Per request, the largest v - a mu over all its channels (the Lagrangian's inner max), and
    the channels that price out against the master (v - a mu - pi_r > PRICE_TOL): per family
    up to :data:`COLUMNS_PER_FAMILY` of its best first slots."""
    mu = duals[lp.n_req:lp.n_req + lp.n_cells].reshape(lp.shape)
    over_time = np.concatenate([np.zeros(lp.shape[:2] + (1,)), np.cumsum(mu, axis=2)], axis=2)
    ports = None
    if lp.ports:
        tau = duals[lp.n_req + lp.n_cells:].reshape(len(lp.instance.nodes), len(lp.times))
        ports = np.concatenate([np.zeros((tau.shape[0], 1)), np.cumsum(tau, axis=1)], axis=1)
    inner = np.zeros(len(lp.instance.requests))
    entering = []
    for k, fam in enumerate(fams):
        per_slot = (over_time[list(fam.links), :, fam.t1] - over_time[list(fam.links), :, fam.t0]).sum(axis=0)
        price = fam.value - np.convolve(per_slot, np.ones(fam.width), mode="valid")
        if ports is not None:
            price = price - sum(ports[lp.nodes[v], fam.t1] - ports[lp.nodes[v], fam.t0] for v in fam.ends)
        price = np.where(fam.allowed, price, -np.inf)
        inner[fam.request] = max(inner[fam.request], float(price.max()))
        for f in np.argsort(-price)[:COLUMNS_PER_FAMILY]:
            if price[f] - pi[fam.request] <= PRICE_TOL:
                break
            entering.append((k, fam, int(f)))
    return inner, entering


def provisioning_bound(instance: P.Instance, options: SolveOptions,
                       incumbent: Solution | None = None) -> float:
    """min(the least Lagrangian bound of column generation on the channel LP, the capacity
    relaxation's dual bound), rounded (module docstring). Column generation gets half of
    ``options.time_limit`` (:data:`DEFAULT_SECONDS` without one), the capacity MILP the rest;
    stopped early, each bound stays valid, only weaker. ``incumbent`` (a feasible plan, the
    problem's warm start) seeds the master LP with its channels; without one the master starts
    empty: the bound is valid either way and, once column generation converges, the same."""
    fams = families(instance)
    if not fams:
        return 0.0
    budget = options.time_limit if options.time_limit is not None else DEFAULT_SECONDS
    start = time.perf_counter()
    lagrangian = column_generation(instance, fams, start + budget / 2, incumbent)
    left = replace(options, time_limit=max(1.0, budget - (time.perf_counter() - start)))
    # the capacity bound is one on W, an integer: no plan's value exceeds its floor
    return min(rounded(lagrangian), served_weight_cap(capacity_bound(instance, fams, left)))


def capacity_bound(instance: P.Instance, fams: list[Family], options: SolveOptions) -> float:
    """The dual bound of the capacity relaxation: choose at most one (path, fraction) per request
    so that on every link (at every instant) the slots used add up to at most |S| (and the
    transponders to at most the free ones), maximizing W. Every plan of the channel model is
    such a choice (its channels on a link are disjoint blocks of the |S| slots), so no plan
    serves more weight; contiguity and continuity are what it forgets. In the static model only
    the narrowest fraction per path is kept (the argument of ``channel_model(narrowest=True)``)."""
    keep = capacity_families(instance, fams)
    model = pyo.ConcreteModel(name="provisioning_capacity")
    model.y = pyo.Var(range(len(keep)), within=pyo.Binary)
    model.rows = pyo.ConstraintList()
    by_request, cells, ports = capacity_groups(keep)
    for members in by_request.values():
        model.rows.add(sum(model.y[i] for i in members) <= 1)
    for members in cells.values():
        if sum(keep[i].width for i in members) > instance.num_slots:
            model.rows.add(sum(keep[i].width * model.y[i] for i in members) <= instance.num_slots)
    if instance.transponders_per_node:
        times = P.instants(instance)
        for (v, q), members in ports.items():
            free = instance.transponders_per_node - P.background_transponders(instance, v, times[q])
            model.rows.add(sum(model.y[i] for i in members) <= max(0, free))
    w_max = max(c.weight for c in instance.classes)
    weight = [instance.classes[instance.requests[fam.request].priority - 1].weight for fam in keep]
    model.value = pyo.Objective(expr=sum(w * model.y[i] for i, w in enumerate(weight)) / w_max,
                                sense=pyo.maximize)
    model.objective_unit = w_max
    result = solve_model(model, options)
    if result.status == "infeasible" or result.bound is None:
        return float(sum(weight)) if result.status != "infeasible" else 0.0
    return result.bound


def capacity_groups(keep: list[Family]) -> tuple[dict[int, list[int]], dict[tuple[int, int], list[int]],
                                                  dict[tuple[str, int], list[int]]]:
    """The capacity relaxation's rows as index lists into ``keep``: the families of each request
    (at most one is chosen), the families that occupy each (link, instant) cell (their widths share
    the link's slots) and the families that end at each (node, instant) (they share the node's free
    transponders)."""
    by_request: dict[int, list[int]] = {}
    cells: dict[tuple[int, int], list[int]] = {}
    ports: dict[tuple[str, int], list[int]] = {}
    for i, fam in enumerate(keep):
        by_request.setdefault(fam.request, []).append(i)
        for q in range(fam.t0, fam.t1):
            for e in fam.links:
                cells.setdefault((e, q), []).append(i)
            for v in fam.ends:
                ports.setdefault((v, q), []).append(i)
    return by_request, cells, ports


def capacity_families(instance: P.Instance, fams: list[Family]) -> list[Family]:
    """The families the capacity relaxation chooses among: all of them, or in the static model the
    narrowest fraction per (request, path) (a narrower channel on the same path uses a subset of
    the wider one's resources, so keeping it alone loses no served weight)."""
    if instance.model != "static":
        return fams
    narrowest: dict[tuple[int, tuple[int, ...]], Family] = {}
    for fam in fams:
        key = (fam.request, fam.links)
        if key not in narrowest or fam.width < narrowest[key].width:
            narrowest[key] = fam
    return list(narrowest.values())


def seed_columns(instance: P.Instance, fams: list[Family], plan: Solution | None
                 ) -> list[tuple[int, Family, int]]:
    """The channels of a feasible ``plan`` as master columns (none without a plan)."""
    if plan is None:
        return []
    seeds = []
    lookup = {(fam.request, fam.links, fam.width): k for k, fam in enumerate(fams)}
    for conn in plan["connections"]:
        links = P.path_links(instance, conn["path"])
        k = lookup.get((conn["request"], links, conn["slots"]))
        if k is not None:
            seeds.append((k, fams[k], conn["first_slot"]))
    return seeds


def column_generation(instance: P.Instance, fams: list[Family], deadline: float,
                      plan: Solution | None = None) -> float:
    """The least Lagrangian bound L(mu) over the rounds of column generation until ``deadline``
    (or convergence: then it is the channel LP's value), the master seeded with the channels of
    ``plan`` where one is given."""
    lp = ChannelLP(instance)
    try:
        lp.add(seed_columns(instance, fams, plan))
        best = math.inf
        duals = np.zeros(len(lp.rhs))
        for _ in range(MAX_ROUNDS):
            inner, entering = _prices(lp, fams, duals, duals[:lp.n_req])
            lagrangian = np.dot(lp.rhs[lp.n_req:], duals[lp.n_req:]) + np.maximum(inner, 0.0).sum()
            best = min(best, float(lagrangian))
            if not entering or lp.add(entering) == 0:
                break
            if time.perf_counter() > deadline:
                break
            solved = lp.solve(deadline - time.perf_counter())
            if solved is None:
                break
            duals = solved[1]
    finally:
        lp.close()
    return best


#: Share of the grooming bound's time limit the cut-set knapsack may take (the LP gets the rest).
CUT_SHARE = 0.25


def grooming_bound(instance: G.Instance, options: SolveOptions) -> float:
    """min(the cut-set knapsack bound, the LP relaxation of Model C), rounded (module docstring).
    The knapsack (:func:`cut_knapsack_bound`) runs first with :data:`CUT_SHARE` of
    ``options.time_limit``, the LP with what is left; either stopped early drops out (the total
    weight stands in), never making the bound invalid."""
    total = float(sum(G.served_weight(instance, r) for r in range(len(instance.requests))))
    start = time.perf_counter()
    budget = options.time_limit
    cut_options = options if budget is None else replace(options, time_limit=max(1.0, CUT_SHARE * budget))
    cut = min(total, served_weight_cap(cut_knapsack_bound(instance, cut_options)))
    left = options if budget is None else replace(
        options, time_limit=max(1.0, budget - (time.perf_counter() - start)))
    model = grooming_milp.build(instance)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, left)
    if result.status != "optimal" or result.objective is None:
        return cut
    return min(cut, rounded(result.objective))


def usable_slots(instance: G.Instance) -> int:
    """U: the most slots, guard bands excluded, that lightpaths of the width menu can carry on one
    link, max sum_l (w_l - GB) over multisets of menu widths with sum_l w_l <= |S| (an unbounded
    knapsack)."""
    best = [0] * (instance.num_slots + 1)
    for s in range(1, instance.num_slots + 1):
        best[s] = max([best[s - 1]] + [best[s - w] + w - instance.guard_band
                                        for w in instance.lightpath_widths if w <= s])
    return best[-1]


def grooming_cuts(instance: G.Instance) -> list[frozenset[str]]:
    """The node sets X of the cut-set rows: for every node v, the k nodes nearest to v by
    shortest-path length, k = 1 .. |V| / 2 (ties: node order); duplicates removed."""
    nodes = instance.nodes
    adj: dict[str, list[tuple[str, float]]] = {v: [] for v in nodes}
    for link in instance.links:
        adj[link.a].append((link.b, link.length_m))
        adj[link.b].append((link.a, link.length_m))
    cuts: dict[frozenset[str], None] = {}
    for v in nodes:
        dist = {v: 0.0}
        todo = [(0.0, nodes.index(v), v)]
        while todo:
            d, _, u = heapq.heappop(todo)
            if d > dist[u]:
                continue
            for w, length in adj[u]:
                if d + length < dist.get(w, math.inf):
                    dist[w] = d + length
                    heapq.heappush(todo, (d + length, nodes.index(w), w))
        ranked = sorted(dist, key=lambda u: (dist[u], nodes.index(u)))
        for k in range(1, len(nodes) // 2 + 1):
            cuts.setdefault(frozenset(ranked[:k]))
    return list(cuts)


def link_sets(instance: G.Instance) -> list[int]:
    """The link sets F of the knapsack rows as bit masks over link indices: every link alone, all
    links, and the cut delta(X) of every X of :func:`grooming_cuts`."""
    ends = [(link.a, link.b) for link in instance.links]
    sets = {1 << e: None for e in range(len(ends))} | {(1 << len(ends)) - 1: None}
    for cut in grooming_cuts(instance):
        sets[sum(1 << e for e, (a, b) in enumerate(ends) if (a in cut) != (b in cut))] = None
    return list(sets)


def cut_knapsack_bound(instance: G.Instance, options: SolveOptions) -> float | None:
    """An upper bound on the served weight W of Model C from link-set capacity rows (module
    docstring, "link-set knapsack"): the dual bound of

        max sum_r w_r z_r  s.t.  sum_r f_r b_r kappa_r(F) z_r <= U |F|  for every F of :func:`link_sets`,

    z binary, by HiGHS (None where it reports no bound)."""
    slack = (1 + G.RATE_TOL) ** 2
    usable = usable_slots(instance)
    hops: dict[tuple[str, str], list[tuple[int, float]]] = {}  # pair -> (link mask, bit/s per slot)
    for q in G.used_pairs(instance):
        hops[q] = [(sum(1 << e for e in route.links), route.modulation.bps_per_slot)
                   for route in G.pair_routes(instance, q) if route.modulation is not None]
    reqs = instance.requests
    paths = [[[G.pair(instance, a, b) for a, b in zip(vr, vr[1:], strict=False)]
              for vr in G.virtual_routes(instance, req)] for req in reqs]
    model = pyo.ConcreteModel(name="grooming_link_set_knapsack")
    model.z = pyo.Var(range(len(reqs)), within=pyo.Binary)
    model.rows = pyo.ConstraintList()
    for mask in link_sets(instance):
        cost = {q: min((float((m & mask).bit_count()) / c for m, c in options_), default=math.inf)
                for q, options_ in hops.items()}
        terms = []
        for r, req in enumerate(reqs):
            kappa = min(sum(cost[q] for q in vr) for vr in paths[r])
            if math.isinf(kappa):
                model.z[r].fix(0)
            elif kappa > 0:
                terms.append((r, G.min_rate_bps(instance, req) * kappa / slack))
        room = usable * mask.bit_count()
        if sum(a for _, a in terms) > room:
            model.rows.add(sum(a * model.z[r] for r, a in terms) <= room)
    model.value = pyo.Objective(expr=sum(G.served_weight(instance, r) * model.z[r] for r in range(len(reqs))),
                                sense=pyo.maximize)
    model.objective_unit = 1.0
    result = solve_model(model, options)
    return result.bound
