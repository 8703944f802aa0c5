"""Model O: a time-indexed constraint program for pipeline schedules, written as an oracle that
shares no constraint with the exact routes (Model S :mod:`.cpsat`, Model M :mod:`.cpmodes`,
Model P :mod:`.milp`) nor with Model T (:mod:`.timeindexed`).

It answers "is there a schedule whose makespan is at most ``H``?" (:func:`feasible`), or finds the
least such ``H`` (:func:`least_makespan`), on instances whose durations lie on a time unit ``q``
and whose memory quantities lie on a memory unit ``g`` (:func:`applies`; the objective must be
the makespan).

Encoding (order encoding on the grid)
-------------------------------------
Times are integers in units of ``q``; slots ``t = 0..H``. Every event ``e`` (a pass start, the
end of a backward pass, a copy start) gets the monotone literals ``[e <= t]``, ``t = 0..H``
(``[e <= t] => [e <= t + 1]``; false for ``t < 0``). The end of a pass of fixed duration ``d``
needs no literal of its own: ``[end <= t] = [start <= t - d]``. For item ``i = (k, j)``:

* modes: one Boolean per allowed mode (keep, recompute of ``r = 1..L`` of the stage's ``L``
  layers, offload), exactly one true;
* the backward's end ``E_B`` has its own literals, tied to its start for the chosen mode:
  ``y_mu => ([E_B <= t] <=> [S_B <= t - d_mu])``;
* data flow (the checker's ``predecessors``, lag ``c`` between devices only) as clauses
  ``[S_x <= t] => [E_pred <= t - c]``;
* offload: the copy starts ``D`` and ``U`` are optional events, ``[D <= H - tau_d] = o_i`` and
  ``[U <= H - tau_u] = o_i`` (present iff offloaded, then finished by ``H``), with
  ``[D <= t] => [E_F <= t]``, ``[U <= t] => [D <= t - tau_d]``,
  ``o_i and [S_B <= t] => [U <= t - tau_u]``;
* exclusivity: in every slot ``[t, t + 1)`` a pass runs iff ``[S <= t] - [E <= t] = 1``; at most
  one per device, and one copy per engine (D2H, H2D) of the device;
* memory: the level of device ``dev`` after every event at instant ``t`` (releases first, the
  checker's tie rule; every event at ``t`` is counted) is

  ``sum_i a [S_F <= t] - s_mu p_i,mu,t - (a - a_W) [E_B <= t] - a_W [E_W <= t]
  - a_o [E_D <= t] + a_o [U <= t]``

  with ``s_mu = r / L (a - a_c)`` what mode mu saves between F's start and B's start (the checker
  lets F allocate ``a - s`` and B re-materialise ``s`` at its start) and ``p_i,mu,t <= y_mu``,
  ``p <= [S_F <= t]``, ``p <= not [S_B <= t]``. The level, in units of ``g``, is at most
  ``floor(room / g)`` (``room`` the checker's cap with its tolerance). ``p`` may only lower the
  level where the item really is in that gap in that mode, so the projection on the schedule is
  exactly the checker's memory rule; the level only rises at allocations, which happen at grid
  instants, so bounding it at ``t = 0..H`` bounds it everywhere;
* symmetry: ``[S_B(K-1, j) <= t] => [E_B(K-1, j-1) <= t]``, the last virtual stage runs its
  backward passes in micro-batch order (see below);
* makespan: every pass ends by ``H`` (``[E <= H]`` true). :func:`least_makespan` adds
  ``done_t => [E <= t]`` for every end and maximises ``sum done_t``: the optimum is the least
  ``t`` with ``done_t``.

Checker rows and model rows each way: completeness (exactly one mode; every mandatory event has
``[e <= H]``), modes (one Boolean each, offload and recompute exclusive), precedence and offload
(the clauses above), exclusivity (the slot sums), memory (the level rows). A solution is read
back into the checker's format and judged by :func:`.model.check`.

Why the grid loses nothing
--------------------------
Take any schedule of makespan ``C``. Order all its events (pass and copy starts and ends) by time;
keep, for every pair of events at different times, the order ``e <= e'`` (a weak order that
allows ties), every duration as an equality, the data-flow, offload and lane orders. Every row is
a difference constraint ``x' - x >= w`` with ``w`` a sum of durations and lags, an integer number
of units ``q``, so the polyhedron has integral vertices (the constraint matrix is a network
matrix) and ``min C`` over it is reached on the grid at a value no later than the schedule's.
Every assignment in it keeps the memory feasible: events that now coincide were a contiguous
block of the old order, whose releases are applied first by the checker's rule, so the level
after the block is at most the old level after that block; lanes keep their order and durations,
so they do not overlap. Hence: no grid schedule of makespan ``<= H`` means no schedule at all of
makespan ``<= H q``, and the optimum lies on the grid.

Why the symmetry row loses nothing
----------------------------------
Every quantity of an item depends on its virtual stage alone, never on its micro-batch. Renumber
the micro-batches of any schedule in the order their backward passes on the last virtual stage
start (they share one device and last at least one slot, so the starts differ and each ends before
the next starts), carrying every pass, mode and copy along: each micro-batch's chain, every lane
and every device's memory level are the same sets of events as before, so the checker accepts the
renumbered schedule, with the same makespan, and it satisfies the row.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from coopt.problem import Solution
from coopt.problems.pipeline.model import (
    KEEP,
    OFFLOAD,
    PARTIAL,
    RECOMPUTE,
    Instance,
    Timed,
    to_solution,
)

Item = tuple[int, int]


def _unit(values: list[float], largest_count: int) -> Fraction | None:
    """The largest rational u such that every value is a whole multiple of u (each value read as a
    fraction with denominator below 10^6, within 1e-12 relative), or None (no such unit, or a value
    of more than ``largest_count`` units)."""
    fractions = []
    for value in values:
        fraction = Fraction(value).limit_denominator(10**6)
        if abs(float(fraction) - value) > 1e-12 * max(1.0, abs(value)):
            return None
        if fraction:
            fractions.append(fraction)
    if not fractions:
        return Fraction(1)
    numerator = math.gcd(*(f.numerator for f in fractions))
    denominator = math.lcm(*(f.denominator for f in fractions))
    unit = Fraction(numerator, denominator)
    return unit if max(fractions) / unit <= largest_count else None


def _modes(instance: Instance) -> list[str]:
    """The modes an item may take: keep, recompute of r = 1..L layers (L of its own stage), offload."""
    out = [KEEP]
    if instance.allow_recompute:
        layers = max(instance.layers(k) for k in range(instance.virtual_stages))
        out += [f"{PARTIAL}{r}" for r in range(1, layers)] + [RECOMPUTE]
    if instance.allow_offload:
        out.append(OFFLOAD)
    return out


def _stage_modes(instance: Instance, k: int) -> list[str]:
    """The modes of an item of virtual stage k, each spelled once (r < L of k's own layers)."""
    return [mu for mu in _modes(instance)
            if not (mu.startswith(PARTIAL) and instance.recomputed(k, mu) >= instance.layers(k))]


def time_unit(instance: Instance) -> Fraction | None:
    """The time unit q of Model O: every pass duration in every mode, copy and the lag is a whole
    number of q (at most 10^5 of them), or None."""
    values = [instance.lag_s]
    for k in range(instance.virtual_stages):
        for mu in _stage_modes(instance, k):
            values += [instance.duration((x, k, 0), mu) for x in instance.kinds]
        if instance.allow_offload:
            values += [instance.tau_d(k), instance.tau_u(k)]
    return _unit(values, 10**5)


def memory_unit(instance: Instance) -> Fraction | None:
    """The memory unit g: every amount an event allocates or releases is a whole number of g (at
    most 10^9 of them), or None. 1 when there is no cap (memory is not modelled)."""
    if instance.memory_cap_bytes is None:
        return Fraction(1)
    values = []
    for k in range(instance.virtual_stages):
        values += [instance.a(k), instance.a_w(k)]
        for mu in _stage_modes(instance, k):
            values += list(instance.resident(k, mu))
        if instance.allow_offload:
            values.append(instance.a_o(k))
    return _unit(values, 10**9)


def applies(instance: Instance) -> bool:
    """Model O covers the instance: makespan objective, a time unit and a memory unit."""
    return (instance.objective == "makespan" and time_unit(instance) is not None
            and memory_unit(instance) is not None)


@dataclass
class _Model:
    """Model O under construction: the CP-SAT model, the grid and the literals of every event."""

    instance: Instance
    cp: cp_model.CpModel
    H: int
    q: Fraction
    g: Fraction
    false: Any
    order: dict[tuple[str, Item], list[Any]]  # event -> [e <= t] for t = 0..H
    mode: dict[tuple[Item, str], Any]
    slots: dict[tuple[str, int], int]  # (kind, k) -> duration in slots, kind in F, W, D, U
    b_slots: dict[tuple[int, str], int]  # (k, mode) -> B's duration in slots

    def le(self, event: tuple[str, Item], t: int) -> Any:
        """The literal ``[event <= t]`` (false before 0, the last one past H)."""
        if t < 0:
            return self.false
        return self.order[event][min(t, self.H)]

    def end(self, kind: str, i: Item, t: int) -> Any:
        """The literal ``[end of pass kind of i <= t]``."""
        if kind == "B":
            return self.le(("EB", i), t)
        return self.le((kind, i), t - self.slots[(kind, i[0])])


def _slots_of(value: float, unit: Fraction) -> int:
    return round(Fraction(value).limit_denominator(10**6) / unit)


def build(instance: Instance, horizon: int, symmetry: bool = True) -> _Model:
    """Model O over slots 0..horizon (units of :func:`time_unit`): every pass ends by ``horizon``;
    with ``symmetry``, micro-batches start their last-stage backward in number order (see the
    module docstring). Raises ValueError where it does not apply."""
    if not applies(instance):
        raise ValueError("Model O needs the makespan objective and times and memory on a grid")
    q, g = time_unit(instance), memory_unit(instance)
    H = int(horizon)
    cp = cp_model.CpModel()
    false = cp.new_bool_var("false")
    cp.add(false == 0)
    K, m = instance.virtual_stages, instance.microbatches
    items = [(k, j) for k in range(K) for j in range(m)]
    slots: dict[tuple[str, int], int] = {}
    b_slots: dict[tuple[int, str], int] = {}
    for k in range(K):
        slots[("F", k)] = _slots_of(instance.t_f(k), q)
        slots[("W", k)] = _slots_of(instance.t_w(k), q)
        if instance.allow_offload:
            slots[("D", k)] = _slots_of(instance.tau_d(k), q)
            slots[("U", k)] = _slots_of(instance.tau_u(k), q)
        for mu in _stage_modes(instance, k):
            b_slots[(k, mu)] = _slots_of(instance.duration(("B", k, 0), mu), q)
    x = _Model(instance, cp, H, q, g, false, {}, {}, slots, b_slots)
    events = ["F", "B", "EB"] + (["W"] if instance.split_backward else []) + (
        ["D", "U"] if instance.allow_offload else [])
    for i in items:
        for e in events:
            lits = [cp.new_bool_var(f"{e}{i}<={t}") for t in range(H + 1)]
            for a, b in zip(lits, lits[1:], strict=False):
                cp.add_implication(a, b)
            x.order[(e, i)] = lits
        for mu in _stage_modes(instance, i[0]):
            x.mode[(i, mu)] = cp.new_bool_var(f"mode{i}{mu}")
    for i in items:
        _item_rows(x, i)
    if symmetry:
        last = K - 1
        for j in range(1, m):
            for t in range(H + 1):
                cp.add_implication(x.le(("B", (last, j)), t), x.le(("EB", (last, j - 1)), t))
    for dev in range(instance.stages):
        on = [(k, j) for k in instance.stages_on(dev) for j in range(m)]
        _lane_rows(x, on)
        if instance.memory_cap_bytes is not None:
            _memory_rows(x, on, dev)
    return x


def _item_rows(x: _Model, i: Item) -> None:
    """One mode; B's end from its start and mode; every pass ends by H; data flow; copies."""
    instance, cp, H = x.instance, x.cp, x.H
    k, j = i
    modes = _stage_modes(instance, k)
    cp.add_exactly_one(x.mode[(i, mu)] for mu in modes)
    for mu in modes:
        y, d = x.mode[(i, mu)], x.b_slots[(k, mu)]
        for t in range(H + 1):
            start = x.le(("B", i), t - d)
            cp.add_bool_or([~y, ~x.le(("EB", i), t), start])
            cp.add_bool_or([~y, x.le(("EB", i), t), ~start])
    for kind in instance.kinds:
        cp.add(x.end(kind, i, H) == 1)
        for (pkind, pk, pj), lag in instance.predecessors((kind, k, j)):
            c = _slots_of(lag, x.q)
            for t in range(H + 1):
                cp.add_implication(x.le((kind, i), t), x.end(pkind, (pk, pj), t - c))
    if instance.allow_offload:
        off = x.mode[(i, OFFLOAD)]
        tau_d, tau_u = x.slots[("D", k)], x.slots[("U", k)]
        cp.add(x.le(("D", i), H - tau_d) == off)
        cp.add(x.le(("U", i), H - tau_u) == off)
        cp.add(x.le(("D", i), H) == off)
        cp.add(x.le(("U", i), H) == off)
        for t in range(H + 1):
            cp.add_implication(x.le(("D", i), t), x.end("F", i, t))
            cp.add_implication(x.le(("U", i), t), x.le(("D", i), t - tau_d))
            cp.add_bool_or([~off, ~x.le(("B", i), t), x.le(("U", i), t - tau_u)])


def _lane_rows(x: _Model, on: list[Item]) -> None:
    """In every slot at most one pass on the device, one copy on each engine."""
    kinds = x.instance.kinds
    for t in range(x.H):
        x.cp.add(sum(x.le((kind, i), t) - x.end(kind, i, t) for i in on for kind in kinds) <= 1)
        if x.instance.allow_offload:
            for e in ("D", "U"):
                x.cp.add(sum(x.le((e, i), t) - x.le((e, i), t - x.slots[(e, i[0])]) for i in on) <= 1)


def _memory_rows(x: _Model, on: list[Item], dev: int) -> None:
    """The level after the events at every instant t, in units g, within the cap."""
    instance, cp = x.instance, x.cp

    def units(value: float) -> int:
        return round(Fraction(value).limit_denominator(10**6) / x.g)

    room = math.floor(Fraction(instance.cap_room(dev)) / x.g)
    for t in range(x.H + 1):
        level = []
        for i in on:
            k = i[0]
            a, a_w = instance.a(k), instance.a_w(k)
            level.append(units(a) * x.le(("F", i), t))
            level.append(-units(a - a_w) * x.le(("EB", i), t))
            if instance.split_backward and units(a_w):
                level.append(-units(a_w) * x.end("W", i, t))
            if instance.allow_offload:
                a_o = units(instance.a_o(k))
                level.append(-a_o * x.le(("D", i), t - x.slots[("D", k)]))
                level.append(a_o * x.le(("U", i), t))
            for mu in _stage_modes(instance, k):
                saved = units(instance.resident(k, mu)[1])
                if not saved:
                    continue
                p = cp.new_bool_var(f"gap{i}{mu}@{t}")
                cp.add_implication(p, x.mode[(i, mu)])
                cp.add_implication(p, x.le(("F", i), t))
                cp.add_implication(p, ~x.le(("B", i), t))
                level.append(-saved * p)
        cp.add(sum(level) <= room)


def _first(solver: cp_model.CpSolver, lits: list[Any]) -> int | None:
    return next((t for t, lit in enumerate(lits) if solver.boolean_value(lit)), None)


def extract(x: _Model, solver: cp_model.CpSolver) -> Solution:
    """The schedule of a solved Model O in the checker's format (seconds)."""
    instance = x.instance
    q = float(x.q)
    start, modes, d2h, h2d = {}, {}, {}, {}
    for (e, i), lits in x.order.items():
        t = _first(solver, lits)
        if e in instance.kinds:
            start[(e, *i)] = t * q
        elif e == "D" and t is not None:
            d2h[i] = t * q
        elif e == "U" and t is not None:
            h2d[i] = t * q
    for (i, mu), y in x.mode.items():
        if mu != KEEP and solver.boolean_value(y):
            modes[i] = mu
    return to_solution(instance, Timed(start=start, modes=modes, d2h=d2h, h2d=h2d))


@dataclass
class Answer:
    """One run of Model O: ``status`` (``feasible`` / ``infeasible`` for :func:`feasible`,
    ``optimal`` / ``infeasible`` for :func:`least_makespan`, ``unknown`` at the time limit), the
    schedule found (checker format) and its makespan (s), the CP-SAT branches and the seconds."""

    status: str
    solution: Solution | None
    makespan: float | None
    branches: int
    seconds: float


def _solve(x: _Model, time_limit: float | None, workers: int) -> tuple[int, cp_model.CpSolver, float]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 0
    # No LP relaxation: on these pure Boolean models the search proves infeasibility several times
    # faster without it (I1 at cap 6 GB, horizon 28: 29 s against more than 300 s).
    solver.parameters.linearization_level = 0
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    started = time.perf_counter()
    status = solver.solve(x.cp)
    return status, solver, time.perf_counter() - started


def slots_for(instance: Instance, makespan_s: float) -> int:
    """The most whole slots of :func:`time_unit` that fit in ``makespan_s`` seconds."""
    seconds = Fraction(makespan_s).limit_denominator(10**6)
    return math.floor(seconds / time_unit(instance) + Fraction(1, 10**9))


def feasible(instance: Instance, makespan_s: float, time_limit: float | None = None,
             workers: int = 1, symmetry: bool = True) -> Answer:
    """Is there a schedule with makespan at most ``makespan_s``? (By the grid argument of the
    module docstring, ``infeasible`` proves that none exists, off the grid too.)"""
    x = build(instance, slots_for(instance, makespan_s), symmetry)
    status, solver, seconds = _solve(x, time_limit, workers)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        solution = extract(x, solver)
        return Answer("feasible", solution, solution["objective"], solver.num_branches, seconds)
    verdict = "infeasible" if status == cp_model.INFEASIBLE else "unknown"
    return Answer(verdict, None, None, solver.num_branches, seconds)


def least_makespan(instance: Instance, horizon_s: float, time_limit: float | None = None,
                   workers: int = 1, symmetry: bool = True) -> Answer:
    """The least makespan among schedules within ``horizon_s`` seconds (status ``optimal``), or
    ``infeasible`` when there is none within it."""
    x = build(instance, slots_for(instance, horizon_s), symmetry)
    done = [x.cp.new_bool_var(f"done@{t}") for t in range(x.H + 1)]
    x.cp.add(done[x.H] == 1)
    items = sorted({i for _, i in x.order})
    for t in range(x.H + 1):
        if t < x.H:
            x.cp.add_implication(done[t], done[t + 1])
        for i in items:
            for kind in instance.kinds:
                x.cp.add_implication(done[t], x.end(kind, i, t))
    x.cp.maximize(sum(done))
    status, solver, seconds = _solve(x, time_limit, workers)
    if status == cp_model.OPTIMAL:
        solution = extract(x, solver)
        return Answer("optimal", solution, solution["objective"], solver.num_branches, seconds)
    verdict = "infeasible" if status == cp_model.INFEASIBLE else "unknown"
    return Answer(verdict, None, None, solver.num_branches, seconds)
