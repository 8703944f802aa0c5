"""TopoOpt: P1 against brute force, the heuristics against P1, the checker against broken solutions,
P3 against repeated matching, P4 against the geometric strides, instance files."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from coopt.errors import InstanceError
from coopt.formulations import topoopt
from coopt.formulations.topoopt import matching as topoopt_matching
from coopt.formulations.topoopt import model as T
from coopt.formulations.topoopt import strides as topoopt_strides
from coopt.instance import load, to_toml
from coopt.problem import NoSolution, SolveOptions
from coopt.run import run
from coopt.solvers import topoopt as H
from coopt.solvers.highs import lp_relaxation, solve_model

PROBLEM = topoopt.PROBLEM
INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "topoopt"
OPTIONS = SolveOptions(gap=1e-9)


def tiny(n: int, d: int, seed: int) -> T.Instance:
    return T.random_instance(np.random.default_rng(seed), n, d, 100.0, density=0.3)


def regular_matrices(n: int, d: int) -> list[np.ndarray]:
    """Every zero-diagonal nonnegative integer matrix with row and column sums d, by brute force:
    each row any split of d over the other n - 1 servers, kept when the columns sum to d too."""

    def rows(i):
        for counts in itertools.product(range(d + 1), repeat=n - 1):
            if sum(counts) == d:
                yield counts[:i] + (0,) + counts[i:]

    found = []
    for choice in itertools.product(*(list(rows(i)) for i in range(n))):
        x = np.array(choice)
        if (x.sum(axis=0) == d).all():
            found.append(x)
    return found


def routed_rate(instance: T.Instance, links: np.ndarray) -> float:
    try:
        return H.route_lp(instance, links)["objective"]
    except NoSolution:
        return 0.0


# -- P1 against brute force ------------------------------------------------------------------


@pytest.mark.parametrize(("n", "d", "seed"), [(4, 1, 0), (5, 1, 4), (4, 2, 1), (4, 3, 3)])
def test_p1_equals_best_topology_by_enumeration(n, d, seed):
    instance = tiny(n, d, seed)
    best = max(routed_rate(instance, x) for x in regular_matrices(n, d))
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.status == "optimal" and report.check["feasible"]
    assert report.objective == pytest.approx(best, rel=1e-6)


def test_p1_with_a_single_ring_is_the_ring_closed_form():
    """n = 4, d = 1, AllReduce only: a Hamiltonian ring is optimal, theta = B / (8 c)."""
    instance = T.Instance(4, 1, 100e9, (T.AllReduceGroup(4, 1e9),), ())
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.objective == pytest.approx(100e9 / 8 / T.ring_bytes(instance.allreduce[0]), rel=1e-6)


# -- heuristics against P1 -------------------------------------------------------------------

SMALL = sorted(INSTANCES.glob("0-*.toml")) + sorted(INSTANCES.glob("1-exact-n8*.toml"))


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_lp_milp_heuristic_chain(path):
    instance = load(path).instance
    milp = run(PROBLEM, instance, "exact", OPTIONS)
    assert milp.status == "optimal" and milp.check["feasible"], milp.check
    assert len(T.permutations_of(np.array(milp.solution["links"]))) == instance.degree
    lp = lp_relaxation(PROBLEM, instance)
    assert lp >= milp.objective * (1 - 1e-6)
    for name, heuristic in H.HEURISTICS.items():
        solution = heuristic(instance)
        assert T.check(instance, solution) == [], name
        assert solution["objective"] == pytest.approx(T.objective(instance, solution), rel=1e-9)
        assert solution["objective"] <= milp.objective * (1 + 1e-6), name
        routed = H.route_lp(instance, np.array(solution["links"]))
        assert solution["objective"] <= routed["objective"] * (1 + 1e-6) <= milp.objective * (1 + 2e-6)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", sorted(H.HEURISTICS))
def test_heuristics_are_regular_connected_and_deterministic(seed, method):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([6, 8, 10, 12, 16]))
    instance = T.random_instance(rng, n, int(rng.integers(1, 5)), 40.0)
    solution = H.HEURISTICS[method](instance, seed=seed)
    assert T.check(instance, solution) == []
    perms = T.permutations_of(np.array(solution["links"]))
    assert len(perms) == instance.degree
    assert all(sorted(p) == list(range(n)) and all(p[i] != i for i in range(n)) for p in perms)
    assert H.HEURISTICS[method](instance, seed=seed) == solution


def test_topology_finder_covers_odd_n_and_small_groups():
    instance = T.Instance(
        9, 3, 100e9, (T.AllReduceGroup(3, 1e8), T.AllReduceGroup(9, 5e7)), ((0, 4, 1e6), (5, 2, 3e6))
    )
    for method in ("topology_finder", "rings_only"):
        assert T.check(instance, H.HEURISTICS[method](instance)) == []


# -- the checker judges --------------------------------------------------------------------


@pytest.fixture(scope="module")
def good():
    instance = load(INSTANCES / "0-exact-n6-d2.toml").instance
    return instance, H.topology_finder(instance)


def _broken(solution, **change):
    return {**solution, **change}


def test_checker_rejects_broken_solutions(good):
    instance, solution = good
    assert T.check(instance, solution) == []
    n = instance.servers
    cases = {
        "links": _broken(solution, links=None),
        "out_degree": _broken(solution, links=[[int(i != j) for j in range(n)] for i in range(n)]),
        "ring_share": _broken(solution, ring_share=[[[n + 1, 1.0]]]),
        "ring_share.sum": _broken(solution, ring_share=[[[1, 0.5]]]),
        "flows": _broken(solution, flows="none"),
        "conservation": _broken(solution, flows=solution["flows"][1:]),
    }
    for constraint, broken in cases.items():
        assert constraint in {v.constraint for v in T.check(instance, broken)}, constraint
    assert T.check(instance, {}) != []
    missing_link = [row[:] for row in solution["links"]]
    s, i, j, _ = solution["flows"][0]
    missing_link[i][j] = 0
    assert "capacity" in {v.constraint for v in T.check(instance, _broken(solution, links=missing_link))}


def test_objective_is_the_tightest_arc(good):
    instance, solution = good
    load_ = np.zeros((instance.servers,) * 2)
    for _, i, j, b in solution["flows"]:
        load_[i, j] += b
    x = np.array(solution["links"])
    ratios = [instance.port_rate * x[i, j] / load_[i, j] for i, j in zip(*np.nonzero(load_), strict=True)]
    assert T.objective(instance, solution) == pytest.approx(min(ratios))
    doubled = {**solution, "flows": [[s, i, j, 2 * b] for s, i, j, b in solution["flows"]]}
    assert T.objective(instance, doubled) == pytest.approx(min(ratios) / 2)


# -- P3: repeated matching against the b-matching MILP ---------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_repeated_matching_never_beats_bmatching(seed):
    rng = np.random.default_rng(seed)
    n, rounds = 6, int(rng.integers(1, 4))
    weights = np.triu(rng.lognormal(0, 1, (n, n)) * (rng.random((n, n)) < 0.5), 1)
    links = H.repeated_matching(weights, rounds)
    assert (links.sum(axis=0) == rounds).all() and (links == links.T).all()
    greedy = topoopt_matching.bmatching_value(
        weights, {(i, j): int(links[i, j]) for i in range(n) for j in range(i + 1, n) if links[i, j]}
    )
    model = topoopt_matching.build_bmatching(weights, rounds)
    result = solve_model(model, OPTIONS)
    assert result.status == "optimal"
    assert greedy <= result.objective * (1 + 1e-9)
    # brute force for one round: the best perfect matching by enumeration
    if rounds == 1:

        def matchings(nodes):
            if not nodes:
                yield []
                return
            a = nodes[0]
            for b in nodes[1:]:
                rest = [v for v in nodes if v not in (a, b)]
                for m in matchings(rest):
                    yield [(a, b), *m]

        best = max(sum(weights[a, b] + weights[b, a] for a, b in m) for m in matchings(list(range(n))))
        assert result.objective == pytest.approx(best) == pytest.approx(greedy)


# -- P4 and the geometric strides ------------------------------------------------------------

GEOMETRIC = [
    (12, 4, (1, 5, 7, 11), 3, 1.818),
    (16, 4, (1, 3, 7, 15), 4, 2.133),
    (128, 4, (1, 7, 27, 127), 9, 4.913),
    (128, 8, (1, 3, 5, 9, 17, 33, 65, 127), 6, 3.181),
    (64, 3, (1, 9, 63), 10, 5.206),
    (30, 3, (1, 7, 29), 6, 3.414),
]


@pytest.mark.parametrize(("n", "d", "strides", "diameter", "mean"), GEOMETRIC)
def test_geometric_strides_match_the_authors_rule(n, d, strides, diameter, mean):
    chosen = H.select_permutations(T.candidate_strides(n, n), d)
    assert tuple(chosen) == strides
    graph = nx.DiGraph([(i, (i + p) % n) for i in range(n) for p in chosen])
    hops = nx.single_source_shortest_path_length(graph, 0)
    assert max(hops.values()) == diameter
    assert H.circulant_mean_hops(n, chosen) == pytest.approx(mean, abs=5e-4)


@pytest.mark.parametrize(("n", "d"), [(12, 2), (16, 3), (20, 4), (30, 3)])
def test_p4_enumeration_is_optimal_and_bounds_geometric(n, d):
    rng = np.random.default_rng(n * d)
    demand = rng.lognormal(0, 1, (n, n)) * (rng.random((n, n)) < 0.2)
    np.fill_diagonal(demand, 0)
    weight = topoopt_strides.offset_weights(n, demand)
    best, cost = topoopt_strides.select_strides_exact(n, d, weight)
    total = demand.sum()
    for subset in itertools.combinations(T.candidate_strides(n, n), d):
        graph = nx.DiGraph([(i, (i + p) % n) for i in range(n) for p in subset])
        hops = dict(nx.all_pairs_shortest_path_length(graph))
        assert (
            cost
            <= sum(demand[i, j] * hops[i][j] for i, j in zip(*np.nonzero(demand), strict=True)) / total + 1e-9
        )
    geometric = H.select_permutations(T.candidate_strides(n, n), d)
    assert topoopt_strides.stride_cost(n, geometric, weight) >= cost - 1e-12
    assert len(best) == d


def test_select_permutations_clamps_and_repeats():
    assert H.select_permutations([2, 4], 3) == [2, 2, 4]
    for n in range(3, 130):
        for d in range(1, 9):
            chosen = H.select_permutations(T.candidate_strides(n, n), d)
            assert len(chosen) == d and chosen[0] == 1


# -- instance files --------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("*.toml")), ids=lambda p: p.stem)
def test_shipped_instances_round_trip(path, tmp_path):
    instance = load(path).instance
    copy = tmp_path / "copy.toml"
    copy.write_text(to_toml(PROBLEM, instance))
    assert load(copy).instance == instance


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            "servers = 6\ndegree = 2\nbandwidth_gbps = 100\n[[allreduce]]\nsize = 4\nbytes = 1e6\n",
            "allreduce[0].size",
        ),
        ("servers = 6\ndegree = 6\nbandwidth_gbps = 100\nmp_demand = [[0, 1, 5.0]]\n", "degree"),
        ("servers = 6\ndegree = 2\nbandwidth_gbps = 100\nmp_demand = [[0, 6, 5.0]]\n", "mp_demand[0]"),
        ("servers = 6\ndegree = 2\nbandwidth_gbps = 100\nmp_demand = [[2, 2, 5.0]]\n", "mp_demand[0]"),
        ("servers = 6\ndegree = 2\nbandwidth_gbps = 100\n", "allreduce"),
    ],
)
def test_bad_instance_files_name_the_field(body, field, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('problem = "topoopt"\nschema_version = 1\n' + body)
    with pytest.raises(InstanceError) as err:
        load(path)
    assert err.value.field == field and str(path) in str(err.value)


def test_generate_is_seeded():
    assert PROBLEM.generate(3, 2) == PROBLEM.generate(3, 2) != PROBLEM.generate(4, 2)
    assert math.isfinite(H.topology_finder(PROBLEM.generate(3, 2))["objective"])


def test_permutation_split_rejects_irregular_links():
    with pytest.raises(ValueError):
        T.permutations_of(np.array([[0, 2, 0], [0, 0, 1], [1, 0, 0]]))
    perms = T.permutations_of(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]))
    assert sorted(map(tuple, perms)) == [(1, 2, 0), (2, 0, 1)]
