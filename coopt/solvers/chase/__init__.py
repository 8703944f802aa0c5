"""Solvers of the two CHASE problems: :mod:`.mapping` (list schedulers and local search for the
``chase`` mapping problem), :mod:`.arch` (heuristics of the ``chase_arch`` feasibility problem),
:mod:`.bound` (the dual bounds of both) and :mod:`.explore` (the telemetry-guided outer loop over
architectures and the exhaustive search that is its oracle)."""
