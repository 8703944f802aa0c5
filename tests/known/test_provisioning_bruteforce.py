"""Models A and B against exhaustive enumeration (:mod:`coopt.problems.provisioning.brute`) on
instances small enough to list every decision: both exact methods, the heuristics below them, and
the two monotonicity facts of research notes h.9."""

from __future__ import annotations

import dataclasses
import math

import pytest

from coopt.problem import SolveOptions
from coopt.problems import provisioning
from coopt.problems.provisioning import brute
from coopt.problems.provisioning import model as P
from coopt.run import run


@pytest.mark.parametrize("seed", range(100, 112))
def test_exact_methods_match_brute_force(seed: int) -> None:
    instance = brute.tiny_provisioning(seed)
    value = brute.provisioning_optimum(instance)
    for method in ("exact", "milp"):
        report = run(provisioning.PROBLEM, instance, method, SolveOptions(gap=1e-9))
        assert report.status == "optimal"
        assert report.check["feasible"], report.check
        assert math.isclose(report.objective, value, rel_tol=1e-9), (method, report.objective, value)
    for method, heuristic in provisioning.PROBLEM.heuristics.items():
        assert P.objective(instance, heuristic(instance)) <= value * (1 + 1e-12), method


def test_menu_monotone_and_no_degradation_is_the_plain_optimum() -> None:
    """MILP(Lambda) >= MILP({1}); with degradation off the brute force over rho = 1 agrees."""
    for seed in (0, 2, 4, 6):
        instance = dataclasses.replace(brute.tiny_provisioning(seed), degradation=True)
        off = dataclasses.replace(instance, degradation=False)
        plain = dataclasses.replace(instance, retained_fractions=(1.0,))
        on_value = run(provisioning.PROBLEM, instance, "exact").objective
        off_value = run(provisioning.PROBLEM, off, "exact").objective
        assert on_value >= off_value - 1e-9
        assert math.isclose(off_value, brute.provisioning_optimum(plain), rel_tol=1e-9)
