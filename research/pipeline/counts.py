"""Model N: the count-based time-indexed MILP for keep-only pipeline schedules (issue 20).

Where it applies (:func:`applies`): no recompute, no offload, the makespan objective, and every
pass duration and the lag an integer multiple of one time unit ``q`` (the generator's integer
seconds; :func:`time_unit`), with a slot grid small enough to build. Elsewhere the registered
build is Model P (:mod:`.milp`).

Why counts suffice
------------------
*FIFO per lane.* A lane ``L = (X, k)`` is the set of the m passes of kind X on virtual stage k.
On keep-only instances every pass of a lane has the same duration and memory delta, and some
optimal schedule runs every lane in micro-batch order (FIFO; the relabelling proof is Model P's
(P2) in :mod:`.milp`). In a FIFO schedule micro-batch j is the j-th pass to start in every lane,
so a schedule is fixed by its per-lane start *counts*.

*Integer starts.* Some optimal FIFO schedule starts every pass at an integer multiple of ``q``.
Order all its events (pass starts and ends) by time, releases before allocations at equal times,
ties otherwise arbitrary, and keep only that weak order (``e_i <= e_{i+1}``) together with
precedence and device exclusivity in that order. Every such row is a difference constraint with a
right-hand side that is a sum of durations and lags, integer in units of ``q``; so is ``C >= E_x``.
Minimising C over this system is a network LP with an integral optimum no later than the
schedule's, and any time assignment that keeps the weak order keeps the memory profile's levels:
a group of events at one instant is a contiguous block of the old order, so the level after it
(the checker's level, releases first) is a prefix level of the old order, within the cap. FIFO
order survives (two starts of a lane never tie: durations are >= q).

Formulation
-----------
Slots ``t = 0..H-1`` of length q, ``H`` = the best heuristic makespan (or the serial bound) in
units of q: an optimal schedule with makespan <= H exists, so nothing is lost. Integer
``N[L, t]`` in 0..m: passes of lane L started at or before slot t (``N[L, t] = 0`` for t < 0,
``= m`` for t >= H). Durations ``d_L``, lags ``c`` in slots. Lane edges ``L1 -> L2`` with delay
``delta = d_L1 + c``: ``F(k-1) -> F(k)``, ``F(K-1) -> B(K-1)``, ``B(k+1) -> B(k)``, ``B(k) -> W(k)``.

* (N1) ``N[L, t] >= N[L, t-1]``, ``N[L, H-1] = m``: each lane's m passes start once;
* (N2) precedence: ``N[L2, t] <= N[L1, t - delta]``: the j-th pass of L2 starts only after the
  j-th pass of L1 has ended and the lag has passed;
* (N3) exclusivity, per device and slot: ``sum_L (N[L, t] - N[L, t - d_L]) <= 1`` (passes running
  in slot t);
* (N4) memory, per device and slot: ``sum_k a_k N[F_k, t] - (a_k - a_Wk) N[B_k, t - d_B]
  - a_Wk N[W_k, t - d_W] <= cap`` (fused backward: B releases a_k, no W lane): the level after
  all events at time t, releases first, exactly the checker's profile;
* (N5) makespan: binaries ``g[t]`` (slot t is before the makespan), ``g[t] >= g[t+1]``,
  ``G[t] = G[t+1] + g[t]`` (``G[t] = max(C - t, 0)``), ``G[t] >= sum_{L on d} d_L (m - N[L, t-1])``
  for every device d (the passes not started before t all run in [t, C)); minimise ``C = G[0]``.

Windows (restrictions with a proof): the j-th pass of lane L starts no earlier than its head
``r_Lj`` (longest path to it in the precedence graph with the FIFO edges, from :mod:`.bound`) and
no later than ``H - tail_Lj`` (longest path from its start to the end), so
``#{j: H - tail_Lj <= t} <= N[L, t] <= #{j: r_Lj <= t}``; where the two agree N is a constant,
not a variable. ``g[t] = 1`` below the dual bound of :mod:`.bound` (a valid lower bound on C).

Model rows and checker violations (``model.check``), each way:

==============================================  =============================================
model                                           checker
==============================================  =============================================
N1: the j-th pass of each lane starts once      ``completeness`` (each pass once), ``format``
slots t >= 0                                    ``time`` (start < 0)
N2 count precedence with lags                   ``precedence``
N3 one running pass per device and slot         ``exclusivity`` (device compute lane)
N4 level after each instant <= cap              ``memory`` (level above the cap at any event)
(every F is matched by its B and W)             ``memory`` (device ends holding memory)
N5 C = G[0] >= every end                        ``objective`` recomputed from the starts
==============================================  =============================================

FIFO, integer starts, the horizon and the windows only exclude schedules that the proofs above
show are not needed; the checker has no counterpart for them, by design.
"""

from __future__ import annotations

import math

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.pipeline.bound import releases, tails
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.model import Instance, PassKey, Timed, serial_bound, to_solution

#: Largest slot grid (lanes x slots) Model N is built for; beyond it the build is Model P's.
MAX_CELLS = 150_000

Lane = tuple[str, int]  # (kind, virtual stage)


def applies(instance: Instance, upper: float | None = None) -> bool:
    """True when Model N is exact for ``instance`` and small enough to build (see the module
    docstring); ``upper`` is the horizon in seconds (default: the serial bound)."""
    if instance.allow_recompute or instance.allow_offload or instance.objective != "makespan":
        return False
    q = time_unit(instance)
    if q is None:
        return False
    slots = (serial_bound(instance) if upper is None else upper) / q
    lanes = len(instance.kinds) * instance.virtual_stages
    return slots * lanes <= MAX_CELLS


def _slots(value: float, q: float) -> int:
    """``value`` in units of q (an integer by :func:`time_unit`)."""
    return int(round(value / q))


def lanes(instance: Instance) -> list[Lane]:
    return [(x, k) for x in instance.kinds for k in range(instance.virtual_stages)]


def lane_edges(instance: Instance) -> list[tuple[Lane, Lane, float]]:
    """The data-flow edges between lanes, each with the lag after the upstream pass's end (s)."""
    edges = []
    for x, k in lanes(instance):
        for (qx, qk, _), lag in instance.predecessors((x, k, 0)):
            edges.append(((qx, qk), (x, k), lag))
    return edges


def windows(instance: Instance, horizon: int, q: float) -> dict[Lane, tuple[list[int], list[int]]]:
    """Per lane, the earliest and latest start slot of its j-th pass (j = 0..m-1) within
    ``horizon`` slots: heads and tails along the precedence graph with the FIFO edges (the
    lossless edges of keep-only instances, where Model N applies)."""
    release, tail = releases(instance, memory=False), tails(instance, memory=False)
    out = {}
    for x, k in lanes(instance):
        keys = [(x, k, j) for j in range(instance.microbatches)]
        early = [_slots(release[key], q) for key in keys]
        late = [horizon - _slots(tail[key], q) for key in keys]
        out[(x, k)] = (early, late)
    return out


def horizon_slots(instance: Instance, makespan: float) -> int:
    """The slots of :func:`time_unit` that fit in ``makespan`` seconds (a known schedule's makespan,
    the horizon of :func:`build_counts`)."""
    return int(makespan / time_unit(instance) + 1e-9)


def build_counts(instance: Instance, horizon: int, floor: float, start: Solution | None = None
                 ) -> pyo.ConcreteModel:
    """Model N over ``horizon`` slots (the best known makespan in units of :func:`time_unit`),
    with ``g[t] = 1`` below ``floor`` (a lower bound on the makespan, s) and, when the schedule
    ``start`` has its starts on the slot grid, that schedule as the warm start."""
    q = time_unit(instance)
    assert q is not None
    m, H = instance.microbatches, int(horizon)
    K = instance.virtual_stages
    all_lanes = lanes(instance)
    d = {(x, k): _slots(instance.duration((x, k, 0)), q) for x, k in all_lanes}
    window = windows(instance, H, q)

    lo: dict[Lane, list[int]] = {}
    hi: dict[Lane, list[int]] = {}
    for lane in all_lanes:
        early, late = window[lane]
        lo[lane] = [sum(1 for s in late if s <= t) for t in range(H)]
        hi[lane] = [sum(1 for s in early if s <= t) for t in range(H)]
    cells = [(lane, t) for lane in all_lanes for t in range(H) if lo[lane][t] < hi[lane][t]]

    model = pyo.ConcreteModel(name="pipeline_counts")
    model.objective_unit = q
    model.counts_horizon = H
    model.fixed_counts = lo  # the count of a cell without a variable (lo = hi there)
    model.N = pyo.Var(cells, domain=pyo.NonNegativeIntegers,
                      bounds=lambda _, x, k, t: (lo[(x, k)][t], hi[(x, k)][t]))
    model.cons = pyo.ConstraintList()
    add = model.cons.add
    infeasible = any(lo[lane][t] > hi[lane][t] for lane in all_lanes for t in range(H))

    def N(lane: Lane, t: int):
        """Passes of ``lane`` started at or before slot t: a constant outside the windows."""
        if t < 0:
            return 0
        if t >= H:
            return m
        if lo[lane][t] >= hi[lane][t]:
            return lo[lane][t]
        return model.N[(*lane, t)]

    def row(expr) -> None:
        """Add a row; a row between constants is checked here instead (false: infeasible)."""
        nonlocal infeasible
        if isinstance(expr, bool) or expr.is_constant():
            infeasible |= not bool(pyo.value(expr))
            return
        add(expr)

    # (N1) monotone counts (N[L, H-1] = m is the window's lower bound at the last slot)
    for lane in all_lanes:
        for t in range(H):
            if (*lane, t) in model.N or (*lane, t - 1) in model.N:
                row(N(lane, t) >= N(lane, t - 1))
    # (N2) count precedence
    for up, down, lag in lane_edges(instance):
        delay = d[up] + _slots(lag, q)
        for t in range(H):
            row(N(down, t) <= N(up, t - delay))
    by_device: dict[int, list[Lane]] = {dev: [] for dev in range(instance.stages)}
    for lane in all_lanes:
        by_device[instance.device(lane[1])].append(lane)
    # (N3) exclusivity
    for on in by_device.values():
        for t in range(H):
            row(sum(N(lane, t) - N(lane, t - d[lane]) for lane in on) <= 1)
    # (N4) memory
    if instance.memory_cap_bytes is not None:
        g = max(instance.a(k) for k in range(K))
        for dev, on in by_device.items():
            cap = instance.cap(dev) / g
            for t in range(H):
                level = 0
                for x, k in on:
                    a, a_w = instance.a(k) / g, instance.a_w(k) / g
                    if x == "F":
                        level += a * N((x, k), t)
                    elif x == "B":
                        level -= (a - a_w) * N((x, k), t - d[(x, k)])
                    else:
                        level -= a_w * N((x, k), t - d[(x, k)])
                row(level <= cap)
    # (N5) makespan
    infeasible |= math.isinf(floor)  # not even one micro-batch fits a device
    least = H if math.isinf(floor) else min(H, max(0, math.ceil(floor / q - 1e-9)))
    model.g = pyo.Var(range(least, H), domain=pyo.Binary)  # 1 below the dual bound: constants
    model.G = pyo.Var(range(H + 1), bounds=(0, H))

    def before_end(t: int):
        return 1 if t < least else model.g[t]

    add(model.G[H] == 0)
    for t in range(H):
        add(model.G[t] == model.G[t + 1] + before_end(t))
        if least <= t < H - 1:
            add(model.g[t] >= model.g[t + 1])
        for on in by_device.values():
            work = sum(d[lane] * (m - N(lane, t - 1)) for lane in on)
            if not pyo.is_constant(work) or pyo.value(work) > 0:
                row(model.G[t] >= work)
    if infeasible:
        add(model.G[0] <= -1)
    model.objective = pyo.Objective(expr=model.G[0], sense=pyo.minimize)
    if start is not None:
        _warm_start(model, instance, start, q, H)
    return model


def _warm_start(model: pyo.ConcreteModel, instance: Instance, solution: Solution, q: float, H: int) -> None:
    """The heuristic schedule as HiGHS' first incumbent, when its starts lie on the slot grid."""
    starts: dict[Lane, list[int]] = {}
    for p in solution["passes"]:
        slot = p["start"] / q
        if abs(slot - round(slot)) > 1e-9 * max(1.0, slot):
            return
        starts.setdefault((p["kind"], p["stage"]), []).append(int(round(slot)))
    for (x, k, t), var in model.N.items():
        var.value = sum(1 for s in starts[(x, k)] if s <= t)
    makespan = _slots(solution["objective"], q)
    for t in model.g:
        model.g[t].value = 1.0 if t < makespan else 0.0
    for t in range(H + 1):
        model.G[t].value = float(max(makespan - t, 0))
    model.warm_start = True


def extract_counts(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    """The FIFO schedule of a solved Model N: the j-th pass of a lane is micro-batch j, starting
    at the first slot where the lane's count exceeds j."""
    q, H, m = model.objective_unit, model.counts_horizon, instance.microbatches
    start: dict[PassKey, float] = {}
    for x, k in lanes(instance):
        previous = 0
        for t in range(H):
            key = (x, k, t)
            now = int(round(pyo.value(model.N[key]))) if key in model.N else model.fixed_counts[(x, k)][t]
            for j in range(previous, min(now, m)):
                start[(x, k, j)] = t * q
            previous = max(previous, now)
    return to_solution(instance, Timed(start=start, modes={}, d2h={}, h2d={}))

