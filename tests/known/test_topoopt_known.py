"""TopoOpt P2 (stride rings + matchings, min time, McCormick-linearised) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pyomo.environ as pyo
import pytest

from coopt.problem import SolveOptions
from coopt.problems import topoopt
from coopt.problems.topoopt import model as T
from coopt.problems.topoopt.heuristics import solve_p2
from coopt.run import run
from coopt.solvers.highs import solve_model

OPTIONS = SolveOptions(gap=1e-9)


def symmetric_regular(n: int, degree: int) -> list[np.ndarray]:
    """Every symmetric zero-diagonal integer matrix with row sums ``degree``, by enumeration."""
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    found = []
    for counts in itertools.product(range(degree + 1), repeat=len(pairs)):
        m = np.zeros((n, n), dtype=int)
        for (i, j), c in zip(pairs, counts, strict=True):
            m[i, j] = m[j, i] = c
        if (m.sum(axis=1) == degree).all():
            found.append(m)
    return found


def directions(instance: T.Instance, strides: tuple[int, ...]) -> list[int]:
    """The permutations a ring set lays: each stride, and with duplex links its reverse too."""
    n = instance.servers
    if not instance.symmetric:
        return list(strides)
    return [r for q in strides for r in ([q] if 2 * q == n else [q, n - q])]


def time_on(instance: T.Instance, strides: tuple[int, ...], matching: np.ndarray) -> float:
    """min tau for a fixed ring set and matching: an LP over MP flows (seconds), written directly."""
    n = instance.servers
    strides = tuple(directions(instance, strides))
    rings = len(strides)
    c = T.ring_bytes(instance.allreduce[0]) / rings
    x = matching.copy()
    for q in strides:
        for i in range(n):
            x[i, (i + q) % n] += 1
    mp = T.mp_matrix(instance)
    arcs = [(i, j) for i in range(n) for j in range(n) if x[i, j]]
    lp = pyo.ConcreteModel()
    lp.f = pyo.Var(range(n), arcs, domain=pyo.NonNegativeReals)
    lp.tau = pyo.Var(domain=pyo.NonNegativeReals)
    lp.c = pyo.ConstraintList()
    for s in range(n):
        for v in range(n):
            out = sum(lp.f[s, a] for a in arcs if a[0] == v) - sum(lp.f[s, a] for a in arcs if a[1] == v)
            lp.c.add(out == (mp[s].sum() if v == s else -mp[s, v]) / 1e6)
    for i, j in arcs:
        ring = c * sum(1 for q in strides if (i + q) % n == j)
        lp.c.add(
            sum(lp.f[s, (i, j)] for s in range(n)) + ring / 1e6 <= instance.port_rate / 1e6 * lp.tau * x[i, j]
        )
    lp.c.add(lp.tau * instance.port_rate >= c)
    lp.obj = pyo.Objective(expr=lp.tau)
    result = solve_model(lp, OPTIONS)
    return result.objective if result.status == "optimal" else float("inf")


def brute_force_p2(instance: T.Instance) -> float:
    n, d = instance.servers, instance.degree
    candidates = T.candidate_strides(n, instance.allreduce[0].size)
    if instance.symmetric:
        candidates = [q for q in candidates if 2 * q <= n]
    best = float("inf")
    for rings in range(1, len(candidates) + 1):
        for strides in itertools.combinations(candidates, rings):
            ports = len(directions(instance, strides))
            if ports <= d:
                for matching in symmetric_regular(n, d - ports):
                    best = min(best, time_on(instance, strides, matching))
    return best


@pytest.mark.parametrize(("n", "d", "seed", "symmetric"),
                         [(4, 2, 0, False), (4, 3, 1, False), (6, 2, 2, False), (6, 3, 3, True), (4, 3, 4, True)])
def test_p2_equals_brute_force_and_is_p1_feasible(n, d, seed, symmetric):
    instance = T.random_instance(np.random.default_rng(seed), n, d, 100.0, density=0.4, symmetric=symmetric)
    tau, solution = solve_p2(instance, OPTIONS)
    assert tau == pytest.approx(brute_force_p2(instance), rel=1e-6)
    assert T.check(instance, solution) == []
    assert solution["objective"] >= (1 / tau) * (1 - 1e-6)
    p1 = run(topoopt.PROBLEM, instance, "exact", OPTIONS)
    assert p1.objective >= solution["objective"] * (1 - 1e-6)


def test_p2_allreduce_only_is_d_rings():
    """No MP traffic, directed links: all d ports become rings and tau is the ring closed form with r = d."""
    instance = T.Instance(8, 3, 100e9, (T.AllReduceGroup(8, 2e8),), (), symmetric=False)
    tau, solution = solve_p2(instance, OPTIONS)
    assert tau == pytest.approx(T.ring_bytes(instance.allreduce[0]) / (3 * instance.port_rate), rel=1e-6)
    assert len(solution["ring_share"][0]) == 3
