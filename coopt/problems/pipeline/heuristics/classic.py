"""Fixed-order schedules of the literature: GPipe, 1F1B (fused and with the early input
gradient), interleaved 1F1B and ZB-H1. Each builds per-device orders in O(p m v) from the instance's
structure alone and times them with the shared simulator.

Their activation peaks are closed forms of the structure (the per-device order fixes the level, the
timing does not), so each declares where it fits the cap (:func:`gpipe_fits`, :func:`one_f_one_b_fits`,
:func:`zb_h1_fits`, :func:`interleaved_fits`): on those instances it returns a schedule, elsewhere it
raises ``NoSolution``.
"""

from __future__ import annotations

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.timing import (
    Orders,
    _backward,
    _finish,
    _need_single_chunk,
    _need_split,
    _run,
    fused_waits,
    holds,
    interleaved_placement,
    one_chunk_split,
)
from coopt.problems.pipeline.model import (
    Instance,
    PassKey,
)


def _one_f_one_b_orders(instance: Instance) -> Orders:
    p, m = instance.stages, instance.microbatches
    orders: Orders = {}
    for s in range(p):
        warmup = min(p - s - 1, m)
        order: list[PassKey] = [("F", s, j) for j in range(warmup)]
        for j in range(warmup, m):
            order += [("F", s, j), *_backward(instance, s, j - warmup)]
        for j in range(m - warmup, m):
            order += _backward(instance, s, j)
        orders[s] = order
    return orders


def gpipe(instance: Instance, seed: int = 0) -> Solution:
    """GPipe (Huang et al., NeurIPS 2019): every forward, then every backward, micro-batches in
    order; with several chunks per device the forwards go chunk by chunk (looped breadth-first).

    The backward is fused: the input gradient goes upstream after B and W (:func:`fused_waits`).

    Guarantee: makespan (m + p - 1)(T_F + T_B + T_W) for uniform stages, v = 1, c = 0; peak m
    micro-batches of activations per device. O(p m v) orders, O(n p) simulation.
    """
    orders: Orders = {}
    for d in range(instance.stages):
        chunks = instance.stages_on(d)
        forwards = [("F", k, j) for k in chunks for j in range(instance.microbatches)]
        backwards = [
            x
            for k in reversed(chunks)
            for j in range(instance.microbatches)
            for x in _backward(instance, k, j)
        ]
        orders[d] = forwards + backwards
    waits = fused_waits(instance)
    return _finish(instance, _run(instance, orders, "gpipe", waits=waits), waits)


def one_f_one_b(instance: Instance, seed: int = 0) -> Solution:
    """1F1B / PipeDream-flush (Narayanan et al. 2021; Megatron's non-interleaved schedule): stage s
    runs min(p - s - 1, m) warm-up forwards, then alternates one forward and one full backward,
    B and W fused, the gradient sent upstream after both (Zero Bubble's ``basic1f1b.py`` lines
    8-17: warm-up ``min(n_stages - stage - 1, n_micro)``, then ``F``/``BW`` pairs).

    Guarantee: makespan (m + p - 1)(T_F + T_B + T_W) for uniform stages at c = 0 (33 on research
    instance I1, p = 4, m = 8, unit times), peak min(p - s, m) micro-batches on stage s. O(p m).
    """
    _need_single_chunk(instance, "1f1b")
    waits = fused_waits(instance)
    return _finish(instance, _run(instance, _one_f_one_b_orders(instance), "1f1b", waits=waits), waits)


def one_f_one_b_split(instance: Instance, seed: int = 0) -> Solution:
    """1F1B's order with the B/W split exploited by the runtime: W still runs right after its B,
    but the input gradient goes upstream as soon as B ends. Not a schedule of the literature; it
    isolates the gain of sending early from the gain of reordering W (ZB-H1).

    Guarantee: makespan at most 1F1B's; same peaks. O(p m).
    """
    _need_single_chunk(instance, "1f1b_split")
    _need_split(instance, "1f1b_split")
    return _finish(instance, _run(instance, _one_f_one_b_orders(instance), "1f1b_split"))


def interleaved_one_f_one_b(instance: Instance, seed: int = 0) -> Solution:
    """Interleaved 1F1B (Megatron virtual pipeline, Narayanan et al. SC 2021), v >= 2 chunks per
    device placed round-robin; device d warms up with min(2(p - d - 1) + (v - 1)p, v m) forwards.

    The backward is fused as in Megatron (:func:`fused_waits`).

    Guarantee: makespan m(T_F + T_Bf) + (p - 1)(T_F + T_Bf)/v for uniform stages, c = 0, m a
    multiple of p; device-0 peak p + (p - 1)/v device-micro-batches. O(v p m).
    """
    p, m, v = instance.stages, instance.microbatches, instance.chunks
    if v < 2 or instance.placement != "interleaved" or m % p:
        raise NoSolution("interleaved_1f1b needs chunks >= 2, placement 'interleaved' and m a multiple of p")
    total = v * m
    orders: Orders = {}
    for d in range(p):

        def op(i: int, backward: bool, d: int = d) -> list[PassKey]:
            chunk = (i % (p * v)) // p
            j = (i // (p * v)) * p + i % p
            if backward:
                k = (v - 1 - chunk) * p + d
                return _backward(instance, k, j)
            return [("F", chunk * p + d, j)]

        warmup = min(2 * (p - d - 1) + (v - 1) * p, total)
        order: list[PassKey] = [x for i in range(warmup) for x in op(i, False)]
        for i in range(warmup, total):
            order += op(i, False) + op(i - warmup, True)
        for i in range(total - warmup, total):
            order += op(i, True)
        orders[d] = order
    waits = fused_waits(instance)
    return _finish(instance, _run(instance, orders, "interleaved_1f1b", waits=waits), waits)


def zb_h1(instance: Instance, seed: int = 0) -> Solution:
    """ZB-H1 (Zero Bubble, Qi et al. ICLR 2024): 1F1B's forwards and backwards with the W passes
    split off; stage s holds back s weight-gradient passes and runs them in the cool-down bubbles.

    Guarantee: makespan m(T_F + T_B + T_W) + (p - 1)(T_F + T_B - T_W) for uniform stages, c = 0,
    T_W <= T_F + T_B; same activation peak as 1F1B (stage s: (p - s)a - s(a - a_W)). O(p m).
    """
    _need_single_chunk(instance, "zb_h1")
    _need_split(instance, "zb_h1")
    p, m = instance.stages, instance.microbatches
    orders: Orders = {}
    for s in range(p):
        warmup = min(p - s - 1, m)
        order: list[PassKey] = [("F", s, j) for j in range(warmup)]
        pending: list[PassKey] = []
        for b in range(m):
            if warmup + b < m:
                order.append(("F", s, warmup + b))
            order.append(("B", s, b))
            pending.append(("W", s, b))
            while len(pending) > s:
                order.append(pending.pop(0))
        orders[s] = order + pending
    return _finish(instance, _run(instance, orders, "zb_h1"))


# -- where each fits the cap: the per-device activation peak of its order, in closed form ---------
# On a device the passes run one after another, so the activation level follows the order alone:
# +a at an F, -(a - a_W) at its B, -a_W at its W (releases first at equal times).
def gpipe_fits(instance: Instance) -> bool:
    """Every forward before any backward: device d peaks at m times the activations of its chunks."""
    m = instance.microbatches
    return all(
        holds(instance, d, m * sum(instance.a(k) for k in instance.stages_on(d)))
        for d in range(instance.stages)
    )


def one_f_one_b_fits(instance: Instance) -> bool:
    """One chunk per device; stage s peaks at min(p - s, m) micro-batches (its warm-up and one more)."""
    p, m = instance.stages, instance.microbatches
    return instance.chunks == 1 and all(holds(instance, s, min(p - s, m) * instance.a(s)) for s in range(p))


def one_f_one_b_split_fits(instance: Instance) -> bool:
    """1F1B's order with separate W passes: 1F1B's peaks."""
    return instance.split_backward and one_f_one_b_fits(instance)


def zb_h1_fits(instance: Instance) -> bool:
    """One chunk per device, separate W passes; stage s peaks, with w = min(p - s - 1, m) warm-up
    forwards, at (w + 1) a + min(m - w - 1, s) a_W (the s held-back W passes keep a_W each), or m a
    where the warm-up takes every micro-batch."""
    if not one_chunk_split(instance):
        return False
    p, m = instance.stages, instance.microbatches

    def peak(s: int) -> float:
        w = min(p - s - 1, m)
        if w >= m:
            return m * instance.a(s)
        return (w + 1) * instance.a(s) + min(m - w - 1, s) * instance.a_w(s)

    return all(holds(instance, s, peak(s)) for s in range(p))


def interleaved_fits(instance: Instance) -> bool:
    """Megatron's interleaved placement; device d peaks at min(w_d + 1, v m) chunk activations, w_d =
    2(p - d - 1) + (v - 1)p its warm-up forwards (each backward runs whole before the next forward)."""
    if not interleaved_placement(instance):
        return False
    p, m, v = instance.stages, instance.microbatches, instance.chunks

    def peak(d: int) -> float:
        held = min(2 * (p - d - 1) + (v - 1) * p + 1, v * m)
        return held * instance.a(instance.stages_on(d)[0])

    return all(holds(instance, d, peak(d)) for d in range(p))
