"""mixnet (M1): the closed-form throughput against an LP and bisection, the authors' greedy against
hand traces of their code, the checker's rejections, the loader's messages, and the order
LP >= MILP >= each heuristic >= electrical-only on the shipped files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyomo.environ as pyo
import pytest

from coopt.errors import InstanceError
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.mixnet import circuits as H
from coopt.problems.mixnet import exact as mixnet_exact
from coopt.problems.mixnet import model
from coopt.problems.mixnet.model import Fabric, Instance, Traffic
from coopt.run import judge, run
from coopt.shipped import shipped
from coopt.solvers.highs import lp_relaxation, solve_model

PROBLEM = load(shipped("mixnet")[0]).problem
OPTIONS = SolveOptions(time_limit=60, gap=1e-9)


def instance_of(matrix, alpha=2, nics=4, rate=100e9, region=0) -> Instance:
    demand = tuple(tuple(float(v) for v in row) for row in matrix)
    return Instance(Fabric(alpha, nics, rate), (Traffic("t", region, demand),))


def lp_throughput(bits: np.ndarray, x: np.ndarray, fabric: Fabric) -> float:
    """max theta with rates, for fixed circuits, as an LP with every rate a variable."""
    n = len(bits)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j and bits[i, j] > 0]
    m = pyo.ConcreteModel()
    m.theta = pyo.Var(bounds=(0, None))
    m.o = pyo.Var(pairs, bounds=(0, None))
    m.e = pyo.Var(pairs, bounds=(0, None))
    unit = bits.max()  # keep the LP well scaled: bits / unit, rates / B
    rate = fabric.nic_rate
    m.serve = pyo.Constraint(pairs, rule=lambda m, i, j: m.o[i, j] + m.e[i, j] == m.theta * bits[i, j] / unit)
    m.cap = pyo.Constraint(pairs, rule=lambda m, i, j: m.o[i, j] <= x[i, j])
    eps = fabric.eps_rate / rate
    m.out = pyo.ConstraintList()
    for server in range(n):
        for side in (0, 1):
            column = [m.e[p] for p in pairs if p[side] == server]
            if column:
                m.out.add(sum(column) <= eps)
    m.obj = pyo.Objective(expr=m.theta, sense=pyo.maximize)
    result = solve_model(m, SolveOptions(gap=1e-9))
    return result.objective * rate / unit


@pytest.mark.parametrize("seed", range(12))
def test_closed_form_throughput_equals_the_rate_lp(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    bits = rng.integers(0, 20, (n, n)).astype(float) * 8e6 * (rng.random((n, n)) < 0.8)
    np.fill_diagonal(bits, 0.0)
    bits[0, 1] += 8e6
    alpha = int(rng.integers(1, 4))
    fabric = Fabric(alpha, alpha + int(rng.integers(1, 3)), 100e9)
    x = np.zeros((n, n), dtype=int)
    for _ in range(n):
        i, j = rng.choice(n, 2, replace=False)
        if x[i].sum() < alpha and x[j].sum() < alpha:
            x[i, j] += 1
            x[j, i] += 1
    assert model.throughput(bits, x, fabric) == pytest.approx(lp_throughput(bits, x, fabric), rel=1e-7)


def test_prefix_roots_equal_bisection_on_the_spill():
    rng = np.random.default_rng(3)
    demand = rng.random((50, 9)) * (rng.random((50, 9)) < 0.7)
    capacity = rng.integers(0, 3, (50, 9)).astype(float)
    roots = model.prefix_roots(demand, capacity, 0.7)
    for d, c, root in zip(demand, capacity, roots, strict=True):
        low, high = 0.0, 1e6
        for _ in range(200):
            mid = (low + high) / 2
            low, high = (mid, high) if np.maximum(mid * d - c, 0).sum() <= 0.7 else (low, mid)
        assert root == pytest.approx(low, rel=1e-9) if d.sum() > 0 else np.isinf(root)


def test_adding_a_circuit_never_lowers_the_throughput():
    rng = np.random.default_rng(5)
    for _ in range(40):
        bits = rng.random((5, 5)) * 1e9
        np.fill_diagonal(bits, 0)
        fabric = Fabric(3, 4, 100e9)
        x = np.zeros((5, 5), dtype=int)
        before = model.throughput(bits, x, fabric)
        for _ in range(6):
            i, j = rng.choice(5, 2, replace=False)
            x[i, j] += 1
            x[j, i] += 1
            after = model.throughput(bits, x, fabric)
            assert after >= before * (1 - 1e-12)
            before = after


# -- the authors' greedy, traced by hand from mixnet_topomanager.cpp:370-417 ------------------


def test_authors_greedy_gives_the_four_ring_traced_by_hand():
    # (0,1)=10 first, damped to 0.1; then (2,3)=8; then (1,2)=6 fills 1 and 2 (rows zeroed); then
    # (0,3)=1 is the largest left: a ring 0-1-2-3-0
    t = np.array([[0, 10, 4, 1], [10, 0, 6, 3], [4, 6, 0, 8], [1, 3, 8, 0]], dtype=float)
    ring = np.array([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]])
    assert (H.authors_greedy(t, 2) == ring).all()


def test_authors_greedy_damps_a_hot_pair_below_a_cold_one():
    # (0,1)=50 gets one circuit and drops to 50 / 100 = 0.5 < 1, so (0,2)=1 (row-major before
    # (1,2)) goes next, fills server 0, and (1,2) takes the last ports: one circuit per pair
    t = np.array([[0, 50, 1], [50, 0, 1], [1, 1, 0]], dtype=float)
    assert (H.authors_greedy(t, 2) == np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])).all()
    # at 1000 the damped 10 still beats 1: the pair takes both ports, server 2 none
    t[0, 1] = t[1, 0] = 1000
    assert (H.authors_greedy(t, 2) == np.array([[0, 2, 0], [2, 0, 0], [0, 0, 0]])).all()


def test_mixnet_greedy_plans_on_the_sum_of_both_directions():
    # D alone has its largest entry at (2, 0); D + D^T has (0, 1) = 5 + 4 = 9 > 7 + 0
    d = np.array([[0, 5, 0], [4, 0, 1], [7, 0, 0]], dtype=float) * 1e6
    solution = H.mixnet_greedy(instance_of(d, alpha=1, nics=2))
    assert np.array(solution["regions"][0]["circuits"])[0, 1] == 1


def test_uniform_traffic_with_enough_ports_gives_every_pair_a_circuit():
    d = np.ones((6, 6)) * 1e8
    for alpha in (5, 6):
        x = np.array(H.mixnet_greedy(instance_of(d, alpha=alpha, nics=8))["regions"][0]["circuits"])
        off = ~np.eye(6, dtype=bool)
        assert (x[off] >= 1).all() and (x.sum(axis=1) <= alpha).all()


# -- the checker --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    item = load(shipped("mixnet")[1])  # 0-sample-8x8-alpha6
    return item.instance, H.fill_and_swap(item.instance)


def violations(instance, solution) -> list[str]:
    return [v.split(":")[0] for v in judge(PROBLEM, instance, solution)["violations"]]


def test_the_checker_accepts_a_heuristic_solution(sample):
    instance, solution = sample
    assert judge(PROBLEM, instance, solution)["feasible"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s["regions"][0]["circuits"][0].__setitem__(1, 7), "symmetric"),
        (lambda s: s["regions"][0]["circuits"][3].__setitem__(3, 1), "diagonal"),
        (lambda s: s["regions"][0]["circuits"][0].__setitem__(0, -1), "circuits"),
        (lambda s: s["regions"][0]["circuits"][0].__setitem__(1, 0.5), "circuits"),
        (lambda s: s.__setitem__("regions", []), "regions"),
        (lambda s: s.__setitem__("theta_per_s", s["theta_per_s"] * 1.01), "theta"),
        (lambda s: s["traffic"][0]["eps_gbit_per_s"][1].__setitem__(2, 1e4), "served"),
        (lambda s: s.__setitem__("traffic", []), "rates"),
    ],
)
def test_the_checker_rejects(sample, change, expected):
    instance, solution = sample
    broken = json.loads(json.dumps(solution))
    change(broken)
    assert expected in violations(instance, broken)


def test_the_checker_finds_ports_capacity_and_hose_violations(sample):
    instance, solution = sample
    broken = json.loads(json.dumps(solution))
    x = broken["regions"][0]["circuits"]
    x[0][1] += 6
    x[1][0] += 6
    assert "ports" in violations(instance, broken)
    fair = json.loads(json.dumps(solution))
    rates = fair["traffic"][0]
    eps = np.array(rates["eps_gbit_per_s"])
    # at the optimum's theta some server's EPS is full (both sides tried): move circuit traffic there
    sides = [(eps.sum(axis=1), rates["ocs_gbit_per_s"]), (eps.sum(axis=0), np.array(rates["ocs_gbit_per_s"]).T)]
    full = instance.fabric.eps_rate / 1e9 * (1 - 1e-9)
    load, ocs = next((load, ocs) for load, ocs in sides if load.max() >= full)
    i = int(np.argmax(load))
    j = next(j for j in range(8) if j != i and ocs[i][j] > 0)
    if ocs is not rates["ocs_gbit_per_s"]:
        i, j = j, i
    moved = rates["ocs_gbit_per_s"][i][j]
    rates["ocs_gbit_per_s"][i][j] = 0.0
    rates["eps_gbit_per_s"][i][j] += moved
    found = violations(instance, fair)
    assert "eps_out" in found or "eps_in" in found
    over = json.loads(json.dumps(solution))
    k, m = next((k, m) for k in range(8) for m in range(8) if k != m and over["regions"][0]["circuits"][k][m] == 0
                and over["traffic"][0]["eps_gbit_per_s"][k][m] > 1)
    over["traffic"][0]["ocs_gbit_per_s"][k][m] += over["traffic"][0]["eps_gbit_per_s"][k][m]
    over["traffic"][0]["eps_gbit_per_s"][k][m] = 0.0
    assert "ocs_capacity" in violations(instance, over)


def test_the_checker_rejects_non_finite_numbers(sample):
    instance, solution = sample
    broken = json.loads(json.dumps(solution))
    broken["traffic"][0]["ocs_gbit_per_s"][0][1] = float("nan")
    assert not judge(PROBLEM, instance, broken)["feasible"]
    broken = json.loads(json.dumps(solution))
    broken["theta_per_s"] = float("inf")
    assert "theta" in violations(instance, broken)


# -- the loader ---------------------------------------------------------------------------

HEAD = 'problem = "mixnet"\nschema_version = 1\nalpha = {alpha}\nnic_gbit_per_s = 100.0\n'


@pytest.mark.parametrize(
    ("alpha", "tables", "field"),
    [
        (8, "[[traffic]]\ndemand_mb = [[0.0, 1.0], [1.0, 0.0]]\n", "alpha"),
        (2, "[[traffic]]\ndemand_mb = [[0.0, 1.0, 2.0], [1.0, 0.0, 3.0]]\n", "traffic[0].demand_mb"),
        (2, "[[traffic]]\ndemand_mb = [[5.0, 0.0], [0.0, 5.0]]\n", "traffic[0].demand_mb"),
        (2, "[[traffic]]\ndemand_mb = [[0.0, 1.0], [1.0, 0.0]]\n[[traffic]]\nregion = 2\n"
            "demand_mb = [[0.0, 1.0], [1.0, 0.0]]\n", "traffic"),
        (2, "[[traffic]]\ndemand_mb = [[0.0, 1.0], [1.0, 0.0]]\n[[traffic]]\n"
            "demand_mb = [[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]\n", "traffic[1].demand_mb"),
        (2, "[[traffic]]\ndemand_mb = [[0.0, -1.0], [1.0, 0.0]]\n", "traffic[0].demand_mb[0][1]"),
        (2, "[[traffic]]\ndemand_mb = [[0.0, 1e12], [1.0, 0.0]]\n", "traffic[0].demand_mb[0][1]"),
    ],
)
def test_bad_files_name_the_field(tmp_path, alpha, tables, field):
    path = tmp_path / "bad.toml"
    path.write_text(HEAD.format(alpha=alpha) + tables)
    with pytest.raises(InstanceError) as error:
        load(path)
    assert any(e.field == field for e in error.value.errors), [str(e) for e in error.value.errors]


# -- the order of the methods on the shipped files --------------------------------------------

SMALL_AND_MEDIUM = [p for p in shipped("mixnet") if p.name[0] in "01"]


@pytest.mark.parametrize("path", SMALL_AND_MEDIUM, ids=lambda p: p.stem)
def test_lp_milp_heuristics_and_electrical_only_are_ordered(path):
    item = load(path)
    optimum = run(PROBLEM, item.instance, "exact", OPTIONS)
    assert optimum.status == "optimal"
    relaxed = lp_relaxation(PROBLEM, item.instance, OPTIONS)
    assert relaxed >= optimum.objective * (1 - 1e-9)
    eps_only = model.electrical_only(item.instance)
    for method in ("mixnet_greedy", "fill_and_swap"):
        value = run(PROBLEM, item.instance, method, OPTIONS).objective
        assert eps_only * (1 - 1e-12) <= value <= optimum.objective * (1 + 1e-9), method
    assert optimum.objective <= model.port_bound(item.instance) * (1 + 1e-12)


def test_the_robust_allocation_beats_planning_on_either_scenario():
    item = load(Path(shipped("mixnet")[0]).parent / "0-wm-ep8-robust-stale.toml")
    robust = run(PROBLEM, item.instance, "exact", OPTIONS).objective
    for k in range(2):
        alone = item.instance.only_region(0)
        one = Instance(alone.fabric, (alone.traffic[k],))
        planned = mixnet_exact.exact(one, OPTIONS).solution
        circuits = [np.array(planned["regions"][0]["circuits"])]
        assert model.worst_case(item.instance, circuits) <= robust * (1 + 1e-9)
    mean = np.mean([t.bits() for t in item.instance.traffic], axis=0) / 8
    mean_plan = mixnet_exact.exact(instance_of(mean, alpha=6, nics=8, rate=200e9), OPTIONS).solution
    circuits = [np.array(mean_plan["regions"][0]["circuits"])]
    assert model.worst_case(item.instance, circuits) <= robust * (1 + 1e-9)


def test_regions_decompose_the_worst_case():
    item = load(Path(shipped("mixnet")[0]).parent / "0-two-regions-zipf.toml")
    both = run(PROBLEM, item.instance, "milp", OPTIONS).objective
    alone = [run(PROBLEM, item.instance.only_region(r), "milp", OPTIONS).objective for r in range(2)]
    assert both == pytest.approx(min(alone), rel=1e-9)


def test_the_generator_draws_every_family_and_respects_the_region_sizes():
    seen = set()
    for seed in range(40):
        instance = model.generate(seed, 2)
        seen.add(instance.traffic[0].name.split()[0])
        assert instance.regions == 2
        assert all(t.servers in model.REGION_SIZES for t in instance.traffic)
        assert instance.fabric.alpha in model.ALPHAS and instance.fabric.eps_rate > 0
    assert seen == {"uniform", "zipf", "pareto", "mixtral"}


# -- the local search's fast evaluation against the full recomputation ---------------------


def planner_of(instance: Instance) -> H.RegionPlanner:
    f = instance.fabric
    return H.RegionPlanner([t.bits() for t in instance.traffic], f.alpha, f.nic_rate, f.eps_rate)


def random_circuits(rng, servers: int, alpha: int) -> np.ndarray:
    x = np.zeros((servers, servers), dtype=int)
    for _ in range(servers * alpha):
        i, j = rng.choice(servers, 2, replace=False)
        if x[i].sum() < alpha and x[j].sum() < alpha:
            x[i, j] += 1
            x[j, i] += 1
    return x


def moved_by(x: np.ndarray, move) -> np.ndarray:
    moved = x.copy()
    for i, j, step in move:
        moved[i, j] += step
        moved[j, i] += step
    return moved


@pytest.mark.parametrize("seed", range(6))
def test_the_incremental_move_values_equal_the_checkers_recomputation(seed):
    """Every move the search lists keeps the port budgets and carries the moved rows of exactly
    the servers it touches; it and random pair changes besides, valued by the cached rows
    (:meth:`RegionPlanner._evaluate`, and the one-number-per-row shortcut of ``improve``), are
    valued as the checker's :func:`model.worst_case` values the moved circuits."""
    rng = np.random.default_rng(seed)
    instance = model.generate(seed, 1)
    planner = planner_of(instance)
    servers, alpha = planner.servers, planner.alpha
    checked = 0
    for _ in range(4):
        x = random_circuits(rng, servers, alpha)
        rows, free = planner._state(x)
        current, ranked = planner._current(rows)
        per_server = [min(r) for r in current]
        theta = min(per_server)
        listed = planner._neighbourhood(rows, free, per_server.index(theta), theta,
                                        list(range(len(planner.demand))))
        for move, keys in listed:
            moved = moved_by(x, move)
            assert (moved >= 0).all() and (moved.sum(axis=1) <= alpha).all()
            touched = list(dict.fromkeys(a for i, j, _ in move for a in (i, j)))
            assert keys == [(a, tuple(moved[a].tolist())) for a in touched]
        for _ in range(20):  # random changes of 1 to 3 pairs that keep the budgets
            pairs = [tuple(rng.choice(servers, 2, replace=False)) for _ in range(int(rng.integers(1, 4)))]
            move = tuple((int(i), int(j), int(rng.choice([-1, 1]))) for i, j in dict.fromkeys(pairs))
            moved = moved_by(x, move)
            if (moved >= 0).all() and (moved.sum(axis=1) <= alpha).all():
                touched = list(dict.fromkeys(a for i, j, _ in move for a in (i, j)))
                listed.append((move, [(a, tuple(moved[a].tolist())) for a in touched]))
        order = sorted(range(servers), key=per_server.__getitem__)[:5]
        for (move, touched, roots), (_, keys) in zip(planner._candidates(listed), listed, strict=True):
            moved = moved_by(x, move)
            thetas = planner._evaluate(touched, roots, ranked, current)
            full = planner.roots(moved).min(axis=(1, 2))
            assert thetas == pytest.approx(full.tolist(), rel=1e-12)
            assert min(thetas) * planner.rate_per_unit == pytest.approx(model.worst_case(instance, [moved]), rel=1e-9)
            lows = planner.cached_lows(keys)
            shortcut = min(lows + [per_server[s] for s in order if s not in touched][:1])
            assert shortcut == min(thetas)
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("seed", range(6))
def test_the_floor_leaves_out_only_moves_below_it(seed):
    """With a floor, :meth:`RegionPlanner._neighbourhood` lists the moves of the full list in
    their order, leaving out only moves whose worst case (recomputed on the moved circuits) is
    below the floor, and keeping every move all of whose touched servers stay at or above it
    (so the search loses no move it could take); at the search's floor and at higher ones."""
    rng = np.random.default_rng(200 + seed)
    instance = model.generate(seed, 1)
    planner = planner_of(instance)
    which = list(range(len(planner.demand)))
    dropped = 0
    for _ in range(6):
        x = random_circuits(rng, planner.servers, planner.alpha)
        rows, free = planner._state(x)
        per_server = [min(r) for r in planner._current(rows)[0]]
        theta = min(per_server)
        b = per_server.index(theta)
        full = planner._neighbourhood(rows, free, b, theta, which)
        levels = sorted(set(per_server))
        for floor in {theta * (1 - 1e-12), *levels[1:3]}:
            kept = planner._neighbourhood(rows, free, b, theta, which, floor)
            assert kept == [item for item in full if item in kept]
            for move, keys in full:
                lows = planner.cached_lows(keys)
                if (move, keys) not in kept:
                    dropped += 1
                    assert model.worst_case(instance, [moved_by(x, move)]) < floor * planner.rate_per_unit
                elif len(move) != 3 or len(keys) != 3:  # (not the re-point onto u: two circuits to u)
                    assert min(lows[1:], default=math.inf) >= floor * (1 - 1e-6), move
                if min(lows[1:], default=math.inf) >= floor:
                    assert (move, keys) in kept
    assert dropped > 0


@pytest.mark.parametrize("seed", range(4))
def test_the_screened_trades_are_those_that_lift_the_bottleneck(seed):
    """The spill test of :meth:`RegionPlanner.lifting_trades` keeps exactly the trades whose new
    row (recomputed with :func:`model.prefix_roots`) lifts the bottleneck above theta."""
    rng = np.random.default_rng(100 + seed)
    instance = model.generate(seed, 1)
    planner = planner_of(instance)
    which = list(range(len(planner.demand)))
    for _ in range(5):
        x = random_circuits(rng, planner.servers, planner.alpha)
        rows, free = planner._state(x)
        roots = planner.roots(x).min(axis=(0, 1))
        b = int(np.argmin(roots))
        theta = float(roots[b])
        want = []
        for m in [m for m in range(planner.servers) if x[b, m] > 0] + ([-1] if free[b] > 0 else []):
            for u in range(planner.servers):
                if u in (b, m):
                    continue
                moved = x.copy()
                if m >= 0:
                    moved[b, m] -= 1
                    moved[m, b] -= 1
                moved[b, u] += 1
                moved[u, b] += 1
                if planner.roots(moved)[:, :, b].min() > theta * (1 + 1e-9):
                    want.append((m, u))
        assert planner.lifting_trades(rows, free, b, theta, which) == want
