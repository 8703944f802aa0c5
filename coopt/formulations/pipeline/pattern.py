"""Pattern schedules (issue 20, fifth round): a cheap primal for the crossing structure.

Where the crossing relaxation of :mod:`.crossing` applies (keep-only, one chunk per device, a
cap, makespan, durations on a common grid ``q``) and one stage ``s`` (the largest memory fill)
holds ``n_s <= 3`` micro-batches, the good schedules of the generator's size 16 seed 0 enter
stage s in a repeating pattern of offsets ``(d_0, ..., d_{n-1})``: the 692 schedule of the local
search every 62 with (10, 19, 33), the 682 schedule of the fourth round every 60 with
(16, 16, 28). The fourth round found the latter by solving Model P once per pattern (71-74 CPU
s); here each pattern costs one list schedule instead:

* :func:`periodic_patterns`: the patterns of one period whose pairs the crossing table admits
  with every trip in ``[R_s, period - T_W]`` (a necessary condition for a zero-drift repeat; the
  table of :func:`.crossing.crossing_table` says which offsets let two micro-batches in flight
  cross without waiting);
* :func:`entry_schedule`: a list schedule in which F(s, j) starts no earlier than the pattern's
  j-th entry and everything else runs as early as the lanes (FIFO per (kind, stage)), the data
  flow and the caps allow, B before F before W, a W deferred where it would delay a forward or
  backward that is ready before it ends (unless the cap blocks the next forward);
* :func:`pattern_incumbent`: the best checker-accepted schedule over the patterns of the
  shortest admitted period (at most ``limit`` patterns, in the order the generator yields them).

Nothing here is a bound or a proof: the schedules are candidates for Model P's warm start
(:func:`.milp.incumbent`), and every one is judged by the checker before it is used. On size 16
seed 0 the list schedule reaches 684 (pattern (6, 23, 31), period 60) where Model P with the
pattern fixed reached 682: the greedy timing of the downstream crossings loses 2 there.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence

from coopt.formulations.pipeline.bound import _fill, _room, releases
from coopt.formulations.pipeline.counts import time_unit
from coopt.formulations.pipeline.crossing import applies as crossing_applies
from coopt.formulations.pipeline.crossing import crossing_table, round_trip
from coopt.formulations.pipeline.model import Instance, PassKey, Timed, check, to_solution
from coopt.problem import Solution

#: At most this many patterns are tried by :func:`pattern_incumbent` (about 0.07 CPU s each at
#: p = 16, m = 32; the shortest admitted period of size 16 seed 0 has 111, the best of them for
#: the list schedule, 684, is the 11th).
PATTERN_LIMIT = 40

#: Periods tried above the shortest conceivable one, R_s + T_W, before giving up.
PERIOD_REACH = 4

_RANK = {"B": 0, "F": 1, "W": 2}


def token_stage(instance: Instance) -> int | None:
    """The stage whose entries a pattern fixes: the largest memory fill among the stages that hold
    fewer micro-batches than there are, if it holds at most three; else None (also where
    :func:`.crossing.applies` fails)."""
    if not crossing_applies(instance):
        return None
    fill = {s: _fill(instance, s) for s in range(instance.virtual_stages)}
    binding = [s for s, f in fill.items() if f is not None and math.isfinite(f)
               and _room(instance, s) < instance.microbatches]
    if not binding:
        return None
    s = max(binding, key=lambda k: fill[k])
    return s if 2 <= _room(instance, s) <= 3 else None


def periodic_patterns(instance: Instance, s: int, period: int) -> Iterator[tuple[int, ...]]:
    """Entry offsets (d_0, ..., d_{n-1}) of stage s (units of q, n = n_s micro-batches in flight,
    summing to ``period``; O(period^(n-1)) of them, so for n <= 3) that the crossing table admits
    as a repeating pattern: some trips tau_j in [R_s, period - T_W] (F(s, j + n) waits for
    W(s, j)) dominate a Pareto pair of the table for every two micro-batches fewer than n apart.
    A necessary condition only."""
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
                yield d
                break


def entry_schedule(instance: Instance, s: int, entries: Sequence[float]) -> Timed | None:
    """A list schedule with F(s, j) at ``entries[j]`` or later (module docstring); None when the
    caps leave no pass to start. Keep-only, one chunk per device (stage k on device k).

    Each step scans every device's three lane heads and starts the pass of earliest start (lowest
    device on ties); a forward is a candidate only where its activation fits the cap with what
    the device holds (releases are booked at dispatch, and a device's next pass starts after its
    previous one ends, so they precede it). O(n K) for n passes on K stages."""
    K, m = instance.virtual_stages, instance.microbatches
    kinds = instance.kinds
    dur = {x: instance.duration(x) for x in instance.passes()}
    preds = {x: instance.predecessors(x) for x in dur}
    start: dict[PassKey, float] = {}
    end: dict[PassKey, float] = {}
    nxt = {(kind, k): 0 for kind in kinds for k in range(K)}
    free = [0.0] * K
    level = [0.0] * K
    room = [instance.cap_room(k) * (1 + 1e-9) for k in range(K)]
    while len(start) < len(dur):
        best: tuple[float, int, PassKey] | None = None
        for k in range(K):
            blocked = nxt[("F", k)] < m and level[k] + instance.a(k) > room[k]
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
                continue
            first = min(c[0] for c in cands)
            pick = min(c for c in cands if c[0] <= first)
            others = [c for c in cands if c[2][0] != "W"]
            if pick[2][0] == "W" and others and not blocked and min(others)[0] < first + dur[pick[2]]:
                pick = min(others)  # the W would delay a pass ready before it ends
            if best is None or (pick[0], k) < best[:2]:
                best = (pick[0], k, pick[2])
        if best is None:
            return None
        t, k, x = best
        start[x], end[x] = t, t + dur[x]
        free[k] = end[x]
        kind = x[0]
        level[k] += instance.a(k) if kind == "F" else (
            instance.a_w(k) - instance.a(k) if kind == "B" else -instance.a_w(k))
        nxt[(kind, k)] += 1
    return Timed(start=start, modes={}, d2h={}, h2d={})


def pattern_incumbent(instance: Instance, upper: float, limit: int = PATTERN_LIMIT
                      ) -> tuple[float, Solution | None]:
    """(makespan, schedule) of the best :func:`entry_schedule` the checker accepts over at most
    ``limit`` patterns of the shortest period from R_s + T_W on (``PERIOD_REACH`` periods at most)
    that admits any, F(s, 0) entering at its release time; (``upper``, None) where none is
    shorter than ``upper`` or :func:`token_stage` finds no stage. O(limit n K)."""
    s = token_stage(instance)
    best: tuple[float, Solution | None] = (upper, None)
    if s is None:
        return best
    q = time_unit(instance)
    first = releases(instance)[("F", s, 0)]
    low = round((round_trip(instance, s) + instance.t_w(s)) / q)
    for period in range(low, low + PERIOD_REACH):
        patterns = list(itertools.islice(periodic_patterns(instance, s, period), limit))
        for d in patterns:
            entries = list(itertools.accumulate((d[j % len(d)] * q for j in range(instance.microbatches - 1)),
                                                initial=first))
            timed = entry_schedule(instance, s, entries)
            if timed is None:
                continue
            solution = to_solution(instance, timed)
            if solution["objective"] < best[0] and not check(instance, solution):
                best = (solution["objective"], solution)
        if patterns:
            return best
    return best
