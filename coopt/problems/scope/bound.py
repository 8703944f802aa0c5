"""The dual bounds of the ``scope`` problem, valid at any size: the relaxation :func:`bound` (segment
floors and the MILP's LP relaxation), and the registered ``--method bound``,
:func:`optimum_or_relaxation`, which is the exact optimum wherever the DP finishes within the time
limit (the papers' 64 chiplets included) and the relaxation elsewhere."""

from __future__ import annotations

import math
import time

import pyomo.environ as pyo

from coopt.limits import timed_out
from coopt.problem import BoundOutcome, NoSolution, SolveOptions
from coopt.problems.scope import milp as scope_milp
from coopt.problems.scope.dp import dynamic_program
from coopt.problems.scope.heuristics import search
from coopt.problems.scope.model import Instance, segment_candidate
from coopt.solvers.highs import solve_model

#: Largest estimated MILP (option columns) whose LP relaxation :func:`bound` solves.
LP_BOUND_COLUMNS = 60_000


def bound(inst: Instance, options: SolveOptions) -> float:
    """A dual bound on the batch time at any size: the larger of the segment floors' shortest path
    (:func:`coopt.problems.scope.milp.covering_floors`: area and heaviest-layer bounds on every
    bottleneck, the fewest clusters, exact weight loads and spills; O(L^2)) and, where the MILP has
    at most :data:`LP_BOUND_COLUMNS` option columns, its LP relaxation. Infinite when no
    segmentation exists at all (then nothing is feasible)."""
    L = inst.n_layers
    segments = [(i, j) for i in range(L) for j in range(i, L) if segment_candidate(inst, i, j)]
    value = scope_milp.covering_floors(inst, segments)[0][L]
    columns = sum(min(inst.chiplets, j - i + 1) * (j - i + 1) * min(inst.max_cluster_layers, j - i + 1)
                  for i, j in segments)
    if columns * min(inst.chiplets, 8) <= LP_BOUND_COLUMNS:
        try:  # the search's value prunes the MILP as in the exact route
            start = search(inst)
        except NoSolution:
            start = None
        model = scope_milp.build(inst, incumbent=start)
        pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
        relaxed = solve_model(model, options)
        if relaxed.status == "optimal" and relaxed.objective is not None:
            value = max(value, relaxed.objective)
    return value


def optimum_or_relaxation(inst: Instance, options: SolveOptions) -> BoundOutcome | float:
    """The registered dual bound: :func:`bound` (the relaxation, about a second at the papers' size),
    then the exact DP (:func:`coopt.problems.scope.dp.dynamic_program`) in what is left of the time
    limit. When the DP finishes its optimum is the bound, the tightest one there is (no feasible
    mapping is faster, and one mapping reaches it; the relaxation's LP may sit a float's noise above
    it); when it does not, the relaxation stands. On ``2-resnet152-m16 / m36 / m64`` the DP ends in
    about 6 / 14 / 24 s on one core (docs/scope.md, "Certified gap at the papers' scale"), where
    the relaxation sits 7-15 % below the optimum. Infinite when no segmentation exists. The DP's
    optimum comes as a :class:`coopt.problem.BoundOutcome` marked ``optimal``; the relaxation as
    the bare number."""
    start = time.perf_counter()
    relaxed = bound(inst, options)
    if math.isinf(relaxed):
        return relaxed
    left = None if options.time_limit is None else options.time_limit - (time.perf_counter() - start)
    if left is not None and left <= 0:
        return relaxed
    stopped, solution = timed_out(lambda: dynamic_program(inst), left, "the scope DP (bound)")
    if stopped:
        return relaxed
    if solution is None:
        return math.inf  # the DP covers every mapping: none exists
    return BoundOutcome(float(solution["objective"]), optimal=True, source="the exact DP")
