"""Hecaton: per-block tensor-parallel scheme, mesh, micro-batching and recompute for LLM training
on a chiplet package (Huang et al., arXiv 2407.05784).

Layout: the data model, the per-layer cost model, the checker and the generator are in
:mod:`.model`; the multiple-choice MILP with re-layout flows in :mod:`.milp`; the layered and
capacity DPs (the ``exact`` method) and the Lagrangian bound in :mod:`.dp`; the warm start and the
heuristics in :mod:`.heuristics`; the brute force in :mod:`.brute`; the closed forms in
:mod:`.closed_forms`.

Warm start: the runner runs :func:`.heuristics.warm_start` (the layered DP's optimum with its stash
repaired) and hands it to ``exact``, whose capacity DP it prunes; the MILP accepts it and does not
use it. The optimum is the same with or without it.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields, model_fields
from coopt.problems.hecaton import brute, dp, heuristics, milp, model, plot
from coopt.problems.hecaton.model import MAX_BLOCKS, Instance


def objective_name(instance: Instance) -> str:
    return "iteration time" if instance.objective == "time" else "iteration energy"


def objective_unit(instance: Instance) -> str:
    return "s" if instance.objective == "time" else "J"


PROBLEM = Problem(
    name="hecaton",
    summary="Per-block tensor-parallel scheme, mesh, micro-batching and recompute for LLM training "
    "on a chiplet package (multiple-choice MILP with re-layout costs and a DRAM row)",
    source="Huang et al., Hecaton, arXiv 2407.05784 (research-chiplet-chase-moesd.md section 1)",
    sense="min",
    **model_fields(model),
    **exact_fields(milp),
    heuristics=heuristics.HEURISTICS,
    exact=dp.exact,
    warm_start=heuristics.warm_start,
    sizes=(4, 8, 16),
    max_size=MAX_BLOCKS,
    size_doc="number of blocks",
    objective_name=objective_name,
    objective_unit=objective_unit,
    oracle=Oracle(generate=brute.tiny, solve=brute.solve),
    bound=dp.bound,
    plot=plot.draw,
)
