"""Pipeline schedules as explicit timed schedules: fixed-order classics (GPipe, 1F1B, interleaved
1F1B, ZB-H1), memory-capped list schedules (ZB-H2, the V schedules and the building-block search
``v_auto``, Chronos-Pipe) and recompute/offload policies (Megatron full and selective recompute,
Chronos-Recomp, Chronos-Offload).

Every heuristic builds per-device pass orders (or dispatches passes greedily in time), times them
with the shared event simulator of :mod:`coopt.problems.pipeline.model`, and raises
``NoSolution`` when the schedule does not fit the instance (wrong placement, or a device's
activation memory above its cap). All are deterministic; only ``local_search`` uses the seed.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import cache

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.bound import lower_bound
from coopt.problems.pipeline.model import (
    GB,
    KEEP,
    OFFLOAD,
    RECOMPUTE,
    Deadlock,
    Instance,
    Item,
    PassKey,
    Timed,
    parse,
    peaks,
    simulate,
    to_solution,
)

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


Waits = dict[PassKey, list[tuple[PassKey, float]]]


def fused_waits(instance: Instance) -> Waits:
    """The edges of a fused backward (Megatron, GPipe, 1F1B): stage k sends its input gradient
    upstream only after its whole backward, B and W, so B(k-1, j) waits for W(k, j). Empty when
    the instance has no W passes. Zero Bubble's authors model 1F1B the same way
    (``scheduler/basic1f1b.py`` lines 13-17 emit one ``BW`` node per micro-batch)."""
    if not instance.split_backward:
        return {}
    return {
        ("B", k - 1, j): [(("W", k, j), instance.lag(k, k - 1))]
        for k in range(1, instance.virtual_stages)
        for j in range(instance.microbatches)
    }


def alap(instance: Instance, timed: Timed, waits: Waits | None = None) -> Timed:
    """The same per-device orders and modes, every pass as late as possible without delaying the
    makespan (reverse list scheduling). Memory is unchanged: on a device the events keep their
    order (copies are left as they are, so offloaded schedules are returned unchanged). O(n log n).
    """
    if timed.d2h:
        return timed
    modes = timed.modes

    def duration(x: PassKey) -> float:
        return instance.duration(x, modes.get(x[1:], KEEP))

    end_of = {x: t + duration(x) for x, t in timed.start.items()}
    horizon = max(end_of.values(), default=0.0)
    successors: dict[PassKey, list[tuple[PassKey, float]]] = {x: [] for x in timed.start}
    for x in timed.start:
        for q, lag in instance.predecessors(x) + (waits.get(x, []) if waits else []):
            successors[q].append((x, lag))
    order = sorted(timed.start, key=lambda x: (timed.start[x], x))
    nxt: dict[PassKey, PassKey] = {}
    last_on: dict[int, PassKey] = {}
    for x in reversed(order):
        d = instance.device(x[1])
        if d in last_on:
            nxt[x] = last_on[d]
        last_on[d] = x
    latest: dict[PassKey, float] = {}
    for x in reversed(order):
        finish = horizon
        for y, lag in successors[x]:
            finish = min(finish, latest[y] - lag)
        if x in nxt:
            finish = min(finish, latest[nxt[x]])
        latest[x] = finish - duration(x)
    return Timed(start=latest, modes=dict(modes), d2h={}, h2d={})


def _finish(instance: Instance, timed: Timed, waits: Waits | None = None, **extra) -> Solution:
    """The solution of a timed schedule under the instance's objective: for the per-stage span the
    better of the ASAP timing and its :func:`alap` shift (Zero Bubble's span timing); the
    makespan and the span of the chosen timing are reported beside the objective."""
    if instance.objective == "stage_span":
        shifted = alap(instance, timed, waits)
        if shifted.stage_span(instance) < timed.stage_span(instance) - 1e-12:
            timed = shifted
    return to_solution(
        instance, timed, makespan=timed.makespan(instance), stage_span=timed.stage_span(instance), **extra
    )


def _fits(instance: Instance, timed: Timed, name: str) -> Timed:
    over = [(d, peak) for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]
    if over:
        d, peak = over[0]
        raise NoSolution(f"{name}: device {d} needs {peak / GB:g} GB > cap {instance.cap(d) / GB:g} GB")
    return timed


def _run(
    instance: Instance,
    orders: Orders,
    name: str,
    modes: dict[Item, str] | None = None,
    waits: Waits | None = None,
) -> Timed:
    try:
        timed = simulate(instance, orders, modes, waits)
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
    but the input gradient goes upstream as soon as B ends. Not a schedule of the literature (it
    is what this suite called 1F1B before issue 23); it isolates the gain of sending early from
    the gain of reordering W (ZB-H1).

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


# --------------------------------------------------------------------------------------------
# Memory-capped list scheduling
# --------------------------------------------------------------------------------------------
Priority = Callable[[PassKey, dict[PassKey, float]], tuple]


class _Choices:
    """Each device's next dispatch of a list schedule, in a heap. ``choose(d)`` gives device d's
    (sort key, payload) or None; a device chooses again (:meth:`refresh`) only when its own state
    or one of its lane heads' predecessors changed, and an entry whose device has chosen since is
    stale. :meth:`pop` gives the (sort key, device, payload) of least (sort key, device)."""

    def __init__(self, devices: int, choose: Callable[[int], tuple | None]):
        self.choose = choose
        self.version = [0] * devices
        self.heap: list[tuple] = []
        for d in range(devices):
            self.refresh(d)

    def refresh(self, d: int) -> None:
        self.version[d] += 1
        got = self.choose(d)
        if got is not None:
            heapq.heappush(self.heap, (got[0], d, self.version[d], got[1]))

    def pop(self) -> tuple | None:
        heap, version = self.heap, self.version
        while heap and heap[0][2] != version[heap[0][1]]:
            heapq.heappop(heap)
        if not heap:
            return None
        key, d, _, payload = heapq.heappop(heap)
        return key, d, payload


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
    The next dispatch is the (earliest start, lowest device) of the devices' choices.

    A device's choice depends on its own lanes, clock and memory and on its lane heads'
    predecessors only, so after a dispatch only the dispatching device and the devices of the
    pass's data-flow successors choose again; the others' choices wait in a heap
    (:class:`_Choices`). O(n (v + log p)) for n passes, v chunks per device
    (was O(n p v) when every device chose again at every dispatch). ``priority`` must not change
    for a pass once it is ready (both priorities here read only the start of the same item's
    forward, dispatched before its backward is ready)."""
    p, m = instance.stages, instance.microbatches
    on = [instance.stages_on(d) for d in range(p)]
    preds_of = {x: instance.predecessors(x) for x in instance.passes()}
    succ_devices: dict[PassKey, set[int]] = {x: set() for x in preds_of}
    for x, preds in preds_of.items():
        for q, _ in preds:
            succ_devices[q].add(instance.device(x[1]))
    size = {k: instance.a(k) for k in range(instance.virtual_stages)}
    nxt = {(x, k): 0 for x in instance.kinds for k in range(instance.virtual_stages)}
    start: dict[PassKey, float] = {}
    end: dict[PassKey, float] = {}
    free = [0.0] * p
    level = [0.0] * p
    reserved = [0.0] * p
    inflight = [0] * instance.virtual_stages
    limit = [min(instance.cap(d), budget(d) if budget else float("inf")) * (1 + 1e-9) for d in range(p)]
    first = [min(on[d]) for d in range(p)]
    later = {
        k: sum(size[q] for q in on[instance.device(k)] if q > k) for k in range(instance.virtual_stages)
    }

    def admissible(key: PassKey, d: int) -> bool:
        kind, k, _ = key
        if kind != "F":
            return True
        if k != first[d]:
            return True  # a later chunk of a micro-batch already on this device: room is reserved
        return inflight[k] < window(k) and level[d] + reserved[d] + size[k] + later[k] <= limit[d]

    def choice(d: int) -> tuple[float, PassKey] | None:
        """Device d's earliest ready time and its pass of best priority ready by then."""
        cands = []
        for k in on[d]:
            for kind in instance.kinds:
                j = nxt[(kind, k)]
                if j >= m:
                    continue
                key = (kind, k, j)
                preds = preds_of[key]
                if any(q not in end for q, _ in preds) or not admissible(key, d):
                    continue
                cands.append((max([free[d]] + [end[q] + lag for q, lag in preds]), key))
        if not cands:
            return None
        t = min(r for r, _ in cands)
        return t, min((key for r, key in cands if r <= t), key=lambda x: priority(x, start))

    choices = _Choices(p, choice)
    total = len(nxt) * m
    while len(start) < total:
        got = choices.pop()
        if got is None:
            raise NoSolution(f"{name}: no pass can start within the memory cap (deadlock)")
        t, d, key = got
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
        for e in succ_devices[key] | {d}:
            choices.refresh(e)
    return _fits(instance, Timed(start=start, modes={}, d2h={}, h2d={}), name)


def zb_h2(instance: Instance, seed: int = 0) -> Solution:
    """ZB-H2 (Zero Bubble, Qi et al. ICLR 2024, Sec. 3 and the authors' README table: bubble 0 at
    twice 1F1B's activation memory): list schedule with priority B > F > W, stage s admitting up
    to 2(p - s) - 1 micro-batches in flight (ZB-H2's larger warm-up), W passes filling the bubbles,
    within the cap and a budget of 2p micro-batches of the device's activations (2x 1F1B's
    stage-0 peak), so that pending W passes cannot pile up. Where the cap leaves less room than
    ZB-H2 needs, it falls back to ZB-H1 (1F1B's memory) when that is shorter, as the authors'
    memory-aware scheduler does (``scheduler/zb.py`` ``manual_order`` with ``max_mem``).

    Guarantee: peak at most 2p a per device; never worse than ZB-H1 where ZB-H1 fits.
    O(n (v + log p)) list scheduling (:func:`_list_schedule`).
    """
    _need_single_chunk(instance, "zb_h2")
    _need_split(instance, "zb_h2")
    rank = {"B": 0, "F": 1, "W": 2}
    p = instance.stages
    best: Solution | None = None
    try:
        timed = _list_schedule(
            instance,
            lambda k: 2 * (p - k) - 1,
            lambda x, _: (rank[x[0]], x[2]),
            "zb_h2",
            budget=lambda d: 2 * p * instance.activation_bytes[d],
        )
        best = _finish(instance, timed)
    except NoSolution:
        pass
    try:
        h1 = zb_h1(instance)
    except NoSolution:
        h1 = None
    if h1 is not None and (best is None or h1["objective"] < best["objective"] - 1e-12):
        best = h1
    if best is None:
        raise NoSolution("zb_h2: neither the ZB-H2 list schedule nor ZB-H1 fits the cap")
    return best


def zb_auto(instance: Instance, seed: int = 0) -> Solution:
    """Zero Bubble's automatic scheduler (Qi et al., ICLR 2024, Sec. 3.1; the authors'
    ``scheduler/zb.py`` ``Graph.manual_order``, lines 92-318, and ``initial_solution``, lines
    321-339, read and rewritten): micro-batch 0 runs through every stage; each stage then warms up
    with as many forwards as fit its memory limit before the first backward comes back (lines
    151-187); afterwards, round by round, one F per stage (skipped where the next stage lags or
    the bubble budget allows, ``prioritize_b``) and one B per stage from the last stage back, W
    passes inserted where memory requires it or where they fill the wait for the input (lines
    188-286); the remaining W's close each stage. The memory limit is the cap (default: 3m
    micro-batches, i.e. none). The 8 variants of the three switches are tried; the least span
    wins (the authors then polish with an ILP, which is our ``exact``).

    Guarantee: within the cap or NoSolution. O(p m) per variant.
    """
    _need_single_chunk(instance, "zb_auto")
    _need_split(instance, "zb_auto")
    best: tuple[float, Orders] | None = None
    for bubble_first in (True, False):
        for prefer_b in (True, False):
            for greedy in (True, False):
                try:
                    orders = _zb_auto_orders(instance, bubble_first, prefer_b, greedy)
                    timed = _run(instance, orders, "zb_auto")
                except (_ZbvStuck, NoSolution):
                    continue
                value = timed.stage_span(instance)
                if best is None or value < best[0] - 1e-12:
                    best = (value, orders)
    if best is None:
        raise NoSolution("zb_auto: no variant fits the memory limit")
    return _finish(instance, _run(instance, best[1], "zb_auto"))


def _zb_auto_orders(instance: Instance, bubble_first: bool, prefer_b: bool, greedy: bool) -> Orders:
    """One ``manual_order`` pass (switches: ``allow_bubble_before_first_b``, ``prioritize_b``,
    ``no_bubble_greedy``)."""
    p, m, lag = instance.stages, instance.microbatches, instance.lag_s
    cost = {x: [instance.duration((x, s, 0)) for s in range(p)] for x in ("F", "B", "W")}
    delta = {
        "F": [instance.a(s) for s in range(p)],
        "B": [-(instance.a(s) - instance.a_w(s)) for s in range(p)],
        "W": [-instance.a_w(s) for s in range(p)],
    }
    limit = [
        min(instance.cap(s), 3 * m * instance.a(s)) * (1 + 1e-9) for s in range(p)
    ]
    count = {x: [0] * p for x in ("F", "B", "W")}
    now = [0.0] * p
    mem = [0.0] * p
    bubble = [0.0] * p
    end: dict[PassKey, float] = {}
    orders: Orders = {s: [] for s in range(p)}

    def arrival(x: PassKey) -> float:
        """The end of the pass ``x`` waits for; a variant whose stage runs ahead of its input (a
        cap that lets stage s take a forward stage s - 1 has not run) is stuck."""
        if x not in end:
            raise _ZbvStuck
        return end[x] + lag

    def put(s: int, x: str) -> None:
        j = count[x][s]
        t = idle_free = now[s] + cost[x][s]
        if s > 0 and x == "F":
            t = max(t, arrival(("F", s - 1, j)) + cost[x][s])
        if s < p - 1 and x == "B":
            t = max(t, arrival(("B", s + 1, j)) + cost[x][s])
        if count["F"][s] > 0:
            bubble[s] += t - idle_free
        now[s] = end[(x, s, j)] = t
        mem[s] += delta[x][s]
        orders[s].append((x, s, j))
        count[x][s] += 1

    def put_w(s: int) -> None:
        if count["W"][s] >= count["B"][s]:
            raise _ZbvStuck
        put(s, "W")

    def fill(s: int, source: float) -> None:
        """W passes into the wait for the input that arrives at ``source`` (lines 238-255): all
        that end by then, and one more where the wait exceeds the bubble budget (or, with
        ``greedy``, also where it does not)."""
        while count["W"][s] < count["B"][s] and now[s] + cost["W"][s] <= source:
            put(s, "W")
        waiting = count["W"][s] < count["B"][s] and now[s] < source
        if waiting and (greedy or source - now[s] > max(bubble) - bubble[s]):
            put(s, "W")

    for i in range(m):
        if i == 0:
            for s in range(p):
                put(s, "F")
            extra = [0] * p
            back = 0.0
            for s in range(p - 1, -1, -1):
                if s == p - 1:
                    back = end[("F", s, 0)] + cost["B"][s]
                    continue
                level, clock = mem[s], now[s]
                while count["F"][s] + extra[s] < m and level + delta["F"][s] <= limit[s]:
                    if bubble_first and clock + cost["F"][s] > back + lag:
                        break
                    if not bubble_first and clock >= back + lag:
                        break
                    level += delta["F"][s]
                    clock += cost["F"][s]
                    extra[s] += 1
                back = max(clock, back + lag) + cost["B"][s]
            for s in range(1, p):
                while extra[s] > 0 and extra[s] >= extra[s - 1] and count["F"][s] + extra[s] < m:
                    extra[s] -= 1
            for s in range(p):
                for _ in range(extra[s]):
                    put(s, "F")
            for s in range(p - 1, -1, -1):
                put(s, "B")
            continue
        want = [0] * p
        for s in range(p):
            if count["F"][s] >= m:
                continue
            if s + 1 < p and count["F"][s] >= count["F"][s + 1] + 2 and prefer_b:
                next_fb = now[s + 1] + cost["F"][s + 1] + cost["B"][s + 1] + lag
                if now[s] >= next_fb:
                    continue
                w_cost, w_count, level = 0.0, 0, mem[s] + delta["F"][s]
                while level > limit[s] and count["W"][s] + w_count < count["B"][s]:
                    w_cost += cost["W"][s]
                    level += delta["W"][s]
                    w_count += 1
                if now[s] + cost["F"][s] + w_cost <= next_fb:
                    want[s] = 1
                    continue
                if next_fb - now[s] <= max(bubble) - bubble[s]:
                    continue
            want[s] = 1
        for s in range(p - 2, -1, -1):
            want[s] = min(want[s], want[s + 1])
        for s in range(p):
            if not want[s]:
                continue
            while mem[s] + delta["F"][s] > limit[s]:
                put_w(s)
            if s > 0:
                fill(s, arrival(("F", s - 1, count["F"][s])))
            put(s, "F")
        for s in range(p - 1, -1, -1):
            while mem[s] + delta["B"][s] > limit[s]:
                put_w(s)
            if s + 1 < p:
                fill(s, arrival(("B", s + 1, i)))
            if s == 0 and count["F"][s] == m:
                while count["W"][s] < count["B"][s]:
                    put(s, "W")
            put(s, "B")
    for s in range(p):
        while count["W"][s] < m:
            put(s, "W")
    return orders


def zb_v(instance: Instance, seed: int = 0) -> Solution:
    """ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024; Zero
    Bubble's ``scheduler/zbv.py`` ``PipelineGraph.try_v_schedule``, lines 31-252, and
    ``create_schedule``, lines 282-322, read and rewritten here): two chunks per device in a V
    (device d holds virtual stages d and 2p - 1 - d), memory limit p micro-batches of the device's
    activations (1F1B's peak; the authors' default ``f_mem * n_stage * 2`` per chunk) or the cap.
    Warm-up: one first-chunk F per device, then second-chunk F's from the last device back,
    each device filling first-chunk F's while they fit before its second-chunk F can start
    (lines 121-131), then the devices catch up in alternating chunks (lines 134-143). Steady state,
    2m rounds (lines 155-230): W passes first where the next B would not fit; B's of the second
    chunk (reversed) then of the first; F's by chunk readiness; before each B or F, pending W's
    fill the wait for its input, and one more W runs where the wait exceeds the largest stage
    bubble so far (``fill_b`` / ``fill_f``). The four fill variants are tried and the pass
    repeated with the bubbles of the best as approved bubbles (lines 243-249); the least span
    wins (lines 282-295).

    Guarantee: peak at most p a per device (the limit is asserted at every pass); span bubble 0
    for uniform F = B = W and m >= 2p (the paper's claim). O(p m) per variant.
    """
    if instance.chunks != 2 or instance.placement != "vshape" or not instance.split_backward:
        raise NoSolution("zb_v needs chunks = 2, placement 'vshape' and split_backward = true")
    p = instance.stages
    limit = [min(instance.cap(d), p * instance.activation_bytes[d]) * (1 + 1e-9) for d in range(p)]
    best: tuple[float, Orders] | None = None
    for fill_b in (True, False):
        for fill_f in (True, False):
            try:
                orders, bubble = _zb_v_orders(instance, limit, fill_f, fill_b, None)
            except _ZbvStuck:
                continue
            if best is None or bubble < best[0]:
                best = (bubble, orders)
    if best is None:
        raise NoSolution("zb_v: the V schedule does not fit the memory limit")
    return _finish(instance, _run(instance, best[1], "zb_v"))


class _ZbvStuck(Exception):
    """The ZB-V construction cannot continue within the memory limit."""


def _zb_v_orders(
    instance: Instance, limit: list[float], fill_f: bool, fill_b: bool, approved: list[float] | None
) -> tuple[Orders, float]:
    """One ``try_v_schedule`` pass. Counters per device: F of chunk 0/1, B of chunk 0/1 (B chunk
    0 is the *second* model chunk, as in the authors' numbering), W of chunk 0/1."""
    p, m, lag = instance.stages, instance.microbatches, instance.lag_s

    def stage(c: int, d: int, kind: str) -> int:
        """Virtual stage of chunk index c on device d (B/W indices count from the V's end)."""
        model_chunk = c if kind == "F" else 1 - c
        return d if model_chunk == 0 else 2 * p - 1 - d

    cost = {kind: [instance.duration((kind, d, 0)) for d in range(p)] for kind in ("F", "B", "W")}
    delta = {
        "F": [instance.a(d) for d in range(p)],
        "B": [-(instance.a(d) - instance.a_w(d)) for d in range(p)],
        "W": [-instance.a_w(d) for d in range(p)],
    }
    count = [[0] * 6 for _ in range(p)]
    end: dict[tuple[str, int, int, int], float] = {}
    now = [0.0] * p
    mem = [0.0] * p
    bubble = [0.0] * p
    pending: list[deque] = [deque() for _ in range(p)]
    orders: Orders = {d: [] for d in range(p)}
    approved = approved or [-1.0] * p
    top_approved = max(approved)
    index = {"F": 0, "B": 1, "W": 2}

    def max_bubble(d: int = -1) -> float:
        worst = max(bubble)
        return max(worst, top_approved - approved[d]) if d >= 0 else worst

    def put(kind: str, c: int, d: int) -> None:
        slot = index[kind] * 2 + c
        j = count[d][slot]
        if j >= m or mem[d] + delta[kind][d] > limit[d]:
            raise _ZbvStuck
        t = now[d] + cost[kind][d]
        idle_free = t
        if kind != "W":
            source = None
            if c == 1 and d < p - 1:
                source = (kind, 1, d + 1, j)
            elif c == 0 and d > 0:
                source = (kind, 0, d - 1, j)
            if source is not None:
                if source not in end:
                    raise _ZbvStuck
                t = max(t, end[source] + lag + cost[kind][d])
        if count[d][0] > 0:
            bubble[d] += t - idle_free
        end[(kind, c, d, j)] = t
        now[d] = t
        mem[d] += delta[kind][d]
        orders[d].append((kind, stage(c, d, kind), j))
        if kind == "B":
            pending[d].append(c)
        count[d][slot] += 1

    def put_w(d: int) -> None:
        if not pending[d]:
            raise _ZbvStuck
        put("W", pending[d].popleft(), d)

    def ended(kind: str, c: int, d: int, j: int) -> float:
        return end.get((kind, c, d, j), -1.0)

    for d in range(p):
        put("F", 0, d)
    for d in range(p - 1, -1, -1):
        if d == p - 1:
            put("F", 1, d)
            continue
        ready = ended("F", 1, d + 1, 0) + lag
        while (mem[d] + delta["F"][d] * (2 + 2 * d) <= limit[d] and now[d] + cost["F"][d] <= ready
               and count[d][0] < m):
            for e in range(d + 1):
                put("F", 0, e)
        put("F", 1, d)
    chunk = 0
    for d in range(1, p):
        rounds = 0
        while (count[d][0] + count[d][1] < count[d - 1][0] + count[d - 1][1]
               or count[d][1] <= count[d - 1][1] < m):
            rounds += 1
            if rounds > 4 * m:
                raise _ZbvStuck
            for e in range(p - 1, d - 1, -1):
                if count[e][chunk] < m:
                    put("F", chunk, e)
            chunk = 1 - chunk

    for _ in range(2 * m):
        for d in range(p):
            while mem[d] + delta["B"][d] > limit[d]:
                put_w(d)
        first, second = [], []
        for d in range(p):
            if count[d][3] >= count[d][2]:
                first.append(d)
            elif d == p - 1 or ended("B", 1, d + 1, count[d][3]) >= 0 or count[d][2] >= m:
                second.append(d)
            else:
                first.append(d)
        for d, c in [(d, 1) for d in reversed(second)] + [(d, 0) for d in first]:
            source = -1.0
            has_source = False
            if c == 1 and d < p - 1:
                source, has_source = ended("B", 1, d + 1, count[d][3]), True
            if c == 0 and d > 0:
                source, has_source = ended("B", 0, d - 1, count[d][2]), True
            while pending[d] and has_source and source + lag >= now[d] + cost["W"][d]:
                put_w(d)
            if pending[d] and source + lag - now[d] > max_bubble(d) - bubble[d] and (c == 1 or fill_b):
                put_w(d)
            put("B", c, d)
        for d in range(p):
            if count[d][1] >= m:
                continue
            item = None
            if count[d][1] >= count[d][0]:
                item = 0
            elif d == p - 1 or ended("F", 1, d + 1, count[d][1]) >= 0:
                item = 1
            elif count[d][0] < m and (d == 0 or ended("F", 0, d - 1, count[d][0]) >= 0):
                item = 0
            if item is None:
                continue
            while mem[d] + delta["F"][d] > limit[d]:
                put_w(d)
            source, has_source = -1.0, False
            if item == 0 and d > 0:
                source, has_source = ended("F", 0, d - 1, count[d][0]), True
            if item == 1 and d < p - 1:
                source, has_source = ended("F", 1, d + 1, count[d][1]), True
            while pending[d] and has_source and source + lag >= now[d] + cost["W"][d]:
                put_w(d)
            if pending[d] and source + lag - now[d] > max_bubble(d) - bubble[d] and fill_f:
                put_w(d)
            put("F", item, d)
    for d in range(p):
        while pending[d]:
            put_w(d)
    worst = max_bubble()
    if top_approved < 0 or worst < top_approved:
        try:
            again, again_bubble = _zb_v_orders(instance, limit, fill_f, fill_b, list(bubble))
        except _ZbvStuck:
            again = None
        if again is not None and again_bubble < worst:
            return again, again_bubble
    return orders, worst


# --------------------------------------------------------------------------------------------
# Controllable-memory V schedules (Qi et al., NeurIPS 2024): V-Half and V-Min
# --------------------------------------------------------------------------------------------
def _v_pattern(p: int, kind: str) -> list[list[int]]:
    """The stable pattern: per device, the unit-slot offsets of F (first chunk), F (second chunk),
    B (second chunk) and B (first chunk) within a period of 6 slots (``zbv_greedy.py``
    ``stable_pattern_v_min`` / ``stable_pattern_v_half``, lines 22-42)."""
    if kind == "min":
        gap = 2 if p % 3 == 0 else 0
        return [[i, 2 * p - i - 1, 2 * p + gap + i, 4 * p + gap - i - 1] for i in range(p)]
    gap = 3 if p % 2 == 0 else 0
    return [[2 * i, 3 * p - i - 2, 3 * p + gap + 2 * i - 1, 6 * p + gap - i - 2] for i in range(p)]


def _next_slot(lists: list[list[int]], heads: list[int]) -> tuple[int, int]:
    """(slot, list index) of the earliest unprocessed entry (ties: the lower list index)."""
    return min((lists[t][heads[t]] if heads[t] < len(lists[t]) else math.inf, t) for t in range(len(lists)))


def _put_w(lists: list[list[int]], split: bool) -> list[list[int]]:
    """Append the W lists: each W takes the first idle slot after its B (``put_w``, lines
    44-72); with ``split`` one W list per chunk, else one."""
    lists = [list(x) for x in lists[:4]] + ([[], []] if split else [[]])
    pending = [0, 0]
    heads = [0] * 4
    last = max(x[-1] for x in lists[:4])
    for slot in range(last + 1):
        when, t = _next_slot(lists[:4], heads)
        if when == slot:
            heads[t] += 1
            if t >= 2:
                pending[t - 2 if split else 0] += 1
            continue
        for w in range(2):
            if pending[w]:
                lists[4 + w].append(slot)
                pending[w] -= 1
                break
    slot = last
    for w in range(2):
        while pending[w]:
            slot += 1
            lists[4 + w].append(slot)
            pending[w] -= 1
    return lists


def _slot_memory(lists: list[list[int]]) -> int:
    """Peak activation units of one device in unit slots: +1 per F, -1 per W, and without W
    lists a W in every idle slot after a B (``mem_of_stage``, lines 74-97)."""
    delta = (1, 1, 0, 0, -1)
    has_w = len(lists) > 4
    heads = [0] * len(lists)
    last = max(x[-1] for x in lists if x)
    level = peak = pending = 0
    for slot in range(last + 1):
        when, t = _next_slot(lists, heads)
        if when == slot:
            heads[t] += 1
            level += delta[t]
            if 2 <= t < 4:
                pending += 1
        elif not has_w and pending:
            level -= 1
            pending -= 1
        peak = max(peak, level)
    return peak


def _squeeze(lists: list[list[list[int]]]) -> list[list[list[int]]]:
    """Eager execution with unit costs and no lag: every entry as early as its dependencies and
    its device's previous entry allow, in slot order (``eager_execution_time``, lines 100-145)."""
    p, kinds = len(lists), len(lists[0])
    heads = [[0] * kinds for _ in range(p)]
    end: dict[tuple[int, int, int], int] = {}
    last_on: list[tuple[int, int] | None] = [None] * p
    total = p * sum(len(x) for x in lists[0])
    out = [[[0] * len(x) for x in stage] for stage in lists]
    for _ in range(total):
        when, d, t, j = min(
            (lists[d][t][heads[d][t]] if heads[d][t] < len(lists[d][t]) else math.inf, d, t, heads[d][t])
            for d in range(p) for t in range(kinds)
        )
        heads[d][t] += 1
        ready = 0
        if t in (0, 2) and d > 0:
            ready = max(ready, end[(d - 1, t, j)])
        if t in (1, 3) and d + 1 < p:
            ready = max(ready, end[(d + 1, t, j)])
        if 0 < t < 4:
            ready = max(ready, end[(d, t - 1, j)])
        if j > 0:
            ready = max(ready, end[(d, t, j - 1)])
        if last_on[d] is not None:
            ready = max(ready, end[(d, *last_on[d])])
        end[(d, t, j)] = ready + 1
        out[d][t][j] = ready
        last_on[d] = (t, j)
    return out


def _reorder(lists: list[list[list[int]]], with_w: bool) -> list[list[list[int]]]:
    """The authors' greedy (``reorder``, lines 147-215): outside the steady phase, move every
    entry to the earliest idle slot after its dependencies that does not raise the device's
    peak; then squeeze."""
    lists = [_put_w(x, split=False) if with_w else [list(t) for t in x] for x in lists]
    kinds = len(lists[0])
    budget = max(_slot_memory(x) for x in lists)
    p = len(lists)
    heads = [[0] * kinds for _ in range(p)]
    size = max(v for stage in lists for t in stage for v in t) + 2
    occupied = [[False] * size for _ in range(p)]
    total = p * sum(len(t) for t in lists[0])
    phase = 0
    for _ in range(total):
        when, d, t, j = min(
            (lists[d][t][heads[d][t]] if heads[d][t] < len(lists[d][t]) else math.inf, d, t, heads[d][t])
            for d in range(p) for t in range(kinds)
        )
        heads[d][t] += 1
        if t == 3 and d == 0 and phase == 0:
            phase = 1
        if phase == 1:
            if t == 0 and j == len(lists[0][0]) - 1:
                phase = 2
            occupied[d][lists[d][t][j]] = True
            continue
        if phase == 0 and not with_w:
            occupied[d][lists[d][t][j]] = True
            continue
        ready = -1
        if t in (0, 2) and d > 0:
            ready = max(ready, lists[d - 1][t][j])
        if t in (1, 3) and d + 1 < p:
            ready = max(ready, lists[d + 1][t][j])
        if 0 < t < 4:
            ready = max(ready, lists[d][t - 1][j])
        if t == 4:
            ready = max(ready, sorted(lists[d][2] + lists[d][3])[j])
        if j > 0:
            ready = max(ready, lists[d][t][j - 1])
        for slot in range(ready + 1, when):
            if not occupied[d][slot]:
                lists[d][t][j] = slot
                if _slot_memory(lists[d]) <= budget:
                    break
        else:
            lists[d][t][j] = when
        occupied[d][lists[d][t][j]] = True
    if not with_w:
        lists = [_put_w(x, split=False) for x in lists]
    return _squeeze(lists)


def _v_memory_schedule(instance: Instance, kind: str, name: str) -> Solution:
    """V-Half / V-Min orders from the stable pattern (``schedule_from_pattern``, lines 217-233):
    reorder with W, drop W, reorder without, split W per chunk; then our simulator times them."""
    if instance.chunks != 2 or instance.placement != "vshape" or not instance.split_backward:
        raise NoSolution(f"{name} needs chunks = 2, placement 'vshape' and split_backward = true")
    p, m = instance.stages, instance.microbatches
    lists = [[list(range(x, x + 6 * m, 6)) for x in stage] for stage in _v_pattern(p, kind)]
    lists = [x[:4] for x in _reorder(lists, with_w=True)]
    lists = [_put_w(x[:4], split=True) for x in _reorder(lists, with_w=False)]
    orders: Orders = {}
    for d in range(p):
        first, second = d, 2 * p - 1 - d
        keys = (("F", first), ("F", second), ("B", second), ("B", first), ("W", second), ("W", first))
        entries = sorted((slot, t, j) for t, slots in enumerate(lists[d]) for j, slot in enumerate(slots))
        orders[d] = [(keys[t][0], keys[t][1], j) for _, t, j in entries]
    return _finish(instance, _run(instance, orders, name))


def v_half(instance: Instance, seed: int = 0) -> Solution:
    """V-Half (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024; the
    authors' ``scheduler/zbv_greedy.py``, read and rewritten): the V placement's building block
    with lifespan 3p, repeated every 6 slots, then greedily reordered and squeezed.

    Guarantee (paper, uniform F = B = W): about half of 1F1B's activation memory, bubble about
    1F1B's / 2. The construction is in unit slots; times come from the instance. O(n^2 m) for the
    greedy's memory checks (the authors' own cost).
    """
    return _v_memory_schedule(instance, "half", "v_half")


def v_min(instance: Instance, seed: int = 0) -> Solution:
    """V-Min (same paper and file): building block of lifespan 2p, about a third of 1F1B's
    activation memory, bubble about 2/3 of 1F1B's; the authors note that V-Min alone degrades
    when F, B and W differ. O(n^2 m).
    """
    return _v_memory_schedule(instance, "min", "v_min")


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
    target = instance if capped else replace(instance, memory_cap_bytes=None)
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
    schedule. O(n (v + log p)) per slack (:func:`_list_schedule`).
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
    return _finish(instance, best)


# --------------------------------------------------------------------------------------------
# Recompute and offload policies
# --------------------------------------------------------------------------------------------
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


def _lifespan_policy(instance: Instance, mode: str, name: str) -> Solution:
    """Shared loop of the Chronos policies. For each base order (the uncapped Chronos-Pipe list
    schedule with warm-up slack 0, 2, 4, and with windows scaled by m, whose long F -> B gaps
    leave room for copies), while a device exceeds its cap, switch its keep item with the longest
    F-start -> B-end lifetime per unit of added cost to ``mode`` and re-simulate (recompute), or
    add the longest-lived valid item to the PipeOffload slot train (offload,
    :func:`_offload_until_fit`); return the shortest schedule that fits."""
    best: Timed | None = None
    bases = [(1, slack) for slack in WARMUP_SLACK[::2]] + [(instance.microbatches, 0)]
    for widen, slack in bases:
        base = _chronos_timed(instance, capped=False, widen=widen, slack=slack)
        orders: Orders = {d: [] for d in range(instance.stages)}
        for key in sorted(base.start, key=lambda x: (base.start[x], x)):
            orders[instance.device(key[1])].append(key)
        if mode == OFFLOAD:
            timed = _offload_until_fit(instance, simulate(instance, orders))
        else:
            timed = _switch_until_fit(instance, orders)
        if timed is not None and (best is None or timed.makespan(instance) < best.makespan(instance) - 1e-12):
            best = timed
    if best is None:
        raise NoSolution(f"{name}: no base order fits the cap")
    return _finish(instance, best)


# --------------------------------------------------------------------------------------------
# PipeOffload: validity rule and the shared copy slot train
# --------------------------------------------------------------------------------------------
def offload_valid(instance: Instance, timed: Timed, item: Item) -> bool:
    """PipeOffload's validity rule (``scheduler/offloading.py`` ``add_send_recv``, line 128):
    offload item (k, j) only if ``B.start - T_B - F.end > 3 (tau_d + tau_u)``: the backward's own
    length is kept as a buffer before it, and the round trip must fit three times in the rest."""
    k, j = item
    f_end = timed.start[("F", k, j)] + instance.t_f(k)
    b_start = timed.start[("B", k, j)]
    b_length = instance.duration(("B", k, j), timed.modes.get(item, KEEP))
    return b_start - b_length - f_end > 3 * (instance.tau_d(k) + instance.tau_u(k))


def slot_train(instance: Instance, timed: Timed, items: list[Item]) -> Timed:
    """``timed`` with the valid ``items`` offloaded on PipeOffload's copy slot train
    (``scheduler/offloading.py`` ``add_send_recv``, lines 114-165, and ``add_offload_passes``,
    lines 331-336): device d's copies run in slots of length ``tau_d + tau_u`` from
    ``(d mod 2) tau_d`` on (the two devices of a pair alternate on their shared link), a D2H at
    a slot's start, an H2D right after it. Sends take the first free slot after their F ends, in
    F order; receives, from the last B back, the latest free slot that ends by
    ``B.start - T_B``; an item whose receive would not start after its send ends is dropped, as
    PipeOffload's assertion forbids it. Pass times are unchanged (copies only fill gaps).
    O(n log n)."""
    by_device: dict[int, list[Item]] = {}
    for item in items:
        if timed.modes.get(item, KEEP) == KEEP and offload_valid(instance, timed, item):
            by_device.setdefault(instance.device(item[0]), []).append(item)
    modes, d2h, h2d = dict(timed.modes), {}, {}
    for d, chosen in by_device.items():
        k0 = chosen[0][0]
        tau_d, tau_u = instance.tau_d(k0), instance.tau_u(k0)
        period, origin = tau_d + tau_u, (d % 2) * tau_d
        sends: dict[Item, int] = {}
        slot = 0
        for item in sorted(chosen, key=lambda i: timed.start[("F", *i)]):
            f_end = timed.start[("F", *item)] + instance.t_f(item[0])
            slot = max(slot, math.ceil((f_end - origin) / period - 1e-9))
            sends[item] = slot
            slot += 1
        receives: dict[Item, int] = {}
        slot = math.inf
        for item in sorted(chosen, key=lambda i: -timed.start[("B", *i)]):
            b_start = timed.start[("B", *item)]
            latest_end = b_start - instance.duration(("B", *item), KEEP)
            last = math.floor((latest_end - origin - tau_d - tau_u) / period + 1e-9)
            slot = min(slot - 1, last)
            if origin + slot * period + tau_d <= origin + sends[item] * period + tau_d + 1e-9:
                continue  # the receive would not start after the send ends: not offloaded
            receives[item] = slot
        for item, r in receives.items():
            modes[item] = OFFLOAD
            d2h[item] = origin + sends[item] * period
            h2d[item] = origin + r * period + tau_d
    return Timed(start=dict(timed.start), modes=modes, d2h=d2h, h2d=h2d)


def _over_cap(instance: Instance, timed: Timed) -> list[int]:
    return [d for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]


def _offload_until_fit(instance: Instance, base: Timed) -> Timed | None:
    """Add items to the slot train, longest F-end -> B-start gap times offloaded bytes first on a
    device over its cap, as many per round as the excess certainly needs, until every device fits
    (None when the valid items run out)."""
    chosen: list[Item] = []
    timed = base
    while True:
        over = _over_cap(instance, timed)
        if not over:
            return timed
        d = over[0]
        left = [
            (k, j)
            for k in instance.stages_on(d)
            for j in range(instance.microbatches)
            if (k, j) not in chosen and offload_valid(instance, base, (k, j))
        ]
        if not left:
            return None

        def value(item: Item) -> float:
            k, j = item
            return (base.start[("B", k, j)] - base.start[("F", k, j)]) * instance.a_o(k)

        excess = peaks(instance, timed)[d] - instance.cap(d)
        count = max(1, int(excess / max(instance.a_o(k) for k, _ in left)))
        chosen += sorted(left, key=lambda x: (-value(x), x[1], x[0]))[:count]
        timed = slot_train(instance, base, chosen)


def pipeoffload(instance: Instance, seed: int = 0) -> Solution:
    """PipeOffload (Wan et al., ICML 2025; ``scheduler/offloading.py`` ``add_offload``, lines
    383-404, on the authors' interleaved / V schedules): take the uncapped base schedule of the
    instance's placement (ZB-V for a V of two chunks, interleaved 1F1B for round-robin chunks,
    ZB-H1 or 1F1B for one chunk), and offload whole chunks: the first n chunks of every device
    (the longest-lived activations), n = 1, 2, ... (``--offload-chunk-num``), every valid item of
    them (:func:`offload_valid`) on the shared slot train (:func:`slot_train`); the first n that
    fits every cap wins.

    Guarantee: the base schedule's timing (copies only fill gaps), or NoSolution. O(v n log n).
    """
    if not instance.allow_offload:
        raise NoSolution("pipeoffload needs allow_offload = true")
    uncapped = replace(instance, memory_cap_bytes=None)
    base_name = (
        "zb_v" if instance.chunks == 2 and instance.placement == "vshape"
        else "interleaved_1f1b" if instance.chunks > 1
        else "zb_h1" if instance.split_backward else "1f1b"
    )
    base, _ = parse(instance, HEURISTICS[base_name](uncapped))
    if base is None:
        raise NoSolution(f"pipeoffload: the base schedule {base_name} does not apply")
    for n in range(1, instance.chunks + 1):
        items = [
            (k, j)
            for d in range(instance.stages)
            for k in instance.stages_on(d)[:n]
            for j in range(instance.microbatches)
        ]
        timed = slot_train(instance, base, items)
        if not _over_cap(instance, timed):
            return _finish(instance, timed, base=base_name, offloaded_chunks=n)
    raise NoSolution("pipeoffload: offloading every valid item of every chunk does not fit the cap")


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


# --------------------------------------------------------------------------------------------
# Ours: a compiled event simulator with incremental re-timing, and the local search on it
# --------------------------------------------------------------------------------------------
_MODES = (KEEP, RECOMPUTE, OFFLOAD)


class Evaluator:
    """Per-device orders and modes on integer pass ids, timed exactly as
    :func:`~coopt.problems.pipeline.model.simulate` times them (ASAP, the D2H engine in the
    device's F order, H2D prefetched at the start of the pass before B), kept with the timing so
    that a change is re-timed incrementally.

    A move changes one device's order from some position on (:meth:`move`), exchanges passes
    (:meth:`swap`), or changes one item's mode (:meth:`flip`). With ``belady`` the recompute
    modes of a device without offloaded items follow from its order (:meth:`_derive`) instead of
    being repaired only where a move overflows (:meth:`_repair`). On a device a
    pass waits for the pass before it, so what a change can delay is, on every device, a suffix
    of its order: :meth:`retime` closes the first changed positions under the data-flow
    successors and re-times only those suffixes (the copy engines' states at a suffix's start are
    kept per position). Without offload the activation level of a device is a function of its
    order and modes alone (compute passes on a device are sequential, releases precede
    allocations at equal times), so memory is one linear scan of the changed device; a device
    holding offloaded items is checked on its event profile, as the checker does.

    Build O(n); a move O(changed suffixes + the changed device's order).
    """

    def __init__(self, instance: Instance, orders: Orders, modes: dict[Item, str], belady: bool = False):
        self.instance = instance
        m, p = instance.microbatches, instance.stages
        keys = instance.passes()
        self.keys = keys
        ids = {x: i for i, x in enumerate(keys)}
        n = len(keys)
        self.device = [instance.device(k) for _, k, _ in keys]
        self.item = [k * m + j for _, k, j in keys]
        self.kind = [0 if x == "F" else 1 if x == "B" else 2 for x, _, _ in keys]
        preds = [[(ids[q], lag) for q, lag in instance.predecessors(x)] for x in keys]
        # every pass waits for at most one other pass (model.Instance.predecessors)
        self.pred = [ps[0][0] if ps else -1 for ps in preds]
        self.pred_lag = [ps[0][1] if ps else 0.0 for ps in preds]
        self.succs: list[list[int]] = [[] for _ in range(n)]
        for i, ps in enumerate(preds):
            for q, _ in ps:
                self.succs[q].append(i)
        self.length = [[instance.duration(x, mode) for mode in _MODES] for x in keys]
        items = instance.virtual_stages * m
        self.f_id = [ids[("F", i // m, i % m)] for i in range(items)]
        self.b_id = [ids[("B", i // m, i % m)] for i in range(items)]
        # activation bytes allocated at a pass's start and released at its end, per mode
        self.alloc = [[0.0] * 3 for _ in range(n)]
        self.release = [[0.0] * 3 for _ in range(n)]
        for i, (kind, k, _) in enumerate(keys):
            a, a_w = instance.a(k), instance.a_w(k)
            if kind == "F":
                self.alloc[i] = [instance.resident(k, mode)[0] for mode in _MODES]
            elif kind == "B":
                self.alloc[i] = [instance.resident(k, mode)[1] for mode in _MODES]
                self.release[i] = [a - a_w] * 3
            else:
                self.release[i] = [a_w] * 3
        self.tau_d = [instance.tau_d(i // m) for i in range(items)]
        self.tau_u = [instance.tau_u(i // m) for i in range(items)]
        self.a_o = [instance.a_o(i // m) for i in range(items)]
        self.limit = [instance.cap(d) * (1 + 1e-9) for d in range(p)]
        self.recompute = instance.allow_recompute
        self.copies = instance.allow_offload  # copy engines to time (else their state is skipped)
        self.tol = 1e-9 * max(1.0, instance.time_scale)  # the checker's tie tolerance
        self.orders = [[ids[x] for x in orders.get(d, [])] for d in range(p)]
        self.pos = [0] * n
        for order in self.orders:
            for q, i in enumerate(order):
                self.pos[i] = q
        self.mode = [0] * items
        for (k, j), mode in modes.items():
            self.mode[k * m + j] = _MODES.index(mode)
        #: derive recompute from the orders (:meth:`_derive`); ``forced`` items recompute anyway
        self.belady = belady and instance.allow_recompute
        self.forced = [int(md == 1) for md in self.mode]
        self.offloaded = [0] * p  # offloaded items per device
        for i in range(items):
            if self.mode[i] == 2:
                self.offloaded[self.device[self.f_id[i]]] += 1
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.d2h = [0.0] * items
        self.h2d = [0.0] * items
        self.engines = [[(0.0, 0.0)] * (len(o) + 1) for o in self.orders]  # (D2H, H2D) free before q
        self._stamp = [0] * n
        self._moved = [0] * n  # clock of the re-timing in which the pass's predecessor moved
        self._seeded = [0] * n  # clock of the re-timing in which the pass itself changed
        self._clock = 0
        self._undo: list = []
        if not self.retime([0] * p):
            raise Deadlock("the per-device orders deadlock")
        self.commit()

    # -- timing ------------------------------------------------------------------------------
    def retime(self, first: list[int], seeds: list[int] | None = None) -> bool:
        """Re-time, on every device d, the order from ``first[d]`` on, closed under the data-flow
        successors; remember the old values for :meth:`undo`. ``seeds``: the passes whose place
        or duration changed (and the pass after each moved one), where the caller knows them;
        None: every pass from ``first[d]`` on. False on a deadlock (the state is then left for
        :meth:`undo`)."""
        orders, pos, device, succs = self.orders, self.pos, self.device, self.succs
        p = len(orders)
        scanned = [len(o) for o in orders]  # positions from here on have had their successors
        grown = True
        while grown:
            grown = False
            for d in range(p):
                order = orders[d]
                while first[d] < scanned[d]:
                    lo, hi = first[d], scanned[d]
                    scanned[d] = lo
                    for q in range(lo, hi):
                        for s in succs[order[q]]:
                            e = device[s]
                            if pos[s] < first[e]:
                                first[e] = pos[s]
                                grown = True
        start, end, length, mode, item, kind = (
            self.start, self.end, self.length, self.mode, self.item, self.kind)
        d2h, h2d, engines = self.d2h, self.h2d, self.engines
        self._clock += 1
        clock, stamp = self._clock, self._stamp
        undo = self._undo
        copies = self.copies
        for d in range(p):
            q0 = first[d]
            if q0 < len(orders[d]):
                ids = orders[d][q0:]
                undo.append(("time", d, q0, [start[i] for i in ids], [end[i] for i in ids],
                             [(d2h[item[i]], h2d[item[i]]) for i in ids] if copies else None,
                             engines[d][q0:] if copies else None))
        at = list(first)
        free = [end[orders[d][at[d] - 1]] if at[d] else 0.0 for d in range(p)]
        eng = [engines[d][at[d]] if at[d] < len(engines[d]) else (0.0, 0.0) for d in range(p)]
        sizes = [len(o) for o in orders]
        remaining = sum(sizes[d] - at[d] for d in range(p))
        pred, pred_lag = self.pred, self.pred_lag
        # Without copies a pass's times depend on its device predecessor and its data-flow
        # predecessor alone: once every changed position is re-timed and no re-timed pass moved
        # a pass still waiting, the rest keeps its times and the re-timing stops.
        waiting = 0  # passes still to re-time whose device or data-flow predecessor moved
        moved, seeded = self._moved, self._seeded
        cut = not copies and seeds is not None
        if cut:
            for i in seeds:
                seeded[i] = clock
            seeds = len(set(seeds))
        while remaining:
            progressed = False
            for d in range(p):
                order, size = orders[d], sizes[d]
                q = at[d]
                if q >= size:
                    continue
                t_free = free[d]
                d2h_free, h2d_free = eng[d]
                while q < size:
                    i = order[q]
                    t = t_free
                    r = pred[i]
                    if r >= 0:
                        if stamp[r] != clock and pos[r] >= first[device[r]]:
                            break  # its predecessor is still to be re-timed
                        if end[r] + pred_lag[i] > t:
                            t = end[r] + pred_lag[i]
                    it = item[i]
                    md = mode[it]
                    if md == 2 and kind[i] == 1:
                        u = start[order[q - 1]] if q else 0.0
                        u = max(u, d2h[it] + self.tau_d[it], h2d_free)
                        h2d[it] = u
                        h2d_free = u + self.tau_u[it]
                        if h2d_free > t:
                            t = h2d_free
                    e = t + length[i][md]
                    if cut:
                        if seeded[i] == clock:
                            seeds -= 1
                        elif moved[i] == clock:
                            waiting -= 1
                        if t != start[i] or e != end[i]:
                            for s in succs[i] if q + 1 == size else succs[i] + [order[q + 1]]:
                                if moved[s] != clock and seeded[s] != clock:
                                    moved[s] = clock
                                    waiting += 1
                    start[i] = t
                    t_free = end[i] = e
                    stamp[i] = clock
                    if md == 2 and kind[i] == 0:
                        d2h[it] = max(t_free, d2h_free)
                        d2h_free = d2h[it] + self.tau_d[it]
                    q += 1
                    if copies:
                        engines[d][q] = (d2h_free, h2d_free)
                    elif cut and not seeds and not waiting:
                        return True
                remaining -= q - at[d]
                progressed = progressed or q > at[d]
                at[d], free[d], eng[d] = q, t_free, (d2h_free, h2d_free)
            if not progressed:
                return False
        return True

    def undo(self) -> None:
        """Restore the state before the last :meth:`swap`, :meth:`move` or :meth:`flip`."""
        item = self.item
        for entry in reversed(self._undo):
            if entry[0] == "time":
                _, d, q0, starts, ends, copies, engines = entry
                ids = self.orders[d][q0:]
                for i, s, e in zip(ids, starts, ends, strict=True):
                    self.start[i], self.end[i] = s, e
                if copies is not None:
                    for i, (cd, cu) in zip(ids, copies, strict=True):
                        self.d2h[item[i]], self.h2d[item[i]] = cd, cu
                    self.engines[d][q0:] = engines
            elif entry[0] == "forced":
                self.forced[entry[1]] = entry[2]
            elif entry[0] == "order":
                _, d, lo, old = entry
                self.orders[d][lo:lo + len(old)] = old
                for q in range(lo, lo + len(old)):
                    self.pos[self.orders[d][q]] = q
            else:
                _, it, old = entry
                self._set_mode(it, old)
        self._undo = []

    def commit(self) -> None:
        self._undo = []

    # -- moves -------------------------------------------------------------------------------
    def move(self, d: int, q: int, r: int, repair: int = 0) -> bool:
        """Move the pass at position ``q`` of device ``d`` to position ``r``; where that overflows
        the device's cap, recompute up to ``repair`` of its items (:meth:`_repair`). False when
        the orders deadlock or a cap is exceeded (then :meth:`undo`)."""
        order = self.orders[d]
        lo, hi = min(q, r), max(q, r)
        self._undo.append(("order", d, lo, order[lo:hi + 1]))
        x = order.pop(q)
        order.insert(r, x)
        for s in range(lo, hi + 1):
            self.pos[order[s]] = s
        return self._settle(d, lo, repair, order[lo:hi + 2])

    def flip(self, it: int, mode: int, repair: int = 0) -> bool:
        """Give item ``it`` (k m + j) ``mode`` (0 keep, 1 recompute, 2 offload), recomputing up to
        ``repair`` other items of its device where that overflows the cap (with ``belady``: the
        item is forced to recompute or released from it, and the device's modes re-derived);
        False when a cap is exceeded (then :meth:`undo`)."""
        self._undo.append(("mode", it, self.mode[it]))
        offload = mode == 2 or self.mode[it] == 2
        if self.belady:
            self._undo.append(("forced", it, self.forced[it]))
            self.forced[it] = int(mode == 1)
        self._set_mode(it, mode)
        d = self.device[self.f_id[it]]
        return self._settle(d, self.pos[self.f_id[it] if offload else self.b_id[it]], repair, [])

    def swap(self, pairs: list[tuple[int, int]], repair: int = 0) -> bool:
        """Exchange the positions of each pair of passes (ids; both of a pair on one device),
        then settle every changed device as :meth:`move` does. False when the orders deadlock or
        a cap is exceeded (then :meth:`undo`)."""
        first = [len(o) for o in self.orders]
        seeds = []
        for x, y in pairs:
            d = self.device[x]
            order, qx, qy = self.orders[d], self.pos[x], self.pos[y]
            seeds += order[qx:qx + 2] + order[qy:qy + 2]
            self._undo.append(("order", d, qx, [x]))
            self._undo.append(("order", d, qy, [y]))
            order[qx], order[qy] = y, x
            self.pos[x], self.pos[y] = qy, qx
            first[d] = min(first[d], qx, qy)
        for d, lo in enumerate(first):
            if lo < len(self.orders[d]):
                lo = self._memory(d, lo, repair)
                if lo is None:
                    return False
                first[d] = lo
        return self._timed_fits(first, seeds)

    def _memory(self, d: int, lo: int, repair: int) -> int | None:
        """Fix device ``d``'s modes after a change from position ``lo`` on (:meth:`_derive`, or
        :meth:`_repair` up to ``repair`` items where its memory does not depend on the timing);
        the first position to re-time, or None when it cannot fit."""
        if self.belady and not self.offloaded[d]:
            changed = self._derive(d)
            return None if changed is None else min(lo, changed)
        if not self.offloaded[d] and self._overflow(d) is not None:
            repaired = self._repair(d, repair)
            return None if repaired is None else min(lo, repaired)
        return lo

    def _timed_fits(self, first: list[int], seeds: list[int]) -> bool:
        """Re-time (``seeds``: the passes moved; with the passes of every item whose mode this
        change set) and check the devices holding offloaded items."""
        for entry in self._undo:
            if entry[0] == "mode":
                seeds.append(self.b_id[entry[1]])
        return self.retime(first, seeds) and all(
            self.fits_on(e) for e in range(len(first)) if self.offloaded[e] and first[e] < len(self.orders[e])
        )

    def _settle(self, d: int, lo: int, repair: int, seeds: list[int]) -> bool:
        """Re-time after a change of device ``d`` from position ``lo`` on, checking memory first
        where it does not depend on the timing."""
        lo = self._memory(d, lo, repair)
        if lo is None:
            return False
        first = [len(o) for o in self.orders]
        first[d] = lo
        return self._timed_fits(first, seeds)

    def _overflow(self, d: int) -> int | None:
        """The first position of device ``d``'s order (no offloaded items) where its activations
        exceed the cap, or None."""
        limit = self.limit[d]
        mode, item, alloc, release = self.mode, self.item, self.alloc, self.release
        level = 0.0
        for q, i in enumerate(self.orders[d]):
            md = mode[item[i]]
            level += alloc[i][md]
            if level > limit:
                return q
            level -= release[i][md]
        return None

    def _repair(self, d: int, flips: int) -> int | None:
        """Recompute, up to ``flips`` times, the keep item alive at the first overflow of device
        ``d`` whose backward comes last (the longest-held activation), until the device fits;
        the first position whose duration changed, or None when the device still overflows."""
        if not self.recompute:
            return None
        order, pos, item, mode = self.orders[d], self.pos, self.item, self.mode
        changed = len(order)
        for _ in range(flips):
            v = self._overflow(d)
            if v is None:
                return changed
            best = None
            for i in order[:v + 1]:
                it = item[i]
                later = self.kind[i] == 0 and mode[it] == 0 and pos[self.b_id[it]] > v
                if later and (best is None or pos[self.b_id[it]] > pos[self.b_id[best]]):
                    best = it
            if best is None:
                return None
            self._undo.append(("mode", best, 0))
            self._set_mode(best, 1)
            changed = min(changed, pos[self.b_id[best]])
        return changed if self._overflow(d) is None else None

    def _derive(self, d: int) -> int | None:
        """Modes of device ``d``'s items (none offloaded) from its order: the ``forced`` items
        recompute, the others keep, and wherever the activations would exceed the cap the kept
        item alive there whose backward comes last recomputes (after Belady's furthest-next-use
        eviction rule for caches; not proven minimal here, since a recomputed backward takes its
        bytes back at its start). Items that no longer need it keep again. The first position
        whose duration changed, or None when even that does not fit. O(the device's order x the
        items alive at once)."""
        order, pos, item, kind, mode = self.orders[d], self.pos, self.item, self.kind, self.mode
        alloc, release, b_id, f_id, forced = self.alloc, self.release, self.b_id, self.f_id, self.forced
        limit = self.limit[d]
        level = 0.0
        live: list[int] = []  # kept items between their F and B
        want: dict[int, int] = {}
        for i in order:
            it = item[i]
            if kind[i] == 0:
                md = want[it] = forced[it]
                if not md:
                    live.append(it)
            else:
                md = want.get(it, mode[it])
                if it in live:
                    live.remove(it)
            level += alloc[i][md]
            while level > limit:
                if not live:
                    return None
                far = max(live, key=lambda x: pos[b_id[x]])
                live.remove(far)
                want[far] = 1
                level -= alloc[f_id[far]][0] - alloc[f_id[far]][1]
            level -= release[i][md]
        changed = len(order)
        for it, md in want.items():
            if md != mode[it]:
                self._undo.append(("mode", it, mode[it]))
                self._set_mode(it, md)
                changed = min(changed, pos[b_id[it]])
        return changed

    def _set_mode(self, it: int, mode: int) -> None:
        d = self.device[self.f_id[it]]
        self.offloaded[d] += (mode == 2) - (self.mode[it] == 2)
        self.mode[it] = mode

    # -- memory and value --------------------------------------------------------------------
    def fits_on(self, d: int) -> bool:
        """Device ``d``'s activations stay within its cap (the checker's rule)."""
        limit = self.limit[d]
        mode, item, alloc, release = self.mode, self.item, self.alloc, self.release
        if not self.offloaded[d]:
            return self._overflow(d) is None
        late = self.late_h2d(d)
        events = []
        for i in self.orders[d]:
            it = item[i]
            md = mode[it]
            if alloc[i][md]:
                events.append((self.start[i], alloc[i][md]))
            if release[i][md]:
                events.append((self.end[i], -release[i][md]))
            if md == 2 and self.kind[i] == 0:
                events.append((self.d2h[it] + self.tau_d[it], -self.a_o[it]))
                events.append((late[it], self.a_o[it]))
        # model.memory_profile's sweep (events within tol of a group's first are one instant)
        events.sort()
        tol, level, i, n = self.tol, 0.0, 0, len(events)
        while i < n:
            until = events[i][0] + tol
            while i < n and events[i][0] <= until:
                level += events[i][1]
                i += 1
            if level > limit:
                return False
        return True

    def late_h2d(self, d: int) -> dict[int, float]:
        """The H2D starts of device ``d``'s offloaded items, each as late as its B start and the
        next H2D on the engine allow (engine order: the B order, as the simulator's). The pass
        times are unchanged and every H2D still starts after the simulator's, hence after its
        D2H ends; the activations come back later, so the device holds less."""
        late: dict[int, float] = {}
        bound = math.inf
        for i in reversed(self.orders[d]):
            it = self.item[i]
            if self.kind[i] == 1 and self.mode[it] == 2:
                bound = min(self.start[i], bound) - self.tau_u[it]
                late[it] = bound
        return late

    def value(self) -> tuple[float, float]:
        """(objective, sum of pass ends): the second term steers the search across plateaus."""
        ends = [self.end[o[-1]] for o in self.orders if o]
        if self.instance.objective == "stage_span":
            best = max((self.end[o[-1]] - self.start[o[0]] for o in self.orders if o), default=0.0)
        else:
            best = max(ends, default=0.0)
        return best, sum(self.end)

    def timed(self) -> Timed:
        m = self.instance.microbatches
        modes = {(i // m, i % m): _MODES[md] for i, md in enumerate(self.mode) if md}
        return Timed(
            start=dict(zip(self.keys, self.start, strict=True)),
            modes=modes,
            d2h={(i // m, i % m): self.d2h[i] for i, md in enumerate(self.mode) if md == 2},
            h2d={(i // m, i % m): t for d in range(len(self.orders)) for i, t in self.late_h2d(d).items()},
        )

    def key_orders(self) -> Orders:
        return {d: [self.keys[i] for i in o] for d, o in enumerate(self.orders)}


#: The cheap schedules the local search starts from (each O(n (v + log p)) or less); the best that fits
#: under the instance's objective is the start.
SEARCH_STARTS = ("zb_h2", "zb_v", "1f1b_split", "1f1b", "megatron_selective")
#: Moves the local search evaluates per pass of the instance, at least ``SEARCH_MIN_MOVES`` and at
#: most ``SEARCH_MAX_MOVES`` (a move re-times up to O(n) passes: the cap keeps the search linear).
SEARCH_MOVES_PER_PASS = 4
SEARCH_MIN_MOVES = 300
SEARCH_MAX_MOVES = 2000
#: Items a move may recompute to fit the cap it would otherwise exceed.
SEARCH_REPAIRS = 2
#: Farthest a move shifts a pass within its device's order.
SEARCH_REACH = 3
_SHIFTS = tuple(s for s in range(-SEARCH_REACH, SEARCH_REACH + 1) if s)
#: Share of the moves that change an item's mode (where the instance allows another mode).
SEARCH_FLIP_SHARE = 0.3
#: Share of the moves that exchange two micro-batches (:func:`_exchange`; only where items have
#: another mode than keep).
SEARCH_EXCHANGE_SHARE = 0.15
#: Late acceptance: a move is kept when it is no worse than the schedule this many moves ago.
SEARCH_HISTORY = 20
#: Wall-clock guard (s): the search stops with its best schedule so far (only on huge instances).
SEARCH_WALL_S = 20.0
#: Kind ranks (F, B, W) of the recompute warm-up start (:func:`_warmup_orders`, 1F1B's windows):
#: among the passes a device may start at once, forwards first.
SEARCH_WARMUP_RANK = (0, 1, 2)


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    scale = 1e-9 * max(1.0, abs(b[0]))
    return a[0] < b[0] - scale or (a[0] <= b[0] + scale and a[1] < b[1] - scale)


def local_search(instance: Instance, seed: int = 0) -> Solution:
    """Ours (issue 19): a late-acceptance local search (Burke and Bykov's LAHC) on per-device
    orders and modes, started from the best of the cheap schedules in ``SEARCH_STARTS`` or, where
    it is strictly better, the recompute warm-up (:func:`_warmup_orders` with 1F1B's windows and
    ranks ``SEARCH_WARMUP_RANK``: 1F1B's in-flight counts at any cap, the micro-batches the cap
    cannot keep recomputed), and evaluated incrementally by :class:`Evaluator`. A start that
    meets the dual bound is returned at once. Seeded random moves: shift one pass of a device
    up to ``SEARCH_REACH`` places (past passes of other items, so a micro-batch may overtake
    another, which FIFO schedules never do); where items have another mode, exchange two
    micro-batches on one stage or from a stage on (:func:`_exchange`, share
    ``SEARCH_EXCHANGE_SHARE``; on keep-only instances it measured worse); or give one item another mode
    (keep / recompute / offload, as the instance allows; share ``SEARCH_FLIP_SHARE``). After a
    change, a device without offloaded items derives its recompute set from its order
    (:meth:`Evaluator._derive`: Belady's furthest-next-use rule, plus the items a flip forced),
    so a reorder brings the recomputation it needs and drops the one it no longer needs; a device
    with offloaded items recomputes up to ``SEARCH_REPAIRS`` of its longest-held items where the
    move overflows. Offloaded items bring their activations back as late as their backward
    allows (:meth:`Evaluator.late_h2d`). A move is kept when (objective, sum of pass ends) is no
    worse than now or than ``SEARCH_HISTORY`` moves ago. At most ``min(SEARCH_MAX_MOVES,
    max(SEARCH_MIN_MOVES, SEARCH_MOVES_PER_PASS n))`` moves for n passes, fewer when a schedule
    meets the dual bound (:func:`~coopt.problems.pipeline.bound.lower_bound`: it is then
    optimal), stopped after ``SEARCH_WALL_S`` seconds (a guard for huge instances only). The
    moves depend on the seed alone, never on the clock below the guard.

    The search's modes are whole items; where items may recompute some of their layers
    (``recompute_layers`` > 1), :func:`chronos_recomp`'s per-layer schedule is a further candidate
    and the better of the two is returned.

    Guarantee: never worse than the best start (it is returned when the search does not beat
    it) nor, with per-layer recompute, than ``chronos_recomp``; feasible or NoSolution. Running
    time: the starts' (ZB-H2's and the warm-up's list schedules, O(n (v + log p)) each) plus at most
    ``SEARCH_MAX_MOVES`` moves, each O(the suffixes it re-times + one device's order) = O(n) at
    worst. With the generator's n = 6 p^2 passes (m = 2p) that is O(p^2 log p) for the start and
    O(p^2) per move: the time grows at least as p^2, the size of the input (fitted exponents in
    docs/pipeline.md, "Cost per move and the scaling family").
    """
    if not instance.partial_recompute:
        return _order_search(instance, seed)
    layered = _best_of(instance, ["chronos_recomp"])
    try:
        found = _order_search(instance, seed)
    except NoSolution:
        if layered is None:
            raise
        return layered
    if layered is not None and layered["objective"] < found["objective"] * (1 - 1e-9):
        return layered
    return found


def _order_search(instance: Instance, seed: int) -> Solution:
    """The late-acceptance search of :func:`local_search` on whole-item modes."""
    deadline = time.perf_counter() + SEARCH_WALL_S
    # with a split backward, 1F1B's order re-timed without the fused send is 1f1b_split's
    names = [x for x in SEARCH_STARTS if x != "1f1b" or not instance.split_backward]
    start = _best_of(instance, names)
    if start is None:
        raise NoSolution(f"local_search: none of {', '.join(SEARCH_STARTS)} fits the instance")
    target = lower_bound(instance)
    if start["objective"] <= target * (1 + 1e-9):
        return start  # proven optimal by the dual bound
    timed, _ = parse(instance, start)
    orders: Orders = {d: [] for d in range(instance.stages)}
    for key in sorted(timed.start, key=lambda x: (timed.start[x], x)):
        orders[instance.device(key[1])].append(key)
    try:
        ev = Evaluator(instance, orders, timed.modes, belady=True)
    except Deadlock:
        return start
    if not all(ev.fits_on(d) for d in range(instance.stages)):
        return start  # copies placed by the start's own rule (slot train) that ours would not fit
    K = instance.virtual_stages
    warmup = _warmup_orders(ev, lambda k: K - k, SEARCH_WARMUP_RANK)
    if warmup is not None:
        warm = Evaluator(instance, *warmup, belady=True)
        warm_value = warm.value()
        if _better(warm_value, ev.value()):
            ev = warm
            if warm_value[0] <= target * (1 + 1e-9):
                return _finish(instance, _fits(instance, warm.timed(), "local_search"))
    best_value, best = _lahc(instance, ev, random.Random(seed), _budget(len(ev.keys)), deadline, target)
    if not _better(best_value, (start["objective"], math.inf)):
        return start
    ev = _restart(instance, ev, best)
    return _finish(instance, _fits(instance, ev.timed(), "local_search"))


def _budget(n: int) -> int:
    """Moves of one search on n passes."""
    return min(SEARCH_MAX_MOVES, max(SEARCH_MIN_MOVES, SEARCH_MOVES_PER_PASS * n))


def _lahc(
    instance: Instance, ev: Evaluator, rng: random.Random, budget: int, deadline: float, target: float
) -> tuple[tuple[float, float], tuple[list[list[int]], list[int]]]:
    """``budget`` late-acceptance moves from ``ev``'s state (:func:`local_search`'s moves and
    acceptance), stopping early once the objective reaches ``target`` (a lower bound); the best
    value met and its (orders, modes)."""
    allowed = [0] + [1] * instance.allow_recompute + [2] * instance.allow_offload
    items = list(range(len(ev.mode))) if len(allowed) > 1 else []
    repair = SEARCH_REPAIRS if instance.allow_recompute else 0
    current = best_value = ev.value()
    best = ([list(o) for o in ev.orders], list(ev.mode))
    history = [current] * SEARCH_HISTORY
    movable = [d for d, o in enumerate(ev.orders) if len(o) > 1]
    m = instance.microbatches
    exchange = SEARCH_EXCHANGE_SHARE if items and m > 1 else 0.0
    for step in range(budget):
        if step % 64 == 0 and time.perf_counter() > deadline:
            break
        u = rng.random()
        if items and u < SEARCH_FLIP_SHARE:
            it = rng.choice(items)
            ok = ev.flip(it, rng.choice([md for md in allowed if md != ev.mode[it]]), repair)
        elif u > 1 - exchange:
            j = rng.randrange(m)
            j2 = j + rng.choice((-2, -1, 1, 2))
            if not 0 <= j2 < m:
                continue
            k0 = rng.randrange(instance.virtual_stages)
            ok = ev.swap(_exchange(instance, j, j2, k0, wave=rng.random() < 0.5), repair)
        else:
            d = rng.choice(movable)
            order = ev.orders[d]
            q = rng.randrange(len(order))
            r = min(len(order) - 1, max(0, q + rng.choice(_SHIFTS)))
            if r == q or ev.item[order[q]] == ev.item[order[r]]:
                continue
            ok = ev.move(d, q, r, repair)
        got = ev.value() if ok else None
        slot = step % SEARCH_HISTORY
        if got is not None and (not _better(current, got) or not _better(history[slot], got)):
            ev.commit()
            current = got
            if _better(current, best_value):
                best_value = current
                best = ([list(o) for o in ev.orders], list(ev.mode))
                if best_value[0] <= target * (1 + 1e-9):
                    break
        else:
            ev.undo()
        history[slot] = current
    return best_value, best


def _exchange(instance: Instance, j: int, j2: int, k0: int, wave: bool) -> list[tuple[int, int]]:
    """The pass pairs (:class:`Evaluator` ids) that exchange micro-batches j and j2: all their
    passes on virtual stage k0, or with ``wave`` their forwards from stage k0 on and all their
    backward and weight passes, so that one overtakes the other from stage k0 on (the shape of
    the optima of ``0-p3m4-recompute`` and ``0-p3m3-offload-overtake``)."""
    K, m = instance.virtual_stages, instance.microbatches
    pairs = []
    for kind in range(len(instance.kinds)):  # ids are sorted (kind, k, j), as Instance.passes()
        for k in range(K):
            if (kind > 0 or k >= k0) if wave else k == k0:
                base = (kind * K + k) * m
                pairs.append((base + j, base + j2))
    return pairs


def _restart(instance: Instance, ev: Evaluator, state: tuple[list[list[int]], list[int]]) -> Evaluator:
    """A fresh evaluator on saved orders and modes (the saved state is known to be feasible)."""
    m = instance.microbatches
    orders = {d: [ev.keys[i] for i in o] for d, o in enumerate(state[0])}
    modes = {(i // m, i % m): _MODES[md] for i, md in enumerate(state[1]) if md}
    return Evaluator(instance, orders, modes)


def _warmup_orders(
    ev: Evaluator, window: Callable[[int], int], rank: tuple[int, ...]
) -> tuple[Orders, dict[Item, str]] | None:
    """A list schedule that buys a deeper warm-up with recompute: FIFO lanes, and each device,
    when it has a ready lane head it may start, starts the one of earliest start, then of least
    ``rank[kind]`` (0 F, 1 B, 2 W). A forward of virtual stage k is admitted while fewer than
    ``window(k)`` micro-batches are in flight there and its activation fits the cap; where the
    kept activation does not fit, it is admitted *recomputed* (its checkpoint only), and, where
    even that does not fit, the kept items in flight on its stage whose backward comes last
    (FIFO: the newest) turn to recompute until it does (their forwards hold less from their
    start on, so the levels before stay within the cap). A forward is admitted only where the
    micro-batches then in flight on its stage can still finish in lane order with nothing else
    started (each recomputed backward re-materialises ``a - a_c`` on top of what the earlier ones
    left, the pending W passes released first), so the warm-up never starves its backwards. A
    backward starts where its re-materialised bytes fit. ``ev`` supplies the compiled instance
    (:class:`Evaluator`'s arrays); its orders are not read.

    With 1F1B's windows (K - k) this is 1F1B's warm-up at any cap: the in-flight micro-batches a
    cap of two kept activations cannot hold become recomputed ones, which is the optimum (16)
    of ``0-p3m4-recompute`` (a third micro-batch in flight on device 0 paid for by two
    recomputes) where every keep-first schedule stops at 17.

    The orders and the recompute set, or None where a device is left with nothing it may
    start (a memory deadlock). Each device keeps its choice in a heap (:class:`_Choices`) and only
    the dispatching device and the devices of the pass's data-flow successors choose again (as
    :func:`_list_schedule`): O(n (v + log p)) for n passes, v chunks per device. Deterministic.
    """
    instance = ev.instance
    m, p, K = instance.microbatches, instance.stages, instance.virtual_stages
    kinds = len(instance.kinds)
    alloc, release, limit, length = ev.alloc, ev.release, ev.limit, ev.length
    pred, lag, f_id, b_id, dev = ev.pred, ev.pred_lag, ev.f_id, ev.b_id, ev.device
    recompute = instance.allow_recompute
    lanes = [[(kd, k) for k in instance.stages_on(d) for kd in range(kinds)] for d in range(p)]
    head = [[0] * K for _ in range(kinds)]  # next micro-batch of each (kind, stage) lane
    end = [-1.0] * len(ev.keys)
    free = [0.0] * p
    level = [0.0] * p
    pending_w = [0.0] * p  # a_W held by items between their B and W
    mode = [0] * len(ev.mode)

    def admit_forward(d: int, k: int, j: int) -> tuple[int, list[int]] | None:
        """(mode, the in-flight items that turn to recompute) of F(k, j) on device d, or None."""
        hb = head[1][k]
        if j - hb >= window(k):
            return None
        i = f_id[k * m + j]
        level_after, md, turned = level[d] + alloc[i][0], 0, []
        if level_after > limit[d]:
            if not recompute:
                return None
            md, level_after = 1, level[d] + alloc[i][1]
            for jj in range(j - 1, hb - 1, -1):
                if level_after <= limit[d]:
                    break
                it = k * m + jj
                if not mode[it]:
                    turned.append(it)
                    level_after -= alloc[f_id[it]][0] - alloc[f_id[it]][1]
            if level_after > limit[d]:
                return None
        left = level_after - pending_w[d]
        for jj in range(hb, j + 1):
            it = k * m + jj
            recomputed = md if jj == j else mode[it] or it in turned
            if recomputed:
                if left + alloc[b_id[it]][1] > limit[d]:
                    return None
                left -= alloc[f_id[it]][1]
            else:
                left -= alloc[f_id[it]][0]
        return md, turned

    def choice(d: int) -> tuple | None:
        best = None
        for kd, k in lanes[d]:
            j = head[kd][k]
            if j >= m:
                continue
            i = (kd * K + k) * m + j
            r = pred[i]
            if r >= 0 and end[r] < 0:
                continue
            t = free[d] if r < 0 else max(free[d], end[r] + lag[i])
            if best is not None and (t, rank[kd]) >= best[:2]:
                continue
            if kd == 0:
                got = admit_forward(d, k, j)
                if got is None:
                    continue
                md, turned = got
            else:
                md, turned = mode[k * m + j], []
                if level[d] + alloc[i][md] > limit[d]:
                    continue
            best = (t, rank[kd], i, md, turned)
        return None if best is None else (best[:2], best[2:])

    choices = _Choices(p, choice)
    orders: Orders = {d: [] for d in range(p)}
    for _ in range(len(ev.keys)):
        got = choices.pop()
        if got is None:
            return None
        (t, _), d, (i, md, turned) = got
        kd, k, j = ev.kind[i], ev.keys[i][1], ev.keys[i][2]
        it = k * m + j
        end[i] = free[d] = t + length[i][md]
        head[kd][k] += 1
        orders[d].append(ev.keys[i])
        for h in turned:
            mode[h] = 1
            level[d] -= alloc[f_id[h]][0] - alloc[f_id[h]][1]
        level[d] += alloc[i][md] - release[i][md]
        if kd == 0:
            mode[it] = md
        elif kd == 1:
            pending_w[d] += alloc[f_id[it]][0] - release[i][md]
        else:
            pending_w[d] -= release[i][md]
        for e in {dev[s] for s in ev.succs[i]} | {d}:
            choices.refresh(e)
    return orders, {(it // m, it % m): RECOMPUTE for it, md in enumerate(mode) if md}


# --------------------------------------------------------------------------------------------
# Building-block search for any memory budget (Qi et al., NeurIPS 2024, Section 3, Appendix A)
# --------------------------------------------------------------------------------------------
#: Slots in one period of a building block: one F, B and W of each of the two chunks.
BLOCK_PERIOD = 6
#: Pass kinds of a block row, in this order: F of the first chunk (virtual stage d), F of the second
#: chunk (2p - 1 - d), B of the second chunk, B of the first, W of the second, W of the first.
_BLOCK_KINDS = ("F", "F", "B", "B", "W", "W")
_BLOCK_UNITS = (1, 1, 0, 0, -1, -1)  # chunk activations held: + at F, - at W


def _block_rows(p: int, first: tuple[int, int, int], k0: int, k1: int, split: int) -> tuple | None:
    """The residues (mod 6) of the six passes on every device, or None when two collide. Device
    0 has its first-chunk F at 0 and the other three at ``first``; from device d to d + 1 the
    downward passes (first-chunk F, second-chunk B) move k slots later, with k = k0 on the first
    ``split`` steps and k1 after, and the upward passes one slot earlier; each W takes the first
    free slot after its B (the paper's Appendix A; ``v_auto_schedule.py`` lines 814-851)."""
    rows = []
    row = [0, *first]
    for d in range(p):
        if d > 0:
            k = k0 if d - 1 < split else k1
            row = [(row[0] + k) % BLOCK_PERIOD, (row[1] - 1) % BLOCK_PERIOD,
                   (row[2] + k) % BLOCK_PERIOD, (row[3] - 1) % BLOCK_PERIOD]
            if len(set(row)) < 4:
                return None
        used = set(row)
        w = []
        for b in (row[2], row[3]):
            slot = next(s for s in ((b + i) % BLOCK_PERIOD for i in range(1, BLOCK_PERIOD)) if s not in used)
            used.add(slot)
            w.append(slot)
        rows.append((*row[:4], *w))
    return tuple(rows)


@cache
def building_blocks(p: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Every distinct building block for p devices: device 0's pattern (the three other non-W
    passes on distinct slots 1..5) times the uniform offsets k0 >= k1 in 1..5 and the device where
    k0 gives way to k1 (the authors' search space, ``v_auto_schedule.py`` lines 854-887)."""
    seen: dict[tuple, None] = {}
    for first in itertools.permutations(range(1, BLOCK_PERIOD), 3):
        for k0 in range(1, BLOCK_PERIOD):
            for k1 in range(1, k0 + 1):
                for split in range(1, p) if k1 < k0 else (p,):
                    rows = _block_rows(p, first, k0, k1, split)
                    if rows is not None:
                        seen.setdefault(rows, None)
    return tuple(seen)


def _after(t: int, residue: int) -> int:
    """The first slot after t with the given residue mod the period."""
    return t + 1 + (residue - t - 1) % BLOCK_PERIOD


def _block_predecessor(x: tuple[int, int, int], p: int) -> tuple[int, int, int] | None:
    """The data-flow predecessor of block pass (row index, device, micro-batch) in the V."""
    t, d, j = x
    if t == 0:
        return (0, d - 1, j) if d > 0 else None
    if t == 1:
        return (1, d + 1, j) if d < p - 1 else (0, p - 1, j)
    if t == 2:
        return (2, d - 1, j) if d > 0 else (1, 0, j)
    if t == 3:
        return (3, d + 1, j) if d < p - 1 else (2, p - 1, j)
    return (t - 2, d, j)


def _repeat(rows: tuple, p: int, m: int) -> dict[tuple[int, int, int], int]:
    """Slots of the block repeated m times: micro-batch 0 of each pass on the first slot of its
    residue after its predecessor's, micro-batch j one period per step later (our reading of
    ``init_repeated_schedule`` / ``clear_invalid_index``, lines 189-231)."""
    base = [[0] * 6 for _ in range(p)]
    t = -1
    for kind, devices in ((0, range(p)), (1, range(p - 1, -1, -1)), (2, range(p)), (3, range(p - 1, -1, -1))):
        for d in devices:
            t = base[d][kind] = _after(t, rows[d][kind])
    for d in range(p):
        base[d][4] = _after(base[d][2], rows[d][4])
        base[d][5] = _after(base[d][3], rows[d][5])
    return {(t, d, j): base[d][t] + BLOCK_PERIOD * j for d in range(p) for t in range(6) for j in range(m)}


def _unit_peaks(slots: dict[tuple[int, int, int], int], p: int) -> list[int]:
    """Peak chunk activations held per device in slot order."""
    on: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    for (t, d, _), s in slots.items():
        on[d].append((s, _BLOCK_UNITS[t]))
    out = []
    for events in on:
        level = peak = 0
        for _, delta in sorted(events):
            level += delta
            peak = max(peak, level)
        out.append(peak)
    return out


def _fill_idle(slots: dict[tuple[int, int, int], int], p: int, budget: list[int]) -> None:
    """Left to right over unit slots, fill every idle slot of a device with the first later pass
    of some kind whose predecessor has finished, unless it is an F that would lift the device's
    activations above its budget in between (our rewrite of ``reorder_greedily_without_increasing_
    peak_mem``, lines 539-642, with per-device budgets). Moves only make passes earlier."""
    grid: list[dict[int, tuple[int, int, int]]] = [{} for _ in range(p)]
    for x, s in slots.items():
        grid[x[1]][s] = x
    last = [max(g) for g in grid]
    level = [0] * p
    for t in range(max(last) + 1):
        for d in range(p):
            g = grid[d]
            if t in g:
                level[d] += _BLOCK_UNITS[g[t][0]]
                continue
            if t > last[d]:
                continue
            run = rise = 0  # activations gained since t, and their largest value
            seen: set[int] = set()
            for s in range(t + 1, last[d] + 1):
                y = g.get(s)
                if y is None:
                    continue
                if y[0] not in seen:
                    seen.add(y[0])
                    q = _block_predecessor(y, p)
                    ready = q is None or slots[q] < t
                    if ready and not (_BLOCK_UNITS[y[0]] > 0 and level[d] + 1 + rise > budget[d]):
                        del g[s]
                        g[t] = y
                        slots[y] = t
                        level[d] += _BLOCK_UNITS[y[0]]
                        last[d] = max(g)
                        break
                    if len(seen) == 6:
                        break
                run += _BLOCK_UNITS[y[0]]
                rise = max(rise, run)


def _block_orders(slots: dict[tuple[int, int, int], int], p: int) -> Orders:
    orders: Orders = {d: [] for d in range(p)}
    for (t, d, j), _ in sorted(slots.items(), key=lambda item: item[1]):
        orders[d].append((_BLOCK_KINDS[t], d if t in (0, 3, 5) else 2 * p - 1 - d, j))
    return orders


def _lazy_w(instance: Instance, orders: Orders, limit: list[float]) -> Orders | None:
    """Re-time the F and B passes of ``orders`` in their order with every W deferred: a W runs
    when an F would otherwise exceed the device's byte limit, or in an idle wait for the next
    pass's input when it ends by then; the rest at the end (our rule in place of the authors'
    warm-up / cool-down rewriting, ``process_warmup_...`` and ``process_cooldown``, lines
    234-499; ZB-V fills waits with W the same way, ``zbv.py`` ``try_v_schedule``). None when an
    F cannot fit."""
    p = instance.stages
    seq = {d: [x for x in o if x[0] != "W"] for d, o in orders.items()}
    at = dict.fromkeys(seq, 0)
    free, level = [0.0] * p, [0.0] * p
    pending: list[deque[PassKey]] = [deque() for _ in range(p)]
    end: dict[PassKey, float] = {}
    out: Orders = {d: [] for d in range(p)}

    def run(d: int, x: PassKey, t: float) -> None:
        end[x] = t + instance.duration(x)
        free[d] = end[x]
        out[d].append(x)
        k = x[1]
        if x[0] == "F":
            level[d] += instance.a(k)
        elif x[0] == "B":
            level[d] -= instance.a(k) - instance.a_w(k)
            pending[d].append(("W", k, x[2]))
        else:
            level[d] -= instance.a_w(k)

    left = sum(len(s) for s in seq.values())
    while left:
        progressed = False
        for d in range(p):
            while at[d] < len(seq[d]):
                x = seq[d][at[d]]
                preds = instance.predecessors(x)
                if any(q not in end for q, _ in preds):
                    break
                ready = max((end[q] + lag for q, lag in preds), default=0.0)
                while x[0] == "F" and level[d] + instance.a(x[1]) > limit[d]:
                    if not pending[d]:
                        return None
                    run(d, pending[d].popleft(), free[d])
                while pending[d] and free[d] + instance.duration(pending[d][0]) <= ready + 1e-12:
                    run(d, pending[d].popleft(), free[d])
                run(d, x, max(free[d], ready))
                at[d] += 1
                left -= 1
                progressed = True
        if not progressed:
            return None
    for d in range(p):
        out[d] += list(pending[d])
    return out


def _block_search(instance: Instance) -> tuple[Solution | None, int]:
    """The best block schedule that fits (None if none does) and the least unit peak seen."""
    p, m = instance.stages, instance.microbatches
    unit = [instance.a(instance.stages_on(d)[0]) for d in range(p)]
    budget = [
        2 * p if unit[d] <= 0 or math.isinf(instance.cap(d))
        else min(2 * p, int(instance.cap(d) / unit[d] * (1 + 1e-9)))
        for d in range(p)
    ]
    limit = [min(instance.cap(d), 2 * p * unit[d]) * (1 + 1e-9) for d in range(p)]
    best: Solution | None = None
    leanest = math.inf
    for rows in building_blocks(p):
        slots = _repeat(rows, p, m)
        need = _unit_peaks(slots, p)
        leanest = min(leanest, max(need))
        if any(n > b for n, b in zip(need, budget, strict=True)):
            continue
        _fill_idle(slots, p, budget)
        orders = _block_orders(slots, p)
        for candidate in (orders, _lazy_w(instance, orders, limit)):
            if candidate is None:
                continue
            try:
                solution = _finish(instance, _run(instance, candidate, "v_auto"))
            except NoSolution:
                continue
            if best is None or solution["objective"] < best["objective"] - 1e-12:
                best = solution
    return best, int(leanest)


def v_auto(instance: Instance, seed: int = 0) -> Solution:
    """The building-block search for any memory budget (Qi et al., "Pipeline Parallelism with
    Controllable Memory", NeurIPS 2024, Section 3 and Appendix A; the authors'
    ``scheduler/v_auto_schedule.py``, ``schedule`` lines 854-913 and the helpers it calls, read
    and rewritten here). Two chunks per device in a V. Budget per device: the cap in chunk
    activations (a / 2 each), at most 2p (1F1B's p a, the authors' ``min(2 * p, max_mem)``,
    line 890); uncapped, 2p.

    Every building block of :func:`building_blocks` is repeated m times (one period of 6 unit
    slots per micro-batch); blocks whose repetition holds more than the budget on some device are
    skipped; each remaining one is compacted in unit slots (idle slots filled by later passes
    within the budget), and its order is timed by our event simulator twice: as it is, and with
    the W passes deferred into waits and memory pressure (:func:`_lazy_w`). The schedule with the
    least objective (span or makespan, as the instance asks) that fits every cap wins. Besides
    the blocks, ZB-V, V-Half and V-Min are candidates where they fit (each is a building block
    with the authors' own warm-up and cool-down, which our compaction does not always reproduce
    on non-unit times), so the search is never worse than those at the same cap.

    The budget counts a chunk's activation until its W (the papers' accounting), so with a_W < a
    it is conservative: a block it skips might still fit in bytes.

    Guarantee: fits every cap (checked by the simulator's peaks); never worse than ZB-V, V-Half
    or V-Min where they fit. Measured (benchmarks/pipeline_blocks.py): on unit times the blocks
    alone reach span bubble 0 at 2p chunk activations, ZB-V's point. Raises NoSolution when no
    block fits (none holds fewer than p chunk activations at p = 4 and 8). Running time
    O(B p m (p + 6)) for B blocks (B = 260 at p = 4, 480 at p = 8): 5-10 s at p = 8, m = 32.
    """
    if instance.chunks != 2 or instance.placement != "vshape" or not instance.split_backward:
        raise NoSolution("v_auto needs chunks = 2, placement 'vshape' and split_backward = true")
    best, leanest = _block_search(instance)
    for name in ("zb_v", "v_half", "v_min"):
        try:
            solution = HEURISTICS[name](instance)
        except NoSolution:
            continue
        if best is None or solution["objective"] < best["objective"] - 1e-12:
            best = solution
    if best is None:
        chunk_of = [instance.a(instance.stages_on(e)[0]) for e in range(instance.stages)]
        d = min(range(instance.stages), key=lambda e: instance.cap(e) / max(chunk_of[e], 1e-300))
        chunk = chunk_of[d]
        raise NoSolution(
            f"v_auto: no building block fits the cap: the leanest holds {leanest} chunk activations "
            f"on some device (each kept until its W; {leanest * chunk / GB:g} GB on device {d}, whose "
            f"cap is {instance.cap(d) / GB:g} GB)"
        )
    return {**best, "schedule": "v_auto"}


#: The cheap schedules ``portfolio`` runs (each at most O(n p v), V-Half / V-Min O(n^2 m)).
PORTFOLIO = (
    "1f1b", "1f1b_split", "zb_h1", "zb_h2", "zb_v", "v_half", "v_min", "interleaved_1f1b", "gpipe",
    "chronos_pipe",
)


def portfolio(instance: Instance, seed: int = 0) -> Solution:
    """The best, under the instance's objective, of the cheap schedules in ``PORTFOLIO`` that
    apply and fit the cap (issue 23: the best of ZB-H1 and ZB-H2 already closes ZB-H2's 7 %
    worst case on the exact family).

    Guarantee: never worse than any member. Running time: the sum of the members'.
    """
    best = _best_of(instance, PORTFOLIO)
    if best is None:
        raise NoSolution("portfolio: no cheap schedule applies and fits the cap")
    return best


def _best_of(instance: Instance, names: Iterable[str]) -> Solution | None:
    """The best solution, under the instance's objective, of the named schedules that apply and
    fit (the first of equal ones), marked with its schedule's name; None when none does."""
    best: Solution | None = None
    for name in names:
        try:
            solution = HEURISTICS[name](instance)
        except NoSolution:
            continue
        if best is None or solution["objective"] < best["objective"] - 1e-12:
            best = {**solution, "schedule": name}
    return best


#: The heuristics that only return the best of others (skipped where every schedule is run anyway).
COMBINED = ("portfolio",)

HEURISTICS = {
    "gpipe": gpipe,
    "1f1b": one_f_one_b,
    "interleaved_1f1b": interleaved_one_f_one_b,
    "zb_h1": zb_h1,
    "zb_h2": zb_h2,
    "zb_auto": zb_auto,
    "1f1b_split": one_f_one_b_split,
    "zb_v": zb_v,
    "v_half": v_half,
    "v_min": v_min,
    "v_auto": v_auto,
    "portfolio": portfolio,
    "local_search": local_search,
    "chronos_pipe": chronos_pipe,
    "chronos_recomp": chronos_recomp,
    "chronos_offload": chronos_offload,
    "megatron_full": megatron_full,
    "pipeoffload": pipeoffload,
    "megatron_selective": megatron_selective,
    "megatron_block": megatron_block,
}
