"""From an assignment to a solution, the tail every LightCode heuristic shares: make it uniform
across blocks if the instance asks (:func:`make_uniform`), repair side constraints by moving
decision classes until none is violated (:func:`repair`), and, for the makespan objective, turn
it into a schedule with :func:`coopt.problems.lightcode.schedule.list_schedule`
(:func:`to_solution`). For the makespan objective the selection rules use the serial latency sum
as their surrogate cost (:func:`surrogate`; the repo does the same: selection first, scheduling
afterwards).

Costs here are "sum costs": energy, or the latency sum, of the Stacked Graph in
:mod:`coopt.problems.lightcode.graph`.
"""

from __future__ import annotations

from coopt.problem import NoSolution, Solution
from coopt.problems.lightcode.data import MICRO, SIDE_TOL, Instance
from coopt.problems.lightcode.graph import Assignment, StackedGraph
from coopt.problems.lightcode.model import (
    as_solution,
    conversion_elements,
    energy,
    latency_sum,
    makespan,
    ptu_weight_bytes,
    sum_cost,
)
from coopt.problems.lightcode.schedule import list_schedule


def surrogate(instance: Instance) -> str:
    return "energy" if instance.objective == "energy" else "latency_sum"


def cost_tables(
    graph: StackedGraph, kind: str
) -> tuple[list[dict[str, float]], list[dict[tuple[str, str], float]]]:
    """Own cost per (operator, device) and transfer cost per (edge, device pair) for ``kind``."""
    attr = "energy" if kind == "energy" else "latency"
    own = [{d: getattr(r, attr) for d, r in s.items()} for s in graph.stacks]
    return own, graph.transfer_energy if kind == "energy" else graph.transfer_latency


def stretched(instance: Instance, graph: StackedGraph, assign: Assignment, span: float) -> float:
    """A schedule stretched by idle time until it meets the power cap (E <= P T)."""
    cap = instance.limits.power_cap
    return max(span, energy(graph, assign) / cap) if cap > 0 else span


def _span(instance: Instance, graph: StackedGraph, assign: Assignment) -> float:
    if instance.objective == "makespan":
        return stretched(instance, graph, assign, makespan(graph, assign, list_schedule(graph, assign)))
    return latency_sum(graph, assign)


def assignment_value(instance: Instance, graph: StackedGraph, assign: Assignment) -> float:
    """The true objective of an assignment (makespan via the list schedule), in seconds or joules."""
    if instance.objective == "makespan":
        return _span(instance, graph, assign)
    return sum_cost(graph, assign, instance.objective)


def side_excess(instance: Instance, graph: StackedGraph, assign: Assignment) -> float:
    """Total relative excess over the side constraints (0: all hold)."""
    total = 0.0
    for dev in instance.devices:
        if dev.photonic and dev.weight_capacity > 0:
            cap = dev.weight_capacity
            total += max(0.0, ptu_weight_bytes(instance, graph, assign, dev.name) / cap - 1)
    lim = instance.limits
    if lim.max_conversion_elements > 0:
        total += max(0.0, conversion_elements(instance, graph, assign) / lim.max_conversion_elements - 1)
    if lim.energy_budget > 0 or lim.power_cap > 0:
        used = energy(graph, assign)
        if lim.energy_budget > 0:
            total += max(0.0, used / lim.energy_budget - 1)
        if lim.power_cap > 0 and instance.objective != "makespan":  # a schedule can stretch instead
            total += max(0.0, used / (lim.power_cap * latency_sum(graph, assign)) - 1)
    return total if total > SIDE_TOL / 2 else 0.0


def make_uniform(instance: Instance, graph: StackedGraph, assign: Assignment) -> Assignment:
    """One device per role across blocks: each class takes the device that is cheapest for the
    whole class, given the rest (one pass, classes in operator order)."""
    if not instance.uniform_blocks:
        return assign
    assign = list(assign)
    kind = surrogate(instance)
    for members in graph.classes(True):
        options = sorted(graph.stacks[members[0]])
        best = min(options, key=lambda d: (sum_cost(graph, moved(assign, members, d), kind), d))
        assign = moved(assign, members, best)
    return assign


def moved(assign: Assignment, members: list[int], device: str) -> Assignment:
    out = list(assign)
    for v in members:
        out[v] = device
    return out


def repair(instance: Instance, graph: StackedGraph, assign: Assignment) -> Assignment:
    """Move one decision class at a time, the move that cuts the excess most (ties: the cheaper),
    until every side constraint holds; NoSolution when no move reduces the excess."""
    excess = side_excess(instance, graph, assign)
    classes = graph.classes(instance.uniform_blocks)
    while excess > 0:
        best = None
        for members in classes:
            for d in sorted(graph.stacks[members[0]]):
                if d == assign[members[0]]:
                    continue
                trial = moved(assign, members, d)
                key = (side_excess(instance, graph, trial), assignment_value(instance, graph, trial))
                if best is None or key < best[0]:
                    best = (key, trial)
        if best is None or best[0][0] >= excess:
            raise NoSolution("side constraints cannot be met by single moves")
        excess, assign = best[0][0], best[1]
    return assign


def finish(instance: Instance, graph: StackedGraph, assign: Assignment) -> Solution:
    assign = repair(instance, graph, make_uniform(instance, graph, assign))
    return to_solution(instance, graph, assign)


def to_solution(
    instance: Instance, graph: StackedGraph, assign: Assignment, start: list[float] | None = None
) -> Solution:
    if instance.objective == "makespan":
        start = list(start if start is not None else list_schedule(graph, assign))
        span = makespan(graph, assign, start)
        start[-1] += stretched(instance, graph, assign, span) - span  # the sink waits out a power cap
        out = as_solution(graph, assign, start)
        out["objective"] = makespan(graph, assign, start) * MICRO
    else:
        out = as_solution(graph, assign)
        out["objective"] = sum_cost(graph, assign, instance.objective) * MICRO
    return out
