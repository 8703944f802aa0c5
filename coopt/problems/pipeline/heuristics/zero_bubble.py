"""Zero Bubble's own constructions, read from the authors' ``scheduler/zb.py`` and
``scheduler/zbv.py`` and rewritten: the automatic one-chunk scheduler (:func:`zb_auto`, 8 switch
variants of ``manual_order``) and the V schedule of two chunks per device (:func:`zb_v`, the four fill
variants of ``try_v_schedule``, each retried with the bubbles of the best as approved bubbles).

Guarantee: each variant is built pass by pass within its memory limit (the cap, and p micro-batches of
activations for ZB-V) and timed by the shared simulator; the least span wins. O(p m) per variant.
"""

from __future__ import annotations

from collections import deque

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.timing import Orders, _finish, _need_single_chunk, _need_split, _run
from coopt.problems.pipeline.model import (
    Instance,
    PassKey,
)


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
    return _AutoOrders(instance, bubble_first, prefer_b, greedy).build()


class _AutoOrders:
    """The state of one ``manual_order`` pass: per stage the passes placed so far (``count``), the
    clock, the activation level and the bubble (idle time after the first forward)."""

    def __init__(self, instance: Instance, bubble_first: bool, prefer_b: bool, greedy: bool):
        p, m = instance.stages, instance.microbatches
        self.p, self.m, self.lag = p, m, instance.lag_s
        self.bubble_first, self.prefer_b, self.greedy = bubble_first, prefer_b, greedy
        self.cost, self.delta = _costs(instance)
        self.limit = [
            min(instance.cap(s), 3 * m * instance.a(s)) * (1 + 1e-9) for s in range(p)
        ]
        self.count = {x: [0] * p for x in ("F", "B", "W")}
        self.now = [0.0] * p
        self.mem = [0.0] * p
        self.bubble = [0.0] * p
        self.end: dict[PassKey, float] = {}
        self.orders: Orders = {s: [] for s in range(p)}

    def build(self) -> Orders:
        p, m, count = self.p, self.m, self.count
        for i in range(m):
            if i == 0:
                self._first_round()
            else:
                self._round(i)
        for s in range(p):
            while count["W"][s] < m:
                self.put(s, "W")
        return self.orders

    def arrival(self, x: PassKey) -> float:
        """The end of the pass ``x`` waits for; a variant whose stage runs ahead of its input (a
        cap that lets stage s take a forward stage s - 1 has not run) is stuck."""
        if x not in self.end:
            raise _ZbvStuck
        return self.end[x] + self.lag

    def put(self, s: int, x: str) -> None:
        count, now, cost = self.count, self.now, self.cost
        j = count[x][s]
        t = idle_free = now[s] + cost[x][s]
        if s > 0 and x == "F":
            t = max(t, self.arrival(("F", s - 1, j)) + cost[x][s])
        if s < self.p - 1 and x == "B":
            t = max(t, self.arrival(("B", s + 1, j)) + cost[x][s])
        if count["F"][s] > 0:
            self.bubble[s] += t - idle_free
        now[s] = self.end[(x, s, j)] = t
        self.mem[s] += self.delta[x][s]
        self.orders[s].append((x, s, j))
        count[x][s] += 1

    def put_w(self, s: int) -> None:
        if self.count["W"][s] >= self.count["B"][s]:
            raise _ZbvStuck
        self.put(s, "W")

    def fill(self, s: int, source: float) -> None:
        """W passes into the wait for the input that arrives at ``source`` (lines 238-255): all
        that end by then, and one more where the wait exceeds the bubble budget (or, with
        ``greedy``, also where it does not)."""
        count, now = self.count, self.now
        while count["W"][s] < count["B"][s] and now[s] + self.cost["W"][s] <= source:
            self.put(s, "W")
        waiting = count["W"][s] < count["B"][s] and now[s] < source
        if waiting and (self.greedy or source - now[s] > max(self.bubble) - self.bubble[s]):
            self.put(s, "W")

    def _first_round(self) -> None:
        """Micro-batch 0 through every stage, the warm-up forwards, then the first backwards."""
        p = self.p
        for s in range(p):
            self.put(s, "F")
        extra = self._warmup()
        for s in range(p):
            for _ in range(extra[s]):
                self.put(s, "F")
        for s in range(p - 1, -1, -1):
            self.put(s, "B")

    def _warmup(self) -> list[int]:
        """Extra forwards per stage before its first backward (lines 151-187): as many as fit the
        memory limit before the backward comes back, none more than the stage before takes."""
        p, m, lag, cost, delta = self.p, self.m, self.lag, self.cost, self.delta
        count = self.count
        extra = [0] * p
        back = 0.0
        for s in range(p - 1, -1, -1):
            if s == p - 1:
                back = self.end[("F", s, 0)] + cost["B"][s]
                continue
            level, clock = self.mem[s], self.now[s]
            while count["F"][s] + extra[s] < m and level + delta["F"][s] <= self.limit[s]:
                if self.bubble_first and clock + cost["F"][s] > back + lag:
                    break
                if not self.bubble_first and clock >= back + lag:
                    break
                level += delta["F"][s]
                clock += cost["F"][s]
                extra[s] += 1
            back = max(clock, back + lag) + cost["B"][s]
        for s in range(1, p):
            while extra[s] > 0 and extra[s] >= extra[s - 1] and count["F"][s] + extra[s] < m:
                extra[s] -= 1
        return extra

    def _wants_forward(self, s: int) -> bool:
        """Stage s takes a forward this round (``prioritize_b`` may skip it, lines 188-230)."""
        count, now, cost, delta = self.count, self.now, self.cost, self.delta
        if count["F"][s] >= self.m:
            return False
        if s + 1 < self.p and count["F"][s] >= count["F"][s + 1] + 2 and self.prefer_b:
            next_fb = now[s + 1] + cost["F"][s + 1] + cost["B"][s + 1] + self.lag
            if now[s] >= next_fb:
                return False
            w_cost, w_count, level = 0.0, 0, self.mem[s] + delta["F"][s]
            while level > self.limit[s] and count["W"][s] + w_count < count["B"][s]:
                w_cost += cost["W"][s]
                level += delta["W"][s]
                w_count += 1
            if now[s] + cost["F"][s] + w_cost <= next_fb:
                return True
            if next_fb - now[s] <= max(self.bubble) - self.bubble[s]:
                return False
        return True

    def _round(self, i: int) -> None:
        """One F per stage that wants one (none past a stage that does not), then one B per stage
        from the last back, W passes first where memory or the wait for the input asks (lines
        188-286)."""
        p, count, mem, delta, limit = self.p, self.count, self.mem, self.delta, self.limit
        want = [int(self._wants_forward(s)) for s in range(p)]
        for s in range(p - 2, -1, -1):
            want[s] = min(want[s], want[s + 1])
        for s in range(p):
            if not want[s]:
                continue
            while mem[s] + delta["F"][s] > limit[s]:
                self.put_w(s)
            if s > 0:
                self.fill(s, self.arrival(("F", s - 1, count["F"][s])))
            self.put(s, "F")
        for s in range(p - 1, -1, -1):
            while mem[s] + delta["B"][s] > limit[s]:
                self.put_w(s)
            if s + 1 < p:
                self.fill(s, self.arrival(("B", s + 1, i)))
            if s == 0 and count["F"][s] == self.m:
                while count["W"][s] < count["B"][s]:
                    self.put(s, "W")
            self.put(s, "B")


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


def _costs(instance: Instance) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per kind, the duration of a pass of virtual stage s and the change of its device's kept
    activations at it, for s < p (the first chunk of device s)."""
    p = instance.stages
    cost = {kind: [instance.duration((kind, s, 0)) for s in range(p)] for kind in ("F", "B", "W")}
    delta = {
        "F": [instance.a(s) for s in range(p)],
        "B": [-(instance.a(s) - instance.a_w(s)) for s in range(p)],
        "W": [-instance.a_w(s) for s in range(p)],
    }
    return cost, delta


class _ZbvStuck(Exception):
    """The ZB-V construction cannot continue within the memory limit."""


def _zb_v_orders(
    instance: Instance, limit: list[float], fill_f: bool, fill_b: bool, approved: list[float] | None
) -> tuple[Orders, float]:
    """One ``try_v_schedule`` pass, and where its largest bubble exceeds the approved ones, the
    pass again with its bubbles approved (lines 243-249), whichever has the smaller largest bubble.
    Counters per device: F of chunk 0/1, B of chunk 0/1 (B chunk 0 is the *second* model chunk,
    as in the authors' numbering), W of chunk 0/1."""
    build = _VOrders(instance, limit, fill_f, fill_b, approved)
    orders = build.run()
    worst = build.max_bubble()
    if build.top_approved < 0 or worst < build.top_approved:
        try:
            again, again_bubble = _zb_v_orders(instance, limit, fill_f, fill_b, list(build.bubble))
        except _ZbvStuck:
            again = None
        if again is not None and again_bubble < worst:
            return again, again_bubble
    return orders, worst


class _VOrders:
    """The state of one ``try_v_schedule`` pass: per device the passes placed per (kind, chunk)
    (``count``), the clock, the activation level, the bubble and the B chunks whose W is pending."""

    def __init__(
        self, instance: Instance, limit: list[float], fill_f: bool, fill_b: bool, approved: list[float] | None
    ):
        p = instance.stages
        self.p, self.m, self.lag = p, instance.microbatches, instance.lag_s
        self.limit, self.fill_f, self.fill_b = limit, fill_f, fill_b
        self.cost, self.delta = _costs(instance)
        self.count = [[0] * 6 for _ in range(p)]
        self.end: dict[tuple[str, int, int, int], float] = {}
        self.now = [0.0] * p
        self.mem = [0.0] * p
        self.bubble = [0.0] * p
        self.pending: list[deque] = [deque() for _ in range(p)]
        self.orders: Orders = {d: [] for d in range(p)}
        self.approved = approved or [-1.0] * p
        self.top_approved = max(self.approved)

    def run(self) -> Orders:
        self._warm_up()
        self._catch_up()
        for _ in range(2 * self.m):
            self._backward_round()
            self._forward_round()
        for d in range(self.p):
            while self.pending[d]:
                self.put_w(d)
        return self.orders

    def stage(self, c: int, d: int, kind: str) -> int:
        """Virtual stage of chunk index c on device d (B/W indices count from the V's end)."""
        model_chunk = c if kind == "F" else 1 - c
        return d if model_chunk == 0 else 2 * self.p - 1 - d

    def max_bubble(self, d: int = -1) -> float:
        worst = max(self.bubble)
        return max(worst, self.top_approved - self.approved[d]) if d >= 0 else worst

    def put(self, kind: str, c: int, d: int) -> None:
        slot = _V_INDEX[kind] * 2 + c
        count, end, now, mem = self.count, self.end, self.now, self.mem
        j = count[d][slot]
        if j >= self.m or mem[d] + self.delta[kind][d] > self.limit[d]:
            raise _ZbvStuck
        t = now[d] + self.cost[kind][d]
        idle_free = t
        if kind != "W":
            source = None
            if c == 1 and d < self.p - 1:
                source = (kind, 1, d + 1, j)
            elif c == 0 and d > 0:
                source = (kind, 0, d - 1, j)
            if source is not None:
                if source not in end:
                    raise _ZbvStuck
                t = max(t, end[source] + self.lag + self.cost[kind][d])
        if count[d][0] > 0:
            self.bubble[d] += t - idle_free
        end[(kind, c, d, j)] = t
        now[d] = t
        mem[d] += self.delta[kind][d]
        self.orders[d].append((kind, self.stage(c, d, kind), j))
        if kind == "B":
            self.pending[d].append(c)
        count[d][slot] += 1

    def put_w(self, d: int) -> None:
        if not self.pending[d]:
            raise _ZbvStuck
        self.put("W", self.pending[d].popleft(), d)

    def ended(self, kind: str, c: int, d: int, j: int) -> float:
        return self.end.get((kind, c, d, j), -1.0)

    def _warm_up(self) -> None:
        """One first-chunk F per device, then second-chunk F's from the last device back, each
        device filling first-chunk F's while they fit before its second-chunk F can start (lines
        121-131)."""
        p, count, mem, now = self.p, self.count, self.mem, self.now
        for d in range(p):
            self.put("F", 0, d)
        for d in range(p - 1, -1, -1):
            if d == p - 1:
                self.put("F", 1, d)
                continue
            ready = self.ended("F", 1, d + 1, 0) + self.lag
            while (mem[d] + self.delta["F"][d] * (2 + 2 * d) <= self.limit[d]
                   and now[d] + self.cost["F"][d] <= ready and count[d][0] < self.m):
                for e in range(d + 1):
                    self.put("F", 0, e)
            self.put("F", 1, d)

    def _catch_up(self) -> None:
        """The devices catch up in alternating chunks (lines 134-143)."""
        p, m, count = self.p, self.m, self.count
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
                        self.put("F", chunk, e)
                chunk = 1 - chunk

    def _fill_wait(self, d: int, source: float, has_source: bool, one_more: bool) -> None:
        """Pending W's into the wait for the input that arrives at ``source`` + lag, and one more
        where the wait exceeds the largest bubble (``fill_b`` / ``fill_f``)."""
        pending, now = self.pending[d], self.now
        while pending and has_source and source + self.lag >= now[d] + self.cost["W"][d]:
            self.put_w(d)
        if pending and source + self.lag - now[d] > self.max_bubble(d) - self.bubble[d] and one_more:
            self.put_w(d)

    def _backward_round(self) -> None:
        """W passes first where the next B would not fit; then the B's of the second chunk
        (reversed), then of the first (lines 155-195)."""
        p, count = self.p, self.count
        for d in range(p):
            while self.mem[d] + self.delta["B"][d] > self.limit[d]:
                self.put_w(d)
        first, second = [], []
        for d in range(p):
            if count[d][3] >= count[d][2]:
                first.append(d)
            elif d == p - 1 or self.ended("B", 1, d + 1, count[d][3]) >= 0 or count[d][2] >= self.m:
                second.append(d)
            else:
                first.append(d)
        for d, c in [(d, 1) for d in reversed(second)] + [(d, 0) for d in first]:
            source = -1.0
            has_source = False
            if c == 1 and d < p - 1:
                source, has_source = self.ended("B", 1, d + 1, count[d][3]), True
            if c == 0 and d > 0:
                source, has_source = self.ended("B", 0, d - 1, count[d][2]), True
            self._fill_wait(d, source, has_source, c == 1 or self.fill_b)
            self.put("B", c, d)

    def _forward_round(self) -> None:
        """One F per device by chunk readiness, W's first where it would not fit (lines 196-230)."""
        p, m, count = self.p, self.m, self.count
        for d in range(p):
            if count[d][1] >= m:
                continue
            item = None
            if count[d][1] >= count[d][0]:
                item = 0
            elif d == p - 1 or self.ended("F", 1, d + 1, count[d][1]) >= 0:
                item = 1
            elif count[d][0] < m and (d == 0 or self.ended("F", 0, d - 1, count[d][0]) >= 0):
                item = 0
            if item is None:
                continue
            while self.mem[d] + self.delta["F"][d] > self.limit[d]:
                self.put_w(d)
            source, has_source = -1.0, False
            if item == 0 and d > 0:
                source, has_source = self.ended("F", 0, d - 1, count[d][0]), True
            if item == 1 and d < p - 1:
                source, has_source = self.ended("F", 1, d + 1, count[d][1]), True
            self._fill_wait(d, source, has_source, self.fill_f)
            self.put("F", item, d)


_V_INDEX = {"F": 0, "B": 1, "W": 2}
