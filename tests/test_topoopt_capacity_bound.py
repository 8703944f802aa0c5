"""TopoOpt's capacity-aware Moore bound: its count never rules out a proven optimum (brute force on
tiny instances, P1 on the exact family), it is part of the registered bound, and it bites at the
papers' size where a size-2 group needs more than one link."""

from __future__ import annotations

from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problems.topoopt import bound, brute, capacity_bound, distance_bound, routing
from tests._topoopt_shared import tiny_dual_bound, tiny_optimum
from tests.test_topoopt_scale import EXACT_OPTIMA

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "topoopt"

#: Tiny seeds (0-399) on which the capacity-aware bound is below every other bound: the ones where
#: a wrong argument would show as a cut.
LIFTED = [41, 43, 46, 101, 140, 158, 177, 345, 350]


def other_bounds(instance) -> float:
    values = [bound.port_bound(instance), bound.moore_bound(instance),
              distance_bound.pair_distance_bound(instance)]
    if instance.symmetric and instance.servers <= bound.RELAXATION_SERVERS:
        values.append(routing.relaxation(instance))
    return min(values)


@pytest.mark.parametrize("seed", LIFTED)
def test_lifted_tiny_bounds_keep_the_brute_force_optimum(seed):
    instance = brute.tiny(seed)
    best = tiny_optimum(seed)
    assert best is not None
    registered = tiny_dual_bound(seed)  # bound.dual_bound(instance), shared with the bisection test
    assert registered < other_bounds(instance) * (1 - 1e-6)  # the new bound is what binds here
    assert best <= registered * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_the_count_never_rules_out_the_brute_force_optimum(seed):
    instance = brute.tiny(seed)
    best = tiny_optimum(seed)  # brute.solve(instance), shared with the other files' tiny-seed tests
    if best is None:
        pytest.skip("no topology routes this demand")
    assert not capacity_bound.rules_out(instance, best * (1 - 1e-9))


@pytest.mark.parametrize("name", sorted(EXACT_OPTIMA))
def test_the_count_never_rules_out_a_proven_optimum_of_the_exact_family(name):
    instance = load(INSTANCES / f"{name}.toml").instance
    assert not capacity_bound.rules_out(instance, EXACT_OPTIMA[name] - 5e-4)


def test_the_bisection_stops_at_the_least_rate_the_count_rules_out():
    """Tiny seed 177 (n = 4, d = 2, duplex): the count rules out the other bounds' rate, and the
    value returned is ruled out while one a little below it is not."""
    instance = brute.tiny(177)
    other = other_bounds(instance)
    assert capacity_bound.rules_out(instance, other)
    # bound.dual_bound(instance) is capacity_bound.capacity_bound(instance, other) (the least of the
    # same four bounds as its upper end): the bisection's result, computed once for this test and
    # the lifted seed 177 above
    value = tiny_dual_bound(177)
    assert value <= other
    assert capacity_bound.rules_out(instance, value)
    assert not capacity_bound.rules_out(instance, value * (1 - 2 * capacity_bound.TOLERANCE))


def test_upper_is_returned_where_nothing_below_it_is_ruled_out():
    instance = brute.tiny(0)
    assert capacity_bound.capacity_bound(instance, 1e-6) == 1e-6


def test_a_size_two_group_beyond_one_link_lowers_the_bound_at_the_papers_size():
    """ncf, n = 64, d = 8: the pairs {s, s + 32} carry about 1.5 links' worth at the other bounds'
    rate (79.02), so they need a parallel link or two hops for the excess."""
    instance = load(INSTANCES / "2-model-ncf-n64-d8-40g.toml").instance
    before = other_bounds(instance)
    after = bound.dual_bound(instance)
    assert before == pytest.approx(79.02, rel=1e-3)
    assert after < 0.97 * before
    assert after >= 63.75  # the best heuristic's checked rate (docs/topoopt.md)
