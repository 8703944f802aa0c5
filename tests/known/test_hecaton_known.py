"""Hecaton on instances small enough to enumerate: every exact method against the brute force of
:mod:`coopt.problems.hecaton.brute` (every allowed option tuple, no dominance pruning, the
checker's own rows as the only filter), with and without the DRAM row, and the one-scheme variant."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coopt.problem import SolveOptions, close
from coopt.problems import hecaton
from coopt.problems.hecaton import brute
from coopt.problems.hecaton import dp as methods
from coopt.problems.hecaton import model as hecaton_model
from coopt.problems.hecaton.model import Option, stash_total, to_solution, total
from coopt.run import run

P = hecaton.PROBLEM
OPTIONS = SolveOptions(gap=1e-9)
SEEDS = range(40)


def roomy(instance):
    return replace(instance, package=replace(instance.package, dram_bytes=1e18))


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_and_milp_equal_brute_force(seed):
    instance = brute.tiny(seed)
    truth = brute.solve(instance)
    for method in ("exact", "milp"):
        report = run(P, instance, method, OPTIONS)
        if truth is None:
            assert report.status == "infeasible", (method, report.status)
            continue
        assert report.status == "optimal" and report.check["feasible"], (method, report.check["violations"])
        assert close(report.objective, truth, rel=1e-9), (method, report.objective, truth)


@pytest.mark.parametrize("seed", SEEDS)
def test_layered_dp_is_exact_without_the_dram_row(seed):
    instance = replace(brute.tiny(seed), one_scheme=False)
    found = brute.best(instance, dram=False)
    chosen = methods.layered_dp(instance)
    assert (chosen is None) == (found is None)
    if chosen is not None:
        assert close(total(instance, chosen), found[0], rel=1e-12)
        assert not hecaton_model.check(roomy(instance), to_solution(roomy(instance), chosen))


@pytest.mark.parametrize("seed", range(12))
def test_one_scheme_variant_matches_brute_force(seed):
    instance = replace(brute.tiny(seed), one_scheme=True)
    truth = brute.solve(instance)
    milp = run(P, instance, "milp", OPTIONS)
    exact = run(P, instance, "exact", OPTIONS)
    if truth is None:
        assert exact.status == milp.status == "infeasible"
        return
    assert close(exact.objective, truth, rel=1e-9) and close(milp.objective, truth, rel=1e-9)
    assert len({op["scheme"] for op in milp.solution["ops"]}) == 1


def test_the_tiny_family_binds_every_row_somewhere():
    """The seeds above include instances where the DRAM row binds (the optimum without it overflows
    DRAM), where the SRAM screen removes options, and infeasible ones."""
    binding = screened = infeasible = 0
    for seed in SEEDS:
        instance = brute.tiny(seed)
        free = brute.best(instance, dram=False)
        infeasible += brute.solve(instance) is None
        screened += any(hecaton_model.cost(instance, f, o).sram_bytes > instance.package.sram_bytes
                        for f in instance.model.block_ffn for o in hecaton_model.options(instance))
        if free is not None and stash_total(instance, free[1]) > instance.stash_capacity:
            binding += 1
            assert any(v.constraint == "dram" for v in hecaton_model.check(instance, to_solution(instance, free[1])))
    assert binding >= 4 and screened >= 10 and infeasible >= 2, (binding, screened, infeasible)


def test_option_type_round_trips_through_json():
    o = Option("agrs", 2, 4, 2, True)
    solution = {"ops": [o.to_json()]}
    assert Option(**solution["ops"][0]) == o
