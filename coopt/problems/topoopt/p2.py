"""The outer loop of P2 (:mod:`coopt.problems.topoopt.rings_milp`): TopoOpt's own search space
solved exactly for each ring count."""

from __future__ import annotations

import pyomo.environ as pyo

from coopt.problem import Solution, SolveOptions
from coopt.problems.topoopt.fabric import paired
from coopt.problems.topoopt.model import Instance, busiest_sender, objective, ring_bytes
from coopt.problems.topoopt.rings_milp import build_p2, ring_ports, ring_strides
from coopt.solvers.highs import solve_model


def solve_p2(instance: Instance, options: SolveOptions | None = None) -> tuple[float, Solution] | None:
    """P2 over the outer loop ``r = 1..`` (rings that fit in ``d`` ports, at most one per candidate):
    the fastest (``tau`` in seconds) ring count, as a P1 solution (rings + matchings, the AllReduce
    split evenly over the rings' directions, the MP flows), or None if no ring count is feasible."""
    n, d = instance.servers, instance.degree
    strides = ring_strides(instance)
    per_ring = max(ring_ports(n, q, instance.symmetric) for q in strides)
    best: tuple[float, Solution] | None = None
    c = ring_bytes(instance.allreduce[0])
    unit = busiest_sender(instance)
    for rings in range(1, min(d // per_ring, len(strides)) + 1):
        model = build_p2(instance, rings)
        result = solve_model(model, options or SolveOptions())
        if result.status != "optimal" or (best is not None and result.objective >= best[0]):
            continue
        reps = [q for q in model.ring if pyo.value(model.ring[q]) > 0.5]
        chosen = paired(n, reps) if instance.symmetric else sorted(reps)
        links = [[0] * n for _ in range(n)]
        flows = []
        for i, j in model.A:
            links[i][j] = int(round(pyo.value(model.match[min(i, j), max(i, j)])))
            links[i][j] += sum(1 for q in chosen if (i + q) % n == j)
            for s in range(n):
                value = pyo.value(model.flow[s, i, j])
                if value > 1e-12:
                    flows.append([s, i, j, value * unit])
        flows += [[i, i, (i + q) % n, c / len(chosen)] for q in chosen for i in range(n)]
        share = [[q, chosen.count(q) / len(chosen)] for q in sorted(set(chosen))]
        solution = {"links": links, "ring_share": [share], "flows": flows}
        solution["objective"] = objective(instance, solution)
        best = (result.objective, solution)
    return best
