"""The dual bound of the ``scope`` problem (``--method bound``), valid at any size."""

from __future__ import annotations

import pyomo.environ as pyo

from coopt.problem import NoSolution, SolveOptions
from coopt.problems.scope import milp as scope_milp
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
