"""Brute force for LightCode instances small enough to enumerate: the oracle of the exact methods.

:func:`tiny` makes a seeded one- or two-block instance whose constants are tilted so that optima
mix devices (a slower GPU, a PTU with few lanes, random energies), with every objective, transfer
model and ``photonic_legs`` reading, and at times a side constraint set near the value of a random
assignment, so that it binds or makes the instance infeasible.

:func:`optimum` enumerates every decision the model can take, using only the cost model and the
checker's side-constraint test, never the exact methods:

* energy and latency-sum: every assignment of the free operators (``itertools.product``);
* makespan: a depth-first search over (next operator, its device) appended to a schedule, each
  operator starting as early as its inputs and its device allow. It is complete: sort an optimal
  schedule by (start, operator index), append its operators in that order (each starts no later
  than before, so the result is optimal too), and repeat until nothing moves; the fixed point is
  an optimal schedule whose appended starts never decrease along its order. The search therefore
  only appends an operator whose start is no earlier than the last one's (a later index on a
  tie), and prunes a branch whose finish already reaches the best makespan found. Side
  constraints are tested at the leaves; a power cap stretches a schedule to E / P.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

from coopt.problems.lightcode.data import (
    MICRO,
    OBJECTIVES,
    TRANSFER_MODELS,
    Instance,
    Limits,
    TransformerModel,
    preset_device,
    preset_memory,
)
from coopt.problems.lightcode.graph import StackedGraph, stacked_graph
from coopt.problems.lightcode.model import (
    conversion_elements,
    energy,
    latency_sum,
    ptu_weight_bytes,
    side_violations,
)
from coopt.problems.lightcode.presets import LEGS


def tiny(seed: int) -> Instance:
    """A seeded instance small enough for :func:`optimum` (one block, or two with uniform blocks)."""
    rng = random.Random(seed)
    family = rng.choice(("gpt2", "llama"))
    objective = rng.choice(OBJECTIVES)
    transfer = rng.choice(TRANSFER_MODELS)
    uniform = family == "gpt2" and objective != "makespan" and rng.random() < 0.2
    heads = rng.choice((1, 2))
    d_model = heads * rng.choice((8, 16, 32))
    model = TransformerModel(family, 2 if uniform else 1, d_model, heads, rng.choice((2, 3, 4)) * d_model,
                             rng.choice((64, 256, 512)), rng.choice((4, 8, 16, 32, 64, 128)))

    def tilt(x: float, low: float, high: float) -> float:
        return float(f"{x * math.exp(rng.uniform(math.log(low), math.log(high))):.6g}")

    gpu = preset_device("coopt", "gpu")
    gpu = replace(
        gpu,
        peak_flops=tilt(gpu.peak_flops, 1e-5, 1e-3),
        elementwise_rate=tilt(gpu.elementwise_rate, 1e-4, 1e-2),
        memory_bandwidth=tilt(gpu.memory_bandwidth, 1e-3, 1e-1),
        launch_latency=tilt(gpu.launch_latency, 1e-3, 1e-1),
        mac_energy=tilt(gpu.mac_energy, 1, 50),
        op_energy=tilt(gpu.op_energy, 0.3, 3),
        local_energy=tilt(gpu.local_energy, 0.3, 3),
    )
    ptu = preset_device("coopt", "ptu")
    ptu = replace(ptu, clock=tilt(ptu.clock, 0.3, 3), wavelengths=rng.choice((1, 4, 16)),
                  spatial=rng.choice((1, 2)), mac_energy=tilt(ptu.mac_energy, 0.3, 3),
                  dac_energy=tilt(ptu.dac_energy, 0.05, 1), adc_energy=tilt(ptu.adc_energy, 0.05, 1),
                  conversion_latency=tilt(ptu.conversion_latency, 1e-3, 1e-1))
    electronic = gpu
    if rng.random() < 0.3:  # a CPU instead, at times with its large-dense fit (clamped at 0 s)
        cpu = preset_device("coopt", "cpu")
        electronic = replace(cpu, mac_energy=tilt(cpu.mac_energy, 1, 30),
                             large_dense_min_dim=rng.choice((0, 16, 64)),
                             large_dense_s_per_mac=tilt(1e-10, 0.1, 10),
                             large_dense_intercept=-tilt(1e-6, 0.01, 100))
    devices = (electronic, ptu)
    memory = preset_memory("coopt")
    memory = replace(memory, sram_energy=tilt(memory.sram_energy, 0.05, 1),
                     link_energy_per_bit=tilt(memory.link_energy_per_bit, 0.01, 1))
    instance = Instance(objective, transfer, "block", uniform, model, devices, memory, Limits(),
                        photonic_legs=rng.choice(LEGS) if transfer == "sram_hop" else "every_operand")
    return _constrained(instance, rng)


def _constrained(instance: Instance, rng: random.Random) -> Instance:
    """At times one side constraint, set near the value of a random assignment."""
    kind = rng.choice(("none", "none", "capacity", "conversion", "energy_budget", "power_cap"))
    if kind == "none":
        return instance
    graph = stacked_graph(instance)
    assign = [rng.choice(sorted(s)) for s in graph.stacks]
    near = rng.uniform(0.8, 1.2)
    if kind == "capacity":
        held = max(1, ptu_weight_bytes(instance, graph, assign, "ptu"))
        ptu = replace(instance.device("ptu"), weight_capacity=held * near)
        return replace(instance, devices=tuple(ptu if d.photonic else d for d in instance.devices))
    if kind == "conversion":
        limits = Limits(max_conversion_elements=max(1.0, conversion_elements(instance, graph, assign) * near))
    elif kind == "energy_budget":
        limits = Limits(energy_budget=energy(graph, assign) * near)
    else:
        limits = Limits(power_cap=energy(graph, assign) / latency_sum(graph, assign) * near)
    return replace(instance, limits=limits)


def optimum(instance: Instance) -> float | None:
    """The optimum by enumeration (problem units: uJ or us), None when nothing is feasible."""
    graph = stacked_graph(instance)
    if instance.objective == "makespan":
        best = _best_schedule(instance, graph)
    else:
        best = math.inf
        for assign in _assignments(graph):
            span = latency_sum(graph, assign)
            value = energy(graph, assign) if instance.objective == "energy" else span
            if value < best and not side_violations(instance, graph, assign, span):
                best = value
    return None if math.isinf(best) else best * MICRO


def _assignments(graph: StackedGraph):
    free = graph.free
    base = [next(iter(s)) for s in graph.stacks]
    for choice in itertools.product(*(sorted(graph.stacks[v]) for v in free)):
        assign = list(base)
        for v, d in zip(free, choice, strict=True):
            assign[v] = d
        yield assign


def _best_schedule(instance: Instance, graph: StackedGraph) -> float:
    n = len(graph.ops)
    cap = instance.limits.power_cap
    assign: list[str] = [""] * n
    finish = [0.0] * n
    missing = [len(p) for p in graph.preds]
    best = [math.inf]

    def search(count: int, free_at: dict[str, float], span: float, last_start: float, last: int) -> None:
        if span >= best[0]:
            return
        if count == n:
            value = max(span, energy(graph, assign) / cap) if cap > 0 else span  # idle time to E / P
            if value < best[0] and not side_violations(instance, graph, assign, value):
                best[0] = value
            return
        for v in range(n):
            if missing[v] or assign[v]:
                continue
            for d in sorted(graph.stacks[v]):
                arrival = max(
                    (finish[u] + graph.transfer_latency[k][assign[u], d]
                     for k in graph.in_edges[v] for u in (graph.edges[k].src,)),
                    default=0.0,
                )
                start = max(arrival, free_at.get(d, 0.0))
                if start < last_start or (start == last_start and v < last):
                    continue
                assign[v], finish[v] = d, start + graph.stacks[v][d].latency
                for w in graph.succs[v]:
                    missing[w] -= 1
                search(count + 1, {**free_at, d: finish[v]}, max(span, finish[v]), start, v)
                for w in graph.succs[v]:
                    missing[w] += 1
                assign[v] = ""

    search(0, {}, 0.0, 0.0, -1)
    return best[0]
