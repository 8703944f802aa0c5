"""A search over segmentations on a growing pool of circuit sets (problem ``mixnet_plan``): the
heuristic ``segment_pool``.

A plan is a segmentation of the layers and one circuit set per segment. :func:`segment_dp`
chooses the segmentation on cheap circuit sets and polishes what it keeps, so its segments are
those its table likes, not those the polished circuits would like. This search keeps a pool of
circuit sets and alternates two steps until neither finds a faster plan:

1. **The table DP** (:func:`plan_heuristics._segment_table_dp`, segments of any length) on the
   pool: the fastest plan whose every segment keeps one set of the pool, exactly.
2. **Moves on the segmentation** from that plan, first improvement: each boundary shifted by
   :data:`SHIFTS` layers, two neighbours merged, a segment of at least four layers split at its
   quarter points. A new segment's circuits are polished (:func:`plan_heuristics.polished`) from
   the circuits of the segments it came from, and every polished set joins the pool. Then every
   kept segment of at most ``RESTART_LENGTH`` layers is polished again from each of its layers'
   own circuits (``segment_dp_restart``'s multi-start), and those sets join the pool too.

The pool starts with each distinct layer's own circuits, joint deficit fills over stretches of
every length ``n`` in :data:`STRETCHES` (starting every ``n // STEP`` layers) and over all layers, and
the circuits of ``segment_dp_restart``'s plan.

Guarantee: a valid plan (each set comes from the planner's fills and local search, which keep
the circuits integer, symmetric and within the ports), never slower than ``segment_dp_restart``'s
(its plan is a plan of the first pool, and the DP is exact on the pool), and never slower than
the table DP on any pool the search built. Deterministic: no clock and no random draws decide
anything. Cost: ``segment_dp_restart``, ``O(L |STRETCHES|)`` deficit fills, then per round one
vectorised time evaluation per new set, the table DP in ``O(L^2 C)`` additions for ``C`` sets,
and ``O(S |SHIFTS|)`` local searches for ``S`` kept segments; at most :data:`MAX_ROUNDS` rounds
(the 56-layer file: about 35 s, five rounds, 7x ``segment_dp_restart``). Source: ours (a
column pool for the DP, as in price-and-branch heuristics, with a local search on the
segmentation).
"""

from __future__ import annotations

import numpy as np

from coopt.problem import Solution
from coopt.problems.mixnet import plan_heuristics as H
from coopt.problems.mixnet.plan_model import Instance, solution_of

#: Lengths of the stretches whose joint deficit fill starts the pool (every layer count below the
#: plan's; the whole plan is always one).
STRETCHES = (2, 4, 6, 8, 12, 16, 24, 32, 48, 64)
#: A stretch of n layers starts every n // STEP layers.
STEP = 4
#: Layers by which each boundary is shifted, in this order.
SHIFTS = (-8, -4, -2, -1, 1, 2, 4, 8)
#: Most rounds (table DP, then moves).
MAX_ROUNDS = 8
#: Relative improvement below which a move or a round counts as none.
TOLERANCE = 1e-9


class _Search:
    """The pool, its time table, the polished segments seen, and the plan being improved."""

    def __init__(self, instance: Instance, first: Solution):
        self.instance = instance
        self.layers = len(instance.layers)
        self.pool: dict[bytes, np.ndarray] = {}
        self.rows: list[np.ndarray] = []  # per pool set, in pool order: its layers' times
        self.polished: dict[tuple[int, int, bytes], tuple[float, np.ndarray]] = {}
        self.own = H.layer_plans(instance)
        starting = [*self.own, *_stretch_fills(instance)]
        starting += [np.array(s["circuits"], dtype=int) for s in first["segments"]]
        self.add(starting)

    def add(self, sets: list[np.ndarray]) -> None:
        """Put the sets not yet in the pool into it, with their layers' times."""
        fresh = []
        for x in sets:
            if x.tobytes() not in self.pool:
                self.pool[x.tobytes()] = x
                fresh.append(x)
        if fresh:
            self.rows.extend(H.candidate_times(self.instance, fresh))

    def table_plan(self) -> Solution:
        """The fastest plan whose every segment keeps one set of the pool."""
        sets = list(self.pool.values())
        starts, picks = H._segment_table_dp(self.instance, np.array(self.rows), self.layers)
        return solution_of(self.instance, starts, [sets[k] for k in picks])

    def segment(self, first: int, end: int, starts: list[np.ndarray]) -> tuple[float, np.ndarray]:
        """The fastest of ``starts`` polished for layers ``first..end - 1`` (time, circuits); each
        polished set joins the pool."""
        best = None
        for x in starts:
            key = (first, end, x.tobytes())
            if key not in self.polished:
                y = H.polished(self.instance, first, end - 1, x)
                self.polished[key] = (H.plan_time_of(self.instance, first, end, y), y)
                self.add([y])
            found = self.polished[key]
            if best is None or found[0] < best[0]:
                best = found
        return best

    def moves(self, starts: list[int], circuits: list[np.ndarray]) -> tuple[list[int], list[np.ndarray]]:
        """Shifts, merges and splits (module docstring), first improvement, until none helps."""
        starts, circuits = list(starts), list(circuits)
        e = self.instance.exposed

        def end_of(k: int) -> int:
            return starts[k + 1] if k + 1 < len(starts) else self.layers

        def cost(k: int) -> float:
            return H.plan_time_of(self.instance, starts[k], end_of(k), circuits[k])

        improved = True
        while improved:
            improved = False
            for k in range(1, len(starts)):  # shift the boundary between segments k - 1 and k
                first, end = starts[k - 1], end_of(k)
                now = cost(k - 1) + cost(k) + e(starts[k])
                for shift in SHIFTS:
                    middle = starts[k] + shift
                    if not first < middle < end:
                        continue
                    left = self.segment(first, middle, [circuits[k - 1], circuits[k]])
                    right = self.segment(middle, end, [circuits[k], circuits[k - 1]])
                    if left[0] + right[0] + e(middle) < now * (1 - TOLERANCE):
                        starts[k], circuits[k - 1], circuits[k] = middle, left[1], right[1]
                        now, improved = left[0] + right[0] + e(middle), True
            for k in range(len(starts) - 1, 0, -1):  # merge segments k - 1 and k
                first, end = starts[k - 1], end_of(k)
                merged = self.segment(first, end, [circuits[k - 1], circuits[k]])
                if merged[0] < (cost(k - 1) + cost(k) + e(starts[k])) * (1 - TOLERANCE):
                    del starts[k], circuits[k]
                    circuits[k - 1], improved = merged[1], True
            k = 0
            while k < len(starts):  # split segment k at a quarter point
                first, end = starts[k], end_of(k)
                if end - first >= 4:
                    now = cost(k)
                    for middle in sorted({first + (end - first) * q // 4 for q in (1, 2, 3)}):
                        left = self.segment(first, middle, [circuits[k]])
                        right = self.segment(middle, end, [circuits[k]])
                        if left[0] + right[0] + e(middle) < now * (1 - TOLERANCE):
                            starts.insert(k + 1, middle)
                            circuits[k] = left[1]
                            circuits.insert(k + 1, right[1])
                            improved = True
                            break
                k += 1
        return starts, circuits

    def restart(self, starts: list[int], circuits: list[np.ndarray]) -> list[np.ndarray]:
        """Each segment of at most ``RESTART_LENGTH`` layers polished from its own circuits, from
        each of its layers' own circuits and from its joint deficit fill, the fastest kept (the
        multi-start of ``segment_dp_restart``, with every polish remembered)."""
        ends = [*starts[1:], self.layers]
        found = []
        for first, end, x in zip(starts, ends, circuits, strict=True):
            if end - first <= H.RESTART_LENGTH:
                x = self.segment(first, end, [x, *H.restart_starts(self.instance, self.own, first, end)])[1]
            found.append(x)
        return found


def _stretch_fills(instance: Instance) -> list[np.ndarray]:
    """Joint deficit fills over the stretches of :data:`STRETCHES` (a stretch of ``n`` layers
    starting every ``n // STEP`` layers) and over all layers."""
    layers = len(instance.layers)
    stretches = [range(a, a + n) for n in STRETCHES if n < layers
                 for a in range(0, layers - n + 1, max(1, n // STEP))]
    return [H._cheap(H._planner(instance, stretch)) for stretch in [*stretches, range(layers)]]


def segment_pool(instance: Instance, seed: int = 0) -> Solution:
    """The search of the module docstring, from ``segment_dp_restart``'s plan.

    Guarantee: a valid plan, never slower than ``segment_dp_restart``'s; deterministic. Cost: see
    the module docstring. Source: ours."""
    best = H.segment_dp_restart(instance)
    search = _Search(instance, best)
    for _ in range(MAX_ROUNDS):
        before = best["objective"]
        plan = search.table_plan()
        starts = [s["first_layer"] for s in plan["segments"]]
        kept = [np.array(segment["circuits"], dtype=int) for segment in plan["segments"]]
        starts, circuits = search.moves(starts, kept)
        moved = solution_of(instance, starts, search.restart(starts, circuits))
        best = min((best, plan, moved), key=lambda found: found["objective"])
        if best["objective"] >= before * (1 - TOLERANCE):
            break
    return best
