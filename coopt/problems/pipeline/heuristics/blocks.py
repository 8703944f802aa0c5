"""The building-block search for any memory budget (Qi et al., NeurIPS 2024, Section 3 and
Appendix A; the authors' ``scheduler/v_auto_schedule.py`` read and rewritten): every building block of
the V placement repeated m times, compacted within the per-device budget and timed twice (as built,
and with the W passes deferred, :func:`_lazy_w`); ZB-V, V-Half and V-Min are further candidates.

Guarantee: the returned schedule fits every cap and is never worse than ZB-V, V-Half or V-Min where
they fit. O(B p m (p + 6)) for B blocks (260 at p = 4, 480 at p = 8).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from functools import cache

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.timing import Orders, _finish, _run
from coopt.problems.pipeline.heuristics.v_memory import v_half, v_min
from coopt.problems.pipeline.heuristics.zero_bubble import zb_v
from coopt.problems.pipeline.model import (
    GB,
    Instance,
    PassKey,
)

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
    for schedule in (zb_v, v_half, v_min):
        try:
            solution = schedule(instance)
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
