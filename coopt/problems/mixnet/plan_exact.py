"""The reconfiguration plan (problem ``mixnet_plan``) exactly: the DP over segments whose values are
MILPs (the ``exact`` method), and the dual bounds (the plan MILP's LP relaxation, and one layer at a
time).

Segment values. The exact DP needs ``C(a, b) = min_x sum_{l=a..b} n_l / theta_l(x)``: for one layer
that is M1 (the rate MILP of :mod:`coopt.problems.mixnet.milp`, the strongest model we have), for
more the segment MILP of :func:`plan_milp.build_segment`.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pyomo.environ as pyo

from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination
from coopt.problems.mixnet import milp, plan_milp
from coopt.problems.mixnet.plan_heuristics import layer_instance
from coopt.problems.mixnet.plan_model import Instance, solution_of
from coopt.solvers.highs import solve_model


def _options(options: SolveOptions, start: float) -> SolveOptions | None:
    """The options of the next MILP with what is left of the time limit (None: nothing left)."""
    if options.time_limit is None:
        return options
    left = options.time_limit - (time.perf_counter() - start)
    return None if left <= 0 else replace(options, time_limit=left)


# -- circuits for layers and stretches of layers ---------------------------------------------


def _layer_start(incumbent: Solution | None, layer: int) -> Solution | None:
    """The circuits a plan keeps at ``layer``, as an M1 start for that layer alone."""
    if incumbent is None:
        return None
    kept = [s for s in incumbent["segments"] if s["first_layer"] <= layer]
    segment = max(kept, key=lambda s: s["first_layer"])
    return {"regions": [{"circuits": segment["circuits"]}]}


def _m1(
    instance: Instance, layer: int, options: SolveOptions, incumbent: Solution | None = None
) -> tuple[np.ndarray, float, float, Termination]:
    """Layer ``layer`` alone by M1: (circuits, time, lower bound on the time, termination); the MILP
    starts from the circuits ``incumbent`` keeps there, where one is given."""
    part = layer_instance(instance, layer)
    model = milp.build(part, _layer_start(incumbent, layer))
    result = solve_model(model, options)
    count = instance.layers[layer].all_to_alls
    if result.objective is None:
        return np.zeros((instance.servers,) * 2, dtype=int), np.inf, 0.0, result.termination
    x = milp.circuits_from(model, part)[0]
    return x, instance.layer_time(layer, x), count / result.bound, result.termination


def exact(instance: Instance, options: SolveOptions, incumbent: Solution | None = None) -> ExactOutcome:
    """The DP over segments with exact segment values: ``F(b) = min_a F(a - 1) + e_a + C(a, b)``.

    ``C(a, a)`` is M1 on layer ``a``; longer segments solve :func:`plan_milp.build_segment`. A
    segment is skipped, without loss, when even its lower bound cannot help: ``F(a - 1) + e_a +
    sum_{l in a..b} n_l / theta^UB_l`` (each layer alone at M1's proven dual bound) already reaches the best
    ``F(b)`` found, or, with the rest of the iteration's lower bound added, exceeds the
    ``incumbent`` (a checked plan, the problem's warm start :func:`segment_dp`, which is then the
    answer when nothing beats it: every plan better than it has all its segments kept). Without an
    incumbent only the first rule prunes. Optimal when every segment MILP it solved is."""
    start = time.perf_counter()
    layers = len(instance.layers)
    alone, lower, status = [], [], Termination.OPTIMAL
    for layer in range(layers):
        step = _options(options, start)
        if step is None:
            return ExactOutcome(None, Termination.LIMIT)
        x, value, low, state = _m1(instance, layer, step, incumbent)
        if state != "optimal":
            return ExactOutcome(None, state)
        alone.append((x, value))
        lower.append(low)
    prefix = np.concatenate([[0.0], np.cumsum(lower)])
    known = np.inf if incumbent is None else incumbent["objective"]
    best = [0.0] + [np.inf] * layers
    choice: list[tuple[int, np.ndarray] | None] = [None] * (layers + 1)
    for last in range(layers):
        for first in range(last, -1, -1):
            reach = best[first] + instance.exposed(first)
            floor = reach + prefix[last + 1] - prefix[first]
            rest = 0.0
            if last + 1 < layers:
                rest = instance.exposed(last + 1) + prefix[layers] - prefix[last + 1]
            if floor >= best[last + 1] or floor + rest > known:
                continue
            if first == last:
                circuits, value = alone[first]
            else:
                step = _options(options, start)
                if step is None:
                    return ExactOutcome(None, Termination.LIMIT)
                model = plan_milp.build_segment(instance, first, last)
                result = solve_model(model, step)
                if result.objective is None:
                    return ExactOutcome(None, Termination.LIMIT)
                if result.termination is not Termination.OPTIMAL:
                    status = Termination.LIMIT
                circuits = plan_milp.segment_circuits(model, instance.servers)
                value = sum(instance.layer_time(l, circuits) for l in range(first, last + 1))
            if reach + value < best[last + 1]:
                best[last + 1], choice[last + 1] = reach + value, (first, circuits)
    if choice[layers] is None or best[layers] >= known:
        # every plan better than the incumbent survives the pruning, so none is
        return ExactOutcome(incumbent, status)
    starts, circuits, end = [], [], layers
    while end > 0:
        first, x = choice[end]
        starts.insert(0, first)
        circuits.insert(0, x)
        end = first
    return ExactOutcome(solution_of(instance, starts, circuits), status)


def layer_lower_bounds(instance: Instance, options: SolveOptions, integral: bool = False,
                       deadline: float | None = None) -> list[float]:
    """Per layer, a lower bound on its time on any circuits (s): ``n_l / theta^LP_l``, its time at
    its own M1 LP-relaxation throughput, or with ``integral`` ``n_l / theta^UB_l`` with
    ``theta^UB_l`` M1's own dual bound (the optimum where M1 ends; each M1 stops at ``deadline``, a
    ``time.perf_counter()`` instant, with its bound so far, or the LP's where it has none). Layers
    with the same matrix share one solve."""
    thetas: dict[tuple, float] = {}
    found = []
    for layer in range(len(instance.layers)):
        demand = instance.layers[layer].demand
        if demand not in thetas:
            theta = None
            if integral:
                step = options
                if deadline is not None:
                    step = replace(options, time_limit=max(0.01, deadline - time.perf_counter()))
                result = solve_model(milp.build(layer_instance(instance, layer)), step)
                if result.bound is not None and np.isfinite(result.bound):
                    theta = float(result.bound)
            if theta is None:
                model = milp.build(layer_instance(instance, layer))
                pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
                result = solve_model(model, options)
                if result.status != "optimal" or result.objective is None:
                    raise RuntimeError(f"the LP relaxation of layer {layer} ended {result.status}")
                theta = float(result.objective)
            thetas[demand] = theta
        found.append(instance.layers[layer].all_to_alls / thetas[demand])
    return found


def layer_bound(instance: Instance, options: SolveOptions) -> float:
    """A lower bound on the plan time: the first exposure plus every layer at its own M1
    LP-relaxation throughput, ``e_0 + sum_l n_l / theta^LP_l`` (:func:`layer_lower_bounds`; no plan
    beats each layer on circuits made for it alone, nor skips the first configuration). Often
    tighter than :func:`bound`."""
    return float(instance.exposed(0) + sum(layer_lower_bounds(instance, options)))


def bound(instance: Instance, options: SolveOptions) -> float:
    """A lower bound on the plan time at any size: the larger of the plan MILP's LP relaxation and
    :func:`layer_bound` (both are valid lower bounds, so their maximum is; the per-layer one is
    often the tighter). When the plan LP does not finish within the time limit (thousands of
    layers), :func:`layer_bound` alone, whose LPs are one layer each."""
    per_layer = layer_bound(instance, replace(options, time_limit=None))
    model = plan_milp.build(instance)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, options)
    if result.status == "optimal" and result.objective is not None:
        return max(float(result.objective), per_layer)
    if result.status not in ("time_limit", "feasible"):
        raise RuntimeError(f"the LP relaxation of the plan MILP ended {result.status}")
    return per_layer
