"""Regression: the scope heuristics and baselines against a frozen copy of the code they replaced.

``python benchmarks/regression/scope_reference.py [--full]`` runs the live code and the frozen
reference (the heuristics of the ``scope`` problem as they stood at commit 5e6396a, before the
incremental evaluation, the vectorised Pareto fronts and the specialised baseline DPs; docstrings
dropped, code otherwise unchanged) on the same instances and asks for the same solution dict: same
segments, clusters, chiplets, partitions, hence the same objective, to the last bit. It prints one
line per mismatch and exits 1 if there is any, 0 otherwise.

The default run covers the small shipped files and generated sizes 4-16; ``--full`` adds every
shipped file and generated sizes 8-160 for seeds 0-2 (about half an hour of the old code).

This pins research heuristics to their old answers, so it is a benchmark assertion, not a unit
test: the product's contract (feasibility, never below the optimum) is in ``tests/``.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path

import numpy as np

from coopt.instance import load
from coopt.problem import NoSolution, Solution
from coopt.problems.scope import dp as live_dp
from coopt.problems.scope import fronts as live_fronts
from coopt.problems.scope import heuristics as solvers
from coopt.problems.scope import model as scope_model
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

INSTANCES = Path(__file__).resolve().parents[2] / "instances" / "scope"
NAMES = ("annealing", "intra_layer", "search", "search_resegment", "segmented_pipeline")


def reference(name: str, inst: Instance, seed: int = 0) -> Solution:
    """The old code's answer of heuristic ``name``."""
    if name == "annealing":
        return annealing(inst, seed)
    if name in ("search", "search_resegment"):
        return _search(inst, resegment=name == "search_resegment")
    solution = dynamic_program(inst, SEGMENTED if name == "segmented_pipeline" else INTRA_LAYER)
    if solution is None:
        raise NoSolution(name)
    return solution


def cases(full: bool) -> list[tuple[str, Instance]]:
    files = sorted(INSTANCES.glob("*.toml" if full else "0-*.toml"))
    found = [(path.stem, load(path).instance) for path in files]
    sizes, seeds = ((8, 16, 32, 64, 80, 120, 160), (0, 1, 2)) if full else ((4, 8, 16), (0, 1, 2))
    found += [(f"size{size}-seed{seed}", scope_model.generate(seed, size))
              for size in sizes for seed in seeds]
    return found


def same_heuristic(name: str, inst: Instance) -> None:
    try:
        old = reference(name, inst)
    except NoSolution:
        try:
            solvers.HEURISTICS[name](inst)
        except NoSolution:
            return
        raise AssertionError("the old code found no solution, the live code one") from None
    assert solvers.HEURISTICS[name](inst) == old


def same_annealing(seed: int) -> None:
    inst = scope_model.generate(seed, 6)
    for iterations in (0, 1, 50, 2000):
        assert solvers.annealing(inst, seed, iterations) == annealing(inst, seed, iterations), iterations


def same_dp(seed: int, size: int,
                                                                   cluster_layers: int | None) -> None:
    inst = scope_model.generate(seed, size)
    if cluster_layers is not None:
        inst = replace(inst, max_cluster_layers=cluster_layers)
    restrictions = (MERGED, SEGMENTED, INTRA_LAYER, Restriction(span=1, kmax=1), Restriction(span=2, kmax=1),
                    Restriction(kmax=2))
    for restriction in restrictions:
        assert live_dp.dynamic_program(inst, restriction) == dynamic_program(inst, restriction), restriction


def variants(seed: int, size: int) -> list[Instance]:
    """A generated instance, the same with clusters allowed to span the chain, with one
    partition only, and with SRAM so tight that some segments and clusters do not fit."""
    inst = scope_model.generate(seed, size)
    return [inst, replace(inst, max_cluster_layers=inst.n_layers), replace(inst, partitions=("WS",)),
            replace(inst, sram_bytes=inst.sram_bytes / 3)]


def same_bisection(seed: int, size: int) -> None:
    """The bisection skips probes inside the last probes' intervals and stops overfull walks
    early; neither may change a packing: every segment [first..last], against the old code."""
    for inst in variants(seed, size):
        live, old = solvers.StructureCost(inst), StructureCost(inst)
        for first in range(inst.n_layers):
            for last in range(first, inst.n_layers):
                live_packing = solvers._bisect_fresh(live, first, last)
                assert live_packing == _bisect_fresh(old, first, last), (first, last)


def same_probes(seed: int, size: int) -> None:
    """A greedy probe packs as the old one did, at the thresholds the unit test of its interval uses."""
    for inst in variants(seed, size):
        cost, old, rng = solvers.StructureCost(inst), StructureCost(inst), random.Random(seed)
        width = len(inst.partitions)
        for first in range(inst.n_layers):
            for last in range(first, inst.n_layers):
                top = sum(cost.single_stages[first * width:(last + 1) * width])
                for theta in (top, top * rng.random(), top * rng.random() ** 4):
                    live = solvers._greedy_pack(cost, first, last, theta)[0]
                    assert _greedy_pack(old, first, last, theta) == live, (first, last, theta)


def same_layerwise(seed: int, size: int) -> None:
    """The segmented pipeline's sweep gives every segment of single-layer clusters the old
    allocation's bottleneck, and stops where the old loop stopped (no allocation fits)."""
    stops = 0
    for inst in variants(seed, size):
        live, old = live_fronts.Table(inst), Table(inst)
        for first in range(inst.n_layers):
            count = min(inst.n_layers - first, inst.chiplets)
            expected = []
            for e in range(1, count + 1):
                allocated = allocate(old, [(layer, layer) for layer in range(first, first + e)])
                if allocated is None:
                    break
                expected.append(allocated[0])
            stops += len(expected) < count
            assert live_dp._layerwise_bottlenecks(live, first, count) == expected, first
    assert stops  # the stop is exercised too


def checks(full: bool) -> list[tuple[str, Callable[[], None]]]:
    """Every comparison, named, as a thunk."""
    found = [(f"{name} on {label}", partial(same_heuristic, name, inst))
             for label, inst in cases(full) for name in NAMES]
    found += [(f"annealing seed {seed}", partial(same_annealing, seed))
              for seed in (1, 7)]
    found += [(f"dp restrictions {seed}-{size} cluster_layers={layers}",
               partial(same_dp, seed, size, layers))
              for seed, size in ((0, 3), (3, 5), (5, 8)) for layers in (1, 2, None)]
    found += [(f"bisection {seed}-{size}", partial(same_bisection, seed, size))
              for seed, size in ((0, 6), (1, 9), (4, 12))]
    found += [(f"probes {seed}-{size}", partial(same_probes, seed, size))
              for seed, size in ((0, 6), (3, 9))]
    found += [(f"layer-wise bottlenecks {seed}-{size}", partial(same_layerwise, seed, size))
              for seed, size in ((0, 6), (2, 10), (5, 16))]
    return found


def main(argv: list[str]) -> int:
    failed = 0
    todo = checks("--full" in argv)
    for label, check in todo:
        try:
            check()
        except AssertionError as exc:
            failed += 1
            print(f"MISMATCH {label}: {exc}", flush=True)
    print(f"{len(todo) - failed} passed, {failed} failed")
    return 1 if failed else 0


# -- the frozen reference (the scope heuristics at commit 5e6396a) -------------------------------------


class Table:

    def __init__(self, inst: Instance):
        self.inst = inst
        self._fronts: dict[tuple[int, int], list[tuple[int, str, float]]] = {}

    def front(self, first: int, last: int) -> list[tuple[int, str, float]]:
        key = (first, last)
        if key not in self._fronts:
            inst = self.inst
            weights_fit = segment_weight_bytes(inst, first, last) <= inst.chiplets * inst.sram_bytes
            self._fronts[key] = cluster_options(inst, first, last) if weights_fit else []
        return self._fronts[key]

    def cut(self, last: int) -> float:
        return cut_time(self.inst, last)


def _segment_tables(table: Table, first: int, length: int, span: int, kmax: int):
    M = table.inst.chiplets
    K = min(M, length, kmax)
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
            rows = min(K, s + 1)
            previous = padded[:rows, s, :]
            gathered = previous[:, M + 1 + budgets[None, :] - chips[:, None]]
            inner = np.maximum(gathered, (busy + cut)[None, :, None]).min(axis=1)
            np.minimum(padded[1:rows + 1, e, M + 1:], inner, out=padded[1:rows + 1, e, M + 1:])
            closing = np.maximum(previous[:, 2 * M + 1 - chips], busy[None, :]).min(axis=1)
            np.minimum(F[1:rows + 1, e], closing, out=F[1:rows + 1, e])
    return (padded[:, :, M + 1:], F)


def _backtrack(table: Table, first: int, length: int, clusters: int, span: int, kmax: int) -> list[Cluster]:
    G, F = _segment_tables(table, first, length, span, kmax)
    M = table.inst.chiplets
    out: list[Cluster] = []
    e, k, target, budget, closing = (length, clusters, F[clusters, length], M, True)
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
        if found is None:
            raise RuntimeError('scope DP backtrack failed')
        s, a, p, rest = found
        out.append((first + s, last, a, p))
        budget = (M if closing else budget) - a
        e, k, target, closing = (s, k - 1, rest, False)
    return out[::-1]


def dynamic_program(inst: Instance, restriction: Restriction=MERGED) -> Solution | None:
    table = Table(inst)
    L, M = (inst.n_layers, inst.chiplets)
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
                value[first, last] = (float(times[k - 1]), k)
    best = [0.0] + [math.inf] * L
    choice = [-1] * (L + 1)
    for j in range(1, L + 1):
        for i in range(j):
            if (i, j - 1) in value and best[i] + value[i, j - 1][0] < best[j]:
                best[j], choice[j] = (best[i] + value[i, j - 1][0], i)
    if not math.isfinite(best[L]):
        return None
    segments, j = ([], L)
    while j > 0:
        i = choice[j]
        segments.append(_backtrack(table, i, j - i, value[i, j - 1][1], span, kmax))
        j = i
    return make_solution(inst, segments[::-1])


def allocate(table: Table, clusters: list[tuple[int, int]]) -> tuple[float, list[Cluster]] | None:
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
        chosen, used = ([], 0)
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
    lo, hi = (0, len(candidates) - 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if pick(candidates[mid]) is not None:
            hi = mid
        else:
            lo = mid + 1
    chosen = pick(candidates[lo])
    mapped = [(i, j, a, p) for (i, j), (a, p, _) in zip(clusters, chosen, strict=True)]
    return (max(o[2] for o in chosen), mapped)


class StructureCost:

    def __init__(self, inst: Instance):
        self.inst = inst
        self.table = Table(inst)
        self._segment = lru_cache(maxsize=None)(self._segment_cost)
        self.packings: dict[tuple[int, int], list[tuple[int, int]] | None] = {}

    def _segment_cost(self, clusters: tuple[tuple[int, int], ...]) -> tuple[float, tuple[Cluster, ...]]:
        first, last = (clusters[0][0], clusters[-1][1])
        if any((j - i + 1 > self.inst.max_cluster_layers for i, j in clusters)):
            return (math.inf, ())
        if not segment_candidate(self.inst, first, last):
            return (math.inf, ())
        result = allocate(self.table, list(clusters))
        if result is None:
            return (math.inf, ())
        bottleneck, mapped = result
        return (segment_time(self.inst, first, last, len(clusters), bottleneck), tuple(mapped))

    def __call__(self, labels: list[int] | tuple[int, ...]) -> float:
        return sum(self._segment(tuple(seg))[0] for seg in decode(labels))

    def segment(self, clusters: list[tuple[int, int]]) -> float:
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


def _polish(cost: StructureCost, labels: list[int], max_passes: int=50) -> list[int]:
    labels = list(labels)
    current = cost(labels)
    for _ in range(max_passes):
        improved = False
        for gap in range(len(labels)):
            moves = [[(gap, label)] for label in (NO_CUT, CLUSTER_CUT, SEGMENT_CUT) if label != labels[gap]]
            for nxt in (gap - 1, gap + 1):
                if 0 <= nxt < len(labels) and labels[gap] != NO_CUT and (labels[nxt] == NO_CUT):
                    moves.append([(gap, NO_CUT), (nxt, labels[gap])])
            for move in moves:
                trial = list(labels)
                for g, label in move:
                    trial[g] = label
                value = cost(trial)
                if value < current * (1 - 1e-12):
                    labels, current, improved = (trial, value, True)
                    break
        if not improved:
            break
    return labels


def _greedy_pack(cost: StructureCost, first: int, last: int, theta: float) -> list[tuple[int, int]] | None:
    table, inst = (cost.table, cost.inst)

    def need(i: int, j: int) -> float:
        cut = table.cut(j) if j != last else 0.0
        return next((a for a, _, busy in table.front(i, j) if busy + cut <= theta), math.inf)
    clusters, start, used = ([], first, 0.0)
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
    best, best_time = (packed, cost.segment(packed))
    while hi - lo > 1e-06 * hi:
        mid = (lo + hi) / 2
        packed = _greedy_pack(cost, first, last, mid)
        if packed is None:
            lo = mid
            continue
        hi = mid
        if cost.segment(packed) < best_time:
            best, best_time = (packed, cost.segment(packed))
    return best


FILL_LEVELS = (1.0, 0.5, 0.25)


def _greedy_segments(cost: StructureCost, fill: float) -> list[list[tuple[int, int]]] | None:
    inst = cost.inst
    cap = fill * inst.chiplets * inst.sram_bytes
    segments, first = ([], 0)
    while first < inst.n_layers:
        last = first
        while (last + 1 < inst.n_layers and segment_candidate(inst, first, last + 1)
               and (segment_weight_bytes(inst, first, last + 1) <= cap)):
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
    L = cost.inst.n_layers
    segments = [[c for c in seg] for seg in decode(labels)]
    current = sum(cost.segment(seg) for seg in segments)
    for _ in range(L):
        best = None
        for n, seg in enumerate(segments):
            first, last = (seg[0][0], seg[-1][1])
            for cut in range(first, last):
                left, right = (_bisect_segment(cost, first, cut), _bisect_segment(cost, cut + 1, last))
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


def _search(inst: Instance, resegment: bool) -> Solution:
    cost = StructureCost(inst)
    L = inst.n_layers
    starts = [_labels_of(segs, L) for segs in (_greedy_segments(cost, f) for f in FILL_LEVELS) if segs]
    if not starts:
        raise NoSolution('no segment packing fits the module')
    if resegment:
        starts = [_resegment(cost, start) for start in starts]
    labels = min((_polish(cost, start) for start in starts), key=cost)
    if not math.isfinite(cost(labels)):
        raise NoSolution('search found no feasible mapping')
    return make_solution(inst, cost.mapping(labels))


def annealing(inst: Instance, seed: int=0, iterations: int | None=None) -> Solution:
    rng = random.Random(seed)
    cost = StructureCost(inst)
    L = inst.n_layers
    labels = [SEGMENT_CUT] * (L - 1)
    current = cost(labels)
    if not math.isfinite(current):
        raise NoSolution('the every-layer-its-own-segment start is infeasible')
    best, best_labels = (current, list(labels))
    steps = iterations if iterations is not None else 300 * L
    t0, t1 = (0.05 * current, 0.0001 * current)
    for step in range(steps if L > 1 else 0):
        temperature = t0 * (t1 / t0) ** (step / max(1, steps - 1))
        trial = list(labels)
        gap = rng.randrange(L - 1)
        if trial[gap] != NO_CUT and rng.random() < 0.5:
            nxt = gap + rng.choice((-1, 1))
            if 0 <= nxt < L - 1 and trial[nxt] == NO_CUT:
                trial[gap], trial[nxt] = (NO_CUT, trial[gap])
        else:
            trial[gap] = rng.choice([x for x in (NO_CUT, CLUSTER_CUT, SEGMENT_CUT) if x != trial[gap]])
        value = cost(trial)
        if value <= current or rng.random() < math.exp(-(value - current) / temperature):
            labels, current = (trial, value)
            if value < best:
                best, best_labels = (value, list(trial))
    return make_solution(inst, cost.mapping(best_labels))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
