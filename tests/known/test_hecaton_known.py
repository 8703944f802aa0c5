"""Hecaton on instances small enough to enumerate: every exact method against brute force over the
raw option set (no SRAM screen, no dominance pruning: the checker is the only filter)."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from coopt.formulations import hecaton
from coopt.formulations.hecaton import model as hecaton_model
from coopt.formulations.hecaton.model import (
    Option,
    candidates,
    cost,
    options,
    stash_total,
    to_solution,
    total,
    transition,
)
from coopt.problem import SolveOptions, close
from coopt.run import run
from coopt.solvers import hecaton as methods

P = hecaton.PROBLEM
OPTIONS = SolveOptions(gap=1e-9)


def brute_force(instance) -> float:
    """The least objective over every per-block option tuple (inf: none feasible). Options are
    screened per block by the checker's own SRAM test, the DRAM and one-scheme rows are applied to
    each tuple, and the winner is then judged by the checker itself."""
    ffn = instance.model.block_ffn
    sram = instance.package.sram_bytes
    rows = [{o: cost(instance, f, o) for o in options(instance) if cost(instance, f, o).sram_bytes <= sram} for f in ffn]
    layouts = sorted({o.layout for o in options(instance)})
    tau = {(a, b): transition(instance, a, b) for a in layouts for b in layouts}
    best, winner = math.inf, None
    for chosen in itertools.product(*rows):
        if instance.one_scheme and len({o.scheme for o in chosen}) > 1:
            continue
        if sum(row[o].stash_bytes for row, o in zip(rows, chosen, strict=True)) > instance.stash_capacity:
            continue
        value = sum(row[o].objective for row, o in zip(rows, chosen, strict=True))
        value += sum(tau[a.layout, b.layout] for a, b in itertools.pairwise(chosen))
        if value < best:
            best, winner = value, list(chosen)
    if winner is not None:
        assert not hecaton_model.check(instance, to_solution(instance, winner))
        assert close(total(instance, winner), best)
    return best


def tiny(seed: int):
    """A generated 3-block instance on 4 or 8 dies with 20 options per block and DRAM sized so
    that the stash row binds for most seeds (between the least stash and the free optimum's)."""
    instance = hecaton_model.generate(seed, 3)
    instance = replace(
        instance, microbatches=(1, 2), package=replace(instance.package, dies=4 if seed % 2 else 8, dram_gb=1e9)
    )
    free = methods.layered_dp(instance)
    if free is None:
        return instance
    least = sum(min(cost(instance, f, o).stash_bytes for o in candidates(instance, f)) for f in instance.model.block_ffn)
    stash = least + (0.3, 0.7, 1.1)[seed % 3] * (stash_total(instance, free) - least)
    dram_gb = (instance.resident_bytes + stash) * instance.package.dies / 1e9
    return replace(instance, package=replace(instance.package, dram_gb=dram_gb))


SEEDS = [s for s in range(10) if len(options(tiny(s))) ** 3 <= 22000]


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_milp_and_brute_force_agree(seed):
    instance = tiny(seed)
    truth = brute_force(instance)
    exact = run(P, instance, "exact", OPTIONS)
    milp = run(P, instance, "milp", OPTIONS)
    if truth == math.inf:
        assert exact.status == "infeasible" and milp.status == "infeasible"
        return
    assert exact.status == milp.status == "optimal"
    assert close(exact.objective, truth) and close(milp.objective, truth), (exact.objective, milp.objective, truth)
    assert exact.check["feasible"] and milp.check["feasible"]


@pytest.mark.parametrize("seed", SEEDS)
def test_layered_dp_is_exact_without_the_dram_row(seed):
    instance = tiny(seed)
    roomy = replace(instance, package=replace(instance.package, dram_gb=1e9))
    chosen = methods.layered_dp(roomy)
    truth = brute_force(roomy)
    assert (chosen is None) == (truth == math.inf)
    if chosen is not None:
        assert close(total(roomy, chosen), truth)


@pytest.mark.parametrize("seed", SEEDS)
def test_one_scheme_variant_matches_brute_force(seed):
    instance = replace(tiny(seed), one_scheme=True)
    truth = brute_force(instance)
    exact = run(P, instance, "exact", OPTIONS)
    milp = run(P, instance, "milp", OPTIONS)
    if truth == math.inf:
        assert exact.status == milp.status == "infeasible"
        return
    assert close(exact.objective, truth) and close(milp.objective, truth)
    assert len({op["scheme"] for op in milp.solution["ops"]}) == 1


def test_the_dram_row_binds_somewhere():
    """The brute-force cases above include instances where the unconstrained optimum overflows DRAM."""
    binding = 0
    for seed in SEEDS:
        instance = tiny(seed)
        free = methods.layered_dp(instance)
        if free is not None and stash_total(instance, free) > instance.stash_capacity:
            binding += 1
            assert hecaton_model.check(instance, to_solution(instance, free))
            fixed = methods.capacity_dp(instance)
            assert fixed is None or not hecaton_model.check(instance, to_solution(instance, fixed))
    assert binding >= 2


def test_option_type_round_trips_through_json():
    o = Option("agrs", 2, 4, 2, True)
    solution = {"ops": [o.to_json()]}
    assert Option(**solution["ops"][0]) == o
