"""LightCode: assign every operator of an LLM prefill to a GPU, CPU or photonic tensor unit (PTU)
to minimise energy, serial latency or the makespan of the resulting schedule.

Source: R. Tomich et al., "LightCode: compiling LLM inference for photonic-electronic systems",
arXiv 2509.16443 (2025), and the authors' code (``RyanTomich/LightCode``).

Layout: the instance, its declared fields and the named constant sets it reads in :mod:`.data`
and :mod:`.presets`; the Stacked Graph and its cost model in :mod:`.graph`; the costs of an
assignment, the checker and the generator in :mod:`.model`; the one-piece MILP in :mod:`.milp`;
the brute force, the oracle of both exact methods, in :mod:`.brute`; the block decomposition
(method ``exact``), the segment DP and the dual bound in :mod:`.decomposition`; the list schedule
in :mod:`.schedule`; the heuristics in :mod:`.heuristics`, with the tail they share (uniform
blocks, side-constraint repair, the schedule) in :mod:`.repair`; the crossovers in
:mod:`.closed_forms`.

Methods: ``milp`` is the model of :mod:`.milp` on the whole graph. ``exact``
(:func:`.decomposition.exact`) decomposes at the articulation operators (the residual adds): each
segment is solved exactly (the disjunctive model of one block for the makespan, a frontier DP for
the sums) once per distinct segment and pair of cut devices, and a DP chains them. With side
constraints, which couple the segments, it hands over to the one-piece MILP.
:func:`.decomposition.dual_bound` (method ``bound``) is a lower bound at any size: the DP where it
is exact (the sums), the chain of segment dual bounds (the makespan), relaxations otherwise. No
method runs a heuristic for a start: the exact routes take no warm start.

Objectives are reported in microjoules (energy) or microseconds (latency); schedule start times in
a solution are in seconds (the unit string says so).
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields
from coopt.problems.lightcode import brute, data, decomposition, heuristics, milp, model, plot
from coopt.problems.lightcode.data import MAX_LAYERS
from coopt.problems.lightcode.model import objective_name, objective_unit

PROBLEM = Problem(
    name="lightcode",
    summary="Assign LLM prefill operators to GPU/CPU/photonic tensor units: min energy, latency or makespan",
    source="Tomich et al., LightCode, arXiv 2509.16443 (2025); github.com/RyanTomich/LightCode",
    sense="min",
    load=data.load,
    dump=data.dump,
    schema=data.SCHEMA,
    check=model.check,
    objective=model.objective,
    generate=model.generate,
    **exact_fields(milp),
    heuristics=heuristics.HEURISTICS,
    exact=decomposition.exact,
    bound=decomposition.dual_bound,
    sizes=(1, 2, 4),
    max_size=MAX_LAYERS,
    size_doc="transformer blocks",
    objective_name=objective_name,
    objective_unit=objective_unit,
    oracle=Oracle(generate=brute.tiny, solve=brute.optimum),
    plot=plot.draw,
)
