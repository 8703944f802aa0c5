"""Model M: the constraint program for pipeline schedules with recompute and offload, on CP-SAT.

Where it applies (:func:`applies`): recompute or offload allowed (whole-item or per-layer
recompute), or two or more chunks per device (either placement); the makespan objective; every
duration (passes, the recompute time of one layer, both copies, the lag) an integer multiple of
one time unit ``q`` and every memory quantity (``a``, ``a_W``, ``a_c``, ``a_o``, one layer's share
of ``a - a_c``) an integer multiple of one memory unit ``g``. There it is the ``exact``
method; keep-only one-chunk instances stay with Model S (:mod:`.cpsat`), everything else with
Model P (:mod:`.milp`), which stays registered as ``milp`` on every instance.

The idea
--------
Model P orders every pair of events on a device with a binary and checks memory at every
allocation against sums over those binaries; its LP relaxation sees almost nothing of the cap.
Here the memory an item holds is written as a few *retention intervals* whose ends are the
pass and copy events (the modelling device of Moccasin, Bartan et al., ICML 2023, arXiv
2304.14463: a tensor's stay in memory is an interval with variable ends, each recomputation opens
another optional one, and a cumulative bounds their sum; its code, haoming-codes/moccasin, solves
that with CP-SAT too), and the cap as one cumulative per device over
them: CP-SAT's cumulative propagators (timetabling, energetic reasoning) and its clause learning
then reason on memory directly. Compute passes and copies are intervals in one NoOverlap per
resource (the device, its D2H engine, its H2D engine).

Formulation
-----------
Times are integers in units of ``q``, memory in units of ``g``; for item i = (k, j) on device d:

* starts ``S_F, S_B, S_W``, ``E_x = S_x + d_x``; ``rho_i`` in 0..L (layers recomputed; L = 1 is
  whole-item recompute, 0 where recompute is not allowed), ``o_i`` in {0, 1} (offloaded, 0 where
  offload is not allowed), ``rho_i + L o_i <= L``; ``d_B = T_B + rho_i T_R / L``; copy starts
  ``D_i, U_i``;
* (M1) data flow ``S_F(k,j) >= E_F(k-1,j) + c``, ``S_B(K-1,j) >= E_F(K-1,j)``,
  ``S_B(k,j) >= E_B(k+1,j) + c``, ``S_W(k,j) >= E_B(k,j)`` (c between devices only);
* (M2) the compute passes of device d in one NoOverlap (B with its variable size);
* (M3) offload, enforced when ``o_i``: ``D_i >= E_F``, ``U_i >= D_i + tau_d``,
  ``S_B >= U_i + tau_u``; the D2H intervals ``[D_i, D_i + tau_d)`` of d (present iff ``o_i``) in
  one NoOverlap, the H2D intervals likewise in another;
* (M4) memory, one cumulative per device with capacity ``floor(room_d / g)`` (``room_d`` the
  checker's cap with its tolerance) over the retention intervals of its items:

  ==========================  ===========================================  =============
  interval                    demand                                       present
  ==========================  ===========================================  =============
  hold ``[S_F, E_B)``         ``a - rho (a - a_c) / L - a_o o``            always
  B's own ``[S_B, E_B)``      ``rho (a - a_c) / L`` (re-materialised)      always
  weight ``[E_B, E_W)``       ``a_W``                                      split backward
  out ``[S_F, D_i + tau_d)``  ``a_o``                                      ``o_i``
  back ``[U_i, E_B)``         ``a_o``                                      ``o_i``
  ==========================  ===========================================  =============

  Summed, an item holds what F allocates (``a``, or ``a - rho (a - a_c) / L``) from F's start,
  ``a_o`` less between the end of its D2H and the start of its H2D (D2H ends before H2D starts),
  the re-materialised part from B's start, ``a_W`` from B's end to W's end (``a`` is released at
  B's end on a fused backward, where ``a_W = 0``), nothing after: exactly the checker's events
  (``model.memory_events``). The intervals are half-open, so one ending at t and one starting at
  t do not overlap: the checker's rule that releases come first at equal times. The cumulative
  bounds the level at every instant and the checker reads it after every group of simultaneous
  events; the level is constant between events, so the two conditions are the same. Every demand
  is non-negative: ``rho`` and ``o`` are exclusive, and the loader enforces ``a_c <= a`` and
  ``a_o <= a``. Memory in units of ``g`` is exact: every demand is a whole number of units, and
  a level of n units fits exactly when ``n <= floor(room_d / g)``.
* (M5) ``C >= E_x`` for every pass, minimise C.
* (M6) redundant: a second cumulative per device over the same intervals with what every mode
  holds at least, ``h = min(a, a_c, a - a_o)`` (over the modes allowed) on the hold, ``a - h``
  on B's interval, ``a_W`` on the weight interval. During B every mode holds all of ``a``
  (kept; re-materialised; reloaded), elsewhere in the hold at least h, so this level is at most
  the true one at every instant: implied by (M4), with constant demands that CP-SAT reasons on
  better than on (M4)'s mode-dependent ones.
* (M7) redundant: on a stage where ``a + h`` exceeds the cap, the hold intervals of its items in
  one NoOverlap; where ``a + a_W`` does, the intervals ``[S_B, E_W)`` in one NoOverlap. Proof:
  while B(k, i) runs, i holds ``a``, so no other item j of the stage can be inside its hold
  (it would add at least h); if B(k, i) precedes B(k, j), B(k, i) then ends by ``S_F(k, j)``
  and the two holds are disjoint. Likewise B(k, j) cannot meet ``[E_B, E_W)`` of i (``a_W``
  more), so it starts after ``E_W(k, i)``. Both are implied by (M4).
* (M8) redundant, the hold chain of :mod:`.bound`: on a stage where (M7)'s holds are disjoint,
  per item the interval ``[S_F - T_W full, E_B)`` with ``full`` the literal of
  ``a - rho (a - a_c) / L + a_W > cap`` (what F allocates, beside an earlier item's ``a_W``,
  exceeds the cap; an offloaded item allocates ``a``), all in one NoOverlap, and its length at
  least ``R + rho T_R / L + T_W full`` (``R`` the keep-mode round trip). Proof: if hold i ends
  before hold j starts and ``full_j``, F(k, j) cannot start while i holds ``a_W``, so it waits
  for W(k, i), which starts after B(k, i) ends: ``S_F(k, j) - T_W >= E_B(k, i)``. Implied by
  (M1)-(M4).
* (M9) redundant, the big pieces of :mod:`.bound`: on a device with a cap, with ``t`` the
  largest level that two items cannot both hold (``floor(cap / 2)``) and that no item can hold
  beside another's ``a_W`` (``cap - min a_W`` over its stages, where every stage has an
  ``a_W`` and the backward is split; then the W passes join), one NoOverlap over the W passes,
  every B (all of ``a``) where ``a > t``, the interval ``[S_F, S_B)`` (optional: present iff the
  hold's level exceeds ``t``) and, where ``a > t >= a - a_o``, an offloaded item's windows
  ``[S_F, D + tau_d)`` and ``[U, S_B)`` (present iff ``o``). Any two of them belong to different
  items or are disjoint by construction, and two items' levels in them add up to more than the
  cap: implied by (M4).
* (M10) redundant: (M4) once more with constant demands, one cumulative per device with the same
  capacity over: per item and per mode (keep, each recompute count ``r`` in 1..L, offload) the
  interval ``[S_F, S_B)``, present iff the item takes that mode, with the level the mode holds
  there (``a``; ``a - r (a - a_c) / L``; ``a - a_o``); an offloaded item's windows
  ``[S_F, D + tau_d)`` and ``[U, S_B)`` with ``a_o``; B's interval with all of ``a``; the weight
  interval with ``a_W``. Proof: exactly one of the mode intervals is present (``rho_i = r`` and
  ``o_i`` pick it), so at every instant the sum is what (M4) sums: before B the mode's level plus
  ``a_o`` in the copy windows, during B ``a`` (kept; ``a - r (a - a_c) / L`` plus the
  re-materialised ``r (a - a_c) / L``; ``a - a_o`` plus the reloaded ``a_o``), after B ``a_W``.
  Equal to (M4) at every instant, so it cuts off nothing; its demands are constants and its
  intervals optional (the mode decides which), where (M4)'s demands are variables: on the
  generator's offload p = 4 seed 2 it finds and proves the optimum 79 in 15-17 s, where the
  model without it stays at 81-87 / 79 after 60 s.
* Implied lengths, on the stages where (M8) or (M9) has an interval: ``E_B - S_F >= R + rho T_R
  / L`` (the data flow), and with ``o`` at least ``T_F + tau_d + tau_u + T_B`` ((M3)). Elsewhere
  they are left out: they change nothing there but CP-SAT's search path (on I1 cap 4 they took it
  from 13,603 to 31,070 branches).

Model rows and checker violations (``model.check``), each way:

==============================================  ==============================================
model                                           checker
==============================================  ==============================================
one start per pass (variables), in [0, H]       ``completeness``, ``format``, ``time``
rho in 0..L, o binary, rho + L o <= L           ``mode`` (not allowed, both, layers outside 0..L)
(M1) data flow with lags                        ``precedence``
(M2) NoOverlap of the device's passes           ``exclusivity`` (device compute lane)
(M3) D >= E_F, U >= D + tau_d, S_B >= U + tau_u ``offload``
(M3) NoOverlap per copy engine                  ``exclusivity`` (D2H engine, H2D engine)
(M4) cumulative of the retention intervals      ``memory`` (level above the cap at any event)
(every interval closes by E_W / E_B)            ``memory`` (device ends holding memory)
(M5) C >= every end                             ``objective`` recomputed from the starts
(M6)-(M10), the implied lengths                 (none: implied by (M1)-(M4), they cut off nothing)
==============================================  ==============================================

What the restrictions lose: nothing
-----------------------------------
*First lane.* ``S_F(0, j+1) >= E_F(0, j)``: micro-batches are identical, so renumbering them in
the order their F(0, j) start (every pass, mode and copy carried along) is a pure renaming with
the same times, memory and objective (Model P's (P2)(a), :func:`.order.first_lane_relabel`).
FIFO on the other lanes is imposed only on keep-only instances (chunked ones: Model P's (P2), the
lane-by-lane relabelling with the sorted matching, :func:`.order.fifo_is_lossless`); with recompute
or offload it loses (the shipped ``0-p3m3-offload-overtake``, optimum 22 against 23 under FIFO).

*No W order.* Model P's (P2'), W passes of a stage in the order of their B ends, is lossless
here too, but as one literal per pair it made the search slower on I1 (docs/notes/pipeline.md);
it is left out.

*Integer starts.* For fixed modes and a fixed weak order of all events (passes and copies), the
rows are difference constraints whose right-hand sides are sums of durations, copy times and the
lag, all multiples of ``q``; their least solution is on the grid, no later, and keeps every
memory level (the argument of :mod:`.grid`, copies and recompute included; the one behind the
objective grid in :mod:`coopt.problems.pipeline`).

*Horizon and windows.* ``C <= H``, the makespan of the warm start (:mod:`.warm`, handed in by
the runner as ``incumbent``, already in first-lane form, and CP-SAT's hint), else the serial
bound: a schedule that long exists. ``C >= LB``, the dual bound of :mod:`.bound`; each pass lies
in ``[r_x, H - q_x]`` with the release times and tails of :mod:`.bound`, computed on the
first-lane edges with keep-mode durations (a mode only lengthens a pass), so valid for every
schedule of the model, and ``C >= S_x + q_x``. Before the search from the warm start, the model
is first built with ``C <= LB`` (:func:`.cpsat.search` with ``probe``): a schedule found there is
optimal, and a proof that none exists raises ``LB`` by one grid unit (both on the grid, which
loses nothing).

None of these restrictions has a checker counterpart, by design.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from coopt.problem import ExactOutcome, Solution, SolveOptions, grid_of
from coopt.problems.pipeline.bound import releases, round_trip, tails
from coopt.problems.pipeline.cpsat import search
from coopt.problems.pipeline.grid import time_values
from coopt.problems.pipeline.model import (
    KEEP,
    OFFLOAD,
    Instance,
    Item,
    PassKey,
    Timed,
    parse,
    to_solution,
)
from coopt.problems.pipeline.order import fifo_is_lossless
from coopt.solvers.cpsat import Watch

#: Slack when a bound in seconds is turned into grid units (the values are sums of grid durations).
_EPS = 1e-6


def _memory_values(instance: Instance) -> list[float]:
    values = []
    for k in range(instance.virtual_stages):
        values += [instance.a(k), instance.a_w(k)]
        if instance.allow_recompute:
            values += [instance.a_c(k), (instance.a(k) - instance.a_c(k)) / instance.layers(k)]
        if instance.allow_offload:
            values.append(instance.a_o(k))
    return values


def units(instance: Instance) -> tuple[float, float] | None:
    """(q, g): the time unit and the memory unit of the module docstring, or None."""
    q = grid_of(time_values(instance))
    g = grid_of(_memory_values(instance), steps=10**6)
    return None if q is None or g is None else (q, g)


def applies(instance: Instance) -> bool:
    """Model M is exact for ``instance`` (module docstring): recompute, offload or chunks, the
    makespan, grids."""
    return (
        (instance.allow_recompute or instance.allow_offload or instance.chunks > 1)
        and instance.objective == "makespan"
        and units(instance) is not None
    )


def _split_memory(model: Any, instance: Instance, k: int, s_f: Any, s_b: Any, r: Any, o: Any,
                  H: int) -> list[tuple[Any, int]]:
    """(M10)'s intervals ``[S_F, S_B)`` of one item of virtual stage ``k``: one per memory mode, present
    iff the item takes that mode, with the constant level the mode holds there (in memory units;
    the copy windows of an offloaded item are added by the caller)."""
    q_mem = units(instance)
    assert q_mem is not None
    g = q_mem[1]
    a = _n(instance.a(k), g)
    L = instance.layers(k) if instance.allow_recompute else 0
    share = _n((instance.a(k) - instance.a_c(k)) / instance.layers(k), g) if instance.allow_recompute else 0
    parts: list[tuple[Any, int]] = []
    for count in range(L + 1):
        taken = model.NewBoolVar("")  # r == count, and not offloaded
        model.Add(r == count).OnlyEnforceIf(taken)
        if count == 0 and instance.allow_offload:
            model.AddImplication(taken, o.Not())
            model.Add(r != 0).OnlyEnforceIf([taken.Not(), o.Not()])
        else:
            model.Add(r != count).OnlyEnforceIf(taken.Not())
        if a - share * count:
            parts.append((model.NewOptionalIntervalVar(s_f, model.NewIntVar(0, H, ""), s_b, taken, ""),
                          a - share * count))
    if instance.allow_offload:
        rest = a - _n(instance.a_o(k), g)
        if rest:
            parts.append((model.NewOptionalIntervalVar(s_f, model.NewIntVar(0, H, ""), s_b, o, ""), rest))
    return parts


@dataclass
class Built:
    """The CP-SAT model with its variables, and the grids it lives on."""

    model: Any
    start: dict[PassKey, Any]
    rho: dict[Item, Any]
    off: dict[Item, Any]
    d2h: dict[Item, Any]
    h2d: dict[Item, Any]
    makespan: Any
    q: float
    horizon: int
    floor: int
    infeasible: bool = False


def _n(value: float, unit: float) -> int:
    """``value`` in whole units (it is a multiple of ``unit`` by the grid's construction)."""
    return round(value / unit)


@dataclass
class _Stage:
    """One virtual stage's data in grid units (``q`` for time, ``g`` for memory)."""

    dev: int
    L: int  # layers
    t_b: int
    t_r1: int  # one layer's recompute time (0 without recompute)
    a: int
    a_w: int
    share: int  # one layer's share of a - a_c (0 without recompute)
    a_o: int  # offloaded memory (0 without offload)
    h: int  # (M6) what every mode holds at least on the hold
    trip: int  # the keep-mode round trip R


@dataclass
class _Device:
    """What Model M collects per device before it adds the device's resources (in the order
    the rows are added, which fixes the model CP-SAT sees)."""

    compute: list[Any] = field(default_factory=list)  # (M2)
    d2h: list[Any] = field(default_factory=list)  # (M3)
    h2d: list[Any] = field(default_factory=list)
    memory: list[tuple[Any, Any]] = field(default_factory=list)  # (M4) (interval, demand)
    least: list[tuple[Any, int]] = field(default_factory=list)  # (M6)
    split: list[tuple[Any, int]] = field(default_factory=list)  # (M10)
    big: list[Any] = field(default_factory=list)  # (M9)
    ws: list[Any] = field(default_factory=list)  # (M9) the W passes among ``big``
    cap: int | None = None  # floor(room / g)
    thr: int | None = None  # (M9) the largest level that is not big
    with_w: bool = False  # (M9) the W passes join


class _Builder:
    """Builds Model M's variables and rows item by item (see :func:`build`)."""

    def __init__(self, instance: Instance, upper: float, floor: float, windows: bool, redundant: bool):
        from ortools.sat.python import cp_model

        grids = units(instance)
        assert grids is not None and applies(instance), "Model M applies to recompute/offload grid instances"
        self.instance, self.redundant = instance, redundant
        self.q, self.g = grids
        self.H = math.floor(upper / self.q + _EPS)
        self.LB = min(self.H, max(0, math.ceil(floor / self.q - _EPS)))
        self.model = cp_model.CpModel()
        self.release = releases(instance) if windows else {}
        self.tail = tails(instance) if windows else {}
        if any(math.isinf(v) for v in [*self.release.values(), *self.tail.values()]):
            self.release, self.tail = {}, {}
        self.start: dict[PassKey, Any] = {}
        self.end: dict[PassKey, Any] = {}
        self.rho: dict[Item, Any] = {}
        self.off: dict[Item, Any] = {}
        self.d2h: dict[Item, Any] = {}
        self.h2d: dict[Item, Any] = {}
        self.C: Any = None
        self.devices = {d: _Device() for d in range(instance.stages)}
        self.holds: dict[int, list[Any]] = {}  # (M7)
        self.tails_: dict[int, list[Any]] = {}  # (M7)
        self.chain: dict[int, list[Any]] = {}  # (M8)
        self.lone: dict[int, int] = {}  # a B's level beside another item of its stage between F and B
        self.after: dict[int, int] = {}  # a B's level beside another item of its stage between B and W

    def built(self, infeasible: bool = False) -> Built:
        return Built(self.model, self.start, self.rho, self.off, self.d2h, self.h2d, self.C, self.q, self.H,
                     self.LB, infeasible=infeasible)

    def starts(self) -> bool:
        """A start variable per pass within its window; False where a window is empty."""
        q, H, instance = self.q, self.H, self.instance
        for x in instance.passes():
            d = _n(instance.duration(x), q)
            lo = math.ceil(self.release[x] / q - _EPS) if x in self.release else 0
            hi = H - (math.ceil(self.tail[x] / q - _EPS) if x in self.tail else d)
            if lo > hi:
                return False
            self.start[x] = self.model.NewIntVar(lo, hi, f"S_{x[0]}_{x[1]}_{x[2]}")
        self.C = self.model.NewIntVar(self.LB, H, "C")
        return True

    def thresholds(self) -> None:
        """Each device's cap in memory units and (M9)'s threshold."""
        instance, g = self.instance, self.g
        for d, dev in self.devices.items():
            if instance.memory_cap_bytes is not None:
                dev.cap = math.floor(instance.cap_room(d) / g + 1e-9)
            a_ws = [_n(instance.a_w(k), g) for k in instance.stages_on(d)]
            dev.with_w = instance.split_backward and min(a_ws) > 0
            cu = dev.cap
            dev.thr = None if cu is None else max(cu // 2, cu - min(a_ws)) if dev.with_w else cu // 2

    def stage(self, k: int) -> _Stage:
        instance, q, g = self.instance, self.q, self.g
        L = instance.layers(k)
        a = _n(instance.a(k), g)
        share = _n((instance.a(k) - instance.a_c(k)) / L, g) if instance.allow_recompute else 0
        a_o = _n(instance.a_o(k), g) if instance.allow_offload else 0
        # (M6) what every mode holds at least: h on the hold, all of a during B, a_W after
        h = min([a] + ([a - L * share] if instance.allow_recompute else [])
                + ([a - a_o] if instance.allow_offload else []))
        return _Stage(dev=instance.device(k), L=L, t_b=_n(instance.t_b(k), q),
                      t_r1=_n(instance.t_r(k) / L, q) if instance.allow_recompute else 0, a=a,
                      a_w=_n(instance.a_w(k), g), share=share, a_o=a_o, h=h,
                      trip=_n(round_trip(instance, k), q))

    def item(self, k: int, j: int, st: _Stage) -> None:
        """Item (k, j): its modes, passes, copies and retention intervals, with the redundant
        rows (M6)-(M10) where ``redundant``."""
        instance, model, H, q = self.instance, self.model, self.H, self.q
        dev = self.devices[st.dev]
        start, end, C = self.start, self.end, self.C
        i = (k, j)
        f, b = ("F", k, j), ("B", k, j)
        r = model.NewIntVar(0, st.L if instance.allow_recompute else 0, f"rho_{k}_{j}")
        o = model.NewBoolVar(f"o_{k}_{j}") if instance.allow_offload else model.NewConstant(0)
        model.Add(r + st.L * o <= st.L)
        self.rho[i], self.off[i] = r, o
        for x in instance.kinds:
            key = (x, k, j)
            if x != "B":
                d = _n(instance.duration(key), q)
                end[key] = start[key] + d
                dev.compute.append(model.NewFixedSizeIntervalVar(start[key], d, ""))
                if x == "W" and dev.thr is not None and dev.with_w:
                    dev.big.append(dev.compute[-1])  # (M9) W runs while its item holds a_W
                    dev.ws.append(dev.compute[-1])
                model.Add(end[key] <= C)  # (M5)
        end[b] = model.NewIntVar(0, H, f"E_B_{k}_{j}")
        model.Add(end[b] <= C)  # (M5)
        size = model.NewIntVar(st.t_b, st.t_b + st.t_r1 * st.L, "")
        b_any = model.NewIntervalVar(start[b], size, end[b], "")
        hold_size = model.NewIntVar(0, H, "")
        hold = model.NewIntervalVar(start[f], hold_size, end[b], "")
        model.Add(size == st.t_b + st.t_r1 * r)
        tight = self.redundant and dev.cap is not None and (st.a + st.h > dev.cap or st.a > dev.thr)
        if tight:
            model.Add(hold_size >= st.trip + st.t_r1 * r)  # implied by (M1): the round trip, B's length
        dev.compute.append(b_any)
        level = model.NewIntVar(0, st.a, "")  # what the item holds from F's start to B's end
        model.Add(level == st.a - st.share * r - st.a_o * o)
        retained: list[tuple[Any, Any]] = [(b_any, st.share * r), (hold, level)]
        weight = None
        if instance.split_backward and st.a_w:
            weight = model.NewIntervalVar(end[b], model.NewIntVar(0, H, ""), end[("W", k, j)], "")
            retained.append((weight, st.a_w))
        out = None
        if instance.allow_offload:
            out = self._offload(k, j, st, o, hold_size, tight, retained)
        if self.redundant and dev.thr is not None and st.a > dev.thr:  # (M9)
            dev.big.append(b_any)
            pre = model.NewBoolVar("")
            model.Add(level > dev.thr).OnlyEnforceIf(pre)
            model.Add(level <= dev.thr).OnlyEnforceIf(pre.Not())
            gap = model.NewIntVar(0, H, "")
            dev.big.append(model.NewOptionalIntervalVar(start[f], gap, start[b], pre, ""))
        if self.redundant and dev.cap is not None and instance.split_backward and st.a + st.h > dev.cap:
            self._chain(k, j, st, r)  # (M8)
        dev.memory.extend(retained)
        dev.least.extend([(hold, st.h), (b_any, st.a - st.h)])
        if self.redundant and dev.cap is not None:  # (M10): (M4) with constant demands
            parts = _split_memory(model, instance, k, start[f], start[b], r, o, H)
            if out is not None and st.a_o:
                parts += [(out, st.a_o), (model.NewOptionalIntervalVar(
                    self.h2d[i], model.NewIntVar(0, H, ""), start[b], o, ""), st.a_o)]
            parts.append((b_any, st.a))
            if weight is not None:
                parts.append((weight, st.a_w))
            dev.split.extend(parts)
        self.holds.setdefault(k, []).append(hold)
        if weight is not None:
            self.tails_.setdefault(k, []).append(
                model.NewIntervalVar(start[b], model.NewIntVar(0, H, ""), end[("W", k, j)], ""))

    def _offload(self, k: int, j: int, st: _Stage, o: Any, hold_size: Any, tight: bool,
                 retained: list[tuple[Any, Any]]) -> Any:
        """(M3) for item (k, j): the copies, their engines and the two windows that hold ``a_o``;
        returns the D2H window ``[S_F, D + tau_d)``."""
        instance, model, H, q = self.instance, self.model, self.H, self.q
        dev = self.devices[st.dev]
        i, f, b = (k, j), ("F", k, j), ("B", k, j)
        tau_d, tau_u = _n(instance.tau_d(k), q), _n(instance.tau_u(k), q)
        self.d2h[i] = model.NewIntVar(0, H, f"D_{k}_{j}")
        self.h2d[i] = model.NewIntVar(0, H, f"U_{k}_{j}")
        model.Add(self.d2h[i] >= self.end[f]).OnlyEnforceIf(o)  # (M3)
        model.Add(self.h2d[i] >= self.d2h[i] + tau_d).OnlyEnforceIf(o)
        model.Add(self.start[b] >= self.h2d[i] + tau_u).OnlyEnforceIf(o)
        dev.d2h.append(model.NewOptionalFixedSizeIntervalVar(self.d2h[i], tau_d, o, ""))
        dev.h2d.append(model.NewOptionalFixedSizeIntervalVar(self.h2d[i], tau_u, o, ""))
        out_size = model.NewIntVar(0, H, "")
        out = model.NewOptionalIntervalVar(self.start[f], out_size, self.d2h[i] + tau_d, o, "")
        back = model.NewOptionalIntervalVar(self.h2d[i], model.NewIntVar(0, H, ""), self.end[b], o, "")
        retained += [(out, st.a_o), (back, st.a_o)]
        if tight:  # (M3)
            model.Add(hold_size >= _n(instance.t_f(k), q) + tau_d + tau_u + st.t_b).OnlyEnforceIf(o)
        if self.redundant and dev.thr is not None and st.a > dev.thr >= st.a - st.a_o:  # (M9) a while copying
            dev.big.append(out)
            dev.big.append(model.NewOptionalIntervalVar(
                self.h2d[i], model.NewIntVar(0, H, ""), self.start[b], o, ""))
        return out

    def _chain(self, k: int, j: int, st: _Stage, r: Any) -> None:
        """(M8) the hold-chain interval ``[S_F - T_W full, E_B)`` of item (k, j)."""
        instance, model, H = self.instance, self.model, self.H
        cap = self.devices[st.dev].cap
        assert cap is not None
        t_w = _n(instance.t_w(k), self.q)
        full = model.NewBoolVar("")
        model.Add(st.a - st.share * r + st.a_w > cap).OnlyEnforceIf(full)
        model.Add(st.a - st.share * r + st.a_w <= cap).OnlyEnforceIf(full.Not())
        v_start = model.NewIntVar(-t_w, H, "")
        model.Add(v_start == self.start[("F", k, j)] - t_w * full)
        v_size = model.NewIntVar(min(st.trip, H), H + t_w, "")
        model.Add(v_size >= st.trip + st.t_r1 * r + t_w * full)
        self.chain.setdefault(k, []).append(model.NewIntervalVar(v_start, v_size, self.end[("B", k, j)], ""))

    def order(self) -> None:
        """(M1) data flow with lags, the tails as ``C >= S_x + q_x``, and the first-lane order
        (every lane's where FIFO is lossless)."""
        instance, model, q, start, end = self.instance, self.model, self.q, self.start, self.end
        for x in instance.passes():  # (M1) data flow
            for y, c in instance.predecessors(x):
                model.Add(start[x] >= end[y] + _n(c, q))
            if x in self.tail:  # C >= S_x + q_x
                model.Add(start[x] + math.ceil(self.tail[x] / q - _EPS) <= self.C)
        fifo = fifo_is_lossless(instance)
        m = instance.microbatches
        for x in instance.passes():  # first lane; every lane where FIFO is lossless
            kind, k, j = x
            if j + 1 < m and (fifo or (kind, k) == ("F", 0)):
                model.Add(start[(kind, k, j + 1)] >= end[x])

    def resources(self) -> None:
        """(M2)-(M4) per device, and the redundant (M6)-(M10)."""
        instance, model = self.instance, self.model
        for d, dev in self.devices.items():
            model.AddNoOverlap(dev.compute)  # (M2)
            if instance.allow_offload:
                model.AddNoOverlap(dev.d2h)  # (M3)
                model.AddNoOverlap(dev.h2d)
            cap = dev.cap
            if cap is None:
                continue
            model.AddCumulative([x for x, _ in dev.memory], [y for _, y in dev.memory], cap)  # (M4)
            if not self.redundant:
                continue
            model.AddCumulative([x for x, _ in dev.least], [y for _, y in dev.least], cap)  # (M6)
            if dev.split:
                model.AddCumulative([x for x, _ in dev.split], [y for _, y in dev.split], cap)  # (M10)
            for k in instance.stages_on(d):
                if self.lone[k] > cap:
                    model.AddNoOverlap(self.holds[k])  # (M7)
                if self.after[k] > cap and k in self.tails_:
                    model.AddNoOverlap(self.tails_[k])  # (M7)
                if k in self.chain:
                    model.AddNoOverlap(self.chain[k])  # (M8)
            if len(dev.big) > len(dev.ws):  # (M9), where some window is big (W alone: (M2))
                model.AddNoOverlap(dev.big)


def build(instance: Instance, upper: float, floor: float = 0.0, hint: Solution | None = None,
          windows: bool = True, redundant: bool = True) -> Built:
    """Model M with ``C <= upper`` and ``C >= floor`` (seconds), the windows of :mod:`.bound` where
    ``windows``, the redundant (M6)-(M10) where ``redundant``, and ``hint`` (a first-lane
    schedule) as CP-SAT's hint."""
    b = _Builder(instance, upper, floor, windows, redundant)
    if not b.starts():
        return b.built(infeasible=True)
    b.thresholds()
    for k in range(instance.virtual_stages):
        st = b.stage(k)
        for j in range(instance.microbatches):
            b.item(k, j, st)
        b.lone[k] = st.a + st.h
        b.after[k] = st.a + st.a_w
    b.order()
    b.resources()
    b.model.Minimize(b.C)
    built = b.built()
    if hint is not None:
        _hint(instance, built, hint)
    return built


def _hint(instance: Instance, built: Built, hint: Solution) -> None:
    """A first-lane schedule as CP-SAT's hint (ignored where it does not parse)."""
    timed, bad = parse(instance, hint)
    if timed is None or bad:
        return
    model, q = built.model, built.q
    for x, var in built.start.items():
        model.AddHint(var, round(timed.start[x] / q))
    for i, var in built.rho.items():
        model.AddHint(var, instance.recomputed(i[0], timed.modes.get(i, KEEP)))
    for i, var in built.off.items():
        if instance.allow_offload:
            model.AddHint(var, int(timed.modes.get(i, KEEP) == OFFLOAD))
    for i in built.d2h:
        if i in timed.d2h:
            model.AddHint(built.d2h[i], round(timed.d2h[i] / q))
            model.AddHint(built.h2d[i], round(timed.h2d[i] / q))
    model.AddHint(built.makespan, round(timed.makespan(instance) / q))


def extract(instance: Instance, built: Built, solver: Any) -> Solution:
    """The schedule of the solver's values, in seconds, with modes and copies."""
    q = built.q
    modes: dict[Item, str] = {}
    d2h: dict[Item, float] = {}
    h2d: dict[Item, float] = {}
    for i, var in built.rho.items():
        r = solver.Value(var)
        if r:
            modes[i] = instance.recompute_mode(i[0], r)
        if instance.allow_offload and solver.Value(built.off[i]):
            modes[i] = OFFLOAD
            d2h[i] = solver.Value(built.d2h[i]) * q
            h2d[i] = solver.Value(built.h2d[i]) * q
    start = {x: solver.Value(v) * q for x, v in built.start.items()}
    return to_solution(instance, Timed(start=start, modes=modes, d2h=d2h, h2d=h2d))


def solve(instance: Instance, options: SolveOptions, watch: Watch | None = None,
          incumbent: Solution | None = None) -> ExactOutcome:
    """Model M from the warm start ``incumbent`` (a checked first-lane schedule: horizon and hint;
    without it the serial bound is the horizon) and the dual bound, solved by CP-SAT
    (:func:`.cpsat.search`, the search Model S runs, here with its probe at the bound); a Ctrl-C
    ends the search with its incumbent."""
    return search("Model M", instance, options, watch, incumbent, build,
                  lambda built, solver: extract(instance, built, solver), probe=True)
