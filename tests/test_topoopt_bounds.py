"""TopoOpt closed forms against brute force, a step-by-step ring simulation and the solved P1."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems import topoopt
from coopt.problems.topoopt import bound, brute, distance_bound, routing
from coopt.problems.topoopt import model as T
from coopt.problems.topoopt import strides as topoopt_strides
from coopt.problems.topoopt.bound import dual_bound
from coopt.registry import closed_form as get
from coopt.run import run
from tests._topoopt_shared import exact_report, tiny_optimum

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "topoopt"


def cycles_of_stride(n: int, p: int) -> list[int]:
    """Cycle lengths of i -> i + p mod n, by walking the permutation."""
    seen, lengths = set(), []
    for start in range(n):
        if start in seen:
            continue
        v, length = start, 0
        while v not in seen:
            seen.add(v)
            v, length = (v + p) % n, length + 1
        lengths.append(length)
    return lengths


def test_stride_ring_is_hamiltonian_iff_coprime():
    bound = get("topoopt.hamiltonian_rings")
    for n in range(2, 121):
        hamiltonian = [p for p in range(1, n + 1) if cycles_of_stride(n, p) == [n]]
        assert hamiltonian == [p for p in range(1, n + 1) if math.gcd(p, n) == 1]
        assert len(hamiltonian) == int(sp.totient(n)) == len(T.candidate_strides(n, n))
        assert bound.evaluate({"n": n}) == len(hamiltonian)


@pytest.mark.parametrize(("n", "k"), [(12, 3), (12, 4), (16, 8), (30, 6), (64, 16)])
def test_group_strides_make_cosets_of_k_cycles(n, k):
    strides = T.candidate_strides(n, k)
    assert len(strides) == sp.totient(k)
    for p in strides:
        assert cycles_of_stride(n, p) == [k] * (n // k)


def simulate_ring_allreduce(k: int, size: float, rings: int, rate: float, latency: float) -> float:
    """Reduce-scatter then all-gather on ``rings`` rings: each ring moves a chunk of S/(k r) bytes
    per member per step; a step ends when the slowest member's send ends."""
    chunk = size / (k * rings)
    clock = 0.0
    for _phase in ("reduce-scatter", "all-gather"):
        for _step in range(k - 1):
            clock += max(latency + chunk / rate for _member in range(k))
    return clock


@pytest.mark.parametrize(
    ("k", "size", "rings", "latency"), [(2, 1e6, 1, 0), (8, 4e8, 4, 1e-6), (128, 1e9, 6, 5e-6)]
)
def test_ring_allreduce_matches_simulation(k, size, rings, latency):
    rate = 12.5e9
    closed = get("topoopt.ring_allreduce_time").evaluate(
        {"k": k, "S": size, "r": rings, "B": rate, "a": latency}
    )
    assert closed == pytest.approx(simulate_ring_allreduce(k, size, rings, rate, latency), rel=1e-12)


@pytest.mark.parametrize(("n", "d"), [(6, 2), (8, 3)])
def test_allreduce_only_p1_is_the_ring_time(n, d):
    """P1 on AllReduce alone: d parallel rings are optimal and 1/theta is T_AR with r = d, a = 0;
    the port bound is tight."""
    instance = T.Instance(n, d, 100e9, (T.AllReduceGroup(n, 3e8),), (), symmetric=False)
    report = run(topoopt.PROBLEM, instance, "exact", SolveOptions(gap=1e-9))
    ring = get("topoopt.ring_allreduce_time").evaluate(
        {"k": n, "S": 3e8, "r": d, "B": instance.port_rate, "a": 0}
    )
    assert 1 / report.objective == pytest.approx(ring, rel=1e-6)
    port = get("topoopt.port_bound").evaluate(
        {"d": d, "B": instance.port_rate, "D_max": T.busiest_sender(instance)}
    )
    assert report.objective == pytest.approx(port, rel=1e-6)


def integer_root_ceiling(n: int, d: int) -> int:
    a = 1
    while a**d < n:
        a += 1
    return a


def test_power_stride_diameter_bound():
    bound = get("topoopt.power_stride_diameter")
    for n in range(3, 200):
        for d in range(1, 5):
            a = integer_root_ceiling(n, d)
            strides = sorted({a**i % n for i in range(d)} - {0})
            diameter = max(topoopt_strides.circulant_distances(n, strides))
            assert diameter <= d * (a - 1)
            assert diameter <= bound.evaluate({"n": n, "d": d})


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("0-*.toml")), ids=lambda p: p.stem)
def test_port_bound_holds_on_solved_instances(path):
    instance = load(path).instance
    report = exact_report(path.stem)  # P1 at gap 1e-9 on this file, shared with test_topoopt's chain
    port = get("topoopt.port_bound").evaluate(
        {"d": instance.degree, "B": instance.port_rate, "D_max": T.busiest_sender(instance)}
    )
    assert report.objective <= port * (1 + 1e-9)
    assert report.objective <= distance_bound.pair_distance_bound(instance) * (1 + 1e-9)


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("2-model-*-n128-d[48]-100g.toml"))[:2])
def test_cost_closed_forms_price_the_similar_cost_fattree(path):
    """The fabric and fat-tree cost closed forms, fed the instance file's prices at the similar-cost
    rate, spend the same; at every priced rate they equal the solver's cost functions."""
    from coopt.problems.topoopt import heuristics as H

    instance = load(path).instance
    n, d, prices = instance.servers, instance.degree, instance.prices

    def priced(tier: T.PriceTier) -> dict[str, float]:
        return {
            "n": n, "c_nic": tier.nic, "c_tr": tier.transceiver, "c_pp": tier.patch_panel_port,
            "c_eps": tier.switch_port, "c_fib": prices.fibre_per_m, "L": prices.fibre_length,
        }

    def fabric(tier: T.PriceTier) -> float:
        bound = get("topoopt.fabric_cost")
        return bound.evaluate({k: v for k, v in priced(tier).items() if k != "c_eps"} | {"d": d})

    def fattree(tier: T.PriceTier) -> float:
        return get("topoopt.fattree_cost").evaluate({k: v for k, v in priced(tier).items() if k != "c_pp"})

    for tier in prices.tiers:
        gbps = tier.rate / 1e9
        assert fabric(tier) == pytest.approx(H.topoopt_cost(n, d, gbps, prices), rel=1e-12)
        assert fattree(tier) == pytest.approx(H.fattree_cost(n, gbps, prices), rel=1e-12)
    budget = fabric(H.tier_at(prices, instance.bandwidth / 1e9))
    assert fattree(H.tier_at(prices, H.similar_cost_fattree(instance))) == pytest.approx(budget, rel=1e-9)


# -- the registered dual bound -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_dual_bound_holds_on_brute_forced_tiny_instances(seed):
    instance = brute.tiny(seed)
    best = tiny_optimum(seed)  # brute.solve(instance), shared with the other files' tiny-seed tests
    if best is None:
        pytest.skip("no topology routes this demand")
    assert best <= dual_bound(instance) * (1 + 1e-9)
    assert best <= bound.moore_bound(instance) * (1 + 1e-9) and best <= bound.port_bound(instance) * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_directed_relaxation_is_the_port_bound(seed):
    """The claim that lets the bound skip the LP for directed links: P1's relaxation equals the port
    bound (so the registered bound is never weaker than the relaxation)."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([4, 6, 8, 10]))
    instance = T.random_instance(rng, n, int(rng.integers(1, min(5, n))), 100.0,
                                 density=float(rng.uniform(0.05, 0.6)), symmetric=False)
    relaxation = routing.relaxation(instance)  # one LP solve, used by both claims
    assert relaxation == pytest.approx(bound.port_bound(instance), rel=1e-7)
    assert dual_bound(instance) <= relaxation * (1 + 1e-9)


def test_moore_bound_is_tight_for_uniform_all_to_all_on_five_servers():
    """n = 5, d = 2, directed, 1 MB between every pair: any degree-2 digraph has 2 servers at one hop
    and at best 2 at two, so sum_t dist = 6 per source and theta <= 5 * 2 (B/8) / (30 MB); strides
    {1, 2} reach offsets 1, 2 in one hop and 3, 4 in two, and brute force finds exactly that rate."""
    instance = T.Instance(5, 2, 100e9, (), (), (T.ModelParallelGroup(5, 1e6),), symmetric=False)
    expected = 5 * 2 * instance.port_rate / (5 * 6 * 1e6)
    assert bound.moore_bound(instance) == pytest.approx(expected, rel=1e-12)
    assert bound.port_bound(instance) == pytest.approx(2 * instance.port_rate / 4e6, rel=1e-12)
    assert brute.solve(instance) == pytest.approx(expected, rel=1e-7)


def test_dual_bound_scales_to_the_papers_size():
    path = INSTANCES / "2-model-dlrm-n128-d4-100g.toml"
    instance = load(path).instance
    value = dual_bound(instance)
    assert math.isfinite(value) and value <= bound.port_bound(instance)


def test_fabric_cost_closed_form_follows_the_nic_sharing_rule():
    """One NIC per server (p = d = 4) at the default 100 G prices: 659 + 4 (99 + 100 + 150) = 2055."""
    import dataclasses

    from coopt.problems.topoopt import heuristics as H

    bound = get("topoopt.fabric_cost")
    assert bound.evaluate({"n": 1, "d": 4, "p": 4}) == pytest.approx(2055)
    for p in (1, 2, 3, 4):
        prices = dataclasses.replace(T.DEFAULT_PRICES, ports_per_nic=p)
        assert bound.evaluate({"n": 128, "d": 4, "p": p}) == pytest.approx(H.topoopt_cost(128, 4, 100, prices))
