"""mixnet and mixnet_plan on instances whose optima are derived by hand (each case's comment gives
the derivation); every exact method must reach them."""

from __future__ import annotations

import numpy as np
import pytest

from coopt import registry
from coopt.problem import SolveOptions
from coopt.problems.mixnet.model import Fabric, Instance, Traffic
from coopt.problems.mixnet.plan_model import Instance as PlanInstance
from coopt.problems.mixnet.plan_model import Layer
from coopt.run import run

OPTIONS = SolveOptions(time_limit=60, gap=1e-9)
B = 100e9  # bit/s per NIC
D = 1e8  # bytes per pair: 8e8 bits


def uniform(servers: int) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(0.0 if i == j else D for j in range(servers)) for i in range(servers))


CASES = [
    # two servers, one circuit and one EPS NIC: the pair carries B on each fabric, theta = 2B / 8D
    ("pair", Instance(Fabric(1, 2, B), (Traffic("", 0, uniform(2)),)), 2 * B / (8 * D)),
    # three servers, one port each: one circuit at most, and the server left out sends 2 x 8D on
    # its EPS NIC alone, so theta = B / 16D, as with no circuit at all
    ("odd triangle", Instance(Fabric(1, 2, B), (Traffic("", 0, uniform(3)),)), B / (16 * D)),
    # four servers, one port each: a perfect matching, each server's other two partners on its
    # EPS NIC: 2 theta 8D <= B, theta = B / 16D (1.5 x the B / 24D of the EPS alone)
    ("matching", Instance(Fabric(1, 2, B), (Traffic("", 0, uniform(4)),)), B / (16 * D)),
    # four servers, two ports and one EPS NIC: a 4-cycle leaves one partner on the EPS, theta = B / 8D,
    # which is the port bound (2B + B) / (3 x 8D)
    ("cycle", Instance(Fabric(2, 3, B), (Traffic("", 0, uniform(4)),)), B / (8 * D)),
    # the matching case twice, in two regions, the second with half the traffic: the first sets it
    ("two regions", Instance(Fabric(1, 2, B), (Traffic("", 0, uniform(4)),
                                                 Traffic("", 1, tuple(tuple(v / 2 for v in r) for r in uniform(4))))),
     B / (16 * D)),
]


@pytest.mark.parametrize(("name", "instance", "theta"), CASES, ids=[c[0] for c in CASES])
def test_circuit_optima_derived_by_hand(name, instance, theta):
    problem = registry.get("mixnet")
    for method in problem.exact_methods:
        report = run(problem, instance, method, OPTIONS)
        assert report.status == "optimal"
        assert report.objective == pytest.approx(theta, rel=1e-7), method  # the oracle tests' tolerance


def test_robust_pair_of_scenarios_derived_by_hand():
    # four servers, one port and one EPS NIC, v = 8D bits: scenario A sends 8v on pairs 0-1 and
    # 2-3 and v elsewhere, scenario B the same on 0-2 and 1-3. With no circuit a server's EPS
    # carries 10 v theta <= B. A perfect matching on a hot pair of A gives A: (8 v theta - B)^+ +
    # 2 v theta <= B, theta = B / 5v, but B then has its hot pair on the EPS: 9 v theta <= B; the
    # matching 0-3 | 1-2 has 9 v theta <= B in both. No set beats the worst case B / 9v = B / 72D.
    hot_a, hot_b = ((0, 1), (2, 3)), ((0, 2), (1, 3))

    def matrix(hot):
        m = [[0.0 if i == j else D for j in range(4)] for i in range(4)]
        for i, j in hot:
            m[i][j] = m[j][i] = 8 * D
        return tuple(tuple(r) for r in m)

    instance = Instance(Fabric(1, 2, B), (Traffic("A", 0, matrix(hot_a)), Traffic("B", 0, matrix(hot_b))))
    problem = registry.get("mixnet")
    for method in problem.exact_methods:
        assert run(problem, instance, method, OPTIONS).objective == pytest.approx(B / (72 * D), rel=1e-7)


def test_plan_optimum_derived_by_hand():
    # two servers, one port and one EPS NIC each, two layers of D each way: one circuit carries
    # every layer at theta = 2B / 8D, so the best plan configures once: e_0 + 2 x 8D / 2B.
    layers = tuple(Layer(f"{k}", uniform(2), 1, 1e-3) for k in range(2))
    instance = PlanInstance(Fabric(1, 2, B), 5e-3, layers)
    expected = 4e-3 + 2 * 8 * D / (2 * B)
    problem = registry.get("mixnet_plan")
    for method in problem.exact_methods:
        report = run(problem, instance, method, OPTIONS)
        assert report.status == "optimal"
        assert report.objective == pytest.approx(expected, rel=1e-7), method
        assert len(report.solution["segments"]) == 1
    bound = run(problem, instance, "bound", OPTIONS)  # the segment DP finishes: its bound is the optimum
    assert np.isclose(bound.bound, expected, rtol=1e-9)
    assert "the optimum" in bound.solver["bound"]
