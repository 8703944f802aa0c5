"""Pipeline schedules on instances small enough to enumerate: Model P against the oracle's
enumeration over *every* per-device pass order (FIFO or not) and every recompute choice, each
order timed by the ASAP event simulator (optimal for a fixed order: memory of compute passes
depends on the order only), and against the time-indexed Model T; the two oracles against each
other; and the issue-13 instance on which FIFO loses."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problem import SolveOptions, close
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.brute import time_indexed_optimum, tiny
from coopt.problems.pipeline.milp import build
from coopt.problems.pipeline.model import GB
from coopt.problems.pipeline.timeindexed import build_time_indexed, extract_time_indexed
from coopt.run import run
from coopt.solvers.highs import solve_model
from tests import _pipeline_shared

OPTIONS = SolveOptions(gap=1e-9, time_limit=60)


def toy(
    p: int,
    m: int,
    cap: float | None,
    *,
    rec: bool = False,
    off: bool = False,
    split: bool = True,
    v: int = 1,
    placement: str = "interleaved",
    t: float = 1.0,
) -> pm.Instance:
    """Research instance family I1: unit times (x t), a = 2 GB, a_W = 1 GB, a_c = 0.5 GB, tau = 2;
    ``cap`` in GB."""
    return pm.Instance(
        stages=p,
        microbatches=m,
        chunks=v,
        placement=placement,
        split_backward=split,
        forward_s=(t,) * p,
        backward_s=((1.0 if split else 2.0) * t,) * p,
        weight_s=((t if split else 0.0),) * p,
        activation_bytes=(2.0 * GB,) * p,
        weight_grad_bytes=((GB if split else 0.0),) * p,
        memory_cap_bytes=None if cap is None else (float(cap) * GB,) * p,
        allow_recompute=rec,
        recompute_s=(t,) * p if rec else (),
        checkpoint_bytes=(0.5 * GB,) * p if rec else (),
        allow_offload=off,
        offload_bytes=(2.0 * GB,) * p if off else (),
        d2h_s=(2 * t,) * p if off else (),
        h2d_s=(2 * t,) * p if off else (),
    )


CASES = {
    "p2m2-nocap": toy(2, 2, None),
    "p2m2-cap2": toy(2, 2, 2.0),
    "p2m2-cap3": toy(2, 2, 3.0),
    "p3m2-cap2": toy(3, 2, 2.0),
    "p2m2-fused-cap2": toy(2, 2, 2.0, split=False),
    "p2m2-recompute-cap2": toy(2, 2, 2.0, rec=True),
    "p2m2-slow-recompute-cap2": replace(toy(2, 2, 2.0, rec=True), recompute_s=(3.0, 3.0)),
    "p2m1-vshape-cap1.5": toy(2, 1, 1.5, v=2, placement="vshape", t=2.0),  # infeasible
    "p2m1-vshape-cap2": toy(2, 1, 2.0, v=2, placement="vshape", t=2.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_p_matches_brute_force_over_all_orders(name):
    instance = CASES[name]
    report = run(PROBLEM, instance, "exact", OPTIONS)
    best = _pipeline_shared.enumerate_optimum(instance)
    if best is None:
        assert report.status == "infeasible"
        return
    assert report.status == "optimal", report.check
    assert report.check["feasible"], report.check["violations"]
    assert close(report.objective, best)


TI_CASES = {
    "p3m2-cap3": toy(3, 2, 3.0),
    "p2m2-recompute-cap2.5": toy(2, 2, 2.5, rec=True),
    "p2m2-offload-cap2": toy(2, 2, 2.0, off=True),
    "p2m2-recompute-offload-cap2.5": toy(2, 2, 2.5, rec=True, off=True),
    "p2m2-vshape-cap2": toy(2, 2, 2.0, v=2, placement="vshape", t=2.0),
    "p2m2-fused-cap2": toy(2, 2, 2.0, split=False),
}


@pytest.mark.parametrize("name", sorted(TI_CASES))
def test_model_p_matches_time_indexed_model(name):
    """Model T has no FIFO restriction, so equality also says FIFO lost nothing here."""
    instance = TI_CASES[name]
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.status == "optimal"
    assert report.check["feasible"], report.check["violations"]
    model = build_time_indexed(instance, math.ceil(report.objective) + 2)
    result = solve_model(model, OPTIONS)
    assert result.status == "optimal"
    solution = extract_time_indexed(model, instance)
    assert pm.check(instance, solution) == []
    assert close(result.objective, report.objective)
    assert close(pm.objective(instance, solution), report.objective)


def test_offload_gap_rule_rejects_too_short_round_trips():
    """With copies longer than any F -> B gap can hold, offload cannot help: the optimum under
    a cap that needs offload is infeasible, and with the cap that fits keep it equals keep-only."""
    instance = toy(2, 2, 2.0, off=True)
    slow = replace(instance, d2h_s=(50.0, 50.0), h2d_s=(50.0, 50.0))
    keep_only = replace(instance, allow_offload=False, offload_bytes=(), d2h_s=(), h2d_s=())
    fast = run(PROBLEM, instance, "exact", OPTIONS).objective
    assert close(
        run(PROBLEM, slow, "exact", OPTIONS).objective, run(PROBLEM, keep_only, "exact", OPTIONS).objective
    )
    assert fast <= run(PROBLEM, keep_only, "exact", OPTIONS).objective + 1e-9


@pytest.mark.parametrize("seed", [s for s in range(40) if not tiny(s).allow_offload][:8])
def test_the_two_oracles_agree_without_offload(seed):
    """Enumeration and Model T are independent; where both apply they give the same optimum."""
    instance = tiny(seed)
    by_model_t, by_enumeration = time_indexed_optimum(instance), _pipeline_shared.enumerate_optimum(instance)
    if by_enumeration is None:
        assert by_model_t is None
    else:
        assert by_model_t == pytest.approx(by_enumeration, rel=1e-9)


OVERTAKE = Path(__file__).resolve().parents[2] / "instances" / "pipeline" / "0-p3m3-offload-overtake.toml"


def test_fifo_loses_where_recompute_and_offload_meet_a_cap():
    """Issue 13: the FIFO-restricted model proves 23, the checker accepts a schedule of 22 in
    which micro-batch 1 overtakes the offloaded micro-batch 0; `exact` (no FIFO there) finds 22.
    (Model T, which never imposed FIFO, agrees: benchmarks/figures/pipeline_exact.py --only overtake.)"""
    instance = load(OVERTAKE).instance
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.status == "optimal" and report.check["feasible"], report.check["violations"]
    assert report.objective == pytest.approx(22.0, abs=1e-6)
    fifo = solve_model(build(instance, fifo=True), OPTIONS)
    assert fifo.status == "optimal" and fifo.objective == pytest.approx(23.0, abs=1e-6)
    overtakes = [
        j for j in range(1, 3)
        if _start(report.solution, "F", 2, j) < _start(report.solution, "F", 2, j - 1)
        or _start(report.solution, "B", 2, j) < _start(report.solution, "B", 2, j - 1)
    ]
    assert overtakes, "an optimum of 22 needs a micro-batch to overtake on the last stage"


def _start(solution, kind, k, j):
    return next(x["start"] for x in solution["passes"] if (x["kind"], x["stage"], x["microbatch"]) == (kind, k, j))
