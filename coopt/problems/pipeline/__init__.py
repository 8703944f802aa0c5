"""Pipeline-parallel schedules under activation-memory limits (ChronosPipe / Zero Bubble).

The data model, event simulator and checker live in :mod:`.model`. The exact routes: Model S, the
constraint program of :mod:`.cpsat` (method ``exact`` on keep-only one-chunk instances on a time
grid, :mod:`.grid`), Model M, the constraint program of :mod:`.cpmodes` (method ``exact`` with
recompute, offload or chunks, where times and memory lie on grids), and Model P, the MILP of
:mod:`.milp` (method ``milp`` everywhere, and ``exact`` elsewhere); all start from the warm
start of :mod:`.warm` (the best checked heuristic or pattern schedule, :mod:`.pattern` with the
pair table of :mod:`.crossing`), which the runner runs and hands in. The order helpers shared
by the exact models are in :mod:`.order`, the dual bound in :mod:`.bound`, the one-stage window
relaxation (part of Model P's cut) in :mod:`.window`, the oracle (enumeration of every order, or
where copies are continuous the time-indexed Model T of :mod:`.timeindexed` on one chunk and the
order-encoded Model O of :mod:`.oracle_ti` on more) in :mod:`.brute`,
the schedules in :mod:`.heuristics` and the closed forms in :mod:`.closed_forms`. Studies no
registered method uses (Model N, the crossing and triple relaxations) live in
``research/pipeline``.
"""

from __future__ import annotations

from typing import Any

from coopt.problem import (
    ExactOutcome,
    Oracle,
    Problem,
    Solution,
    SolveOptions,
    exact_fields,
    grid_of,
    model_fields,
)
from coopt.problems.pipeline import bound, brute, cpmodes, cpsat, grid, heuristics, milp, model, plot, warm
from coopt.problems.pipeline.model import Instance
from coopt.solvers.cpsat import Watch


def objective_grid(instance: model.Instance) -> float | None:
    """The unit every duration a makespan is made of is a multiple of (passes, the recompute time
    of one layer, copies, the lag), or None; none for ``stage_span``. For fixed modes and a fixed
    weak order of the events, the rows are difference constraints with right-hand sides on that
    grid (the argument of :mod:`.grid`, copies and recompute included), whose least solution is on
    it: so is the optimal makespan."""
    if instance.objective != "makespan":
        return None
    return grid_of(grid.time_values(instance))


def _exact_model(instance: Instance) -> Any:
    """The module of the constraint program that is ``exact`` on ``instance``: Model S (keep-only,
    one chunk, a grid), Model M (recompute, offload or chunks; grids), else None (Model P)."""
    if cpsat.applies(instance):
        return cpsat
    if cpmodes.applies(instance):
        return cpmodes
    return None


def exact_applies(instance: Instance) -> bool:
    """``exact`` is a constraint program on ``instance`` (else it is Model P)."""
    return _exact_model(instance) is not None


def exact(instance: Instance, options: SolveOptions, watch: Watch | None = None,
          incumbent: Solution | None = None) -> ExactOutcome:
    """Model S or Model M (:func:`_exact_model`) from the runner's warm start ``incumbent``."""
    return _exact_model(instance).solve(instance, options, watch, incumbent)


PROBLEM = Problem(
    name="pipeline",
    summary="Order F/B/W passes of m micro-batches on p pipeline stages (with recompute/offload) to "
    "minimise the iteration time under per-device activation-memory caps",
    source="ChronosPipe/TPipe, arXiv 2503.03182; Zero Bubble, arXiv 2401.10241",
    sense="min",
    **model_fields(model),
    **exact_fields(milp),
    warm_start=warm.warm_start,
    exact=exact,
    exact_applies=exact_applies,
    heuristics=heuristics.HEURISTICS,
    sizes=(2, 3, 4),
    max_size=model.MAX_SIZE,
    size_doc="p stages (m = 2p micro-batches)",
    showcase="0-p3m4-cap6.toml",  # a cap where 1F1B, ZB and Chronos fit and GPipe does not
    oracle=Oracle(generate=brute.tiny, solve=brute.optimum),
    bound=bound.lower_bound,
    objective_name=lambda instance: (
        "per-stage span" if instance.objective == "stage_span" else "iteration time"
    ),
    objective_unit="s",
    objective_grid=objective_grid,
    plot=plot.draw,
)
