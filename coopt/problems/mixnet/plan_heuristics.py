"""The reconfiguration plan (problem ``mixnet_plan``): the authors' runtime policy, the fixed
policies and ours. The exact DP over segments and the dual bound are in :mod:`.plan_exact`.

Segment values. The exact DP needs ``C(a, b) = min_x sum_{l=a..b} n_l / theta_l(x)``: for one layer
that is M1 (the rate MILP of :mod:`coopt.problems.mixnet.milp`, the strongest model we have),
for more the segment MILP of :func:`plan_milp.build_segment`. The heuristics plan circuits with
the per-region planner of :mod:`coopt.problems.mixnet.circuits` (:func:`layer_plans`,
:func:`candidates`, :func:`polished`).
"""

from __future__ import annotations

import numpy as np

from coopt.problem import Solution
from coopt.problems.mixnet.circuits import RegionPlanner, authors_greedy
from coopt.problems.mixnet.model import Instance as CircuitInstance
from coopt.problems.mixnet.model import Traffic
from coopt.problems.mixnet.plan_model import Instance, solution_of

#: Longest segment the heuristic DP considers.
SEGMENT_CAP = 8


def layer_instance(instance: Instance, layer: int) -> CircuitInstance:
    """One layer as an M1 instance (its matrix on the plan's fabric)."""
    item = instance.layers[layer]
    return CircuitInstance(instance.fabric, (Traffic(item.name, 0, item.demand),))


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


def _segment_table_dp(instance: Instance, times: np.ndarray, cap: int) -> tuple[list[int], list[int]]:
    """The DP over segments of at most ``cap`` layers on a table ``times[c, l]`` of candidate sets:
    ``F(b) = min_a F(a - 1) + e_a + min_c sum_{l=a..b} t[c, l]``; the starts and each segment's
    candidate."""
    layers = times.shape[1]
    prefix = np.concatenate([np.zeros((len(times), 1)), np.cumsum(times, axis=1)], axis=1)
    best = [0.0] + [np.inf] * layers  # best[b + 1]: layers 0..b planned
    choice: list[tuple[int, int] | None] = [None] * (layers + 1)
    for last in range(layers):
        for first in range(max(0, last - cap + 1), last + 1):
            stretch = prefix[:, last + 1] - prefix[:, first]
            pick = int(np.argmin(stretch))
            total = best[first] + instance.exposed(first) + stretch[pick]
            if total < best[last + 1] * (1 - 1e-12):
                best[last + 1], choice[last + 1] = total, (first, pick)
    starts, picks, end = [], [], layers
    while end > 0:
        first, pick = choice[end]
        starts.insert(0, first)
        picks.insert(0, pick)
        end = first
    return starts, picks


#: Most rounds of :func:`segment_dp` after the first (each adds the polished sets and plans again).
SEGMENT_ROUNDS = 4


def segment_dp(instance: Instance, seed: int = 0) -> Solution:
    """Ours: the exact DP over segments on a table of cheap circuit sets, then local search on the
    segments it keeps, repeated on the grown table. With ``t[c, l]`` the exact time of layer ``l``
    on set ``c`` of :func:`candidates`, ``F(b) = min_a F(a - 1) + e_a + min_c sum_{l=a..b} t[c, l]``
    over segments of at most :data:`SEGMENT_CAP` layers; each kept segment's circuits are then
    improved for its time (:meth:`RegionPlanner.improve_sum`). Then, for up to
    :data:`SEGMENT_ROUNDS` rounds, the polished sets join the table and the DP runs again over
    segments of any length (one circuit set for the whole iteration included), polishing what it
    keeps; it stops when a round finds no faster plan. The plan returned is the fastest seen.

    Guarantee: a valid plan, at least as good as every plan whose segments (of at most
    ``SEGMENT_CAP`` layers) each keep one candidate set, always-reconfigure and
    never-reconfigure on them included, and, after the first round, as every plan of any
    segments that keep a set of the grown table (the first round's plan among them). ``O(L)``
    deficit fills, one vectorised time evaluation per candidate, ``O(L SEGMENT_CAP C)`` additions
    in the first round and ``O(L^2 C)`` in each later one, one local search per kept segment and
    round. Source: ours."""
    layers = len(instance.layers)
    sets = candidates(instance)
    times = candidate_times(instance, sets)
    best: Solution | None = None
    cap = SEGMENT_CAP
    done: dict[tuple[int, int, bytes], np.ndarray] = {}  # (first, end, set) -> its polished circuits
    for _ in range(1 + SEGMENT_ROUNDS):
        starts, picks = _segment_table_dp(instance, times, cap)
        ends = [*starts[1:], layers]
        keys = [(first, end, sets[pick].tobytes())
                for first, end, pick in zip(starts, ends, picks, strict=True)]
        if best is not None and all(key in done for key in keys):
            break  # the same segments on sets already polished: the same plan again
        for key, pick in zip(keys, picks, strict=True):
            if key not in done:
                done[key] = polished(instance, key[0], key[1] - 1, sets[pick])
        circuits = [done[key] for key in keys]
        plan = solution_of(instance, starts, circuits)
        if best is not None and plan["objective"] >= best["objective"] * (1 - 1e-12):
            break
        best = plan
        known = {x.tobytes() for x in sets}
        fresh = [x for x in circuits if x.tobytes() not in known]
        if fresh:
            sets = sets + fresh
            times = np.concatenate([times, candidate_times(instance, fresh)])
        cap = layers
    return best


#: Longest kept segment :func:`segment_dp_restart` polishes again from each of its layers' own circuits.
RESTART_LENGTH = 16


def plan_time_of(instance: Instance, first: int, end: int, circuits: np.ndarray) -> float:
    """The exact time (s) of layers ``first..end - 1`` on ``circuits``."""
    return sum(instance.layer_time(layer, circuits) for layer in range(first, end))


def segment_dp_restart(instance: Instance, seed: int = 0) -> Solution:
    """:func:`segment_dp`, then each kept segment of at most :data:`RESTART_LENGTH` layers polished
    again from each of its layers' own circuits (``fill_and_swap``'s) and from its joint deficit
    fill, the fastest result kept. The local search stops at local optima: on the four segments of
    the 56-layer file whose optimum outer approximation proved (:mod:`.plan_bound`), these restarts
    reach it where :func:`segment_dp`'s polish stopped up to 3.7 % above it.

    Guarantee: a valid plan, never slower than :func:`segment_dp`'s. Cost: :func:`segment_dp`, the
    per-layer ``fill_and_swap`` plans (:func:`layer_plans`) and at most ``RESTART_LENGTH + 1``
    local searches per kept segment (about 3x :func:`segment_dp` on the 56-layer file, 2-4x on the
    small family). Source: ours (multi-start local search)."""
    return _restarted(instance, segment_dp(instance))


def restart_starts(instance: Instance, own: list[np.ndarray], first: int, end: int) -> list[np.ndarray]:
    """The circuits :func:`segment_dp_restart` polishes segment ``first..end - 1`` from: each of its
    layers' own (``own``, :func:`layer_plans`' list), then the segment's joint deficit fill."""
    return [*(own[layer] for layer in range(first, end)), _cheap(_planner(instance, range(first, end)))]


def _restarted(instance: Instance, plan: Solution) -> Solution:
    """``plan`` with each kept segment of at most :data:`RESTART_LENGTH` layers polished again from
    each of its layers' own circuits (:func:`layer_plans`, distinct ones once), the fastest kept."""
    own = layer_plans(instance)
    starts = [segment["first_layer"] for segment in plan["segments"]]
    ends = [*starts[1:], len(instance.layers)]
    circuits = []
    for segment, first, end in zip(plan["segments"], starts, ends, strict=True):
        best = np.array(segment["circuits"], dtype=int)
        if end - first <= RESTART_LENGTH:
            fastest = plan_time_of(instance, first, end, best)
            seen = {best.tobytes()}
            for start in restart_starts(instance, own, first, end):
                if start.tobytes() in seen:
                    continue
                seen.add(start.tobytes())
                found = polished(instance, first, end - 1, start)
                if plan_time_of(instance, first, end, found) < fastest * (1 - 1e-12):
                    best, fastest = found, plan_time_of(instance, first, end, found)
        circuits.append(best)
    restarted = solution_of(instance, starts, circuits)
    return restarted if restarted["objective"] < plan["objective"] else plan


HEURISTICS = {
    "mixnet_runtime": mixnet_runtime,
    "always_reconfigure": always_reconfigure,
    "never_reconfigure": never_reconfigure,
    "threshold": threshold,
    "segment_dp": segment_dp,
    "segment_dp_restart": segment_dp_restart,
}


# -- exact DP over segments, and the bound ---------------------------------------------------
