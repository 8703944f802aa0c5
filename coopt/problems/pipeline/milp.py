"""Model P: the precedence / pairwise-order MILP for pipeline schedules under memory caps.

Structure of Zero Bubble's ILP (Qi et al., ICLR 2024; sail-sg/zero-bubble-pipeline-parallelism
``auto_schedule.py``), extended to a true makespan, virtual stages, recompute and offload modes
(research-pipeline-memory.md b.1, with its offload gap closed below).

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
    matching argument fails. Issue 13's instance (``0-p3m3-offload-overtake``) has optimum 22
    against a FIFO optimum of 23. Only two restrictions are kept: (a) ``F(0, j-1)`` before
    ``F(0, j)``: micro-batches are identical, so a global relabelling (all stages and modes at
    once) orders the first lane; (b) (P2') the W passes of a stage run in the order of its B passes
    (``P_{W(k,j),W(k,j')} = P_{B(k,j),B(k,j')}``, no binary of its own): W's duration and release
    do not depend on j or on the mode, W has no successor, and the sorted matching of the W lane to
    the B lane's ends keeps ``S_W >= E_B``. Copy lanes are not FIFO either (every pair of copies
    of a device gets an order binary). ``build(..., fifo=True)`` is the restricted model, a
    labelled heuristic (``fifo_milp``), never ``exact``;
* (P3) exclusivity ``S_y >= E_x - M(1 - P_xy)``, ``S_x >= E_y - M P_xy``, M = best heuristic
  makespan (or the serial bound); order implied by (P1)+(P2) (transitive closure) needs no binary;
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

import pyomo.environ as pyo

from coopt.problem import NoSolution, Solution
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


# --------------------------------------------------------------------------------------------
# Order implied by precedence and FIFO (transitive closure)
# --------------------------------------------------------------------------------------------
def fifo_is_lossless(instance: Instance) -> bool:
    """True when FIFO per (kind, virtual stage) loses nothing: keep-only instances (proof in the
    module docstring, (P2)). With recompute or offload it can lose (issue 13's instance)."""
    return not (instance.allow_recompute or instance.allow_offload)


def successors(instance: Instance, fifo: bool | None = None) -> dict[PassKey, list[PassKey]]:
    """Direct successors of every pass: data-flow edges (P1) and the symmetry-breaking edges (P2):
    FIFO per (kind, k) where it is lossless (``fifo``, default :func:`fifo_is_lossless`), else the
    relabelling edges F(0, j-1) -> F(0, j) only."""
    fifo = fifo_is_lossless(instance) if fifo is None else fifo
    succ: dict[PassKey, list[PassKey]] = {x: [] for x in instance.passes()}
    for x in instance.passes():
        for q, _ in instance.predecessors(x):
            succ[q].append(x)
        kind, k, j = x
        if j > 0 and (fifo or (kind, k) == ("F", 0)):
            succ[(kind, k, j - 1)].append(x)
    return succ


def topological_order(succ: dict[PassKey, list[PassKey]]) -> list[PassKey]:
    """The passes in an order that puts every pass after its predecessors (Kahn)."""
    indegree = dict.fromkeys(succ, 0)
    for targets in succ.values():
        for y in targets:
            indegree[y] += 1
    order = [x for x in succ if indegree[x] == 0]
    for x in order:
        for y in succ[x]:
            indegree[y] -= 1
            if indegree[y] == 0:
                order.append(y)
    return order


def reachability(instance: Instance, fifo: bool | None = None) -> dict[PassKey, set[PassKey]]:
    """For every pass, every pass that must start after it ends (by (P1) and (P2))."""
    succ = successors(instance, fifo)
    order = topological_order(succ)
    reach: dict[PassKey, set[PassKey]] = {}
    for x in reversed(order):
        reach[x] = set()
        for y in succ[x]:
            reach[x] |= {y} | reach[y]
    return reach


def fifo_relabel(instance: Instance, solution: Solution) -> Solution:
    """A keep-only schedule with every lane (kind, k) relabelled FIFO: its i-th pass to start
    becomes micro-batch i's. Same start times, so the same exclusivity, memory profile and
    objective, and the sorted matching keeps every precedence (the proof of (P2)); this is how
    a schedule in which micro-batches overtake becomes a start for the FIFO model."""
    if not fifo_is_lossless(instance):
        raise ValueError("relabelling is lossless only on keep-only instances")
    lanes: dict[tuple[str, int], list[float]] = {}
    for x in solution["passes"]:
        lanes.setdefault((x["kind"], x["stage"]), []).append(x["start"])
    start = {(kind, k, j): t for (kind, k), times in lanes.items() for j, t in enumerate(sorted(times))}
    return to_solution(instance, Timed(start=start, modes={}, d2h={}, h2d={}))


def first_lane_relabel(instance: Instance, solution: Solution) -> Solution:
    """The schedule with its micro-batches renumbered in the order their F(0, j) start (ties by
    number), every pass, mode and copy carried along: the global relabelling of (P2)(a), so the
    same times, memory and objective, and the form whose F(0, j) chain Model P imposes."""
    first = {x["microbatch"]: (x["start"], x["microbatch"])
             for x in solution["passes"] if x["kind"] == "F" and x["stage"] == 0}
    new = {j: i for i, j in enumerate(sorted(first, key=first.__getitem__))}
    return {
        **solution,
        "passes": [{**x, "microbatch": new[x["microbatch"]]} for x in solution["passes"]],
        "recompute": sorted([k, new[j]] for k, j in solution.get("recompute", [])),
        "recompute_layers": sorted([k, new[j], r] for k, j, r in solution.get("recompute_layers", [])),
        "offload": sorted(({**o, "microbatch": new[o["microbatch"]]} for o in solution.get("offload", [])),
                          key=lambda o: (o["stage"], o["microbatch"])),
    }


def incumbent(instance: Instance) -> tuple[float, Solution | None]:
    """The best heuristic schedule that the checker accepts, with its objective, or the serial
    bound and no schedule: every heuristic but ``portfolio`` (which only returns the best of
    the others); ``local_search`` is taken, it is the one that searches beyond them; then, where
    the best of them is above the dual bound, the pattern schedules of :mod:`.pattern` (issue 20,
    fifth and sixth rounds: greedy crossings and the pair table's). The schedule
    is relabelled into the form Model P admits: FIFO on keep-only instances (:func:`fifo_relabel`),
    else the F(0, j) chain (:func:`first_lane_relabel`); a relabelling the checker rejects is not
    used."""
    from coopt.problems.pipeline.bound import lower_bound
    from coopt.problems.pipeline.heuristics import COMBINED, HEURISTICS
    from coopt.problems.pipeline.pattern import pattern_incumbent

    best: tuple[float, Solution | None] = (serial_bound(instance), None)
    for name, fn in HEURISTICS.items():
        if name in COMBINED:
            continue
        try:
            solution = fn(instance)
        except NoSolution:
            continue
        if solution["objective"] < best[0] and not check(instance, solution):
            best = (solution["objective"], solution)
    if best[0] > lower_bound(instance) + 1e-9:
        value, solution = pattern_incumbent(instance, best[0])  # checked, FIFO by construction
        if solution is not None:
            best = (value, solution)
    if best[1] is not None:
        relabel = fifo_relabel if fifo_is_lossless(instance) else first_lane_relabel
        relabelled = relabel(instance, best[1])
        if not check(instance, relabelled):
            best = (relabelled["objective"], relabelled)
    return best


def horizon(instance: Instance, best: float | None = None) -> float:
    """An upper bound on every start and end time of some optimal schedule: the best heuristic
    makespan (``best``, else computed), capped by the serial bound (every pass, lag and copy one
    after another, which bounds any semi-active schedule). For the per-stage span, whose optima
    may delay whole devices, twice the serial bound."""
    if instance.objective == "stage_span":
        return 2 * serial_bound(instance)
    return min(serial_bound(instance), incumbent(instance)[0] if best is None else best)


# --------------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------------
def build(instance: Instance, upper: float | None = None, fifo: bool | None = None) -> pyo.ConcreteModel:
    """Model P for ``instance``; ``upper`` overrides the big-M / makespan bound (seconds).
    ``fifo=True`` imposes FIFO per (kind, stage) and per copy lane even where it may lose (the
    restricted model of :func:`coopt.problems.pipeline.heuristics.fifo_milp`); the default imposes it only
    where it is lossless."""
    fifo = fifo_is_lossless(instance) if fifo is None else fifo
    K, m = instance.virtual_stages, instance.microbatches
    passes = instance.passes()
    u = max(instance.duration(x) for x in passes)
    g = max(instance.a(k) for k in range(K))
    best, start = incumbent(instance)
    M = (upper if upper is not None else horizon(instance, best)) / u * (1 + 1e-6) + 1e-6
    items = [(k, j) for k in range(K) for j in range(m)]
    reach = reachability(instance, fifo)

    # (P8) windows: every start within [release, M - tail], see the module docstring
    from coopt.problems.pipeline.bound import releases, tails

    release = releases(instance)
    windows = (instance.objective == "makespan" and (fifo or not fifo_is_lossless(instance))
               and not any(map(math.isinf, release.values())))
    tail = tails(instance) if windows else {x: instance.duration(x) for x in passes}
    if not windows:
        release = dict.fromkeys(passes, 0.0)
    lo = {x: min(release[x] / u, M) for x in passes}
    hi = {x: max(lo[x], M - tail[x] / u) for x in passes}  # tail: from the start, see bound.tails

    model = pyo.ConcreteModel(name="pipeline")
    model.objective_unit = u
    model.S = pyo.Var(passes, bounds=lambda _, *x: (lo[x], hi[x]))
    model.C = pyo.Var(bounds=(0, M))
    model.cons = pyo.ConstraintList()
    add = model.cons.add
    rec = instance.allow_recompute
    off = instance.allow_offload
    if instance.partial_recompute:
        # per-layer recompute: r_i = rho_i / L, rho_i the recomputed layers (module docstring)
        model.rho = pyo.Var(items, domain=pyo.NonNegativeIntegers,
                            bounds=lambda _, k, j: (0, instance.layers(k)))
        model.r = pyo.Expression(items, rule=lambda mdl, k, j: mdl.rho[k, j] / instance.layers(k))
    elif rec:
        model.r = pyo.Var(items, domain=pyo.Binary)
    if off:
        model.o = pyo.Var(items, domain=pyo.Binary)
        model.D = pyo.Var(items, bounds=(0, M))
        model.U = pyo.Var(items, bounds=(0, M))
    if rec and off:
        for i in items:
            add(model.r[i] + model.o[i] <= 1)

    def r(i):
        return model.r[i] if rec else 0

    def dur(x: PassKey):
        kind, k, j = x
        base = instance.duration(x) / u
        return base + instance.t_r(k) / u * r((k, j)) if kind == "B" and rec else base

    def E(x: PassKey):
        return model.S[x] + dur(x)

    # (P1) precedence, (P2) FIFO or relabelling, makespan
    for x in passes:
        for q, lag in instance.predecessors(x):
            add(model.S[x] >= E(q) + lag / u)
        kind, k, j = x
        if j > 0 and (fifo or (kind, k) == ("F", 0)):
            add(model.S[x] >= E((kind, k, j - 1)))
        if not reach[x]:
            add(E(x) <= model.C)

    # (P3) exclusivity with order binaries where the order is not implied
    by_device: dict[int, list[PassKey]] = {d: [] for d in range(instance.stages)}
    for x in passes:
        by_device[instance.device(x[1])].append(x)

    def latest_end(x: PassKey) -> float:
        """E_x <= C - (tail_x - d_x) <= M - (tail_x - d_x), whatever x's mode."""
        return M - (tail[x] - instance.duration(x)) / u

    def precedes(x: PassKey, y: PassKey) -> bool:
        """x ends before y starts in every schedule of the model: implied by (P1)-(P2), or by
        the windows (x's latest end no later than y's earliest start)."""
        return y in reach[x] or latest_end(x) <= lo[y]

    unordered = [
        (x, y)
        for d in range(instance.stages)
        for n, x in enumerate(by_device[d])
        for y in by_device[d][n + 1 :]
        if not precedes(x, y) and not precedes(y, x)
    ]
    # (P2') without FIFO, the W passes of a stage run in the order of their B passes
    aliased = {
        (x, y): (("B", x[1], x[2]), ("B", y[1], y[2]))
        for x, y in unordered
        if not fifo and x[0] == y[0] == "W" and x[1] == y[1]
    }
    free_pairs = [pair for pair in unordered if pair not in aliased]
    pair_set = set(free_pairs)
    model.P = pyo.Var(free_pairs, domain=pyo.Binary)

    def before(x: PassKey, y: PassKey):
        """1 if compute pass x runs before compute pass y on their device (constant or binary)."""
        if precedes(x, y):
            return 1
        if precedes(y, x):
            return 0
        if (x, y) in aliased:
            return before(*aliased[x, y])
        if (y, x) in aliased:
            return 1 - before(*aliased[y, x])
        return model.P[x, y] if (x, y) in pair_set else 1 - model.P[y, x]

    for x, y in unordered:  # big-M from the windows: E_x - S_y <= latest_end(x) - lo[y]
        add(model.S[y] >= E(x) - (latest_end(x) - lo[y]) * (1 - before(x, y)))
        add(model.S[x] >= E(y) - (latest_end(y) - lo[x]) * before(x, y))

    # (P7) load cut
    for d in range(instance.stages):
        first = min(instance.stages_on(d))
        head = sum(instance.t_f(k) + instance.lag(k, k + 1) for k in range(first)) / u
        add(head + sum(dur(x) for x in by_device[d]) <= model.C)

    # (P5) offload copies
    if off:
        for k, j in items:
            i = (k, j)
            add(model.D[i] >= E(("F", k, j)))
            add(model.U[i] >= model.D[i] + instance.tau_d(k) / u * model.o[i])
            add(model.S[("B", k, j)] >= model.U[i] + instance.tau_u(k) / u * model.o[i])
            if fifo and j > 0:
                add(model.D[i] >= model.D[(k, j - 1)] + instance.tau_d(k) / u * model.o[(k, j - 1)])
                add(model.U[i] >= model.U[(k, j - 1)] + instance.tau_u(k) / u * model.o[(k, j - 1)])
        cross = [
            (i, i2)
            for i in items
            for i2 in items
            if i < i2
            and (i[0] != i2[0] or not fifo)
            and instance.device(i[0]) == instance.device(i2[0])
        ]
        model.Q = pyo.Var(cross, [0, 1], domain=pyo.Binary)
        for i, i2 in cross:
            for lane, (V, tau) in enumerate(((model.D, instance.tau_d), (model.U, instance.tau_u))):
                q = model.Q[i, i2, lane]
                add(V[i2] >= V[i] + tau(i[0]) / u * model.o[i] - M * (1 - q))
                add(V[i] >= V[i2] + tau(i2[0]) / u * model.o[i2] - M * q)

    if instance.memory_cap_bytes is not None:
        _memory(instance, model, by_device, reach, before, E, u, g, M)

    if instance.objective == "stage_span":
        model.Z = pyo.Var(bounds=(0, M))
        model.A = pyo.Var(range(instance.stages), bounds=(0, M))  # first start on each device
        for d, on_device in by_device.items():
            k_first = min(instance.stages_on(d))  # every pass on d follows some F(k_first, j)
            if fifo or k_first == 0:  # (P2) makes F(k_first, 0) the first pass on d
                add(model.A[d] == model.S[("F", k_first, 0)])
            else:
                for j in range(m):
                    add(model.A[d] <= model.S[("F", k_first, j)])
            for x in on_device:
                if not any(y in reach[x] for y in on_device):
                    add(E(x) - model.A[d] <= model.Z)
            add(sum(dur(x) for x in on_device) <= model.Z)
        model.objective = pyo.Objective(expr=model.Z, sense=pyo.minimize)
    else:
        model.objective = pyo.Objective(expr=model.C, sense=pyo.minimize)
    # (P9) the dual bound of :mod:`.bound` as a cut on the objective
    from coopt.problems.pipeline.bound import lower_bound

    floor = lower_bound(instance)
    if start is not None and math.isfinite(floor) and floor < best * (1 - 1e-9):
        # the one-stage window relaxations of :mod:`.window` where a cap binds (issue 20)
        from coopt.problems.pipeline import window

        floor = max(floor, window.lower_bound(instance, best))
    if math.isinf(floor):
        add(model.C <= -1)  # not even one micro-batch fits a device: infeasible
    else:
        add(model.objective.expr >= floor / u * (1 - 1e-9))
    if start is not None and best <= M * u:  # a warm start above an ``upper`` below it is no solution
        _warm_start(model, instance, start, u, free_pairs)
        if (instance.objective == "makespan" and fifo_is_lossless(instance)
                and floor >= best * (1 - 1e-9) and _exactly_feasible(instance, start)):
            # (P10) the dual bound proves the warm start optimal: fix it (module docstring)
            for var in (model.S, model.P, model.C):
                for v in var.values():
                    v.fix()
    return model


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


def _memory(instance, model, by_device, reach, before, E, u, g, M) -> None:
    """(P4)/(P5): the memory level at every allocation event is within the cap."""
    rec, off = instance.allow_recompute, instance.allow_offload
    add = model.cons.add
    Mc = M + max((instance.tau_d(k) / u for k in range(instance.virtual_stages)), default=0.0)
    model.z = pyo.Var(pyo.Any, bounds=(0, 1), dense=False)
    model.bin = pyo.Var(pyo.Any, domain=pyo.Binary, dense=False)

    def product(name: tuple, mode, indicator, raises: bool):
        """mode * indicator (both 0/1), bounded on the side the memory constraint needs."""
        if isinstance(indicator, int):
            return mode * indicator
        z = model.z[name]
        if raises:
            add(z >= mode + indicator - 1)
        else:
            add(z <= mode)
            add(z <= indicator)
        return z

    def binary(name: tuple):
        return model.bin[name]

    def copies_after(i: tuple[int, int], e: PassKey) -> bool:
        """True when item i's copies cannot touch the level at event e: i is e's own item (its F
        precedes its D2H; its reload is netted with its release), or F(i) starts after e ends."""
        return i == (e[1], e[2]) or ("F", *i) in reach[e]

    a = {k: instance.a(k) / g for k in range(instance.virtual_stages)}
    a_w = {k: instance.a_w(k) / g for k in a}
    a_c = {k: instance.a_c(k) / g for k in a}
    a_o = {k: instance.a_o(k) / g for k in a}

    def net(x: PassKey, indicator, tag: tuple):
        """Net memory change of compute pass x, times its 'x before e' indicator."""
        kind, k, j = x
        i = (k, j)
        if kind == "F":
            term = a[k] * indicator
            if rec:
                term -= (a[k] - a_c[k]) * product(("Fr", *tag), model.r[i], indicator, raises=False)
            return term
        if kind == "B":
            term = -(a[k] - a_w[k]) * indicator
            if rec:
                term += (a[k] - a_c[k]) * product(("Br", *tag), model.r[i], indicator, raises=True)
            return term
        return -a_w[k] * indicator

    for d, on_device in by_device.items():
        cap = instance.cap(d) / g
        items = sorted({(x[1], x[2]) for x in on_device})
        events = [x for x in on_device if x[0] == "F" or (x[0] == "B" and rec)]
        for e in events:
            kind, k, j = e
            level = sum(net(x, before(x, e), (x, e)) for x in on_device if x != e)
            if kind == "F":
                level += a[k] - ((a[k] - a_c[k]) * model.r[(k, j)] if rec else 0)
            else:
                level += (a[k] - a_c[k]) * model.r[(k, j)]
            if off:
                for i in items:
                    ki, ji = i
                    if copies_after(i, e):
                        continue
                    delta, nu = binary(("dE", i, e)), binary(("nE", i, e))
                    add(delta <= model.o[i])
                    add(nu <= model.o[i])
                    add(model.S[e] >= model.D[i] + instance.tau_d(ki) / u - Mc * (1 - delta))
                    add(model.U[i] >= model.S[e] - M * nu - M * (1 - model.o[i]))
                    level += a_o[ki] * (nu - delta)
            _at_most(model, level, cap)
        if not off:
            continue
        big = sum(a[k] for k, _ in items)
        for i in items:
            k, j = i
            own_f, own_b = ("F", k, j), ("B", k, j)
            level = a[k]  # own F allocation; own D2H release and own H2D allocation cancel
            for x in on_device:
                if x in (own_f, own_b, ("W", k, j)) or x in reach[own_b]:
                    continue  # own passes are counted above or come after the reload
                xk, xj = x[1], x[2]
                if own_f in reach[x]:
                    level += net(x, 1, (x, "U", i))
                    continue
                sigma, eps = binary(("sU", x, i)), binary(("eU", x, i))
                add(model.S[x] >= model.U[i] - M * sigma)
                add(model.U[i] >= E(x) - M * (1 - eps))
                if x[0] == "F":
                    level += a[xk] * sigma
                    if rec:
                        level -= (a[xk] - a_c[xk]) * product(
                            ("sUr", x, i), model.r[(xk, xj)], sigma, raises=False
                        )
                    if not copies_after(i, x):
                        add(sigma + binary(("nE", i, x)) >= model.o[i])  # same-instant allocations
                elif x[0] == "B":
                    if rec:
                        level += (a[xk] - a_c[xk]) * product(
                            ("sUr", x, i), model.r[(xk, xj)], sigma, raises=True
                        )
                        if not copies_after(i, x):
                            add(sigma + binary(("nE", i, x)) >= model.o[i])
                    level -= (a[xk] - a_w[xk]) * eps
                else:
                    level -= a_w[xk] * eps
            for i2 in items:
                if i2 == i:
                    continue
                k2 = i2[0]
                delta, nu = binary(("dU", i2, i)), binary(("nU", i2, i))
                add(delta <= model.o[i2])
                add(nu <= model.o[i2])
                add(model.U[i] >= model.D[i2] + instance.tau_d(k2) / u - Mc * (1 - delta))
                add(model.U[i2] >= model.U[i] - M * nu - M * (1 - model.o[i2]))
                if i2 < i:
                    add(nu + binary(("nU", i, i2)) >= model.o[i] + model.o[i2] - 1)
                level += a_o[k2] * (nu - delta)
            _at_most(model, level, cap + big * (1 - model.o[i]))


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
    modes = timed.modes

    def dur(x: PassKey) -> float:
        return instance.duration(x, modes.get(x[1:], KEEP))

    value: dict[tuple, float] = {("S", x): t for x, t in timed.start.items()}
    value |= {("D", i): t for i, t in timed.d2h.items()}
    value |= {("U", i): t for i, t in timed.h2d.items()}
    edges: list[tuple[tuple, tuple, float]] = []  # (a, b, w): b >= a + w
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
    order = sorted(value, key=value.__getitem__)
    out = dict.fromkeys(value, 0.0)
    by_source: dict[tuple, list[tuple[tuple, float]]] = {v: [] for v in value}
    for a, b, w in edges:
        by_source[a].append((b, w))
    for _ in range(100):
        changed = False
        for a in order:
            for b, w in by_source[a]:
                if out[b] < out[a] + w - 1e-12 * max(1.0, instance.time_scale):
                    out[b] = out[a] + w
                    changed = True
        if not changed:
            break
    else:
        return None
    return Timed(start={x: out[("S", x)] for x in timed.start}, modes=dict(modes),
                 d2h={i: out[("D", i)] for i in timed.d2h}, h2d={i: out[("U", i)] for i in timed.h2d})
