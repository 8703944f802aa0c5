"""The controllable-memory V schedules V-Half and V-Min (Qi et al., "Pipeline Parallelism
with Controllable Memory", NeurIPS 2024; the authors' ``scheduler/zbv_greedy.py`` read and
rewritten): a stable pattern of unit slots repeated every 6 slots, reordered greedily without raising
any device's peak, squeezed, and timed by the shared simulator on the instance's durations.

Guarantee (the paper's, uniform F = B = W): about half (V-Half) or a third (V-Min) of 1F1B's
activation memory. O(n^2 m) for the greedy's memory checks.
"""

from __future__ import annotations

import math

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.timing import Orders, _finish, _run
from coopt.problems.pipeline.model import (
    Instance,
)


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


def _earliest(lists: list[list[list[int]]], heads: list[list[int]]) -> tuple:
    """(slot, device, list index, entry index) of the earliest unprocessed entry of any device
    (ties: the lower device, then the lower list index)."""
    p, kinds = len(lists), len(lists[0])
    return min(
        (lists[d][t][heads[d][t]] if heads[d][t] < len(lists[d][t]) else math.inf, d, t, heads[d][t])
        for d in range(p) for t in range(kinds)
    )


def _ready(lists: list[list[list[int]]], d: int, t: int, j: int) -> int:
    """The last slot of the entries that entry j of list t on device d depends on: its input on
    the neighbouring device, the previous pass of its micro-batch, the B before a W, and the entry
    before it in its list."""
    p = len(lists)
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
    return ready


def _earliest_idle(
    lists: list[list[int]], occupied: list[bool], budget: int, ready: int, t: int, j: int, when: int
) -> int:
    """The first idle slot of one device after ``ready`` and before ``when`` where entry j of list
    t keeps the device's peak within ``budget``, else ``when``; each slot is tried in place (the
    peak is computed with the entry moved there)."""
    for slot in range(ready + 1, when):
        if not occupied[slot]:
            lists[t][j] = slot
            if _slot_memory(lists) <= budget:
                return slot
    return when


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
        when, d, t, j = _earliest(lists, heads)
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
        when, d, t, j = _earliest(lists, heads)
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
        lists[d][t][j] = _earliest_idle(lists[d], occupied[d], budget, _ready(lists, d, t, j), t, j, when)
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
