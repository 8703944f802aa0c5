"""Heuristics of the ``scope`` problem: the two baselines as restrictions of the exact dynamic
program (:mod:`.dp`), the linear-time search and seeded simulated annealing (the
full-enumeration oracle is :mod:`.brute`).

Symbols as in :mod:`coopt.problems.scope`: ``L`` layers, ``M`` chiplets, ``Lambda`` the
longest cluster, ``K = min(M, segment length)`` clusters per segment, ``P`` partitions.

A mapping is handled here as *structure* plus *allocation*. The structure labels each of the
``L - 1`` gaps between consecutive layers: no cut, a cluster cut, or a segment cut. For a fixed
structure the best allocation of each segment is found exactly by :func:`allocate` (a
bottleneck search over the clusters' Pareto fronts, :class:`.fronts.Table`), so the heuristics
search structures only.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.scope.dp import dynamic_program, near_program
from coopt.problems.scope.fronts import Table
from coopt.problems.scope.model import (
    CLUSTER_CUT,
    INTRA_LAYER,
    NO_CUT,
    SEGMENT_CUT,
    SEGMENTED,
    Cluster,
    Instance,
    decode,
    make_solution,
    stage_time,
)


def segmented_pipeline(inst: Instance, seed: int = 0) -> Solution:
    """Best layer-wise segmented pipeline (Tangram/SET/Gemini style: one layer per stage).

    Guarantee: optimal within that restriction, hence >= the merged optimum. Complexity: the DP
    with Lambda = 1, its segment values the least bottlenecks of single-layer clusters (at most M
    layers a segment), all segments from one first layer in one sweep that carries the
    threshold over as the segment grows (:func:`_layerwise_bottlenecks`): O(L M log M) plus
    O(log M) per need change, and the O(L min(Lseg, M)) outer DP; linear in L for a fixed
    module. The same solution as the inner DP restricted to Lambda = 1 (tested against the
    code before these shortcuts).
    Source: research notes section 2.b, special cases."""
    solution = dynamic_program(inst, SEGMENTED)
    if solution is None:
        raise NoSolution("no feasible segmented pipeline")
    return solution


def intra_layer(inst: Instance, seed: int = 0) -> Solution:
    """Best pure intra-layer parallel mapping: one cluster per segment, so every layer of a
    segment runs in turn on the same chiplets (the module split inside each layer).

    Guarantee: optimal within that restriction, hence >= the merged optimum. Complexity: the DP
    with K = 1, each segment's value the last point of its single cluster's front, found for every
    segment from one first layer in one vector pass: O(L min(Lseg, Lambda) M) numbers and the
    O(L Lseg) outer DP. Quadratic in L where segments are long (every segment is a candidate),
    but in numpy (4.3 s CPU at 1 282 layers, generated size 640).
    Source: research notes section 2.b, special cases."""
    solution = dynamic_program(inst, INTRA_LAYER)
    if solution is None:
        raise NoSolution("no feasible intra-layer mapping")
    return solution


# -- structures and optimal allocation ------------------------------------------------------------


def allocate(table: Table, clusters: list[tuple[int, int]]) -> tuple[float, list[Cluster]] | None:
    """Least-bottleneck allocation of chiplets and partitions to the fixed clusters of one
    segment (its last cluster has no outgoing cut); None if no allocation fits in M chiplets.

    Exact: the bottleneck is one of the clusters' stage times; at a threshold theta each cluster
    needs its fewest chiplets reaching theta, which only falls as theta grows. Sweeping every
    cluster's options in ascending stage time, an option lowers its cluster's need to its own
    chiplets (the first one met covers the cluster), so cumulative sums give the chiplets needed
    after each option, and the first point where every cluster is covered within M chiplets is
    the least feasible theta. Each cluster then takes its fewest chiplets reaching it (a binary
    search in its front). More than M clusters never fit (each takes a chiplet).
    O(n log n) for the n = sum |front| options, in numpy."""
    M = table.inst.chiplets
    if len(clusters) > M:
        return None
    last = clusters[-1][1]
    stages = []
    for i, j in clusters:
        stage = table.stages(i, j, j != last)
        if stage is None:
            return None
        stages.append(stage)
    sweep = np.concatenate([table.sweep(i, j, j != last) for i, j in clusters], axis=1)
    order = np.argsort(sweep[0], kind="stable")
    feasible = (np.cumsum(sweep[2][order]) == len(clusters)) & (np.cumsum(sweep[1][order]) <= M)
    point = int(np.argmax(feasible))
    if not feasible[point]:
        return None
    theta, bottleneck, mapped = float(sweep[0][order[point]]), 0.0, []
    for (i, j), (taus, negated, chips, partitions) in zip(clusters, stages, strict=True):
        option = bisect_left(negated, -theta)
        bottleneck = max(bottleneck, taus[option])
        mapped.append((i, j, chips[option], partitions[option]))
    return bottleneck, mapped


class StructureCost:
    """Batch time of a structure under optimal allocation, memoised per segment."""

    def __init__(self, inst: Instance):
        self.inst = inst
        self.table = Table(inst)
        self._segment = lru_cache(maxsize=None)(self._segment_cost)
        #: :func:`_bisect_segment`'s packing per (first, last): a pure function of the segment,
        #: asked again for the same segments on every pass of the segment-level moves
        self.packings: dict[tuple[int, int], list[tuple[int, int]] | None] = {}
        #: tau of every (layer, partition) alone on one chiplet with its cut, layer-major: the
        #: terms of :func:`_bisect_fresh`'s upper bound, summed in the same order
        self.single_stages = [stage_time(inst, i, i, 1, p, cut=True)
                              for i in range(inst.n_layers) for p in inst.partitions]

    def _segment_cost(self, clusters: tuple[tuple[int, int], ...]) -> tuple[float, tuple[Cluster, ...]]:
        first, last = clusters[0][0], clusters[-1][1]
        if any(j - i + 1 > self.inst.max_cluster_layers for i, j in clusters):
            return math.inf, ()
        if not self.table.candidate(first, last):
            return math.inf, ()
        result = allocate(self.table, list(clusters))
        if result is None:
            return math.inf, ()
        bottleneck, mapped = result
        return self.table.segment_time(first, last, len(clusters), bottleneck), tuple(mapped)

    def __call__(self, labels: list[int] | tuple[int, ...] | bytearray) -> float:
        return sum(self._segment(tuple(seg))[0] for seg in decode(labels))

    def segment(self, clusters: list[tuple[int, int]]) -> float:
        """Time of one segment given its clusters (inf if infeasible)."""
        return self._segment(tuple(clusters))[0]

    def mapping(self, labels: list[int] | tuple[int, ...] | bytearray) -> list[list[Cluster]]:
        return [list(self._segment(tuple(seg))[1]) for seg in decode(labels)]


class Structure:
    """A structure's gap labels with its segments' times, changed move by move.

    A move relabels one or two gaps; only the segments between the segment cuts on either side
    of them change, so only those are decoded (by byte searches, stopping at the first cluster
    that makes the region infeasible: longer than Lambda, or a segment of more than M clusters)
    and re-costed. The batch time is still the left-to-right sum of every segment's time, the
    same float as :meth:`StructureCost.__call__` on the whole labels. O(k + S) per move for k
    clusters in the region and S segments (the sum), against O(L) for a full re-evaluation."""

    def __init__(self, cost: StructureCost, labels: list[int] | bytearray):
        self.cost = cost
        self.labels = bytearray(labels)
        segments = decode(self.labels)
        self.starts = [seg[0][0] for seg in segments]
        self.times = [cost.segment(seg) for seg in segments]
        self.value = sum(self.times)
        self._undo: list[tuple[int, int]] = []
        self._pending: tuple[int, int, list[int], list[float], float] | None = None

    def propose(self, changes: list[tuple[int, int]]) -> float:
        """Apply ``changes`` (gap, label) and return the new batch time; then :meth:`accept` or
        :meth:`reject` (which restores the labels)."""
        labels = self.labels
        self._undo = [(gap, labels[gap]) for gap, _ in changes]
        for gap, label in changes:
            labels[gap] = label
        low, high = min(gap for gap, _ in changes), max(gap for gap, _ in changes)
        first = labels.rfind(SEGMENT_CUT, 0, low) + 1
        end = labels.find(SEGMENT_CUT, high + 1)
        last = end if end >= 0 else len(labels)
        region = self._region(first, last)
        if region is None:
            self._pending = None
            return math.inf
        starts, times = region
        i = bisect_right(self.starts, first) - 1
        j = bisect_right(self.starts, last)
        trial = self.times[:i] + times + self.times[j:]
        total = sum(trial)
        self._pending = (i, j, starts, trial, total)
        return total

    def accept(self) -> None:
        i, j, starts, trial, total = self._pending
        self.starts[i:j] = starts
        self.times = trial
        self.value = total

    def reject(self) -> None:
        for gap, label in reversed(self._undo):
            self.labels[gap] = label

    def _region(self, first: int, last: int) -> tuple[list[int], list[float]] | None:
        """Segment starts and times of layers first..last, None if a segment there is infeasible
        for a reason seen while decoding."""
        labels, M, span = self.labels, self.cost.inst.chiplets, self.cost.inst.max_cluster_layers
        starts, times, clusters, start = [first], [], [], first
        cluster_cut = labels.find(CLUSTER_CUT, first, last)
        segment_cut = labels.find(SEGMENT_CUT, first, last)
        while True:
            gap = min(cluster_cut if cluster_cut >= 0 else last, segment_cut if segment_cut >= 0 else last)
            if gap - start + 1 > span or len(clusters) >= M:
                return None
            clusters.append((start, gap))
            start = gap + 1
            if gap == last:
                times.append(self.cost.segment(clusters))
                return starts, times
            if gap == segment_cut:
                times.append(self.cost.segment(clusters))
                starts.append(start)
                clusters = []
                segment_cut = labels.find(SEGMENT_CUT, start, last)
            else:
                cluster_cut = labels.find(CLUSTER_CUT, start, last)


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
    (split) or change a cut's kind; allocations re-optimised by :func:`allocate`, each move
    costed incrementally (:class:`Structure`)."""
    state = Structure(cost, labels)
    gaps = len(labels)
    for _ in range(max_passes):
        improved = False
        for gap in range(gaps):
            current = state.labels
            moves = [[(gap, label)] for label in (NO_CUT, CLUSTER_CUT, SEGMENT_CUT) if label != current[gap]]
            for nxt in (gap - 1, gap + 1):
                if 0 <= nxt < gaps and current[gap] != NO_CUT and current[nxt] == NO_CUT:
                    moves.append([(gap, NO_CUT), (nxt, current[gap])])
            for move in moves:
                if state.propose(move) < state.value * (1 - 1e-12):
                    state.accept()
                    improved = True
                    break
                state.reject()
        if not improved:
            break
    return list(state.labels)


# -- heuristics ----------------------------------------------------------------------------------


def _greedy_pack(cost: StructureCost, first: int, last: int,
                 theta: float) -> tuple[list[tuple[int, int]] | None, float, float]:
    """Clusters of [first..last] with every stage time <= theta: grow the current cluster while
    that needs no more chiplets than closing it and opening a new one; None if over M.

    Also returns the interval [low, high) of thresholds around ``theta`` over which every need
    this probe looked up keeps its value, hence over which the probe makes the same decisions
    and returns the same packing (or None): a need is the first option of a front with stage
    time <= theta, unchanged while theta stays at or above that option's stage time and below
    the stage time of the option before it. O(last - first) lookups, each a binary search."""
    table, span, M = cost.table, cost.inst.max_cluster_layers, cost.inst.chiplets
    known, stages = table._stages, table.stages
    low, high = -math.inf, math.inf
    negative = -theta

    def need(i: int, j: int, cut: bool) -> float:
        nonlocal low, high
        key = (i, j, cut)
        stage = known[key] if key in known else stages(i, j, cut)
        if stage is None:
            return math.inf
        taus, negated, chips, _ = stage
        option = bisect_left(negated, negative)
        if option and taus[option - 1] < high:
            high = taus[option - 1]
        if option == len(chips):
            return math.inf
        if taus[option] > low:
            low = taus[option]
        return chips[option]

    clusters, start, used = [], first, 0.0
    close = need(first, first, True) if first < last else math.inf
    for layer in range(first, last):
        inner = layer + 1 != last
        grows = layer + 1 - start < span
        extend = need(start, layer + 1, inner) if grows else math.inf
        single = need(layer + 1, layer + 1, inner)
        if extend > close + single:
            used += close
            if used > M:  # needs only add up: infeasible whatever the rest of the walk does
                return None, low, high
            clusters.append((start, layer))
            start = layer + 1
            close = single
        elif grows:
            close = extend
        elif layer + 1 < last:
            close = need(start, layer + 1, True)
    used += need(start, last, False)
    clusters.append((start, last))
    return (clusters if used <= M else None), low, high


def _bisect_segment(cost: StructureCost, first: int, last: int) -> list[tuple[int, int]] | None:
    """Bisection on theta (relative precision 1e-6) for the least theta at which greedy packing
    fits; of the packings probed, the one with the least segment time (bubbles included).
    Memoised on ``cost`` per (first, last)."""
    key = (first, last)
    if key not in cost.packings:
        cost.packings[key] = _bisect_fresh(cost, first, last)
    return cost.packings[key]


def _bisect_fresh(cost: StructureCost, first: int, last: int) -> list[tuple[int, int]] | None:
    """The bisection of :func:`_bisect_segment`. A probe whose theta lies in the interval of the
    last feasible or the last infeasible probe (:func:`_greedy_pack`) would repeat that probe's
    answer, so it is not run: the same sequence of thetas and the same packing, with about 10 of
    a bisection's 27 probes run (generated size 160: 29 840 of 83 551)."""
    width = len(cost.inst.partitions)
    hi = sum(cost.single_stages[first * width:(last + 1) * width])  # every layer alone on one chiplet
    lo = 0.0
    packed, *fits = _greedy_pack(cost, first, last, hi)
    if packed is None:
        return None
    best, best_time = packed, cost.segment(packed)
    fails = (math.inf, -math.inf)  # the interval of the last infeasible probe (none yet)
    while hi - lo > 1e-6 * hi:
        mid = (lo + hi) / 2
        if fits[0] <= mid < fits[1]:
            hi = mid  # the last feasible probe's packing again: no better
            continue
        if fails[0] <= mid < fails[1]:
            lo = mid
            continue
        packed, *interval = _greedy_pack(cost, first, last, mid)
        if packed is None:
            lo, fails = mid, interval
            continue
        hi, fits = mid, interval
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
        while (last + 1 < inst.n_layers and cost.table.candidate(first, last + 1)
               and cost.table.weight_bytes(first, last + 1) <= cap):
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
       improves (allocations re-optimised exactly per structure, each move costed on the
       segments it touches only, :class:`Structure`); keep the best.            O(passes L) evals
    A probe also returns the interval of theta over which it gives the same answer, and the
    bisection skips every probe inside the last feasible or infeasible one's (same thetas, same
    packing; about 10 probes run of 27); a walk stops once its chiplets exceed M.
    Fronts: growing a cluster extends running sums (O(M) a layer); a cluster shorter than one
    already summed from the same first layer resumes from the sums stored every
    :data:`CHECKPOINT` layers (O(CHECKPOINT M)). Where clusters may span the chain (Lambda = L)
    the walks meet O(L Lambda) distinct clusters, each front an O(M) numpy step.
    Guarantee: a feasible mapping whenever the all-singletons structure is feasible; no
    optimality guarantee (tests give its percentile rank). Deterministic (``seed`` unused).
    Source: research notes section 2.c (our reconstruction of Scope's search) [R]."""
    return _search(inst, resegment=False)


def search_resegment(inst: Instance, seed: int = 0) -> Solution:
    """:func:`search` with a segment-level pass before the polish: split a segment in two or
    merge two neighbours, each new segment re-packed by bisection, while the batch time improves.

    Guarantee: never worse than the polished start it refines; no optimality guarantee.
    Complexity: O(Lseg) bisections per segment and pass (both halves of every split point), each
    about 10 greedy probes (of 27; :func:`_bisect_fresh`) of O(Lseg) lookups, so quadratic in
    the segment length, and more where clusters may span the chain (each walk's clusters are
    new fronts). It cannot go below that without changing its answers: every split point's
    halves are bisected with their own upper bound, so no two bisections probe the same
    thresholds, and a walk's prefix is shared with another's in about half its layers only
    (measured; saving at most 2x). Each (first, last) packing is bisected once and reused by
    later passes. Deterministic (``seed`` unused).
    Source: ours; it targets the weak point of the memory-greedy segmentation."""
    return _search(inst, resegment=True)


#: How far (layers) :func:`search_near_dp` moves each segment boundary.
NEAR_WIDTH = 2


def search_near_dp(inst: Instance, seed: int = 0) -> Solution:
    """:func:`search_resegment`, then the exact DP restricted to segment boundaries within
    :data:`NEAR_WIDTH` layers of its boundaries (:func:`coopt.problems.scope.dp.near_program`: every
    segment between candidate points gets its exact clustering, allocation and partitions, the
    outer DP the best segmentation of them).

    Guarantee: never worse than :func:`search_resegment` (its boundaries are candidates, and the
    inner DP's clustering of each of its segments is no slower than its own); optimal among the
    mappings whose boundaries all lie within ``NEAR_WIDTH`` of its boundaries. Complexity: the
    search, plus the inner DP of :func:`coopt.problems.scope.dp.dynamic_program` from at most
    ``(2 NEAR_WIDTH + 1) (segments + 1)`` starts, each over the layers to the farthest candidate end
    instead of every layer that fits the module. On ResNet-152 at 16, 36 and 64 chiplets it lands
    within 1.1 % of the optimum in about a fifth of the DP's time (docs/scope.md). Deterministic
    (``seed`` unused). Source: ours (a large-neighbourhood search whose neighbourhood the problem's
    own DP solves exactly)."""
    start = search_resegment(inst)
    starts = [segment[0]["first"] for segment in start["segments"]] + [inst.n_layers]
    found = near_program(inst, starts, NEAR_WIDTH)
    return found if found is not None and found["objective"] < start["objective"] else start


def _distinct(structures: Iterable[list[int]]) -> list[list[int]]:
    """The structures in order, each once: the passes after are deterministic, so a repeated
    start (the fill levels often give one segmentation) would only repeat their work, and the
    first least polished structure is the same."""
    return [list(labels) for labels in dict.fromkeys(tuple(labels) for labels in structures)]


def _search(inst: Instance, resegment: bool) -> Solution:
    cost = StructureCost(inst)
    L = inst.n_layers
    segmentations = (_greedy_segments(cost, fill) for fill in FILL_LEVELS)
    starts = _distinct(_labels_of(segs, L) for segs in segmentations if segs)
    if not starts:
        raise NoSolution("no segment packing fits the module")
    if resegment:
        starts = _distinct(_resegment(cost, start) for start in starts)
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
    Complexity: each move re-costs only the segments around the gaps it changes
    (:class:`Structure`): O(k |front| log + S) for k clusters there (at most M) and S segments,
    so O(L (M |front| log + S)) in all; a full re-evaluation per move made it O(L^2).
    Source: move set after repo SET-Scheduling-Project/GEMINI-HPCA2024 (segmentation.cpp), read
    only through the research notes."""
    rng = random.Random(seed)
    cost = StructureCost(inst)
    L = inst.n_layers
    state = Structure(cost, [SEGMENT_CUT] * (L - 1))
    current = state.value
    if not math.isfinite(current):
        raise NoSolution("the every-layer-its-own-segment start is infeasible")
    best, best_labels = current, bytes(state.labels)
    steps = iterations if iterations is not None else 300 * L
    t0, t1 = 0.05 * current, 1e-4 * current
    labels = state.labels
    for step in range(steps if L > 1 else 0):
        temperature = t0 * (t1 / t0) ** (step / max(1, steps - 1))
        gap = rng.randrange(L - 1)
        label = labels[gap]
        if label != NO_CUT and rng.random() < 0.5:
            nxt = gap + rng.choice((-1, 1))
            if not (0 <= nxt < L - 1 and labels[nxt] == NO_CUT):
                continue  # no move: the unchanged structure is accepted at no cost
            move = [(gap, NO_CUT), (nxt, label)]
        else:
            move = [(gap, rng.choice([x for x in (NO_CUT, CLUSTER_CUT, SEGMENT_CUT) if x != label]))]
        value = state.propose(move)
        if value <= current or rng.random() < math.exp(-(value - current) / temperature):
            state.accept()
            current = value
            if value < best:
                best, best_labels = value, bytes(labels)
        else:
            state.reject()
    return make_solution(inst, cost.mapping(best_labels))


HEURISTICS = {
    "annealing": annealing,
    "intra_layer": intra_layer,
    "search": search,
    "search_near_dp": search_near_dp,
    "search_resegment": search_resegment,
    "segmented_pipeline": segmented_pipeline,
}
