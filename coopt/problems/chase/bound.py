"""Dual bounds of the CHASE problems, valid at any size (``--method bound``)."""

from __future__ import annotations

import math
from typing import Any

import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.problems.chase import milp
from coopt.problems.chase.energetic import energetic_bound
from coopt.problems.chase.mapping import local_search
from coopt.problems.chase.model import Instance
from coopt.problems.chase.schedule import critical_path_bound, reachability
from coopt.solvers.highs import solve_model

#: Up to this many incomparable task pairs the bound is the LP relaxation of the whole MILP;
#: beyond, of the MILP without its order variables (the disjunctions), which scales linearly.
FULL_LP_PAIRS = 20_000


def incomparable_pairs(inst: Instance) -> int:
    tab = inst.tables
    reach = reachability(tab)
    return sum(1 for u in range(tab.n) for v in range(u + 1, tab.n)
               if not (reach[u] >> v) & 1 and not (reach[v] >> u) & 1)


def mapping_bound(inst: Instance, options: SolveOptions) -> float:
    """A lower bound on the optimal contention-free makespan: the largest of the critical-path
    bound (heads and tails, :func:`coopt.problems.chase.schedule.critical_path_bound`), the LP
    relaxation of the MILP with its cuts (heads, tails, device loads, horizon, domain reduction
    from the local-search incumbent; the LP keeps the disjunctive rows up to ``FULL_LP_PAIRS``
    incomparable pairs, then it is exactly the MILP's LP relaxation, and drops them beyond, a
    relaxation of it, O(e P^2) in size) and the energetic bound of
    :func:`coopt.problems.chase.energetic.energetic_bound` (energetic reasoning on the devices
    as one weighted cumulative resource, with heads and tails raised by the work of the ancestors
    and descendants; Baptiste, Le Pape and Nuijten 1999). Each part is a valid lower bound, so the
    maximum is."""
    tab = inst.tables
    combinatorial = critical_path_bound(tab)
    incumbent = local_search(inst)
    model = milp.build(inst, incumbent=incumbent, pairs=incomparable_pairs(inst) <= FULL_LP_PAIRS)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, options)
    lp: Any = result.objective if result.status == "optimal" else None
    best = max(combinatorial, lp) if lp is not None else combinatorial
    return energetic_bound(tab, float(incumbent["objective"]), lower=best)


def arch_bound(inst: Any, options: SolveOptions) -> float:
    """An upper bound on the best capability: the LP relaxation of the ``chase_arch`` MILP."""
    from coopt.problems.chase import arch_milp

    model = arch_milp.build(inst)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, options)
    if result.status == "infeasible":  # no design meets the rows: nothing is worth any capability
        return -math.inf
    if result.status != "optimal":
        raise ValueError(f"the LP relaxation ends {result.status}")
    return result.objective
