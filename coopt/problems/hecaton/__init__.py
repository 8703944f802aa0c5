"""Hecaton: per-block tensor-parallel scheme, mesh, micro-batching and recompute for LLM training
on a chiplet package (Huang et al., arXiv 2407.05784).

Layout: the data model, the per-layer cost model, the checker and the generator are in
:mod:`.model`; the multiple-choice MILP with re-layout flows in :mod:`.milp`; the layered and
capacity DPs (the ``exact`` method) and the heuristics in :mod:`coopt.problems.hecaton.heuristics`; the
closed forms in :mod:`coopt.problems.hecaton.closed_forms`.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem
from coopt.problems.hecaton import brute, heuristics
from coopt.problems.hecaton.milp import build, extract
from coopt.problems.hecaton.model import (
    MAX_BLOCKS,
    SCHEMA,
    Instance,
    check,
    dump,
    generate,
    load,
    objective,
)


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
    load=load,
    dump=dump,
    check=check,
    objective=objective,
    generate=generate,
    build=build,
    extract=extract,
    heuristics=heuristics.HEURISTICS,
    exact=heuristics.exact,
    sizes=(4, 8, 16),
    max_size=MAX_BLOCKS,
    size_doc="number of blocks",
    schema=SCHEMA,
    objective_name=objective_name,
    objective_unit=objective_unit,
    oracle=Oracle(generate=brute.tiny, solve=brute.solve),
    bound=heuristics.bound,
)
