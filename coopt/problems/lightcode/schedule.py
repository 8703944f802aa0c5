"""LightCode's schedules of a fixed assignment: HEFT's upward rank, the insertion-policy list
schedule (:func:`list_schedule`), the articulation operators that cut the Stacked Graph into
segments, and the list-scheduled makespan kept as a sum over those segments
(:class:`SegmentSpans`, what local search re-evaluates a move with).

Guarantee: every schedule here is feasible (precedence with transfer delays, one operator at a
time per device) for the Stacked Graph of :mod:`coopt.problems.lightcode.graph`.
"""

from __future__ import annotations

import bisect
import math
from itertools import pairwise

from coopt.problems.lightcode.graph import Assignment, StackedGraph


def upward_rank(
    graph: StackedGraph, assign: Assignment, window: tuple[int, int] | None = None
) -> list[float]:
    """HEFT's upward rank: own latency plus the longest (transfer + rank) over the successors; with
    ``window`` (first, last), of operators first..last only, indexed from ``first``."""
    first, last = window if window is not None else (0, len(graph.ops) - 1)
    rank = [0.0] * (last - first + 1)
    for u in reversed(range(first, last + 1)):
        tail = 0.0
        for k in graph.out_edges[u]:
            w = graph.edges[k].dst
            if w <= last:
                tail = max(tail, graph.transfer_latency[k][assign[u], assign[w]] + rank[w - first])
        rank[u - first] = graph.stacks[u][assign[u]].latency + tail
    return rank


class Timeline:
    """One device's busy intervals, disjoint and sorted (so their ends are sorted too): the earliest
    gap after a ready time is found by bisection, O(log n) plus the gaps skipped."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def earliest(self, ready: float, length: float) -> float:
        """Earliest start >= ``ready`` of a gap of ``length`` (insertion policy)."""
        start = ready
        for i in range(bisect.bisect_right(self.ends, ready), len(self.starts)):
            if start + length <= self.starts[i]:
                break
            start = max(start, self.ends[i])
        return start

    def add(self, start: float, finish: float) -> None:
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, finish)


def list_schedule(
    graph: StackedGraph, assign: Assignment, window: tuple[int, int] | None = None
) -> list[float]:
    """HEFT-style list schedule of a fixed assignment: operators by decreasing upward rank, each at
    the earliest gap on its device after its inputs arrive (insertion policy). With ``window``
    (first, last), only those operators are scheduled, from time 0, and the start times are indexed
    from ``first``.

    Guarantee: a feasible schedule (precedence with transfer delays, one operator at a time per
    device). Complexity O(|E| + |V| log |V|), plus the gaps each insertion skips. Source: Topcuoglu,
    Hariri, Wu, "Performance-effective and low-complexity task scheduling for heterogeneous
    computing", IEEE TPDS 13(3), 2002."""
    first, last = window if window is not None else (0, len(graph.ops) - 1)
    rank = upward_rank(graph, assign, window)
    start = [0.0] * (last - first + 1)
    busy: dict[str, Timeline] = {}
    for v in sorted(range(first, last + 1), key=lambda v: (-rank[v - first], v)):
        ready = 0.0
        for k in graph.in_edges[v]:
            u = graph.edges[k].src
            if u >= first:
                arrival = (start[u - first] + graph.stacks[u][assign[u]].latency
                           + graph.transfer_latency[k][assign[u], assign[v]])
                ready = max(ready, arrival)
        length = graph.stacks[v][assign[v]].latency
        timeline = busy.setdefault(assign[v], Timeline())
        start[v - first] = timeline.earliest(ready, length)
        timeline.add(start[v - first], start[v - first] + length)
    return start


class SegmentSpans:
    """The list-scheduled makespan as a sum over the segments between articulation operators.

    Every path passes each cut operator, so no operator of a later segment is ready before the
    cut finishes, the ranks inside a segment differ from the global ones by a constant, and the
    global list schedule is the concatenation of the segments' own: makespan = sum of the spans
    (start of the closing cut minus start of the opening one) plus the last operator's latency. A
    move then re-schedules only the segments it touches, and a segment whose shape and devices
    repeat an earlier one's (repeated blocks) reuses its span."""

    def __init__(self, graph: StackedGraph, assign: Assignment):
        self.graph = graph
        self.windows = list(pairwise(articulation_operators(graph)))
        self.touching: dict[int, list[int]] = {}
        for j, (a, b) in enumerate(self.windows):
            for v in range(a, b + 1):
                self.touching.setdefault(v, []).append(j)
        # a segment's span depends only on its operators' realizations and its edges' tables,
        # which repeated blocks share: (the segment's shape, its devices) -> span
        self.shapes = [self._shape(a, b) for a, b in self.windows]
        self.memo: dict[tuple, float] = {}
        self.spans = [self._span(assign, j) for j in range(len(self.windows))]
        self.total = math.fsum(self.spans)

    def _shape(self, a: int, b: int) -> tuple:
        g = self.graph
        edges = tuple((g.edges[k].src - a, v - a, id(g.transfer_latency[k]))
                      for v in range(a + 1, b + 1) for k in g.in_edges[v] if g.edges[k].src >= a)
        return tuple(id(g.stacks[v]) for v in range(a, b + 1)), edges

    def _span(self, assign: Assignment, j: int) -> float:
        a, b = self.windows[j]
        key = (self.shapes[j], tuple(assign[a : b + 1]))
        span = self.memo.get(key)
        if span is None:
            start = list_schedule(self.graph, assign, (a, b))
            span = self.memo[key] = start[-1] - start[0]
        return span

    def makespan(
        self, assign: Assignment, changed: list[int] | None = None
    ) -> tuple[float, dict[int, float]]:
        """Makespan of ``assign``, which differs from the last accepted one only at ``changed``;
        also the new spans, for :meth:`accept`."""
        touched = sorted({j for v in changed or [] for j in self.touching[v]})
        new = {j: self._span(assign, j) for j in touched}
        last = len(self.graph.ops) - 1
        total = self.total + sum(span - self.spans[j] for j, span in new.items())
        return total + self.graph.stacks[last][assign[last]].latency, new

    def accept(self, new: dict[int, float]) -> None:
        for j, span in new.items():
            self.total += span - self.spans[j]
            self.spans[j] = span


def articulation_operators(graph: StackedGraph) -> list[int]:
    """Operators every source-to-sink path passes (single source, single sink): exactly those no
    edge jumps over in the topological order."""
    n = len(graph.ops)
    covered = [0] * (n + 1)
    for e in graph.edges:
        if e.dst > e.src + 1:
            covered[e.src + 1] += 1
            covered[e.dst] -= 1
    cuts, depth = [], 0
    for v in range(n):
        depth += covered[v]
        if depth == 0:
            cuts.append(v)
    return cuts
