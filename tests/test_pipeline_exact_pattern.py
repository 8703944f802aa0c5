"""The pattern schedules of :mod:`coopt.problems.pipeline.pattern` (part of the warm start): every
one the checker accepts, entries respected, never below the enumerated optimum or Model P's
proven optimum, and a schedule that falls behind its entries given up. Their values on the
generator's sizes 12 and 16 are benchmark assertions (benchmarks/regression/pipeline_pattern.py)."""

from __future__ import annotations

import itertools

import pytest

from coopt.problem import SolveOptions
from coopt.problems.pipeline import PROBLEM, brute, crossing, pattern
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import releases
from coopt.problems.pipeline.grid import time_unit
from coopt.run import run
from tests import _pipeline_shared
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
    _never_below(SMALL[index], _pipeline_shared.enumerate_optimum(SMALL[index]))


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
