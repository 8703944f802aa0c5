"""LightCode's judge: the cost of an assignment or a schedule on the Stacked Graph
(:mod:`coopt.problems.lightcode.graph`), the side constraints, the checker, the objective and the
seeded generator. The instance and its fields are in :mod:`coopt.problems.lightcode.data`.

Checker (``check``) against the MILP (:mod:`.milp`) and the decomposition (``exact``), both ways:

=============================================  ===============================================
model row (MILP; decomposition)                checker violation
=============================================  ===============================================
one realization per operator, from ``R_v``     ``assignment``: each operator once, a device of
                                               its stack, no unknown operator
``y`` = outer product of the one-hot ``x``     transfers read from the two chosen devices' table
precedence ``S_v >= S_u + p_u + tau_uv``       ``precedence``
disjunctions (no overlap on one device)        ``device_exclusive``: sorted by start, then length
``T >= S_v + p_v``; device loads (implied)     makespan ``max_v S_v + p_v``; ``schedule``: finite
                                               starts ``>= 0``
PTU weight capacity                            ``capacity``
conversion volume                              ``conversion``
energy budget                                  ``energy_budget``
power cap ``E <= P T`` (``T`` may idle)        ``power_cap`` (a stretched schedule delays its sink)
uniform blocks ``x_vd = x_phi(v)d``            ``uniform_blocks``
=============================================  ===============================================

Every side constraint has the same relative slack :data:`SIDE_TOL` on both sides (the MILP's row
is the checker's bound), so no assignment the checker accepts is outside the model. The
decomposition is exact for the same problem (proof in
:func:`coopt.problems.lightcode.decomposition.exact`): it never restricts an order or a device.
Non-finite numbers in a solution are violations (``finite``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import replace
from itertools import pairwise
from typing import Any

from coopt.errors import UsageError
from coopt.problem import Solution, Violation
from coopt.problems.lightcode.data import (
    MAX_LAYERS,
    MICRO,
    OBJECTIVES,
    SIDE_TOL,
    TRANSFER_MODELS,
    Instance,
    Limits,
    TransformerModel,
    preset_device,
    preset_memory,
)
from coopt.problems.lightcode.graph import Assignment, StackedGraph, stacked_graph


# ------------------------------------------------------------------------------------------------
# Costs of an assignment and of a schedule
# ------------------------------------------------------------------------------------------------
def energy(graph: StackedGraph, assign: Assignment) -> float:
    own = sum(graph.stacks[i][d].energy for i, d in enumerate(assign))
    return own + sum(
        graph.transfer_energy[k][assign[e.src], assign[e.dst]] for k, e in enumerate(graph.edges)
    )


def latency_sum(graph: StackedGraph, assign: Assignment) -> float:
    own = sum(graph.stacks[i][d].latency for i, d in enumerate(assign))
    return own + sum(
        graph.transfer_latency[k][assign[e.src], assign[e.dst]] for k, e in enumerate(graph.edges)
    )


def sum_cost(graph: StackedGraph, assign: Assignment, objective: str) -> float:
    """Energy, or latency-sum (also the surrogate heuristics use when the objective is makespan)."""
    return energy(graph, assign) if objective == "energy" else latency_sum(graph, assign)


def makespan(graph: StackedGraph, assign: Assignment, start: list[float]) -> float:
    return max(s + graph.stacks[i][assign[i]].latency for i, s in enumerate(start))


def conversion_elements(instance: Instance, graph: StackedGraph, assign: Assignment) -> int:
    """Elements crossing the photonic/electronic boundary on data edges."""
    photonic = {d.name for d in instance.devices if d.photonic}
    return sum(e.elements for e in graph.edges if (assign[e.src] in photonic) != (assign[e.dst] in photonic))


def ptu_weight_bytes(instance: Instance, graph: StackedGraph, assign: Assignment, device: str) -> int:
    return (
        sum(op.weights for op, d in zip(graph.ops, assign, strict=True) if d == device)
        * instance.memory.bytes_per_element
    )


def side_violations(instance: Instance, graph: StackedGraph, assign: Assignment, span: float) -> list[str]:
    """The side constraints an assignment breaks (``span`` = its latency: makespan or sum), each
    with the relative slack :data:`SIDE_TOL` the MILP's rows allow too."""
    out = []
    slack = 1 + SIDE_TOL
    for dev in instance.devices:
        if dev.photonic and dev.weight_capacity > 0:
            used = ptu_weight_bytes(instance, graph, assign, dev.name)
            if used > dev.weight_capacity * slack:
                limit = dev.weight_capacity
                out.append(f"capacity: {dev.name} holds {used:.9g} B of weights > {limit:.9g} B")
    lim = instance.limits
    if lim.max_conversion_elements > 0:
        crossing = conversion_elements(instance, graph, assign)
        if crossing > lim.max_conversion_elements * slack:
            out.append(f"conversion: {crossing} elements cross > {lim.max_conversion_elements:.9g}")
    used = energy(graph, assign) if lim.energy_budget > 0 or lim.power_cap > 0 else 0.0
    if lim.energy_budget > 0 and used > lim.energy_budget * slack:
        out.append(f"energy_budget: {used:.12g} J > {lim.energy_budget:.12g} J")
    if lim.power_cap > 0 and used > lim.power_cap * span * slack:
        out.append(f"power_cap: {used:.12g} J over {span:.12g} s > {lim.power_cap:.12g} W")
    if instance.uniform_blocks:
        first: dict[str, str] = {}
        for op, d in zip(graph.ops, assign, strict=True):
            if op.block >= 0 and first.setdefault(op.role, d) != d:
                out.append(f"uniform_blocks: {op.name} on {d}, block 0's {op.role} on {first[op.role]}")
                break
    return out


def as_solution(graph: StackedGraph, assign: Assignment, start: list[float] | None = None) -> dict[str, Any]:
    """The JSON form: device per operator name (and start time per operator, in s, for schedules)."""
    out: dict[str, Any] = {"assignment": {op.name: d for op, d in zip(graph.ops, assign, strict=True)}}
    if start is not None:
        out["start"] = {op.name: s for op, s in zip(graph.ops, start, strict=True)}
    return out


def read_assignment(graph: StackedGraph, solution: Mapping[str, Any]) -> tuple[Assignment | None, str]:
    """The assignment of a solution in operator order, or None and why it is malformed."""
    raw = solution.get("assignment")
    if not isinstance(raw, Mapping):
        return None, "expected 'assignment': a table operator -> device"
    assign = []
    for op, stack in zip(graph.ops, graph.stacks, strict=True):
        d = raw.get(op.name)
        if not isinstance(d, str) or d not in stack:
            return None, f"{op.name}: device {d!r} is not one of its realizations {sorted(stack)}"
        assign.append(d)
    extra = [name for name in raw if name not in graph.index]
    if extra:
        return None, f"unknown operators {sorted(map(str, extra))[:3]}"
    return assign, ""


def earliest_starts(graph: StackedGraph, assign: Assignment, rank: list[float]) -> list[float]:
    """Earliest start times when every device runs its operators one at a time, in the order of a
    topological sort that takes the ready operator of least ``rank`` first (ties: operator order),
    and each operator waits for its inputs' transfers. Where ``rank`` is consistent with the data
    dependencies (a schedule's start or mid-point times are), the device orders are ``rank``'s;
    elsewhere the data dependencies win, so the result is always a feasible schedule."""
    import heapq

    n = len(graph.ops)
    indegree = [len(p) for p in graph.preds]
    ready = [(rank[v], v) for v in range(n) if indegree[v] == 0]
    heapq.heapify(ready)
    start = [0.0] * n
    free_at: dict[str, float] = {}
    while ready:
        _, u = heapq.heappop(ready)
        arrival = max(
            (start[graph.edges[k].src] + graph.stacks[graph.edges[k].src][assign[graph.edges[k].src]].latency
             + graph.transfer_latency[k][assign[graph.edges[k].src], assign[u]] for k in graph.in_edges[u]),
            default=0.0,
        )
        start[u] = max(arrival, free_at.get(assign[u], 0.0))
        free_at[assign[u]] = start[u] + graph.stacks[u][assign[u]].latency
        for w in graph.succs[u]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, (rank[w], w))
    return start


# ------------------------------------------------------------------------------------------------
# Checker and objective
# ------------------------------------------------------------------------------------------------
def _read_start(graph: StackedGraph, solution: Solution) -> tuple[list[float] | None, str]:
    raw = solution.get("start")
    if not isinstance(raw, Mapping):
        return None, "expected 'start': a table operator -> start time in seconds"
    start = []
    for op in graph.ops:
        s = raw.get(op.name)
        if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or s < 0:
            return None, f"{op.name}: expected a finite start time >= 0 (s), got {s!r}"
        start.append(float(s))
    return start, ""


def schedule_violations(graph: StackedGraph, assign: list[str], start: list[float]) -> list[Violation]:
    """Precedence with transfer delays, and one operator at a time on every device."""
    out = []
    tol = 1e-12 * max(1e-12, makespan(graph, assign, start))
    for k, e in enumerate(graph.edges):
        ready = (
            start[e.src]
            + graph.stacks[e.src][assign[e.src]].latency
            + graph.transfer_latency[k][assign[e.src], assign[e.dst]]
        )
        if start[e.dst] < ready - tol:
            out.append(
                Violation(
                    "precedence",
                    f"{graph.ops[e.dst].name} starts at {start[e.dst]:.12g} s before "
                    f"its input from {graph.ops[e.src].name} arrives at {ready:.12g} s",
                )
            )
    by_device: dict[str, list[int]] = {}
    # by start, then length: a zero-length operator at the start of a longer one goes first
    for v in sorted(range(len(assign)), key=lambda v: (start[v], graph.stacks[v][assign[v]].latency, v)):
        by_device.setdefault(assign[v], []).append(v)
    for d, order in by_device.items():
        for u, v in pairwise(order):
            if start[v] < start[u] + graph.stacks[u][d].latency - tol:
                out.append(
                    Violation(
                        "device_exclusive", f"{graph.ops[u].name} and {graph.ops[v].name} overlap on {d}"
                    )
                )
    return out


def check(instance: Instance, solution: Solution) -> list[Violation]:
    graph = stacked_graph(instance)
    if not isinstance(solution, Mapping):
        return [Violation("assignment", f"expected a solution table, got {type(solution).__name__}")]
    assign, why = read_assignment(graph, solution)
    if assign is None:
        return [Violation("assignment", why)]
    out: list[Violation] = []
    claimed = solution.get("objective")
    if isinstance(claimed, float) and not math.isfinite(claimed):
        out.append(Violation("finite", f"the claimed objective is {claimed!r}"))
    if instance.objective == "makespan":
        start, why = _read_start(graph, solution)
        if start is None:
            return [*out, Violation("schedule", why)]
        out += schedule_violations(graph, assign, start)
        span = makespan(graph, assign, start)
    else:
        span = latency_sum(graph, assign)
    for text in side_violations(instance, graph, assign, span):
        family, detail = text.split(": ", 1)
        out.append(Violation(family, detail))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """Energy in microjoules, or latency (serial sum or makespan) in microseconds."""
    graph = stacked_graph(instance)
    assign, why = read_assignment(graph, solution)
    if assign is None:
        raise ValueError(why)
    if instance.objective == "energy":
        return energy(graph, assign) * MICRO
    if instance.objective == "latency_sum":
        return latency_sum(graph, assign) * MICRO
    start, why = _read_start(graph, solution)
    if start is None:
        raise ValueError(why)
    return makespan(graph, assign, start) * MICRO


def objective_name(instance: Instance) -> str:
    return {"energy": "energy", "latency_sum": "serial latency", "makespan": "makespan"}[instance.objective]


def objective_unit(instance: Instance) -> str:
    if instance.objective == "energy":
        return "µJ"
    return "µs (start times in the solution: s)" if instance.objective == "makespan" else "µs"


# ------------------------------------------------------------------------------------------------
# The seeded generator
# ------------------------------------------------------------------------------------------------
def generate(seed: int, size: int) -> Instance:
    """A small random transformer (``size`` blocks) on a GPU and a PTU whose constants are the
    ``coopt`` preset's, scaled by random factors (a slower, cheaper GPU so that the devices trade)."""
    if not 1 <= size <= MAX_LAYERS:
        raise UsageError(f"lightcode: --size (transformer blocks) must be 1..{MAX_LAYERS}, got {size}")
    rng = random.Random(seed)
    family = rng.choice(("gpt2", "llama"))
    heads = rng.choice((1, 2, 4))
    d_model = heads * rng.choice((8, 16, 32))
    model = TransformerModel(
        family,
        size,
        d_model,
        heads,
        rng.choice((2, 3, 4)) * d_model,
        rng.choice((64, 128, 256)),
        rng.choice((4, 16, 64, 256)),
    )

    def jitter(x: float, si: float, scale: float = 1.0) -> float:
        """``x`` scaled and perturbed, rounded to 6 digits in its file unit (so files round-trip)."""
        return float(f"{x / si * scale * math.exp(rng.uniform(-1.0, 1.0)):.6g}") * si

    gpu = preset_device("coopt", "gpu")
    gpu = replace(
        gpu,
        peak_flops=jitter(gpu.peak_flops, 1e12, 1e-3),
        elementwise_rate=jitter(gpu.elementwise_rate, 1e12, 1e-3),
        memory_bandwidth=jitter(gpu.memory_bandwidth, 1e12, 1e-2),
        launch_latency=jitter(gpu.launch_latency, 1e-6, 1e-2),
        mac_energy=jitter(gpu.mac_energy, 1e-12),
        op_energy=jitter(gpu.op_energy, 1e-12),
        local_energy=jitter(gpu.local_energy, 1e-12),
    )
    ptu = preset_device("coopt", "ptu")
    ptu = replace(
        ptu,
        clock=jitter(ptu.clock, 1e9),
        cores=rng.choice((1, 2)),
        wavelengths=rng.choice((4, 16, 64)),
        spatial=rng.choice((1, 4)),
        mac_energy=jitter(ptu.mac_energy, 1e-12),
        dac_energy=jitter(ptu.dac_energy, 1e-12),
        adc_energy=jitter(ptu.adc_energy, 1e-12),
        conversion_latency=jitter(ptu.conversion_latency, 1e-9, 1e-2),
        local_energy=jitter(ptu.local_energy, 1e-12),
    )
    return Instance(
        objective=rng.choice(OBJECTIVES),
        transfer_model=rng.choice(TRANSFER_MODELS),
        graph="block",
        uniform_blocks=rng.random() < 0.25,
        model=model,
        devices=(gpu, ptu),
        memory=preset_memory("coopt"),
        limits=Limits(),
    )
