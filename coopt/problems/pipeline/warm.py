"""The warm start of the pipeline's exact routes (``Problem.warm_start``): the best checked
heuristic or pattern schedule, in the form the exact models admit.

The runner (:mod:`coopt.run`) runs :func:`warm_start` before an exact route, checks its schedule
and hands it to Model P (:func:`.milp.build`, horizon, first incumbent and, where the dual bound
meets it, its proof) and to Model S (:func:`.cpsat.solve`, horizon and hint). No exact model
imports this module: building a model never runs a heuristic.

Guarantee: the schedule returned is accepted by the checker and is no longer than any heuristic's
(``portfolio`` and ``cp_polish`` aside: the first only returns the best of the others, the second is
a budgeted CP-SAT search that the exact route's own search replaces), so its makespan is a valid
horizon for every exact model.
"""

from __future__ import annotations

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.bound import lower_bound
from coopt.problems.pipeline.heuristics import HEURISTICS, WARM_SKIP
from coopt.problems.pipeline.model import Instance, check, serial_bound
from coopt.problems.pipeline.order import fifo_is_lossless, fifo_relabel, first_lane_relabel
from coopt.problems.pipeline.pattern import pattern_incumbent


def incumbent(instance: Instance) -> tuple[float, Solution | None]:
    """The best heuristic schedule that the checker accepts, with its objective, or the serial
    bound and no schedule: every heuristic but those in ``WARM_SKIP`` (``portfolio``, which only
    returns the best of the others, and ``cp_polish``); ``local_search`` is taken, it is the one
    that searches beyond them; then, where
    the best of them is above the dual bound, the pattern schedules of :mod:`.pattern` (greedy
    crossings and the pair table's). The schedule is relabelled into the form the exact models
    admit: FIFO on keep-only instances (:func:`.order.fifo_relabel`), else the F(0, j) chain
    (:func:`.order.first_lane_relabel`); a relabelling the checker rejects is not used."""
    best: tuple[float, Solution | None] = (serial_bound(instance), None)
    for name, fn in HEURISTICS.items():
        if name in WARM_SKIP:
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


def warm_start(instance: Instance) -> Solution | None:
    """The schedule of :func:`incumbent`, or None where no heuristic schedule fits."""
    return incumbent(instance)[1]
