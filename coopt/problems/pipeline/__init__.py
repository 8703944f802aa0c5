"""Pipeline-parallel schedules under activation-memory limits (ChronosPipe, issue 6).

The data model, event simulator and checker live in :mod:`.model`; the ``exact`` method is the
constraint program Model S (CP-SAT) of :mod:`.cpsat` on keep-only one-chunk instances on a time
grid and the MILP elsewhere; the MILP (Model P, method ``milp`` everywhere) is in
:mod:`.milp`, the time-indexed Model T in :mod:`.timeindexed`, the count-based time-indexed
Model N for keep-only integer instances in :mod:`.counts` (benchmarked beside Model P, not
registered), the oracle (enumeration of every
order, or Model T where copies are continuous) in :mod:`.brute`, the dual bound in :mod:`.bound`,
the window relaxation (part of Model P's cut) in :mod:`.window`, the crossing relaxation
(benchmarked, not in the cut) in :mod:`.crossing`, the pattern schedules (part of Model P's warm
start) in :mod:`.pattern`,
the schedules in :mod:`coopt.problems.pipeline.heuristics` and the closed forms in
:mod:`coopt.problems.pipeline.closed_forms`.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem
from coopt.problems.pipeline import bound, brute, cpsat, heuristics, milp, model

PROBLEM = Problem(
    name="pipeline",
    summary="Order F/B/W passes of m micro-batches on p pipeline stages (with recompute/offload) to "
    "minimise the iteration time under per-device activation-memory caps",
    source="ChronosPipe/TPipe, arXiv 2503.03182; Zero Bubble, arXiv 2401.10241",
    sense="min",
    load=model.load,
    dump=model.dump,
    check=model.check,
    objective=model.objective,
    generate=model.generate,
    build=milp.build,
    extract=milp.extract,
    exact=cpsat.solve,
    exact_applies=cpsat.applies,
    heuristics=heuristics.HEURISTICS,
    sizes=(2, 3, 4),
    max_size=model.MAX_SIZE,
    size_doc="p stages (m = 2p micro-batches)",
    showcase="0-p3m4-cap6.toml",  # a cap where 1F1B, ZB and Chronos fit and GPipe does not
    oracle=Oracle(generate=brute.tiny, solve=brute.optimum),
    bound=bound.lower_bound,
    schema=model.SCHEMA,
    objective_name=lambda instance: (
        "per-stage span" if instance.objective == "stage_span" else "iteration time"
    ),
    objective_unit="s",
)
