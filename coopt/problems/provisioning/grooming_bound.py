"""The plan relaxation of Model C, a dual bound on its served weight, and the problem's bound.

Model C (:mod:`coopt.problems.provisioning.grooming_model`) places each lightpath on a first slot
of a candidate path; the plan relaxation keeps every decision but that one. It chooses, per node
pair q a virtual hop can use, at most one lightpath kind (k, w): a candidate path k of q that some
format reaches and a width w of the menu, capacity cap_{q,k,w} = (w - GB) c_{m(k)}; and per
request at most one virtual route pi of at most H hops:

    max  sum_r w_r sum_pi lam_{r,pi}
    s.t. (R1) sum_pi lam_{r,pi} <= 1                                    for every request r
         (R2) sum_{k,w} x_{q,k,w} <= 1                                   for every pair q
         (R3) sum_{(r,pi): q in pi} a_r lam_{r,pi} <= sum_{k,w} cap_{q,k,w} x_{q,k,w}   for every q
         (R4) lam_{r,pi} <= sum_{k,w} x_{q,k,w}                         for every hop q of pi
         (R5) sum_{q ni v} sum_{k,w} x_{q,k,w} <= T                      for every node v
         (R6) sum_{(q,k,w): e in k} w x_{q,k,w} <= |S|                   for every link e
         (R7) sum_{(q,k,w): e in k} (w - GB) x_{q,k,w} <= U               for every link e
         (R8) sum_{(q,k,w): e in k, 2 w > |S|} x_{q,k,w} <= 1            for every link e
         x, lam binary

with a_r = f_r b_r (1 - RATE_TOL) / (1 + RATE_TOL), f_r b_r the class floor of r's rate, and U
the most guard-band-free slots a multiset of menu widths fits into |S|
(:func:`coopt.problems.provisioning.bound.usable_slots`). (R4) is written over the kinds that can
carry a_r alone (cap_{q,k,w} >= a_r): a lightpath carrying r has at least that capacity.

Validity (every plan the checker accepts maps to a feasible point of the same served weight W):
drop the plan's lightpaths on pairs no virtual route uses (no served request crosses them: the
hops of a served request chain its source to its target through at most H - 1 distinct
intermediate nodes, which is one of its virtual routes). Set x_{q,k,w} = 1 for the lightpath of
pair q, whose path is a candidate path k of q with its format and whose width w is in the menu
(the checker's ``path_set``, ``modulation`` and ``width`` rows); (R2) is ``one_per_pair``. Set
lam_{r,pi} = 1 for the virtual route of each served request: (R1) holds. (R3): a served
request's rate is at least f_r b_r (1 - RATE_TOL) and the rates on a lightpath add up to at most
cap (1 + RATE_TOL), the checker's ``class_bound`` and ``capacity`` rows, so the a_r of the
requests it carries add up to at most cap. (R4): every hop of a served request is the lightpath
of its pair, which carries r and so has cap >= a_r by the same two rows. (R5) is
``transponders``: each lightpath takes one at each end. (R6): the lightpaths through link e
occupy disjoint blocks of w contiguous slots among the |S| of e (``non_overlap``,
``contiguity``), so their widths add up to at most |S|: they form a multiset of menu widths
fitting |S|, hence (R7) by the definition of U, and (R8) since two widths above |S| / 2 do not
fit together. The objective of that point is W, and the value of the plan is W - Q <= W
(Q >= 0). Hence HiGHS' dual bound of the relaxation bounds the value of every plan; what it
forgets is which slots each lightpath takes (contiguity and continuity across links) and the
rates above the class floors. Summing (R7) over a link set F and (R3) over the pairs gives the
link-set knapsack's row for F, so the relaxation is at least as tight as that knapsack wherever
HiGHS solves it to optimality.

:func:`grooming_bound` (method ``bound``) is the least of this bound, the link-set knapsack and
the LP relaxation of Model C (:func:`coopt.problems.provisioning.bound.grooming_bound`'s two),
rounded to the integer served weight, so it is never looser than either of those when each
finishes within its share of the time limit (stopped early, a part only drops out: on the
loaded machine the LP of NSFNET, which is 0.1 below the total weight, sometimes does).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, replace

import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.problems.provisioning import bound as B
from coopt.problems.provisioning import grooming_milp
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning.exact import served_weight_cap
from coopt.solvers.highs import solve_model

#: Shares of the bound's time limit: the link-set knapsack, then the plan relaxation; the LP
#: relaxation of Model C gets what is left.
KNAPSACK_SHARE = 0.1
PLAN_SHARE = 0.6
#: Seconds the bound may take without a time limit.
DEFAULT_SECONDS = 120.0


@dataclass(frozen=True)
class Kind:
    """A lightpath kind of the plan relaxation: pair, candidate path index, width, capacity."""

    ends: tuple[str, str]
    route: int
    width: int
    capacity_bps: float
    links: tuple[int, ...]


def lightpath_kinds(instance: G.Instance) -> list[Kind]:
    """Every (pair, path, width) of the pairs some virtual route uses, on paths a format reaches."""
    out = []
    for q in G.used_pairs(instance):
        for k, route in enumerate(G.pair_routes(instance, q)):
            if route.modulation is None:
                continue
            out += [Kind(q, k, w, G.capacity_bps(instance, route, w), tuple(route.links))
                    for w in instance.lightpath_widths]
    return out


def plan_model(instance: G.Instance, kinds: list[Kind] | None = None) -> pyo.ConcreteModel:
    """The plan relaxation (module docstring) as a Pyomo model maximizing W in weight units; its
    ``kinds`` and ``routes_of`` attributes name the x and lam variables. ``kinds``, a subset of
    :func:`lightpath_kinds`, builds the model with every other kind's x at 0 (removed, with the
    virtual routes that then lack a lightpath on a hop): a restriction, not a relaxation, for the
    plan search of :mod:`.grooming_lns`; the bound uses the whole set."""
    kinds = lightpath_kinds(instance) if kinds is None else kinds
    reqs = instance.requests
    slack = (1 - G.RATE_TOL) / (1 + G.RATE_TOL)
    model = pyo.ConcreteModel(name="grooming_plan_relaxation")
    model.kinds = kinds
    model.routes_of = [G.virtual_routes(instance, r) for r in reqs]
    of_pair: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, kind in enumerate(kinds):
        of_pair[kind.ends].append(i)
    index = [(r, j) for r in range(len(reqs)) for j in range(len(model.routes_of[r]))
             if all(G.pair(instance, a, b) in of_pair
                    for a, b in zip(model.routes_of[r][j], model.routes_of[r][j][1:], strict=False))]
    model.x = pyo.Var(range(len(kinds)), within=pyo.Binary)
    model.lam = pyo.Var(index, within=pyo.Binary)
    model.rows = pyo.ConstraintList()
    by_request: dict[int, list] = defaultdict(list)
    load: dict[tuple[str, str], list] = defaultdict(list)
    for r, j in index:
        by_request[r].append((r, j))
        vr = model.routes_of[r][j]
        a_r = G.min_rate_bps(instance, reqs[r]) * slack
        for a, b in zip(vr, vr[1:], strict=False):
            q = G.pair(instance, a, b)
            load[q].append((a_r, (r, j)))
            # (R4), over the kinds that alone carry a_r
            model.rows.add(model.lam[(r, j)] <= sum(model.x[i] for i in of_pair[q]
                                                    if kinds[i].capacity_bps >= a_r))
    for members in by_request.values():  # (R1)
        if len(members) > 1:
            model.rows.add(sum(model.lam[m] for m in members) <= 1)
    for q, members in of_pair.items():
        if len(members) > 1:  # (R2)
            model.rows.add(sum(model.x[i] for i in members) <= 1)
        if load[q]:  # (R3), in Gbit/s
            model.rows.add(sum(a / G.GBPS * model.lam[m] for a, m in load[q])
                           <= sum(kinds[i].capacity_bps / G.GBPS * model.x[i] for i in members))
    at_node: dict[str, list[int]] = defaultdict(list)
    on_link: dict[int, list[int]] = defaultdict(list)
    for i, kind in enumerate(kinds):
        for v in kind.ends:
            at_node[v].append(i)
        for e in kind.links:
            on_link[e].append(i)
    for members in at_node.values():  # (R5)
        if len(members) > instance.transponders_per_node:
            model.rows.add(sum(model.x[i] for i in members) <= instance.transponders_per_node)
    usable = B.usable_slots(instance)
    for members in on_link.values():
        if sum(kinds[i].width for i in members) > instance.num_slots:  # (R6)
            model.rows.add(sum(kinds[i].width * model.x[i] for i in members) <= instance.num_slots)
        if sum(kinds[i].width - instance.guard_band for i in members) > usable:  # (R7)
            model.rows.add(sum((kinds[i].width - instance.guard_band) * model.x[i] for i in members)
                           <= usable)
        wide = [i for i in members if 2 * kinds[i].width > instance.num_slots]
        if len(wide) > 1:  # (R8)
            model.rows.add(sum(model.x[i] for i in wide) <= 1)
    weight = [G.served_weight(instance, r) for r in range(len(reqs))]
    model.value = pyo.Objective(expr=sum(weight[r] * model.lam[(r, j)] for r, j in index), sense=pyo.maximize)
    model.objective_unit = 1.0
    return model


def plan_bound(instance: G.Instance, options: SolveOptions) -> float | None:
    """HiGHS' dual bound of the plan relaxation on the served weight W (None where it reports
    none, e.g. stopped before the root finished)."""
    if not instance.requests:
        return 0.0
    result = solve_model(plan_model(instance), options)
    if result.status == "infeasible":
        return 0.0  # cannot happen (all zero is feasible); 0 is then still a valid bound on W
    return result.bound


def grooming_bound(instance: G.Instance, options: SolveOptions) -> float:
    """min(link-set knapsack, plan relaxation, LP relaxation of Model C), each on the value and
    rounded as in :mod:`coopt.problems.provisioning.bound`. The knapsack gets
    :data:`KNAPSACK_SHARE` of ``options.time_limit`` (:data:`DEFAULT_SECONDS` without one), the
    plan relaxation :data:`PLAN_SHARE`, the LP what is left; one stopped without a bound drops
    out (the total weight stands in), never making the result invalid."""
    total = float(sum(G.served_weight(instance, r) for r in range(len(instance.requests))))
    budget = options.time_limit if options.time_limit is not None else DEFAULT_SECONDS
    start = time.perf_counter()

    def share(fraction: float) -> SolveOptions:
        return replace(options, time_limit=max(1.0, fraction * budget))

    best = min(total, served_weight_cap(B.cut_knapsack_bound(instance, share(KNAPSACK_SHARE))))
    best = min(best, served_weight_cap(plan_bound(instance, share(PLAN_SHARE))))
    left = replace(options, time_limit=max(1.0, budget - (time.perf_counter() - start)))
    model = grooming_milp.build(instance)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, left)
    if result.status == "optimal" and result.objective is not None and math.isfinite(result.objective):
        best = min(best, B.rounded(result.objective))
    return best
