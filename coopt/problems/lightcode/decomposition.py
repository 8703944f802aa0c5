"""LightCode's exact methods by decomposition at the articulation operators (the residual adds):
the frontier DP of one segment, :func:`segment_dp` (exact for energy and the latency sum without
side constraints), :func:`exact` (the problem's ``exact`` method: the DP for the sums, one
disjunctive MILP per distinct segment for the makespan, the one-piece MILP of
:mod:`coopt.problems.lightcode.milp` when side constraints couple the segments), the dual bound
at any size (:func:`dual_bound`), and the sequence-length crossover scan built on the DP
(:func:`photonic_lengths`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

import pyomo.environ as pyo

from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination
from coopt.problems.lightcode import milp
from coopt.problems.lightcode.data import MICRO, Instance, Limits
from coopt.problems.lightcode.graph import StackedGraph, stacked_graph
from coopt.problems.lightcode.model import as_solution, earliest_starts, makespan, objective
from coopt.problems.lightcode.repair import cost_tables, finish, surrogate
from coopt.problems.lightcode.schedule import articulation_operators
from coopt.solvers.highs import solve_model


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
    own, transfer = cost_tables(graph, surrogate(instance))
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
    return finish(instance, graph, assign)


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
        return _one_piece(instance, options)
    if instance.objective != "makespan":
        solution = segment_dp(instance)
        return ExactOutcome(solution, "optimal", solution["objective"])
    graph = stacked_graph(instance)
    cuts = articulation_operators(graph)
    solve = _segment_solver(instance, options)
    status = Termination.OPTIMAL
    # best[d]: (length up to the start of the current cut on d, its segment solutions); low[d]: a bound
    best: dict[str, tuple[float, Any]] = {d: (0.0, None) for d in sorted(graph.stacks[cuts[0]])}
    low: dict[str, float] | None = dict.fromkeys(best, 0.0)
    for a, b in pairwise(cuts):
        step, low, limited = _chain_segment(graph, a, b, best, low, solve)
        if limited:
            status = Termination.LIMIT
        if not step:
            proved = status is Termination.OPTIMAL
            return ExactOutcome(None, Termination.INFEASIBLE if proved else Termination.LIMIT)
        best = step
    return _joined(graph, cuts[-1], best, low, status)


def _one_piece(instance: Instance, options: SolveOptions) -> ExactOutcome:
    """The one-piece MILP, for instances whose side constraints couple the segments."""
    model = milp.build(instance)
    result = solve_model(model, options)
    if result.objective is None:
        return ExactOutcome(None, result.termination, result.bound)
    solution = milp.extract(model, instance)
    solution["objective"] = objective(instance, solution)
    return ExactOutcome(solution, result.termination, result.bound)


def _segment_solver(instance: Instance, options: SolveOptions) -> Callable[[StackedGraph], _Part]:
    """Solve a segment's makespan model once per distinct segment (:func:`_signature`), each solve
    given what is left of the shared time limit."""
    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    memo: dict[Any, _Part] = {}

    def solve(part: StackedGraph) -> _Part:
        first, last = next(iter(part.stacks[0])), next(iter(part.stacks[-1]))
        key = (part.ops[0].role, part.ops[-1].role, first, last, _signature(part))
        if key not in memo:
            left = None if deadline is None else max(0.01, deadline - time.perf_counter())
            memo[key] = _segment_makespan(instance, part, replace(options, time_limit=left))
        return memo[key]

    return solve


def _chain_segment(
    graph: StackedGraph,
    a: int,
    b: int,
    best: dict[str, tuple[float, Any]],
    low: dict[str, float] | None,
    solve: Callable[[StackedGraph], _Part],
) -> tuple[dict[str, tuple[float, Any]], dict[str, float] | None, bool]:
    """One step of the shortest path over the cut devices: for each device of cut ``b``, the best
    length and trail through segment ``a..b`` (and the chained lower bound, None once a segment
    has none); also whether a segment solve stopped at a limit."""
    step: dict[str, tuple[float, Any]] = {}
    low_step: dict[str, float] = {}
    bounded, limited = low is not None, False
    for first in sorted(set(best) | set(low or {})):
        for last in sorted(graph.stacks[b]):
            solved = solve(_segment(graph, a, b, first, last))
            if solved.status not in ("optimal", "infeasible"):
                limited = True
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
    return step, (low_step if bounded else None), limited


def _joined(
    graph: StackedGraph, last_cut: int, best: dict[str, tuple[float, Any]], low: dict[str, float] | None,
    status: Termination,
) -> ExactOutcome:
    """The schedule of the shortest path: the segments' devices, and starts as early as the
    segments' orders (by mid-point, offset by the spans before them) and the data allow."""
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
