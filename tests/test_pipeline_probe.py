"""The probe at the dual bound in the pipeline's constraint-program search (``cpsat._probe``, run by
Model M): a schedule found at the bound is returned as optimal and checked; a proof that none is
that short raises the bound by one grid unit and no further than the proofs allow."""

from __future__ import annotations

import pytest

from coopt.problem import SolveOptions
from coopt.problems.pipeline import bound, cpmodes, cpsat
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.model import check
from coopt.problems.pipeline.warm import incumbent

OPTIONS = SolveOptions(gap=1e-9, time_limit=60, threads=1)


def test_the_probe_proves_recompute_p6_seed2_at_the_bound():
    """The generator's recompute p = 6 seed 2: the heuristics stop at 110, the dual bound is 108
    (the weight-pass cool-down, tests/test_pipeline_w_tail.py); the probe finds a schedule of 108,
    so Model M returns it as optimal, and the checker accepts it."""
    inst = pm.generate_modes(2, 6, "recompute")
    value, warm = incumbent(inst)
    assert value == pytest.approx(110.0) and bound.lower_bound(inst) == pytest.approx(108.0)
    outcome = cpmodes.solve(inst, OPTIONS, incumbent=warm)
    assert outcome.status == "optimal"
    assert check(inst, outcome.solution) == []
    assert outcome.solution["objective"] == pytest.approx(108.0)


def test_a_probe_proven_empty_raises_the_bound_by_one_unit():
    """Recompute p = 7 seed 0 (heuristics 117, dual bound 108): Model M with C <= 108 is empty (CP-SAT
    proves it in presolve), so the bound becomes 109; whatever the probe then finds is at that
    bound and checked, and it never claims more than the warm start."""
    inst = pm.generate_modes(0, 7, "recompute")
    value, warm = incumbent(inst)
    floor = bound.lower_bound(inst)
    assert floor == pytest.approx(108.0) and value > 110
    horizon = cpmodes.build(inst, value, floor, warm).horizon
    found, solver, raised, _solve, _branches = cpsat._probe(
        inst, OPTIONS, horizon, floor, warm, cpmodes.build, None, budget=5.0)
    assert 109.0 - 1e-9 <= raised <= value
    if found is not None:  # a fast machine may find a schedule at the raised bound
        solution = cpmodes.extract(inst, found, solver)
        assert check(inst, solution) == []
        assert solution["objective"] == pytest.approx(raised)
