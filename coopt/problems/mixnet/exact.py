"""Circuit allocation (problem ``mixnet``) exactly: the M1 MILP of :mod:`.milp` region by region
(the ``exact`` method), and its LP relaxation (the ``bound``)."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pyomo.environ as pyo

from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination
from coopt.problems.mixnet import milp
from coopt.problems.mixnet.model import Instance, solution_of
from coopt.solvers.highs import solve_model


def exact(instance: Instance, options: SolveOptions, incumbent: Solution | None = None) -> ExactOutcome:
    """The M1 MILP of each region alone, the worst region's throughput.

    Exact: regions share no decision (ports and circuits are per region), so the maximum over all
    circuit sets of ``min_r theta_r`` is ``min_r`` of each region's own maximum. Every region's
    circuits are that region's optimum. The time limit is shared by the regions, in order. Each
    region's MILP starts from that region's circuits of ``incumbent`` where one is given."""
    start = time.perf_counter()
    circuits, bound, status = [], np.inf, "optimal"
    for region in range(instance.regions):
        part = instance.only_region(region)
        elapsed = time.perf_counter() - start
        left = None if options.time_limit is None else max(0.0, options.time_limit - elapsed)
        if left == 0.0:
            return ExactOutcome(None, Termination.LIMIT)
        model = milp.build(part, milp.region_incumbent(incumbent, region))
        result = solve_model(model, replace(options, time_limit=left))
        if result.objective is None:
            return ExactOutcome(None, result.termination)
        circuits.append(milp.circuits_from(model, part)[0])
        bound = min(bound, result.bound if result.bound is not None else np.inf)
        if result.termination is not Termination.OPTIMAL:
            status = Termination.LIMIT
    solution = solution_of(instance, circuits)
    return ExactOutcome(solution, status, float(bound) if np.isfinite(bound) else None)


def lp_bound(instance: Instance, options: SolveOptions) -> float:
    """The LP relaxation of the M1 MILP, region by region (``min_r`` of each region's relaxation,
    which is the relaxation of the whole model): an upper bound on the worst-case throughput at
    any size, without branching."""
    best = np.inf
    for region in range(instance.regions):
        model = milp.build(instance.only_region(region), limit=None)
        pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
        result = solve_model(model, options)
        if result.status != "optimal" or result.objective is None:
            raise RuntimeError(f"the LP relaxation of region {region} ended {result.status}")
        best = min(best, result.objective)
    return float(best)

