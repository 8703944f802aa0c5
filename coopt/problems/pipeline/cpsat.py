"""Model S: the constraint program for keep-only pipeline schedules, solved by CP-SAT.

Where it applies (:func:`applies`): keep-only (no recompute, no offload), one chunk per device,
the makespan objective, and every duration and the lag an integer multiple of one time unit ``q``
(:func:`coopt.problems.pipeline.grid.time_unit`; the generator's integer seconds). There it
is the ``exact`` method; everywhere else ``exact`` is Model P (:mod:`.milp`), which stays
registered as ``milp`` on every instance.

Why a constraint program
------------------------
Model P orders every same-device pair with a binary and big-M rows, and its LP relaxation
cannot see that a device runs one pass at a time: on the generator's size 16 seed 0 (p = 16,
m = 32) its root takes the whole 60 s and ends at 662.7 against an optimum of 677; cuts, windows
and relaxations (docs/notes/pipeline.md) moved the bound to 670 and no further. The
same disjunctive structure is what constraint programming with lazy clause generation is built
for (job-shop and RCPSP are its home ground): a NoOverlap propagator per device (edge finding,
not-first / not-last, energetic reasoning), precedences kept as difference constraints, and the
memory cap as a small disjunction per forward pass whose literals it learns clauses over. That
proves size 16 seed 0 optimal on one thread within 60 s (benchmarks in docs/pipeline.md), where
Model P does not. CP-SAT is Google OR-tools' solver; its ``OPTIMAL`` is
a complete search on integers (no tolerance), so on the grid below it is exact.

What the restriction to FIFO and the grid loses: nothing
-------------------------------------------------------
*FIFO per lane.* A lane is the m passes of one kind on one stage. On keep-only instances some
optimal schedule runs every lane in micro-batch order (Model P's (P2), proof in :mod:`.milp`).

*Integer starts.* Some optimal FIFO schedule starts every pass at a multiple of ``q`` (the
argument of :mod:`.grid`: the event order of a schedule, kept as a weak order, is a system of
difference constraints with right-hand sides on the grid, whose least solution is integral and
keeps every memory level). Times below are in units of ``q``.

*Horizon.* ``C <= H``, the makespan of the warm start (:mod:`.warm`, handed in by the runner as
``incumbent``, also CP-SAT's hint), or the serial bound without one: a schedule no longer than
it exists. ``C >= LB``, the dual bound of :mod:`.bound`. Every pass
lies in its window ``[r_x, H - q_x]`` (release times and tails of :mod:`.bound`, valid for every
FIFO schedule, as Model P's (P8)), and ``C >= S_x + q_x``.

Formulation
-----------
Integer starts ``S_x`` for every pass x = (kind, stage k, micro-batch j), durations ``d_x``,
lag ``c``; stage k runs on device k.

* (S1) precedence: ``S_x >= S_y + d_y + c_yx`` for each data-flow predecessor y (``c`` between
  devices only), and FIFO ``S_(X, k, j+1) >= S_(X, k, j) + d_(X, k)``;
* (S2) exclusivity: the passes of one device as fixed-size intervals in one NoOverlap;
* (S3) memory, per F(k, j): under FIFO the micro-batches that hold memory when F(k, j) starts
  are j' < j (later ones have not started): ``a`` until B(k, j') ends, then ``a_W`` until W(k,
  j') ends. If ``x`` of their B passes and ``y`` of their W passes have ended (B and W lanes are
  FIFO, so these are the first x and y), the level is ``L(x, y) = a (j - x) + a_W (x - y) + a``,
  which falls as x or y grows (``a >= a_W >= 0``). So F(k, j) fits exactly when for some option
  (x, y) with ``L(x, y) <= cap`` (the checker's room, cap and tolerance) B(k, x-1) and W(k, y-1)
  have ended by ``S_F(k, j)`` (releases first at equal times, the suite's tie rule). One
  literal per Pareto-minimal option, at least one true, each enforcing those two precedences.
  Fused backward: no W, B releases ``a`` (``a_W = 0`` and y = 0). Levels rise only at forward
  starts, so these are every check the checker makes; a device that cannot hold even one
  micro-batch gets no option (infeasible);
* (S4) ``C >= S_W(k, m-1) + d_W`` on every stage (the last pass of a stage is its last W, or
  its last B when fused), minimise C.

Model rows and checker violations (``model.check``), each way:

===============================================  ==============================================
model                                            checker
===============================================  ==============================================
one start per pass, in [0, H]                    ``completeness``, ``format``, ``time``
S1 data-flow precedence with lags                ``precedence``
S2 NoOverlap per device                          ``exclusivity`` (device compute lane)
S3 one fitting option per forward start          ``memory`` (level above the cap at any event)
(every F matched by its B and W)                 ``memory`` (device ends holding memory)
S4 C >= every end                                ``objective`` recomputed from the starts
===============================================  ==============================================

FIFO, the grid, the horizon, the windows and the bound only exclude schedules the proofs above
show are not needed; the checker has no counterpart for them, by design.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination
from coopt.problems.pipeline.bound import lower_bound, releases, tails
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.model import (
    Instance,
    PassKey,
    Timed,
    parse,
    serial_bound,
    to_solution,
)
from coopt.solvers import cpsat as cp_route
from coopt.solvers.cpsat import Watch

#: Slack when a bound in seconds is turned into grid units (the values are sums of grid durations).
_EPS = 1e-6


def applies(instance: Instance) -> bool:
    """Model S is exact for ``instance`` (module docstring): keep-only, one chunk, makespan, a grid."""
    return (
        not instance.allow_recompute
        and not instance.allow_offload
        and instance.chunks == 1
        and instance.objective == "makespan"
        and all(instance.a_w(k) <= instance.a(k) for k in range(instance.stages))
        and time_unit(instance) is not None
    )


def memory_options(instance: Instance, k: int, j: int) -> list[tuple[int, int]]:
    """The Pareto-minimal (x, y) of (S3): F(k, j) fits once the first x B passes and the first
    y W passes of stage k have ended. ``[(0, 0)]`` when it always fits; ``[]`` when it never does."""
    room = instance.cap_room(instance.device(k))
    a, a_w = instance.a(k), instance.a_w(k)
    options: list[tuple[int, int]] = []
    for x in range(j + 1):  # a larger x needs no more W passes, so y only falls along x
        y = next((y for y in range(x + 1) if a * (j - x) + a_w * (x - y) + a <= room), None)
        if y is None or (options and options[-1][1] <= y):
            continue  # no fit with x B passes, or dominated by a smaller x
        options.append((x, y))
    return options


@dataclass
class Built:
    """The CP-SAT model with its start variables, makespan and the grid it lives on."""

    model: Any
    start: dict[PassKey, Any]
    makespan: Any
    q: float
    horizon: int
    floor: int
    infeasible: bool = False


def build(instance: Instance, upper: float, floor: float = 0.0, hint: Solution | None = None,
          windows: bool = True) -> Built:
    """Model S with ``C <= upper`` and ``C >= floor`` (seconds), the windows of :mod:`.bound` where
    ``windows``, and ``hint`` (a FIFO schedule on the grid) as CP-SAT's hint."""
    from ortools.sat.python import cp_model

    q = time_unit(instance)
    assert q is not None and applies(instance), "Model S applies to keep-only one-chunk grid instances"
    H = math.floor(upper / q + _EPS)
    LB = min(H, max(0, math.ceil(floor / q - _EPS)))
    units = {x: round(instance.duration(x) / q) for x in instance.passes()}
    release, tail = _windows(instance, windows)
    model = cp_model.CpModel()
    start: dict[PassKey, Any] = {}
    for x in instance.passes():
        lo = math.ceil(release[x] / q - _EPS) if x in release else 0
        hi = H - (math.ceil(tail[x] / q - _EPS) if x in tail else units[x])
        if lo > hi:
            return Built(model, start, None, q, H, LB, infeasible=True)
        start[x] = model.NewIntVar(lo, hi, f"S_{x[0]}_{x[1]}_{x[2]}")
    C = model.NewIntVar(LB, H, "C")
    for k in range(instance.stages):
        _stage_rows(instance, model, start, units, C, k)
        if instance.memory_cap_bytes is not None and not _memory_rows(instance, model, start, units, k):
            return Built(model, start, C, q, H, LB, infeasible=True)
    lag = round(instance.lag_s / q)
    for x in instance.passes():  # (S1) data flow
        for y, c in instance.predecessors(x):
            model.Add(start[x] >= start[y] + units[y] + (lag if c else 0))
        if x in tail:  # the tails: C >= S_x + q_x
            model.Add(start[x] + math.ceil(tail[x] / q - _EPS) <= C)
    model.Minimize(C)
    if hint is not None:
        _hint(instance, model, start, C, q, hint)
    return Built(model, start, C, q, H, LB)


def _windows(instance: Instance, windows: bool) -> tuple[dict[PassKey, float], dict[PassKey, float]]:
    """The release times and tails of :mod:`.bound` (seconds) where ``windows`` and all finite."""
    release = releases(instance) if windows else {}
    tail = tails(instance) if windows else {}
    if any(math.isinf(v) for v in release.values()) or any(math.isinf(v) for v in tail.values()):
        return {}, {}
    return release, tail


def _stage_rows(instance: Instance, model: Any, start: dict[PassKey, Any], units: dict[PassKey, int],
                C: Any, k: int) -> None:
    """(S2) stage k's passes in one NoOverlap, (S1) FIFO per lane, (S4) C after its last pass."""
    m, kinds = instance.microbatches, instance.kinds
    intervals = [model.NewFixedSizeIntervalVar(start[(x, k, j)], units[(x, k, j)], "")
                 for x in kinds for j in range(m)]
    model.AddNoOverlap(intervals)  # (S2)
    for x in kinds:
        for j in range(m - 1):  # (S1) FIFO
            model.Add(start[(x, k, j + 1)] >= start[(x, k, j)] + units[(x, k, j)])
    last = (kinds[-1], k, m - 1)
    model.Add(start[last] + units[last] <= C)  # (S4)


def _memory_rows(instance: Instance, model: Any, start: dict[PassKey, Any], units: dict[PassKey, int],
                 k: int) -> bool:
    """(S3) one fitting option per forward start of stage k; False when some forward never fits."""
    for j in range(instance.microbatches):
        options = memory_options(instance, k, j)
        if not options:
            return False
        if options == [(0, 0)]:
            continue
        chosen = []
        for x, y in options:
            literal = model.NewBoolVar(f"mem_{k}_{j}_{x}_{y}")
            chosen.append(literal)
            if x:
                b = ("B", k, x - 1)
                model.Add(start[("F", k, j)] >= start[b] + units[b]).OnlyEnforceIf(literal)
            if y:
                w = ("W", k, y - 1)
                model.Add(start[("F", k, j)] >= start[w] + units[w]).OnlyEnforceIf(literal)
        model.AddBoolOr(chosen)
    return True


def _hint(instance: Instance, model: Any, start: dict[PassKey, Any], C: Any, q: float,
          hint: Solution) -> None:
    """A FIFO grid schedule as CP-SAT's hint (ignored where it does not parse)."""
    timed, bad = parse(instance, hint)
    if timed is not None and not bad:
        for x, var in start.items():
            model.AddHint(var, round(timed.start[x] / q))
        model.AddHint(C, round(timed.makespan(instance) / q))


def extract(instance: Instance, built: Built, values: dict[PassKey, int]) -> Solution:
    """The schedule of grid starts ``values``, in seconds."""
    timed = Timed(start={x: v * built.q for x, v in values.items()}, modes={}, d2h={}, h2d={})
    return to_solution(instance, timed)


def solve(instance: Instance, options: SolveOptions, watch: Watch | None = None,
          incumbent: Solution | None = None) -> ExactOutcome:
    """Model S from the warm start ``incumbent`` (a checked FIFO schedule, the problem's
    ``warm_start``: horizon and hint; without it the serial bound is the horizon) and the dual
    bound, solved by CP-SAT (:func:`search`). A Ctrl-C (:data:`coopt.limits.STOP`) ends the search
    with its incumbent, status ``interrupted``."""
    # probing: 8 s against 16 s on size 16 seed 0, 12.8 against 10.1 on size 12 seed 0; the
    # larger instance decides (docs/notes/pipeline.md)
    return search("Model S", instance, options, watch, incumbent, build,
                  lambda built, solver: extract(instance, built,
                                                {x: solver.Value(v) for x, v in built.start.items()}),
                  parameters={"cp_model_probing_level": 0})


#: Share of the time limit :func:`search` may spend probing at the dual bound (``probe`` on).
PROBE_SHARE = 0.15
#: Probe budget without a time limit, seconds.
PROBE_SECONDS = 10.0


def _probe(instance: Instance, options: SolveOptions, horizon: int, floor: float, warm: Solution | None,
           build_model: Callable[..., Any], parameters: dict[str, Any] | None,
           budget: float) -> tuple[Any, Any, float, float, int]:
    """Ask the model for a schedule no longer than the bound, the least grid value not yet ruled
    out and below ``horizon`` (grid units), for at most ``budget`` seconds in all, builds included:
    a schedule found is optimal (nothing shorter is possible), and a proof that none exists raises
    the bound by one grid unit, the next probe asks again. Returns (built model and solver of the
    schedule found, or None twice; the bound in seconds; solve seconds; branches); the time the
    probes took to build is the caller's wall time less the solve seconds."""
    t0 = time.perf_counter()
    solve_s = 0.0
    branches = 0
    while time.perf_counter() - t0 < budget:
        probe = build_model(instance, floor, floor, warm)
        if probe.floor >= horizon:
            break  # the next grid value is the horizon's: the search from the warm start asks it
        if not probe.infeasible:  # (infeasible: some pass has no room in its window)
            left = budget - (time.perf_counter() - t0)
            result = cp_route.solve(probe.model, replace(options, time_limit=left),
                                    scale=probe.q, parameters=parameters)
            solve_s += result.solve
            branches += result.branches
            if result.objective is not None:
                return probe, result.solver, floor, solve_s, branches
            if result.termination is not Termination.INFEASIBLE:
                break
        floor = (probe.floor + 1) * probe.q  # no schedule as short as the probe: one unit more
    return None, None, floor, solve_s, branches


def search(name: str, instance: Instance, options: SolveOptions, watch: Watch | None,
           incumbent: Solution | None, build_model: Callable[..., Any],
           extract_solution: Callable[[Any, Any], Solution],
           parameters: dict[str, Any] | None = None, probe: bool = False) -> ExactOutcome:
    """The search both pipeline constraint programs (Model S here, Model M of :mod:`.cpmodes`)
    run: ``build_model(instance, upper, floor, hint)`` (a model with ``infeasible``, ``floor``,
    ``horizon``, ``q`` and ``model``) between the warm start's makespan (else the serial bound) and
    :func:`.bound.lower_bound`, solved by CP-SAT on ``options.threads`` workers within what is left
    of ``options.time_limit``; ``extract_solution(built, solver)`` reads a better schedule back.
    ``watch(primal, dual)`` hears every incumbent and bound (seconds). The warm start is returned
    as the optimum where the bound already meets it.

    With ``probe``, :func:`_probe` first asks for a schedule no longer than the bound, for at most
    :data:`PROBE_SHARE` of the time limit: the model with ``C <= LB`` has the bound's tight
    windows, so where the bound is the optimum CP-SAT often finds it at once (the generator's
    recompute p = 6 seed 2: 0.3 s, where the search from the warm start takes minutes). Both
    outcomes are proofs on the grid, which loses nothing (module docstrings): a schedule found is
    optimal; "none exists" moves the bound up one unit."""
    t0 = time.perf_counter()
    warm = incumbent
    value = serial_bound(instance) if warm is None else float(warm["objective"])
    floor = lower_bound(instance)
    built = None if math.isinf(floor) else build_model(instance, value, floor, warm)  # inf: no schedule
    t_build = time.perf_counter() - t0
    if built is None or built.infeasible:
        return cp_route.exact_outcome(None, Termination.INFEASIBLE, None, t_build, 0.0)
    if warm is not None and built.floor >= built.horizon:  # the bound meets the heuristic
        return cp_route.exact_outcome(warm, Termination.OPTIMAL, value, t_build, 0.0)
    if watch is not None:
        watch(value if warm is not None else None, built.floor * built.q)
    probe_s, probe_branches = 0.0, 0
    if probe and warm is not None:
        limit = PROBE_SECONDS if options.time_limit is None else PROBE_SHARE * options.time_limit
        found, solver, raised, probe_s, probe_branches = _probe(
            instance, options, built.horizon, built.floor * built.q, warm, build_model, parameters, limit)
        if found is not None:
            solution = extract_solution(found, solver)
            return cp_route.exact_outcome(solution, Termination.OPTIMAL, float(solution["objective"]),
                                          time.perf_counter() - t0 - probe_s, probe_s, probe_branches)
        if raised > built.floor * built.q + _EPS * built.q:
            built = build_model(instance, value, raised, warm)
            if watch is not None:
                watch(value, built.floor * built.q)
            if built.floor >= built.horizon:  # every shorter grid value ruled out: the warm start
                return cp_route.exact_outcome(warm, Termination.OPTIMAL, value,
                                              time.perf_counter() - t0 - probe_s, probe_s, probe_branches)
    t_build = time.perf_counter() - t0 - probe_s  # the probes' builds count as building
    left = None if options.time_limit is None else options.time_limit - (time.perf_counter() - t0)
    result = cp_route.solve(built.model, replace(options, time_limit=left), scale=built.q, watch=watch,
                            parameters=parameters)
    solver = result.solver
    solution = warm
    if result.objective is not None and (warm is None or result.objective < value - _EPS * built.q):
        solution = extract_solution(built, solver)
    spent = (t_build, result.solve + probe_s, result.branches + probe_branches)
    if result.termination is Termination.OPTIMAL:  # within relative_gap_limit: the bound says how close
        return cp_route.exact_outcome(solution, Termination.OPTIMAL, result.bound, *spent)
    if result.termination is Termination.INFEASIBLE:
        # C <= H admits every schedule some optimum dominates: with a heuristic schedule inside
        # that cannot happen; without one, H is the serial bound and no schedule exists
        if warm is not None:
            raise RuntimeError(f"{name} is infeasible although a heuristic schedule fits its horizon")
        return cp_route.exact_outcome(None, Termination.INFEASIBLE, None, *spent)
    bound = max(built.floor, solver.BestObjectiveBound()) * built.q
    return cp_route.exact_outcome(solution, result.termination, bound, *spent)
