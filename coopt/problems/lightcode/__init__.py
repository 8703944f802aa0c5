"""LightCode: assign every operator of an LLM prefill to a GPU, CPU or photonic tensor unit (PTU)
to minimise energy, serial latency or the makespan of the resulting schedule.

Source: R. Tomich et al., "LightCode: compiling LLM inference for photonic-electronic systems",
arXiv 2509.16443 (2025), and the authors' code (``RyanTomich/LightCode``).

Layout: the data model, the declared fields, the Stacked Graph, the cost model, the checker and the
generator are in :mod:`.model`; the named constant sets in :mod:`.presets`; the one-piece MILP in
:mod:`.milp`; the brute force, the oracle of both exact methods, in :mod:`.brute`; the
block-decomposition method (``exact``), the heuristics and the dual bound in
:mod:`coopt.problems.lightcode.heuristics`.

Methods: ``milp`` is the model of :mod:`.milp` on the whole graph. ``exact``
(:func:`coopt.problems.lightcode.heuristics.exact`) decomposes at the articulation operators (the residual
adds): each segment is solved exactly (the disjunctive model of one block for the makespan, a
frontier DP for the sums) once per distinct segment and pair of cut devices, and a DP chains
them. With side constraints, which couple the segments, it hands over to the one-piece MILP.
:func:`coopt.problems.lightcode.heuristics.dual_bound` (method ``bound``) is a lower bound at any size: the DP
where it is exact (the sums), the chain of segment dual bounds (the makespan), relaxations
otherwise.

Objectives are reported in microjoules (energy) or microseconds (latency); schedule start times in
a solution are in seconds (the unit string says so).
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem
from coopt.problems.lightcode import brute, heuristics
from coopt.problems.lightcode.milp import build, extract
from coopt.problems.lightcode.model import (
    MAX_LAYERS,
    SCHEMA,
    check,
    dump,
    generate,
    load,
    objective,
    objective_name,
    objective_unit,
)

PROBLEM = Problem(
    name="lightcode",
    summary="Assign LLM prefill operators to GPU/CPU/photonic tensor units: min energy, latency or makespan",
    source="Tomich et al., LightCode, arXiv 2509.16443 (2025); github.com/RyanTomich/LightCode",
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
    bound=heuristics.dual_bound,
    sizes=(1, 2, 4),
    max_size=MAX_LAYERS,
    size_doc="transformer blocks",
    schema=SCHEMA,
    objective_name=objective_name,
    objective_unit=objective_unit,
    oracle=Oracle(generate=brute.tiny, solve=brute.optimum),
)
