"""The server-hull bound of the plan's segments (``plan_bound._Hull``): its tables are the closed
form, it never exceeds a segment's exact value (brute force over every circuit set), it is at least
the continuous relaxation, and the segment DP on it stays between that relaxation's DP and the
optimum. Its LP grown a layer at a time (``_HullLP``) prices each segment as a fresh LP does; the
value through a segment (``_through``) is the least plan keeping it (brute force over
segmentations); the pricer (``_Pricer``) raises the DP and stays below the optimum."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from test_mixnet import random_circuits

from coopt.problem import SolveOptions
from coopt.problems.mixnet import plan_bound, plan_exact
from coopt.problems.mixnet import plan_model as plan


def every_circuit_set(servers: int, alpha: int):
    """Every symmetric integer circuit set with at most ``alpha`` circuits per server."""
    pairs = [(i, j) for i in range(servers) for j in range(i + 1, servers)]
    for counts in itertools.product(range(alpha + 1), repeat=len(pairs)):
        x = np.zeros((servers, servers), dtype=int)
        for (i, j), c in zip(pairs, counts, strict=True):
            x[i, j] = x[j, i] = c
        if (x.sum(axis=1) <= alpha).all():
            yield x


def small_instances() -> list[plan.Instance]:
    """Brute-forceable plans: the tiny family (3 servers) and generated ones on 4 servers."""
    found = [plan.generate_tiny(seed) for seed in range(6)]
    found += [i for i in (plan.generate(seed, 1) for seed in range(12)) if i.servers == 4][:3]
    assert len(found) == 9
    return found


def test_the_rows_are_every_integer_row_within_the_ports():
    rows = plan_bound._rows(4, 3)
    assert len(rows) == math.comb(4 + 3, 3)
    assert len({tuple(r) for r in rows}) == len(rows)
    assert (rows >= 0).all() and (rows.sum(axis=1) <= 3).all()


@pytest.mark.parametrize("seed", range(3))
def test_the_server_tables_give_the_layer_time(seed):
    """``T_l(x) = max_i H[l, i, x_i]`` at integer circuit sets, against the checker's closed form."""
    instance = plan.generate(seed, 2)
    terms = plan_bound._Terms(instance)
    hull = plan_bound._Hull(terms)
    assert hull.usable()
    index = {tuple(r): k for k, r in enumerate(hull.points.astype(int))}
    rng = np.random.default_rng(seed)
    for layer in range(len(instance.layers)):
        table = hull.table(layer)
        for _ in range(10):
            x = random_circuits(rng, instance.servers, instance.fabric.alpha)
            value = max(table[i, index[tuple(np.delete(x[i], i))]] for i in range(instance.servers))
            assert value * terms.tau == pytest.approx(instance.layer_time(layer, x), rel=1e-9)


def exact_layer_times(instance) -> np.ndarray:
    """Each layer's time (rows) on every integer circuit set (columns), by enumeration."""
    sets = list(every_circuit_set(instance.servers, instance.fabric.alpha))
    return np.array([[instance.layer_time(l, x) for x in sets] for l in range(len(instance.layers))])


@functools.cache
def small_case(case: int) -> tuple[plan.Instance, np.ndarray]:
    """``small_instances()[case]`` and its :func:`exact_layer_times`, enumerated once for the two
    tests that compare against them (read only)."""
    instance = small_instances()[case]
    times = exact_layer_times(instance)
    times.flags.writeable = False
    return instance, times


@functools.cache
def optimum_of(seed: int) -> float:
    """The exact DP's optimum of ``plan.generate(seed, 2)``, solved once for the tests below."""
    return plan_exact.exact(plan.generate(seed, 2), SolveOptions(gap=1e-9)).solution["objective"]


@pytest.mark.parametrize("case", range(9))
def test_the_hull_bound_never_exceeds_a_segment_exact_value(case):
    instance, times = small_case(case)
    terms = plan_bound._Terms(instance)
    hull = plan_bound._Hull(terms)
    n = len(instance.layers)
    tight = 0
    for first in range(n):
        for last in range(first, n):
            exact = times[first: last + 1].sum(axis=0).min()
            found = hull.bound(first, last, math.inf) * terms.tau
            assert found <= exact * (1 + 1e-9)
            tight += found >= exact * (1 - 1e-6)
    assert tight > 0  # not vacuous: some segments are met exactly


@pytest.mark.parametrize("seed", range(3))
def test_the_hull_bound_is_at_least_the_continuous_relaxation(seed):
    """Kelley's LP on the secant cuts is below the continuous relaxation, which the hull bounds."""
    instance = plan.generate(seed, 2)
    terms = plan_bound._Terms(instance)
    hull = plan_bound._Hull(terms)
    n = len(instance.layers)
    rng = np.random.default_rng(seed)
    for layer in range(n):
        terms.cuts_at(layer, random_circuits(rng, instance.servers, instance.fabric.alpha))
    for first in range(n):
        relaxation = plan_bound._Relaxation(terms, first)
        for last in range(first, n):
            relaxation.add_layer(0.0)
            kelley = relaxation.kelley(plan_bound.LP_ROUNDS, math.inf)
            assert kelley is not None
            assert hull.bound(first, last, math.inf) >= kelley * (1 - 1e-7)


@pytest.mark.parametrize("seed", range(2))
def test_the_dp_on_hull_bounds_sits_between_the_relaxation_dp_and_the_optimum(seed):
    """On a fixed instance, every segment's bound from the hull (instead of the continuous
    relaxation) gives a DP value at least as high and never above the exact DP's optimum."""
    instance = plan.generate(seed, 2)
    optimum = optimum_of(seed)
    terms = plan_bound._Terms(instance)
    hull = plan_bound._Hull(terms)
    n = len(instance.layers)
    floors = plan_exact.layer_lower_bounds(instance, SolveOptions(gap=1e-9))
    relaxed, hulled = np.zeros((n, n)), np.zeros((n, n))
    for first in range(n):
        relaxation = plan_bound._Relaxation(terms, first)
        for last in range(first, n):
            relaxation.add_layer(floors[last] / terms.tau)
            relaxed[first, last] = relaxation.kelley(plan_bound.LP_ROUNDS, math.inf) * terms.tau
            hulled[first, last] = max(relaxed[first, last], hull.bound(first, last, math.inf) * terms.tau)
    before, _ = plan_bound._dp(instance, plan_bound._closure(relaxed))
    after, _ = plan_bound._dp(instance, plan_bound._closure(hulled))
    assert before <= after <= optimum * (1 + 1e-9)


@pytest.mark.parametrize("case", range(9))
def test_the_grown_hull_lp_prices_each_segment_as_its_own_lp_does(case):
    """``_HullLP`` grown a layer at a time (warm) gives each segment the bound of a fresh LP of that
    segment, and never more than the segment's exact value (brute force)."""
    instance, times = small_case(case)
    terms = plan_bound._Terms(instance)
    hull = plan_bound._Hull(terms)
    n = len(instance.layers)
    for first in range(n):
        lp = plan_bound._HullLP(hull, first)
        for last in range(first, n):
            lp.add_layer()
            grown = hull.value(first, *lp.solve(math.inf))
            assert grown == pytest.approx(hull.bound(first, last, math.inf), rel=1e-7, abs=1e-12)
            assert grown * terms.tau <= times[first: last + 1].sum(axis=0).min() * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_the_value_through_a_segment_is_the_least_plan_that_keeps_it(seed):
    """``_through(a, b)`` against every segmentation of a few layers (brute force), on random
    superadditive lower bounds; its least entry is the DP's value."""
    instance = plan.generate(seed, 2)
    n = min(6, len(instance.layers))
    instance = plan.Instance(instance.fabric, instance.delay, instance.layers[:n])
    rng = np.random.default_rng(seed)
    lower = plan_bound._closure(np.triu(rng.uniform(0.0, 1e-2, (n, n))))
    through = plan_bound._through(instance, lower)
    best = np.full((n, n), math.inf)
    for cuts in itertools.product((False, True), repeat=n - 1):
        starts = [0] + [k + 1 for k in range(n - 1) if cuts[k]]
        segments = list(zip(starts, [*starts[1:], n], strict=True))
        total = sum(instance.exposed(a) + lower[a, end - 1] for a, end in segments)
        for a, end in segments:
            best[a, end - 1] = min(best[a, end - 1], total)
    np.testing.assert_allclose(through, best, rtol=1e-12)  # inf where a > b on both sides
    assert through.min() == pytest.approx(plan_bound._dp(instance, lower)[0], rel=1e-12)


@pytest.mark.parametrize("seed,sweep", [(s, w) for s in range(3) for w in (False, True)])
def test_the_pricer_raises_the_dp_and_stays_below_the_optimum(seed, sweep):
    """From no bounds (or the tilings' bounds), the pricer runs until no least plan keeps a segment
    without its own hull LP: every segment of the DP's minimiser then has its own LP, the value is
    at least where it started, at most the DP with every segment's own LP, and below the exact
    optimum."""
    instance = plan.generate(seed, 2)
    optimum = optimum_of(seed)
    terms = plan_bound._Terms(instance)
    hull = plan_bound._Hull(terms)
    n = len(instance.layers)
    direct = np.zeros((n, n))
    if sweep:
        plan_bound._sweep(hull, direct, math.inf, math.inf)
    before, _ = plan_bound._dp(instance, plan_bound._closure(direct))
    pricer = plan_bound._Pricer(hull, n)
    steps = 0
    while True:
        closed = plan_bound._closure(direct)
        value, segments = plan_bound._dp(instance, closed)
        if not pricer.step(instance, closed, value, direct, math.inf):
            break
        steps += 1
    every = direct.copy()
    for first in range(n):
        for last in range(first, n):
            every[first, last] = max(every[first, last], hull.bound(first, last, math.inf) * terms.tau)
    assert steps > 0 or sweep
    assert all(last <= pricer.reach[first] for first, last in segments)
    assert before <= value * (1 + 1e-12)
    assert value <= plan_bound._dp(instance, plan_bound._closure(every))[0] * (1 + 1e-12)
    assert value <= optimum * (1 + 1e-9)
