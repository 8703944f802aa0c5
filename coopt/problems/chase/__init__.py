"""CHASE: map workload DAGs onto heterogeneous hardware graphs under deployment constraints, and
choose the architecture (two registered problems, one package).

Source: CHASE, "Application-Driven Architecture Exploration for Cross-Layer Heterogeneous
Systems" (2026). Only its abstract was readable (its numbers: mapper within 6.06 % of exhaustive
optima at 60.5 % less mapping time than PEFT, compute-model error 4.4-7.5 %, near-global optima
within 64 iterations, geomean speed-ups 6.20x and 2.12x). Everything below is the reconstruction
of ``research-chiplet-chase-moesd.md`` section 3 ([R]), made precise; where the notes left a
choice open, the module that makes it says which and why.

* ``chase`` (min, seconds): a hardware graph (:mod:`.hardware`: typed devices, switches, links,
  racks, the deployment rules checked on load, the routing table) and a workload DAG
  (:mod:`.workloads`: roofline or explicit run times, compatibility, data edges, generators).
  Decide the device of every task and its start; minimise the contention-free makespan (the
  disjunctive MILP of :mod:`.milp`, whose horizon and start come from the warm start
  ``local_search`` the runner hands in; data model in :mod:`.instance`, checker and generator in
  :mod:`.model`). Every
  mapping is also replayed by the discrete-event simulator with link contention
  (:mod:`.simulator`), whose makespan the solution reports beside it and is never below it.
  Brute force for tiny instances in :mod:`.brute`; list schedulers and our local search in
  :mod:`coopt.problems.chase.mapping`.
* ``chase_arch`` (max, TFLOP/s proxy): devices, ToRs, uplinks and spines per rack under power,
  space, radix, oversubscription, cabling, budget and memory rows (:mod:`.arch_model`, MILP in
  :mod:`.arch_milp`); a design becomes a hardware graph of the first problem
  (:func:`.arch_model.hardware_of`), and the outer loop of :mod:`coopt.problems.chase.explore` searches
  designs for a portfolio of workloads with the simulator's telemetry.

Reconstructed, not transcribed: the MILP's rows and cuts (the notes' (i) plus the scheduling
literature's heads, tails, loads and symmetry breaking), the routing rule, the cut-through
transfer and the max-min fair flow model of the simulator, the CHASE mapper (the notes'
TopoMapper), the feasibility rows (the notes' (ii) plus one uplink per ToR so the fabric is
connected), and the outer loop's moves. The instance values are the notes' [S] values; the
workload DAGs of the shipped files come from public repositories (tools/chase_instances.py).
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields, model_fields
from coopt.problems.chase import (
    arch_heuristics,
    arch_milp,
    arch_plot,
    bound,
    brute,
    cpsat,
    mapping,
    milp,
    model,
    plot,
    schedule,
)
from coopt.problems.chase import arch_model as arch

PROBLEM = Problem(
    name="chase",
    summary="Map a workload DAG onto a heterogeneous hardware graph (min contention-free makespan)",
    source="CHASE (2026), abstract only; MILP and baselines after Topcuoglu et al. 2002 and "
           "Arabnejad and Barbosa 2014 [R]",
    sense="min",
    **model_fields(model),
    **exact_fields(milp),
    heuristics=mapping.HEURISTICS,
    exact=cpsat.solve,
    exact_applies=cpsat.applies,
    warm_start=mapping.local_search,
    bound=bound.mapping_bound,
    oracle=Oracle(generate=brute.tiny, solve=brute.enumerate_optimum),
    objective_name="makespan (contention-free)",
    objective_unit="s",
    sizes=(1, 2, 3, 4),
    max_size=model.MAX_SIZE,
    size_doc="tasks = 4 + 2*size (layered random DAG) on 4 devices",
    showcase="0-topcuoglu-10x3.toml",  # HEFT's published 80 beside the proven optimum 73
    objective_grid=schedule.objective_grid,
    plot=plot.draw,
)

ARCH = Problem(
    name="chase_arch",
    summary="Deploy devices, switches and cables in racks: max capability under power, space, "
            "radix, oversubscription, cabling, budget and memory rows",
    source="CHASE (2026), abstract only; rows of research notes 3.b (ii) [R]",
    sense="max",
    **model_fields(arch),
    **exact_fields(arch_milp),
    heuristics=arch_heuristics.HEURISTICS,
    bound=bound.arch_bound,
    oracle=Oracle(generate=brute.tiny_arch, solve=brute.arch_optimum),
    objective_name="capability (proxy)",
    objective_unit="TFLOP/s",
    sizes=(1, 2, 4),
    max_size=arch.MAX_SIZE,
    size_doc="at most 4*size devices of each of 4 types, max(1, size // 2) racks (at most 1000)",
    showcase="0-two-racks-gpu-npu.toml",
    plot=arch_plot.draw,
)

PROBLEMS = (PROBLEM, ARCH)
