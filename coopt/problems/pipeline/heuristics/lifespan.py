"""The Chronos policies, reconstructed: recompute (Chronos-Recomp) or offload
(Chronos-Offload) the longest-lived activations first, on uncapped Chronos-Pipe orders of several
warm-ups, until every device fits (:func:`_lifespan_policy`). Recompute is per layer where the
instance has ``recompute_layers`` > 1 (:func:`_switch_until_fit`); offload uses PipeOffload's validity
rule and slot train (:mod:`coopt.problems.pipeline.heuristics.offload`).

Guarantee: the shortest schedule found that fits every cap, or ``NoSolution``. O(p v m L)
simulations for recompute.
"""

from __future__ import annotations

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.list_schedule import WARMUP_SLACK, _chronos_timed
from coopt.problems.pipeline.heuristics.offload import _offload_until_fit, admits_offload
from coopt.problems.pipeline.heuristics.timing import Orders, _finish
from coopt.problems.pipeline.model import (
    OFFLOAD,
    RECOMPUTE,
    Deadlock,
    Instance,
    Item,
    Timed,
    peaks,
    simulate,
)


def _lifespan_policy(instance: Instance, mode: str, name: str) -> Solution:
    """Shared loop of the Chronos policies. For each base order (the uncapped Chronos-Pipe list
    schedule with warm-up slack 0, 2, 4, and with windows scaled by m, whose long F -> B gaps
    leave room for copies), while a device exceeds its cap, switch its keep item with the longest
    F-start -> B-end lifetime per unit of added cost to ``mode`` and re-simulate (recompute), or
    add the longest-lived valid item to the PipeOffload slot train (offload,
    :func:`_offload_until_fit`); return the shortest schedule that fits."""
    best: Timed | None = None
    for orders in _base_orders(instance):
        if mode == OFFLOAD:
            timed = _offload_until_fit(instance, simulate(instance, orders))
        else:
            timed = _switch_until_fit(instance, orders)
        if timed is not None and (best is None or timed.makespan(instance) < best.makespan(instance) - 1e-12):
            best = timed
    if best is None:
        raise NoSolution(f"{name}: no base order fits the cap")
    return _finish(instance, best)


def _base_orders(instance: Instance) -> list[Orders]:
    """The per-device orders of the uncapped Chronos-Pipe list schedules the policies start from:
    warm-up slack 0, 2 and 4, and windows scaled by m."""
    out = []
    bases = [(1, slack) for slack in WARMUP_SLACK[::2]] + [(instance.microbatches, 0)]
    for widen, slack in bases:
        base = _chronos_timed(instance, capped=False, widen=widen, slack=slack)
        orders: Orders = {d: [] for d in range(instance.stages)}
        for key in sorted(base.start, key=lambda x: (base.start[x], x)):
            orders[instance.device(key[1])].append(key)
        out.append(orders)
    return out


def chronos_offload_applies(instance: Instance) -> bool:
    """Offload allowed, and some activation of some base order passes PipeOffload's validity rule
    (where none does, nothing can be offloaded). The cap is not read."""
    return instance.allow_offload and any(
        admits_offload(instance, simulate(instance, orders)) for orders in _base_orders(instance)
    )


def _switch_until_fit(instance: Instance, orders: Orders) -> Timed | None:
    """Recompute layers until every device fits: on every device over its cap, the items of
    longest F-start -> B-end lifetime per second of recompute first (bytes freed per second of
    recompute are ``(a - a_c) / T_R`` for every layer of a stage, so the lifetime decides), one
    layer at a time and an item's layers before the next item's (``recompute_layers``; with L = 1
    whole items), as many layers per round as the excess certainly needs (each saves at most
    ``(a - a_c) / L`` at the peak), then re-simulate. Only as many layers are recomputed as the
    memory needs: the last item switched may keep some of its layers."""
    layers: dict[Item, int] = {}
    while True:
        modes = {i: instance.recompute_mode(i[0], r) for i, r in layers.items()}
        try:
            timed = simulate(instance, orders, modes)
        except Deadlock:
            return None
        levels = peaks(instance, timed)
        over = [d for d, peak in enumerate(levels) if peak > instance.cap(d) * (1 + 1e-9)]
        if not over:
            return timed

        def value(item: Item, timed: Timed = timed) -> float:
            k, j = item
            life = timed.start[("B", k, j)] + instance.t_b(k) - timed.start[("F", k, j)]
            return life * (instance.a(k) - instance.a_c(k)) / instance.t_r(k)

        for d in over:
            items = [
                (k, j)
                for k in instance.stages_on(d)
                for j in range(instance.microbatches)
                if layers.get((k, j), 0) < instance.layers(k)
            ]
            if not items:
                return None
            saving = max((instance.a(k) - instance.a_c(k)) / instance.layers(k) for k, _ in items)
            count = max(1, int((levels[d] - instance.cap(d)) / saving)) if saving > 0 else 1
            for item in sorted(items, key=lambda x: (-value(x), x[1], x[0])):
                if count <= 0:
                    break
                more = min(count, instance.layers(item[0]) - layers.get(item, 0))
                layers[item] = layers.get(item, 0) + more
                count -= more


def chronos_recomp(instance: Instance, seed: int = 0) -> Solution:
    """Chronos-Recomp (ChronosPipe), reconstructed [R]: recompute the longest-lived activations
    first (the intrinsic residency of the first layers), on the Chronos-Pipe order, per layer
    where the instance has ``recompute_layers`` L > 1: only as many of an item's layers as the cap
    needs (:func:`_switch_until_fit`, greedy by lifetime, i.e. by recompute time per freed byte
    of the peak). The paper's abstract names recompute of the activations of "early" stages with
    long residency; which tensors or layers it picks is not public, so the per-layer greedy is
    ours.

    Guarantee: feasible under the cap or NoSolution; at most v m L recomputed layers per device.
    O(p v m L) simulations.
    """
    if not instance.allow_recompute:
        raise NoSolution("chronos_recomp needs allow_recompute = true")
    return _lifespan_policy(instance, RECOMPUTE, "chronos_recomp")


def chronos_offload(instance: Instance, seed: int = 0) -> Solution:
    """Chronos-Offload, reconstructed for activations (the paper also offloads weights/optimizer
    state, outside this stage-level memory model): offload the longest-lived activations that pass
    PipeOffload's validity rule (:func:`offload_valid`), on PipeOffload's shared copy slot train
    (:func:`slot_train`), on the Chronos-Pipe order; with v >= 2 chunks an item is one chunk's
    activation of one micro-batch (chunk-level offload).

    Guarantee: feasible under the cap or NoSolution. O(p v m) simulations.
    """
    if not instance.allow_offload:
        raise NoSolution("chronos_offload needs allow_offload = true")
    return _lifespan_policy(instance, OFFLOAD, "chronos_offload")
