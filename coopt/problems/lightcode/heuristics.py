"""LightCode's exact block-decomposition DP (:func:`exact`), its heuristics, the HEFT-style list
schedule, and the two-device min cut.

Every heuristic picks an assignment by its own rule, then (shared tail, :func:`_finish`) makes it
uniform across blocks if the instance asks, repairs side constraints by moving decision classes
until none is violated, and, for the makespan objective, turns the assignment into a schedule with
:func:`list_schedule`. For the makespan objective the selection rules use the serial latency sum
as their surrogate cost (the repo does the same: selection first, scheduling afterwards).

Costs below are "sum costs": energy, or the latency sum, of the Stacked Graph in
:mod:`coopt.problems.lightcode.model`.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import networkx as nx
import pyomo.environ as pyo

from coopt.problem import ExactOutcome, NoSolution, Solution, SolveOptions, Termination
from coopt.problems.lightcode import milp
from coopt.problems.lightcode.model import (
    MICRO,
    SIDE_TOL,
    Assignment,
    Instance,
    Limits,
    StackedGraph,
    as_solution,
    conversion_elements,
    earliest_starts,
    energy,
    latency_sum,
    makespan,
    objective,
    ptu_weight_bytes,
    stacked_graph,
    sum_cost,
)
from coopt.solvers.highs import solve_model


def _surrogate(instance: Instance) -> str:
    return "energy" if instance.objective == "energy" else "latency_sum"


def _tables(
    graph: StackedGraph, kind: str
) -> tuple[list[dict[str, float]], list[dict[tuple[str, str], float]]]:
    """Own cost per (operator, device) and transfer cost per (edge, device pair) for ``kind``."""
    attr = "energy" if kind == "energy" else "latency"
    own = [{d: getattr(r, attr) for d, r in s.items()} for s in graph.stacks]
    return own, graph.transfer_energy if kind == "energy" else graph.transfer_latency


# ------------------------------------------------------------------------------------------------
# Scheduling
# ------------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------------
# Shared tail: uniform blocks, side-constraint repair, schedule, objective
# ------------------------------------------------------------------------------------------------
def _stretched(instance: Instance, graph: StackedGraph, assign: Assignment, span: float) -> float:
    """A schedule stretched by idle time until it meets the power cap (E <= P T)."""
    cap = instance.limits.power_cap
    return max(span, energy(graph, assign) / cap) if cap > 0 else span


def _span(instance: Instance, graph: StackedGraph, assign: Assignment) -> float:
    if instance.objective == "makespan":
        return _stretched(instance, graph, assign, makespan(graph, assign, list_schedule(graph, assign)))
    return latency_sum(graph, assign)


def _value(instance: Instance, graph: StackedGraph, assign: Assignment) -> float:
    """The true objective of an assignment (makespan via the list schedule), in seconds or joules."""
    if instance.objective == "makespan":
        return _span(instance, graph, assign)
    return sum_cost(graph, assign, instance.objective)


def _excess(instance: Instance, graph: StackedGraph, assign: Assignment) -> float:
    """Total relative excess over the side constraints (0: all hold)."""
    total = 0.0
    for dev in instance.devices:
        if dev.photonic and dev.weight_capacity > 0:
            cap = dev.weight_capacity
            total += max(0.0, ptu_weight_bytes(instance, graph, assign, dev.name) / cap - 1)
    lim = instance.limits
    if lim.max_conversion_elements > 0:
        total += max(0.0, conversion_elements(instance, graph, assign) / lim.max_conversion_elements - 1)
    if lim.energy_budget > 0 or lim.power_cap > 0:
        used = energy(graph, assign)
        if lim.energy_budget > 0:
            total += max(0.0, used / lim.energy_budget - 1)
        if lim.power_cap > 0 and instance.objective != "makespan":  # a schedule can stretch instead
            total += max(0.0, used / (lim.power_cap * latency_sum(graph, assign)) - 1)
    return total if total > SIDE_TOL / 2 else 0.0


def _uniform(instance: Instance, graph: StackedGraph, assign: Assignment) -> Assignment:
    """One device per role across blocks: each class takes the device that is cheapest for the
    whole class, given the rest (one pass, classes in operator order)."""
    if not instance.uniform_blocks:
        return assign
    assign = list(assign)
    kind = _surrogate(instance)
    for members in graph.classes(True):
        options = sorted(graph.stacks[members[0]])
        best = min(options, key=lambda d: (sum_cost(graph, _set(assign, members, d), kind), d))
        assign = _set(assign, members, best)
    return assign


def _set(assign: Assignment, members: list[int], device: str) -> Assignment:
    out = list(assign)
    for v in members:
        out[v] = device
    return out


def _repair(instance: Instance, graph: StackedGraph, assign: Assignment) -> Assignment:
    """Move one decision class at a time, the move that cuts the excess most (ties: the cheaper),
    until every side constraint holds; NoSolution when no move reduces the excess."""
    excess = _excess(instance, graph, assign)
    classes = graph.classes(instance.uniform_blocks)
    while excess > 0:
        best = None
        for members in classes:
            for d in sorted(graph.stacks[members[0]]):
                if d == assign[members[0]]:
                    continue
                trial = _set(assign, members, d)
                key = (_excess(instance, graph, trial), _value(instance, graph, trial))
                if best is None or key < best[0]:
                    best = (key, trial)
        if best is None or best[0][0] >= excess:
            raise NoSolution("side constraints cannot be met by single moves")
        excess, assign = best[0][0], best[1]
    return assign


def _finish(instance: Instance, graph: StackedGraph, assign: Assignment) -> Solution:
    assign = _repair(instance, graph, _uniform(instance, graph, assign))
    return _solution(instance, graph, assign)


def _solution(
    instance: Instance, graph: StackedGraph, assign: Assignment, start: list[float] | None = None
) -> Solution:
    if instance.objective == "makespan":
        start = list(start if start is not None else list_schedule(graph, assign))
        span = makespan(graph, assign, start)
        start[-1] += _stretched(instance, graph, assign, span) - span  # the sink waits out a power cap
        out = as_solution(graph, assign, start)
        out["objective"] = makespan(graph, assign, start) * MICRO
    else:
        out = as_solution(graph, assign)
        out["objective"] = sum_cost(graph, assign, instance.objective) * MICRO
    return out


# ------------------------------------------------------------------------------------------------
# Heuristics
# ------------------------------------------------------------------------------------------------
def greedy_per_operator(instance: Instance, seed: int = 0) -> Solution:
    """Each operator (or class, with uniform blocks) takes the realization minimising its own cost
    plus every incident transfer priced at the cheapest partner device (:func:`_greedy_assignment`).

    Guarantee: optimal for energy and latency-sum under the authors' ``sram_hop`` transfers
    without side constraints (the cost is then a sum of per-operator terms); a heuristic otherwise.
    Complexity O(|V| + |E|) for the operators with one realization, O(K deg K) for each other one;
    an operator whose stack and incident tables repeat an earlier one's (repeated blocks share their
    tables) reuses its scores. Source: the notes' GREEDY-ISOLATED with endpoint attribution."""
    graph = stacked_graph(instance)
    return _finish(instance, graph, _greedy_assignment(instance, graph))


def _greedy_assignment(instance: Instance, graph: StackedGraph) -> Assignment:
    """The assignment of :func:`greedy_per_operator`, before uniform blocks and repairs."""
    attr = "energy" if _surrogate(instance) == "energy" else "latency"
    transfer = graph.transfer_energy if attr == "energy" else graph.transfer_latency
    assign = [next(iter(stack)) for stack in graph.stacks]
    score: dict[int, dict[str, float]] = {}
    memo: dict[tuple, dict[str, float]] = {}
    for v in graph.free:
        stack = graph.stacks[v]
        ins = tuple((id(transfer[k]), id(graph.stacks[graph.edges[k].src])) for k in graph.in_edges[v])
        outs = tuple((id(transfer[k]), id(graph.stacks[graph.edges[k].dst])) for k in graph.out_edges[v])
        key = (id(stack), ins, outs)
        row = memo.get(key)
        if row is None:
            row = {}
            for d, realization in stack.items():
                cost = getattr(realization, attr)
                for k in graph.in_edges[v]:
                    cost += min(transfer[k][du, d] for du in graph.stacks[graph.edges[k].src])
                for k in graph.out_edges[v]:
                    cost += min(transfer[k][d, dv] for dv in graph.stacks[graph.edges[k].dst])
                row[d] = cost
            memo[key] = row
        score[v] = row
        assign[v] = min(sorted(row), key=row.__getitem__)
    if instance.uniform_blocks:
        for members in graph.classes(True):
            best = min(sorted(graph.stacks[members[0]]), key=lambda d: sum(score[v][d] for v in members))
            for v in members:
                assign[v] = best
    return assign


def greedy_topological(instance: Instance, seed: int = 0) -> Solution:
    """In topological order, each operator takes the realization minimising its own cost plus the
    transfers from its already placed producers (myopic: successors are ignored).

    Guarantee: none beyond feasibility. Complexity O(|V| K + |E| K). Source: notes' GREEDY-TOPO."""
    graph = stacked_graph(instance)
    own, transfer = _tables(graph, _surrogate(instance))
    assign: Assignment = []
    for v, stack in enumerate(graph.stacks):

        def cost(d: str, v: int = v) -> float:
            return own[v][d] + sum(transfer[k][assign[graph.edges[k].src], d] for k in graph.in_edges[v])

        assign.append(min(sorted(stack), key=cost))
    return _finish(instance, graph, assign)


def chain_dp(instance: Instance, seed: int = 0) -> Solution:
    """Dynamic programme along the topological order, one state per realization of the current
    operator; a transfer from an earlier producer is priced at that producer's device on the best
    path into the state (exact for the consecutive edge, path-dependent for the others).

    Guarantee: optimal on a chain (every edge joins consecutive operators) for sum objectives.
    Complexity O(|V| K^2 + |E| K^2 span), span = the longest back-edge in operators.
    Source: notes' CHAIN-DP."""
    graph = stacked_graph(instance)
    own, transfer = _tables(graph, _surrogate(instance))
    n = len(graph.ops)
    devices = [sorted(s) for s in graph.stacks]
    cost: list[dict[str, float]] = []
    parent: list[dict[str, str]] = []

    def device_on_path(i: int, d: str, u: int) -> str:
        """Device of operator u < i on the best path ending with operator i on d."""
        while i > u:
            d, i = parent[i][d], i - 1
        return d

    for v in range(n):
        cost.append({})
        parent.append({})
        for d in devices[v]:
            if v == 0:
                cost[v][d] = own[v][d]
                continue
            best = None
            for s in devices[v - 1]:
                c = cost[v - 1][s] + own[v][d]
                for k in graph.in_edges[v]:
                    u = graph.edges[k].src
                    c += transfer[k][device_on_path(v - 1, s, u), d]
                if best is None or c < best[0]:
                    best = (c, s)
            cost[v][d], parent[v][d] = best
    d = min(devices[-1], key=lambda d: cost[-1][d])
    assign = [""] * n
    for v in reversed(range(n)):
        assign[v] = d
        if v:
            d = parent[v][d]
    return _finish(instance, graph, assign)


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


def _frontier_dp(
    graph: StackedGraph,
    seq: list[int],
    own: list[dict[str, float]],
    transfer: list[dict[tuple[str, str], float]],
    first: str,
    beam: int | None = None,
) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Min cost of operators ``seq[1:]`` (with ``seq[0]`` fixed on ``first``, its own cost not
    counted) and of the edges inside ``seq``, for every device of ``seq[-1]``, with the
    assignment. A state is the devices of the placed operators that still feed unplaced ones."""
    inside = set(seq)
    position = {v: i for i, v in enumerate(seq)}
    last_use = {
        v: max((position[w] for w in graph.succs[v] if w in inside), default=position[v]) for v in seq
    }
    states: dict[tuple, tuple[float, tuple[str, ...]]] = {
        ((seq[0], first),) if last_use[seq[0]] > 0 else (): (0.0, (first,))
    }
    for i, v in enumerate(seq[1:], start=1):
        nxt: dict[tuple, tuple[float, tuple[str, ...]]] = {}
        for frontier, (base, path) in states.items():
            placed = dict(frontier)
            for d in sorted(graph.stacks[v]):
                c = base + own[v][d]
                for k in graph.in_edges[v]:
                    u = graph.edges[k].src
                    if u in inside:
                        c += transfer[k][placed[u], d]
                keep = tuple((u, du) for u, du in frontier if last_use[u] > i)
                if last_use[v] > i:
                    keep += ((v, d),)
                if i == len(seq) - 1:
                    keep = ((v, d),)
                if keep not in nxt or c < nxt[keep][0]:
                    nxt[keep] = (c, path + (d,))
        if beam is not None and len(nxt) > beam:
            nxt = dict(sorted(nxt.items(), key=lambda item: (item[1][0], item[0]))[:beam])
        states = nxt
    return {frontier[0][1]: value for frontier, value in states.items()}


def segment_dp(instance: Instance, seed: int = 0) -> Solution:
    """Cut the graph at its articulation operators, solve each segment between consecutive cuts for
    every pair of cut realizations by a frontier DP, reusing the table of any segment whose costs
    repeat (identical transformer blocks), then chain the segments by DP over the cut states.

    Guarantee: optimal for energy and latency-sum without side constraints. Complexity
    O(sum over segments of |segment| K^(w+1)), w = the segment's frontier width (2-4 here).
    Source: the notes' SEGMENT-DP, mirroring LightCode's partition at cut nodes."""
    graph = stacked_graph(instance)
    own, transfer = _tables(graph, _surrogate(instance))
    cuts = articulation_operators(graph)
    memo: dict[Any, dict[str, dict[str, tuple[float, tuple[str, ...]]]]] = {}
    # best[d]: (cost so far, trail) where the trail is a linked list (earlier trail, segment devices)
    best: dict[str, tuple[float, Any]] = {
        d: (own[cuts[0]][d], (None, (d,))) for d in sorted(graph.stacks[cuts[0]])
    }
    for a, b in pairwise(cuts):
        seq = list(range(a, b + 1))
        signature = tuple(
            (
                tuple(sorted(own[v].items())),
                tuple(
                    (graph.edges[k].src - a, tuple(sorted(transfer[k].items())))
                    for k in graph.in_edges[v]
                    if v > a
                ),
            )
            for v in seq
        )
        if signature not in memo:
            memo[signature] = {d: _frontier_dp(graph, seq, own, transfer, d) for d in sorted(graph.stacks[a])}
        table = memo[signature]
        step: dict[str, tuple[float, Any]] = {}
        for d, (base, trail) in best.items():
            for d_end, (c, segment) in table[d].items():
                if d_end not in step or base + c < step[d_end][0]:
                    step[d_end] = (base + c, (trail, segment[1:]))
        best = step
    trail = min(best.values(), key=lambda item: item[0])[1]
    pieces = []
    while trail is not None:
        trail, piece = trail
        pieces.append(piece)
    assign = [d for piece in reversed(pieces) for d in piece]
    return _finish(instance, graph, assign)


def best_first(instance: Instance, seed: int = 0, beam: int = 256) -> Solution:
    """The authors' "rolling Dijkstra" in our form: best-first search over partial assignments in
    topological order, a state being the devices of the placed operators that still feed unplaced
    ones (the stacks where choices must agree); the cheapest complete state wins. At most ``beam``
    states are settled per operator.

    Guarantee: optimal for energy and latency-sum without side constraints whenever the beam does
    not bind (the number of frontier states per operator <= beam). Complexity
    O(|V| beam K (deg + log(|V| beam K))); it settles every operator's frontier states, so it stays
    slower than the exact frontier DP, which runs once per distinct block (4x at 20,480 blocks).
    Source: LightCode repo, selection by Dijkstra-style search over (stack, realization) states;
    states deduplicated on the frontier here."""
    graph = stacked_graph(instance)
    own, transfer = _tables(graph, _surrogate(instance))
    n = len(graph.ops)
    last_use = [max(graph.succs[v], default=v) for v in range(n)]
    devices = [sorted(s) for s in graph.stacks]
    inputs = [[(k, graph.edges[k].src) for k in graph.in_edges[v]] for v in range(n)]
    heap: list[tuple[float, int, tuple, int]] = []
    trail: list[tuple[int, str]] = []  # (parent trail id, device) per pushed state
    for d in sorted(graph.stacks[0]):
        trail.append((-1, d))
        heapq.heappush(heap, (own[0][d], 0, ((0, d),) if last_use[0] > 0 else (), len(trail) - 1))
    settled: dict[int, set] = {}
    while heap:
        c, i, frontier, tid = heapq.heappop(heap)
        seen = settled.setdefault(i, set())
        if frontier in seen or len(seen) >= beam:
            continue
        seen.add(frontier)
        if i == n - 1:
            assign = [""] * n
            for v in reversed(range(n)):
                tid, assign[v] = trail[tid][0], trail[tid][1]
            return _finish(instance, graph, assign)
        v = i + 1
        placed = dict(frontier)
        kept = tuple((u, du) for u, du in frontier if last_use[u] > v)
        for d in devices[v]:
            cost = c + own[v][d]
            for k, u in inputs[v]:
                cost += transfer[k][placed[u], d]
            trail.append((tid, d))
            heapq.heappush(heap, (cost, v, (*kept, (v, d)) if last_use[v] > v else kept, len(trail) - 1))
    raise NoSolution("search exhausted")


def local_search(instance: Instance, seed: int = 0, passes: int = 20) -> Solution:
    """From the greedy-per-operator solution, move one decision class (one operator, or one role
    across all blocks when uniform) to another device whenever the true objective (the
    list-scheduled makespan for makespan) improves and the side constraints still hold; classes in
    a seeded random order, first improvement, until a pass finds none.

    Guarantee: a local optimum w.r.t. single-class moves (within ``passes``); never worse than its
    start. Complexity per pass, for |C| classes of K devices: O(|C| K deg) for the sums without side
    constraints (a move's change is read off the class's own edges), O(|C| K s log s) for the
    makespan (a move re-schedules only the segments of size s it touches, :class:`SegmentSpans`),
    O(|C| K (|V| + |E|)) with side constraints (each trial re-evaluated whole). It examines every
    class at least once, so on the sum objectives it stays slower than the exact DP, which runs
    once per distinct block (about 3x at 20,480 blocks). Source: notes' LOCAL-SEARCH."""
    graph = stacked_graph(instance)
    assign = _repair(instance, graph, _uniform(instance, graph, _greedy_assignment(instance, graph)))
    lim = instance.limits
    limited = bool(lim.energy_budget or lim.power_cap or lim.max_conversion_elements) or any(
        d.photonic and d.weight_capacity for d in instance.devices)
    spans = SegmentSpans(graph, assign) if instance.objective == "makespan" else None
    incremental = spans is None and not limited
    if spans is not None:
        value = _stretched(instance, graph, assign, spans.makespan(assign)[0])
    else:
        value = _value(instance, graph, assign)
    own, transfer = _tables(graph, instance.objective) if incremental else ([], [])

    def change(members: list[int], device: str) -> float:
        """The sum objective's change if ``members`` move to ``device``."""
        moved = set(members)
        out = sum(own[v][device] - own[v][assign[v]] for v in members)
        seen: set[int] = set()
        for v in members:
            for k in (*graph.in_edges[v], *graph.out_edges[v]):
                if k in seen:
                    continue
                seen.add(k)
                e = graph.edges[k]
                src = device if e.src in moved else assign[e.src]
                dst = device if e.dst in moved else assign[e.dst]
                out += transfer[k][src, dst] - transfer[k][assign[e.src], assign[e.dst]]
        return out

    classes = graph.classes(instance.uniform_blocks)
    # A class whose move values cannot have changed since it was last examined is skipped: they
    # depend on the devices of its members and their neighbours (the sums), or of the segments
    # they touch (the makespan); with side constraints, on everything (never skipped).
    depends: list[list[int]] = []
    for members in classes:
        if limited:
            depends.append([])
        elif spans is not None:
            windows = [spans.windows[j] for j in sorted({j for v in members for j in spans.touching[v]})]
            depends.append(sorted({v for a, b in windows for v in range(a, b + 1)}))
        else:
            ends = {x for v in members for k in (*graph.in_edges[v], *graph.out_edges[v])
                    for x in (graph.edges[k].src, graph.edges[k].dst)}
            depends.append(sorted(ends | set(members)))
    changed_at = [0] * len(graph.ops)
    checked_at = [-1] * len(classes)
    clock = 0
    order = list(range(len(classes)))
    rng = random.Random(seed)
    for _ in range(passes):
        rng.shuffle(order)
        improved = False
        for c in order:
            members = classes[c]
            if depends[c] and checked_at[c] >= max(changed_at[v] for v in depends[c]):
                continue
            for d in sorted(graph.stacks[members[0]]):
                if d == assign[members[0]]:
                    continue
                if incremental:
                    gain = change(members, d)
                    if gain < -1e-12 * abs(value):
                        clock += 1
                        for v in members:
                            assign[v], changed_at[v] = d, clock
                        value, improved = value + gain, True
                    continue
                before = [assign[v] for v in members]
                for v in members:
                    assign[v] = d
                new_spans: dict[int, float] = {}
                if spans is None:
                    trial_value = _value(instance, graph, assign)
                else:
                    span, new_spans = spans.makespan(assign, members)
                    trial_value = _stretched(instance, graph, assign, span)
                if trial_value < value * (1 - 1e-12) and _excess(instance, graph, assign) == 0:
                    value, improved = trial_value, True
                    clock += 1
                    for v in members:
                        changed_at[v] = clock
                    if spans is not None:
                        spans.accept(new_spans)
                else:
                    for v, old in zip(members, before, strict=True):
                        assign[v] = old
            checked_at[c] = clock
        if not improved:
            break
    return _solution(instance, graph, assign)


def heft(instance: Instance, seed: int = 0) -> Solution:
    """HEFT: rank operators by upward rank with mean realization latencies, then place each, in
    decreasing rank, on the device where it finishes earliest (insertion policy); the schedule is
    kept for the makespan objective.

    Guarantee: a feasible schedule; no approximation guarantee. Complexity O(|V| K (deg + log |V|))
    plus the gaps each insertion skips.
    Source: Topcuoglu, Hariri, Wu, IEEE TPDS 13(3), 2002."""
    graph = stacked_graph(instance)
    n = len(graph.ops)
    mean = [sum(r.latency for r in s.values()) / len(s) for s in graph.stacks]
    mean_tau = [sum(t.values()) / len(t) for t in graph.transfer_latency]
    rank = [0.0] * n
    for u in reversed(range(n)):
        rank[u] = mean[u] + max(
            (mean_tau[k] + rank[graph.edges[k].dst] for k in graph.out_edges[u]), default=0.0
        )
    assign: Assignment = [""] * n
    start = [0.0] * n
    busy = {d: Timeline() for d in instance.device_names}
    for v in sorted(range(n), key=lambda v: (-rank[v], v)):
        best = None
        for d in sorted(graph.stacks[v]):
            ready = max(
                (
                    start[graph.edges[k].src]
                    + graph.stacks[graph.edges[k].src][assign[graph.edges[k].src]].latency
                    + graph.transfer_latency[k][assign[graph.edges[k].src], d]
                    for k in graph.in_edges[v]
                ),
                default=0.0,
            )
            length = graph.stacks[v][d].latency
            s = busy[d].earliest(ready, length)
            if best is None or s + length < best[0]:
                best = (s + length, s, d)
        _, start[v], assign[v] = best
        busy[assign[v]].add(start[v], start[v] + graph.stacks[v][assign[v]].latency)
    repaired = _repair(instance, graph, _uniform(instance, graph, assign))
    return _solution(instance, graph, repaired, start if repaired == assign else None)


HEURISTICS: dict[str, Callable[..., Solution]] = {
    "greedy_operator": greedy_per_operator,
    "greedy_topological": greedy_topological,
    "chain_dp": chain_dp,
    "segment_dp": segment_dp,
    "best_first": best_first,
    "local_search": local_search,
    "heft": heft,
}


# ------------------------------------------------------------------------------------------------
# Two-device min cut (an exact check for the sum objectives)
# ------------------------------------------------------------------------------------------------
def min_cut(instance: Instance) -> Solution:
    """Exact minimum of energy or latency-sum on two devices by an s-t minimum cut.

    Applies when every operator can run on the first device, there are exactly two devices, no
    side constraint is set, and every edge is submodular:
    ``theta(A,A) + theta(B,B) <= theta(A,B) + theta(B,A)``. Raises ValueError otherwise.
    Construction: Kolmogorov and Zabih, "What energy functions can be minimized via graph cuts?",
    IEEE TPAMI 26(2), 2004 (label 0 = source side = first device)."""
    graph = stacked_graph(instance)
    kind = instance.objective
    if kind not in ("energy", "latency_sum") or len(instance.devices) != 2 or instance.uniform_blocks:
        raise ValueError("min cut needs two devices, a sum objective and no uniform-block constraint")
    if any(
        getattr(instance.limits, f) for f in ("energy_budget", "power_cap", "max_conversion_elements")
    ) or any(d.photonic and d.weight_capacity for d in instance.devices):
        raise ValueError("min cut does not handle side constraints")
    first, second = instance.device_names
    own, transfer = _tables(graph, kind)
    scale = 1e12 if kind == "energy" else 1e9  # pJ or ns keep capacities O(1) and up
    unary = [0.0] * len(graph.ops)  # cost of label 1 minus cost of label 0
    fixed = set()
    for v, stack in enumerate(graph.stacks):
        if first not in stack:
            raise ValueError(f"{graph.ops[v].name} cannot run on {first}")
        if second in stack:
            unary[v] += own[v][second] - own[v][first]
        else:
            fixed.add(v)
    cut = nx.DiGraph()
    cut.add_nodes_from(["s", "t"])
    for k, e in enumerate(graph.edges):
        t = transfer[k]
        u, v = e.src, e.dst
        if u in fixed and v in fixed:
            continue
        if u in fixed:
            unary[v] += t[first, second] - t[first, first]
        elif v in fixed:
            unary[u] += t[second, first] - t[first, first]
        else:
            a, b, c, d = t[first, first], t[first, second], t[second, first], t[second, second]
            if b + c - a - d < -1e-12 * max(1.0, abs(b + c)):
                raise ValueError(f"edge {graph.ops[u].name} -> {graph.ops[v].name} is not submodular")
            # a + (c - a) x_u + (d - c) x_v + (b + c - a - d) (1 - x_u) x_v
            unary[u] += c - a
            unary[v] += d - c
            if b + c - a - d > 0:
                old = cut.get_edge_data(u, v, {"capacity": 0.0})["capacity"]
                cut.add_edge(u, v, capacity=old + (b + c - a - d) * scale)
    for v, w in enumerate(unary):
        if v not in fixed and w > 0:
            cut.add_edge("s", v, capacity=w * scale)
        elif v not in fixed and w < 0:
            cut.add_edge(v, "t", capacity=-w * scale)
    _, (_, sink_side) = nx.minimum_cut(cut, "s", "t")
    assign = [second if v in sink_side else first for v in range(len(graph.ops))]
    return _solution(instance, graph, assign)


# ------------------------------------------------------------------------------------------------
# The sequence-length crossover scan (repo: threshold search for runtime dispatch)
# ------------------------------------------------------------------------------------------------
def photonic_lengths(
    instance: Instance, role: str, lengths: list[int], objective: str = "energy"
) -> list[int]:
    """The sequence lengths, among ``lengths``, at which the optimum of ``objective`` (energy or
    latency_sum, by the exact segment DP, side constraints dropped) runs the first operator with
    ``role`` on a photonic device. The repo scans L = 0..4095 the same way, one operator at a time
    with its neighbours fixed; here the whole graph is re-optimised at every length."""
    photonic = {d.name for d in instance.devices if d.photonic}
    found = []
    for length in lengths:
        model = replace(instance.model, sequence_length=length)
        variant = replace(instance, model=model, objective=objective, uniform_blocks=False, limits=Limits())
        graph = stacked_graph(variant)
        solution = segment_dp(variant)
        target = next(op.name for op in graph.ops if op.role == role)
        if solution["assignment"][target] in photonic:
            found.append(length)
    return found


# ------------------------------------------------------------------------------------------------
# The natural exact method: decomposition at articulation operators
# ------------------------------------------------------------------------------------------------
def _coupled(instance: Instance) -> bool:
    """Side constraints that tie segments together (the decomposition then does not apply)."""
    lim = instance.limits
    capacity = any(d.photonic and d.weight_capacity > 0 for d in instance.devices)
    limits = lim.energy_budget or lim.power_cap or lim.max_conversion_elements
    return bool(instance.uniform_blocks or capacity or limits)


def _segment(graph: StackedGraph, a: int, b: int, first: str, last: str) -> StackedGraph:
    """Operators a..b with a pinned on ``first`` and b on ``last``, and the edges among them."""
    keep = [k for v in range(a + 1, b + 1) for k in graph.in_edges[v] if graph.edges[k].src >= a]
    stacks = [dict(s) for s in graph.stacks[a : b + 1]]
    stacks[0], stacks[-1] = {first: stacks[0][first]}, {last: stacks[-1][last]}

    def table(source: dict, k: int) -> dict:
        e = graph.edges[k]
        return {
            (du, dv): x
            for (du, dv), x in source.items()
            if du in stacks[e.src - a] and dv in stacks[e.dst - a]
        }

    return StackedGraph(
        graph.ops[a : b + 1],
        [replace(graph.edges[k], src=graph.edges[k].src - a, dst=graph.edges[k].dst - a) for k in keep],
        stacks,
        [table(graph.transfer_energy[k], k) for k in keep],
        [table(graph.transfer_latency[k], k) for k in keep],
    )


@dataclass(frozen=True)
class _Part:
    """One segment's solved makespan model: assignment and start times (s), status, and a lower
    bound on its span ``S_b - S_a`` (s; None when the solve found nothing)."""

    found: tuple[list[str], list[float]] | None
    status: str
    span_bound: float | None


def _segment_makespan(instance: Instance, part: StackedGraph, options: SolveOptions) -> _Part:
    """Solve one segment's disjunctive makespan model. Its sink is the closing cut ``b``, pinned to
    one device, so the model's minimum ``T = S_b + p_b`` less the constant ``p_b`` bounds the span
    (an optimal segment schedule starts at 0)."""
    m, _, _ = milp.assignment_model(instance, part)
    milp.add_schedule(m, part, True, milp.schedule_horizon(part))
    m.cost = pyo.Objective(expr=m.span, sense=pyo.minimize)
    m.objective_unit = m.time_unit
    result = solve_model(m, options)
    closing = next(iter(part.stacks[-1].values())).latency
    span_bound = None if result.bound is None else max(0.0, result.bound / MICRO - closing)
    if result.objective is None:
        return _Part(None, result.status, span_bound)
    assign = [
        next(iter(s)) if len(s) == 1 else max(sorted(s), key=lambda d, v=v: pyo.value(m.x[v, d]))
        for v, s in enumerate(part.stacks)
    ]
    start = [pyo.value(m.start[v]) * m.time_unit / MICRO for v in range(len(part.ops))]
    return _Part((assign, start), result.status, span_bound)


def exact(instance: Instance, options: SolveOptions) -> ExactOutcome:
    """Exact by decomposition; the bound it reports is valid whatever the segments' status.

    Proof. The graph has one source and one sink and every operator lies on a source-to-sink path;
    an articulation operator ``c`` lies on every such path, so every other operator is an ancestor
    or a descendant of ``c``: it finishes before ``c`` starts or starts after ``c`` finishes. Hence
    in any feasible schedule no two operators of different segments overlap, and the makespan is
    ``sum_j (S_{c_{j+1}} - S_{c_j}) + p_last`` (the sink is the last cut), each term depending only
    on segment ``j``'s own devices and starts, given its two cut devices. Minimising the sum is a
    shortest path over the cut devices whose arc costs are the segments' minimum spans; the sum
    objectives separate over the segments the same way (no edge jumps a cut). So no schedule or
    device is excluded. Each distinct segment is solved once per pair of cut devices (repeated
    blocks are solved once): the frontier DP for the sums, the disjunctive MILP for the makespan.
    The chain of the segments' lower bounds (a second shortest path) bounds the optimum. Side
    constraints couple the segments: such instances go to the one-piece MILP. The time limit, if
    any, is shared by all segment solves."""
    if _coupled(instance):
        model = milp.build(instance)
        result = solve_model(model, options)
        if result.objective is None:
            return ExactOutcome(None, result.termination, result.bound)
        solution = milp.extract(model, instance)
        solution["objective"] = objective(instance, solution)
        return ExactOutcome(solution, result.termination, result.bound)
    if instance.objective != "makespan":
        solution = segment_dp(instance)
        return ExactOutcome(solution, "optimal", solution["objective"])
    graph = stacked_graph(instance)
    cuts = articulation_operators(graph)
    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    memo: dict[Any, _Part] = {}
    status = Termination.OPTIMAL
    # best[d]: (length up to the start of the current cut on d, its segment solutions); low[d]: a bound
    best: dict[str, tuple[float, Any]] = {d: (0.0, None) for d in sorted(graph.stacks[cuts[0]])}
    low: dict[str, float] | None = dict.fromkeys(best, 0.0)
    for a, b in pairwise(cuts):
        step: dict[str, tuple[float, Any]] = {}
        low_step: dict[str, float] = {}
        bounded = low is not None
        for first in sorted(set(best) | set(low or {})):
            for last in sorted(graph.stacks[b]):
                part = _segment(graph, a, b, first, last)
                key = (part.ops[0].role, part.ops[-1].role, first, last, _signature(part))
                if key not in memo:
                    left = None if deadline is None else max(0.01, deadline - time.perf_counter())
                    memo[key] = _segment_makespan(instance, part, replace(options, time_limit=left))
                solved = memo[key]
                if solved.status not in ("optimal", "infeasible"):
                    status = Termination.LIMIT
                if low is not None and first in low and solved.status != "infeasible":
                    if solved.span_bound is None:
                        bounded = False
                    else:
                        low_step[last] = min(low_step.get(last, math.inf), low[first] + solved.span_bound)
                if solved.found is None or first not in best:
                    continue
                length, trail = best[first]
                total = length + solved.found[1][-1] - solved.found[1][0]
                if last not in step or total < step[last][0]:
                    step[last] = (total, (trail, (a, solved.found)))  # a linked list, not a copy
        low = low_step if bounded else None
        if not step:
            proved = status is Termination.OPTIMAL
            return ExactOutcome(None, Termination.INFEASIBLE if proved else Termination.LIMIT)
        best = step
    last_cut = cuts[-1]
    _, trail = min(best.items(), key=lambda item: item[1][0] + graph.stacks[last_cut][item[0]].latency)[1]
    parts = []
    while trail is not None:
        trail, part = trail
        parts.append(part)
    assign = [""] * len(graph.ops)
    rank = [0.0] * len(graph.ops)
    offset = 0.0
    for a, (part_assign, part_start) in reversed(parts):
        for i, (d, s) in enumerate(zip(part_assign, part_start, strict=True)):
            assign[a + i] = d
            rank[a + i] = offset + s - part_start[0] + 0.5 * graph.stacks[a + i][d].latency
        offset += part_start[-1] - part_start[0]
    start = earliest_starts(graph, assign, rank)
    solution = as_solution(graph, assign, start)
    solution["objective"] = makespan(graph, assign, start) * MICRO
    bound = None
    if low:
        bound = min(value + graph.stacks[last_cut][d].latency for d, value in low.items()) * MICRO
        bound = min(bound, solution["objective"])
    return ExactOutcome(solution, status, bound)


def _signature(part: StackedGraph) -> tuple:
    """Everything a segment's optimum depends on, so that repeated blocks share one solve."""
    return (
        tuple(tuple(sorted((d, r.latency) for d, r in s.items())) for s in part.stacks),
        tuple(
            (e.src, e.dst, tuple(sorted(t.items())))
            for e, t in zip(part.edges, part.transfer_latency, strict=True)
        ),
    )


# ------------------------------------------------------------------------------------------------
# A dual bound at any size
# ------------------------------------------------------------------------------------------------
#: The one-piece LP relaxation joins the bound of side-constrained instances up to this many operators.
LP_BOUND_OPERATORS = 5000


def dual_bound(instance: Instance, options: SolveOptions) -> float:
    """A lower bound on the optimum (problem units, uJ or us), at any size.

    * No side constraints, energy or latency sum: the frontier DP's optimum (the decomposition is
      exact, so the bound is tight).
    * No side constraints, makespan: the decomposition's chain of the segments' dual bounds
      (:func:`exact`, valid whatever their status), and never below the critical path at the
      fastest realizations nor the total fastest work spread over every device.
    * Side constraints or uniform blocks: the largest of (a) the optimum of the same instance with
      them dropped, a relaxation (for a makespan under a power cap also ``E_min / P``, since
      ``T >= E / P >= E_min / P`` for every schedule), and (b) the LP relaxation of the one-piece
      MILP, up to :data:`LP_BOUND_OPERATORS` operators.

    Each of these is at least the LP relaxation where that exists: the DP and the chained
    segment bounds bound the integer optimum (and a segment's dual bound is at least its own LP
    bound; gluing segment LP solutions at integral cut devices gives a solution of the whole LP).
    """
    graph = stacked_graph(instance)
    if not _coupled(instance):
        if instance.objective != "makespan":
            return segment_dp(instance)["objective"]
        early, _ = milp.time_windows(graph, 0.0)
        fastest = [min(r.latency for r in s.values()) for s in graph.stacks]
        floor = max(early[-1] + fastest[-1], sum(fastest) / len(instance.devices)) * MICRO
        outcome = exact(instance, options)
        return max(floor, outcome.bound or 0.0)
    free = replace(instance, uniform_blocks=False, limits=Limits(), devices=tuple(
        replace(d, weight_capacity=0.0) if d.photonic else d for d in instance.devices))
    candidates = [dual_bound(free, options)]
    cap = instance.limits.power_cap
    if cap > 0 and instance.objective == "makespan":
        candidates.append(dual_bound(replace(free, objective="energy"), options) / cap)
    if len(graph.ops) <= LP_BOUND_OPERATORS:
        model = milp.build(instance)
        pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
        result = solve_model(model, options)
        if result.status == "optimal" and result.objective is not None:
            candidates.append(result.objective)
    return max(candidates)
