"""LightCode's exact methods against brute force on instances small enough to enumerate.

``coopt.problems.lightcode.brute`` is the oracle (every assignment; for the makespan a pruned
search over appended schedules). Here it is checked once more against the plainest enumeration
there is, every assignment times every linear extension of the operators, each scheduled greedily
(an optimal schedule is among them: order an optimal schedule's operators by start time and start
each as early as its inputs and its device allow), and then it judges the MILP and the
decomposition on hand-picked cases: both transfer models, every objective, uniform blocks,
parallel branches, and each side constraint set so that it binds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problem import NoSolution, SolveOptions, close
from coopt.problems.lightcode import PROBLEM, brute
from coopt.problems.lightcode.milp import incomparable_pairs
from coopt.problems.lightcode.model import (
    Limits,
    check,
    conversion_elements,
    energy,
    latency_sum,
    ptu_weight_bytes,
    side_violations,
    stacked_graph,
)
from coopt.run import run

SHIPPED = Path(__file__).parents[2] / "instances" / "lightcode"


def shipped(name: str):
    return load(SHIPPED / name).instance


def gpt2_tiny(layers: int = 1, sequence_length: int = 32, **changes):
    """A GPT-2-shaped model with d = 64 whose constants are tilted (slow PTU, costly GPU MACs) so
    that optima mix devices instead of putting everything on one."""
    base = shipped("0-gpt2-small-makespan.toml")
    model = replace(
        base.model, layers=layers, d_model=64, heads=2, d_ff=256, vocab=512, sequence_length=sequence_length
    )
    devices = tuple(
        replace(d, mac_energy=2e-12)
        if not d.photonic
        else replace(d, cores=1, wavelengths=16, spatial=1)
        for d in base.devices
    )
    return replace(base, model=model, devices=devices, **changes)


def llama_tiny(**changes):
    base = shipped("0-llama-tiny-makespan.toml")
    return replace(base, devices=tuple(d for d in base.devices if d.name != "cpu"), **changes)


def assignments(graph):
    free = graph.free
    for choice in itertools.product(*(sorted(graph.stacks[v]) for v in free)):
        assign = [next(iter(s)) for s in graph.stacks]
        for v, d in zip(free, choice, strict=True):
            assign[v] = d
        yield assign


def linear_extensions(graph):
    n = len(graph.ops)
    indegree = [len(p) for p in graph.preds]
    order: list[int] = []

    def extend():
        if len(order) == n:
            yield list(order)
            return
        for v in range(n):
            if indegree[v] == 0 and v not in placed:
                placed.add(v)
                order.append(v)
                for w in graph.succs[v]:
                    indegree[w] -= 1
                yield from extend()
                for w in graph.succs[v]:
                    indegree[w] += 1
                order.pop()
                placed.discard(v)

    placed: set[int] = set()
    yield from extend()


def append_schedule(graph, assign, order) -> float:
    """Each operator, in ``order``, as early as its inputs and its device (after the last one) allow."""
    finish = [0.0] * len(graph.ops)
    free_at: dict[str, float] = {}
    for v in order:
        ready = max(
            (
                finish[graph.edges[k].src] + graph.transfer_latency[k][assign[graph.edges[k].src], assign[v]]
                for k in graph.in_edges[v]
            ),
            default=0.0,
        )
        start = max(ready, free_at.get(assign[v], 0.0))
        finish[v] = start + graph.stacks[v][assign[v]].latency
        free_at[assign[v]] = finish[v]
    return max(finish)


def plain(instance) -> float:
    """Every assignment x every linear extension (a power cap stretches a schedule to E / P)."""
    graph = stacked_graph(instance)
    orders = list(linear_extensions(graph)) if instance.objective == "makespan" else []
    best = math.inf
    for assign in assignments(graph):
        if instance.objective == "makespan":
            span = min(append_schedule(graph, assign, order) for order in orders)
            if instance.limits.power_cap:  # idle time may stretch a schedule to meet the cap
                span = max(span, energy(graph, assign) / instance.limits.power_cap)
            value = span
        else:
            span = latency_sum(graph, assign)
            value = energy(graph, assign) if instance.objective == "energy" else span
        if not side_violations(instance, graph, assign, span):
            best = min(best, value)
    return best * 1e6


def brute_force(instance) -> float:
    value = brute.optimum(instance)
    assert value is not None
    return value


@pytest.mark.parametrize("seed", [1, 3, 14, 91, 108])  # makespan: GPT-2, the last two under a power cap
def test_the_pruned_search_equals_plain_enumeration(seed):
    """The oracle's makespan search skips orders whose starts decrease: it loses nothing."""
    instance = brute.tiny(seed)
    expected = plain(instance)
    found = brute.optimum(instance)
    assert (found is None) == math.isinf(expected)
    assert found is None or math.isclose(found, expected, rel_tol=1e-12)


def test_the_oracle_instances_are_not_trivial():
    """The oracle's tiny instances mix devices, bind their side constraints and include infeasible
    ones (else agreeing with it would prove little)."""
    mixed = infeasible = constrained = 0
    for seed in range(40):
        instance = brute.tiny(seed)
        report = run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9))
        if report.status == "infeasible":
            infeasible += 1
            continue
        mixed += len(set(report.solution["assignment"].values())) > 1
        constrained += any(vars(instance.limits).values()) or any(
            d.photonic and d.weight_capacity for d in instance.devices)
    assert mixed >= 20 and infeasible >= 1 and constrained >= 8


def milp(instance) -> float:
    """The optimum of the full MILP, checked against the decomposition ("exact") on the way."""
    values = []
    for method in ("milp", "exact"):
        report = run(PROBLEM, instance, method, SolveOptions(gap=1e-9))
        assert report.status == "optimal" and report.check["feasible"], report.check["violations"]
        assert close(report.check["objective_recomputed"], report.objective)
        values.append(report.objective)
    assert math.isclose(values[0], values[1], rel_tol=1e-7), values
    return values[0]


LENGTHS = {"energy": (32, 96), "latency_sum": (8, 32), "makespan": (8, 32)}
CASES = {
    f"gpt2-{objective}-{transfer}-L{L}": gpt2_tiny(
        sequence_length=L, objective=objective, transfer_model=transfer
    )
    for objective in ("energy", "latency_sum", "makespan")
    for transfer in ("sram_hop", "realistic")
    for L in LENGTHS[objective]
}


def test_the_cases_are_not_trivial():
    """Most optima mix GPU and PTU (else a one-device answer would pass every comparison)."""
    mixed = 0
    for instance in CASES.values():
        chosen = set(run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9)).solution["assignment"].values())
        mixed += chosen == {"gpu", "ptu"}
    assert mixed >= len(CASES) // 2


@pytest.mark.parametrize("name", sorted(CASES))
def test_milp_matches_brute_force(name):
    instance = CASES[name]
    assert math.isclose(milp(instance), brute_force(instance), rel_tol=1e-7)


@pytest.mark.parametrize("objective", ["energy", "latency_sum"])
def test_milp_matches_brute_force_with_uniform_blocks(objective):
    instance = gpt2_tiny(layers=2, objective=objective, uniform_blocks=True)
    assert math.isclose(milp(instance), brute_force(instance), rel_tol=1e-7)


def test_makespan_milp_matches_brute_force_with_parallel_branches():
    """Llama's q, k, v and gate, up projections run in parallel branches: the disjunctions matter."""
    instance = llama_tiny()
    assert incomparable_pairs(stacked_graph(instance))
    assert math.isclose(milp(instance), brute_force(instance), rel_tol=1e-7)


def side_constrained(objective: str, limits: Limits, capacity: float = 0.0):
    base = gpt2_tiny(layers=1, objective=objective, limits=limits)
    devices = tuple(
        replace(d, weight_capacity=capacity) if d.photonic else d for d in base.devices
    )
    return replace(base, devices=devices)


def optimal_assignment(instance):
    graph = stacked_graph(instance)
    solution = run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9)).solution
    return graph, [solution["assignment"][op.name] for op in graph.ops]


@pytest.mark.parametrize(
    "kind", ["capacity", "conversion", "energy_budget", "power_cap", "power_cap_makespan"]
)
def test_milp_matches_brute_force_under_binding_side_constraints(kind):
    """Each limit is set halfway into what the unconstrained optimum uses, so it binds."""
    objective = {"power_cap": "energy", "power_cap_makespan": "makespan"}.get(kind, "latency_sum")
    free = side_constrained(objective, Limits())
    graph, assign = optimal_assignment(free)
    if kind == "capacity":
        used = ptu_weight_bytes(free, graph, assign, "ptu")
        instance = side_constrained(objective, Limits(), capacity=used / 2)
    elif kind == "conversion":
        instance = side_constrained(
            objective, Limits(max_conversion_elements=conversion_elements(free, graph, assign) / 2)
        )
    elif kind == "energy_budget":
        _, frugal = optimal_assignment(side_constrained("energy", Limits()))
        budget = 0.5 * (energy(graph, frugal) + energy(graph, assign))
        instance = side_constrained(objective, Limits(energy_budget=budget))
    elif kind == "power_cap":
        power = energy(graph, assign) / latency_sum(graph, assign)
        instance = side_constrained(objective, Limits(power_cap=0.9 * power))
    else:
        power = energy(graph, assign) / (brute_force(free) / 1e6)
        instance = side_constrained(objective, Limits(power_cap=0.5 * power))
    expected = brute_force(instance)
    assert math.isfinite(expected)
    assert expected > brute_force(free) * (1 + 1e-9)
    assert math.isclose(milp(instance), expected, rel_tol=1e-7)
    for method, heuristic in PROBLEM.heuristics.items():
        try:
            solution = heuristic(instance)
        except NoSolution:
            continue
        assert check(instance, solution) == [], method
        assert solution["objective"] >= expected * (1 - 1e-7), method
