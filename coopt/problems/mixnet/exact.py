"""Circuit allocation (problem ``mixnet``) exactly: the M1 MILP of :mod:`.milp` region by region
(the ``exact`` method), its LP relaxation (:func:`lp_bound`), and the registered ``bound``
(:func:`optimum_or_lp`): the exact optimum where the MILPs end within the time limit, else the
tighter of the LP relaxation and the MILPs' dual bounds."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pyomo.environ as pyo

from coopt.problem import BoundOutcome, ExactOutcome, Solution, SolveOptions, Termination
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


def optimum_or_lp(instance: Instance, options: SolveOptions,
                  incumbent: Solution | None = None) -> BoundOutcome | float:
    """The registered dual bound (an upper bound on the worst-case throughput): :func:`lp_bound`
    first, then :func:`exact` in what is left of the time limit, started from ``incumbent`` (the
    problem's warm start, handed in by the runner). Where every region's MILP ends optimal, the
    optimum is the bound, the tightest there is; where the time runs out, the smaller of the LP
    relaxation and the MILPs' own dual bound (both are upper bounds, so their minimum is). Never
    weaker than :func:`lp_bound`. At the papers' scale (EP32 and EP64 regions of the measured
    matrices) the MILPs end in 1-4 s on one core, where the LP relaxation sits 5-12 % above the
    optimum (docs/mixnet.md, "Certified gap at the papers' scale"). Returns a
    :class:`coopt.problem.BoundOutcome` marked ``optimal`` when every region's MILP ended optimal
    (the value is then the optimum, within the MILP gap), else the bare number."""
    start = time.perf_counter()
    relaxed = lp_bound(instance, options)
    if options.time_limit is None:
        left = options
    else:
        remaining = options.time_limit - (time.perf_counter() - start)
        if remaining <= 0:
            return relaxed
        left = replace(options, time_limit=remaining)
    outcome = exact(instance, left, incumbent)
    if outcome.bound is None:
        return relaxed
    value = float(min(relaxed, outcome.bound))
    if outcome.termination is Termination.OPTIMAL and outcome.solution is not None:
        return BoundOutcome(value, optimal=True, source="M1 MILP per region")
    return value
