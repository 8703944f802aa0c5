"""Solvers of the ``scope`` problem: the exact dynamic program, the two baselines as restrictions
of it, the linear-time search and seeded simulated annealing (the full-enumeration oracle is
:mod:`coopt.formulations.scope.brute`).

Symbols as in :mod:`coopt.formulations.scope`: ``L`` layers, ``M`` chiplets, ``Lambda`` the
longest cluster, ``K = min(M, segment length)`` clusters per segment, ``P`` partitions.

A mapping is handled here as *structure* plus *allocation*. The structure labels each of the
``L - 1`` gaps between consecutive layers: no cut, a cluster cut, or a segment cut. For a fixed
structure the best allocation of each segment is found exactly by :func:`allocate` (a
bottleneck search over the clusters' Pareto fronts), so the heuristics search structures only.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache

import numpy as np
import pyomo.environ as pyo

from coopt.formulations.scope import milp as scope_milp
from coopt.formulations.scope.model import (
    CLUSTER_CUT,
    INTRA_LAYER,
    MERGED,
    NO_CUT,
    SEGMENT_CUT,
    SEGMENTED,
    Cluster,
    Instance,
    Restriction,
    cluster_options,
    cut_time,
    decode,
    make_solution,
    segment_candidate,
    segment_overhead,
    segment_time,
    segment_weight_bytes,
    stage_time,
)
from coopt.problem import ExactOutcome, NoSolution, Solution, SolveOptions
from coopt.solvers.highs import solve_model


class Table:
    """Memoised Pareto fronts and cut times of the clusters of one instance."""

    def __init__(self, inst: Instance):
        self.inst = inst
        self._fronts: dict[tuple[int, int], list[tuple[int, str, float]]] = {}

    def front(self, first: int, last: int) -> list[tuple[int, str, float]]:
        """(chiplets, partition, busy time), busy time strictly decreasing; [] if infeasible."""
        key = (first, last)
        if key not in self._fronts:
            inst = self.inst
            weights_fit = segment_weight_bytes(inst, first, last) <= inst.chiplets * inst.sram_bytes
            self._fronts[key] = cluster_options(inst, first, last) if weights_fit else []
        return self._fronts[key]

    def cut(self, last: int) -> float:
        return cut_time(self.inst, last)


# -- exact dynamic program -----------------------------------------------------------------------


def _segment_tables(table: Table, first: int, length: int, span: int, kmax: int):
    """Inner DP from segment start ``first`` over the next ``length`` layers.

    ``G[k, e, m]``: least bottleneck of layers first..first+e-1 in k clusters on at most m
    chiplets, every cluster paying its outgoing cut. ``F[k, e]``: the same with the last cluster
    closing the segment (no cut) and m = M. For each (cluster, k) the min over the cluster's
    front points ``a`` of ``max(G[k-1, s, m-a], tau(a))`` is one vectorised gather over (a, m):
    O(length * span * K * |front| * M) numbers."""
    M = table.inst.chiplets
    K = min(M, length, kmax)
    # Budgets m < 0 are infeasible: G carries M + 1 leading inf columns so m - a can be gathered.
    padded = np.full((K + 1, length + 1, 2 * M + 2), np.inf)
    padded[0, 0, M + 1:] = 0.0
    F = np.full((K + 1, length + 1), np.inf)
    budgets = np.arange(M + 1)
    for e in range(1, length + 1):
        last = first + e - 1
        cut = table.cut(last)
        for s in range(max(0, e - span), e):
            front = table.front(first + s, last)
            if not front:
                continue
            chips = np.array([a for a, _, _ in front])
            busy = np.array([t for _, _, t in front])
            rows = min(K, s + 1)  # at most s clusters cover the first s layers
            previous = padded[:rows, s, :]
            gathered = previous[:, M + 1 + budgets[None, :] - chips[:, None]]  # rows x |front| x (M+1)
            inner = np.maximum(gathered, (busy + cut)[None, :, None]).min(axis=1)
            np.minimum(padded[1:rows + 1, e, M + 1:], inner, out=padded[1:rows + 1, e, M + 1:])
            closing = np.maximum(previous[:, 2 * M + 1 - chips], busy[None, :]).min(axis=1)
            np.minimum(F[1:rows + 1, e], closing, out=F[1:rows + 1, e])
    return padded[:, :, M + 1:], F


def _backtrack(table: Table, first: int, length: int, clusters: int, span: int, kmax: int) -> list[Cluster]:
    """The clusters of the segment [first..first+length-1] with ``clusters`` clusters, recovered by
    recomputing the inner DP and matching values (the same float operations give equal values)."""
    G, F = _segment_tables(table, first, length, span, kmax)
    M = table.inst.chiplets
    out: list[Cluster] = []
    e, k, target, budget, closing = length, clusters, F[clusters, length], M, True
    while k > 0:
        last = first + e - 1
        cut = 0.0 if closing else table.cut(last)
        found = None
        for s in range(max(0, e - span), e):
            for a, p, busy in table.front(first + s, last):
                if a > budget:
                    continue
                rest = G[k - 1, s, M - a] if closing else G[k - 1, s, budget - a]
                if max(rest, busy + cut) == target:
                    found = (s, a, p, rest)
                    break
            if found:
                break
        if found is None:  # unreachable when the tables were filled by _segment_tables
            raise RuntimeError("scope DP backtrack failed")
        s, a, p, rest = found
        out.append((first + s, last, a, p))
        budget = (M if closing else budget) - a
        e, k, target, closing = s, k - 1, rest, False
    return out[::-1]


def dynamic_program(inst: Instance, restriction: Restriction = MERGED) -> Solution | None:
    """Optimal mapping of the chain within ``restriction`` (None: no feasible mapping).

    Outer DP ``best(j) = min_i best(i-1) + S(i, j)`` over segmentations, with ``S(i, j) =
    min_k (b + k - 1) F_k(i, j) + load + spill`` and ``F_k`` from the inner DP over clusters,
    chiplet counts (at most m) and partitions (Pareto fronts). Exact for the cost model of
    :mod:`coopt.formulations.scope`. O(L * Lseg * Lambda * |front| * K * M) where ``Lseg`` is the
    longest segment whose weights fit in M S. Source: research notes section 2.b (DP) [R]."""
    table = Table(inst)
    L, M = inst.n_layers, inst.chiplets
    span = min(inst.max_cluster_layers, restriction.span or inst.max_cluster_layers)
    kmax = restriction.kmax or M
    value: dict[tuple[int, int], tuple[float, int]] = {}
    for first in range(L):
        length = 0
        while first + length < L and segment_weight_bytes(inst, first, first + length) <= M * inst.sram_bytes:
            length += 1
        if length == 0:
            continue
        _, F = _segment_tables(table, first, length, span, kmax)
        for e in range(1, length + 1):
            last = first + e - 1
            if not segment_candidate(inst, first, last):
                continue
            times = (inst.batch + np.arange(F.shape[0] - 1)) * F[1:, e] + segment_overhead(inst, first, last)
            k = int(np.argmin(times)) + 1
            if math.isfinite(times[k - 1]):
                value[(first, last)] = (float(times[k - 1]), k)
    best = [0.0] + [math.inf] * L
    choice = [-1] * (L + 1)
    for j in range(1, L + 1):
        for i in range(j):
            if (i, j - 1) in value and best[i] + value[(i, j - 1)][0] < best[j]:
                best[j], choice[j] = best[i] + value[(i, j - 1)][0], i
    if not math.isfinite(best[L]):
        return None
    segments, j = [], L
    while j > 0:
        i = choice[j]
        segments.append(_backtrack(table, i, j - i, value[(i, j - 1)][1], span, kmax))
        j = i
    return make_solution(inst, segments[::-1])


def segment_bottlenecks(inst: Instance, first: int, last: int,
                        restriction: Restriction = MERGED) -> dict[int, float]:
    """``F_k``: least bottleneck of the segment [first..last] with exactly k clusters on at most M
    chiplets, for every k with a finite value (the inner DP; the MILP k-sweep's counterpart)."""
    span = min(inst.max_cluster_layers, restriction.span or inst.max_cluster_layers)
    _, F = _segment_tables(Table(inst), first, last - first + 1, span, restriction.kmax or inst.chiplets)
    return {k: float(F[k, -1]) for k in range(1, F.shape[0]) if math.isfinite(F[k, -1])}


def exact(inst: Instance, options: SolveOptions) -> ExactOutcome:
    """The exact method ``exact``: :func:`dynamic_program` over the whole (merged) space."""
    solution = dynamic_program(inst)
    if solution is None:
        return ExactOutcome(None, "infeasible", None)
    return ExactOutcome(solution, "optimal", solution["objective"])


def milp_model(inst: Instance) -> pyo.ConcreteModel:
    """The exact MILP (:func:`coopt.formulations.scope.milp.build`) bounded by :func:`search`'s
    mapping, when search finds one (the registered ``build`` of the problem)."""
    try:
        start = search(inst)
    except NoSolution:
        start = None
    return scope_milp.build(inst, incumbent=start)


#: Largest estimated MILP (option columns) whose LP relaxation :func:`bound` solves.
LP_BOUND_COLUMNS = 60_000


def bound(inst: Instance, options: SolveOptions) -> float:
    """A dual bound on the batch time at any size: the larger of the segment floors' shortest path
    (:func:`coopt.formulations.scope.milp.covering_floors`: area and heaviest-layer bounds on every
    bottleneck, the fewest clusters, exact weight loads and spills; O(L^2)) and, where the MILP has
    at most :data:`LP_BOUND_COLUMNS` option columns, its LP relaxation. Infinite when no
    segmentation exists at all (then nothing is feasible)."""
    L = inst.n_layers
    segments = [(i, j) for i in range(L) for j in range(i, L) if segment_candidate(inst, i, j)]
    value = scope_milp.covering_floors(inst, segments)[0][L]
    columns = sum(min(inst.chiplets, j - i + 1) * (j - i + 1) * min(inst.max_cluster_layers, j - i + 1)
                  for i, j in segments)
    if columns * min(inst.chiplets, 8) <= LP_BOUND_COLUMNS:
        model = milp_model(inst)
        pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
        relaxed = solve_model(model, options)
        if relaxed.status == "optimal" and relaxed.objective is not None:
            value = max(value, relaxed.objective)
    return value


def segmented_pipeline(inst: Instance, seed: int = 0) -> Solution:
    """Best layer-wise segmented pipeline (Tangram/SET/Gemini style: one layer per stage).

    Guarantee: optimal within that restriction, hence >= the merged optimum. Complexity: the DP
    with Lambda = 1. Source: research notes section 2.b, special cases."""
    solution = dynamic_program(inst, SEGMENTED)
    if solution is None:
        raise NoSolution("no feasible segmented pipeline")
    return solution


def intra_layer(inst: Instance, seed: int = 0) -> Solution:
    """Best pure intra-layer parallel mapping: one cluster per segment, so every layer of a
    segment runs in turn on the same chiplets (the module split inside each layer).

    Guarantee: optimal within that restriction, hence >= the merged optimum. Complexity: the DP
    with K = 1. Source: research notes section 2.b, special cases."""
    solution = dynamic_program(inst, INTRA_LAYER)
    if solution is None:
        raise NoSolution("no feasible intra-layer mapping")
    return solution


# -- structures and optimal allocation ------------------------------------------------------------


def allocate(table: Table, clusters: list[tuple[int, int]]) -> tuple[float, list[Cluster]] | None:
    """Least-bottleneck allocation of chiplets and partitions to the fixed clusters of one
    segment (its last cluster has no outgoing cut); None if no allocation fits in M chiplets.

    Exact: the bottleneck is one of the clusters' front values; for a threshold theta each
    cluster needs its fewest chiplets reaching theta, and the least feasible theta is found by
    bisection over the sorted candidates. O(k |front| log(k |front|))."""
    last = clusters[-1][1]
    fronts = []
    for i, j in clusters:
        cut = table.cut(j) if j != last else 0.0
        front = [(a, p, busy + cut) for a, p, busy in table.front(i, j)]
        if not front:
            return None
        fronts.append(front)
    M = table.inst.chiplets

    def pick(theta: float) -> list[tuple[int, str, float]] | None:
        chosen, used = [], 0
        for front in fronts:
            option = next((o for o in front if o[2] <= theta), None)
            if option is None:
                return None
            chosen.append(option)
            used += option[0]
        return chosen if used <= M else None

    candidates = sorted({o[2] for front in fronts for o in front})
    if pick(candidates[-1]) is None:
        return None
    lo, hi = 0, len(candidates) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if pick(candidates[mid]) is not None:
            hi = mid
        else:
            lo = mid + 1
    chosen = pick(candidates[lo])
    mapped = [(i, j, a, p) for (i, j), (a, p, _) in zip(clusters, chosen, strict=True)]
    return max(o[2] for o in chosen), mapped


class StructureCost:
    """Batch time of a structure under optimal allocation, memoised per segment."""

    def __init__(self, inst: Instance):
        self.inst = inst
        self.table = Table(inst)
        self._segment = lru_cache(maxsize=None)(self._segment_cost)
        #: :func:`_bisect_segment`'s packing per (first, last): a pure function of the segment,
        #: asked again for the same segments on every pass of the segment-level moves
        self.packings: dict[tuple[int, int], list[tuple[int, int]] | None] = {}

    def _segment_cost(self, clusters: tuple[tuple[int, int], ...]) -> tuple[float, tuple[Cluster, ...]]:
        first, last = clusters[0][0], clusters[-1][1]
        if any(j - i + 1 > self.inst.max_cluster_layers for i, j in clusters):
            return math.inf, ()
        if not segment_candidate(self.inst, first, last):
            return math.inf, ()
        result = allocate(self.table, list(clusters))
        if result is None:
            return math.inf, ()
        bottleneck, mapped = result
        return segment_time(self.inst, first, last, len(clusters), bottleneck), tuple(mapped)

    def __call__(self, labels: list[int] | tuple[int, ...]) -> float:
        return sum(self._segment(tuple(seg))[0] for seg in decode(labels))

    def segment(self, clusters: list[tuple[int, int]]) -> float:
        """Time of one segment given its clusters (inf if infeasible)."""
        return self._segment(tuple(clusters))[0]

    def mapping(self, labels: list[int] | tuple[int, ...]) -> list[list[Cluster]]:
        return [list(self._segment(tuple(seg))[1]) for seg in decode(labels)]


def _labels_of(segments: list[list[tuple[int, int]]], n_layers: int) -> list[int]:
    labels = [NO_CUT] * (n_layers - 1)
    for seg in segments:
        for _i, j in seg:
            if j < n_layers - 1:
                labels[j] = CLUSTER_CUT
        if seg[-1][1] < n_layers - 1:
            labels[seg[-1][1]] = SEGMENT_CUT
    return labels


def _polish(cost: StructureCost, labels: list[int], max_passes: int = 50) -> list[int]:
    """First-improvement local search: shift a cut by one gap, drop a cut (merge), add a cut
    (split) or change a cut's kind; allocations re-optimised by :func:`allocate`."""
    labels = list(labels)
    current = cost(labels)
    for _ in range(max_passes):
        improved = False
        for gap in range(len(labels)):
            moves = [[(gap, label)] for label in (NO_CUT, CLUSTER_CUT, SEGMENT_CUT) if label != labels[gap]]
            for nxt in (gap - 1, gap + 1):
                if 0 <= nxt < len(labels) and labels[gap] != NO_CUT and labels[nxt] == NO_CUT:
                    moves.append([(gap, NO_CUT), (nxt, labels[gap])])
            for move in moves:
                trial = list(labels)
                for g, label in move:
                    trial[g] = label
                value = cost(trial)
                if value < current * (1 - 1e-12):
                    labels, current, improved = trial, value, True
                    break
        if not improved:
            break
    return labels


# -- heuristics ----------------------------------------------------------------------------------


def _greedy_pack(cost: StructureCost, first: int, last: int, theta: float) -> list[tuple[int, int]] | None:
    """Clusters of [first..last] with every stage time <= theta: grow the current cluster while
    that needs no more chiplets than closing it and opening a new one; None if over M."""
    table, inst = cost.table, cost.inst

    def need(i: int, j: int) -> float:
        cut = table.cut(j) if j != last else 0.0
        return next((a for a, _, busy in table.front(i, j) if busy + cut <= theta), math.inf)

    clusters, start, used = [], first, 0.0
    for layer in range(first, last):
        extend = need(start, layer + 1) if layer + 1 - start < inst.max_cluster_layers else math.inf
        split = need(start, layer) + need(layer + 1, layer + 1)
        if extend > split:
            used += need(start, layer)
            clusters.append((start, layer))
            start = layer + 1
    used += need(start, last)
    clusters.append((start, last))
    return clusters if used <= inst.chiplets else None


def _bisect_segment(cost: StructureCost, first: int, last: int) -> list[tuple[int, int]] | None:
    """Bisection on theta (relative precision 1e-6) for the least theta at which greedy packing
    fits; of the packings probed, the one with the least segment time (bubbles included).
    Memoised on ``cost`` per (first, last)."""
    key = (first, last)
    if key not in cost.packings:
        cost.packings[key] = _bisect_fresh(cost, first, last)
    return cost.packings[key]


def _bisect_fresh(cost: StructureCost, first: int, last: int) -> list[tuple[int, int]] | None:
    inst = cost.inst
    hi = sum(stage_time(inst, i, i, 1, p, cut=True) for i in range(first, last + 1) for p in inst.partitions)
    lo = 0.0
    packed = _greedy_pack(cost, first, last, hi)
    if packed is None:
        return None
    best, best_time = packed, cost.segment(packed)
    while hi - lo > 1e-6 * hi:
        mid = (lo + hi) / 2
        packed = _greedy_pack(cost, first, last, mid)
        if packed is None:
            lo = mid
            continue
        hi = mid
        if cost.segment(packed) < best_time:
            best, best_time = packed, cost.segment(packed)
    return best


#: Shares of the module's SRAM a segment's weights may fill in the search's segmentation pass.
FILL_LEVELS = (1.0, 0.5, 0.25)


def _greedy_segments(cost: StructureCost, fill: float) -> list[list[tuple[int, int]]] | None:
    """Segments grown while their weights fit in ``fill`` M S (and DRAM), each packed by bisection;
    a segment is shrunk until its packing is feasible."""
    inst = cost.inst
    cap = fill * inst.chiplets * inst.sram_bytes
    segments, first = [], 0
    while first < inst.n_layers:
        last = first
        while (last + 1 < inst.n_layers and segment_candidate(inst, first, last + 1)
               and segment_weight_bytes(inst, first, last + 1) <= cap):
            last += 1
        clusters = _bisect_segment(cost, first, last)
        while clusters is None and last > first:
            last -= 1
            clusters = _bisect_segment(cost, first, last)
        if clusters is None:
            return None
        segments.append(clusters)
        first = last + 1
    return segments


def _resegment(cost: StructureCost, labels: list[int]) -> list[int]:
    """Segment-level moves: split a segment in two, or merge two neighbours, each new segment
    re-packed by bisection; keep a move when the batch time improves, until none does."""
    L = cost.inst.n_layers
    segments = [[c for c in seg] for seg in decode(labels)]
    current = sum(cost.segment(seg) for seg in segments)
    for _ in range(L):
        best = None
        for n, seg in enumerate(segments):
            first, last = seg[0][0], seg[-1][1]
            for cut in range(first, last):
                left, right = _bisect_segment(cost, first, cut), _bisect_segment(cost, cut + 1, last)
                if left and right:
                    value = current - cost.segment(seg) + cost.segment(left) + cost.segment(right)
                    if value < current * (1 - 1e-12) and (best is None or value < best[0]):
                        best = (value, n, 2, [left, right])
            if n + 1 < len(segments):
                union = _bisect_segment(cost, first, segments[n + 1][-1][1])
                if union:
                    value = current - cost.segment(seg) - cost.segment(segments[n + 1]) + cost.segment(union)
                    if value < current * (1 - 1e-12) and (best is None or value < best[0]):
                        best = (value, n, 1, [union])
        if best is None:
            break
        current, n, replaced, new = best
        segments[n:n + (1 if replaced == 2 else 2)] = new
    return _labels_of(segments, L)


def search(inst: Instance, seed: int = 0) -> Solution:
    """Scope-like linear-time search: greedy segmentation by memory, bottleneck bisection with
    greedy cluster packing inside each segment, then local polish of the cuts.

    1. Extend a segment while its weights fit in f M S (f in ``FILL_LEVELS``: fewer, longer
       segments mean fewer weight reloads and spills but deeper pipelines) and its DRAM need
       fits; shrink it until the packing below is feasible.                            O(L) each
    2. Bisection on the bottleneck theta; a probe packs layers left to right, growing a cluster
       while that needs no more chiplets than splitting; keep the probed packing with the least
       segment time.                                                 O(L log(1/eps)) probes' work
    3. Polish each of the three: shift / drop / add / retype a cut while the batch time
       improves (allocations re-optimised exactly per structure); keep the best. O(passes L) evals
    Guarantee: a feasible mapping whenever the all-singletons structure is feasible; no
    optimality guarantee (tests give its percentile rank). Deterministic (``seed`` unused).
    Source: research notes section 2.c (our reconstruction of Scope's search) [R]."""
    return _search(inst, resegment=False)


def search_resegment(inst: Instance, seed: int = 0) -> Solution:
    """:func:`search` with a segment-level pass before the polish: split a segment in two or
    merge two neighbours, each new segment re-packed by bisection, while the batch time improves.

    Guarantee: never worse than the polished start it refines; no optimality guarantee.
    Complexity: O(Lseg) bisections per segment and pass, so quadratic in the segment length;
    each (first, last) packing is bisected once and reused by later passes (2.3-3.3x faster than
    bisecting afresh on ResNet-152 and generated size 160, same mappings). Deterministic (``seed`` unused).
    Source: ours; it targets the weak point of the memory-greedy segmentation."""
    return _search(inst, resegment=True)


def _search(inst: Instance, resegment: bool) -> Solution:
    cost = StructureCost(inst)
    L = inst.n_layers
    starts = [_labels_of(segs, L) for segs in (_greedy_segments(cost, f) for f in FILL_LEVELS) if segs]
    if not starts:
        raise NoSolution("no segment packing fits the module")
    if resegment:
        starts = [_resegment(cost, start) for start in starts]
    labels = min((_polish(cost, start) for start in starts), key=cost)
    if not math.isfinite(cost(labels)):
        raise NoSolution("search found no feasible mapping")
    return make_solution(inst, cost.mapping(labels))


def annealing(inst: Instance, seed: int = 0, iterations: int | None = None) -> Solution:
    """Seeded simulated annealing over structures (Gemini-like: SET/Gemini anneal over segment
    borders; moves here relabel a gap or shift a cut by one), allocation optimal per structure.

    Starts from every layer its own segment; geometric cooling from 5% to 0.01% of the start
    cost over ``iterations`` (default 300 L) moves; returns the best structure seen.
    Guarantee: feasible if the start is; no optimality guarantee. Deterministic for a seed.
    Source: move set after repo SET-Scheduling-Project/GEMINI-HPCA2024 (segmentation.cpp), read
    only through the research notes."""
    rng = random.Random(seed)
    cost = StructureCost(inst)
    L = inst.n_layers
    labels = [SEGMENT_CUT] * (L - 1)
    current = cost(labels)
    if not math.isfinite(current):
        raise NoSolution("the every-layer-its-own-segment start is infeasible")
    best, best_labels = current, list(labels)
    steps = iterations if iterations is not None else 300 * L
    t0, t1 = 0.05 * current, 1e-4 * current
    for step in range(steps if L > 1 else 0):
        temperature = t0 * (t1 / t0) ** (step / max(1, steps - 1))
        trial = list(labels)
        gap = rng.randrange(L - 1)
        if trial[gap] != NO_CUT and rng.random() < 0.5:
            nxt = gap + rng.choice((-1, 1))
            if 0 <= nxt < L - 1 and trial[nxt] == NO_CUT:
                trial[gap], trial[nxt] = NO_CUT, trial[gap]
        else:
            trial[gap] = rng.choice([x for x in (NO_CUT, CLUSTER_CUT, SEGMENT_CUT) if x != trial[gap]])
        value = cost(trial)
        if value <= current or rng.random() < math.exp(-(value - current) / temperature):
            labels, current = trial, value
            if value < best:
                best, best_labels = value, list(trial)
    return make_solution(inst, cost.mapping(best_labels))


HEURISTICS = {
    "annealing": annealing,
    "intra_layer": intra_layer,
    "search": search,
    "search_resegment": search_resegment,
    "segmented_pipeline": segmented_pipeline,
}
