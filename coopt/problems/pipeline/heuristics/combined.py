"""The named schedules as one table (:data:`SCHEDULES`), the best of a list of them
(:func:`_best_of`) and the portfolio of the cheap ones (:func:`portfolio`).

Guarantee: the portfolio is never worse than any of its members that applies and fits.
"""

from __future__ import annotations

from collections.abc import Iterable

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.blocks import v_auto
from coopt.problems.pipeline.heuristics.classic import (
    gpipe,
    interleaved_one_f_one_b,
    one_f_one_b,
    one_f_one_b_split,
    zb_h1,
)
from coopt.problems.pipeline.heuristics.lifespan import chronos_offload, chronos_recomp
from coopt.problems.pipeline.heuristics.list_schedule import chronos_pipe, zb_h2
from coopt.problems.pipeline.heuristics.megatron import megatron_block, megatron_full, megatron_selective
from coopt.problems.pipeline.heuristics.offload import pipeoffload
from coopt.problems.pipeline.heuristics.v_memory import v_half, v_min
from coopt.problems.pipeline.heuristics.zero_bubble import zb_auto, zb_v
from coopt.problems.pipeline.model import (
    Instance,
)

#: Every schedule by its method name, but the two that combine others (``portfolio``,
#: ``local_search``), in the order of the registry.
SCHEDULES = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved_1f1b": interleaved_one_f_one_b,
    "zb_h1": zb_h1,
    "zb_h2": zb_h2,
    "zb_auto": zb_auto,
    "1f1b_split": one_f_one_b_split,
    "zb_v": zb_v,
    "v_half": v_half,
    "v_min": v_min,
    "v_auto": v_auto,
    "chronos_pipe": chronos_pipe,
    "chronos_recomp": chronos_recomp,
    "chronos_offload": chronos_offload,
    "megatron_full": megatron_full,
    "pipeoffload": pipeoffload,
    "megatron_selective": megatron_selective,
    "megatron_block": megatron_block,
}

#: The cheap schedules ``portfolio`` runs (each at most O(n p v), V-Half / V-Min O(n^2 m)).
PORTFOLIO = (
    "1f1b", "1f1b_split", "zb_h1", "zb_h2", "zb_v", "v_half", "v_min", "interleaved_1f1b", "gpipe",
    "chronos_pipe",
)


def portfolio(instance: Instance, seed: int = 0) -> Solution:
    """The best, under the instance's objective, of the cheap schedules in ``PORTFOLIO`` that
    apply and fit the cap (the best of ZB-H1 and ZB-H2 already closes ZB-H2's 7 % worst
    case on the exact family).

    Guarantee: never worse than any member. Running time: the sum of the members'.
    """
    best = _best_of(instance, PORTFOLIO)
    if best is None:
        raise NoSolution("portfolio: no cheap schedule applies and fits the cap")
    return best


def _best_of(instance: Instance, names: Iterable[str]) -> Solution | None:
    """The best solution, under the instance's objective, of the named schedules that apply and
    fit (the first of equal ones), marked with its schedule's name; None when none does."""
    best: Solution | None = None
    for name in names:
        try:
            solution = SCHEDULES[name](instance)
        except NoSolution:
            continue
        if best is None or solution["objective"] < best["objective"] - 1e-12:
            best = {**solution, "schedule": name}
    return best
