"""The exact polish of a reconfiguration plan (problem ``mixnet_plan``): each segment a plan keeps is
handed to the outer-approximation master of :mod:`.plan_bound` (the segment's exact value ``C(a, b)``
by secant cuts, Duran and Grossmann 1986), started from the plan's own circuits, within a time budget;
a segment takes the master's circuits where they are faster. The segmentation is kept.

Guarantee: the plan returned is never slower than the plan handed in (a segment changes only to
circuits whose exact time, recomputed by the closed form, is smaller) and every circuit set it holds
is integer, symmetric and within the ports. A segment whose master is proven holds that segment's
optimum. Cost: the per-layer LP floors (one LP per distinct matrix), one continuous phase per
segment, then master MILPs, one segment at a time to its proof, until the budget runs out.
"""

from __future__ import annotations

import time

import numpy as np

from coopt.problem import Solution, SolveOptions
from coopt.problems.mixnet.plan_bound import _Master, _Terms
from coopt.problems.mixnet.plan_exact import layer_lower_bounds
from coopt.problems.mixnet.plan_heuristics import plan_time_of, segment_dp_restart
from coopt.problems.mixnet.plan_model import Instance, solution_of

#: Seconds (wall clock) the masters of :func:`segment_dp_exact` may take in all.
POLISH_SECONDS = 20.0


def _fits(instance: Instance, x: np.ndarray) -> bool:
    """Integer, symmetric, no self-circuit, at most ``alpha`` circuits per server."""
    return bool(x.shape == (instance.servers,) * 2 and np.array_equal(x, x.T) and (x >= 0).all()
                and not np.diag(x).any() and (x.sum(axis=1) <= instance.fabric.alpha).all())


def exact_polish(instance: Instance, plan: Solution, seconds: float) -> Solution:
    """``plan`` with each kept segment's circuits replaced by its outer-approximation master's best
    (module docstring): every master's continuous phase, then one master at a time until proven,
    the shortest segment first, for ``seconds`` in all."""
    deadline = time.perf_counter() + seconds
    terms = _Terms(instance)
    floors = [value / terms.tau for value in layer_lower_bounds(instance, SolveOptions(gap=1e-9))]
    starts = [segment["first_layer"] for segment in plan["segments"]]
    ends = [*starts[1:], len(instance.layers)]
    circuits = [np.array(segment["circuits"], dtype=int) for segment in plan["segments"]]
    masters = []
    for first, end, x in zip(starts, ends, circuits, strict=True):
        master = _Master(terms, first, end - 1, floors)
        master.cut(x)  # the plan's circuits are a point of the cut pool from the start
        master.upper, master.best = plan_time_of(instance, first, end, x), x
        masters.append(master)
    for master in masters:  # the continuous phase: each segment's first lower bound
        master.refine(deadline)
    # the shortest segment first (its proof is the cheapest), the widest relative gap first among equals
    for master in sorted(masters, key=lambda m: (len(m.layers), m.lower / m.upper)):
        while not master.proven and time.perf_counter() < deadline:
            master.refine(deadline)
    for s, (master, first, end) in enumerate(zip(masters, starts, ends, strict=True)):
        x = master.best
        if x is not None and _fits(instance, x) and (
                plan_time_of(instance, first, end, x) < plan_time_of(instance, first, end, circuits[s])):
            circuits[s] = x
    polished = solution_of(instance, starts, circuits)
    return polished if polished["objective"] < plan["objective"] else plan


def segment_dp_exact(instance: Instance, seed: int = 0) -> Solution:
    """:func:`plan_heuristics.segment_dp_restart`, then :func:`exact_polish` of its kept segments
    for :data:`POLISH_SECONDS`.

    Guarantee: a valid plan, never slower than :func:`segment_dp_restart`'s; a kept segment whose
    master is proven within the budget holds that segment's optimum (the segmentation stays the
    restart's). Cost: :func:`segment_dp_restart` plus at most :data:`POLISH_SECONDS` of LP and
    MILP solves (wall clock, so on a loaded machine it reaches fewer rounds). Source: ours (the
    exact segment value of :mod:`.plan_bound` used as a large-neighbourhood step)."""
    return exact_polish(instance, segment_dp_restart(instance), POLISH_SECONDS)
