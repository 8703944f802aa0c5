"""The channel MILP of Models A and B (the statement is in :mod:`coopt.problems.provisioning.model`).

:func:`channel_model` builds the variables and rows (A1)-(A3) with two expressions, the served
weight W and the weighted degradation P; :func:`build` adds the one-number objective W - eps P
(the ``milp`` method, LP relaxation and export), and the exact route
(:mod:`coopt.problems.provisioning.exact`) solves the same rows lexicographically: max W, then
min P at that W, the second on the model :func:`restrict_to_weight` narrows to the solutions at
that W (reduced-cost fixing, :func:`fix_for_weight`; exact class-count rows,
:func:`class_count_ranges`), each restriction with its proof in its docstring.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.provisioning.model import (
    Candidate,
    Instance,
    active_at,
    background_transponders,
    candidates,
    connection,
    end_time,
    epsilon,
    instants,
    request_ends,
    routes,
    solution_from,
)


def channel_model(instance: Instance, narrowest: bool = False, maximal_rows: bool = True,
                  symmetry: bool = False) -> pyo.ConcreteModel:
    """x, the rows (A1)-(A3), and the expressions ``served_weight`` (W) and ``degradation`` (P).

    ``narrowest`` keeps, per request and path, only the narrowest channel width. In the static
    model that loses nothing for max W: a channel of width n at first slot f covers the cells of
    the narrower one at f, and W does not depend on rho, so any solution stays feasible, with the
    same W, when every channel is narrowed in place. (Not in Model B: a narrower channel is held
    longer, t / rho.)

    ``maximal_rows``: Model B's (A2) rows only at the maximal instants of :func:`overlap_rows`.
    ``symmetry``: in the static model, of two identical requests (same node pair, bandwidth and
    class: the same candidates, cells and values) the one listed first is served whenever the
    other is: swapping their decisions maps any solution to one that obeys this, with the same
    W and P. Off by default: on generated size 6 it took seed 0 from 411 nodes to 1456 and gave
    seed 2 one unit of bound in 60 s (benchmarks/figures/provisioning_scale.py)."""
    cands = candidates(instance, narrowest)
    model = pyo.ConcreteModel(name=f"provisioning_{instance.model}")
    model.candidates = cands
    model.x = pyo.Var(range(len(cands)), within=pyo.Binary)
    weight = [instance.classes[instance.requests[c.request].priority - 1].weight for c in cands]
    model.served_weight = pyo.Expression(expr=sum(w * model.x[i] for i, w in enumerate(weight)))
    model.degradation = pyo.Expression(
        expr=sum(w * (1.0 - c.retained) * model.x[i]
                 for i, (w, c) in enumerate(zip(weight, cands, strict=True)) if c.retained < 1.0))
    by_request: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(cands):
        by_request[c.request].append(i)
    model.by_request = by_request
    model.packing = []  # the (A2), (A3) rows as (candidates, right-hand side) of sum x <= rhs
    _add_one_decision_rows(model)
    _add_overlap_rows(model, instance, maximal_rows)
    model.symmetry = pyo.ConstraintList()
    if symmetry and instance.model == "static":
        for first, second in identical_pairs(instance):
            if by_request[first] and by_request[second]:
                model.symmetry.add(sum(model.x[i] for i in by_request[first])
                                   >= sum(model.x[i] for i in by_request[second]))
    _add_transponder_rows(model, instance)
    return model


def _add_one_decision_rows(model: pyo.ConcreteModel) -> None:
    """(A1): at most one channel per request (requests with one channel need no row)."""
    model.one_decision = pyo.ConstraintList()
    for r in sorted(model.by_request):
        if len(model.by_request[r]) > 1:
            model.one_decision.add(sum(model.x[i] for i in model.by_request[r]) <= 1)


def _add_overlap_rows(model: pyo.ConcreteModel, instance: Instance, maximal_rows: bool) -> None:
    """(A2): the rows of :func:`overlap_rows` that span two requests or more, each once."""
    cands = model.candidates
    model.no_overlap = pyo.ConstraintList()
    rows_seen: set[frozenset[int]] = set()
    for members in overlap_rows(instance, cands, maximal_rows):
        row = frozenset(members)
        if len({cands[i].request for i in members}) > 1 and row not in rows_seen:
            rows_seen.add(row)
            model.no_overlap.add(sum(model.x[i] for i in members) <= 1)
            model.packing.append((members, 1))


def _add_transponder_rows(model: pyo.ConcreteModel, instance: Instance) -> None:
    """(A3): at every instant, the channels ending at a node use at most its free transponders
    (a row only where more requests could use them than there are)."""
    cands = model.candidates
    model.transponders = pyo.ConstraintList()
    if not instance.transponders_per_node:
        return
    for q in instants(instance):
        active = [i for i, c in enumerate(cands) if active_at(instance, c, q)]
        for v in instance.nodes:
            members = [i for i in active if v in request_ends(instance, cands[i].request)]
            free = instance.transponders_per_node - background_transponders(instance, v, q)
            if len({cands[i].request for i in members}) > free:
                model.transponders.add(sum(model.x[i] for i in members) <= max(free, 0))
                model.packing.append((members, max(free, 0)))


def identical_pairs(instance: Instance) -> list[tuple[int, int]]:
    """(r, r') for consecutive requests of each group of identical ones (static model)."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for r, q in enumerate(instance.requests):
        ends = (q.source, q.target) if instance.directed else frozenset((q.source, q.target))
        groups[(ends, q.bandwidth_bps, q.priority)].append(r)
    return [(a, b) for members in groups.values() for a, b in zip(members, members[1:], strict=False)]


def overlap_rows(instance: Instance, cands: list[Candidate], maximal: bool = True) -> list[list[int]]:
    """The (A2) rows: candidates holding a cell (link, slot) at an instant q, one list per row.

    Static: one row per cell. Time-expanded: at instant q_i the row of a cell is the set A_i of
    its candidates active at q_i. A_i is contained in A_{i+1} when nothing in it ends by q_{i+1},
    so following i, i+1, ... every A_i lies in some A_k from which a candidate ends by q_{k+1}
    (the last instant always qualifies): those rows imply all others. Of them, A_k is also
    contained in A_{k-1} when nothing starts at q_k, and A_{k-1} is itself written when something
    ends by q_k; that row is dropped too. What is left are the maximal cliques of the interval
    graph in time (1-D Helly, as in the module docstring of :mod:`.model`)."""
    by_cell: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, c in enumerate(cands):
        for e in routes(instance, *request_ends(instance, c.request))[c.route].links:
            for s in range(c.first_slot, c.first_slot + c.slots):
                by_cell[(e, s)].append(i)
    if instance.model == "static":
        return [by_cell[cell] for cell in sorted(by_cell)]
    times = instants(instance)
    start = {}  # candidate -> (first instant index it is active at, one past the last)
    for i, c in enumerate(cands):
        req = instance.requests[c.request]
        end = end_time(req, c.retained)
        start[i] = (bisect.bisect_left(times, req.arrival_s), bisect.bisect_left(times, end))
    rows = []
    for cell in sorted(by_cell):
        members = by_cell[cell]
        opens = {start[i][0] for i in members}
        closes = {start[i][1] - 1 for i in members}
        for k in sorted(closes) if maximal else range(len(times)):
            if not maximal or k in opens or k - 1 not in closes:
                rows.append([i for i in members if start[i][0] <= k < start[i][1]])
    return rows


def build(instance: Instance, incumbent: Solution | None = None) -> pyo.ConcreteModel:
    """The channel MILP (A1)-(A3) with the one-number objective W - eps P in problem units (not
    divided further: that would push the degradation coefficients eps w (1 - rho) toward HiGHS'
    dual feasibility tolerance). ``incumbent`` (the runner's warm start) is not handed to HiGHS:
    with HiGHS 1.16.0 a start can end the solve at a worse plan reported ``optimal``
    (:mod:`coopt.problems.provisioning.exact`, which uses it as a cutoff row instead)."""
    model = channel_model(instance)
    served = model.served_weight - epsilon(instance) * model.degradation
    if not model.candidates:  # no request can be served: plan nothing, worth 0 (one fixed column,
        model.nothing = pyo.Var(bounds=(0, 0))  # since HiGHS answers a model without any "error")
        served = served + model.nothing
    model.value = pyo.Objective(expr=served, sense=pyo.maximize)
    model.objective_unit = 1.0
    return model


def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    chosen = []
    for i, c in enumerate(model.candidates):
        if (pyo.value(model.x[i], exception=False) or 0.0) > 0.5:
            route = routes(instance, *request_ends(instance, c.request))[c.route]
            chosen.append(connection(instance, c.request, route, c.retained, c.first_slot))
    return solution_from(instance, chosen)


@dataclass(frozen=True)
class Fixing:
    """What :func:`fix_for_weight` did: the LP bound D on W it used, the channels it fixed to 0
    and to 1, and the requests it forced to be served."""

    bound: float
    to_zero: int
    to_one: int
    forced: int


def fix_for_weight(model: pyo.ConcreteModel, instance: Instance, weight: int) -> Fixing:
    """Reduced-cost fixing of ``model`` (a :func:`channel_model`) against W >= ``weight``: every
    solution with served weight at least ``weight`` obeys the fixings, so a model that keeps only
    such solutions (the exact route's stage 2) loses nothing.

    Proof. Let y >= 0 be any multipliers of the LP relaxation's rows of max W (request rows
    sum_{j in r} x_j <= 1 and the (A2), (A3) rows, b their right-hand sides; here HiGHS' LP duals),
    a = A^T y, d_j = max(0, a_j - w_j), u_j = max(0, w_j - a_j) and D = b^T y + sum_j u_j. Then
    w_j = a_j - d_j + u_j, and for every 0-1 solution x with row slacks s = b - A x >= 0,

        W(x) = D - y^T s - sum_j d_j x_j - sum_j u_j (1 - x_j),

    every term subtracted being >= 0. So x_j = 1 implies W <= D - d_j, x_j = 0 implies
    W <= D - u_j, and leaving request r unserved (slack 1 in its row) implies W <= D - y_r.
    Whichever of these bounds falls below ``weight`` (less a relative 1e-6 for float rounding)
    is a fixing: x_j = 0, x_j = 1, or sum_{j in r} x_j >= 1. D is recomputed here from y, so
    the fixings hold whatever accuracy HiGHS reached (any y >= 0 gives a valid D)."""
    from coopt.solvers.highs import max_weight_lp

    cands = model.candidates
    n = len(cands)
    if n == 0:
        return Fixing(0.0, 0, 0, 0)
    w = np.array([instance.classes[instance.requests[c.request].priority - 1].weight for c in cands], float)
    requests = sorted(model.by_request)
    rows = [model.by_request[r] for r in requests] + [members for members, _ in model.packing]
    rhs = np.array([1.0] * len(requests) + [float(b) for _, b in model.packing])
    index = np.concatenate([np.asarray(m, dtype=np.int32) for m in rows])
    owner = np.repeat(np.arange(len(rows), dtype=np.int32), [len(m) for m in rows])
    solved = max_weight_lp(w, np.zeros(n), index, owner, np.ones(len(index)), rhs)
    y = None if solved is None else solved[1]
    if y is None:
        return Fixing(math.inf, 0, 0, 0)
    a = np.bincount(index, weights=y[owner], minlength=n)
    d, u = np.maximum(0.0, a - w), np.maximum(0.0, w - a)
    bound = float(rhs @ y + u.sum())
    below = weight - 1e-6 * max(1.0, abs(weight))
    to_zero, to_one = np.nonzero(bound - d < below)[0], np.nonzero(bound - u < below)[0]
    for j in to_zero:
        model.x[int(j)].fix(0)
    for j in to_one:
        model.x[int(j)].fix(1)
    model.forced = pyo.ConstraintList()
    for k, r in enumerate(requests):
        if bound - y[k] < below and not all(model.x[j].fixed for j in model.by_request[r]):
            model.forced.add(sum(model.x[j] for j in model.by_request[r]) >= 1)
    return Fixing(bound, len(to_zero), len(to_one), len(model.forced))


def class_count_ranges(weights: list[int], available: list[int], low: int, high: int
                       ) -> list[tuple[int, int]] | None:
    """Per class p, the least and largest number n_p of served requests over the integer vectors
    with 0 <= n_q <= available[q] and low <= sum_q weights[q] n_q <= high (None: no vector).

    Exact, by the sums the other classes can reach (a bitset per class): n_p is possible iff some
    reachable sum s of the others has low <= weights[p] n_p + s <= high."""
    out = []
    for p, (w, count) in enumerate(zip(weights, available, strict=True)):
        reach = 1  # bit s: the other classes can make up served weight s
        for q, (wq, cq) in enumerate(zip(weights, available, strict=True)):
            if q != p:
                for _ in range(cq):
                    reach |= reach << wq
        possible = []
        for n in range(count + 1):
            lo, hi = max(0, low - w * n), high - w * n
            if hi >= lo and (reach >> lo) & ((1 << (hi - lo + 1)) - 1):
                possible.append(n)
        if not possible:
            return None
        out.append((possible[0], possible[-1]))
    return out


def restrict_to_weight(model: pyo.ConcreteModel, instance: Instance, weight: int, cap: int) -> Fixing:
    """Restrict ``model`` (a :func:`channel_model`) to the solutions with served weight W in
    [``weight``, ``cap``], losing none of them: the fixings of :func:`fix_for_weight`, then the
    rows W <= cap + 1/2 and, per class p, lo_p <= (served requests of class p) <= hi_p with the
    ranges of :func:`class_count_ranges` (W = sum_p w_p n_p: a solution's class counts are one of
    the vectors enumerated there). The count rows are what the LP lacks: with W fixed it may
    serve fractions of every class, while the integer counts are often fixed outright (generated
    size 6, seed 0: all 20 gold, 10 of 14 silver, 6 of 14 bronze)."""
    fixing = fix_for_weight(model, instance, weight)
    classes = range(1, len(instance.classes) + 1)
    members = {p: [j for r, js in model.by_request.items() if instance.requests[r].priority == p for j in js]
               for p in classes}
    available = [sum(1 for r, js in model.by_request.items() if instance.requests[r].priority == p
                     and not all(model.x[j].fixed and model.x[j].value == 0 for j in js)) for p in classes]
    model.cap = pyo.Constraint(expr=model.served_weight <= cap + 0.5)
    model.class_count = pyo.ConstraintList()
    ranges = class_count_ranges([c.weight for c in instance.classes], available, weight, cap)
    for p, (lo, hi) in zip(classes, ranges or (), strict=False):
        served = sum(model.x[j] for j in members[p])
        if lo > 0:
            model.class_count.add(served >= lo)
        if hi < available[p - 1]:
            model.class_count.add(served <= hi)
    return fixing
