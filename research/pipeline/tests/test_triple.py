"""The triple relaxation T(s) of :mod:`research.pipeline.triple`: its triple table against an
enumeration of every per-device order of three micro-batches
(no prefix or nesting assumed, the caps read at every forward), and the dynamic program never
above an optimum found without it."""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from coopt.problems.pipeline import PROBLEM, brute, milp
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.crossing import crossing_table, round_trip
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.warm import incumbent
from coopt.solvers.highs import solve_model
from research.pipeline import counts
from research.pipeline.triple import TripleTable, dp_bound, token_stages
from tests.test_pipeline_bound_release import OPTIONS, keep_only
from tests.test_pipeline_pair_table import longest_starts


def _triples_by_enumeration(instance, s: int, d1: int, d2: int) -> set[tuple[int, int, int]]:
    """Every trip triple of micro-batches 0, 1, 2 entering stage s at 0, d1, d1 + d2 (units of
    q), F and B passes only, for every choice per stage and pair x < y of F(t, y) before or after
    B(t, x), and where it is after, of W(t, x) ended before F(t, y) or not; a choice whose cap
    level at a forward start exceeds the cap is dropped; timed as early as the orders allow."""
    return {trips for _, trips in _orders_by_enumeration(instance, s, d1, d2)}


def _orders_by_enumeration(instance, s: int, d1: int, d2: int):
    """The choices of :func:`_triples_by_enumeration` that admit the offsets, each as (its
    orders: (t, x, y) -> F(t, y) before B(t, x), the trips)."""
    q = time_unit(instance)
    K = instance.virtual_stages
    stages = list(range(s, K))
    slots = [(t, x, y) for t in stages for x, y in ((0, 1), (0, 2), (1, 2))]
    for order in itertools.product((True, False), repeat=len(slots)):
        first = dict(zip(slots, order, strict=True))  # F(t, y) before B(t, x)
        after = [slot for slot in slots if not first[slot]]
        for waits in itertools.product((True, False), repeat=len(after)):
            w_done = dict(zip(after, waits, strict=True))
            fits = True
            for t in stages:
                room = instance.cap_room(instance.device(t)) / instance.a(t)
                share = instance.a_w(t) / instance.a(t)
                for y in (1, 2):
                    level = 1 + sum(1 if first[(t, x, y)] else 0 if w_done[(t, x, y)] else share
                                    for x in range(y))
                    fits &= level <= room
            if not fits:
                continue
            edges = []  # (before, after, extra delay after its end)
            for t in stages:
                for j in range(3):
                    if t + 1 < K:
                        edges.append((("F", t, j), ("F", t + 1, j), instance.lag(t, t + 1)))
                        edges.append((("B", t + 1, j), ("B", t, j), instance.lag(t + 1, t)))
                    if j:
                        edges.append((("F", t, j - 1), ("F", t, j), 0.0))
                        edges.append((("B", t, j - 1), ("B", t, j), 0.0))
                for x, y in ((0, 1), (0, 2), (1, 2)):
                    if first[(t, x, y)]:
                        edges.append((("F", t, y), ("B", t, x), 0.0))
                    else:
                        wait = instance.duration(("W", t, 0)) if w_done[(t, x, y)] else 0.0
                        edges.append((("B", t, x), ("F", t, y), wait))
            for j in range(3):
                edges.append((("F", K - 1, j), ("B", K - 1, j), 0.0))
            offsets = (0, d1 * q, (d1 + d2) * q)
            start = longest_starts(instance, edges, {("F", s, j): offsets[j] for j in range(3)})
            if start is None:
                continue  # a cycle: these orders deadlock
            if any(start[("F", s, j)] > offsets[j] + 1e-9 for j in range(3)):
                continue
            yield first, tuple(round((start[("B", s, j)] + instance.t_b(s) - offsets[j]) / q) for j in range(3))


def _pareto(points: set[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    return sorted(p for p in points
                  if not any(o != p and all(u <= v for u, v in zip(o, p, strict=True)) for o in points))


def _held_until_w(instance: pm.Instance) -> pm.Instance:
    """The instance with a_W = a / 2 and a cap of two micro-batches everywhere: a forward waits
    for the W of the micro-batch two before it (or for the B of the one before it)."""
    a = instance.activation_bytes
    return dataclasses.replace(instance, weight_grad_bytes=tuple(x / 2 for x in a),
                               memory_cap_bytes=tuple(2 * x for x in a))


@pytest.mark.parametrize("seed", range(8))
def test_triple_table_equals_the_enumeration_of_every_order(seed):
    """Two stages from the token on, lags, a_W 0 or a / 2, caps of one to three micro-batches
    (seeds 6-7: two everywhere with a_W = a / 2, where W ends gate forwards): the table's Pareto
    triples are those of the enumeration (so the prefixes, their nesting and the min-max cap
    nodes lose nothing and admit nothing extra)."""
    instance = keep_only(200 + seed, 3, 3, split=True)
    if seed >= 6:
        instance = _held_until_w(instance)
    rng = random.Random(seed)
    q = time_unit(instance)
    for s in (1,):
        table = TripleTable(instance, s)
        R = round(round_trip(instance, s) / q)
        for d1, d2 in {(rng.randint(1, R), rng.randint(1, R)) for _ in range(4)} | {(1, 1)}:
            assert table.trips(d1, d2) == _pareto(_triples_by_enumeration(instance, s, d1, d2)), (s, d1, d2)


def test_triple_table_projects_onto_the_pair_table_on_size_16_seed_0():
    """Stage 2 of the generator's size 16 seed 0: every triple's first two trips dominate a pair
    of :mod:`.crossing`'s table at d1, its last two one at d2 (the pair table ignores the caps
    and the third micro-batch, so it can only admit more)."""
    instance = PROBLEM.generate(0, 16)
    table, pairs = TripleTable(instance, 2), crossing_table(instance, 2)
    for d1 in (3, 7, 10, 16, 28):
        for d2 in (3, 7, 16, 28, 40):
            triples = table.trips(d1, d2)
            assert triples
            for a, b, c in triples:
                assert any(a >= u and b >= v for u, v in pairs[d1]), (d1, d2)
                assert any(b >= u and c >= v for u, v in pairs[d2]), (d1, d2)
    # the entry 3 and 3 apart of X({2})'s optimum: X admits trips (57, 61, 76), three in flight do not
    assert all(c >= 77 or b >= 64 for a, b, c in table.trips(3, 3))


def _with_cap_three(instance: pm.Instance, stage: int) -> pm.Instance:
    """The instance with stage ``stage``'s cap at three micro-batches' activations."""
    caps = list(instance.memory_cap_bytes)
    caps[stage] = 3 * instance.activation_bytes[stage]
    return dataclasses.replace(instance, memory_cap_bytes=tuple(caps))


@pytest.mark.parametrize("seed", range(12))
def test_dp_bound_never_above_the_enumerated_optimum(seed):
    """p = 2 and m = 3, or p = 1 and m = 4-5, fused backward (the enumeration covers every
    per-device order, with overtaking), one stage capped at three micro-batches; T(s) <=
    T_sigma(s) <= the optimum."""
    rng = random.Random(300 + seed)
    p, m = ((2, 3), (1, 4), (1, 5))[seed % 3]
    instance = _with_cap_three(keep_only(300 + seed, p, m, split=False), rng.randrange(p))
    if brute.enumeration_size(instance) > 200_000:
        pytest.skip("too large to enumerate")
    best = brute.enumerate_optimum(instance)
    if best is None:
        pytest.skip("no schedule fits the caps")
    upper, _ = incumbent(instance)
    assert token_stages(instance)
    for s in token_stages(instance):
        assert dp_bound(instance, s, upper) <= best + 1e-9, s
        # T_sigma(s) only removes solutions of T(s)
        assert dp_bound(instance, s, upper) - 1e-9 <= dp_bound(instance, s, upper, agree=True) <= best + 1e-9, s


#: Instances of the Model N family of test_pipeline_bound_release (p 2-4, m 4-8), one stage at cap 3a.
MODEL_N_SEEDS = range(10)


@pytest.mark.parametrize("seed", MODEL_N_SEEDS)
def test_dp_bound_never_above_model_n(seed):
    """Model N solved without a dual-bound floor (it owes nothing to either bound) is exact on
    these keep-only grid instances; T(s) never exceeds its optimum."""
    rng = random.Random(2000 + seed)
    p, m = rng.randint(2, 4), rng.randint(4, 8)
    instance = _with_cap_three(keep_only(2000 + seed, p, m, split=rng.random() < 0.8), rng.randrange(p))
    upper, start = incumbent(instance)
    model = counts.build_counts(instance, counts.horizon_slots(instance, upper), 0.0, start)
    result = solve_model(model, OPTIONS)
    if result.status == "infeasible":
        pytest.skip("no schedule fits the caps")
    assert result.status == "optimal"
    for s in token_stages(instance):
        assert dp_bound(instance, s, upper) <= result.objective + 1e-9, s


@pytest.mark.parametrize(("size", "seed"), [(3, 0), (3, 1), (3, 2), (4, 0), (4, 1), (4, 2)])
def test_dp_bound_never_above_model_p_on_the_generator(size, seed):
    """Model P's proven optima on the generator (sizes 3-4) bound T(s) and T_sigma(s) on every
    token stage."""
    instance = PROBLEM.generate(seed, size)
    upper, start = incumbent(instance)
    result = solve_model(milp.build(instance, incumbent=start), OPTIONS)
    assert result.status == "optimal"
    for s in token_stages(instance):
        assert dp_bound(instance, s, upper) <= result.objective * (1 + 1e-9) + 1e-9, s
        assert dp_bound(instance, s, upper, agree=True) <= result.objective * (1 + 1e-9) + 1e-9, s


# --- T_sigma(s): consecutive triples agree on their shared pair's crossing order


def _sigma(first: dict, s: int, K: int, x: int, y: int) -> int:
    """The crossing stage of pair (x, y) in an enumerated choice, relative to s: the number of
    stages where F(t, y) runs before B(t, x), asserted to be a prefix."""
    runs = [first[(t, x, y)] for t in range(s, K)]
    sigma = sum(runs)
    assert runs == [True] * sigma + [False] * (len(runs) - sigma), "a choice that is not a prefix"
    return sigma


@pytest.mark.parametrize("seed", range(8))
def test_ordered_table_equals_the_enumeration_grouped_by_the_shared_orders(seed):
    """Per (sigma_ik, sigma_kl), the table's Pareto trips are those of the enumeration's choices
    with those crossings (every choice the enumeration admits is a prefix, asserted)."""
    instance = keep_only(200 + seed, 3, 3, split=True)
    if seed >= 6:
        instance = _held_until_w(instance)
    rng = random.Random(seed)
    q = time_unit(instance)
    s, K = 1, instance.virtual_stages
    table = TripleTable(instance, s, by_order=True)
    R = round(round_trip(instance, s) / q)
    for d1, d2 in {(rng.randint(1, R), rng.randint(1, R)) for _ in range(4)} | {(1, 1)}:
        groups: dict[tuple[int, int], set] = {}
        for first, trips in _orders_by_enumeration(instance, s, d1, d2):
            groups.setdefault((_sigma(first, s, K, 0, 1), _sigma(first, s, K, 1, 2)), set()).add(trips)
        expected = {key: _pareto(found) for key, found in groups.items()}
        got: dict[tuple[int, int], list] = {}
        for ik in range(K - s + 1):
            for trips, kl in table.ordered(d1, d2, ik):
                got.setdefault((ik, kl), []).append(trips)
        assert {key: sorted(v) for key, v in got.items()} == expected, (d1, d2)
        assert sorted(trips for trips, _ in table.ordered(d1, d2, None)) == sorted(
            p for v in expected.values() for p in v)
