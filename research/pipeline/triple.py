"""The triple relaxation (issue 20, sixth round): three micro-batches in flight on a token stage,
crossing exactly on the stages after it, and a dynamic program over the micro-batch sequence.

Applies where :mod:`.crossing` does (keep-only, one chunk per device, a cap, makespan, every
duration and the lag a multiple of one unit ``q``). Then some optimal schedule ``sigma*`` is FIFO
per lane (Model P's (P2)), starts every pass on the ``q`` grid (:mod:`.counts`), and meets the
release times ``r_x`` and tails ``q_x`` of :mod:`.bound`. Everything below is in units of q.

**The triple table.** Fix the token stage ``s`` and three micro-batches ``i < k < l`` whose
forwards F(s, i), F(s, k), F(s, l) start at 0, ``d1`` and ``d1 + d2``. Keep their F and B passes
on stages ``s..K-1`` (the other micro-batches and the W passes dropped, except as said below).
With FIFO per lane, on every stage t the open orders on device t are F(t, k) against B(t, i),
F(t, l) against B(t, i) and F(t, l) against B(t, k); each is a prefix of stages
(:mod:`.crossing`'s argument: if the later forward runs first on t + 1, it runs first on t),
``s..sigma_ik - 1``, ``s..sigma_il - 1``, ``s..sigma_kl - 1``, and they nest: F(t, l) before
B(t, i) puts F(t, k) < F(t, l) < B(t, i) and B(t, i) < B(t, k), so ``sigma_il <= sigma_ik`` and
``sigma_il <= sigma_kl``. Every stage's cap, restricted to the three, is read at the forward
starts: at F(t, y)'s start an earlier x of the three holds ``a`` while F(t, y) precedes B(t, x),
else ``a_W`` unless W(t, x) has ended, which puts F(t, y) at least ``T_W(t)`` after B(t, x)'s end
(W follows B on device t); the level with F(t, y)'s own ``a`` must fit the cap, and F(t, y) starts
no earlier than the least, over the fitting W choices, of their largest such end (a necessary
condition: the micro-batches outside the three only add memory). For each order choice the
earliest start of every pass is a longest path with these min-max nodes (monotone in its
inputs), so the trips ``tau_x = E_B(s, x) - S_F(s, x)`` are the least that order allows; the
table keeps, per (d1, d2), the Pareto-minimal trips over the choices whose three forwards can
start at 0, d1, d1 + d2. The restriction of ``sigma*`` to any three consecutive micro-batches
is a schedule of this problem for its own offsets and orders, so its trips dominate a point of
the table.

**The relaxation T(s).** Variables per micro-batch j: ``f_j`` (start of F(s, j), integer),
``b_j`` (end of B(s, j)), ``w_j`` (end of W(s, j)), and C:

* (T1) ``b_j >= f_j + R_s``, ``w_j >= b_j + T_W``; FIFO ``f_j >= f_{j-1} + T_F``,
  ``b_j >= b_{j-1} + T_B``, ``w_j >= w_{j-1} + T_W``;
* (T2) release times and tails: ``f_j >= r_F(s,j)``, ``b_j - T_B >= r_B(s,j)``,
  ``w_j - T_W >= r_W(s,j)``, ``C >= f_j + q_F(s,j)``, ``C >= b_j - T_B + q_B(s,j)``,
  ``C >= w_j - T_W + q_W(s,j)``;
* (T3) stage s's memory rule (:func:`.bound._memory_rule`: ``f_j >= min over the (x, y) that fit
  of max(b_{j-x-1}, w_{j-y-1})``), relaxed: with ``(x_max, y)`` the fitting option with the most
  micro-batches before their B end (``x_max = n_s - 1 >= 2``), every option x < x_max keeps only
  its B term and x_max only its W term (or its B term where a_W = 0), and as b grows with j,
  ``f_j >= min(b_{j-x_max}, w_{j-y-1})`` (stage 2 of size 16 seed 0: ``min(b_{j-2}, w_{j-3})``;
  each dropped term only weakens a lower bound);
* (T4) for every three consecutive micro-batches, ``(b - f)`` of the three dominates a point of
  the triple table at their offsets (for m = 2, the pair table of :mod:`.crossing`);
* ``C <= H``, H the makespan of a schedule the checker accepts.

**Validity.** ``sigma*``'s values meet every row with ``C = OPT <= H``: (T1) are its chains and
lanes (W follows B on device s), (T2) holds because r and q bound every FIFO schedule, (T3) is its
cap on stage s (the argument of :mod:`.bound`), (T4) the triple table's argument. So the optimum
of T(s) is at most OPT. Against X({s}) of :mod:`.crossing`: (X1)-(X3) are kept, (X4) is relaxed
to (T3), (X6) (W against later passes on device s) is dropped, and (X5) is implied where
``n_s = 3`` (a pair of consecutive micro-batches, or of two apart, is a projection of a triple,
and the pair table ignores the caps and the third micro-batch); neither relaxation contains the
other in general.

**The dynamic program** (:func:`dp_solve`) solves T(s) exactly (token stages with ``n_s >= 3``).
Micro-batches are added in order; a state after j is keyed by ``(f_{j-1}, f_j)`` and holds a
running lower bound on C, the B ends ``b_{j-x_max+1}..b_j`` and the W ends up to ``w_{j-2}``.
Adding j fixes ``f_j`` (each integer in its window ``[max(r_F, f_{j-1} + T_F), H - q_F]``) and
one table point of the triple (j-2, j-1, j): the point raises ``b_{j-2}`` and ``b_{j-1}`` (and
through FIFO the later ones) and sets ``b_j``. After that no row raises ``b_{j-2}`` again, so it
is final: ``w_{j-2}`` follows as the least W end (T1-T2 bound w from below only, and every row
reads w as a lower bound), and the rows that read only final ends are checked (the deadlines of
``b_{j-2}`` and ``w_{j-2}``, and (T3) for ``f_j``, which reads ``b_{j-x_max}`` with
``x_max >= 2`` and ``w_{j-y-1}``, ``y >= x_max``). Every row reads the B and W ends only
through lower bounds (``f >= ...``, ``C >= ...``) or as the sources of larger lower bounds, so of
two states with the same key the one whose ends and C are all no larger can continue wherever
the other can: the program keeps the Pareto-minimal states per key, and the least C at the end
is the optimum of T(s) below H (H when none is, which only the tolerance of H's schedule can
cause). Parent links give the entries ``f_j`` of an optimal solution.

**Consecutive triples that agree: T_sigma(s)** (seventh round, ``agree=True``). In ``sigma*`` the
pair (j-1, j) crosses once: its order on every stage t, F(t, j) before B(t, j-1) or not, is one
prefix ``s..sigma_{j-1,j} - 1``, which the triple (j-2, j-1, j) reads as its ``sigma_kl`` and
the triple (j-1, j, j+1) as its ``sigma_ik``. (T4) becomes (T4'): there are crossings
``sigma_{j-1,j}`` such that each triple's trips dominate a point of the table among its choices
with ``sigma_ik = sigma_{j-2,j-1}`` and ``sigma_kl = sigma_{j-1,j}``. The table keeps, per
(d1, d2) and per (sigma_ik, sigma_kl), the Pareto-minimal trips of the choices with those two
crossings (:meth:`TripleTable.ordered`; the choices are the ones above, so each group is exact
for the same reason, and a choice's trips are its longest path). Validity: the restriction of
``sigma*`` to a triple uses one choice of the table, with the crossings of ``sigma*``'s pairs,
so its trips dominate a point of that group, and the shared pair's crossing is one number in
both triples. A point of a group is a point of the table, so T_sigma(s) only removes solutions of
T(s): ``T(s) <= T_sigma(s) <= OPT``. The program's key becomes ``(f_{j-1}, f_j,
sigma_{j-1,j})`` (None before the first triple); adding j reads the group of the key's crossing
and keys the new state by the point's ``sigma_kl``. States with different crossings are never
compared (their continuations differ), so the Pareto argument above holds per key unchanged.

**What it measured** (docs/notes/pipeline.md, "The triple relaxation"): on the generator's size 16
seed 0, stage 2, T(2) = **670** (X({2}) 667, X({2, 10}) 669) in about 2 CPU minutes under load
(about 3 before the seventh round's speed-ups), so it is benchmarked (``python -m
research.pipeline.bench --triple``), not part of Model P's cut: it neither reaches the
incumbent 682 nor fits the route's 60 s. T_sigma(s) equals T(s) wherever it finished (m = 8 and
12 of that instance, size 8 seed 1) at 2-3 times its cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from coopt.problems.pipeline.bound import _fill, _room, releases, tails
from coopt.problems.pipeline.crossing import applies as crossing_applies
from coopt.problems.pipeline.crossing import round_trip
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.model import Instance

#: Trips (of i, k, l) in units of q.
Trips3 = tuple[int, int, int]
#: Per sigma_ik (None: any), the (trips, sigma_kl) Pareto-minimal per (sigma_ik, sigma_kl).
Ordered = dict[int | None, list[tuple[Trips3, int]]]

_BIG = 1 << 40  # an "infeasible" time, far above every horizon
_BATCH = 48  # (d1, d2) offsets per batch of the table's longest paths


def applies(instance: Instance) -> bool:
    """T(s) is valid: the crossing relaxation's conditions, and three micro-batches or more."""
    return crossing_applies(instance) and instance.microbatches >= 3


class TripleTable:
    """The triple table of token stage ``s`` (module docstring), computed per (d1, d2) on demand."""

    def __init__(self, instance: Instance, s: int, by_order: bool = False) -> None:
        q = time_unit(instance)
        assert q is not None
        K = instance.virtual_stages
        self.n = n = K - s
        self.tf = [round(instance.t_f(t) / q) for t in range(s, K)]
        self.tb = [round(instance.t_b(t) / q) for t in range(s, K)]
        self.tw = [round(instance.duration(("W", t, 0)) / q) if instance.split_backward else 0
                   for t in range(s, K)]
        self.up = [round(instance.lag(t, t + 1) / q) for t in range(s, K - 1)]
        self.down = [round(instance.lag(t + 1, t) / q) for t in range(s, K - 1)]
        # memory per stage in units of a: (a_W / a, room / a)
        self.mem = [(instance.a_w(t) / instance.a(t), instance.cap_room(instance.device(t)) / instance.a(t))
                    for t in range(s, K)]
        choices = [(ik, kl, il) for il in range(n + 1) for ik in range(il, n + 1) for kl in range(il, n + 1)]
        sig = np.array(choices, dtype=np.int64).reshape(-1, 3)
        self.sigma = {(0, 1): sig[:, 0], (1, 2): sig[:, 1], (0, 2): sig[:, 2]}
        self.cache: dict[tuple[int, int], list[Trips3]] = {}
        # with by_order, per (d1, d2) and sigma_ik (None: any), the (trips, sigma_kl) Pareto-minimal
        # among the choices with that (sigma_ik, sigma_kl)
        self.by_order = by_order
        self.orders: dict[tuple[int, int], Ordered] = {}

    def _fit(self, t: int, held: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Earliest start bound of a forward on stage t from its cap: ``held`` lists, per earlier
        micro-batch x of the three, (x's F..B window still open at the start, E_B(t, x));
        returns the least, over the W choices that fit, of the largest W end it waits for."""
        a_w, room = self.mem[t]
        size = len(held[0][0])
        best = np.full(size, _BIG, dtype=np.int64)
        for mask in range(1 << len(held)):
            level = np.ones(size)
            wait = np.zeros(size, dtype=np.int64)
            for x, (open_, end) in enumerate(held):
                done = (mask >> x) & 1
                level = level + np.where(open_, 1.0, 0.0 if done else a_w)
                if done:
                    wait = np.where(open_, wait, np.maximum(wait, end + self.tw[t]))
            best = np.where(level <= room, np.minimum(best, wait), best)
        return best

    def trips(self, d1: int, d2: int) -> list[Trips3]:
        """The Pareto-minimal trips of three micro-batches entering 0, d1, d1 + d2 (memoised)."""
        if (d1, d2) not in self.cache:
            self.fill([(d1, d2)])
        return self.cache[(d1, d2)]

    def fill(self, pairs: list[tuple[int, int]]) -> None:
        """Compute the table at every (d1, d2) of ``pairs`` not yet known, in batches of
        ``_BATCH`` offsets (numpy's per-call cost is paid once per batch, not per offset)."""
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in self.cache]
        for at in range(0, len(todo), _BATCH):
            self._fill(todo[at:at + _BATCH])

    def _fill(self, pairs: list[tuple[int, int]]) -> None:
        """The longest paths of every order choice at every offset of ``pairs``, at once."""
        n, tf, tb = self.n, self.tf, self.tb
        choices = len(self.sigma[(0, 1)])
        sigma = {key: np.tile(value, len(pairs)) for key, value in self.sigma.items()}
        d = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        offsets = [np.repeat(d[:, 0], choices), np.repeat(d[:, 0] + d[:, 1], choices)]
        offsets.insert(0, np.zeros_like(offsets[0]))
        SF = [[offsets[x].copy() for _ in range(n)] for x in range(3)]
        SB = [[np.zeros_like(offsets[0]) for _ in range(n)] for _ in range(3)]
        for _ in range(4 * n + 8):  # longest paths by sweeps until nothing moves
            moved = False
            for x in range(3):
                for t in range(n):
                    start = SF[x][t]
                    if t:
                        start = np.maximum(start, SF[x][t - 1] + tf[t - 1] + self.up[t - 1])
                    if x:
                        start = np.maximum(start, SF[x - 1][t] + tf[t])  # FIFO lane
                        held = []
                        for e in range(x):  # the earlier ones: before B(t, e) for t < sigma
                            first = t < sigma[(e, x)]
                            start = np.where(first, start, np.maximum(start, SB[e][t] + tb[t]))
                            held.append((first, SB[e][t] + tb[t]))
                        if 1 + x * max(1.0, self.mem[t][0]) > self.mem[t][1]:  # else no wait
                            start = np.maximum(start, self._fit(t, held))
                    if not np.array_equal(start, SF[x][t]):
                        SF[x][t], moved = start, True
            for x in range(3):
                for t in reversed(range(n)):
                    ready = SF[x][t] + tf[t] if t == n - 1 else SB[x][t + 1] + tb[t + 1] + self.down[t]
                    start = np.maximum(SB[x][t], ready)
                    if x:
                        start = np.maximum(start, SB[x - 1][t] + tb[t])
                    for y in range(x + 1, 3):  # a later forward that runs first on t
                        start = np.where(t < sigma[(x, y)], np.maximum(start, SF[y][t] + tf[t]), start)
                    if not np.array_equal(start, SB[x][t]):
                        SB[x][t], moved = start, True
            if not moved:
                break
        else:  # pragma: no cover - the graphs are acyclic, so the sweeps settle
            raise RuntimeError("triple table: longest paths did not settle")
        points = np.stack([SB[x][0] + tb[0] - offsets[x] for x in range(3)], axis=1)
        # the forwards start at their offsets, and no cap left a pass without a fitting choice
        ok = (SF[1][0] == offsets[1]) & (SF[2][0] == offsets[2]) & (points.max(axis=1) < _BIG // 2)
        for n_d, pair in enumerate(pairs):
            part = slice(n_d * choices, (n_d + 1) * choices)
            good = ok[part]
            self.cache[pair] = _pareto(points[part][good]) if good.any() else []
            if self.by_order:
                self.orders[pair] = _by_order(sigma[(0, 1)][part][good], sigma[(1, 2)][part][good],
                                              points[part][good])

    def ordered(self, d1: int, d2: int, sigma_ik: int | None) -> list[tuple[Trips3, int]]:
        """With ``by_order``: the (trips, sigma_kl) of the table at (d1, d2) whose order of the
        first two is ``sigma_ik`` (None: any), Pareto-minimal per (sigma_ik, sigma_kl)."""
        if (d1, d2) not in self.cache:
            self.fill([(d1, d2)])
        return self.orders[(d1, d2)].get(sigma_ik, [])


def _by_order(ik: np.ndarray, kl: np.ndarray, points: np.ndarray) -> Ordered:
    """Group the trips by (sigma_ik, sigma_kl), Pareto-minimal in each group; keyed by sigma_ik
    and under None all of them."""
    found: Ordered = {None: []}
    for a, b in {(int(u), int(v)) for u, v in zip(ik, kl, strict=True)}:
        group = [(p, b) for p in _pareto(points[(ik == a) & (kl == b)])]
        found.setdefault(a, []).extend(group)
        found[None].extend(group)
    return found


def _pareto(points: np.ndarray) -> list[Trips3]:
    """The Pareto-minimal rows of an integer array (n, 3), in lexicographic order. In that order
    a row is dominated exactly when an earlier kept row is no larger in the last two entries
    (an earlier row is no larger in the first; a dominated dominator is itself dominated by a
    kept one)."""
    keep: list[Trips3] = []
    for a, b, c in sorted(set(map(tuple, points.tolist()))):
        if not any(v <= b and w <= c for _, v, w in keep):
            keep.append((a, b, c))
    return keep


def _rule(a_w: float, room: float, m: int) -> tuple[int, int] | None:
    """(x_max, y): the memory rule's option with the most micro-batches still before their B
    end, and the most not yet past W with it (:func:`.bound._memory_rule`, levels in a); None
    when not one micro-batch fits."""
    if room < 1:
        return None
    x = min(math.floor(room), m) - 1  # x = m - 1 never reads a B end: the cap does not bind
    return x, (10**9 if a_w == 0 else x + math.floor((room - (x + 1)) / a_w))


def token_stages(instance: Instance) -> list[int]:
    """The stages T(s) reads (a cap of at least three micro-batches), the largest memory fill
    first (:func:`.bound._fill`)."""
    if not applies(instance):
        return []
    found = [s for s in range(instance.virtual_stages) if _room(instance, s) >= 3]
    return sorted(found, key=lambda s: -(_fill(instance, s) or 0.0))


def dp_bound(instance: Instance, s: int, upper: float, agree: bool = False) -> float:
    """The optimum of T(s) (module docstring) in seconds, capped at ``upper`` (the makespan of a
    schedule the checker accepts): a lower bound on the optimum; with ``agree``, of T_sigma(s)
    (consecutive triples agree on their shared pair's crossing order)."""
    return dp_solve(instance, s, upper, agree)[0]


def dp_solve(instance: Instance, s: int, upper: float, agree: bool = False) -> tuple[float, list[float]]:
    """(:func:`dp_bound`, the starts of F(s, j) of an optimal solution of T(s) (or T_sigma(s)) in
    seconds; empty when it has none below ``upper``)."""
    q = time_unit(instance)
    assert q is not None and applies(instance)
    m = instance.microbatches
    H = math.floor(upper / q * (1 + 1e-9))
    R = round(round_trip(instance, s) / q)
    T_F, T_B = round(instance.t_f(s) / q), round(instance.t_b(s) / q)
    T_W = round(instance.duration(("W", s, 0)) / q) if instance.split_backward else 0
    release, tail = releases(instance), tails(instance)

    def up(x: float) -> int:
        return math.ceil(x / q - 1e-9)

    rF = [up(release[("F", s, j)]) for j in range(m)]
    rB = [up(release[("B", s, j)]) + T_B for j in range(m)]  # least end of B(s, j)
    qF = [up(tail[("F", s, j)]) for j in range(m)]
    qB = [up(tail[("B", s, j)]) - T_B for j in range(m)]  # C - b_j
    if instance.split_backward:
        rW = [up(release[("W", s, j)]) + T_W for j in range(m)]
        qW = [up(tail[("W", s, j)]) - T_W for j in range(m)]
    else:
        rW, qW = [0] * m, [0] * m
    rule = _rule(instance.a_w(s) / instance.a(s), instance.cap_room(s) / instance.a(s), m)
    if s not in token_stages(instance):
        raise ValueError(f"the triple relaxation needs stage {s} to hold three micro-batches")
    assert rule is not None
    best, entries = _run(m, H, R, (T_F, T_B, T_W), (rF, rB, rW), (qF, qB, qW), rule,
                         TripleTable(instance, s, by_order=agree))
    return min(best, H) * q, [f * q for f in entries]


def _run(m: int, H: int, R: int, durations: tuple[int, int, int], release: tuple[list[int], ...],
         tail: tuple[list[int], ...], rule: tuple[int, int], table: TripleTable) -> tuple[int, list[int]]:
    """The dynamic program of the module docstring: the least C of T(s) with C <= H (or _BIG)
    and the entries f_j of a solution that attains it (or none)."""
    T_F, T_B, T_W = durations
    rF, rB, rW = release
    qF, qB, qW = tail
    x_max, y = rule
    use_w = T_W > 0 and y < m
    NB = x_max if use_w else x_max + 1  # B ends kept after j: b_{j-NB+1}..b_j
    NW = y if use_w else 1  # W ends kept after j: w_{j-1-NW}..w_{j-2}
    NONE = -_BIG
    # a state after j: key (f_{j-1}, f_j); values (C so far, B ends, W ends, (f_j, the state
    # before)), Pareto-minimal in the first three
    # (with the table's by_order, the key also carries sigma of micro-batches j - 1 and j)
    states: dict[tuple[int, int, int | None], list[tuple]] = {}
    for f in range(rF[0], H - qF[0] + 1):
        b = max(f + R, rB[0])
        if b + qB[0] <= H:
            states[(NONE, f, None)] = [((f + qF[0], *(NONE,) * (NB - 1), b, *(NONE,) * NW), (f, None))]
    for j in range(1, m):
        new: dict[tuple[int, int, int | None], list[tuple]] = {}

        if j >= 2:  # every table entry this step reads, computed in batches first
            table.fill([(fb - fa, f - fb) for (fa, fb, _), values in states.items()
                        for f in range(max(rF[j], fb + T_F, min(_floor(j, v[0], NB, rule, use_w)
                                                                for v in values)), H - qF[j] + 1)])
        for (fa, fb, order), values in states.items():
            for state in values:
                flat = state[0]
                c, bs, ws = flat[0], flat[1:NB + 1], flat[NB + 1:]
                for f in range(max(rF[j], fb + T_F, _floor(j, flat, NB, rule, use_w)), H - qF[j] + 1):
                    if j < 2:
                        points: list[tuple[Trips3, int | None]] = [((0, 0, 0), None)]
                    elif table.by_order:
                        points = table.ordered(fb - fa, f - fb, order)
                    else:
                        points = [(p, None) for p in table.trips(fb - fa, f - fb)]
                    for p, order_next in points:
                        b = list(bs)  # b_{j-NB}..b_{j-1}
                        if j >= 2:
                            b[-2] = max(b[-2], fa + p[0])
                            b[-1] = max(b[-1], fb + p[1], b[-2] + T_B)
                        b_new = max(f + p[2], f + R, b[-1] + T_B, rB[j])
                        if b[-1] + qB[j - 1] > H or b_new + qB[j] > H:
                            continue
                        cc, w = max(c, f + qF[j]), ws
                        if j >= 2:  # b_{j-2} is final: its W, the deadlines, F(s, j)'s cap
                            wv = max(b[-2] + T_W, ws[-1] + T_W, rW[j - 2])
                            cc = max(cc, b[-2] + qB[j - 2], wv + qW[j - 2])
                            w = (*ws[1:], wv)  # w_{j-NW-1}..w_{j-2}
                        if cc > H:
                            continue
                        if f < _cap(j, b, w, rule, use_w):
                            continue
                        value = ((cc, *b[1:], b_new, *w), (f, state))
                        _insert(new.setdefault((fb, f, order_next), []), value)
        states = new
        if not states:
            return _BIG, []
    best, last = _BIG, None
    for values in states.values():  # b_{m-2} and b_{m-1} are final
        for state in values:
            c, bs, wv = state[0][0], state[0][1:NB + 1], state[0][-1]
            for jj, bv in ((m - 2, bs[-2]), (m - 1, bs[-1])):
                wv = max(bv + T_W, wv + T_W, rW[jj])
                c = max(c, bv + qB[jj], wv + qW[jj])
            if c < best:
                best, last = c, state
    entries = []
    while last is not None:
        entries.append(last[1][0])
        last = last[1][1]
    return best, entries[::-1]


def _cap(j: int, b: Sequence[int], w: Sequence[int], rule: tuple[int, int], use_w: bool) -> int:
    """The least f_j that (T3), F(s, j)'s cap as :func:`_run` relaxes it, accepts, given the B ends
    ``b`` = b_{j-NB}..b_{j-1} and the W ends ``w`` ending at w_{j-2}: the options x < x_max read
    b_{j-x_max}, option x_max reads w_{j-y-1} (its B end dropped, below its W end's), or
    b_{j-x_max-1} where W ends are not kept."""
    x_max, y = rule
    least = b[-x_max] if j - x_max >= 0 else -_BIG
    if use_w:
        return min(least, w[-y] if j - y - 1 >= 0 else -_BIG)
    return min(least, b[-x_max - 1] if j - x_max - 1 >= 0 else -_BIG)


def _floor(j: int, flat: tuple[int, ...], NB: int, rule: tuple[int, int], use_w: bool) -> int:
    """The least f_j that F(s, j)'s cap in :func:`_run` can accept from a state (C, its NB B
    ends, its W ends up to w_{j-3}): :func:`_cap` before the table point, which only raises
    b_{j-x_max} (x_max >= 2) and adds w_{j-2}, which the cap never reads (y >= 2), so every
    point rejects an f below it."""
    bs, ws = flat[1:NB + 1], flat[NB + 1:]
    return _cap(j, bs, (*ws[1:], -_BIG), rule, use_w)


def _insert(values: list[tuple], value: tuple) -> None:
    """Add ``value`` ((C, B ends..., W ends...), link) to a list of Pareto-minimal ones in the
    first (smaller is better)."""
    flat = value[0]
    for other in values:
        if all(u <= v for u, v in zip(other[0], flat, strict=True)):
            return
    values[:] = [o for o in values if not all(v <= u for u, v in zip(o[0], flat, strict=True))]
    values.append(value)
