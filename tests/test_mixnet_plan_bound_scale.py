"""The server-hull bound of the plan's segments (``plan_bound._Hull``): its tables are the closed
form, it never exceeds a segment's exact value (brute force over every circuit set), it is at least
the continuous relaxation, and the segment DP on it stays between that relaxation's DP and the
optimum."""

from __future__ import annotations

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


@pytest.mark.parametrize("case", range(9))
def test_the_hull_bound_never_exceeds_a_segment_exact_value(case):
    instance = small_instances()[case]
    terms = plan_bound._Terms(instance)
    hull = plan_bound._Hull(terms)
    n = len(instance.layers)
    sets = list(every_circuit_set(instance.servers, instance.fabric.alpha))
    times = np.array([[instance.layer_time(l, x) for x in sets] for l in range(n)])
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
    optimum = plan_exact.exact(instance, SolveOptions(gap=1e-9)).solution["objective"]
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
