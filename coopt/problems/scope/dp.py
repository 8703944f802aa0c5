"""The exact dynamic program of the ``scope`` problem (the registered ``exact``) and its two
restrictions, the layer-wise segmented pipeline and the pure intra-layer mapping (symbols as in
:mod:`coopt.problems.scope`: ``L`` layers, ``M`` chiplets, ``Lambda`` the longest cluster,
``K = min(M, segment length)`` clusters per segment).

An outer DP over segment boundaries; inside each segment an inner DP over (clusters, layers,
chiplets) on the clusters' Pareto fronts (:class:`.fronts.Table`). Exact over the whole merged
space: every mapping is a segmentation, each segment a clustering with an allocation, and the
inner DP keeps, per (k, layers, chiplets), the least bottleneck, which is all the segment time
depends on for a fixed k. The MILP of :mod:`.milp` and the enumeration of :mod:`.brute` check it.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Iterable

import numpy as np

from coopt.limits import timed_out
from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination
from coopt.problems.scope.fronts import Stages, Table
from coopt.problems.scope.model import (
    MERGED,
    Cluster,
    Instance,
    Restriction,
    make_solution,
)


def _best_cluster_counts(inst: Instance, table: Table, F: np.ndarray, first: int, lasts: Iterable[int],
                         value: dict[tuple[int, int], tuple[float, int]]) -> None:
    """For each segment ``first..last`` (a candidate), the fastest cluster count k and its batch
    time ``(batch + k - 1) F[k, e] + overhead`` into ``value[(first, last)]``, from the segment's
    front table ``F`` (rows: clusters, columns: layers ``e = last - first + 1``)."""
    for last in lasts:
        if not table.candidate(first, last):
            continue
        e = last - first + 1
        times = (inst.batch + np.arange(F.shape[0] - 1)) * F[1:, e] + table.overhead(first, last)
        k = int(np.argmin(times)) + 1
        if math.isfinite(times[k - 1]):
            value[(first, last)] = (float(times[k - 1]), k)


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


def _layerwise_bottlenecks(table: Table, first: int, count: int) -> list[float]:
    """Least bottleneck of the segments [first..first+e-1] of single-layer clusters (each with
    its outgoing cut but the last) on at most M chiplets, for e = 1, 2, ... up to ``count`` or
    the first e with no allocation: the value of :func:`allocate` on each, in one sweep.

    The least bottleneck is the least stage time theta at which the clusters' fewest chiplets
    reaching theta sum to at most M, a float of the instance's fronts whatever finds it. It only
    grows with e (a new cluster needs chiplets, and the old last cluster gains its cut), so the
    sweep carries theta over from e - 1 and raises it from one change point of a need to the
    next (a heap of every cluster's next smaller need) until the needs fit: O(e log e) a step
    plus O(log e) per need change, against O(e |front| log) for a fresh :func:`allocate`."""
    M = table.inst.chiplets
    theta, used, missing = -math.inf, 0, 0  # chiplets of the covered cut clusters, uncovered ones
    chosen: dict[int, int] = {}  # cut cluster -> its option at theta (len(front): none reaches it)
    upcoming: list[tuple[float, int]] = []  # (stage time at which its need next falls, cluster)
    values: list[float] = []

    def settle(layer: int, stage: Stages) -> None:
        """Re-pick the option of cut cluster ``layer`` at theta and schedule its next change."""
        nonlocal used, missing
        taus, negated, chips, _ = stage
        old = chosen.get(layer)
        if old is not None:
            used, missing = (used - chips[old], missing) if old < len(chips) else (used, missing - 1)
        option = chosen[layer] = bisect_left(negated, -theta)
        used, missing = (used + chips[option], missing) if option < len(chips) else (used, missing + 1)
        if option:
            heapq.heappush(upcoming, (taus[option - 1], layer))

    for e in range(1, count + 1):
        last = first + e - 1
        if e > 1:
            stage = table.stages(last - 1, last - 1, True)
            if stage is None:
                break
            settle(last - 1, stage)
        closing = table.stages(last, last, False)
        if closing is None:
            break
        taus, negated, chips, _ = closing
        while True:
            option = bisect_left(negated, -theta)
            if not missing and option < len(chips) and used + chips[option] <= M:
                values.append(theta)
                break
            following = min(upcoming[0][0] if upcoming else math.inf,
                            taus[option - 1] if option else math.inf)
            if following == math.inf:
                return values  # no threshold fits these clusters, nor any longer segment's
            theta = following
            while upcoming and upcoming[0][0] <= theta:
                layer = heapq.heappop(upcoming)[1]
                settle(layer, table.stages(layer, layer, True))
    return values


def dynamic_program(inst: Instance, restriction: Restriction = MERGED) -> Solution | None:
    """Optimal mapping of the chain within ``restriction`` (None: no feasible mapping).

    Outer DP ``best(j) = min_i best(i-1) + S(i, j)`` over segmentations, with ``S(i, j) =
    min_k (b + k - 1) F_k(i, j) + load + spill`` and ``F_k`` from the inner DP over clusters,
    chiplet counts (at most m) and partitions (Pareto fronts). Exact for the cost model of
    :mod:`coopt.problems.scope`. O(L * Lseg * Lambda * |front| * K * M) where ``Lseg`` is the
    longest segment whose weights fit in M S. Source: research notes section 2.b (DP) [R].

    The two baselines' restrictions get the same ``S(i, j)`` more directly (the same floats, so
    the same optimum and the same mapping; tests compare them with the inner DP):

    * one layer per cluster (``span = 1``): a segment of e layers has exactly e clusters, so
      ``F_e(i, j)`` is the least bottleneck of its single-layer clusters, :func:`allocate`'s
      (the DP's min-max and the threshold search both return the least feasible stage time),
      for every e from one first layer in one sweep (:func:`_layerwise_bottlenecks`);
      e <= min(M, kmax), and once no allocation fits none fits a longer segment.
      O(L M log M) plus O(log M) per need change.
    * one cluster per segment (``kmax = 1``): ``F_1(i, j)`` is the least busy time on at most M
      chiplets, the last point of the cluster's front (:meth:`Table.fastest`, one vector pass
      per first layer). O(L min(Lseg, Lambda) M) numbers."""
    table = Table(inst)
    L, M = inst.n_layers, inst.chiplets
    span = min(inst.max_cluster_layers, restriction.span or inst.max_cluster_layers)
    kmax = restriction.kmax or M
    value: dict[tuple[int, int], tuple[float, int]] = {}
    fastest: dict[tuple[int, int], tuple[int, str, float]] = {}
    for first in range(L):
        length = table.longest(first)
        if length == 0:
            continue
        if span == 1:
            bottlenecks = _layerwise_bottlenecks(table, first, min(length, M, kmax))
            for e, bottleneck in enumerate(bottlenecks, start=1):
                last = first + e - 1
                if table.candidate(first, last):
                    value[(first, last)] = (table.segment_time(first, last, e, bottleneck), e)
            continue
        if kmax == 1:
            for last, option in enumerate(table.fastest(first, first + min(length, span) - 1), start=first):
                if option is not None and table.candidate(first, last):
                    fastest[(first, last)] = option
                    value[(first, last)] = (inst.batch * option[2] + table.overhead(first, last), 1)
            continue
        _, F = _segment_tables(table, first, length, span, kmax)
        _best_cluster_counts(inst, table, F, first, range(first, first + length), value)
    ending: list[list[tuple[int, float]]] = [[] for _ in range(L)]
    for (i, last), (time_of, _) in sorted(value.items()):
        ending[last].append((i, time_of))
    best = [0.0] + [math.inf] * L
    choice = [-1] * (L + 1)
    for j in range(1, L + 1):
        for i, time_of in ending[j - 1]:
            if best[i] + time_of < best[j]:
                best[j], choice[j] = best[i] + time_of, i
    if not math.isfinite(best[L]):
        return None
    segments, j = [], L
    while j > 0:
        i = choice[j]
        if kmax == 1 and span > 1:
            chiplets, partition, _ = fastest[(i, j - 1)]
            segments.append([(i, j - 1, chiplets, partition)])
        else:
            segments.append(_backtrack(table, i, j - i, value[(i, j - 1)][1], span, kmax))
        j = i
    return make_solution(inst, segments[::-1])


def near_program(inst: Instance, boundaries: list[int], width: int) -> Solution | None:
    """The exact DP of :func:`dynamic_program` restricted to segment boundaries within ``width``
    layers of ``boundaries`` (the starts of a mapping's segments, and ``L``): every segment between
    two such points gets its exact clustering, allocation and partitions (the inner DP, run once per
    candidate start up to the farthest candidate end), and the outer DP picks the best
    segmentation among them. None when no segmentation of those points is feasible.

    Guarantee: no slower than any mapping whose segment boundaries all lie within ``width`` of
    ``boundaries``, the mapping the boundaries came from included. O(P * Lnear * Lambda * |front|
    * K * M) with ``P <= (2 width + 1) (segments + 1)`` candidate points and ``Lnear`` the longest
    segment between them, against O(L * Lseg * ...) for the whole DP."""
    table = Table(inst)
    L, M = inst.n_layers, inst.chiplets
    span, kmax = inst.max_cluster_layers, M
    near = {p + d for p in boundaries for d in range(-width, width + 1)}
    points = sorted(near & set(range(L + 1)) | {0, L})
    value: dict[tuple[int, int], tuple[float, int]] = {}
    for first in points[:-1]:
        ends = [e for e in points if first < e <= first + table.longest(first)]
        if not ends:
            continue
        _, F = _segment_tables(table, first, ends[-1] - first, span, kmax)
        _best_cluster_counts(inst, table, F, first, [end - 1 for end in ends], value)
    best = {0: 0.0}
    choice: dict[int, int] = {}
    for end in points[1:]:
        for (first, last), (time_of, _) in value.items():
            if last + 1 == end and first in best and best[first] + time_of < best.get(end, math.inf):
                best[end], choice[end] = best[first] + time_of, first
    if L not in best:
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
    """The exact method ``exact``: :func:`dynamic_program` over the whole (merged) space, stopped
    at the time limit (status ``time_limit``, no solution: the DP has none before it ends)."""
    stopped, solution = timed_out(lambda: dynamic_program(inst), options.time_limit, "the scope DP")
    if stopped:
        return ExactOutcome(None, Termination.LIMIT, None)
    if solution is None:
        return ExactOutcome(None, "infeasible", None)
    return ExactOutcome(solution, "optimal", solution["objective"])
