"""LightCode's heuristics: greedy per operator, greedy in topological order, the chain DP, the
authors' best-first search, local search, HEFT, and the two-device min cut (an exact check for the
sum objectives). Each picks an assignment by its own rule and hands it to the shared tail of
:mod:`coopt.problems.lightcode.repair` (uniform blocks, side-constraint repair, the list schedule
for the makespan). :data:`HEURISTICS` also registers the exact segment DP of
:mod:`coopt.problems.lightcode.decomposition`, which is a heuristic where side constraints apply.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

import networkx as nx

from coopt.problem import NoSolution, Solution
from coopt.problems.lightcode.data import Instance
from coopt.problems.lightcode.decomposition import segment_dp
from coopt.problems.lightcode.graph import Assignment, StackedGraph, stacked_graph
from coopt.problems.lightcode.repair import (
    assignment_value,
    cost_tables,
    finish,
    make_uniform,
    repair,
    side_excess,
    stretched,
    surrogate,
    to_solution,
)
from coopt.problems.lightcode.schedule import SegmentSpans, Timeline


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
    return finish(instance, graph, _greedy_assignment(instance, graph))


def _greedy_assignment(instance: Instance, graph: StackedGraph) -> Assignment:
    """The assignment of :func:`greedy_per_operator`, before uniform blocks and repairs."""
    attr = "energy" if surrogate(instance) == "energy" else "latency"
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
    own, transfer = cost_tables(graph, surrogate(instance))
    assign: Assignment = []
    for v, stack in enumerate(graph.stacks):

        def cost(d: str, v: int = v) -> float:
            return own[v][d] + sum(transfer[k][assign[graph.edges[k].src], d] for k in graph.in_edges[v])

        assign.append(min(sorted(stack), key=cost))
    return finish(instance, graph, assign)


def chain_dp(instance: Instance, seed: int = 0) -> Solution:
    """Dynamic programme along the topological order, one state per realization of the current
    operator; a transfer from an earlier producer is priced at that producer's device on the best
    path into the state (exact for the consecutive edge, path-dependent for the others).

    Guarantee: optimal on a chain (every edge joins consecutive operators) for sum objectives.
    Complexity O(|V| K^2 + |E| K^2 span), span = the longest back-edge in operators.
    Source: notes' CHAIN-DP."""
    graph = stacked_graph(instance)
    own, transfer = cost_tables(graph, surrogate(instance))
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
    return finish(instance, graph, assign)


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
    own, transfer = cost_tables(graph, surrogate(instance))
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
            return finish(instance, graph, assign)
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
    assign = repair(instance, graph, make_uniform(instance, graph, _greedy_assignment(instance, graph)))
    search = _MoveSearch(instance, graph, assign)
    classes = graph.classes(instance.uniform_blocks)
    # A class whose move values cannot have changed since it was last examined is skipped
    depends = [search.dependencies(members) for members in classes]
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
                if d != assign[members[0]] and search.try_move(members, d):
                    clock += 1
                    for v in members:
                        changed_at[v] = clock
                    improved = True
            checked_at[c] = clock
        if not improved:
            break
    return to_solution(instance, graph, assign)


class _MoveSearch:
    """The state of :func:`local_search`: the assignment (changed in place), its true objective,
    and how a move of one decision class is evaluated: read off the class's own edges (the sums
    without side constraints), by re-scheduling the segments it touches (the makespan), or whole
    (with side constraints)."""

    def __init__(self, instance: Instance, graph: StackedGraph, assign: Assignment) -> None:
        self.instance, self.graph, self.assign = instance, graph, assign
        lim = instance.limits
        self.limited = bool(lim.energy_budget or lim.power_cap or lim.max_conversion_elements) or any(
            d.photonic and d.weight_capacity for d in instance.devices)
        self.spans = SegmentSpans(graph, assign) if instance.objective == "makespan" else None
        self.incremental = self.spans is None and not self.limited
        if self.spans is not None:
            self.value = stretched(instance, graph, assign, self.spans.makespan(assign)[0])
        else:
            self.value = assignment_value(instance, graph, assign)
        self.own, self.transfer = cost_tables(graph, instance.objective) if self.incremental else ([], [])

    def dependencies(self, members: list[int]) -> list[int]:
        """The operators whose devices a class's move values depend on: its members and their
        neighbours (the sums), or the segments they touch (the makespan); with side constraints
        everything, written as [] (never skipped)."""
        graph = self.graph
        if self.limited:
            return []
        if self.spans is not None:
            touched = sorted({j for v in members for j in self.spans.touching[v]})
            windows = [self.spans.windows[j] for j in touched]
            return sorted({v for a, b in windows for v in range(a, b + 1)})
        ends = {x for v in members for k in (*graph.in_edges[v], *graph.out_edges[v])
                for x in (graph.edges[k].src, graph.edges[k].dst)}
        return sorted(ends | set(members))

    def change(self, members: list[int], device: str) -> float:
        """The sum objective's change if ``members`` move to ``device``."""
        graph, assign, transfer = self.graph, self.assign, self.transfer
        moved = set(members)
        out = sum(self.own[v][device] - self.own[v][assign[v]] for v in members)
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

    def try_move(self, members: list[int], device: str) -> bool:
        """Move ``members`` to ``device`` if that improves the objective and keeps the side
        constraints; whether it did."""
        instance, graph, assign = self.instance, self.graph, self.assign
        if self.incremental:
            gain = self.change(members, device)
            if gain < -1e-12 * abs(self.value):
                for v in members:
                    assign[v] = device
                self.value += gain
                return True
            return False
        before = [assign[v] for v in members]
        for v in members:
            assign[v] = device
        new_spans: dict[int, float] = {}
        if self.spans is None:
            trial_value = assignment_value(instance, graph, assign)
        else:
            span, new_spans = self.spans.makespan(assign, members)
            trial_value = stretched(instance, graph, assign, span)
        if trial_value < self.value * (1 - 1e-12) and side_excess(instance, graph, assign) == 0:
            self.value = trial_value
            if self.spans is not None:
                self.spans.accept(new_spans)
            return True
        for v, old in zip(members, before, strict=True):
            assign[v] = old
        return False


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
    repaired = repair(instance, graph, make_uniform(instance, graph, assign))
    return to_solution(instance, graph, repaired, start if repaired == assign else None)


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
    own, transfer = cost_tables(graph, kind)
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
    return to_solution(instance, graph, assign)
