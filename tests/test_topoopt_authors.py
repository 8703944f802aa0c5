"""The transcription of the authors' TopologyFinder (FlexFlow network.cc, class SpMulMat) against
values worked out by hand from the C++ and against the figures a reviewer's independent
transcription reported (coopt issue 21)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coopt.instance import load
from coopt.problem import NoSolution
from coopt.problems.topoopt import authors as A
from coopt.problems.topoopt import heuristics as H
from coopt.problems.topoopt import model as T
from coopt.problems.topoopt.ecmp import EcmpRouting

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "topoopt"
RNG = np.random.default_rng(0)


def allreduce_only(n: int, d: int, *groups: tuple[int, float]) -> T.Instance:
    return T.Instance(n, d, 100e9, tuple(T.AllReduceGroup(k, b) for k, b in groups), ())


@pytest.mark.parametrize(("n", "d", "strides"), [
    # choose_n_geo over the odd strides 1..127 with ratio 127^(1/m): m = 2 gives 1, then the first
    # candidate >= 11.27, 13; m = 4 (ratio 3.357) gives 1, 5, 13, 39; each with its reverse n - q
    (128, 4, [1, 13, 115, 127]),
    (128, 8, [1, 5, 13, 39, 89, 115, 123, 127]),
    # n = 12: candidates 1, 5, 7, 11; m = 3 with ratio 11^(1/3) = 2.22 takes 1, 5, then 7 (5 is taken)
    (12, 6, [1, 5, 5, 7, 7, 11]),
])
def test_ring_strides_are_the_authors_walk(n, d, strides):
    links, paths = A.authors_topology(allreduce_only(n, d, (n, 1e8)), "head", RNG)
    assert sorted(sum(p) % n for p in paths[n]) == strides
    rows = np.arange(n)
    expected = np.zeros((n, n), dtype=int)
    for q in strides:
        expected[rows, (rows + q) % n] += 1
    assert (links == expected).all()


def test_the_heaviest_group_takes_every_ring_port_and_a_plus_minus_one_ring_is_forced():
    """Group 4 (of 8) is heavier than group 8: it gets d - 2 = 2 ring ports (stride 2 of its
    candidates 2, 6), the forced Hamiltonian ring the other 2 (stride 1); group 8 rides on it."""
    instance = allreduce_only(8, 4, (4, 4e8), (8, 1e8))
    assert A.ring_allocation(instance, 4) == [(4, 2), (8, 2)]
    links, paths = A.authors_topology(instance, "head", RNG)
    assert paths == {4: [[2], [6]], 8: [[1], [7]]}
    assert (links == links.T).all() and (links.sum(axis=1) == 4).all()


def test_a_group_without_rings_takes_the_first_shortest_coin_path_and_its_mirror():
    """n = 8, d = 2: the only ring is +-1; group 4's candidates 2 and 6 are both two coins away,
    2 = 1 + 1 first (ascending candidates, the set keeps the first path of each length), then
    its mirror 7 + 7 = 6."""
    instance = allreduce_only(8, 2, (8, 4e8), (4, 1e8))
    solution = H.topoopt_authors(instance)
    assert solution["ring_share"] == [[[1, 0.5], [7, 0.5]], [[2, 0.5], [6, 0.5]]]
    assert T.check(instance, solution) == []
    hops = {(i, j) for s, i, j, _ in solution["flows"] if s == 0}
    assert {(0, 1), (1, 2), (0, 7), (7, 6)} <= hops


@pytest.mark.parametrize(("t_dp", "t_mp", "d", "split"), [
    (1.0, 0.0, 4, (4, 0)),  # all rings
    (1.0, 1.0, 4, (2, 2)),  # even halves
    (3.0, 1.0, 4, (4, 0)),  # lround(3) = 3 is odd: raised to 4, the matchings lowered to 0
    (1.0, 100.0, 6, (2, 4)),  # lround(0.06) = 0 becomes 2, the matchings 6 - 2
    (1.0, 7.0, 4, None),  # lround(0.5) + lround(3.5) = 1 + 4 = 5: l.1893 asserts dp + mp = d
])
def test_prefinal_degree_split_follows_lround_and_the_parity_rules(t_dp, t_mp, d, split):
    """T_dp = (n/k) S (2k - 1) summed over tasks (not divided by k); T_mp the MP bytes."""
    n = k = 8
    s = t_dp / (2 * k - 1)  # one coset of all 8 servers: T_dp = S (2k - 1)
    instance = T.Instance(n, d, 100e9, (T.AllReduceGroup(k, s * 1e9),), ((0, 1, t_mp * 1e9),) if t_mp else ())
    assert A.degree_split(instance, "head") == (d, 0)
    if split is None:
        with pytest.raises(NoSolution, match="l.1893"):
            A.degree_split(instance, "prefinal")
    else:
        assert A.degree_split(instance, "prefinal") == split


def test_prefinal_matching_weighs_a_pair_by_its_higher_to_lower_demand():
    """network.cc l.2100-2106 writes the cost of pair {a < b} last for (i, j) = (b, a): only the
    demand b -> a counts. 0 -> 1 carries 100, 2 -> 0 carries 1: the matching takes {0, 2}."""
    instance = T.Instance(4, 2, 100e9, (), ((0, 1, 100e6), (2, 0, 1e6)))
    links = A._matchings(instance, 1)
    assert links[0, 2] == links[2, 0] == 1 and links[0, 1] == 0


def test_odd_degree_no_group_and_too_few_strides_are_no_solution_with_the_line():
    with pytest.raises(NoSolution, match="l.1929"):
        H.topoopt_authors(allreduce_only(8, 3, (8, 1e8)))
    with pytest.raises(NoSolution, match="l.1940"):
        H.topoopt_authors(T.Instance(8, 2, 100e9, (), ((0, 1, 1e6),)))
    # a heaviest group of size 2 has one candidate stride (n/2), but 4 ring ports ask for 2
    with pytest.raises(NoSolution, match="l.1822"):
        H.topoopt_authors(allreduce_only(8, 6, (2, 1e9), (8, 1e6)))


def test_the_authors_topology_routed_by_ecmp_gives_the_reviewers_figure():
    """Issue 21: on the n = 12, d = 4 exact instance (group of 6, directed links) "the authors' rings
    give 48.2 iterations/s": their topology is +-1 and +-2; with its rings' even split and ECMP
    routing it prices at 48.2. Their own routing (one random shortest path per pair) does worse."""
    instance = load(INSTANCES / "1-exact-n12-d4-directed.toml").instance
    links, paths = A.authors_topology(instance, "head", RNG)
    assert sorted(sum(p) % 12 for group in paths.values() for p in group) == [1, 2, 10, 11]
    shares = [[(2, 0.5), (10, 0.5)]]
    rate = EcmpRouting(links).rate(T.demand_matrix(instance, shares), instance.port_rate)
    assert rate == pytest.approx(48.2, abs=0.05)
    own = H.topoopt_authors(instance, seed=0)["objective"]
    assert own <= rate * (1 + 1e-9)


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("2-model-*-n16-*.toml")), ids=lambda p: p.stem)
def test_authors_solutions_are_feasible_and_seeded(path):
    instance = load(path).instance
    if not instance.allreduce:  # all model-parallel traffic: the released code reads an empty list
        with pytest.raises(NoSolution, match="l.1940"):
            H.topoopt_authors(instance)
        return
    a, b = H.topoopt_authors(instance, seed=3), H.topoopt_authors(instance, seed=3)
    assert a == b and T.check(instance, a) == []
    links = np.array(a["links"])
    assert (links == links.T).all()
