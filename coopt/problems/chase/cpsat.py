"""The constraint program of the ``chase`` mapping problem, solved by CP-SAT: the problem's
``exact`` method where :func:`applies` (the MILP of :mod:`.milp` stays ``milp``, and ``exact``
elsewhere).

Why a second exact model
------------------------
The MILP orders every same-device pair with binaries and big-M rows; its LP relaxation does not
see that a device runs one task at a time, so its bound climbs slowly once a platform has four
devices and a few dozen tasks. A device running one task at a time is what CP-SAT's NoOverlap
propagators (edge finding, not-first / not-last, energetic reasoning) and its clause learning are
built for. The MILP stays ahead where identical devices abound and its symmetry rows and LP
bound close the proof at the root (8 GPUs of ``1-transformer-l4``); :func:`applies` states the
rule and docs/chase.md the measurements behind it.

Integer times
-------------
CP-SAT works on integers. Every time is counted in a unit ``u``: the grid of the instance
(:func:`.schedule.objective_grid`, where every run time and transfer time is a multiple of it),
else ``u = RESOLUTION * LB / (2n)`` with ``LB`` the critical-path bound (at most the optimum), or
the shortest run time where that is less (so that every run time is at least one unit, and the
model's starts order every device strictly).
Every duration ``w`` of the model is ``floor(w / u)`` units (run times ``d_vp``, transfers
``c_e(p, q)``, heads, tails; off the grid taken a relative 1e-12 low, so that float rounding of a
sum never floors it above its exact floor), the horizon ``H = floor(U / u)`` (off the grid taken
1e-12 high, so that it is never below the exact floor) with ``U`` the incumbent's makespan
(the runner's warm start ``local_search``, also the hint) or the serial bound without one.

*The bound is valid.* Map any schedule (seconds) to ``S'_v = floor(S_v / u)``. Since ``floor(a +
b) >= floor(a) + floor(b)``, every row below holds for ``S'`` with the floored data whenever its
counterpart holds in seconds, and the makespan becomes at most ``floor(C / u)``. So the model's
optimum is at most ``floor(C* / u)`` and CP-SAT's dual bound times ``u`` is a lower bound on the
optimum ``C*``; no schedule of makespan at most ``U`` is lost.

*The solution is exact.* The solution reported is not the model's integer schedule but the
semi-active schedule (:func:`.schedule.semi_active`, exact times in seconds) of the model's
assignment and order; the checker judges it. Its makespan is the length of a path of at most
``n`` run times and ``n - 1`` transfers, each at most ``u`` above its floor, and that path is no
longer than the model's makespan in floored units, so it is at most ``u (C_model + 2n)``: within
``2n u / LB = RESOLUTION`` (relative) of the bound. On a grid the floors are exact and so is the
schedule. ``optimal`` is claimed only where the checked makespan is within the requested gap of
the bound (the runner checks it again).

Formulation (integer units)
---------------------------
``x_vp`` boolean for ``p in A(v)`` within the horizon; ``z_epq`` boolean, the pair of devices of
an edge's ends (the MILP's linearised product, here linear for CP-SAT's LP relaxation too);
``S_v`` integer start; ``E_v`` end; ``C``::

    min C
    exactly one x_vp per task                                      (assign)
    optional interval [S_v, S_v + d_vp) present iff x_vp,
      one NoOverlap per device over its intervals                  (exclusive devices)
    E_v = S_v + sum_p d_vp x_vp;  C >= E_v                         (ends, makespan)
    sum_q z_epq = x_up,  sum_p z_epq = x_vq    for every edge e = (u, v)   (z_epq = x_up x_vq)
    S_v >= E_u + sum_{p != q} c_e(p, q) z_epq                      (precedence with transfer)
    S_v >= head_vp,  C >= E_v + tail_vp        if x_vp             (heads, tails; energetic)
    C >= floor(LB / u)                                             (energetic bound)
    C >= sum_v d_vp x_vp                       for every device    (loads)
    cumulative of [S_v, E_v), demand 1, capacity |P|               (at most |P| tasks at once)
    x_{v, p_j} -> OR_{pi(u) < pi(v)} x_{u, p_{j-1}}                 (symmetry, identical devices)
    x_{v0, p} = 0 where p is not the least of its orbit under G      (symmetry, whole servers)
    x_vp = 0 where head_vp + d_vp + tail_vp > H;  C <= H             (horizon, domain reduction)

Search: CP-SAT's automatic search with the decision strategy "the start that can be earliest, at
its least value" first (set-times branching) and linearisation level 2 (its LP holds the
conditional rows too); measured in docs/chase.md ("Two exact models"): without the strategy
generator instances of 24 tasks stay 10-20 % open after 60 s, with it they close.

*What nothing optimal loses.* Heads, tails, loads and the cumulative (each device runs one task
at a time) are valid inequalities (proof in :mod:`.milp` and :mod:`.schedule`), and so are their
floors (above). The heads and tails are those of :func:`.energetic.energetic_heads_tails` (the
routed ones raised by the work of the ancestors and descendants on the devices weighted by
speed), and ``LB`` is :func:`.energetic.energetic_bound`, at least the critical-path bound; both
are lower bounds valid in every schedule (proofs there), and ``C >= floor(LB / u)`` holds for the
floored image of every schedule, whose makespan may be taken as ``floor(C / u) >= floor(LB / u)``.
The horizon keeps every schedule no longer than the incumbent, the optima among them. The
symmetry rows are the MILP's, with its proof (:mod:`.milp`): relabelling the devices of a class of
interchangeable devices (:func:`.schedule.device_classes`) in the order of the first task (by
topological rank ``pi``) each runs maps every schedule to one of equal makespan that satisfies
them; floored data are as symmetric as the exact data, so the argument holds in units too.
Where no two devices are interchangeable on their own but the platform still has symmetries (two
servers of one GPU and one NPU each: swapping the servers whole), ``G`` is the group of device
permutations ``g`` that keep every run time and every transfer time
(:func:`.schedule.automorphisms`: ``t_v(g p) = t_v(p)``, ``c_e(g p, g q) = c_e(p, q)``). Moving
every task of a schedule from ``p`` to ``g(p)`` keeps every start feasible and the makespan, so for
``v0`` the first task of the topological order, on device ``p``, the member of ``G`` that sends
``p`` to the least device of its orbit maps the schedule to one of equal makespan that satisfies
the row; the heads, tails and horizon are the same on ``p`` and ``g(p)`` (computed from the same
data), so the image keeps every other row. The row is used only where there is no class of
interchangeable devices, so the two kinds of rows never act together.

Model rows and checker violations (:mod:`.model`), each way:

============================================  =============================================
model                                         checker
============================================  =============================================
assign (one present interval per task)        ``assignment``, ``compatible``
``S_v >= 0``                                  ``start``
precedence with transfer                      ``precedence``
NoOverlap per device                          ``overlap``
``C >= E_v``                                  ``objective`` recomputed as the largest finish
``z`` link rows                               (they state ``z = x_u x_v``; no decision of
                                              their own)
heads, tails, loads, cumulative, horizon,     valid inequalities and restrictions proved above
energetic bound, symmetry
============================================  =============================================
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination, relative_gap
from coopt.problems.chase.energetic import energetic_bound, energetic_heads_tails, speed_weights
from coopt.problems.chase.model import Instance, make_solution
from coopt.problems.chase.schedule import (
    automorphisms,
    canonical,
    critical_path_bound,
    device_classes,
    objective_grid,
    semi_active,
    serial_bound,
)
from coopt.solvers import cpsat as cp_route
from coopt.solvers.cpsat import Watch

#: Relative distance the floors may put between the reported schedule and the bound off a grid
#: (module docstring): below the differential test's 1e-7 with CP-SAT's own gap added, and well
#: below the suite's tolerance of 1e-6.
RESOLUTION = 5e-8
#: Relative amount by which an off-grid quotient is lowered before it is floored (float sums of
#: heads and tails may sit a few ulps above their exact value).
FLOOR_MARGIN = 1e-12
#: Largest horizon, in units of the grid, at which the grid is the unit (else the fine unit).
MAX_GRID_HORIZON = 10**9
#: Most devices a platform may have for the constraint program to be ``exact`` there (measured on
#: the 4-device family and files; larger platforms keep the MILP, docs/chase.md).
MAX_DEVICES = 4
#: CP-SAT parameters beyond the route's defaults (docs/chase.md, "Two exact models").
PARAMETERS: dict[str, object] = {"linearization_level": 2}


def applies(inst: Instance) -> bool:
    """The constraint program is the ``exact`` method of ``inst``: at most :data:`MAX_DEVICES`
    devices (measured in docs/chase.md, "Two exact models"); the MILP runs elsewhere."""
    return inst.n_devices <= MAX_DEVICES


def unit_of(inst: Instance, upper: float) -> tuple[float, bool]:
    """(``u``, whether it is the instance's grid) for the horizon ``upper`` (seconds)."""
    grid = objective_grid(inst)
    if grid is not None and upper / grid <= MAX_GRID_HORIZON:
        return grid, True
    tab = inst.tables
    floor = critical_path_bound(tab)
    if floor <= 0:
        floor = upper if upper > 0 else 1.0
    shortest = min(tab.time[v][p] for v in range(tab.n) for p in tab.compatible[v])
    return min(RESOLUTION * floor / (2 * tab.n), shortest), False


@dataclass
class Built:
    """The CP-SAT model, its variables and the unit ``u`` of its times."""

    model: Any
    x: dict[tuple[int, int], Any]
    start: list[Any]
    makespan: Any
    unit: float
    horizon: int
    classes: list[list[int]]
    grid: bool
    #: The device relabellings the first task is broken by (:func:`first_task_group`), else empty.
    group: list[tuple[int, ...]]


def _floor(value: float, unit: float, grid: bool) -> int:
    """``floor(value / unit)``; on the instance's grid the nearest integer (the value is a multiple
    of the unit, and a float quotient may sit a hair below it; a head or tail that is not a multiple
    is at most its ceiling, which every semi-active start on the grid respects). Off the grid the
    quotient is first lowered by :data:`FLOOR_MARGIN` of itself, so that a float sum a hair above
    an integer (a head of ``k`` units computed as ``k + 1e-15``, whose exact value may be just
    below ``k``) floors to ``k - 1``: one unit weaker at worst, never above the exact floor."""
    quotient = value / unit
    if grid:
        return round(quotient)
    return math.floor(quotient - FLOOR_MARGIN * max(1.0, abs(quotient)))


def _horizon(upper: float, unit: float, grid: bool) -> int:
    """The horizon in units: at least the exact ``floor(upper / unit)`` (the floored image of a
    schedule of makespan ``upper`` must fit), so off the grid the quotient is raised by
    :data:`FLOOR_MARGIN` of itself before it is floored, the mirror of :func:`_floor`."""
    quotient = upper / unit
    if grid:
        return round(quotient)
    return math.floor(quotient + FLOOR_MARGIN * max(1.0, abs(quotient)))


def build(inst: Instance, upper: float, hint: Solution | None = None,
          lower: float | None = None) -> Built | None:
    """The model above with horizon ``upper`` (seconds; a makespan some schedule reaches),
    ``hint`` (a checked schedule no longer than ``upper``) as CP-SAT's hint and ``lower`` (a
    lower bound on the optimum, seconds) as ``C >= floor(lower / u)``; None when the horizon
    leaves a task no device (no schedule within it)."""
    from ortools.sat.python import cp_model

    tab = inst.tables
    unit, grid = unit_of(inst, upper)
    H = _horizon(upper, unit, grid)
    head, tail = energetic_heads_tails(tab, speed_weights(tab))
    dur = [[_floor(tab.time[v][p], unit, grid) if p in tab.compatible[v] else 0 for p in range(tab.devices)]
           for v in range(tab.n)]
    hd = [[_floor(head[v][p], unit, grid) if p in tab.compatible[v] else 0 for p in range(tab.devices)]
          for v in range(tab.n)]
    tl = [[_floor(tail[v][p], unit, grid) if p in tab.compatible[v] else 0 for p in range(tab.devices)]
          for v in range(tab.n)]
    allowed = [[p for p in tab.compatible[v] if hd[v][p] + dur[v][p] + tl[v][p] <= H] for v in range(tab.n)]
    if any(not a for a in allowed):
        return None
    classes = device_classes(inst)
    group = first_task_group(inst, classes)
    if group:  # the first task on the least device of its orbit (module docstring)
        first = tab.topo[0]
        allowed[first] = [p for p in allowed[first] if min(g[p] for g in group) == p]
    model = cp_model.CpModel()
    C = model.NewIntVar(0 if lower is None else min(H, max(0, _floor(lower, unit, False))), H, "C")
    x: dict[tuple[int, int], Any] = {}
    start, end = [], []
    per_device: list[list[Any]] = [[] for _ in range(tab.devices)]
    for v in range(tab.n):
        lo = min(hd[v][p] for p in allowed[v])
        hi = max(lo, H - min(dur[v][p] + tl[v][p] for p in allowed[v]))
        S = model.NewIntVar(lo, hi, f"S{v}")
        E = model.NewIntVar(lo, H, f"E{v}")
        start.append(S)
        end.append(E)
        for p in allowed[v]:
            x[v, p] = model.NewBoolVar(f"x{v}_{p}")
            per_device[p].append(model.NewOptionalFixedSizeIntervalVar(S, dur[v][p], x[v, p], f"I{v}_{p}"))
            if hd[v][p] > lo:
                model.Add(hd[v][p] <= S).OnlyEnforceIf(x[v, p])
            model.Add(E + tl[v][p] <= C).OnlyEnforceIf(x[v, p])
        model.AddExactlyOne(x[v, p] for p in allowed[v])
        model.Add(S + sum(dur[v][p] * x[v, p] for p in allowed[v]) == E)
        model.Add(E <= C)
    # redundant: at most P tasks run at once (energetic reasoning over the variable lengths)
    length = [model.NewIntVar(min(dur[v][p] for p in allowed[v]), max(dur[v][p] for p in allowed[v]), f"D{v}")
              for v in range(tab.n)]
    for v in range(tab.n):
        model.Add(length[v] == end[v] - start[v])
    model.AddCumulative([model.NewIntervalVar(start[v], length[v], end[v], f"J{v}") for v in range(tab.n)],
                        [1] * tab.n, tab.devices)
    for p in range(tab.devices):
        if per_device[p]:
            model.AddNoOverlap(per_device[p])
            model.Add(sum(dur[v][p] * x[v, p] for v in range(tab.n) if (v, p) in x) <= C)
    for e, (u, v) in enumerate(zip(tab.source, tab.target, strict=True)):
        transfer = {(p, q): _floor(tab.comm(e, p, q), unit, grid) if p != q else 0
                    for p in allowed[u] for q in allowed[v]}
        if not any(transfer.values()):
            model.Add(start[v] >= end[u])
            continue
        z = {pq: model.NewBoolVar(f"z{e}_{pq[0]}_{pq[1]}") for pq in transfer}
        for p in allowed[u]:
            model.Add(sum(z[p, q] for q in allowed[v]) == x[u, p])
        for q in allowed[v]:
            model.Add(sum(z[p, q] for p in allowed[u]) == x[v, q])
        model.Add(start[v] >= end[u] + sum(c * z[pq] for pq, c in transfer.items() if c))
    _symmetry(model, inst, x, allowed, classes)
    model.Minimize(C)
    # set-times branching: start the task that can start earliest, as early as it can
    model.AddDecisionStrategy(start, cp_model.CHOOSE_LOWEST_MIN, cp_model.SELECT_MIN_VALUE)
    built = Built(model, x, start, C, unit, H, classes, grid, group)
    if hint is not None:
        _hint(inst, built, hint)
    return built


def _symmetry(model: Any, inst: Instance, x: dict[tuple[int, int], Any], allowed: list[list[int]],
              classes: list[list[int]]) -> None:
    """The symmetry rows of the classes of identical devices (the MILP's, as clauses)."""
    tab = inst.tables
    for members in classes:
        for before, after in zip(members, members[1:], strict=False):
            for v in range(tab.n):
                if (v, after) not in x:
                    continue
                earlier = [x[u, before] for u in range(tab.n)
                           if tab.position[u] < tab.position[v] and (u, before) in x]
                if earlier:
                    model.AddBoolOr(earlier).OnlyEnforceIf(x[v, after])
                else:
                    model.Add(x[v, after] == 0)


def first_task_group(inst: Instance, classes: list[list[int]]) -> list[tuple[int, ...]]:
    """The automorphisms of the devices (:func:`.schedule.automorphisms`) when there is more than
    the identity and no class of interchangeable devices (whose rows break their own symmetry):
    the group whose orbits the first task is restricted by (module docstring); else empty."""
    if classes:
        return []
    group = automorphisms(inst.tables)
    return group if len(group) > 1 else []


def relabel_first(inst: Instance, assignment: list[int], group: list[tuple[int, ...]]) -> list[int]:
    """``assignment`` moved by the member of ``group`` that sends the first task's device to the
    least device of its orbit (the same makespan; it satisfies the first-task rule)."""
    if not group:
        return assignment
    first = assignment[inst.tables.topo[0]]
    g = min(group, key=lambda h: h[first])
    return [g[p] for p in assignment]


def _hint(inst: Instance, built: Built, hint: Solution) -> None:
    """The hint: the schedule's starts floored to units (feasible in the model, module
    docstring), its devices relabelled to satisfy the symmetry rows."""
    tab = inst.tables
    device = {name: p for p, name in enumerate(tab.device_names)}
    assignment = canonical(inst, [device[hint["assignment"][name]] for name in tab.task_names], built.classes)
    assignment = relabel_first(inst, assignment, built.group)
    starts = [_floor(hint["start_s"][name], built.unit, built.grid) for name in tab.task_names]
    for (v, p), var in built.x.items():
        built.model.AddHint(var, int(assignment[v] == p))
    for v in range(tab.n):
        built.model.AddHint(built.start[v], starts[v])
    built.model.AddHint(built.makespan, min(built.horizon, _floor(float(hint["objective"]), built.unit,
                                                                  built.grid)))


def extract(inst: Instance, built: Built, solver: Any) -> Solution:
    """The semi-active schedule (exact seconds) of the model's assignment and device orders."""
    tab = inst.tables
    assignment = [next(p for p in tab.compatible[v] if (v, p) in built.x and solver.Value(built.x[v, p]))
                  for v in range(tab.n)]
    start = [solver.Value(s) for s in built.start]
    # every duration is at least one unit, so starts order each device and every edge strictly
    order = sorted(range(tab.n), key=lambda v: (start[v], tab.position[v]))
    seconds, _ = semi_active(tab, assignment, order)
    return make_solution(inst, assignment, seconds)


def solve(inst: Instance, options: SolveOptions, watch: Watch | None = None,
          incumbent: Solution | None = None) -> ExactOutcome:
    """The constraint program from the warm start ``incumbent`` (a checked schedule: horizon and
    hint; without it the serial bound is the horizon), solved by CP-SAT on ``options.threads``
    workers within ``options.time_limit``. ``watch(primal, dual)`` hears every incumbent and
    bound (seconds); a Ctrl-C ends the search with its incumbent, status ``interrupted``."""
    t0 = time.perf_counter()
    tab = inst.tables
    upper = serial_bound(tab) if incumbent is None else float(incumbent["objective"])
    floor = critical_path_bound(tab)
    if incumbent is not None and relative_gap(upper, floor) <= options.gap:
        return cp_route.exact_outcome(incumbent, Termination.OPTIMAL, floor, time.perf_counter() - t0, 0.0)
    floor = energetic_bound(tab, upper)
    if incumbent is not None and relative_gap(upper, floor) <= options.gap:
        return cp_route.exact_outcome(incumbent, Termination.OPTIMAL, floor, time.perf_counter() - t0, 0.0)
    built = build(inst, upper, incumbent, lower=floor)
    t_build = time.perf_counter() - t0
    if built is None:  # cannot happen with a horizon some schedule reaches
        raise RuntimeError("the horizon leaves a task without a device")
    left = None if options.time_limit is None else max(0.1, options.time_limit - t_build)
    result = cp_route.solve(built.model, replace(options, time_limit=left), scale=built.unit, watch=watch,
                            parameters=PARAMETERS)
    solution = incumbent
    if result.objective is not None:
        found = extract(inst, built, result.solver)
        if solution is None or found["objective"] < float(solution["objective"]):
            solution = found
    if result.termination is Termination.INFEASIBLE:
        if incumbent is not None:
            raise RuntimeError("the constraint program is infeasible although a schedule fits its horizon")
        raise RuntimeError("the constraint program is infeasible within the serial bound")
    bound = None if result.bound is None else max(floor, result.bound)
    termination = result.termination
    if termination is Termination.OPTIMAL and (solution is None or bound is None or relative_gap(
            float(solution["objective"]), bound) > options.gap + RESOLUTION):
        termination = Termination.LIMIT  # the floors left more than the gap: not a proof
    return cp_route.exact_outcome(solution, termination, bound, t_build, result.solve, result.branches)
