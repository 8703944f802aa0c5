"""The pair table of :mod:`coopt.problems.pipeline.crossing` (the crossings the pattern schedules
of the warm start follow) against an enumeration of every per-device order of two micro-batches."""

from __future__ import annotations

import itertools

import pytest

from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline.crossing import crossing_table, round_trip
from coopt.problems.pipeline.grid import time_unit
from tests.test_pipeline_bound_release import keep_only


def longest_starts(instance, edges, start: dict) -> dict | None:
    """Earliest starts by Bellman-Ford on the longest paths: ``edges`` are (before, after, delay
    after before's end), ``start`` the fixed lower bounds; None on a positive cycle."""
    nodes = {x for edge in edges for x in edge[:2]}
    start = dict(start)
    for _ in range(len(nodes) + 1):
        changed = False
        for a, b, delay in edges:
            ready = start.get(a, 0.0) + instance.duration((a[0], a[1], 0)) + delay
            if ready > start.get(b, 0.0) + 1e-12:
                start[b], changed = ready, True
        if not changed:
            return start
    return None


def _pairs_by_enumeration(instance, s: int, delta: float) -> set[tuple[float, float]]:
    """Every (trip of i, trip of k) of two micro-batches entering stage s at 0 and delta, F and B
    passes only, for every per-device choice of F(t, k) before or after B(t, i) (2^(K-s) orders,
    no prefix structure assumed), each timed as early as its orders allow; FIFO per lane."""
    K = instance.virtual_stages
    stages = range(s, K)
    found = set()
    for choice in itertools.product((True, False), repeat=K - s):
        k_first = dict(zip(stages, choice, strict=True))  # F(t, k) before B(t, i)
        edges = []  # (before, after, lag)
        for t in stages:
            for j in ("i", "k"):
                if t + 1 < K:
                    edges.append((("F", t, j), ("F", t + 1, j), instance.lag(t, t + 1)))
                    edges.append((("B", t + 1, j), ("B", t, j), instance.lag(t + 1, t)))
            edges.append((("F", t, "i"), ("F", t, "k"), 0.0))
            edges.append((("B", t, "i"), ("B", t, "k"), 0.0))
            pair = (("F", t, "k"), ("B", t, "i")) if k_first[t] else (("B", t, "i"), ("F", t, "k"))
            edges.append((*pair, 0.0))
        for j in ("i", "k"):
            edges.append((("F", K - 1, j), ("B", K - 1, j), 0.0))
        start = longest_starts(instance, edges, {("F", s, "i"): 0.0, ("F", s, "k"): delta})
        if start is None:
            continue  # a cycle: these orders deadlock
        if start[("F", s, "k")] > delta + 1e-9:
            continue  # F(s, k) pushed past delta
        end_b = {j: start[("B", s, j)] + instance.t_b(s) for j in "ik"}
        found.add((end_b["i"], end_b["k"] - delta))
    return found


def _pareto(points: set[tuple[float, float]]) -> list[tuple[float, float]]:
    return sorted(p for p in points if not any(o != p and o[0] <= p[0] and o[1] <= p[1] for o in points))


@pytest.mark.parametrize("seed", range(6))
def test_pair_table_equals_the_enumeration_of_every_order(seed):
    """Lags, fused backward and every token stage: the table's Pareto pairs are those of the
    enumeration over all 2^(K-s) order choices (so the prefix structure loses nothing)."""
    p, m, split = ((4, 3, True), (5, 2, False), (4, 2, True))[seed % 3]
    instance = keep_only(100 + seed, p, m, split=split)
    q = time_unit(instance)
    for s in range(instance.virtual_stages - 1):
        table = crossing_table(instance, s)
        for d, points in table.items():
            expected = _pareto(_pairs_by_enumeration(instance, s, d * q))
            assert [(a * q, b * q) for a, b in points] == expected, (s, d)


def test_zero_wait_offsets_on_size_16_seed_0():
    """Stage 2 of the generator's size 16 seed 0 (round trip 57): two micro-batches cross
    without waiting only at these offsets (an enumeration, docs/notes/pipeline.md)."""
    instance = PROBLEM.generate(0, 16)
    assert round_trip(instance, 2) == 57
    table = crossing_table(instance, 2)
    zero = [d for d, points in table.items() if (57, 57) in points]
    assert zero == [7, 10, 15, 19, 23, 28, 31, 35, 38, 43, 49, 54]
    assert all(a >= 57 and b >= 57 for points in table.values() for a, b in points)
