"""The local search (ours): late acceptance (Burke and Bykov's LAHC) on per-device orders and
modes, started from the best cheap schedule or the recompute warm-up, evaluated incrementally by
:class:`coopt.problems.pipeline.heuristics.evaluator.Evaluator`, and stopped at the dual bound of
:func:`coopt.problems.pipeline.bound.lower_bound` when a schedule meets it.

Guarantee: never worse than its start; feasible (checked by the same peak rule as the checker) or
``NoSolution``; deterministic for a given seed. At most ``SEARCH_MAX_MOVES`` moves of O(n) each.
"""

from __future__ import annotations

import math
import random
import time

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.bound import lower_bound
from coopt.problems.pipeline.heuristics.combined import _best_of
from coopt.problems.pipeline.heuristics.evaluator import _MODES, Evaluator
from coopt.problems.pipeline.heuristics.timing import Orders, _finish, _fits
from coopt.problems.pipeline.heuristics.warmup import _warmup_orders
from coopt.problems.pipeline.model import (
    Deadlock,
    Instance,
    parse,
)

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
    """Ours: a late-acceptance local search (Burke and Bykov's LAHC) on per-device
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
    O(p^2) per move: the time grows at least as p^2, the size of the input (measured: p^2.4,
    docs/pipeline.md, "Heuristics against the exact route"; the fits in docs/notes/pipeline.md,
    "Cost per move and the scaling family").
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
