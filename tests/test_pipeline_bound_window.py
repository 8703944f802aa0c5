"""The window relaxation R(s, e) of :mod:`coopt.problems.pipeline.window` (issue 20): never
above the enumerated optimum for any window, and equal to it when the window is every stage."""

from __future__ import annotations

import pytest

from coopt.problems.pipeline import brute
from coopt.problems.pipeline.warm import incumbent
from coopt.problems.pipeline.window import applies, window_bound
from tests import _pipeline_shared
from tests.test_pipeline_bound_release import SHAPES, keep_only


def _check(instance) -> None:
    best = _pipeline_shared.enumerate_optimum(instance)
    assert best is not None
    upper, _ = incumbent(instance)  # a checked schedule's makespan, or the serial bound
    assert upper >= best - 1e-9
    K = instance.virtual_stages
    for s in range(K):
        for e in range(s, K):
            bound, _, status = window_bound(instance, s, e, upper, time_limit=30)
            assert status == "optimal"
            assert bound <= best + 1e-9, (s, e)
            if (s, e) == (0, K - 1):
                # the whole pipeline as the window is Model P's keep-only model: the optimum
                assert bound == pytest.approx(best, rel=1e-5)  # window_bound keeps a 1e-6 margin


#: The oracle's seeds (of the first 60) whose instance the window relaxation applies to.
WINDOW_SEEDS = [seed for seed in range(60) if applies(brute.tiny(seed))]


def test_the_oracle_gives_the_window_relaxation_enough_instances():
    assert len(WINDOW_SEEDS) >= 15


@pytest.mark.parametrize("seed", WINDOW_SEEDS)
def test_window_bound_never_above_the_enumerated_optimum(seed):
    """The oracle's keep-only instances with one chunk, every window (s, e); an instance without
    a schedule (no cap fits) has nothing to compare."""
    instance = brute.tiny(seed)
    if _pipeline_shared.enumerate_optimum(instance) is None:
        pytest.skip("no schedule fits the caps")
    _check(instance)


@pytest.mark.parametrize("seed", range(40))
def test_window_bound_never_above_the_enumerated_optimum_under_tight_caps(seed):
    """Caps of one to three micro-batches, a_W 0 or a / 2, lags (every case of the cap rows)."""
    p, m, split = SHAPES[seed % len(SHAPES)]
    _check(keep_only(seed, p, m, split=split))


def test_the_one_stage_window_lifts_size_8_seed_1(monkeypatch):
    """The generator's size 8 seed 1: the window on stage 1 (cap of fewer micro-batches than m, the
    largest memory fill) proves 132, above the closed-form bounds of :mod:`.bound` and below the
    optimum 134 (Model S; ``test_pipeline_stage_idle``); Model P's window cut is at least the
    release-time part of them."""
    from coopt.problems.pipeline import PROBLEM
    from coopt.problems.pipeline import bound as closed
    from coopt.problems.pipeline.window import lower_bound as window_lower_bound

    instance = PROBLEM.generate(1, 8)
    base = closed.lower_bound(instance)
    with monkeypatch.context() as patch:
        patch.setattr(closed, "stage_idle", lambda _: 0.0)
        releases_part = closed.lower_bound(instance)
    bound, value, status = window_bound(instance, 1, 1, 137.0, time_limit=60)
    assert status == "optimal" and bound == pytest.approx(132.0, rel=1e-5) and value < 132.001
    assert releases_part <= base < bound <= 134.0
    assert releases_part <= window_lower_bound(instance, 137.0) <= bound  # 2 s per stage; 132 unloaded
