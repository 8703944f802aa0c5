"""A compiled event simulator for the local search: per-device orders and modes on integer
pass ids, timed exactly as :func:`coopt.problems.pipeline.model.simulate` times them, and re-timed
incrementally after a move (shift a pass, exchange passes, change an item's mode), with undo.

Guarantee: after every accepted change the start times, copy times and memory levels are those the
simulator and the checker compute for the same orders and modes (tests/test_pipeline_heuristics.py
checks it after random moves, kept or undone). A move costs O(the suffixes it re-times + one device's order).
"""

from __future__ import annotations

import math

from coopt.problems.pipeline.heuristics.timing import Orders
from coopt.problems.pipeline.model import (
    KEEP,
    OFFLOAD,
    RECOMPUTE,
    Deadlock,
    Instance,
    Item,
    PassKey,
    Timed,
)

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
        p = instance.stages
        self.keys = instance.passes()
        ids = {x: i for i, x in enumerate(self.keys)}
        self._compile_graph(ids)
        self._compile_memory()
        self._place(orders, modes, ids, belady)
        self._clear_times()
        if not self.retime([0] * p):
            raise Deadlock("the per-device orders deadlock")
        self.commit()

    def _compile_graph(self, ids: dict[PassKey, int]) -> None:
        """Devices, items, kinds, durations and the data-flow edges on pass ids."""
        instance, keys = self.instance, self.keys
        m, n = instance.microbatches, len(keys)
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

    def _compile_memory(self) -> None:
        """Bytes each pass allocates and releases per mode, copy times and bytes per item, caps."""
        instance, keys = self.instance, self.keys
        m, n = instance.microbatches, len(keys)
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
        items = instance.virtual_stages * m
        self.tau_d = [instance.tau_d(i // m) for i in range(items)]
        self.tau_u = [instance.tau_u(i // m) for i in range(items)]
        self.a_o = [instance.a_o(i // m) for i in range(items)]
        self.limit = [instance.cap(d) * (1 + 1e-9) for d in range(instance.stages)]
        self.recompute = instance.allow_recompute
        self.copies = instance.allow_offload  # copy engines to time (else their state is skipped)
        self.tol = 1e-9 * max(1.0, instance.time_scale)  # the checker's tie tolerance

    def _place(self, orders: Orders, modes: dict[Item, str], ids: dict[PassKey, int], belady: bool) -> None:
        """The per-device orders (and each pass's position) and the items' modes."""
        instance = self.instance
        m, p, n = instance.microbatches, instance.stages, len(self.keys)
        self.orders = [[ids[x] for x in orders.get(d, [])] for d in range(p)]
        self.pos = [0] * n
        for order in self.orders:
            for q, i in enumerate(order):
                self.pos[i] = q
        items = instance.virtual_stages * m
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

    def _clear_times(self) -> None:
        """Pass and copy times to be set by the first :meth:`retime`, and its bookkeeping."""
        n, items = len(self.keys), len(self.mode)
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

    # -- timing ------------------------------------------------------------------------------
    def retime(self, first: list[int], seeds: list[int] | None = None) -> bool:
        """Re-time, on every device d, the order from ``first[d]`` on, closed under the data-flow
        successors; remember the old values for :meth:`undo`. ``seeds``: the passes whose place
        or duration changed (and the pass after each moved one), where the caller knows them;
        None: every pass from ``first[d]`` on. False on a deadlock (the state is then left for
        :meth:`undo`)."""
        self._close(first)
        self._clock += 1
        self._save_times(first)
        return self._sweep(first, seeds)

    def _close(self, first: list[int]) -> None:
        """Lower ``first`` until every data-flow successor of a pass to re-time is re-timed too."""
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

    def _save_times(self, first: list[int]) -> None:
        """Remember the times (and copy engine states) of every suffix about to be re-timed."""
        orders, start, end, item = self.orders, self.start, self.end, self.item
        d2h, h2d, engines, copies = self.d2h, self.h2d, self.engines, self.copies
        for d in range(len(orders)):
            q0 = first[d]
            if q0 < len(orders[d]):
                ids = orders[d][q0:]
                self._undo.append(("time", d, q0, [start[i] for i in ids], [end[i] for i in ids],
                                   [(d2h[item[i]], h2d[item[i]]) for i in ids] if copies else None,
                                   engines[d][q0:] if copies else None))

    def _sweep(self, first: list[int], seeds: list[int] | None) -> bool:
        """Time the suffixes from ``first`` on, device after device, each as far as its passes'
        predecessors are timed, until all are (True) or none can go on (False: a deadlock)."""
        orders, end, engines = self.orders, self.end, self.engines
        p = len(orders)
        at = list(first)
        free = [end[orders[d][at[d] - 1]] if at[d] else 0.0 for d in range(p)]
        eng = [engines[d][at[d]] if at[d] < len(engines[d]) else (0.0, 0.0) for d in range(p)]
        sizes = [len(o) for o in orders]
        remaining = sum(sizes[d] - at[d] for d in range(p))
        # Without copies a pass's times depend on its device predecessor and its data-flow
        # predecessor alone: once every changed position is re-timed and no re-timed pass moved
        # a pass still waiting, the rest keeps its times and the re-timing stops.
        # left = [changed passes still to re-time, passes still to re-time whose device or
        # data-flow predecessor moved]
        cut = not self.copies and seeds is not None
        left = [0, 0]
        if cut:
            for i in seeds:
                self._seeded[i] = self._clock
            left[0] = len(set(seeds))
        pred, pos, device, stamp, clock = self.pred, self.pos, self.device, self._stamp, self._clock
        while remaining:
            progressed = False
            for d in range(p):
                q = at[d]
                if q >= sizes[d]:
                    continue
                r = pred[orders[d][q]]
                if r >= 0 and stamp[r] != clock and pos[r] >= first[device[r]]:
                    continue  # its next pass waits for a predecessor still to be re-timed
                q, t_free, copy_free = self._advance(d, q, free[d], eng[d], first, cut, left)
                if q < 0:
                    return True
                remaining -= q - at[d]
                progressed = progressed or q > at[d]
                at[d], free[d], eng[d] = q, t_free, copy_free
            if not progressed:
                return False
        return True

    def _advance(
        self, d: int, q: int, t_free: float, copy_free: tuple[float, float], first: list[int], cut: bool,
        left: list[int],
    ) -> tuple[int, float, tuple[float, float]]:
        """Time device ``d``'s order from position ``q`` (free from ``t_free``, its copy engines
        from ``copy_free``) until a pass whose data-flow predecessor is still to be re-timed; the
        position reached and the device's and engines' free times then. Position -1: with ``cut``,
        every change is re-timed and the rest keeps its times (the re-timing is over)."""
        order, size = self.orders[d], len(self.orders[d])
        start, end, length, mode, item, kind = (
            self.start, self.end, self.length, self.mode, self.item, self.kind)
        pred, pred_lag, pos, device, succs = self.pred, self.pred_lag, self.pos, self.device, self.succs
        d2h, h2d, engines, copies = self.d2h, self.h2d, self.engines, self.copies
        clock, stamp, moved, seeded = self._clock, self._stamp, self._moved, self._seeded
        d2h_free, h2d_free = copy_free
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
                    left[0] -= 1
                elif moved[i] == clock:
                    left[1] -= 1
                if t != start[i] or e != end[i]:
                    for s in succs[i] if q + 1 == size else succs[i] + [order[q + 1]]:
                        if moved[s] != clock and seeded[s] != clock:
                            moved[s] = clock
                            left[1] += 1
            start[i] = t
            t_free = end[i] = e
            stamp[i] = clock
            if md == 2 and kind[i] == 0:
                d2h[it] = max(t_free, d2h_free)
                d2h_free = d2h[it] + self.tau_d[it]
            q += 1
            if copies:
                engines[d][q] = (d2h_free, h2d_free)
            elif cut and not left[0] and not left[1]:
                return -1, t_free, (d2h_free, h2d_free)
        return q, t_free, (d2h_free, h2d_free)

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
