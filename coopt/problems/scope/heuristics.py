"""Solvers of the ``scope`` problem: the exact dynamic program, the two baselines as restrictions
of it, the linear-time search and seeded simulated annealing (the full-enumeration oracle is
:mod:`coopt.problems.scope.brute`).

Symbols as in :mod:`coopt.problems.scope`: ``L`` layers, ``M`` chiplets, ``Lambda`` the
longest cluster, ``K = min(M, segment length)`` clusters per segment, ``P`` partitions.

A mapping is handled here as *structure* plus *allocation*. The structure labels each of the
``L - 1`` gaps between consecutive layers: no cut, a cluster cut, or a segment cut. For a fixed
structure the best allocation of each segment is found exactly by :func:`allocate` (a
bottleneck search over the clusters' Pareto fronts), so the heuristics search structures only.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from functools import lru_cache
from itertools import accumulate

import numpy as np
import pyomo.environ as pyo

from coopt.problem import ExactOutcome, NoSolution, Solution, SolveOptions
from coopt.problems.scope import milp as scope_milp
from coopt.problems.scope.model import (
    CLUSTER_CUT,
    INTRA_LAYER,
    MERGED,
    NO_CUT,
    SEGMENT_CUT,
    SEGMENTED,
    Cluster,
    Instance,
    Restriction,
    boundary_bytes,
    cut_time,
    decode,
    make_solution,
    segment_candidate,
    stage_time,
)
from coopt.solvers.highs import solve_model


def _running(prefix: list[int], start: int, first: int, last: int) -> np.ndarray:
    """Exact integer sums of layers start..l for l = first..last from a prefix sum, each rounded
    to float once (as the cost model's ``sum`` of integers then used in float arithmetic)."""
    return (np.array(prefix[first + 1:last + 2]) - prefix[start]).astype(float)


#: Layers between the running sums :class:`Table` keeps per first layer (memory against the
#: O(CHECKPOINT M) work of summing a cluster shorter than the longest summed from its first layer).
CHECKPOINT = 32

#: A cluster's front as stage times, their negations, chiplets and partitions (:meth:`Table.stages`).
Stages = tuple[list[float], list[float], list[int], list[str]]


class Table:
    """Memoised Pareto fronts, cut times and segment sums of one instance.

    The per-layer terms of the cost model are laid out once as (layer x chiplets) arrays, so a
    cluster's front is a few vector operations over its layers instead of a Python loop over
    chiplet counts, partitions and layers. Every float is formed by the same IEEE operations in
    the same order as :func:`coopt.problems.scope.model.cluster_options` (sums run from the
    cluster's first layer, a cumulative sum being sequential), so the fronts are equal to the
    last bit; segment weights and boundary bytes are integer prefix sums, hence exact."""

    def __init__(self, inst: Instance):
        self.inst = inst
        self._fronts: dict[tuple[int, int], list[tuple[int, str, float]]] = {}
        self._stages: dict[tuple[int, int, bool], Stages | None] = {}
        self._sweeps: dict[tuple[int, int, bool], np.ndarray] = {}
        #: per first layer, by ascending end: running sums (per partition: computation, buffer
        #: maximum, IS weights, over chiplet counts) of the clusters from it ending every
        #: :data:`CHECKPOINT` layers, and of the longest cluster from it summed so far
        self._sums: dict[int, list[tuple[int, dict]]] = {}
        layers, M = inst.layers, inst.chiplets
        self.cuts = [cut_time(inst, last) for last in range(inst.n_layers)]
        self._weights = [0, *accumulate(layer.weight_bytes for layer in layers)]
        self._inputs = [0, *accumulate(layer.input_bytes for layer in layers)]
        self._halos = [0, *accumulate(layer.halo_bytes for layer in layers)]
        self.total_weights = self._weights[-1]

        def column(key: str) -> np.ndarray:
            return np.array([float(getattr(layer, key)) for layer in layers])[:, None]

        chiplets = np.arange(1, M + 1, dtype=float)[None, :]
        self._is_coefficient = (chiplets[0] - 1) / chiplets[0]  # (a - 1) / a of the all-gather
        self._terms = {}
        for p in inst.partitions:
            extent = column("out_channels" if p == "IS" else "out_rows")
            share = np.ceil(extent / chiplets) / extent
            if p == "IS":
                buffer = column("input_bytes") + (column("output_bytes") + column("shortcut_bytes")) * share
                weights = column("weight_bytes") * share
            else:
                total = column("input_bytes") + column("output_bytes") + column("shortcut_bytes")
                halo = np.where(chiplets > 1, column("halo_bytes"), 0.0)
                buffer, weights = total * share + halo, None
            self._terms[p] = (column("macs") * share, weights, buffer)

    def weight_bytes(self, first: int, last: int) -> int:
        """:func:`segment_weight_bytes`, from a prefix sum."""
        return self._weights[last + 1] - self._weights[first]

    def longest(self, first: int) -> int:
        """How many layers from ``first`` on have weights that fit in M S (a binary search on the
        prefix sums, exact integer comparisons)."""
        cap, start = self.inst.chiplets * self.inst.sram_bytes, self._weights[first]
        layers = range(first + 1, self.inst.n_layers + 1)
        return bisect_right(layers, cap, key=lambda end: self._weights[end] - start)

    def candidate(self, first: int, last: int) -> bool:
        """:func:`segment_candidate` in O(1): weights fit in M S, DRAM need fits."""
        inst = self.inst
        if self.weight_bytes(first, last) > inst.chiplets * inst.sram_bytes:
            return False
        return self.total_weights + inst.batch * boundary_bytes(inst, first, last) <= inst.dram_bytes

    def overhead(self, first: int, last: int) -> float:
        """:func:`segment_overhead` in O(1)."""
        inst = self.inst
        moved = self.weight_bytes(first, last) + inst.batch * boundary_bytes(inst, first, last)
        return moved / inst.dram_bandwidth

    def segment_time(self, first: int, last: int, clusters: int, bottleneck: float) -> float:
        """:func:`coopt.problems.scope.model.segment_time` in O(1)."""
        return (self.inst.batch + clusters - 1) * bottleneck + self.overhead(first, last)

    def front(self, first: int, last: int) -> list[tuple[int, str, float]]:
        """(chiplets, partition, busy time), busy time strictly decreasing; [] if infeasible."""
        key = (first, last)
        if key not in self._fronts:
            inst = self.inst
            fits = self.weight_bytes(first, last) <= inst.chiplets * inst.sram_bytes
            self._fronts[key] = self._options(first, last) if fits else []
        return self._fronts[key]

    def _options_per_chiplets(self, first: int, last: int, resume: bool = False,
                              only_last: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Clusters [first..l] for l = row..last (rows) and chiplet count a (columns): the least
        busy time over the SRAM-feasible partitions (inf if none; ties: the first partition in
        ``inst.partitions``) and that partition's index, as :func:`cluster_options` picks it;
        returns (times, partitions). With ``resume`` the float sums carry on from the
        longest stored cluster from ``first`` ending before ``last`` (row = its end + 1),
        appending rows to the same sequential sums, so growing a cluster one layer costs O(M)
        and a cluster shorter than one summed before O(CHECKPOINT M), not O(length M). With
        ``only_last`` only the row of [first..last] is formed after the sums (row = last)."""
        inst = self.inst
        states = self._sums.setdefault(first, []) if resume else []
        at = bisect_left(states, last, key=lambda state: state[0]) - 1
        state = states[at] if at >= 0 else None
        row = first if state is None else state[0] + 1
        extent = states[-1][0] if states else first - 1
        # sums to store: the new longest cluster and the checkpoints it passes
        stored = [end for end in range(max(row, extent + 1), last)
                  if (end - first + 1) % CHECKPOINT == 0] + [last] if resume and last > extent else []
        saved: dict[int, dict] = {end: {} for end in stored}
        rows = slice(row, last + 1)
        kept = last if only_last else row
        best_time = np.full((last - kept + 1, inst.chiplets), np.inf)
        best_partition = np.zeros(best_time.shape, dtype=int)
        for index, p in enumerate(inst.partitions):
            comp_terms, weight_terms, buffer_terms = self._terms[p]
            if state is None:
                comp_sum = np.cumsum(comp_terms[rows], axis=0)
                buffer = np.maximum.accumulate(buffer_terms[rows], axis=0)
                weight_sum = np.cumsum(weight_terms[rows], axis=0) if p == "IS" else None
            elif row == last:  # one layer more: the next step of the same sequential sums
                comp_so_far, buffer_so_far, weights_so_far = state[1][p]
                comp_sum = (comp_so_far + comp_terms[last])[None, :]
                buffer = np.maximum(buffer_so_far, buffer_terms[last])[None, :]
                weight_sum = (weights_so_far + weight_terms[last])[None, :] if p == "IS" else None
            else:  # prepend the sums so far: cumsum then adds the new rows to them in order
                comp_so_far, buffer_so_far, weights_so_far = state[1][p]
                comp_sum = np.cumsum(np.vstack((comp_so_far, comp_terms[rows])), axis=0)[1:]
                buffer = np.maximum.accumulate(np.vstack((buffer_so_far, buffer_terms[rows])), axis=0)[1:]
                weight_sum = (np.cumsum(np.vstack((weights_so_far, weight_terms[rows])), axis=0)[1:]
                              if p == "IS" else None)
            for end in stored:
                saved[end][p] = (comp_sum[end - row].copy(), buffer[end - row].copy(),
                                 None if weight_sum is None else weight_sum[end - row].copy())
            drop = comp_sum.shape[0] - best_time.shape[0]  # all rows but the last, with only_last
            comp_sum, buffer = comp_sum[drop:], buffer[drop:]
            weight_sum = None if weight_sum is None else weight_sum[drop:]
            comp = comp_sum / inst.mac_rate
            if p == "IS":
                weights = weight_sum
                inner = _running(self._inputs, first + 1, kept, last)  # the inner layers, all-gathered
                nop = self._is_coefficient[None, :] * inner[:, None]
            else:
                weights = _running(self._weights, first, kept, last)[:, None]
                nop = np.repeat(_running(self._halos, first, kept, last)[:, None], inst.chiplets, axis=1)
            nop[:, 0] = 0.0
            busy = np.maximum(comp, nop / inst.nop_bandwidth)
            better = (weights + buffer <= inst.sram_bytes) & (busy < best_time)
            best_time = np.where(better, busy, best_time)
            best_partition = np.where(better, index, best_partition)
        if stored:
            if states and (extent - first + 1) % CHECKPOINT:
                states.pop()  # the longest cluster before this one, no checkpoint
            states.extend((end, saved[end]) for end in stored)
        return best_time, best_partition

    def _options(self, first: int, last: int) -> list[tuple[int, str, float]]:
        """:func:`coopt.problems.scope.model.cluster_options` over whole chiplet vectors."""
        times, partitions = self._options_per_chiplets(first, last, resume=True, only_last=True)
        best_time, best_partition = times[-1], partitions[-1]
        running = np.minimum.accumulate(best_time)
        improves = best_time < np.concatenate(([np.inf], running[:-1]))
        chosen = np.flatnonzero(improves)
        names, partitions, times = self.inst.partitions, best_partition[chosen], best_time[chosen]
        return [(a + 1, names[p], busy)
                for a, p, busy in zip(chosen.tolist(), partitions.tolist(), times.tolist(), strict=True)]

    def fastest(self, first: int, last: int) -> list[tuple[int, str, float] | None]:
        """The last point of the front (least busy time; fewest chiplets, then the first partition,
        reaching it) of every cluster [first..l], l in first..last, in one pass over the layers:
        None where the cluster has no SRAM-feasible option. The caller keeps the cluster's
        weights within M S, as :meth:`front` does."""
        times, partitions = self._options_per_chiplets(first, last)
        least = times.min(axis=1)
        chiplets = np.argmax(times == least[:, None], axis=1)
        return [(int(a) + 1, self.inst.partitions[partitions[row, a]], float(least[row]))
                if math.isfinite(least[row]) else None for row, a in enumerate(chiplets)]

    def cut(self, last: int) -> float:
        return self.cuts[last]

    def stages(self, first: int, last: int, cut: bool) -> Stages | None:
        """The front as stage times (busy time plus the outgoing cut if ``cut``; non-increasing),
        their negations (ascending, for :func:`bisect.bisect_left`), chiplets and partitions;
        None if the front is empty."""
        key = (first, last, cut)
        if key not in self._stages:
            front = self.front(first, last)
            extra = self.cuts[last] if cut else 0.0
            taus = [busy + extra for _, _, busy in front]
            self._stages[key] = (taus, [-tau for tau in taus], [a for a, _, _ in front],
                                 [p for _, p, _ in front]) if front else None
        return self._stages[key]

    def sweep(self, first: int, last: int, cut: bool) -> np.ndarray:
        """A non-empty front in ascending stage time, as rows: stage time, the change it makes to
        the cluster's need of chiplets (its chiplets, less those of the option before it; the
        first option met is all its chiplets) and 1 for that first option (:func:`allocate`)."""
        key = (first, last, cut)
        if key not in self._sweeps:
            taus, _, chips, _ = self.stages(first, last, cut)
            fewer = np.array(chips[::-1], dtype=float)
            first_met = np.zeros(len(chips))
            first_met[0] = 1.0
            self._sweeps[key] = np.array([taus[::-1], np.diff(fewer, prepend=0.0), first_met])
        return self._sweeps[key]



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
        for e in range(1, length + 1):
            last = first + e - 1
            if not table.candidate(first, last):
                continue
            times = (inst.batch + np.arange(F.shape[0] - 1)) * F[1:, e] + table.overhead(first, last)
            k = int(np.argmin(times)) + 1
            if math.isfinite(times[k - 1]):
                value[(first, last)] = (float(times[k - 1]), k)
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
    """The exact MILP (:func:`coopt.problems.scope.milp.build`) bounded by :func:`search`'s
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
    (:func:`coopt.problems.scope.milp.covering_floors`: area and heaviest-layer bounds on every
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
    "search_resegment": search_resegment,
    "segmented_pipeline": segmented_pipeline,
}
