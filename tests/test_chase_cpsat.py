"""chase's constraint program (coopt.problems.chase.cpsat): the enumerated optimum on the oracle's
tiny family, the MILP's proven optimum on the small shipped files, exact integers on a grid, and the
rule that hands 8-device platforms to the MILP."""

from __future__ import annotations

import math
import random

import pytest

from coopt.instance import load
from coopt.problems.chase import PROBLEM, brute, cpsat, mapping
from coopt.problems.chase.model import Instance, check, platform
from coopt.problems.chase.schedule import automorphisms
from coopt.problems.chase.workloads import random_layered
from tests._chase_shared import OPTIONS, generated_report, shipped_report


@pytest.mark.parametrize("seed", range(12))
def test_the_constraint_program_proves_the_enumerated_optimum(seed):
    """Cold (the serial bound as horizon) and warm (local search as horizon and hint)."""
    inst = brute.tiny(seed)
    truth = brute.enumerate_optimum(inst)
    for incumbent in (None, mapping.local_search(inst)):
        outcome = cpsat.solve(inst, OPTIONS, incumbent=incumbent)
        assert outcome.status == "optimal"
        assert check(inst, outcome.solution) == []
        assert outcome.solution["objective"] == pytest.approx(truth, rel=1e-9)
        assert outcome.bound <= truth * (1 + 1e-9)
        assert outcome.solution["objective"] - outcome.bound <= 1e-6 * truth  # within the suite's gap


@pytest.mark.parametrize("name", ["0-mapreduce-4m2r-servers", "0-spmv-b3-mixed", "0-topcuoglu-10x3",
                                  "0-transformer-l1-tp2-servers", "0-random-n10-identical"])
def test_the_two_exact_models_agree_on_the_small_shipped_files(name):
    inst = load(f"chase/{name}").instance
    assert PROBLEM.runs_exact(inst)
    # run(PROBLEM, inst, "exact" / "milp", OPTIONS), shared with test_chase_energetic
    by_cp, by_milp = shipped_report(name, "exact"), shipped_report(name, "milp")
    assert by_cp.solver["name"] == "cp-sat" and by_milp.solver["name"] == "highs"
    assert by_cp.status == by_milp.status == "optimal"
    assert by_cp.objective == pytest.approx(by_milp.objective, rel=1e-6)
    assert by_cp.bound <= by_milp.objective * (1 + 1e-6)


def test_on_a_grid_the_times_are_whole_units_and_the_proof_exact():
    """Topcuoglu et al.'s example is on integer seconds: the unit is 1 s and the bound is the
    optimum 73 itself (HEFT gives 80)."""
    inst = load("chase/0-topcuoglu-10x3").instance
    assert cpsat.unit_of(inst, 80.0) == (1.0, True)
    outcome = cpsat.solve(inst, OPTIONS)
    assert outcome.status == "optimal" and outcome.solution["objective"] == 73.0 and outcome.bound == 73.0


def test_off_a_grid_the_unit_is_fine_enough_for_the_suites_tolerance():
    inst = brute.tiny(1)
    unit, grid = cpsat.unit_of(inst, 1.0)
    assert not grid
    truth = brute.enumerate_optimum(inst)
    assert 2 * inst.n_tasks * unit <= cpsat.RESOLUTION * truth * (1 + 1e-12)


def test_eight_devices_go_to_the_milp():
    inst = load("chase/1-transformer-l4-tp2-pp2-2x4gpu").instance
    assert inst.n_devices == 8 and not cpsat.applies(inst) and not PROBLEM.runs_exact(inst)
    assert all(cpsat.applies(PROBLEM.generate(seed, 2)) for seed in range(4))


@pytest.mark.parametrize("kind, group", [
    ("servers", [(0, 1, 2, 3), (2, 3, 0, 1)]),  # the two servers swapped whole
    ("switch", [(0, 1, 2, 3), (0, 1, 3, 2), (1, 0, 2, 3), (1, 0, 3, 2)]),
    ("mixed", [(0, 1, 2, 3)]),
])
def test_the_automorphisms_of_the_platforms(kind, group):
    inst = Instance(platform(kind), random_layered(random.Random(1), 6))
    assert automorphisms(inst.tables) == group


def test_the_first_task_rule_holds_only_where_no_class_breaks_the_symmetry():
    servers, switch = PROBLEM.generate(1, 3), PROBLEM.generate(0, 3)
    built = cpsat.build(servers, float(mapping.local_search(servers)["objective"]))
    first = servers.tables.topo[0]
    assert built is not None and built.group == [(0, 1, 2, 3), (2, 3, 0, 1)]
    kept = {p for p in range(4) if (first, p) in built.x}
    assert 0 in kept and not kept & {2, 3}  # only the first server's devices
    assert cpsat.build(switch, float(mapping.local_search(switch)["objective"])).group == []


@pytest.mark.parametrize("seed", [1, 5, 9, 13])
def test_on_two_servers_the_constraint_program_proves_the_enumerated_optimum(seed):
    """The first-task rule on the servers platform (6 tasks) loses no optimum, cold and warm; the
    hint is relabelled to satisfy it."""
    inst = PROBLEM.generate(seed, 1)
    assert cpsat.first_task_group(inst, []) != []
    truth = brute.enumerate_optimum(inst)
    for incumbent in (None, mapping.local_search(inst)):
        outcome = cpsat.solve(inst, OPTIONS, incumbent=incumbent)
        assert outcome.status == "optimal" and check(inst, outcome.solution) == []
        assert outcome.solution["objective"] == pytest.approx(truth, rel=1e-9)


@pytest.mark.parametrize("size,seed", [(3, 1), (2, 5), (3, 9)])
def test_on_two_servers_the_constraint_program_meets_the_milp(size, seed):
    # run(PROBLEM, PROBLEM.generate(seed, size), "exact" / "milp", OPTIONS), shared with
    # test_chase_energetic
    by_cp, by_milp = generated_report(seed, size, "exact"), generated_report(seed, size, "milp")
    assert by_cp.status == by_milp.status == "optimal"
    assert by_cp.objective == pytest.approx(by_milp.objective, rel=1e-6)


def test_off_grid_floors_never_exceed_the_exact_floor_and_the_horizon_never_falls_below_it():
    """A head summed in floats may round up onto an integer its exact value stays below
    (1 - 2**-60 rounds to 1.0): the model's data must stay at or under the exact floor, and the
    horizon at or over it, whatever the float rounding."""
    from fractions import Fraction

    parts = [1.0, -(2.0 ** -60)]
    summed = parts[0] + parts[1]
    exact = sum(Fraction(x) for x in parts)
    assert summed == 1.0 and exact < 1  # the float sum sits on the integer its exact value misses
    assert cpsat._floor(summed, 1.0, False) <= math.floor(exact)
    for upper in (7.0, 7.5, 1e6 + 0.25):
        assert cpsat._horizon(upper, 1.0, False) >= math.floor(Fraction(upper))
        assert cpsat._floor(upper, 1.0, False) <= math.floor(Fraction(upper))
