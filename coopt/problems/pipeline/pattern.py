"""Pattern schedules: a cheap primal for the crossing structure, part of the warm start.

Where the pair table of :mod:`.crossing` applies (keep-only, one chunk per device, a cap,
makespan, durations on a common grid ``q``) and one stage ``s`` (the largest memory fill) holds
``n_s <= 3`` micro-batches, the good schedules of the generator's size 16 seed 0 enter stage s in
a repeating pattern of offsets ``(d_0, ..., d_{n-1})``: the 692 schedule of the local search every
62 with (10, 19, 33), a 682 schedule every 60 with (16, 16, 28). Each pattern costs one or two
list schedules:

* :func:`admitted` / :func:`periodic_patterns`: the patterns of one period whose pairs the
  crossing table admits with every trip in ``[R_s, period - T_W]`` (a necessary condition for a
  zero-drift repeat; the table of :func:`.crossing.crossing_table` says which offsets let two
  micro-batches in flight cross without waiting), with the trips ``tau`` that fit;
* :func:`crossing_orders`: for each two micro-batches in flight together, the order ``sigma`` of
  the pair table (on the stages s..sigma-1 the later one's forward runs before the earlier one's
  backward, after it from sigma on) whose trips fit ``tau``;
* :func:`entry_schedule`: a list schedule in which F(s, j) starts no earlier than the pattern's
  j-th entry and everything else runs as early as the lanes (FIFO per (kind, stage)), the data
  flow, the caps and the given crossing orders allow, B before F before W, a W deferred where it
  would delay a forward or backward that is ready before it ends (unless the cap blocks the
  next forward); without orders the crossings fall out greedily;
* :func:`pattern_incumbent`: the best checker-accepted schedule over the patterns of the
  shortest admitted period: greedy crossings for the first ``limit`` patterns, the pair table's
  crossings for all of them.

Greedy crossings lose on (16, 16, 28): they let each micro-batch's forward wave run ahead of the
earlier one's backward wherever it is ready first, and the entries slip by 2-4 (706). Model P's
682 schedule crosses every pair exactly as the pair table's least-sum order for the trips
(58, 58, 58) says (sigma 12, 9, 8 and 5 at the offsets 16, 28, 32 and 44), and the list schedule
with those orders and the entries anchored so that F(s, n) may enter at its earliest (F(s, 0)'s
release plus R_s + T_W) gives 682 (1.8 CPU s for all of :func:`pattern_incumbent`; pinned by
benchmarks/regression/pipeline_pattern.py).

Nothing here is a bound or a proof: the schedules are candidates for the warm start
(:func:`.warm.incumbent`), and every one is judged by the checker before it is used. The screens
(``late`` of :func:`entry_schedule`, the tail test of :func:`pattern_incumbent`) only skip
candidates; they cannot make a schedule wrong.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence

from coopt.problem import Solution
from coopt.problems.pipeline.bound import _fill, _room, releases, tails
from coopt.problems.pipeline.crossing import applies as crossing_applies
from coopt.problems.pipeline.crossing import crossing_table, pair_trips, round_trip
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.model import Instance, PassKey, Timed, check, to_solution

#: At most this many patterns are tried with greedy crossings by :func:`pattern_incumbent` (about
#: 0.02 CPU s each at p = 16, m = 32; the shortest admitted period of size 16 seed 0 has 111,
#: the best of them for the greedy list schedule, 684, is the 11th; with the pair table's
#: crossings every pattern is tried, 682 is the 45th).
PATTERN_LIMIT = 40

#: Periods tried above the shortest conceivable one, R_s + T_W, before giving up.
PERIOD_REACH = 4

_RANK = {"B": 0, "F": 1, "W": 2}


def token_stage(instance: Instance) -> int | None:
    """The stage whose entries a pattern fixes: the largest memory fill among the stages that hold
    fewer micro-batches than there are, if it holds at most three; else None (also where
    :func:`.crossing.applies` fails or some stage's cap holds no forward)."""
    if not crossing_applies(instance):
        return None
    if any(_room(instance, k) < 1 for k in range(instance.virtual_stages)):
        return None  # some forward never fits its cap: no schedule at all
    fill = {s: _fill(instance, s) for s in range(instance.virtual_stages)}
    binding = [s for s, f in fill.items() if f is not None and math.isfinite(f)
               and _room(instance, s) < instance.microbatches]
    if not binding:
        return None
    s = max(binding, key=lambda k: fill[k])
    return s if 2 <= _room(instance, s) <= 3 else None


def admitted(instance: Instance, s: int, period: int) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Entry offsets (d_0, ..., d_{n-1}) of stage s (units of q, n = n_s micro-batches in flight,
    summing to ``period``; O(period^(n-1)) of them, so for n <= 3) that the crossing table admits
    as a repeating pattern, each with the first trips (tau_0, ..., tau_{n-1}) in
    [R_s, period - T_W] (F(s, j + n) waits for W(s, j)) that dominate a Pareto pair of the table
    for every two micro-batches fewer than n apart (lexicographic order). A necessary condition
    only."""
    q = time_unit(instance)
    n = min(_room(instance, s), instance.microbatches)
    R = round(round_trip(instance, s) / q)
    last = period - round(instance.t_w(s) / q)
    table = crossing_table(instance, s)

    def fits(d: int, first: int, second: int) -> bool:
        return d >= R or any(first >= a and second >= b for a, b in table.get(d, []))

    for cut in itertools.combinations(range(1, period), n - 1):
        d = tuple(b - a for a, b in zip((0, *cut), (*cut, period), strict=True))
        for tau in itertools.product(range(R, last + 1), repeat=n):
            if all(fits(sum(d[(j + h) % n] for h in range(g)), tau[j], tau[(j + g) % n])
                   for j in range(n) for g in range(1, n)):
                yield d, tau
                break


def periodic_patterns(instance: Instance, s: int, period: int) -> Iterator[tuple[int, ...]]:
    """The offsets of :func:`admitted`, without their trips."""
    for d, _ in admitted(instance, s, period):
        yield d


def crossing_orders(instance: Instance, s: int, d: Sequence[int], tau: Sequence[int],
                    pairs: dict[tuple[int, int], tuple[float, float] | None] | None = None
                    ) -> dict[tuple[int, int], int]:
    """For the pattern ``d`` with trips ``tau`` (:func:`admitted`), the crossing order of every
    two micro-batches i < k < i + n in flight together: the ``sigma`` of the pair table (the
    stages s..sigma-1 on which F(t, k) runs before B(t, i), :mod:`.crossing`) whose trips, for
    their offset, fit (tau_i, tau_k), of least sum (ties: the lowest sigma); pairs at least R_s
    apart get none. Keyed by (i, k) for i < m; ``pairs`` caches the table's trips per (offset,
    sigma) across calls. O(m n + n^2 K^2)."""
    q = time_unit(instance)
    n, m, K = len(d), instance.microbatches, instance.virtual_stages
    R = round(round_trip(instance, s) / q)
    order: dict[tuple[int, int], int] = {}
    pairs = {} if pairs is None else pairs
    for j in range(n):
        for g in range(1, n):
            delta = sum(d[(j + h) % n] for h in range(g))
            if delta >= R:
                continue
            fitting = []
            for sigma in range(s, K + 1):
                if (delta, sigma) not in pairs:
                    pairs[(delta, sigma)] = pair_trips(instance, s, delta * q, sigma)
                trips = pairs[(delta, sigma)]
                if (trips is not None and round(trips[0] / q) <= tau[j]
                        and round(trips[1] / q) <= tau[(j + g) % n]):
                    fitting.append((trips[0] + trips[1], sigma))
            if fitting:
                sigma = min(fitting)[1]
                order.update({(i, i + g): sigma for i in range(j, m - g, n)})
    return order


def entry_schedule(instance: Instance, s: int, entries: Sequence[float],
                   crossings: Mapping[tuple[int, int], int] | None = None, late: float = math.inf
                   ) -> Timed | None:
    """A list schedule with F(s, j) at ``entries[j]`` or later (module docstring); None when the
    caps (or ``crossings`` against the caps) leave no pass to start, or when a token forward
    F(s, j) would start more than ``late`` after ``entries[j]`` (a screen: the caller gives up on
    a pattern the schedule has fallen behind). Keep-only, one chunk per device (stage k on device
    k). ``crossings`` (:func:`crossing_orders`) fixes, for each pair (i, k) in it, on every stage
    t >= s, F(t, k) before B(t, i) for t < sigma and after it from sigma on (extra precedences).

    Each step scans every device's three lane heads and starts the pass of earliest start (lowest
    device on ties); a forward is a candidate only where its activation fits the cap with what
    the device holds (releases are booked at dispatch, and a device's next pass starts after its
    previous one ends, so they precede it). O(n K) for n passes on K stages."""
    K, m = instance.virtual_stages, instance.microbatches
    kinds = instance.kinds
    dur = {x: instance.duration(x) for x in instance.passes()}
    preds = {x: list(instance.predecessors(x)) for x in dur}
    for (i, k), sigma in (crossings or {}).items():
        for t in range(s, K):
            if t < sigma:
                preds[("B", t, i)].append((("F", t, k), 0.0))
            else:
                preds[("F", t, k)].append((("B", t, i), 0.0))
    start: dict[PassKey, float] = {}
    end: dict[PassKey, float] = {}
    nxt = {(kind, k): 0 for kind in kinds for k in range(K)}
    free = [0.0] * K
    level = [0.0] * K
    room = [instance.cap_room(k) * (1 + 1e-9) for k in range(K)]
    a, a_w = [instance.a(k) for k in range(K)], [instance.a_w(k) for k in range(K)]

    def choose(k: int) -> tuple[float, int, PassKey] | None:
        """Device k's next pass (its start, k, the pass), or None: a function of device k's state
        and of the ends of its lane heads' predecessors (on k - 1, k and k + 1)."""
        blocked = nxt[("F", k)] < m and level[k] + a[k] > room[k]
        cands = []
        for kind in kinds:
            j = nxt[(kind, k)]
            x = (kind, k, j)
            if j >= m or (kind == "F" and blocked) or any(y not in end for y, _ in preds[x]):
                continue
            ready = max([free[k]] + [end[y] + lag for y, lag in preds[x]])
            if kind == "F" and k == s:
                ready = max(ready, entries[j])
            cands.append((ready, _RANK[kind], x))
        if not cands:
            return None
        first = min(c[0] for c in cands)
        pick = min(c for c in cands if c[0] <= first)
        others = [c for c in cands if c[2][0] != "W"]
        if pick[2][0] == "W" and others and not blocked and min(others)[0] < first + dur[pick[2]]:
            pick = min(others)  # the W would delay a pass ready before it ends
        return pick[0], k, pick[2]

    picks = [choose(k) for k in range(K)]
    while len(start) < len(dur):
        best = min((c for c in picks if c is not None), key=lambda c: c[:2], default=None)
        if best is None:
            return None
        t, k, x = best
        if x[0] == "F" and k == s and t > entries[x[2]] + late:
            return None
        start[x], end[x] = t, t + dur[x]
        free[k] = end[x]
        kind = x[0]
        level[k] += a[k] if kind == "F" else (a_w[k] - a[k] if kind == "B" else -a_w[k])
        nxt[(kind, k)] += 1
        for h in range(max(0, k - 1), min(K, k + 2)):  # only these devices' choices change
            picks[h] = choose(h)
    return Timed(start=start, modes={}, d2h={}, h2d={})


def pattern_entries(instance: Instance, d: Sequence[int], anchor: float, first: float) -> list[float]:
    """The token stage's entries for the pattern ``d`` (units of q): ``anchor`` plus the offsets,
    none before ``first`` (F(s, 0)'s release time)."""
    q = time_unit(instance)
    return [max(first, e) for e in itertools.accumulate(
        (d[j % len(d)] * q for j in range(instance.microbatches - 1)), initial=anchor)]


def pattern_incumbent(instance: Instance, upper: float, limit: int = PATTERN_LIMIT
                      ) -> tuple[float, Solution | None]:
    """(makespan, schedule) of the best :func:`entry_schedule` the checker accepts over the
    patterns of the shortest period from R_s + T_W on (``PERIOD_REACH`` periods at most) that
    admits any; (``upper``, None) where none is shorter than ``upper`` or :func:`token_stage`
    finds no stage. Two schedules per pattern:

    * greedy crossings, F(s, 0) at its release time (the first ``limit`` patterns);
    * the pair table's crossings (:func:`crossing_orders`), entries anchored so that F(s, n)
      may enter at its earliest, F(s, 0)'s release plus R_s + T_W (``anchor`` = that minus the
      period), skipped where F(s, m-1)'s entry plus its tail (:func:`.bound.tails`) cannot beat
      the best so far, and given up (``late``) once a token forward falls behind its entry by
      the rest of that margin.

    O(P n K) for P patterns."""
    s = token_stage(instance)
    best: tuple[float, Solution | None] = (upper, None)
    if s is None:
        return best
    q = time_unit(instance)
    m = instance.microbatches
    first = releases(instance)[("F", s, 0)]
    tail = tails(instance)[("F", s, m - 1)]
    low = round((round_trip(instance, s) + instance.t_w(s)) / q)
    pairs: dict[tuple[int, int], tuple[float, float] | None] = {}

    def consider(timed: Timed | None) -> None:
        nonlocal best
        if timed is None:
            return
        solution = to_solution(instance, timed)
        if solution["objective"] < best[0] and not check(instance, solution):
            best = (solution["objective"], solution)

    for period in range(low, low + PERIOD_REACH):
        patterns = list(admitted(instance, s, period))
        for count, (d, tau) in enumerate(patterns):
            if count < limit:
                consider(entry_schedule(instance, s, pattern_entries(instance, d, first, first)))
            entries = pattern_entries(instance, d, first + (low - period) * q, first)
            margin = best[0] - entries[-1] - tail
            if margin > 1e-9:
                consider(entry_schedule(instance, s, entries, crossing_orders(instance, s, d, tau, pairs),
                                        margin))
        if patterns:
            return best
    return best
