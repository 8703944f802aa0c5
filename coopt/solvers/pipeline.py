"""Pipeline schedules as explicit timed schedules: fixed-order classics (GPipe, 1F1B, interleaved
1F1B, ZB-H1), memory-capped list schedules (ZB-H2, V-shape, Chronos-Pipe) and recompute/offload
policies (Megatron full and selective recompute, Chronos-Recomp, Chronos-Offload).

Every heuristic builds per-device pass orders (or dispatches passes greedily in time), times them
with the shared event simulator of :mod:`coopt.formulations.pipeline.model`, and raises
``NoSolution`` when the schedule does not fit the instance (wrong placement, or a device's
activation memory above its cap). All are deterministic; the seed is unused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from coopt.formulations.pipeline.model import (
    OFFLOAD,
    RECOMPUTE,
    Deadlock,
    Instance,
    Item,
    PassKey,
    Timed,
    peaks,
    simulate,
    to_solution,
)
from coopt.problem import NoSolution, Solution

Orders = dict[int, list[PassKey]]


# --------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------
def _backward(instance: Instance, k: int, j: int) -> list[PassKey]:
    """B, followed at once by W when the backward is split (a fused full backward)."""
    return [("B", k, j), ("W", k, j)] if instance.split_backward else [("B", k, j)]


def _need_single_chunk(instance: Instance, name: str) -> None:
    if instance.chunks != 1:
        raise NoSolution(f"{name} runs one chunk per device; the instance has chunks = {instance.chunks}")


def _need_split(instance: Instance, name: str) -> None:
    if not instance.split_backward:
        raise NoSolution(f"{name} needs split_backward = true (separate W passes)")


def _fits(instance: Instance, timed: Timed, name: str) -> Timed:
    over = [(d, peak) for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]
    if over:
        d, peak = over[0]
        raise NoSolution(f"{name}: device {d} needs {peak:g} GB > cap {instance.cap(d):g} GB")
    return timed


def _run(instance: Instance, orders: Orders, name: str, modes: dict[Item, str] | None = None) -> Timed:
    try:
        timed = simulate(instance, orders, modes)
    except Deadlock as exc:
        raise NoSolution(f"{name}: {exc}") from None
    return _fits(instance, timed, name)


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


# --------------------------------------------------------------------------------------------
# Fixed-order schedules
# --------------------------------------------------------------------------------------------
def gpipe(instance: Instance, seed: int = 0) -> Solution:
    """GPipe (Huang et al., NeurIPS 2019): every forward, then every backward, micro-batches in
    order; with several chunks per device the forwards go chunk by chunk (looped breadth-first).

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
    return to_solution(instance, _run(instance, orders, "gpipe"))


def one_f_one_b(instance: Instance, seed: int = 0) -> Solution:
    """1F1B / PipeDream-flush (Narayanan et al. 2021; Megatron's non-interleaved schedule): stage s
    runs min(p - s - 1, m) warm-up forwards, then alternates one forward and one full backward.

    Guarantee: same makespan as GPipe for uniform stages at c = 0, peak min(p - s, m) micro-batches
    on stage s. O(p m).
    """
    _need_single_chunk(instance, "1f1b")
    return to_solution(instance, _run(instance, _one_f_one_b_orders(instance), "1f1b"))


def interleaved_one_f_one_b(instance: Instance, seed: int = 0) -> Solution:
    """Interleaved 1F1B (Megatron virtual pipeline, Narayanan et al. SC 2021), v >= 2 chunks per
    device placed round-robin; device d warms up with min(2(p - d - 1) + (v - 1)p, v m) forwards.

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
    return to_solution(instance, _run(instance, orders, "interleaved_1f1b"))


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
    return to_solution(instance, _run(instance, orders, "zb_h1"))


# --------------------------------------------------------------------------------------------
# Memory-capped list scheduling
# --------------------------------------------------------------------------------------------
Priority = Callable[[PassKey, dict[PassKey, float]], tuple]


def _list_schedule(
    instance: Instance,
    window: Callable[[int], int],
    priority: Priority,
    name: str,
    budget: Callable[[int], float] | None = None,
) -> Timed:
    """Dispatch passes in time order: each device, when free, starts the ready pass of best
    ``priority`` (per (kind, stage) FIFO) that keeps its activations within min(cap, budget) and,
    for a forward, keeps fewer than ``window(k)`` micro-batches in flight on virtual stage k.
    A forward also reserves room for the same micro-batch's later chunks on its device, so a
    micro-batch that entered a device can always finish there (no memory deadlock from chunks).
    O(n^2) for n passes."""
    p, m = instance.stages, instance.microbatches
    nxt = {(x, k): 0 for x in instance.kinds for k in range(instance.virtual_stages)}
    start: dict[PassKey, float] = {}
    end: dict[PassKey, float] = {}
    free = [0.0] * p
    level = [0.0] * p
    reserved = [0.0] * p
    inflight = [0] * instance.virtual_stages
    limit = [min(instance.cap(d), budget(d) if budget else float("inf")) * (1 + 1e-9) for d in range(p)]
    first = [min(instance.stages_on(d)) for d in range(p)]
    later = {
        k: sum(instance.a(q) for q in instance.stages_on(instance.device(k)) if q > k)
        for k in range(instance.virtual_stages)
    }

    def admissible(key: PassKey, d: int) -> bool:
        kind, k, _ = key
        if kind != "F":
            return True
        if k != first[d]:
            return True  # a later chunk of a micro-batch already on this device: room is reserved
        return inflight[k] < window(k) and level[d] + reserved[d] + instance.a(k) + later[k] <= limit[d]

    while len(start) < len(nxt) * m:
        best: tuple | None = None
        for d in range(p):
            cands = []
            for k in instance.stages_on(d):
                for kind in instance.kinds:
                    j = nxt[(kind, k)]
                    if j >= m:
                        continue
                    key = (kind, k, j)
                    preds = instance.predecessors(key)
                    if any(q not in end for q, _ in preds) or not admissible(key, d):
                        continue
                    cands.append((max([free[d]] + [end[q] + lag for q, lag in preds]), key))
            if not cands:
                continue
            t = min(r for r, _ in cands)
            key = min((key for r, key in cands if r <= t), key=lambda x: priority(x, start))
            if best is None or (t, d) < best[:2]:
                best = (t, d, key)
        if best is None:
            raise NoSolution(f"{name}: no pass can start within the memory cap (deadlock)")
        t, d, key = best
        kind, k, j = key
        start[key] = t
        end[key] = t + instance.duration(key)
        free[d] = end[key]
        if kind == "F":
            level[d] += instance.a(k)
            reserved[d] += later[k] if k == first[d] else -instance.a(k)
            inflight[k] += 1
        elif kind == "B":
            level[d] -= instance.a(k) - instance.a_w(k)
            inflight[k] -= 1
        else:
            level[d] -= instance.a_w(k)
        nxt[(kind, k)] += 1
    return _fits(instance, Timed(start=start, modes={}, d2h={}, h2d={}), name)


def zb_h2(instance: Instance, seed: int = 0) -> Solution:
    """ZB-H2 (Zero Bubble): list schedule with priority B > F > W, stage s admitting up to
    2(p - s) - 1 micro-batches in flight (ZB-H2's larger warm-up), W passes filling the bubbles.

    Guarantee: feasible under the cap or NoSolution; per-stage span close to m(T_F + T_B + T_W)
    when memory allows 2p - 1 micro-batches. O(n^2).
    """
    _need_single_chunk(instance, "zb_h2")
    _need_split(instance, "zb_h2")
    rank = {"B": 0, "F": 1, "W": 2}
    timed = _list_schedule(
        instance, lambda k: 2 * (instance.stages - k) - 1, lambda x, _: (rank[x[0]], x[2]), "zb_h2"
    )
    return to_solution(instance, timed)


def v_shape(instance: Instance, seed: int = 0) -> Solution:
    """V-shape controllable-memory schedule (ZB-V family, Qi et al. NeurIPS 2024): two chunks per
    device in a V (device 0 holds the first and the last chunk); list schedule with priority
    B (later chunk first) > F of the later chunk > F of the earlier chunk > W, within the cap and a
    budget of p micro-batches of the device's activations (ZB-V's 1F1B-equal peak).

    Guarantee: feasible under the cap or NoSolution. O(n^2).
    """
    if instance.chunks != 2 or instance.placement != "vshape":
        raise NoSolution("v_shape needs chunks = 2 and placement 'vshape'")
    rank = {"B": 0, "F": 1, "W": 2}
    timed = _list_schedule(
        instance,
        lambda k: instance.virtual_stages - k,
        lambda x, _: (rank[x[0]], -x[1], x[2]),
        "v_shape",
        budget=lambda d: instance.stages * instance.activation_gb[d],
    )
    return to_solution(instance, timed)


def _chronos_window(instance: Instance) -> Callable[[int], int]:
    """In-flight micro-batches allowed on virtual stage k: ceil((K - k) / v), the 1F1B warm-up of
    a pipeline of K virtual stages scaled to one device's share (p - s for v = 1)."""
    K, v = instance.virtual_stages, instance.chunks
    return lambda k: -(-(K - k) // v)


def _chronos_priority(x: PassKey, start: dict[PassKey, float]) -> tuple:
    """Shortest activation lifetime first: a B whose F started earliest, then W (frees memory),
    then the forward of the latest virtual stage (its activation is consumed soonest)."""
    kind, k, j = x
    if kind == "B":
        return (0, start[("F", k, j)], -k)
    if kind == "W":
        return (1, j, -k)
    return (2, -k, j)


#: Extra in-flight micro-batches tried on top of the minimal window (Chronos-Pipe's warm-up search).
WARMUP_SLACK = (0, 1, 2, 3, 4)


def _chronos_timed(instance: Instance, capped: bool = True, widen: int = 1, slack: int = 0) -> Timed:
    target = instance if capped else replace(instance, memory_cap_gb=None)
    window = _chronos_window(instance)
    return _list_schedule(target, lambda k: widen * window(k) + slack, _chronos_priority, "chronos_pipe")


def chronos_pipe(instance: Instance, seed: int = 0) -> Solution:
    """Chronos-Pipe (ChronosPipe / TPipe, arXiv 2503.03182), reconstructed: shorten each
    activation's residency. List schedule on the instance's placement (best with two or more
    chunks in a V/wave) with priority oldest-B > W > latest-stage F and a per-virtual-stage
    in-flight window ceil((K - k)/v) + slack, within the cap; the slack (warm-up) is searched over
    0..4 and the shortest schedule kept (ties: the smaller warm-up, i.e. less memory). The paper's
    exact ordering rule was not available; this is the research notes' reconstruction (c.7).

    Guarantee: feasible under the cap or NoSolution; never longer than the minimal-window
    schedule. O(n^2) per slack.
    """
    best: Timed | None = None
    for slack in WARMUP_SLACK:
        try:
            timed = _chronos_timed(instance, slack=slack)
        except NoSolution:
            continue
        if best is None or timed.makespan(instance) < best.makespan(instance) - 1e-12:
            best = timed
    if best is None:
        raise NoSolution("chronos_pipe: no warm-up fits the cap")
    return to_solution(instance, best)


# --------------------------------------------------------------------------------------------
# Recompute and offload policies
# --------------------------------------------------------------------------------------------
def _natural_orders(instance: Instance) -> Orders:
    """1F1B for one chunk per device, the interleaved order otherwise (Megatron's schedules)."""
    if instance.chunks == 1:
        return _one_f_one_b_orders(instance)
    if instance.placement != "interleaved" or instance.microbatches % instance.stages:
        raise NoSolution("Megatron's schedules need chunks = 1, or placement 'interleaved' with p dividing m")
    uncapped = replace(instance, memory_cap_gb=None, allow_recompute=False, allow_offload=False)
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
    return to_solution(instance, _run(instance, _natural_orders(instance), "megatron_full", modes))


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
    K, m = instance.virtual_stages, instance.microbatches
    window = [min(instance.virtual_stages - k, m) for k in range(K)]
    count = [0] * K
    while True:
        modes = {(k, j): RECOMPUTE for k in range(K) for j in range(m) if j % window[k] < count[k]}
        try:
            timed = simulate(instance, orders, modes)
        except Deadlock as exc:
            raise NoSolution(f"megatron_selective: {exc}") from None
        over = [d for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]
        if not over:
            return to_solution(instance, timed)
        raisable = [k for k in instance.stages_on(over[0]) if count[k] < window[k]]
        if not raisable:
            raise NoSolution(f"megatron_selective: device {over[0]} does not fit even with full recompute")
        count[raisable[0]] += 1


def _lifespan_policy(instance: Instance, mode: str, name: str) -> Solution:
    """Shared loop of the Chronos policies. For each base order (the uncapped Chronos-Pipe list
    schedule with warm-up slack 0, 2, 4, and with windows scaled by m, whose long F -> B gaps
    leave room for copies), while a device exceeds its cap, switch its keep item with the longest
    F-start -> B-end lifetime per unit of added cost to ``mode`` and re-simulate; return the
    shortest schedule that fits."""
    best: Timed | None = None
    bases = [(1, slack) for slack in WARMUP_SLACK[::2]] + [(instance.microbatches, 0)]
    for widen, slack in bases:
        base = _chronos_timed(instance, capped=False, widen=widen, slack=slack)
        orders: Orders = {d: [] for d in range(instance.stages)}
        for key in sorted(base.start, key=lambda x: (base.start[x], x)):
            orders[instance.device(key[1])].append(key)
        timed = _switch_until_fit(instance, orders, mode)
        if timed is not None and (best is None or timed.makespan(instance) < best.makespan(instance) - 1e-12):
            best = timed
    if best is None:
        raise NoSolution(f"{name}: no base order fits the cap")
    return to_solution(instance, best)


def _switch_until_fit(instance: Instance, orders: Orders, mode: str) -> Timed | None:
    modes: dict[Item, str] = {}
    while True:
        try:
            timed = simulate(instance, orders, modes)
        except Deadlock:
            return None
        over = [d for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]
        if not over:
            return timed
        d = over[0]

        def value(item: Item, timed: Timed = timed) -> float:
            k, j = item
            life = timed.start[("B", k, j)] + instance.t_b(k) - timed.start[("F", k, j)]
            if mode == RECOMPUTE:
                return life * (instance.a(k) - instance.a_c(k)) / instance.t_r(k)
            gap = timed.start[("B", k, j)] - timed.start[("F", k, j)] - instance.t_f(k)
            return life * instance.a_o(k) if gap >= instance.tau_d(k) + instance.tau_u(k) else -1.0

        items = [
            (k, j) for k in instance.stages_on(d) for j in range(instance.microbatches) if (k, j) not in modes
        ]
        items = [x for x in items if value(x) >= 0]
        if not items:
            return None
        modes[max(items, key=lambda x: (value(x), -x[1], -x[0]))] = mode


def chronos_recomp(instance: Instance, seed: int = 0) -> Solution:
    """Chronos-Recomp (ChronosPipe), reconstructed at stage granularity: recompute the longest-lived
    activations first (the intrinsic residency of the first layers), on the Chronos-Pipe order.

    Guarantee: feasible under the cap or NoSolution; at most v m recomputations per device.
    O(p v m) simulations.
    """
    if not instance.allow_recompute:
        raise NoSolution("chronos_recomp needs allow_recompute = true")
    return _lifespan_policy(instance, RECOMPUTE, "chronos_recomp")


def chronos_offload(instance: Instance, seed: int = 0) -> Solution:
    """Chronos-Offload, reconstructed for activations (the paper also offloads weights/optimizer
    state, outside this stage-level memory model): offload the longest-lived activations whose
    F -> B gap covers the round trip (PipeOffload's validity rule), on the Chronos-Pipe order.

    Guarantee: feasible under the cap or NoSolution. O(p v m) simulations.
    """
    if not instance.allow_offload:
        raise NoSolution("chronos_offload needs allow_offload = true")
    return _lifespan_policy(instance, OFFLOAD, "chronos_offload")


HEURISTICS = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved_1f1b": interleaved_one_f_one_b,
    "zb_h1": zb_h1,
    "zb_h2": zb_h2,
    "v_shape": v_shape,
    "chronos_pipe": chronos_pipe,
    "chronos_recomp": chronos_recomp,
    "chronos_offload": chronos_offload,
    "megatron_full": megatron_full,
    "megatron_selective": megatron_selective,
}
