"""Model P: the precedence / pairwise-order MILP for pipeline schedules under memory caps.

Structure of Zero Bubble's ILP (Qi et al., ICLR 2024; sail-sg/zero-bubble-pipeline-parallelism
``auto_schedule.py``), extended to a true makespan, virtual stages, recompute and offload modes
(research-pipeline-memory.md b.1, with its offload gap closed below).

``build(instance, incumbent=None)`` never runs a heuristic: the warm start (:mod:`.warm`) is the
runner's, and only sets the horizon, HiGHS' first incumbent and the cuts (P9)-(P10) that read it.
The order edges of (P1)-(P2) and the relabellings that put a schedule into their form are in
:mod:`.order`.

Symbols (times in units ``u`` = the longest keep-mode pass, memory in units ``g`` = the largest
per-stage activation; x ranges over compute passes F/B/W(k, j), i = (k, j) over items):

* ``S_x >= 0`` start, ``E_x = S_x + d_x`` with ``d_B = T_B + T_R r_i``; ``C`` makespan;
* ``r_i, o_i`` in {0,1}: recompute / offload item i, ``r_i + o_i <= 1``; ``D_i, U_i`` D2H / H2D
  starts. With per-layer recompute (``recompute_layers`` L > 1 on some device) ``r_i = rho_i / L``
  is the recomputed fraction, ``rho_i`` integer in ``0..L`` (the layers recomputed): every duration
  and memory term is linear in r (``d_B = T_B + r T_R``, F allocates ``a - r (a - a_c)``, B
  re-materialises ``r (a - a_c)``), so the rows below are unchanged, and ``r_i + o_i <= 1`` still
  forbids recomputing any layer of an offloaded item;
* ``P_xy`` in {0,1} for every same-device pair whose order is not implied (P = 1: x first).

Constraints:

* (P1) precedence ``S_F(k,j) >= E_F(k-1,j) + c``, ``S_B(K-1,j) >= E_F(K-1,j)``,
  ``S_B(k,j) >= E_B(k+1,j) + c``, ``S_W(k,j) >= E_B(k,j)``; ``C >= E_x`` for sinks;
* (P2) symmetry breaking, only where a proof says it loses nothing:

  - *keep-only instances* (no recompute, no offload): FIFO per (kind, k),
    ``S_X(k,j) >= E_X(k,j-1)``. Proof: all passes of one lane (kind, k) have the same duration
    and the same memory delta, whatever j. Take any feasible schedule and relabel, lane by lane,
    the i-th pass to start as micro-batch i. Every precedence edge joins two lanes with a
    constant lag (``F(k-1) -> F(k)``, ``F(K-1) -> B(K-1)``, ``B(k+1) -> B(k)``, ``B(k) -> W(k)``);
    if some bijection matches each pass of the upstream lane to a later-starting one downstream
    (start >= end + lag), the sorted matching does too (exchange argument), so the relabelled
    schedule meets every precedence. The start times, hence exclusivity, the memory profile and
    the objective, are unchanged.
  - *with recompute or offload*: items of one lane may differ in mode (a recomputing B is longer,
    an offloaded item releases memory early), the relabelling carries modes along and the
    matching argument fails. The shipped ``0-p3m3-offload-overtake`` has optimum 22
    against a FIFO optimum of 23. Only two restrictions are kept: (a) ``F(0, j-1)`` before
    ``F(0, j)``: micro-batches are identical, so a global relabelling (all stages and modes at
    once) orders the first lane; (b) (P2') the W passes of a stage run in the order of its B passes
    (``P_{W(k,j),W(k,j')} = P_{B(k,j),B(k,j')}``, no binary of its own): W's duration and release
    do not depend on j or on the mode, W has no successor, and the sorted matching of the W lane to
    the B lane's ends keeps ``S_W >= E_B``. Copy lanes are not FIFO either (every pair of copies
    of a device gets an order binary). ``build(..., fifo=True)`` is the restricted model, never
    ``exact``;
* (P3) exclusivity ``S_y >= E_x - M(1 - P_xy)``, ``S_x >= E_y - M P_xy``, M = the warm start's
  makespan (:mod:`.warm`, handed in by the runner as ``incumbent``; without one, the serial
  bound); order implied by (P1)+(P2) (transitive closure) needs no binary;
* (P4) memory at every allocation event e (F starts; B starts when recompute is allowed; H2D starts
  when offload is allowed): sum of the deltas of events before e plus e's own allocation <= cap.
  Between compute passes "before" is the order indicator; the products with r are linearised
  one-sidedly (z <= r, z <= P where the term lowers memory, z >= r + P - 1 where it raises it).
  This stays exact for a fractional ``r`` in [0, 1] (per-layer recompute) because P is binary
  (McCormick with one binary factor, ``0 <= z <= 1``): with P = 0 the lowering side gives
  ``z <= 0`` and the raising side ``z >= max(0, r - 1) = 0``; with P = 1, ``z <= r`` and
  ``z >= r``. In each case the bound the row can use is exactly ``r P``, and any other z only
  makes the level larger (conservative), so the rows admit exactly the true levels;
* (P5) offload: ``D_i >= E_F(i)``, ``U_i >= D_i + tau_d o_i``, ``S_B(i) >= U_i + tau_u o_i``, FIFO
  disjunctive copies (binaries ``Q``) for every pair of items of a device (FIFO per chunk only
  under ``fifo=True``). Copy events against an
  allocation event e use binaries ``delta`` (D2H ended by e, conservative: delta = 1 forces it) and
  ``nu`` (H2D started before e, forcing: nu = 0 forces U_i >= S_e); compute passes against an H2D
  start use ``sigma`` (started before, forcing) and ``epsilon`` (ended before, conservative); two
  allocations at the same instant always count each other (sigma + nu >= o). These H2D-start checks
  are what the research prototype lacked;
* (P7) load cut per device: ``C >= head_d + sum of d_x on d`` (head = earliest first start);
* (P8) windows: ``r_x <= S_x <= M - q_x`` with the release times ``r`` and tails ``q`` (from the
  start, to the makespan) of :mod:`.bound`. Both are computed on the lossless edges of (P2)
  that the model contains (they are dropped under ``build(..., fifo=False)`` on a keep-only
  instance, and for the per-stage span, whose horizon of twice the serial bound leaves them
  loose); on keep-only
  instances with one chunk they also read each stage's cap, which holds for every FIFO
  schedule, the only kind the model admits there. Every schedule of the
  model with ``C <= M`` meets ``S_x + q_x <= C`` (its chain rows, and the caps where they are
  read), so nothing within the horizon is lost. The windows give each pair its own big-M,
  ``latest_end(x) - r_y`` with ``latest_end(x) = M - (q_x - d_x) >= E_x``, and a pair with
  ``latest_end(x) <= r_y`` is ordered (x first) in every such schedule: it gets no binary, and
  its order is a constant in the memory rows;
* (P9) the objective is at least the dual bound of :mod:`.bound` (critical path, device load with
  head and tail, memory fill, release times): a valid cut that closes the root gap where a
  heuristic attains it. Where that bound is below the warm start and the window relaxation of
  :mod:`.window` applies (keep-only, one chunk, a cap, makespan), the cut also takes the dual
  bounds of the one-stage windows R(s, s) on the two stages with the largest memory fill (2 s
  of HiGHS each at most): every one is at most the optimum (proof in :mod:`.window`); size 8
  seed 1 of the generator goes from 123 to 132;
* (P10) where the dual bound of (P9) already equals the warm start's makespan (keep-only
  instances, makespan objective), the warm start is optimal: its starts, order binaries and C
  are fixed (after checking that it meets precedence, exclusivity and the caps without the
  checker's tolerance, so that every row holds at its values), and HiGHS only confirms it.

Model rows and checker violations (``model.check``), each way:

==============================================  =============================================
model                                           checker
==============================================  =============================================
every pass has a start S_x (variables)          ``completeness`` (each pass once), ``format``
S_x >= 0                                        ``time`` (start < 0)
(P1) precedence with lags                       ``precedence``
(P3) one compute pass per device at a time      ``exclusivity`` (device compute lane)
r_i, o_i binary, r_i + o_i <= 1                 ``mode`` (mode not allowed, or both)
rho_i integer in 0..L (per-layer recompute)     ``mode`` (layers outside 0..L, not an integer,
                                                recomputed and offloaded, not allowed)
(P5) D_i >= E_F, U_i >= D_i + tau_d, S_B >= U   ``offload`` (D2H before F ends, H2D before D2H
     + tau_u                                    ends, B before H2D ends)
(P5) disjunctive copies per device and engine   ``exclusivity`` (D2H engine, H2D engine)
(P4) level <= cap at every allocation event     ``memory`` (level above the cap at any event)
(the level returns to 0: every F is matched)    ``memory`` (device ends holding memory)
objective C / Z                                 ``objective`` recomputed from the starts
==============================================  =============================================

(P2), (P2'), (P7)-(P10) and the big-M bounds only exclude schedules a proof shows are not needed
or that no schedule can beat; the checker has no counterpart for them, by design. The level is
only checked at allocation events, which suffices: between two allocations it only falls.

Objective ``min C`` (``model.objective_unit = u``), or with ``objective = "stage_span"`` (P6)
``min Z``, ``Z >= E_x - A_d`` for the last passes x of every device d, ``A_d <= S_F(k_first(d), j)``
for every j (every pass of d follows some forward of its first chunk) and ``Z >= sum of d_x on d``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.pipeline.bound import lower_bound, releases, tails
from coopt.problems.pipeline.model import (
    KEEP,
    OFFLOAD,
    RECOMPUTE,
    Instance,
    PassKey,
    Timed,
    _tolerance,
    check,
    parse,
    peaks,
    serial_bound,
    to_solution,
)
from coopt.problems.pipeline.order import fifo_is_lossless, reachability
from coopt.problems.pipeline.window import lower_bound as window_bound


def horizon(instance: Instance, best: float | None = None) -> float:
    """An upper bound on every start and end time of some optimal schedule: the makespan ``best``
    of a checked schedule (the warm start) where there is one, capped by the serial bound (every
    pass, lag and copy one after another, which bounds any semi-active schedule). For the
    per-stage span, whose optima may delay whole devices, twice the serial bound."""
    if instance.objective == "stage_span":
        return 2 * serial_bound(instance)
    return serial_bound(instance) if best is None else min(serial_bound(instance), best)


# --------------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------------
@dataclass
class _Frame:
    """What the row families of Model P share: the instance and its model, the scales (``u`` time,
    ``g`` memory), the horizon ``M`` (in ``u``), the implied order ``reach``, the windows (``lo``
    and the tails) and, once (P3) is built, each device's passes and its order indicators."""

    instance: Instance
    model: Any
    fifo: bool
    u: float
    g: float
    M: float
    reach: dict[PassKey, set[PassKey]]
    lo: dict[PassKey, float]
    tail: dict[PassKey, float]
    by_device: dict[int, list[PassKey]]
    aliased: dict[tuple[PassKey, PassKey], tuple[PassKey, PassKey]] = field(default_factory=dict)
    free_pairs: list[tuple[PassKey, PassKey]] = field(default_factory=list)
    pair_set: set[tuple[PassKey, PassKey]] = field(default_factory=set)

    def add(self, row: Any) -> None:
        self.model.cons.add(row)

    def r(self, i: tuple[int, int]) -> Any:
        """The recomputed fraction of item i (0 where recompute is not allowed)."""
        return self.model.r[i] if self.instance.allow_recompute else 0

    def dur(self, x: PassKey) -> Any:
        """d_x in units u: a B pass grows by T_R r_i where it recomputes."""
        kind, k, j = x
        base = self.instance.duration(x) / self.u
        if kind == "B" and self.instance.allow_recompute:
            return base + self.instance.t_r(k) / self.u * self.r((k, j))
        return base

    def E(self, x: PassKey) -> Any:
        return self.model.S[x] + self.dur(x)

    def latest_end(self, x: PassKey) -> float:
        """E_x <= C - (tail_x - d_x) <= M - (tail_x - d_x), whatever x's mode."""
        return self.M - (self.tail[x] - self.instance.duration(x)) / self.u

    def precedes(self, x: PassKey, y: PassKey) -> bool:
        """x ends before y starts in every schedule of the model: implied by (P1)-(P2), or by
        the windows (x's latest end no later than y's earliest start)."""
        return y in self.reach[x] or self.latest_end(x) <= self.lo[y]

    def before(self, x: PassKey, y: PassKey) -> Any:
        """1 if compute pass x runs before compute pass y on their device (constant or binary)."""
        if self.precedes(x, y):
            return 1
        if self.precedes(y, x):
            return 0
        if (x, y) in self.aliased:
            return self.before(*self.aliased[x, y])
        if (y, x) in self.aliased:
            return 1 - self.before(*self.aliased[y, x])
        P = self.model.P
        return P[x, y] if (x, y) in self.pair_set else 1 - P[y, x]


def build(instance: Instance, upper: float | None = None, fifo: bool | None = None,
          incumbent: Solution | None = None) -> pyo.ConcreteModel:
    """Model P for ``instance``. ``incumbent`` (a checked schedule in the form of
    :mod:`.order`, the problem's warm start) gives the horizon, HiGHS' first incumbent and, where
    the dual bound meets it, (P10); without it the horizon is the serial bound and no heuristic
    runs. ``upper`` overrides the big-M / makespan bound (seconds). ``fifo=True`` imposes FIFO per
    (kind, stage) and per copy lane even where it may lose (a restricted model, never ``exact``);
    the default imposes it only where it is lossless."""
    fifo = fifo_is_lossless(instance) if fifo is None else fifo
    best = None if incumbent is None else float(incumbent["objective"])
    frame = _frame(instance, upper, fifo, best)
    _precedence(frame)
    _exclusivity(frame)
    _load_cut(frame)
    if instance.allow_offload:
        _copies(frame)
    if instance.memory_cap_bytes is not None:
        _memory(frame)
    _objective(frame)
    floor = _bound_cut(frame, best)
    if incumbent is not None and best <= frame.M * frame.u:  # above an ``upper`` below it: no solution
        _warm_start(frame.model, instance, incumbent, frame.u, frame.free_pairs)
        if (instance.objective == "makespan" and fifo_is_lossless(instance)
                and floor >= best * (1 - 1e-9) and _exactly_feasible(instance, incumbent)):
            # (P10) the dual bound proves the warm start optimal: fix it (module docstring)
            for var in (frame.model.S, frame.model.P, frame.model.C):
                for v in var.values():
                    v.fix()
    return frame.model


def _windows(instance: Instance, fifo: bool) -> tuple[dict[PassKey, float], dict[PassKey, float]]:
    """(P8) the release times and tails (from the start) of every pass, where they are valid for
    the model (module docstring); else releases 0 and tails the durations."""
    passes = instance.passes()
    release = releases(instance)
    windows = (instance.objective == "makespan" and (fifo or not fifo_is_lossless(instance))
               and not any(map(math.isinf, release.values())))
    tail = tails(instance) if windows else {x: instance.duration(x) for x in passes}
    if not windows:
        release = dict.fromkeys(passes, 0.0)
    return release, tail


def _frame(instance: Instance, upper: float | None, fifo: bool, best: float | None) -> _Frame:
    """The scales, horizon, implied order and windows, and the model with its variables: starts
    S within their windows, C, the modes r (or rho) and o, the copy starts D and U."""
    K, m = instance.virtual_stages, instance.microbatches
    passes = instance.passes()
    u = max(instance.duration(x) for x in passes)
    g = max(instance.a(k) for k in range(K))
    M = (upper if upper is not None else horizon(instance, best)) / u * (1 + 1e-6) + 1e-6
    release, tail = _windows(instance, fifo)
    lo = {x: min(release[x] / u, M) for x in passes}
    hi = {x: max(lo[x], M - tail[x] / u) for x in passes}  # tail: from the start, see bound.tails
    by_device: dict[int, list[PassKey]] = {d: [] for d in range(instance.stages)}
    for x in passes:
        by_device[instance.device(x[1])].append(x)

    model = pyo.ConcreteModel(name="pipeline")
    model.objective_unit = u
    model.S = pyo.Var(passes, bounds=lambda _, *x: (lo[x], hi[x]))
    model.C = pyo.Var(bounds=(0, M))
    model.cons = pyo.ConstraintList()
    items = [(k, j) for k in range(K) for j in range(m)]
    if instance.partial_recompute:
        # per-layer recompute: r_i = rho_i / L, rho_i the recomputed layers (module docstring)
        model.rho = pyo.Var(items, domain=pyo.NonNegativeIntegers,
                            bounds=lambda _, k, j: (0, instance.layers(k)))
        model.r = pyo.Expression(items, rule=lambda mdl, k, j: mdl.rho[k, j] / instance.layers(k))
    elif instance.allow_recompute:
        model.r = pyo.Var(items, domain=pyo.Binary)
    if instance.allow_offload:
        model.o = pyo.Var(items, domain=pyo.Binary)
        model.D = pyo.Var(items, bounds=(0, M))
        model.U = pyo.Var(items, bounds=(0, M))
    if instance.allow_recompute and instance.allow_offload:
        for i in items:
            model.cons.add(model.r[i] + model.o[i] <= 1)
    return _Frame(instance, model, fifo, u, g, M, reachability(instance, fifo), lo, tail, by_device)


def _precedence(f: _Frame) -> None:
    """(P1) precedence with lags, (P2) FIFO or the first lane's relabelling, C after every sink."""
    model, u = f.model, f.u
    for x in f.instance.passes():
        for q, lag in f.instance.predecessors(x):
            f.add(model.S[x] >= f.E(q) + lag / u)
        kind, k, j = x
        if j > 0 and (f.fifo or (kind, k) == ("F", 0)):
            f.add(model.S[x] >= f.E((kind, k, j - 1)))
        if not f.reach[x]:
            f.add(f.E(x) <= model.C)


def _exclusivity(f: _Frame) -> None:
    """(P3) one compute pass per device at a time, with order binaries P where the order is not
    implied ((P2') aliases a stage's W pairs to its B pairs); big-Ms from the windows."""
    unordered = [
        (x, y)
        for d in range(f.instance.stages)
        for n, x in enumerate(f.by_device[d])
        for y in f.by_device[d][n + 1 :]
        if not f.precedes(x, y) and not f.precedes(y, x)
    ]
    # (P2') without FIFO, the W passes of a stage run in the order of their B passes
    f.aliased = {
        (x, y): (("B", x[1], x[2]), ("B", y[1], y[2]))
        for x, y in unordered
        if not f.fifo and x[0] == y[0] == "W" and x[1] == y[1]
    }
    f.free_pairs = [pair for pair in unordered if pair not in f.aliased]
    f.pair_set = set(f.free_pairs)
    f.model.P = pyo.Var(f.free_pairs, domain=pyo.Binary)
    S = f.model.S
    for x, y in unordered:  # big-M from the windows: E_x - S_y <= latest_end(x) - lo[y]
        f.add(S[y] >= f.E(x) - (f.latest_end(x) - f.lo[y]) * (1 - f.before(x, y)))
        f.add(S[x] >= f.E(y) - (f.latest_end(y) - f.lo[x]) * f.before(x, y))


def _load_cut(f: _Frame) -> None:
    """(P7) C >= head_d + the work of device d."""
    instance = f.instance
    for d in range(instance.stages):
        first = min(instance.stages_on(d))
        head = sum(instance.t_f(k) + instance.lag(k, k + 1) for k in range(first)) / f.u
        f.add(head + sum(f.dur(x) for x in f.by_device[d]) <= f.model.C)


def _copies(f: _Frame) -> None:
    """(P5) each offloaded item's D2H after its F, H2D after the D2H, B after the H2D; the copies
    of one device's engine one at a time (binaries Q; FIFO per chunk only under ``fifo``)."""
    instance, model, u, M = f.instance, f.model, f.u, f.M
    items = [(k, j) for k in range(instance.virtual_stages) for j in range(instance.microbatches)]
    for k, j in items:
        i = (k, j)
        f.add(model.D[i] >= f.E(("F", k, j)))
        f.add(model.U[i] >= model.D[i] + instance.tau_d(k) / u * model.o[i])
        f.add(model.S[("B", k, j)] >= model.U[i] + instance.tau_u(k) / u * model.o[i])
        if f.fifo and j > 0:
            f.add(model.D[i] >= model.D[(k, j - 1)] + instance.tau_d(k) / u * model.o[(k, j - 1)])
            f.add(model.U[i] >= model.U[(k, j - 1)] + instance.tau_u(k) / u * model.o[(k, j - 1)])
    cross = [
        (i, i2)
        for i in items
        for i2 in items
        if i < i2
        and (i[0] != i2[0] or not f.fifo)
        and instance.device(i[0]) == instance.device(i2[0])
    ]
    model.Q = pyo.Var(cross, [0, 1], domain=pyo.Binary)
    for i, i2 in cross:
        for lane, (V, tau) in enumerate(((model.D, instance.tau_d), (model.U, instance.tau_u))):
            q = model.Q[i, i2, lane]
            f.add(V[i2] >= V[i] + tau(i[0]) / u * model.o[i] - M * (1 - q))
            f.add(V[i] >= V[i2] + tau(i2[0]) / u * model.o[i2] - M * q)


def _objective(f: _Frame) -> None:
    """min C, or (P6) min Z for the per-stage span."""
    model = f.model
    if f.instance.objective != "stage_span":
        model.objective = pyo.Objective(expr=model.C, sense=pyo.minimize)
        return
    model.Z = pyo.Var(bounds=(0, f.M))
    model.A = pyo.Var(range(f.instance.stages), bounds=(0, f.M))  # first start on each device
    for d, on_device in f.by_device.items():
        k_first = min(f.instance.stages_on(d))  # every pass on d follows some F(k_first, j)
        if f.fifo or k_first == 0:  # (P2) makes F(k_first, 0) the first pass on d
            f.add(model.A[d] == model.S[("F", k_first, 0)])
        else:
            for j in range(f.instance.microbatches):
                f.add(model.A[d] <= model.S[("F", k_first, j)])
        for x in on_device:
            if not any(y in f.reach[x] for y in on_device):
                f.add(f.E(x) - model.A[d] <= model.Z)
        f.add(sum(f.dur(x) for x in on_device) <= model.Z)
    model.objective = pyo.Objective(expr=model.Z, sense=pyo.minimize)


def _bound_cut(f: _Frame, best: float | None) -> float:
    """(P9) the objective is at least the dual bound of :mod:`.bound`, lifted by the one-stage
    windows of :mod:`.window` where a warm start of makespan ``best`` lies above it; returns the
    bound."""
    floor = lower_bound(f.instance)
    if best is not None and math.isfinite(floor) and floor < best * (1 - 1e-9):
        floor = max(floor, window_bound(f.instance, best))
    if math.isinf(floor):
        f.add(f.model.C <= -1)  # not even one micro-batch fits a device: infeasible
    else:
        f.add(f.model.objective.expr >= floor / f.u * (1 - 1e-9))
    return floor


def _exactly_feasible(instance: Instance, solution: Solution) -> bool:
    """The schedule meets precedence, exclusivity and the caps without the checker's tolerance
    (to 1e-9 relative), so that Model P's rows hold at its values."""

    timed, bad = parse(instance, solution)
    if timed is None or bad:
        return False
    eps = 1e-9 * max(1.0, instance.time_scale)
    start = timed.start

    def end(x: PassKey) -> float:
        return start[x] + instance.duration(x, timed.modes.get(x[1:], KEEP))

    if any(start[x] < end(q) + lag - eps for x in start for q, lag in instance.predecessors(x)):
        return False
    for d in range(instance.stages):
        on = sorted((start[x], end(x)) for x in start if instance.device(x[1]) == d)
        if any(s1 < e0 - eps for (_, e0), (s1, _) in zip(on, on[1:], strict=False)):
            return False
    return all(peak <= instance.cap(d) * (1 + 1e-9) for d, peak in enumerate(peaks(instance, timed)))


def _warm_start(model: pyo.ConcreteModel, instance: Instance, solution: Solution, u: float,
                free_pairs: list[tuple[PassKey, PassKey]]) -> None:
    """The heuristic schedule as HiGHS' first incumbent: starts, modes, copies and the order
    binaries (HiGHS completes the memory indicators itself)."""
    start = {(x["kind"], x["stage"], x["microbatch"]): x["start"] / u for x in solution["passes"]}
    recompute = {(k, j): instance.layers(k) for k, j in solution["recompute"]}
    recompute |= {(k, j): r for k, j, r in solution.get("recompute_layers", [])}
    offload = {(c["stage"], c["microbatch"]): c for c in solution["offload"]}
    for x, t in start.items():
        model.S[x].value = t
    for x, y in free_pairs:
        model.P[x, y].value = 1.0 if start[x] < start[y] else 0.0
    ends = [t + instance.duration(x, instance.recompute_mode(x[1], recompute.get(x[1:], 0))) / u
            for x, t in start.items()]
    model.C.value = max(ends)
    for k in range(instance.virtual_stages):
        for j in range(instance.microbatches):
            if instance.partial_recompute:
                model.rho[k, j].value = recompute.get((k, j), 0)
            elif instance.allow_recompute:
                model.r[k, j].value = 1.0 if (k, j) in recompute else 0.0
            if instance.allow_offload:
                copy = offload.get((k, j))
                model.o[k, j].value = 1.0 if copy else 0.0
                if copy:
                    model.D[k, j].value, model.U[k, j].value = copy["d2h_start"] / u, copy["h2d_start"] / u
    model.warm_start = True


class _MemoryRows:
    """(P4)/(P5) for one model: the scaled activation sizes, the linearised products of a mode
    and an order indicator, and the copy indicators, shared by the event and reload rows."""

    def __init__(self, f: _Frame) -> None:
        instance = f.instance
        self.f = f
        self.rec, self.off = instance.allow_recompute, instance.allow_offload
        K = range(instance.virtual_stages)
        self.Mc = f.M + max((instance.tau_d(k) / f.u for k in K), default=0.0)
        f.model.z = pyo.Var(pyo.Any, bounds=(0, 1), dense=False)
        f.model.bin = pyo.Var(pyo.Any, domain=pyo.Binary, dense=False)
        self.a = {k: instance.a(k) / f.g for k in K}
        self.a_w = {k: instance.a_w(k) / f.g for k in K}
        self.a_c = {k: instance.a_c(k) / f.g for k in K}
        self.a_o = {k: instance.a_o(k) / f.g for k in K}

    def product(self, name: tuple, mode: Any, indicator: Any, raises: bool) -> Any:
        """mode * indicator (both 0/1), bounded on the side the memory constraint needs."""
        if isinstance(indicator, int):
            return mode * indicator
        z = self.f.model.z[name]
        if raises:
            self.f.add(z >= mode + indicator - 1)
        else:
            self.f.add(z <= mode)
            self.f.add(z <= indicator)
        return z

    def binary(self, name: tuple) -> Any:
        return self.f.model.bin[name]

    def copied_out(self, i: tuple[int, int], at: Any, out: tuple, back: tuple) -> tuple[Any, Any]:
        """Item i's copy indicators at the time ``at`` of an allocation: ``delta`` (its D2H has
        ended, conservative: delta = 1 forces it) and ``nu`` (its H2D has started, forcing: nu = 0
        forces U_i >= at), both 0 unless i is offloaded."""
        f, model = self.f, self.f.model
        delta, nu = self.binary(out), self.binary(back)
        f.add(delta <= model.o[i])
        f.add(nu <= model.o[i])
        f.add(at >= model.D[i] + f.instance.tau_d(i[0]) / f.u - self.Mc * (1 - delta))
        f.add(model.U[i] >= at - f.M * nu - f.M * (1 - model.o[i]))
        return delta, nu

    def copies_after(self, i: tuple[int, int], e: PassKey) -> bool:
        """True when item i's copies cannot touch the level at event e: i is e's own item (its F
        precedes its D2H; its reload is netted with its release), or F(i) starts after e ends."""
        return i == (e[1], e[2]) or ("F", *i) in self.f.reach[e]

    def net(self, x: PassKey, indicator: Any, tag: tuple) -> Any:
        """Net memory change of compute pass x, times its 'x before e' indicator."""
        kind, k, j = x
        r = self.f.model.r[(k, j)] if self.rec else None
        a, a_c = self.a[k], self.a_c[k]
        if kind == "F":
            term = a * indicator
            if self.rec:
                term -= (a - a_c) * self.product(("Fr", *tag), r, indicator, raises=False)
            return term
        if kind == "B":
            term = -(a - self.a_w[k]) * indicator
            if self.rec:
                term += (a - a_c) * self.product(("Br", *tag), r, indicator, raises=True)
            return term
        return -self.a_w[k] * indicator

    def event_level(self, on_device: list[PassKey], items: list[tuple[int, int]], e: PassKey) -> Any:
        """The level right after allocation event e (an F start, or a B start under recompute):
        the passes before it, its own allocation, and the offloaded items copied out (D2H ended,
        ``delta``) and not yet back (H2D not started, ``nu``)."""
        f, model = self.f, self.f.model
        kind, k, j = e
        level = sum(self.net(x, f.before(x, e), (x, e)) for x in on_device if x != e)
        if kind == "F":
            level += self.a[k] - ((self.a[k] - self.a_c[k]) * model.r[(k, j)] if self.rec else 0)
        else:
            level += (self.a[k] - self.a_c[k]) * model.r[(k, j)]
        if not self.off:
            return level
        for i in items:
            if self.copies_after(i, e):
                continue
            delta, nu = self.copied_out(i, model.S[e], ("dE", i, e), ("nE", i, e))
            level += self.a_o[i[0]] * (nu - delta)
        return level

    def reload_level(self, on_device: list[PassKey], items: list[tuple[int, int]],
                     i: tuple[int, int]) -> Any:
        """The level right after item i's H2D starts (binding only where i is offloaded)."""
        k, j = i
        level = self.a[k]  # own F allocation; own D2H release and own H2D allocation cancel
        return level + self._passes_at_reload(on_device, i) + self._copies_at_reload(items, i)

    def _passes_at_reload(self, on_device: list[PassKey], i: tuple[int, int]) -> Any:
        """The compute passes before item i's H2D start: started (``sigma``, forcing) for an
        allocation, ended (``epsilon``, conservative) for a release."""
        f, model, M = self.f, self.f.model, self.f.M
        k, j = i
        own_f, own_b = ("F", k, j), ("B", k, j)
        level: Any = 0
        for x in on_device:
            if x in (own_f, own_b, ("W", k, j)) or x in f.reach[own_b]:
                continue  # own passes are counted above or come after the reload
            xk, xj = x[1], x[2]
            if own_f in f.reach[x]:
                level += self.net(x, 1, (x, "U", i))
                continue
            sigma, eps = self.binary(("sU", x, i)), self.binary(("eU", x, i))
            f.add(model.S[x] >= model.U[i] - M * sigma)
            f.add(model.U[i] >= f.E(x) - M * (1 - eps))
            if x[0] == "F":
                level += self.a[xk] * sigma
                if self.rec:
                    level -= (self.a[xk] - self.a_c[xk]) * self.product(
                        ("sUr", x, i), model.r[(xk, xj)], sigma, raises=False
                    )
                if not self.copies_after(i, x):
                    f.add(sigma + self.binary(("nE", i, x)) >= model.o[i])  # same-instant allocations
            elif x[0] == "B":
                if self.rec:
                    level += (self.a[xk] - self.a_c[xk]) * self.product(
                        ("sUr", x, i), model.r[(xk, xj)], sigma, raises=True
                    )
                    if not self.copies_after(i, x):
                        f.add(sigma + self.binary(("nE", i, x)) >= model.o[i])
                level -= (self.a[xk] - self.a_w[xk]) * eps
            else:
                level -= self.a_w[xk] * eps
        return level

    def _copies_at_reload(self, items: list[tuple[int, int]], i: tuple[int, int]) -> Any:
        """The other items of the device copied out (``delta``) and not yet back (``nu``) when
        item i's H2D starts."""
        f, model = self.f, self.f.model
        level: Any = 0
        for i2 in items:
            if i2 == i:
                continue
            delta, nu = self.copied_out(i2, model.U[i], ("dU", i2, i), ("nU", i2, i))
            if i2 < i:
                f.add(nu + self.binary(("nU", i, i2)) >= model.o[i] + model.o[i2] - 1)
            level += self.a_o[i2[0]] * (nu - delta)
        return level


def _memory(f: _Frame) -> None:
    """(P4)/(P5): the memory level at every allocation event is within the cap, and so is the
    level at every H2D start of an offloaded item."""
    rows = _MemoryRows(f)
    instance = f.instance
    for d, on_device in f.by_device.items():
        cap = instance.cap(d) / f.g
        items = sorted({(x[1], x[2]) for x in on_device})
        events = [x for x in on_device if x[0] == "F" or (x[0] == "B" and rows.rec)]
        for e in events:
            _at_most(f.model, rows.event_level(on_device, items, e), cap)
        if not rows.off:
            continue
        big = sum(rows.a[k] for k, _ in items)
        for i in items:
            _at_most(f.model, rows.reload_level(on_device, items, i), cap + big * (1 - f.model.o[i]))


def _at_most(model: pyo.ConcreteModel, level, cap) -> None:
    """level <= cap; a constant level above the cap makes the model infeasible (C < 0)."""
    if pyo.is_constant(level) and pyo.is_constant(cap):
        if pyo.value(level) > pyo.value(cap) + 1e-9:
            model.cons.add(model.C <= -1)
        return
    model.cons.add(level <= cap)


# --------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------
def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    """Pass starts, modes and copy starts of a solved model, in seconds."""
    u = model.objective_unit
    start = {x: max(0.0, pyo.value(model.S[x]) * u) for x in instance.passes()}
    modes: dict = {}
    d2h: dict = {}
    h2d: dict = {}
    for k in range(instance.virtual_stages):
        for j in range(instance.microbatches):
            i = (k, j)
            if instance.partial_recompute:
                if round(pyo.value(model.rho[i])) > 0:
                    modes[i] = instance.recompute_mode(k, round(pyo.value(model.rho[i])))
            elif instance.allow_recompute and pyo.value(model.r[i]) > 0.5:
                modes[i] = RECOMPUTE
            if instance.allow_offload and pyo.value(model.o[i]) > 0.5:
                modes[i] = OFFLOAD
                d2h[i] = pyo.value(model.D[i]) * u
                h2d[i] = pyo.value(model.U[i]) * u
    raw = Timed(start=start, modes=modes, d2h=d2h, h2d=h2d)

    polished = _polish(instance, raw)
    if polished is not None and polished.value(instance) <= raw.value(instance) + _tolerance(instance):
        solution = to_solution(instance, polished)
        if not check(instance, solution):
            return solution
    return to_solution(instance, raw)


def _polish(instance: Instance, timed: Timed) -> Timed | None:
    """The solved schedule re-timed in exact arithmetic: the least times that keep its data
    flow, its order on every compute lane and copy engine, and the weak order of every
    device's events (events closer than the checker's tolerance become one instant). HiGHS
    meets its rows only to its tolerances (an order binary at 1 - 1e-6 times a big-M lets a pass
    start microseconds early, which the checker's tolerance accepts and which then shows as a
    makespan microseconds below the optimum); keeping the weak event order keeps every memory
    level at or below one the checker accepted (ties release first), and the least times are
    sums of durations and lags. None when the system does not settle (it always should)."""
    value: dict[tuple, float] = {("S", x): t for x, t in timed.start.items()}
    value |= {("D", i): t for i, t in timed.d2h.items()}
    value |= {("U", i): t for i, t in timed.h2d.items()}
    out = _least_times(value, _polish_edges(instance, timed, value), 1e-12 * max(1.0, instance.time_scale))
    if out is None:
        return None
    return Timed(start={x: out[("S", x)] for x in timed.start}, modes=dict(timed.modes),
                 d2h={i: out[("D", i)] for i in timed.d2h}, h2d={i: out[("U", i)] for i in timed.h2d})


def _polish_edges(instance: Instance, timed: Timed, value: dict[tuple, float]
                  ) -> list[tuple[tuple, tuple, float]]:
    """The difference constraints ``(a, b, w)``, ``b >= a + w``, that keep the schedule's data
    flow, its order on every compute lane and copy engine, and the weak order of every device's
    events (events within the checker's tolerance become one instant)."""

    def dur(x: PassKey) -> float:
        return instance.duration(x, timed.modes.get(x[1:], KEEP))

    edges: list[tuple[tuple, tuple, float]] = []
    for x in timed.start:
        for q, lag in instance.predecessors(x):
            edges.append((("S", q), ("S", x), dur(q) + lag))
    for i in timed.d2h:
        k, j = i
        edges.append((("S", ("F", k, j)), ("D", i), dur(("F", k, j))))
        edges.append((("D", i), ("U", i), instance.tau_d(k)))
        edges.append((("U", i), ("S", ("B", k, j)), instance.tau_u(k)))
    tol = _tolerance(instance)
    for d in range(instance.stages):
        on = [x for x in timed.start if instance.device(x[1]) == d]
        lanes = [[(("S", x), dur(x)) for x in on]]
        copied = [i for i in timed.d2h if instance.device(i[0]) == d]
        lanes.append([(("D", i), instance.tau_d(i[0])) for i in copied])
        lanes.append([(("U", i), instance.tau_u(i[0])) for i in copied])
        for lane in lanes:
            lane.sort(key=lambda e: value[e[0]])
            for (a, w), (b, _) in zip(lane, lane[1:], strict=False):
                edges.append((a, b, w))
        points = [point for lane in lanes for var, w in lane for point in ((var, 0.0), (var, w))]
        points.sort(key=lambda e: value[e[0]] + e[1])
        for (a, ca), (b, cb) in zip(points, points[1:], strict=False):
            edges.append((a, b, ca - cb))  # b + cb >= a + ca
            if value[b] + cb - value[a] - ca <= tol:
                edges.append((b, a, cb - ca))  # one instant
    return edges


def _least_times(value: dict[tuple, float], edges: list[tuple[tuple, tuple, float]], slack: float
                 ) -> dict[tuple, float] | None:
    """The least non-negative times meeting ``edges`` (Bellman-Ford passes in the order of
    ``value``), or None when 100 passes do not settle them."""
    order = sorted(value, key=value.__getitem__)
    out = dict.fromkeys(value, 0.0)
    by_source: dict[tuple, list[tuple[tuple, float]]] = {v: [] for v in value}
    for a, b, w in edges:
        by_source[a].append((b, w))
    for _ in range(100):
        changed = False
        for a in order:
            for b, w in by_source[a]:
                if out[b] < out[a] + w - slack:
                    out[b] = out[a] + w
                    changed = True
        if not changed:
            return out
    return None
