"""Brute force for Scope instances small enough to enumerate: the oracle of the exact methods.

:func:`enumerate_space` visits every (segmentation, clustering, allocation, partition) tuple: the
3^(L-1) gap labelings, and per segment every allocation (a_c >= 1, sum <= M) and partition vector,
screened by the checker's own rows (SRAM per cluster, DRAM per segment, cluster length, partitions
allowed) with the same functions and comparisons; no Pareto front, no bound. :func:`solve` returns
its optimum, judged by :func:`.model.check` itself.

:func:`tiny` draws the instances: 2 to 5 layers on 1 to 4 chiplets, random partition subsets,
batch 1 to 64, clusters of 1 to L layers, SRAM from the least that holds every layer upwards (so the
SRAM screen bites) and DRAM from the least any mapping fits in upwards (so the DRAM row decides
the segmentation on some), and, on about one seed in ten, capacities just below those floors
(infeasible instances).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from coopt.problems.scope.model import (
    CLUSTER_CUT,
    MERGED,
    NO_CUT,
    PARTITIONS,
    SEGMENT_CUT,
    Cluster,
    Instance,
    Restriction,
    check,
    decode,
    make_solution,
    module_instance,
    segment_dram_need,
    segment_overhead,
    sram_need,
    stage_time,
)
from coopt.problems.scope.workloads import synthetic_chain


@dataclass(frozen=True)
class Enumeration:
    """Every feasible mapping's batch time, summarised."""

    total: int  # feasible mappings
    best: float
    best_mapping: list[list[Cluster]]
    better: dict[float, int]  # for each queried objective: mappings strictly better than it

    def percentile(self, value: float) -> float:
        """Share of feasible mappings strictly better than ``value`` (0 = top)."""
        return self.better[value] / self.total


def enumerate_space(inst: Instance, queries: tuple[float, ...] = (), rel: float = 1e-9,
                    restriction: Restriction = MERGED) -> Enumeration:
    """Enumerate every (segmentation, clustering, allocation, partition) tuple (within
    ``restriction``: every gap cut for ``span = 1``, no cluster cut for ``kmax = 1``).

    Structures: 3^(L-1) gap labelings; per segment every allocation (a_c >= 1, sum <= M) and
    partition vector, SRAM- and DRAM-feasible. Segment times combine by outer sums, so the count
    below each query is exact without storing the whole space. For L <= 10, M <= 8 only."""
    L, M = inst.n_layers, inst.chiplets
    options: dict[tuple[int, int, bool], list[tuple[int, str, float]]] = {}

    def cluster_list(i: int, j: int, closing: bool):
        key = (i, j, closing)
        if key not in options:
            options[key] = [(a, p, stage_time(inst, i, j, a, p, cut=not closing))
                            for a in range(1, M + 1) for p in inst.partitions
                            if sram_need(inst, i, j, a, p) <= inst.sram_bytes]
        return options[key]

    @cache
    def segment_values(clusters: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, tuple[Cluster, ...]]:
        first, last = clusters[0][0], clusters[-1][1]
        too_long = any(j - i + 1 > inst.max_cluster_layers for i, j in clusters)
        if too_long or segment_dram_need(inst, first, last) > inst.dram_bytes:
            return np.empty(0), ()
        lists = [cluster_list(i, j, j == last) for i, j in clusters]
        # Grow the allocations cluster by cluster: chiplets used, bottleneck, option index.
        used, worst, picks = np.zeros(1, dtype=int), np.zeros(1), np.zeros((1, 0), dtype=int)
        for options_c in lists:
            chips = np.array([o[0] for o in options_c], dtype=int)
            times = np.array([o[2] for o in options_c])
            used = np.add.outer(used, chips).ravel()
            worst = np.maximum.outer(worst, times).ravel()
            picks = np.hstack([np.repeat(picks, len(options_c), axis=0),
                               np.tile(np.arange(len(options_c)), len(picks))[:, None]])
            keep = used <= M
            used, worst, picks = used[keep], worst[keep], picks[keep]
        if len(worst) == 0:
            return np.empty(0), ()
        values = (inst.batch + len(clusters) - 1) * worst + segment_overhead(inst, first, last)
        row = picks[int(np.argmin(values))]
        best_map = tuple((i, j, *lists[n][row[n]][:2]) for n, (i, j) in enumerate(clusters))
        return values, best_map

    total, best, best_mapping = 0, math.inf, []
    better = dict.fromkeys(queries, 0)
    kinds = (CLUSTER_CUT, SEGMENT_CUT) if restriction.span == 1 else (NO_CUT, CLUSTER_CUT, SEGMENT_CUT)
    if restriction.kmax == 1:
        kinds = tuple(k for k in kinds if k != CLUSTER_CUT)
    for labels in itertools.product(kinds, repeat=L - 1):
        parts = [segment_values(tuple(seg)) for seg in decode(labels)]
        if any(len(values) == 0 for values, _ in parts):
            continue
        sums = parts[0][0]
        for values, _ in parts[1:]:
            sums = np.add.outer(sums, values).ravel()
        total += len(sums)
        for q in better:  # each distinct query once (two methods may tie)
            better[q] += int(np.count_nonzero(sums < q * (1 - rel)))
        low = float(sum(values.min() for values, _ in parts))
        if low < best:
            best, best_mapping = low, [list(mapping) for _, mapping in parts]
    return Enumeration(total, best, best_mapping, better)


def solve(inst: Instance) -> float | None:
    """The brute-force optimum (None when no mapping is feasible), its mapping judged by the checker."""
    space = enumerate_space(inst)
    if space.total == 0:
        return None
    violations = check(inst, make_solution(inst, space.best_mapping))
    if violations:
        raise AssertionError(f"the brute-force optimum fails the checker: {violations[:2]}")
    return space.best


def tiny(seed: int) -> Instance:
    """A seeded instance of 2 to 5 layers on 1 to 4 chiplets (module docstring)."""
    rng = random.Random(seed)
    length, chiplets = rng.randint(2, 5), rng.randint(1, 4)
    layers = synthetic_chain(rng, length)
    partitions = rng.choice((PARTITIONS, PARTITIONS, ("IS",), ("WS",)))
    inst = module_instance(
        layers, chiplets, mac_rate_gmac_per_s=float(rng.choice((64, 256, 1024))), sram_kib=1e9,
        nop_bandwidth_gbyte_per_s=float(rng.choice((1, 4, 32))),
        dram_bandwidth_gbyte_per_s=float(rng.choice((2, 8, 64))), batch=rng.choice((1, 2, 8, 64)),
        max_cluster_layers=rng.choice((1, 2, length)),
    )
    inst = replace(inst, partitions=partitions)
    # SRAM from the largest of the layers' least needs (below it nothing fits) upwards: at the
    # low end few options fit, at the high end whole chains can merge into one cluster
    floor = max(min(sram_need(inst, i, i, a, p) for a in range(1, chiplets + 1) for p in partitions)
                for i in range(length))
    sram = floor * (rng.choice((1.0, 1.3, 2.0, 4.0, 1e3)) if rng.random() < 0.95 else 0.999)
    # DRAM from the least capacity any mapping fits in (one of the segments' needs, found by
    # enumeration) to the need of the longest segment: at the low end the row decides the mapping
    inst = replace(inst, sram_bytes=float(sram))
    needs = sorted({segment_dram_need(inst, i, j) for i in range(length) for j in range(i, length)})
    fits = [d for d in needs if enumerate_space(replace(inst, dram_bytes=float(d))).total] or needs[-1:]
    share = rng.choice((0.0, 0.2, 0.5, 1.0)) if rng.random() < 0.95 else -1e-6
    dram = fits[0] + share * (needs[-1] - fits[0])
    return replace(inst, dram_bytes=float(math.floor(dram)))
