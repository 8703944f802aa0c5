"""CHASE: map workload DAGs onto heterogeneous hardware graphs under deployment constraints.

Source: CHASE, "Application-Driven Architecture Exploration for Cross-Layer Heterogeneous
Systems" (2026). Only its abstract was readable; the formulation is the reconstruction of
``research-chiplet-chase-moesd.md`` section 3 ([R]), made precise here.
"""

from __future__ import annotations

from coopt.formulations.chase import arch, arch_milp, brute, milp, model
from coopt.problem import HeuristicsOf, MethodOf, Oracle, Problem

PROBLEM = Problem(
    name="chase",
    summary="Map a workload DAG onto a heterogeneous hardware graph (min contention-free makespan)",
    source="CHASE (2026), abstract only; MILP and baselines after Topcuoglu et al. 2002 and "
           "Arabnejad and Barbosa 2014 [R]",
    sense="min",
    load=model.load,
    dump=model.dump,
    check=model.check,
    objective=model.objective,
    generate=model.generate,
    build=milp.build,
    extract=milp.extract,
    heuristics=HeuristicsOf("coopt.solvers.chase.mapping"),
    bound=MethodOf("coopt.solvers.chase.bound", "mapping_bound"),
    oracle=Oracle(generate=brute.tiny, solve=brute.enumerate_optimum),
    schema=model.SCHEMA,
    objective_name="makespan (contention-free)",
    objective_unit="s",
    sizes=(1, 2, 3, 4),
    size_doc="tasks = 4 + 2*size (layered random DAG) on 4 devices",
)

ARCH = Problem(
    name="chase_arch",
    summary="Deploy devices, switches and cables in racks: max capability under power, space, "
            "radix, oversubscription, cabling, budget and memory rows",
    source="CHASE (2026), abstract only; rows of research notes 3.b (ii) [R]",
    sense="max",
    load=arch.load,
    dump=arch.dump,
    check=arch.check,
    objective=arch.objective,
    generate=arch.generate,
    build=arch_milp.build,
    extract=arch_milp.extract,
    heuristics=HeuristicsOf("coopt.solvers.chase.arch"),
    bound=MethodOf("coopt.solvers.chase.bound", "arch_bound"),
    oracle=Oracle(generate=brute.tiny_arch, solve=brute.arch_optimum),
    schema=arch.SCHEMA,
    objective_name="capability (proxy)",
    objective_unit="TFLOP/s",
    sizes=(1, 2, 4),
    size_doc="at most 4*size devices of each of 4 types, max(1, size // 2) racks",
)

PROBLEMS = (PROBLEM, ARCH)
