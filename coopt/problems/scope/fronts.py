"""The memoised table of the ``scope`` cost model that the exact dynamic program and the
heuristics share: each cluster's Pareto front of (chiplets, partition, stage time), cut times and
segment sums (symbols as in :mod:`coopt.problems.scope`).

Guarantee: every float is formed by the same IEEE operations in the same order as
:func:`coopt.problems.scope.model.cluster_options`, so the fronts equal the cost model's to the
last bit; segment weights and boundary bytes are integer prefix sums, hence exact.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from itertools import accumulate

import numpy as np

from coopt.problems.scope.model import (
    Instance,
    boundary_bytes,
    cut_time,
)


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
