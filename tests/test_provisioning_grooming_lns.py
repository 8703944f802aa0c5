"""The plan search of Model C (grooming_lns): restricted plan models, the search's incumbents, and
``plan_layout_grooming`` built on it, against the plan relaxation's optimum and the exact route."""

from __future__ import annotations

import random
import time

import pyomo.environ as pyo
import pytest

from coopt.problem import SolveOptions
from coopt.problems import provisioning
from coopt.problems.provisioning import grooming_bound as GB
from coopt.problems.provisioning import grooming_heuristics as H
from coopt.problems.provisioning import grooming_layout as L
from coopt.problems.provisioning import grooming_lns as LNS
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning import model as P
from coopt.run import run
from coopt.solvers.highs import solve_model

NODES = ("a", "b", "c", "d")
RING = (("a", "b", 300), ("b", "c", 400), ("c", "d", 300), ("a", "d", 500))
FORMATS = (P.Modulation("QPSK", 25e9, 2000e3), P.Modulation("16QAM", 50e9, 500e3))
CLASSES = (P.PriorityClass("gold", 100, 0.25), P.PriorityClass("silver", 10, 0.5),
           P.PriorityClass("bronze", 1, 0.75))


def congested(seed: int, requests: int = 6) -> G.Instance:
    """A 4-node ring, 4 slots, widths {2, 3}, 2 transponders per node, H = 2: more demand than
    lightpaths, so plans differ in what they serve."""
    rng = random.Random(seed)
    reqs = []
    for _ in range(requests):
        s, d = rng.sample(NODES, 2)
        reqs.append(P.Request(s, d, rng.choice((30, 50, 80)) * 1e9, 1.0, 0.0, rng.randint(1, 3)))
    return G.Instance(NODES, tuple(P.Link(a, b, km * 1e3) for a, b, km in RING), 4, 12.5e9, 1, 2, FORMATS,
                      CLASSES, (2, 3), 2, 2, bool(seed % 2), tuple(reqs))


def _served(instance: G.Instance, routes: dict[int, tuple[str, ...]]) -> int:
    return sum(G.served_weight(instance, r) for r in routes)


def _plan_is_a_point(instance: G.Instance, kinds: list[GB.Kind], routes: dict[int, tuple[str, ...]]) -> bool:
    """The plan, set on the whole plan relaxation, satisfies every row (HiGHS' tolerance)."""
    model = GB.plan_model(instance)
    for i, kind in enumerate(model.kinds):
        model.x[i].set_value(int(kind in kinds))
    for r, j in model.lam:
        model.lam[(r, j)].set_value(int(routes.get(r) == model.routes_of[r][j]))
    if any(routes[r] not in model.routes_of[r] for r in routes):
        return False
    for row in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(row.body)
        if (row.upper is not None and body > pyo.value(row.upper) + 1e-6) or \
                (row.lower is not None and body < pyo.value(row.lower) - 1e-6):
            return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_a_restricted_plan_model_never_exceeds_the_whole_one(seed: int) -> None:
    """``plan_model(kinds=...)`` removes kinds: its optimum is at most the whole model's, and
    equal with every kind."""
    instance = congested(seed)
    every = GB.lightpath_kinds(instance)
    whole = solve_model(GB.plan_model(instance), SolveOptions(gap=1e-9)).objective
    same = solve_model(GB.plan_model(instance, list(every)), SolveOptions(gap=1e-9)).objective
    part = solve_model(GB.plan_model(instance, every[::2]), SolveOptions(gap=1e-9)).objective
    assert same == pytest.approx(whole)
    assert part <= whole + 1e-6


def test_the_search_keeps_a_plan_between_its_start_and_the_plan_optimum() -> None:
    """From the priority heuristic's plan point, the searched plan is a point of the plan
    relaxation, serves at least the start's weight and at most the relaxation's proved optimum;
    it serves more than the start somewhere (seeds 0, 4 and 5 when this was written)."""
    improved = 0
    for seed in range(6):
        instance = congested(seed)
        start = H.priority_degraded_grooming(instance)
        model = GB.plan_model(instance)
        LNS.plan_point(instance, model, start)
        kinds0, routes0 = LNS.plan_of(model)
        kinds, routes = LNS.improve_plan(instance, kinds0, routes0)
        assert _plan_is_a_point(instance, kinds, routes)
        optimum = solve_model(GB.plan_model(instance), SolveOptions(gap=1e-9))
        assert optimum.termination == "optimal"
        assert _served(instance, routes0) <= _served(instance, routes) <= optimum.objective + 1e-6
        improved += _served(instance, routes) > _served(instance, routes0)
    assert improved >= 2


@pytest.mark.parametrize("seed", range(6))
def test_plan_layout_grooming_is_feasible_between_its_start_and_the_optimum(seed: int) -> None:
    """Judged by the checker, at least ``priority_degraded_grooming`` (served weight, then value)
    and at most the exact route's proved optimum."""
    instance = congested(seed)
    mine = L.plan_layout_grooming(instance)
    assert G.check(instance, mine) == []
    base = H.priority_degraded_grooming(instance)
    weight = [sum(G.served_weight(instance, c["request"]) for c in s["connections"]) for s in (mine, base)]
    assert (weight[0], mine["objective"]) >= (weight[1], base["objective"])
    exact = run(provisioning.GROOMING, instance, "exact", SolveOptions(gap=1e-9))
    assert exact.status == "optimal"
    assert mine["objective"] <= exact.objective + 1e-6


def test_the_search_starts_no_sub_milp_past_its_deadline() -> None:
    """A deadline already passed leaves the start plan as it is (seed 0 improves without one)."""
    instance = congested(0)
    model = GB.plan_model(instance)
    LNS.plan_point(instance, model, H.priority_degraded_grooming(instance))
    kinds0, routes0 = LNS.plan_of(model)
    assert _served(instance, LNS.improve_plan(instance, kinds0, routes0)[1]) > _served(instance, routes0)
    kinds, routes = LNS.improve_plan(instance, kinds0, routes0, deadline=time.perf_counter())
    assert (kinds, routes) == (kinds0, routes0)


def _two_on_one_link() -> tuple[G.Instance, list[GB.Kind], dict[int, tuple[str, ...]]]:
    """Gold a-b and a-c (30 Gb/s) planned on a-b and a-b-c at width 3: 6 slots on link a-b of 4."""
    reqs = (P.Request("a", "b", 30e9, 1.0, 0.0, 1), P.Request("a", "c", 30e9, 1.0, 0.0, 1))
    instance = G.Instance(NODES, tuple(P.Link(a, b, km * 1e3) for a, b, km in RING), 4, 12.5e9, 1, 2,
                          FORMATS, CLASSES, (2, 3), 2, 2, True, reqs)
    every = GB.lightpath_kinds(instance)
    ab = next(k for k in every if k.ends == ("a", "b") and k.width == 3 and len(k.links) == 1)
    ac = next(k for k in every if k.ends == ("a", "c") and k.width == 3 and ab.links[0] in k.links)
    return instance, [ab, ac], {0: ("a", "b"), 1: ("a", "c")}


def test_the_layout_gives_a_pair_another_kind_where_the_plan_does_not_fit(monkeypatch) -> None:
    """The plan's two lightpaths share a link they do not fit on together: laid out as planned one
    request is lost; with other kinds allowed (path or width) both are served, checked."""
    instance, kinds, routes = _two_on_one_link()
    start = G.solution_from(instance, [], [])
    monkeypatch.setattr(L, "ALTERNATIVES", False)
    assert len(L.lay_out(instance, kinds, routes)) == 1
    monkeypatch.setattr(L, "ALTERNATIVES", True)
    placed = L.lay_out(instance, kinds, routes)
    assert sorted(kind.ends for kind in placed) == [("a", "b"), ("a", "c")]
    assert any(kind not in kinds for kind in placed)
    mine = L.from_plan(instance, kinds, routes, start)
    assert G.check(instance, mine) == []
    assert sorted(c["request"] for c in mine["connections"]) == [0, 1]
