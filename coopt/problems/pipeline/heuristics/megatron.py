"""Megatron's recompute policies on Megatron's schedules (1F1B, or interleaved 1F1B with
chunks): full recompute (Korthikanti et al., MLSys 2023), the partial per-window policy
(``num_microbatches_with_partial_activation_checkpoints``) and block recompute of the first n layers.

Guarantee: the order is Megatron's and stays fixed; only modes change, each policy raising its
recompute one step at a time until every device fits, so the result fits every cap or raises
``NoSolution``. O(n p) per simulation.
"""

from __future__ import annotations

from dataclasses import replace

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.classic import _one_f_one_b_orders, interleaved_one_f_one_b
from coopt.problems.pipeline.heuristics.timing import Orders, _finish, _over_cap, _run, fused_waits
from coopt.problems.pipeline.model import (
    RECOMPUTE,
    Deadlock,
    Instance,
    peaks,
    simulate,
)


def _natural_orders(instance: Instance) -> Orders:
    """1F1B for one chunk per device, the interleaved order otherwise (Megatron's schedules)."""
    if instance.chunks == 1:
        return _one_f_one_b_orders(instance)
    if instance.placement != "interleaved" or instance.microbatches % instance.stages:
        raise NoSolution("Megatron's schedules need chunks = 1, or placement 'interleaved' with p dividing m")
    uncapped = replace(instance, memory_cap_bytes=None, allow_recompute=False, allow_offload=False)
    solution = interleaved_one_f_one_b(uncapped)
    orders: Orders = {d: [] for d in range(instance.stages)}
    for item in solution["passes"]:
        key = (item["kind"], item["stage"], item["microbatch"])
        orders[instance.device(key[1])].append(key)
    return orders


def megatron_full(instance: Instance, seed: int = 0) -> Solution:
    """Megatron full activation recomputation (Korthikanti et al., MLSys 2023) on Megatron's
    schedule (1F1B, or interleaved 1F1B with chunks): every (stage, micro-batch) keeps only its
    checkpoint and recomputes in B.

    Guarantee: the least activation memory of any order-preserving policy; the longest backward.
    O(n p).
    """
    if not instance.allow_recompute:
        raise NoSolution("megatron_full needs allow_recompute = true")
    modes = {(k, j): RECOMPUTE for k in range(instance.virtual_stages) for j in range(instance.microbatches)}
    waits = fused_waits(instance)
    return _finish(instance, _run(instance, _natural_orders(instance), "megatron_full", modes, waits), waits)


def megatron_selective(instance: Instance, seed: int = 0) -> Solution:
    """Megatron partial recomputation (``num_microbatches_with_partial_activation_checkpoints``):
    on Megatron's schedule, stage k recomputes micro-batch j iff (j mod w_k) < n_k, w_k its
    in-flight window; n_k is raised one at a time on a device that exceeds its cap (earliest
    stage first) until every device fits. (Megatron's tensor-level "selective" recompute needs a
    per-layer model; at stage level this partial policy is its analogue.)

    Guarantee: feasible under the cap or NoSolution; never recomputes more than megatron_full.
    O(p m) simulations.
    """
    if not instance.allow_recompute:
        raise NoSolution("megatron_selective needs allow_recompute = true")
    orders = _natural_orders(instance)
    waits = fused_waits(instance)
    K, m = instance.virtual_stages, instance.microbatches
    window = [min(instance.virtual_stages - k, m) for k in range(K)]
    count = [0] * K
    while True:
        modes = {(k, j): RECOMPUTE for k in range(K) for j in range(m) if j % window[k] < count[k]}
        try:
            timed = simulate(instance, orders, modes, waits)
        except Deadlock as exc:
            raise NoSolution(f"megatron_selective: {exc}") from None
        over = [d for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]
        if not over:
            return _finish(instance, timed, waits)
        raisable = [k for k in instance.stages_on(over[0]) if count[k] < window[k]]
        if not raisable:
            raise NoSolution(f"megatron_selective: device {over[0]} does not fit even with full recompute")
        count[raisable[0]] += 1


def megatron_block(instance: Instance, seed: int = 0) -> Solution:
    """Megatron block recompute (``--recompute-granularity full --recompute-method block
    --recompute-num-layers n``; NeMo's ``docs/source/features/optimizations/
    activation_recomputation.rst``: n layers per pipeline stage, per virtual stage with
    interleaving) on Megatron's schedule: every (stage, micro-batch) recomputes the first n of its
    virtual stage's L layers (``recompute_layers``), one n for every stage as Megatron's flag has;
    the least n = 0..L that fits every cap wins (n = L is :func:`megatron_full`).

    Guarantee: feasible under the cap or NoSolution; never slower than megatron_full on the same
    order. O(L) simulations of O(n p) each.
    """
    if not instance.allow_recompute:
        raise NoSolution("megatron_block needs allow_recompute = true")
    orders = _natural_orders(instance)
    waits = fused_waits(instance)
    K, m = instance.virtual_stages, instance.microbatches
    for n in range(max(instance.layers(k) for k in range(K)) + 1):
        modes = {(k, j): instance.recompute_mode(k, n) for k in range(K) for j in range(m)}
        try:
            timed = simulate(instance, orders, modes, waits)
        except Deadlock as exc:
            raise NoSolution(f"megatron_block: {exc}") from None
        if not _over_cap(instance, timed):
            return _finish(instance, timed, waits, recompute_num_layers=n)
    raise NoSolution("megatron_block: does not fit even with every layer recomputed")
