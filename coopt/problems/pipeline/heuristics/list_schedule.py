"""Memory-capped list scheduling: passes dispatched in time order, each device starting
its ready pass of best priority within the cap, an in-flight window per virtual stage and an optional
byte budget (:func:`_list_schedule`, O(n (v + log p)) for n passes). Two schedules are built on it:
ZB-H2 (Zero Bubble, Qi et al. ICLR 2024) and the reconstruction of Chronos-Pipe (ChronosPipe/TPipe,
arXiv 2503.03182).

Guarantee: every returned schedule fits every cap; a dispatch that finds no admissible pass raises
``NoSolution`` (a memory deadlock of the rule, not a proof that no schedule exists).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import replace

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.classic import zb_h1
from coopt.problems.pipeline.heuristics.timing import _finish, _fits, _need_single_chunk, _need_split
from coopt.problems.pipeline.model import (
    Instance,
    PassKey,
    Timed,
)

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
    (:class:`_Choices`). O(n (v + log p)) for n passes, v chunks per device. ``priority`` must not change
    for a pass once it is ready (both priorities here read only the start of the same item's
    forward, dispatched before its backward is ready)."""
    p, m = instance.stages, instance.microbatches
    on = [instance.stages_on(d) for d in range(p)]
    preds_of = {x: instance.predecessors(x) for x in instance.passes()}
    succ_devices = _successor_devices(instance, preds_of)
    size = {k: instance.a(k) for k in range(instance.virtual_stages)}
    nxt = {(x, k): 0 for x in instance.kinds for k in range(instance.virtual_stages)}
    start: dict[PassKey, float] = {}
    end: dict[PassKey, float] = {}
    free, level, reserved = [0.0] * p, [0.0] * p, [0.0] * p  # device free time, kept and reserved bytes
    inflight = [0] * instance.virtual_stages
    limit = [min(instance.cap(d), budget(d) if budget else float("inf")) * (1 + 1e-9) for d in range(p)]
    first = [min(on[d]) for d in range(p)]
    # bytes of the later chunks on the device of virtual stage k, reserved when a micro-batch enters it
    later = {k: sum(size[q] for q in on[instance.device(k)] if q > k) for k in range(instance.virtual_stages)}

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
            reserved[d] += later[k] if k == first[d] else -instance.a(k)
        inflight[k] += 1 if kind == "F" else -1 if kind == "B" else 0
        level[d] += _held(instance, kind, k)
        nxt[(kind, k)] += 1
        for e in succ_devices[key] | {d}:
            choices.refresh(e)
    return _fits(instance, Timed(start=start, modes={}, d2h={}, h2d={}), name)


def _successor_devices(
    instance: Instance, preds_of: dict[PassKey, list[tuple[PassKey, float]]]
) -> dict[PassKey, set[int]]:
    """The devices of each pass's data-flow successors."""
    succ_devices: dict[PassKey, set[int]] = {x: set() for x in preds_of}
    for x, preds in preds_of.items():
        for q, _ in preds:
            succ_devices[q].add(instance.device(x[1]))
    return succ_devices


def _held(instance: Instance, kind: str, k: int) -> float:
    """The change of the device's kept activations at a pass of virtual stage k (keep mode)."""
    if kind == "F":
        return instance.a(k)
    if kind == "B":
        return -(instance.a(k) - instance.a_w(k))
    return -instance.a_w(k)


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
