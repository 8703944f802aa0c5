"""The recompute warm-up start of the local search: a FIFO list schedule that buys a deeper
warm-up with recompute (:func:`_warmup_orders`); with 1F1B's windows it is 1F1B's warm-up at any cap,
the in-flight micro-batches the cap cannot keep being recomputed.

Guarantee: the orders and recompute set fit every cap and never starve a backward (a forward is
admitted only where the micro-batches then in flight can still finish in lane order), or None on a
memory deadlock. O(n (v + log p)) for n passes.
"""

from __future__ import annotations

from collections.abc import Callable

from coopt.problems.pipeline.heuristics.evaluator import Evaluator
from coopt.problems.pipeline.heuristics.list_schedule import _Choices
from coopt.problems.pipeline.heuristics.timing import Orders
from coopt.problems.pipeline.model import (
    RECOMPUTE,
    Item,
)


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
    return _Warmup(ev, window, rank).run()


class _Warmup:
    """The state of :func:`_warmup_orders`: per (kind, stage) lane its next micro-batch, per pass its
    end (-1 before it is dispatched), per device its free time, kept bytes and the a_W held by items
    between their B and W, per item its mode."""

    def __init__(self, ev: Evaluator, window: Callable[[int], int], rank: tuple[int, ...]):
        instance = ev.instance
        self.ev, self.window, self.rank = ev, window, rank
        self.m, self.p, self.K = instance.microbatches, instance.stages, instance.virtual_stages
        kinds = len(instance.kinds)
        self.recompute = instance.allow_recompute
        self.lanes = [[(kd, k) for k in instance.stages_on(d) for kd in range(kinds)] for d in range(self.p)]
        self.head = [[0] * self.K for _ in range(kinds)]  # next micro-batch of each (kind, stage) lane
        self.end = [-1.0] * len(ev.keys)
        self.free = [0.0] * self.p
        self.level = [0.0] * self.p
        self.pending_w = [0.0] * self.p  # a_W held by items between their B and W
        self.mode = [0] * len(ev.mode)

    def run(self) -> tuple[Orders, dict[Item, str]] | None:
        ev, m = self.ev, self.m
        choices = _Choices(self.p, self.choice)
        orders: Orders = {d: [] for d in range(self.p)}
        for _ in range(len(ev.keys)):
            got = choices.pop()
            if got is None:
                return None
            (t, _), d, (i, md, turned) = got
            orders[d].append(ev.keys[i])
            self.dispatch(t, d, i, md, turned)
            for e in {ev.device[s] for s in ev.succs[i]} | {d}:
                choices.refresh(e)
        return orders, {(it // m, it % m): RECOMPUTE for it, md in enumerate(self.mode) if md}

    def dispatch(self, t: float, d: int, i: int, md: int, turned: list[int]) -> None:
        """Start pass ``i`` on device ``d`` at ``t`` in mode ``md``, the ``turned`` items recomputed."""
        ev, m, mode, level = self.ev, self.m, self.mode, self.level
        alloc, release, f_id = ev.alloc, ev.release, ev.f_id
        kd, k, j = ev.kind[i], ev.keys[i][1], ev.keys[i][2]
        it = k * m + j
        self.end[i] = self.free[d] = t + ev.length[i][md]
        self.head[kd][k] += 1
        for h in turned:
            mode[h] = 1
            level[d] -= alloc[f_id[h]][0] - alloc[f_id[h]][1]
        level[d] += alloc[i][md] - release[i][md]
        if kd == 0:
            mode[it] = md
        elif kd == 1:
            self.pending_w[d] += alloc[f_id[it]][0] - release[i][md]
        else:
            self.pending_w[d] -= release[i][md]

    def admit_forward(self, d: int, k: int, j: int) -> tuple[int, list[int]] | None:
        """(mode, the in-flight items that turn to recompute) of F(k, j) on device d, or None."""
        ev, m, mode, limit = self.ev, self.m, self.mode, self.ev.limit
        alloc, f_id, b_id = ev.alloc, ev.f_id, ev.b_id
        hb = self.head[1][k]
        if j - hb >= self.window(k):
            return None
        i = f_id[k * m + j]
        level_after, md, turned = self.level[d] + alloc[i][0], 0, []
        if level_after > limit[d]:
            if not self.recompute:
                return None
            md, level_after = 1, self.level[d] + alloc[i][1]
            for jj in range(j - 1, hb - 1, -1):
                if level_after <= limit[d]:
                    break
                it = k * m + jj
                if not mode[it]:
                    turned.append(it)
                    level_after -= alloc[f_id[it]][0] - alloc[f_id[it]][1]
            if level_after > limit[d]:
                return None
        left = level_after - self.pending_w[d]
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

    def choice(self, d: int) -> tuple | None:
        """Device d's ready lane head of earliest start, then least rank, that it may start."""
        ev, m, K, rank, end, free = self.ev, self.m, self.K, self.rank, self.end, self.free
        best = None
        for kd, k in self.lanes[d]:
            j = self.head[kd][k]
            if j >= m:
                continue
            i = (kd * K + k) * m + j
            r = ev.pred[i]
            if r >= 0 and end[r] < 0:
                continue
            t = free[d] if r < 0 else max(free[d], end[r] + ev.pred_lag[i])
            if best is not None and (t, rank[kd]) >= best[:2]:
                continue
            if kd == 0:
                got = self.admit_forward(d, k, j)
                if got is None:
                    continue
                md, turned = got
            else:
                md, turned = self.mode[k * m + j], []
                if self.level[d] + ev.alloc[i][md] > ev.limit[d]:
                    continue
            best = (t, rank[kd], i, md, turned)
        return None if best is None else (best[:2], best[2:])
