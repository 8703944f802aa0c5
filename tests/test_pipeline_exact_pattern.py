"""The pattern schedules of :mod:`coopt.problems.pipeline.pattern` (issue 20, fifth and sixth
rounds): every one the checker accepts, entries respected, never below the enumerated optimum,
the crossing orders of the pair table against those of Model P's 682 schedule, and the 682
schedule of the generator's size 16 seed 0 that Model P now starts from (684 greedily)."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest

from coopt.problem import SolveOptions
from coopt.problems.pipeline import PROBLEM, brute, crossing, pattern
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import releases
from coopt.problems.pipeline.counts import time_unit
from coopt.problems.pipeline.milp import incumbent
from coopt.run import run
from tests.test_pipeline_bound_release import keep_only


def _entries(instance, s, d):
    first = releases(instance)[("F", s, 0)]
    return list(itertools.accumulate((d[j % len(d)] for j in range(instance.microbatches - 1)), initial=first))


#: The oracle's tiny instances and one-stage tight-cap ones (small enough to enumerate) whose
#: largest-fill stage holds two or three micro-batches.
SMALL = ([brute.tiny(seed) for seed in range(200) if pattern.token_stage(brute.tiny(seed)) is not None]
         + [keep_only(seed, 1, 3) for seed in range(40) if pattern.token_stage(keep_only(seed, 1, 3))
            is not None][:10])


def test_the_family_gives_the_pattern_search_enough_instances():
    assert len(SMALL) >= 12


def _ordered(instance):
    """Every schedule with the pair table's crossings over the shortest admitted period."""
    s = pattern.token_stage(instance)
    first, q = releases(instance)[("F", s, 0)], time_unit(instance)
    low = round((crossing.round_trip(instance, s) + instance.t_w(s)) / q)
    for period in range(low, low + pattern.PERIOD_REACH):
        found = list(pattern.admitted(instance, s, period))
        for d, tau in found:
            entries = pattern.pattern_entries(instance, d, first + (low - period) * q, first)
            yield entries, pattern.entry_schedule(instance, s, entries, pattern.crossing_orders(instance, s, d, tau))
        if found:
            return


def _never_below(instance, best) -> None:
    s = pattern.token_stage(instance)
    for entries, timed in _ordered(instance):
        if timed is None:
            continue
        solution = pm.to_solution(instance, timed)
        assert not pm.check(instance, solution)
        assert best is not None and pm.objective(instance, solution) >= best - 1e-9
        assert all(timed.start[("F", s, j)] >= e - 1e-9 for j, e in enumerate(entries))
    value, solution = pattern.pattern_incumbent(instance, float("inf"))
    if solution is None:
        assert best is None or value == float("inf")  # nothing was claimed
        return
    assert not pm.check(instance, solution)
    assert value == pytest.approx(pm.objective(instance, solution))
    assert best is not None and value >= best - 1e-9


@pytest.mark.parametrize("index", range(len(SMALL)))
def test_pattern_schedules_are_checked_and_never_below_the_enumerated_optimum(index):
    _never_below(SMALL[index], brute.enumerate_optimum(SMALL[index]))


@pytest.mark.parametrize(("size", "seed"), [(3, 2), (4, 0), (4, 1)])
def test_pattern_schedules_never_below_model_p_on_the_generator(size, seed):
    instance = PROBLEM.generate(seed, size)
    assert pattern.token_stage(instance) is not None
    report = run(PROBLEM, instance, "exact", SolveOptions(time_limit=60, gap=1e-9, threads=1))
    assert report.status == "optimal"
    _never_below(instance, report.objective)


def test_entry_schedule_never_starts_a_token_forward_before_its_entry():
    instance = PROBLEM.generate(0, 16)
    s = pattern.token_stage(instance)
    assert s == 2
    for d in itertools.islice(pattern.periodic_patterns(instance, s, 61), 5):
        entries = _entries(instance, s, d)
        timed = pattern.entry_schedule(instance, s, entries)
        assert timed is not None
        for j, e in enumerate(entries):
            assert timed.start[("F", s, j)] >= e - 1e-9
        assert not pm.check(instance, pm.to_solution(instance, timed))


def test_size_16_seed_0_pattern_6_23_31_gives_684():
    """Below every heuristic's 692-694; the 682 of the fourth round needed Model P per pattern."""
    instance = PROBLEM.generate(0, 16)
    assert next(pattern.periodic_patterns(instance, 2, 59), None) is None  # none at period 59
    assert (6, 23, 31) in set(pattern.periodic_patterns(instance, 2, 60))
    timed = pattern.entry_schedule(instance, 2, _entries(instance, 2, (6, 23, 31)))
    solution = pm.to_solution(instance, timed)
    assert not pm.check(instance, solution)
    assert pm.objective(instance, solution) == 684


def test_pair_table_orders_are_those_of_model_p_on_16_16_28():
    """Model P with F(2, j) fixed to (16, 16, 28) (the fourth round, 682) runs, per stage t >= 2,
    F(t, k) before B(t, i) exactly for t < sigma with sigma 12, 9, 8, 5 at offsets 16, 28, 32, 44
    (read off its schedule); the pair table's least-sum orders for the trips (58, 58, 58) are
    the same."""
    instance = PROBLEM.generate(0, 16)
    d, tau = next((d, tau) for d, tau in pattern.admitted(instance, 2, 60) if d == (16, 16, 28))
    assert tau == (58, 58, 58)
    order = pattern.crossing_orders(instance, 2, d, tau)
    assert {k: order[k] for k in [(0, 1), (1, 2), (2, 3), (0, 2), (1, 3), (2, 4)]} == {
        (0, 1): 12, (1, 2): 12, (2, 3): 9, (0, 2): 8, (1, 3): 5, (2, 4): 5}
    assert order[(30, 31)] == 12 and (0, 3) not in order and len(order) == 31 + 30


def test_size_16_seed_0_ordered_16_16_28_gives_682():
    """The list schedule with those orders and entries anchored at 3 (F(2, 3) may enter at its
    earliest, 4 + 57 + 2 = 63): Model P's 682, where the greedy crossings give 706."""
    instance = PROBLEM.generate(0, 16)
    d, tau = (16, 16, 28), (58, 58, 58)
    entries = pattern.pattern_entries(instance, d, 3.0, 4.0)
    assert entries[:5] == [4.0, 19.0, 35.0, 63.0, 79.0]
    timed = pattern.entry_schedule(instance, 2, entries, pattern.crossing_orders(instance, 2, d, tau))
    solution = pm.to_solution(instance, timed)
    assert not pm.check(instance, solution)
    assert pm.objective(instance, solution) == 682
    greedy = pm.to_solution(instance, pattern.entry_schedule(instance, 2, entries))
    assert pm.objective(instance, greedy) > 700


def test_size_16_seed_0_pattern_incumbent_is_682():
    instance = PROBLEM.generate(0, 16)
    value, solution = pattern.pattern_incumbent(instance, 692.0)
    assert solution is not None and not pm.check(instance, solution)
    assert value == pm.objective(instance, solution) == 682


def test_a_schedule_that_falls_behind_its_entries_is_given_up():
    """``late``: the greedy schedule of (16, 16, 28) enters stage 2 late; with ``late`` below its
    largest lateness it is given up, at that lateness it is the same schedule."""
    instance = PROBLEM.generate(0, 16)
    entries = _entries(instance, 2, (16, 16, 28))
    timed = pattern.entry_schedule(instance, 2, entries)
    behind = max(timed.start[("F", 2, j)] - e for j, e in enumerate(entries))
    assert behind > 0
    assert pattern.entry_schedule(instance, 2, entries, late=behind - 0.5) is None
    assert pattern.entry_schedule(instance, 2, entries, late=behind).start == timed.start


def test_model_p_starts_from_the_pattern_schedule_on_size_12():
    """Generated size 12 seed 1: the heuristics give 576, the pattern schedules 568."""
    instance = PROBLEM.generate(1, 12)
    value, solution = incumbent(instance)
    assert solution is not None and not pm.check(instance, solution)
    assert value == 568


def _benchmark():
    """benchmarks/pipeline_exact.py as a module (its --fix-entries restrictions of Model P)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "pipeline_exact.py"
    spec = importlib.util.spec_from_file_location("pipeline_exact", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stage_entries(solution, s):
    return {x["microbatch"]: x["start"] for x in solution["passes"] if x["kind"] == "F" and x["stage"] == s}


def test_shifted_entries_keep_their_offsets_and_never_beat_the_optimum():
    """--fix-entries LO HI --shift (seventh round): the stretch keeps the optimum's offsets at a free
    shift; at the proven optimum's horizon it finds a schedule of that value with those offsets,
    one unit below it none (a restriction of Model P, so nothing below a proven optimum)."""
    bench = _benchmark()
    instance = PROBLEM.generate(0, 4)
    s, q = pattern.token_stage(instance), time_unit(instance)
    report = run(PROBLEM, instance, "exact", SolveOptions(time_limit=60, gap=1e-9, threads=1))
    assert report.status == "optimal" and s == 0
    around = _stage_entries(report.solution, s)
    fixed = range(2, 6)
    _, solution = bench._restricted(instance, s, around, report.objective, fixed, None, 60, shift=True)
    assert solution is not None and not pm.check(instance, solution)
    assert pm.objective(instance, solution) == pytest.approx(report.objective)
    found = _stage_entries(solution, s)
    assert all(found[j] - found[2] == pytest.approx(around[j] - around[2]) for j in fixed)
    result, below = bench._restricted(instance, s, around, report.objective - q, fixed, None, 60, shift=True)
    assert below is None and result.objective is None


def test_pattern_sweep_schedules_follow_their_pattern_and_never_beat_the_optimum():
    """--sweep-patterns: every admitted pattern of the shortest period on F(s, 2..4), shifted
    freely ((7, 11) and (11, 7) at period 18 here); each schedule found is accepted by the
    checker, follows its pattern's offsets and is never below Model P's proven optimum, which one
    of them reaches."""
    bench = _benchmark()
    instance = PROBLEM.generate(0, 4)
    s, q = pattern.token_stage(instance), time_unit(instance)
    report = run(PROBLEM, instance, "exact", SolveOptions(time_limit=60, gap=1e-9, threads=1))
    assert report.status == "optimal"
    rows = list(bench._pattern_sweep(instance, s, range(2, 5), report.objective + 10 * q, 60))
    assert [d for d, _, _ in rows] == [(7, 11), (11, 7)]
    only = list(bench._pattern_sweep(instance, s, range(2, 5), report.objective + 10 * q, 60, {(11, 7)}))
    assert [d for d, _, _ in only] == [(11, 7)]  # --sweep-only
    assert only[0][1].status == rows[1][1].status
    assert any(solution is not None and pm.objective(instance, solution) == pytest.approx(report.objective)
               for _, _, solution in rows)
    for d, _, solution in rows:
        if solution is None:
            continue
        assert not pm.check(instance, solution)
        assert pm.objective(instance, solution) >= report.objective - 1e-9
        found = _stage_entries(solution, s)
        assert [round((found[j + 1] - found[j]) / q) for j in range(2, 4)] == list(d)
