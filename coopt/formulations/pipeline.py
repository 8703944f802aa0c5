"""Pipeline-parallel schedules under activation-memory limits (ChronosPipe, issue 6).

The data model, event simulator and checker live in :mod:`coopt.formulations.pipeline_model`,
the exact MILP (Model P) in :mod:`coopt.formulations.pipeline_milp`, the time-indexed cross-check
in :mod:`coopt.formulations.pipeline_timeindexed`, the schedules in :mod:`coopt.solvers.pipeline`
and the closed forms in :mod:`coopt.analysis.bounds.pipeline`.
"""

from __future__ import annotations

from coopt.formulations import pipeline_milp, pipeline_model
from coopt.problem import Problem
from coopt.solvers.pipeline import HEURISTICS

PROBLEM = Problem(
    name="pipeline",
    summary="Order F/B/W passes of m micro-batches on p pipeline stages (with recompute/offload) to "
    "minimise the iteration time under per-device activation-memory caps",
    source="ChronosPipe/TPipe, arXiv 2503.03182; Zero Bubble, arXiv 2401.10241",
    sense="min",
    load=pipeline_model.load,
    dump=pipeline_model.dump,
    check=pipeline_model.check,
    objective=pipeline_model.objective,
    generate=pipeline_model.generate,
    build=pipeline_milp.build,
    extract=pipeline_milp.extract,
    heuristics=HEURISTICS,
    sizes=(2, 3, 4),
    size_doc="p stages (m = 2p micro-batches)",
    showcase="0-p3m4-cap6.toml",  # a cap where 1F1B, ZB and Chronos fit and GPipe does not
)
