"""The research restrictions of Model P in :mod:`research.pipeline.bench` (``--fix-entries``,
``--shift``, ``--sweep-patterns``, ``--sweep-only``): every schedule found is checked, keeps its
pattern's offsets and never beats Model P's proven optimum."""

from __future__ import annotations

import pytest

from coopt.problem import SolveOptions
from coopt.problems.pipeline import PROBLEM, pattern
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.grid import time_unit
from coopt.run import run
from research.pipeline import bench


def _stage_entries(solution, s):
    return {x["microbatch"]: x["start"] for x in solution["passes"] if x["kind"] == "F" and x["stage"] == s}


def test_shifted_entries_keep_their_offsets_and_never_beat_the_optimum():
    """--fix-entries LO HI --shift: the stretch keeps the optimum's offsets at a free
    shift; at the proven optimum's horizon it finds a schedule of that value with those offsets,
    one unit below it none (a restriction of Model P, so nothing below a proven optimum)."""
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
