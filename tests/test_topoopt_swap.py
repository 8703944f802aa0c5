"""TopoOpt: the fast routing LP and its dual cuts, on which ``link_swap_search`` rests.

The fast LP (:class:`TopologyLP`: one ``Highs`` reused, flow columns laid out per topology) must give
P1's value with the links fixed, as P1's own Pyomo model solves it; its dual prices must bound every
other topology's ``theta`` from above (the Benders cut the search screens swaps with)."""

from __future__ import annotations

import numpy as np
import pytest

from coopt.problem import SolveOptions
from coopt.problems.topoopt import PROBLEM, finder, milp, swap
from coopt.problems.topoopt import heuristics as H
from coopt.problems.topoopt import model as T
from coopt.problems.topoopt.routing import SubsetCuts, TopologyLP, route
from coopt.run import run
from coopt.solvers.highs import solve_model

OPTIONS = SolveOptions(time_limit=60.0, threads=1)


def walk(instance: T.Instance, seed: int, steps: int) -> list[np.ndarray]:
    """``steps`` topologies: ``topology_finder``'s, then random degree-preserving swaps of it."""
    rng = np.random.default_rng(seed)
    links = np.array(H.topology_finder(instance)["links"])
    found = [links]
    while len(found) <= steps:
        moved = finder._swap(found[-1], instance.symmetric, rng, None)
        if moved is not None:
            found.append(moved)
    return found


def instance(seed: int, symmetric: bool) -> T.Instance:
    rng = np.random.default_rng(100 + seed)
    return T.random_instance(rng, int(rng.choice([5, 6, 8])) if not symmetric else int(rng.choice([6, 8])),
                             int(rng.integers(2, 4)), 100.0, symmetric=symmetric)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_the_fast_lp_equals_p1s_pyomo_model_on_fixed_links(seed, symmetric):
    inst = instance(seed, symmetric)
    lp = TopologyLP(inst)
    for links in walk(inst, seed, 4):
        result = solve_model(milp.build(inst, links=links), OPTIONS)
        fast = lp.solve(links)
        assert result.status == "optimal"
        assert fast == pytest.approx(result.objective, rel=1e-7, abs=1e-9)
        if result.objective < 1e-9:  # some demand unreachable on these links: theta = 0
            continue
        solution = swap.lp_routed_solution(inst, links, lp.routed())
        assert T.check(inst, solution) == []
        assert solution["objective"] == pytest.approx(result.objective, rel=1e-6)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_a_cut_bounds_every_topology_and_is_tight_where_it_was_taken(seed, symmetric):
    inst = instance(seed, symmetric)
    lp = TopologyLP(inst)
    topologies = walk(inst, seed, 25)
    cuts = []
    for links in topologies[:5]:
        theta = lp.solve(links)
        if theta > 0:
            prices = lp.prices()
            assert (prices >= 0).all()
            assert (prices * links).sum() == pytest.approx(theta, rel=1e-7)  # tight at its own links
            cuts.append(prices)
    assert cuts
    for links in topologies:
        routed = route(inst, links)
        theta = 0.0 if routed is None else routed.theta
        for prices in cuts:
            assert theta <= (prices * links).sum() * (1 + 1e-7) + 1e-9


@pytest.mark.parametrize("symmetric", [True, False])
def test_every_swap_of_the_enumeration_keeps_degrees_and_the_cut_bound_matches_its_links(symmetric):
    inst = instance(1, symmetric)
    links = np.array(H.topology_finder(inst)["links"])
    lp = TopologyLP(inst)
    lp.solve(links)
    y = lp.prices()
    w = (y + y.T if symmetric else y).ravel()
    s, b, c, t = swap._moves(links, symmetric)
    assert len(s) > 0
    bounds = swap._bounds(w[None, :], links, symmetric, s, b, c, t)[0]
    seen = set()
    for k in range(len(s)):
        new = swap.swapped_links(links, symmetric, int(s[k]), int(b[k]), int(c[k]), int(t[k]))
        assert (new.sum(axis=0) == inst.degree).all() and (new.sum(axis=1) == inst.degree).all()
        assert (new >= 0).all() and not np.diag(new).any() and (new != links).any()
        assert not symmetric or (new == new.T).all()
        assert bounds[k] == pytest.approx((y * new).sum(), rel=1e-9, abs=1e-12)
        seen.add(new.tobytes())
    # every swap of a random draw is among the enumerated ones
    rng = np.random.default_rng(0)
    for _ in range(200):
        moved = finder._swap(links, symmetric, rng, None)
        assert moved is None or moved.tobytes() in seen


def test_the_search_stops_at_the_port_bound_and_its_budget_binds():
    inst = instance(2, True)
    calls = []
    original = swap.Cuts.evaluate

    def counted(self, links):
        calls.append(self.evaluations)
        return original(self, links)

    swap.Cuts.evaluate = counted
    try:
        solution = H.link_swap_search(inst, seed=0, max_evaluations=3)
    finally:
        swap.Cuts.evaluate = original
    assert T.check(inst, solution) == []
    assert max(calls) <= 3


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_routable_says_exactly_when_the_lp_finds_a_positive_rate(seed, symmetric):
    """The reachability shortcut of ``TopologyLP.solve`` must agree with the LP itself (solved without
    it, by :func:`route`) on topologies that leave demand unreachable and on ones that do not."""
    rng = np.random.default_rng(200 + seed)
    verdicts = set()
    for trial in range(12):
        n = int(rng.choice([6, 8]))
        inst = T.random_instance(rng, n, 2, 100.0, density=float(rng.choice([0.05, 0.15])), symmetric=symmetric)
        links = np.zeros((n, n), dtype=int)
        for _ in range(1 + trial % 2):  # sparse: unions of cycles, often disconnected
            perm = rng.permutation(n)
            links[np.arange(n), perm] += 1
        np.fill_diagonal(links, 0)
        if symmetric:
            links = links + links.T
        lp = TopologyLP(inst)
        routable = lp.routable(links)
        assert routable == (route(inst, links) is not None), trial
        assert (lp.solve(links) > 0) == routable
        verdicts.add(routable)
    assert verdicts == {True, False}  # both cases were exercised


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_the_set_cut_bound_holds_on_every_topology_and_a_swap_s_bound_is_its_topology_s(seed, symmetric):
    inst = instance(seed, symmetric)
    lp, sets = TopologyLP(inst), SubsetCuts(inst)
    tight = 0
    for links in walk(inst, seed, 15):
        routed = route(inst, links)
        theta = 0.0 if routed is None else routed.theta
        bound = sets.bound(links)
        assert theta <= bound * (1 + 1e-9) + 1e-9
        tight += bound <= theta * (1 + 1e-9) + 1e-9
        assert lp.solve(links) == pytest.approx(theta, rel=1e-7, abs=1e-9)
    assert tight > 0  # the bound is attained on some of these topologies (a cut is the bottleneck)
    links = walk(inst, seed, 1)[0]
    s, b, c, t = swap._moves(links, symmetric)
    bounds = sets.swap_bounds(sets.capacity(links), s, b, c, t)
    for k in range(len(s)):
        new = swap.swapped_links(links, symmetric, int(s[k]), int(b[k]), int(c[k]), int(t[k]))
        assert bounds[k] == pytest.approx(sets.bound(new), rel=1e-12)


@pytest.mark.parametrize(("seed", "symmetric"), [(0, True), (3, True), (1, False)])
def test_where_the_search_stops_at_a_local_optimum_no_single_swap_is_better(seed, symmetric):
    """The search stops (no kicks) when its bounds prove that no swap of the current topology
    improves it; routing every swap of the returned topology with the independent LP must agree."""
    inst = instance(seed, symmetric)
    solution = H.link_swap_search(inst, seed=seed, patience=10 ** 6, max_evaluations=10 ** 6)
    assert T.check(inst, solution) == []
    links = np.array(solution["links"])
    s, b, c, t = swap._moves(links, symmetric)
    for k in range(len(s)):
        routed = route(inst, swap.swapped_links(links, symmetric, int(s[k]), int(b[k]), int(c[k]), int(t[k])))
        assert routed is None or routed.theta <= solution["objective"] * (1 + 1e-6)


def test_the_deep_search_never_falls_below_the_search_nor_rises_above_the_optimum():
    """Same seed, same walk, later stop: ``link_swap_deep`` is at least ``link_swap_search`` on
    each instance, strictly better where the search stops at a local optimum the deep one leaves
    (symmetric seeds 0 and 3: both n = 8), and never above P1's proven optimum."""
    strictly = []
    for seed, symmetric in [(0, True), (3, True), (4, False), (6, False)]:
        inst = instance(seed, symmetric)
        plain = H.link_swap_search(inst, seed=0)
        deep = H.link_swap_deep(inst, seed=0)
        assert T.check(inst, deep) == []
        assert deep["objective"] >= plain["objective"] * (1 - 1e-9)
        exact = run(PROBLEM, inst, "exact", OPTIONS)
        assert exact.status == "optimal"
        assert deep["objective"] <= exact.objective * (1 + 1e-6)
        strictly.append(deep["objective"] > plain["objective"] * (1 + 1e-6))
    assert any(strictly)


def test_the_deep_search_applies_where_the_routing_lp_does():
    assert H.HEURISTICS["link_swap_deep"].applies(T.generate(0, 6))  # 16 servers
    big = T.generate(0, 30)
    assert big.servers > swap.LP_SERVERS and not H.HEURISTICS["link_swap_deep"].applies(big)
