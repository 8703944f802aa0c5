"""``cp_polish`` (ours): the keep-only restriction of an instance with memory modes, searched by
CP-SAT on Model S from the best list schedule, for a fixed deterministic budget.

Where recompute or offload is allowed, ``exact`` is Model M (:mod:`..cpmodes`), whose mode
choices make it heavy at the papers' sizes (p = 8, m = 32: 768 passes). Keeping every item is
always allowed, so every keep-only schedule the checker accepts on the restriction (recompute and
offload switched off, everything else unchanged) is accepted on the instance, with the same
makespan. On one chunk per device and a time grid that restriction is what Model S
(:mod:`..cpsat`) is exact for; it is started from the best of ``guarded_list`` and the
portfolio's cheap schedules (relabelled FIFO, as Model S admits), which is also its horizon and
hint, and runs for ``POLISH_BUDGET`` units of CP-SAT's deterministic time on one worker. Where the
cap needs recompute or offload the restriction loses to a search on modes, so ``local_search``'s
schedule is returned where it is better.

Guarantee: never worse than its start (returned when the search does not beat it, or meets the
dual bound of :func:`..bound.lower_bound` already) nor than ``local_search``; the schedule is
checked against the instance before it is returned; deterministic (one worker, a deterministic
budget; ``POLISH_WALL_S`` is a wall-clock guard for a machine far slower than the one the budget
was set on). Its Model S schedule uses no mode, so only ``local_search`` may bring one. Cost: the
starts and ``local_search`` (list schedules of O(n p), at most 2,000 moves of O(n)), Model S's
build (O(n m) rows for the memory options) and the budget (7-30 s of wall time at p = 8, m = 32
on the shared 2-core machine). Source: Model S of this package, a CP-SAT model of the job-shop
kind with the cap as a disjunction per forward.
"""

from __future__ import annotations

from dataclasses import replace

from coopt.problem import NoSolution, Solution, SolveOptions
from coopt.problems.pipeline import cpsat
from coopt.problems.pipeline.bound import lower_bound
from coopt.problems.pipeline.heuristics.combined import PORTFOLIO, _best_of
from coopt.problems.pipeline.heuristics.guarded import guarded_list
from coopt.problems.pipeline.heuristics.search import local_search
from coopt.problems.pipeline.heuristics.timing import _finish
from coopt.problems.pipeline.model import Instance, Timed, check, parse
from coopt.problems.pipeline.order import fifo_relabel
from coopt.solvers import cpsat as cp_route

#: CP-SAT deterministic time (its own work unit, about a second of one core) the search may spend.
POLISH_BUDGET = 6.0
#: Wall-clock guard (s); only a machine far slower than the budget assumes reaches it.
POLISH_WALL_S = 40.0


def keep_only(instance: Instance) -> Instance:
    """The instance with recompute and offload switched off (a restriction: keeping is always
    allowed)."""
    return replace(
        instance,
        allow_recompute=False,
        recompute_s=(),
        checkpoint_bytes=(),
        recompute_layers=(),
        allow_offload=False,
        offload_bytes=(),
        d2h_s=(),
        h2d_s=(),
    )


def polish_applies(instance: Instance) -> bool:
    """Recompute or offload is allowed (elsewhere ``exact`` is Model S itself) and Model S applies to
    the keep-only restriction (one chunk per device, makespan, a time grid)."""
    return (instance.allow_recompute or instance.allow_offload) and cpsat.applies(keep_only(instance))


def _start(base: Instance) -> Solution | None:
    """The best of ``guarded_list`` and the portfolio's schedules on the keep-only ``base``, FIFO."""
    found = _best_of(base, PORTFOLIO)
    try:
        guarded = guarded_list(base)
    except NoSolution:
        guarded = None
    if guarded is not None and (found is None or guarded["objective"] < found["objective"] - 1e-12):
        found = guarded
    if found is None:
        return None
    relabelled = fifo_relabel(base, found)
    return relabelled if not check(base, relabelled) else None


def cp_polish(instance: Instance, seed: int = 0) -> Solution:
    """Model S on the keep-only restriction from the best list schedule (module docstring)."""
    if not polish_applies(instance):
        raise NoSolution("cp_polish: needs recompute or offload allowed, one chunk per device, a time grid")
    base = keep_only(instance)
    start = _start(base)
    best = None if start is None else _polished(instance, base, start, seed)
    try:  # where the cap needs modes, the keep-only restriction loses to the search on modes
        searched = local_search(instance, seed)
    except NoSolution:
        searched = None
    better = searched is not None and (best is None or searched["objective"] < best["objective"] * (1 - 1e-9))
    if better and not check(instance, searched):
        best = searched
    if best is None:
        raise NoSolution("cp_polish: no keep-only list schedule fits the caps, and local_search finds none")
    return {**best, "schedule": "cp_polish"}


def _polished(instance: Instance, base: Instance, start: Solution, seed: int) -> Solution | None:
    """Model S on the keep-only ``base`` from ``start`` (FIFO, checked on ``base``) for the budget:
    the better of the two, as a schedule of ``instance`` (None where it does not read as one)."""
    value = float(start["objective"])
    timed, _ = parse(instance, start)  # a keep-only schedule reads the same on the instance
    best = _finish(instance, timed)
    if value > lower_bound(instance) * (1 + 1e-9):
        built = cpsat.build(base, value, lower_bound(base), start)
        if not built.infeasible:
            options = SolveOptions(time_limit=POLISH_WALL_S, gap=0.0, threads=1, seed=seed)
            parameters = {"cp_model_probing_level": 0, "max_deterministic_time": POLISH_BUDGET}
            result = cp_route.solve(built.model, options, scale=built.q, parameters=parameters)
            if result.objective is not None and result.objective < value * (1 - 1e-9):
                starts = {x: result.solver.Value(v) * built.q for x, v in built.start.items()}
                found = _finish(instance, Timed(start=starts, modes={}, d2h={}, h2d={}))
                if not check(instance, found):
                    best = found
    return None if check(instance, best) else best
