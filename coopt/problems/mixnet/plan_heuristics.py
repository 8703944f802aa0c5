"""The reconfiguration plan (problem ``mixnet_plan``): the exact DP over segments, the dual bound,
the authors' runtime policy and ours.

Segment values. The exact DP needs ``C(a, b) = min_x sum_{l=a..b} n_l / theta_l(x)``: for one layer
that is M1 (the rate MILP of :mod:`coopt.problems.mixnet.milp`, the strongest model we have),
for more the segment MILP of :func:`plan_milp.build_segment`. The heuristics plan circuits with
the per-region planner of :mod:`coopt.problems.mixnet.circuits` (:func:`layer_plans`,
:func:`candidates`, :func:`polished`).
"""

from __future__ import annotations

import time

import numpy as np
import pyomo.environ as pyo

from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination
from coopt.problems.mixnet import milp, plan_milp
from coopt.problems.mixnet.circuits import RegionPlanner, authors_greedy
from coopt.problems.mixnet.model import Instance as CircuitInstance
from coopt.problems.mixnet.model import Traffic
from coopt.problems.mixnet.plan_model import Instance, solution_of
from coopt.solvers.highs import solve_model

#: Longest segment the heuristic DP considers.
SEGMENT_CAP = 8


def layer_instance(instance: Instance, layer: int) -> CircuitInstance:
    """One layer as an M1 instance (its matrix on the plan's fabric)."""
    item = instance.layers[layer]
    return CircuitInstance(instance.fabric, (Traffic(item.name, 0, item.demand),))


def _options(options: SolveOptions, start: float) -> SolveOptions | None:
    """The options of the next MILP with what is left of the time limit (None: nothing left)."""
    if options.time_limit is None:
        return options
    left = options.time_limit - (time.perf_counter() - start)
    return None if left <= 0 else SolveOptions(left, options.gap, options.threads, options.seed)


# -- circuits for layers and stretches of layers ---------------------------------------------


def _planner(instance: Instance, layers: range) -> RegionPlanner:
    f = instance.fabric
    return RegionPlanner([instance.layers[l].bits() for l in layers], f.alpha, f.nic_rate, f.eps_rate)


def _counts(instance: Instance, layers: range) -> np.ndarray:
    return np.array([instance.layers[l].all_to_alls for l in layers], dtype=float)


def _cheap(planner: RegionPlanner) -> np.ndarray:
    """A deficit fill at the port bound, topped up: the circuits before any local search."""
    bound = planner.port_bound()
    return planner.fill(bound, planner.fill(bound))


def layer_plans(instance: Instance, polish: bool = True) -> list[np.ndarray]:
    """Our circuits for each layer alone (:func:`circuits.fill_and_swap`'s planner, or its
    deficit fill alone without ``polish``); layers with the same matrix share one plan."""
    found: dict[tuple, np.ndarray] = {}
    plans = []
    for l, layer in enumerate(instance.layers):
        if layer.demand not in found:
            planner = _planner(instance, range(l, l + 1))
            found[layer.demand] = planner.plan() if polish else _cheap(planner)
        plans.append(found[layer.demand])
    return plans


def candidates(instance: Instance) -> list[np.ndarray]:
    """The cheap circuit sets the heuristic DP chooses from: each distinct layer's deficit fill,
    a joint fill over every stretch of 2 and of 4 layers, and one over all layers."""
    layers = len(instance.layers)
    found = {x.tobytes(): x for x in layer_plans(instance, polish=False)}
    stretches = [range(a, a + n) for n in (2, 4) for a in range(layers - n + 1)] + [range(layers)]
    for stretch in stretches:
        x = _cheap(_planner(instance, stretch))
        found.setdefault(x.tobytes(), x)
    return list(found.values())


def candidate_times(instance: Instance, sets: list[np.ndarray]) -> np.ndarray:
    """``(C, L)``: each layer's exact time (s) on each circuit set, one vectorised evaluation per set."""
    every = _planner(instance, range(len(instance.layers)))
    counts = _counts(instance, range(len(instance.layers)))
    return np.array([counts / (every.roots(x).min(axis=(1, 2)) * every.rate_per_unit) for x in sets])


def polished(instance: Instance, first: int, last: int, circuits: np.ndarray) -> np.ndarray:
    """``circuits`` improved for the time of layers ``first..last`` by local search
    (:meth:`RegionPlanner.improve_sum`)."""
    stretch = range(first, last + 1)
    return _planner(instance, stretch).improve_sum(circuits, _counts(instance, stretch))


# -- policies --------------------------------------------------------------------------------


def mixnet_runtime(instance: Instance, seed: int = 0) -> Solution:
    """MixNet's runtime: before every layer's all-to-all the region's controller re-plans with its
    greedy on the layer's matrix and pays the delay (Gabriel-Yoon/mixnet-htsim,
    ``RegionalTopoManager::start_reconf`` -> ``update_regional_queue_bandwidth`` ->
    ``regional_topo_reconfig``, ``src/clos/mixnet_topomanager.cpp`` lines 132-182 and 327-417 at
    commit c94bae3). One reconfiguration serves a layer's dispatch and combine (the recorder keeps
    one matrix per layer, so both get the same circuits).

    Guarantee: a valid plan; every layer pays its exposed delay. ``O(L alpha R^3)``. Source:
    MixNet (SIGCOMM 2025) and the authors' simulator."""
    alpha = instance.fabric.alpha
    circuits = []
    for item in instance.layers:
        bits = item.bits()
        circuits.append(authors_greedy(bits + bits.T, alpha))
    return solution_of(instance, list(range(len(instance.layers))), circuits)


def always_reconfigure(instance: Instance, seed: int = 0) -> Solution:
    """Re-plan before every layer with our per-layer circuits (:func:`circuits.fill_and_swap`).

    Guarantee: a valid plan, each layer on circuits planned for it alone; pays every exposed
    delay. ``O(L)`` runs of the per-layer planner. Source: ours, the always-reconfigure policy."""
    layers = len(instance.layers)
    return solution_of(instance, list(range(layers)), layer_plans(instance))


def never_reconfigure(instance: Instance, seed: int = 0) -> Solution:
    """One circuit set for the whole iteration: the best, by the iteration's time, of each layer's
    own plan and a fill over all layers, improved for that time by local search.

    Guarantee: a valid plan with one reconfiguration (the first), no slower than any layer's own
    circuits kept throughout. ``O(L)`` planner runs and one local search. Source: ours, the
    never-reconfigure policy (a static topology, as TopoOpt)."""
    sets = [*layer_plans(instance), _cheap(_planner(instance, range(len(instance.layers))))]
    start = sets[int(np.argmin(candidate_times(instance, sets).sum(axis=1)))]
    return solution_of(instance, [0], [polished(instance, 0, len(instance.layers) - 1, start)])


def threshold(instance: Instance, seed: int = 0) -> Solution:
    """Re-plan at a layer when the predicted gain exceeds the exposed delay: keeping the current
    circuits costs ``n_l / theta_l(x)``, new ones planned for the layer alone cost
    ``n_l / theta_l(x_l) + e_l``; switch when that is smaller (myopic: the layer alone is predicted).

    Guarantee: a valid plan, never worse at any single layer than the better of keeping and
    switching for that layer. ``O(L)`` planner runs. Source: ours, the threshold policy."""
    plans = layer_plans(instance)
    starts, circuits = [0], [plans[0]]
    for layer in range(1, len(instance.layers)):
        keep = instance.layer_time(layer, circuits[-1])
        switch = instance.layer_time(layer, plans[layer]) + instance.exposed(layer)
        if switch < keep * (1 - 1e-12):
            starts.append(layer)
            circuits.append(plans[layer])
    return solution_of(instance, starts, circuits)


def segment_dp(instance: Instance, seed: int = 0) -> Solution:
    """Ours: the exact DP over segments on a table of cheap circuit sets, then local search on the
    segments it keeps. With ``t[c, l]`` the exact time of layer ``l`` on set ``c`` of
    :func:`candidates`, ``F(b) = min_a F(a - 1) + e_a + min_c sum_{l=a..b} t[c, l]`` over
    segments of at most :data:`SEGMENT_CAP` layers; each kept segment's circuits are then improved
    for its time (:meth:`RegionPlanner.improve_sum`).

    Guarantee: a valid plan, at least as good as every plan whose segments (of at most
    ``SEGMENT_CAP`` layers) each keep one candidate set, always-reconfigure and
    never-reconfigure on them included. ``O(L)`` deficit fills, one vectorised time evaluation per
    candidate, ``O(L SEGMENT_CAP C)`` additions and one local search per kept segment.
    Source: ours."""
    layers = len(instance.layers)
    sets = candidates(instance)
    prefix = np.cumsum(candidate_times(instance, sets), axis=1)
    prefix = np.concatenate([np.zeros((len(sets), 1)), prefix], axis=1)
    best = [0.0] + [np.inf] * layers  # best[b + 1]: layers 0..b planned
    choice: list[tuple[int, int] | None] = [None] * (layers + 1)
    for last in range(layers):
        for first in range(max(0, last - SEGMENT_CAP + 1), last + 1):
            stretch = prefix[:, last + 1] - prefix[:, first]
            pick = int(np.argmin(stretch))
            total = best[first] + instance.exposed(first) + stretch[pick]
            if total < best[last + 1] * (1 - 1e-12):
                best[last + 1], choice[last + 1] = total, (first, pick)
    starts, circuits, end = [], [], layers
    while end > 0:
        first, pick = choice[end]
        starts.insert(0, first)
        circuits.insert(0, polished(instance, first, end - 1, sets[pick]))
        end = first
    return solution_of(instance, starts, circuits)


HEURISTICS = {
    "mixnet_runtime": mixnet_runtime,
    "always_reconfigure": always_reconfigure,
    "never_reconfigure": never_reconfigure,
    "threshold": threshold,
    "segment_dp": segment_dp,
}


# -- exact DP over segments, and the bound ---------------------------------------------------


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


def layer_bound(instance: Instance, options: SolveOptions) -> float:
    """A lower bound on the plan time: the first exposure plus every layer at its own M1
    LP-relaxation throughput, ``e_0 + sum_l n_l / theta^LP_l`` (no plan beats each layer on circuits
    made for it alone, nor skips the first configuration). Often tighter than :func:`bound`."""
    total = instance.exposed(0)
    for layer in range(len(instance.layers)):
        model = milp.build(layer_instance(instance, layer))
        pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
        result = solve_model(model, options)
        if result.status != "optimal" or result.objective is None:
            raise RuntimeError(f"the LP relaxation of layer {layer} ended {result.status}")
        total += instance.layers[layer].all_to_alls / result.objective
    return float(total)


def bound(instance: Instance, options: SolveOptions) -> float:
    """A lower bound on the plan time at any size: the larger of the plan MILP's LP relaxation and
    :func:`layer_bound` (both are valid lower bounds, so their maximum is; the per-layer one is
    often the tighter). When the plan LP does not finish within the time limit (thousands of
    layers), :func:`layer_bound` alone, whose LPs are one layer each."""
    per_layer = layer_bound(instance, SolveOptions(None, options.gap, options.threads, options.seed))
    model = plan_milp.build(instance)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    result = solve_model(model, options)
    if result.status == "optimal" and result.objective is not None:
        return max(float(result.objective), per_layer)
    if result.status not in ("time_limit", "feasible"):
        raise RuntimeError(f"the LP relaxation of the plan MILP ended {result.status}")
    return per_layer
