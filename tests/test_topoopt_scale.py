"""TopoOpt at the papers' size: the pair-distance bound (valid, never looser than the Moore bound)
and the column-generation routing (feasible, at most the routing LP's optimum, within its own
dual bound of it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coopt.instance import load
from coopt.problem import NoSolution
from coopt.problems.topoopt import bound, brute, concurrent_flow, distance_bound, expander, rerouted, routing
from coopt.problems.topoopt import model as T
from coopt.problems.topoopt.heuristics import HEURISTICS, topology_finder_lp
from tests._topoopt_shared import tiny_optimum

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "topoopt"


def random_instance(seed: int, symmetric: bool, n: int | None = None) -> T.Instance:
    rng = np.random.default_rng(seed)
    n = n or int(rng.choice([6, 8, 10, 12]))
    return T.random_instance(rng, n, int(rng.integers(2, 5)), 100.0, symmetric=symmetric)


# -- the pair-distance bound -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_pair_distance_bound_holds_on_brute_forced_tiny_instances(seed):
    instance = brute.tiny(seed)
    best = tiny_optimum(seed)  # brute.solve(instance), shared with the other files' tiny-seed tests
    value = distance_bound.pair_distance_bound(instance)
    assert value <= bound.moore_bound(instance) * (1 + 1e-9)
    if best is not None:
        assert best <= value * (1 + 1e-9)


def test_pair_distance_bound_counts_the_reverse_neighbour_of_a_duplex_link():
    """n = 6, d = 2 duplex, 1 MB from every s to s + 1 and to s + 3. The Moore count puts both
    destinations one hop away: 2 MB per source, 12 MB. With duplex links the antipodal pairs
    {s, s + 3} carry 2 MB each and the pairs {s, s + 1} 1 MB; two neighbours per server hold the
    three antipodal pairs and three of the six ring pairs (9 MB at one hop), every pair is within
    two hops (4 >= 3 pairs per server), so the charge is 3 x 12 - 9 - 12 = 15 MB, and brute force
    over every 2-regular multigraph stays below it."""
    demand = tuple(sorted([(s, (s + 1) % 6, 1e6) for s in range(6)] + [(s, (s + 3) % 6, 1e6) for s in range(6)]))
    instance = T.Instance(6, 2, 100e9, (), demand, (), symmetric=True)
    moore = 6 * 2 * instance.port_rate / 12e6
    pair = 6 * 2 * instance.port_rate / 15e6
    assert bound.moore_bound(instance) == pytest.approx(moore, rel=1e-12)
    assert distance_bound.pair_distance_bound(instance) == pytest.approx(pair, rel=1e-9)
    assert bound.dual_bound(instance) <= pair * (1 + 1e-9)
    assert brute.solve(instance) <= pair * (1 + 1e-9)


#: P1's proven optima of the exact family (the exact-family table of docs/notes/topoopt.md, to three decimals).
EXACT_OPTIMA = {
    "0-exact-n6-d2-directed": 51.713, "0-exact-n6-d2": 45.962, "0-exact-n6-d4": 75.169,
    "0-exact-n8-d3-directed": 41.219, "0-exact-n8-d3": 39.716, "1-exact-n12-d2-directed": 28.908,
    "1-exact-n12-d2": 24.692, "1-exact-n12-d3-directed": 73.969, "1-exact-n12-d3": 73.969,
    "1-exact-n12-d4-directed": 96.655, "1-exact-n12-d4": 90.130, "1-exact-n6-d3-directed": 57.284,
    "1-exact-n6-d3": 43.873, "1-exact-n6-d4-directed": 75.169, "1-exact-n8-d2-directed": 40.782,
    "1-exact-n8-d2": 40.470, "1-exact-n8-d4-directed": 193.386, "1-exact-n8-d4": 193.386,
}


@pytest.mark.parametrize("name", sorted(EXACT_OPTIMA))
def test_pair_distance_bound_keeps_every_proven_optimum_of_the_exact_family(name):
    instance = load(INSTANCES / f"{name}.toml").instance
    value = distance_bound.pair_distance_bound(instance)
    assert EXACT_OPTIMA[name] - 5e-4 <= value * (1 + 1e-9)
    assert value <= bound.moore_bound(instance) * (1 + 1e-9)


def test_pair_distance_bound_is_tighter_on_the_mixed_traffic_of_ncf_n32():
    """Three AllReduce groups of distinct strides and block all-to-all on a degree-4 duplex fabric:
    the pairing costs neighbour slots the Moore count hands out twice."""
    instance = load(INSTANCES / "2-model-ncf-n32-d4-100g.toml").instance
    assert distance_bound.pair_distance_bound(instance) < bound.moore_bound(instance) * 0.99


def test_vertices_cover_every_stride_choice_or_charge_the_group_one_hop():
    """The groups enumerated times the groups charged one hop account for every group's bytes."""
    instance = load(INSTANCES / "2-model-ncf-n128-d8-100g.toml").instance
    choices, left_out = distance_bound.vertices(instance)
    kept = {c for choice in choices for _, c in choice}
    total = sum(T.ring_bytes(g) for g in instance.allreduce) * instance.servers
    assert sum(kept) * instance.servers + left_out == pytest.approx(total, rel=1e-12)
    strides = np.prod([len(T.candidate_strides(instance.servers, g.size)) for g in instance.allreduce
                       if T.ring_bytes(g) in kept])
    assert strides <= distance_bound.MAX_VERTICES and len(choices) >= strides // 2


# -- routing by column generation ----------------------------------------------------------------


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_column_generation_routes_within_its_bound_of_the_routing_lp(seed, symmetric):
    instance = random_instance(seed, symmetric)
    links = np.array(topology_finder_lp(instance)["links"])
    found = concurrent_flow.route(instance, links)
    optimum = routing.route(instance, links).theta
    assert T.check(instance, found.solution) == []
    assert found.solution["objective"] <= optimum * (1 + 1e-6)
    assert optimum <= found.graph_bound * (1 + 1e-6)
    assert found.solution["objective"] >= optimum * (1 - 5e-3)


def test_column_generation_declines_a_topology_that_cannot_carry_the_demand():
    instance = T.Instance(4, 1, 100e9, (), ((0, 2, 1e6),), (), symmetric=True)
    links = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])
    with pytest.raises(NoSolution):
        concurrent_flow.route(instance, links)


def test_expander_search_above_the_lp_size_routes_by_column_generation(monkeypatch):
    instance = random_instance(1, True, n=10)
    monkeypatch.setattr(expander, "LP_ROUTING_SERVERS", 4)
    found = expander.expander_search(instance, steps=200)
    assert T.check(instance, found) == []
    links = np.array(found["links"])
    assert found["objective"] <= routing.route(instance, links).theta * (1 + 1e-6)


def test_topology_finder_cg_is_declared_above_the_lp_size_and_never_below_topology_finder_lp():
    assert "topology_finder_cg" in HEURISTICS
    assert not rerouted.applies(random_instance(0, True, n=12))
    instance = T.generate(3, 14)  # n = 32
    assert rerouted.applies(instance)
    found = rerouted.topology_finder_cg(instance)
    assert T.check(instance, found) == []
    assert found["objective"] >= topology_finder_lp(instance)["objective"] * (1 - 1e-9)
