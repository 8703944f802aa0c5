"""Models A and B against exhaustive enumeration on instances small enough to list every decision.

The enumeration does not use the model's candidate list: it walks every simple path of a 4-node
ring (K = 2 covers them all), every retained fraction allowed by the class bound, every first
slot, and judges pairs of decisions with its own overlap rule; the best plan is then confirmed
by the problem's checker.
"""

from __future__ import annotations

import math
import random

import networkx as nx
import pytest

from coopt.formulations import provisioning
from coopt.formulations.provisioning import model as P
from coopt.problem import SolveOptions
from coopt.run import run

NODES = ("a", "b", "c", "d")
RING = (("a", "b", 300), ("b", "c", 700), ("c", "d", 400), ("d", "a", 900))


def tiny(seed: int, model: str) -> P.Instance:
    rng = random.Random(seed)
    requests = []
    for _ in range(4):
        s, d = rng.sample(NODES, 2)
        arrival = round(rng.uniform(0, 1.5), 2) if model == "time_expanded" else 0.0
        requests.append(P.Request(s, d, rng.choice((50, 75, 100)) * 1e9, rng.choice((0.5, 1.0)), arrival,
                                  rng.randint(1, 3)))
    return P.Instance(
        NODES, tuple(P.Link(a, b, km * 1e3) for a, b, km in RING), False, 4, 12.5e9, rng.randint(0, 1), 2,
        (P.Modulation("QPSK", 25e9, 1500e3), P.Modulation("16QAM", 50e9, 800e3)),
        (P.PriorityClass("gold", 100.0, 0.0), P.PriorityClass("silver", 10.0, 0.5),
         P.PriorityClass("bronze", 1.0, 0.75)),
        (1.0, 0.75, 0.5, 0.25), True, model, 0, tuple(requests),
    )


def options(instance: P.Instance, r: int) -> list[tuple]:
    """Every way to serve request r: (links, first slot, slots, start, end, value, record)."""
    req = instance.requests[r]
    graph = nx.Graph([(lk.a, lk.b, {"length": lk.length_m}) for lk in instance.links])
    bound = 1 - instance.classes[req.priority - 1].max_degradation
    out = []
    for path in nx.all_simple_paths(graph, req.source, req.target):
        length = nx.path_weight(graph, path, "length")
        fits = [m for m in instance.modulations if m.reach_m >= length]
        if not fits:
            continue
        mod = max(fits, key=lambda m: m.bps_per_slot)
        links = {frozenset(e) for e in zip(path, path[1:], strict=False)}
        for rho in instance.retained_fractions:
            if rho < bound - 1e-12:
                continue
            n = math.ceil(rho * req.bandwidth_bps / mod.bps_per_slot - 1e-9) + instance.guard_band
            for f in range(instance.num_slots - n + 1):
                end = req.arrival_s + req.holding_s / rho
                record = {"request": r, "path": list(path), "modulation": mod.name, "retained": rho,
                          "rate_gbps": rho * req.bandwidth_bps / 1e9, "first_slot": f, "slots": n,
                          "start_s": req.arrival_s, "end_s": end}
                weight = instance.classes[req.priority - 1].weight
                value = weight * (1 - P.epsilon(instance) * (1 - rho))
                out.append((links, f, n, req.arrival_s, end, value, record))
    return out


def clash(instance: P.Instance, x: tuple, y: tuple) -> bool:
    together = instance.model == "static" or (x[3] < y[4] and y[3] < x[4])
    return together and bool(x[0] & y[0]) and x[1] < y[1] + y[2] and y[1] < x[1] + x[2]


def brute_force(instance: P.Instance) -> tuple[float, list[dict]]:
    menus = [options(instance, r) for r in range(len(instance.requests))]
    best = (0.0, [])

    def walk(r: int, chosen: list[tuple], value: float) -> None:
        nonlocal best
        if r == len(menus):
            if value > best[0]:
                best = (value, [c[6] for c in chosen])
            return
        walk(r + 1, chosen, value)
        for option in menus[r]:
            if not any(clash(instance, option, c) for c in chosen):
                walk(r + 1, [*chosen, option], value + option[5])

    walk(0, [], 0.0)
    return best


@pytest.mark.parametrize("model", P.MODELS)
@pytest.mark.parametrize("seed", range(6))
def test_model_matches_brute_force(seed: int, model: str) -> None:
    instance = tiny(seed, model)
    value, plan = brute_force(instance)
    assert P.check(instance, {"connections": plan}) == []
    assert math.isclose(P.objective(instance, {"connections": plan}), value, rel_tol=1e-12)
    report = run(provisioning.PROBLEM, instance, "exact", SolveOptions(gap=1e-9))
    assert report.status == "optimal"
    assert report.check["feasible"], report.check
    assert math.isclose(report.objective, value, rel_tol=1e-6, abs_tol=1e-9)
    for method, heuristic in provisioning.PROBLEM.heuristics.items():
        assert P.objective(instance, heuristic(instance)) <= value * (1 + 1e-9), method


def test_menu_monotone_and_no_degradation_is_the_plain_optimum() -> None:
    """MILP(Lambda) >= MILP({1}); with degradation off the brute force over rho = 1 agrees."""
    import dataclasses

    for seed in range(4):
        instance = tiny(seed, "static")
        off = dataclasses.replace(instance, degradation=False)
        plain = dataclasses.replace(instance, retained_fractions=(1.0,))
        on_value = run(provisioning.PROBLEM, instance, "exact").objective
        off_value = run(provisioning.PROBLEM, off, "exact").objective
        assert on_value >= off_value - 1e-6
        assert math.isclose(off_value, brute_force(plain)[0], rel_tol=1e-6)
