"""The schedules as the field defines them: 1F1B fuses B and W before the send, ZB-H2 is
bounded and falls back to ZB-H1, ZB-V reaches the span optimum, the controllable-memory schedules
stay within their papers' memory, PipeOffload's validity rule, span timing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problem import NoSolution, SolveOptions
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.heuristics import blocks
from coopt.run import run
from tests.known.test_pipeline_known import toy

INSTANCES = Path(__file__).resolve().parents[1] / "instances" / "pipeline"
I1 = toy(4, 8, None)  # research instance I1: p = 4, m = 8, unit F/B/W, a = 2 GB, a_W = 1 GB


def peak(instance: pm.Instance, solution: dict) -> float:
    timed, _ = pm.parse(instance, solution)
    return max(pm.peaks(instance, timed))


def test_1f1b_fuses_b_and_w_before_the_send():
    """(m + p - 1)(T_F + T_B + T_W) = 11 * 3 = 33 on I1; sending after B alone gives 30."""
    assert schedules.one_f_one_b(I1)["objective"] == pytest.approx(33.0)
    assert schedules.one_f_one_b_split(I1)["objective"] == pytest.approx(30.0)
    solution = schedules.one_f_one_b(I1)
    start = {(x["kind"], x["stage"], x["microbatch"]): x["start"] for x in solution["passes"]}
    for k in range(1, 4):
        for j in range(8):
            assert start[("B", k - 1, j)] >= start[("W", k, j)] + 1.0 - 1e-9  # W(k, j) ends first


def test_every_schedule_reports_both_objectives():
    solution = schedules.zb_h2(I1)
    timed, _ = pm.parse(I1, solution)
    assert solution["makespan"] == pytest.approx(timed.makespan(I1))
    assert solution["stage_span"] == pytest.approx(timed.stage_span(I1))


def test_span_timing_gives_zero_bubble_where_asap_shows_one():
    """ZB-H2 on I1: span 24 = m (T_F + T_B + T_W), while its ASAP makespan is 27."""
    span = replace(I1, objective="stage_span")
    assert schedules.zb_h2(span)["objective"] == pytest.approx(24.0)
    assert schedules.zb_h2(I1)["objective"] == pytest.approx(27.0)


def test_zb_v_reaches_the_span_optimum_with_two_chunks():
    instance = load(INSTANCES / "1-p4m8-stage-span.toml").instance
    v = replace(instance, chunks=2, placement="vshape")
    solution = schedules.zb_v(v)
    assert pm.check(v, solution) == []
    assert solution["objective"] == pytest.approx(24.0)


@pytest.mark.parametrize(("method", "chunks", "times"), [
    ("zb_h1", 1, 1.0), ("zb_h2", 1, 2.0), ("zb_v", 2, 1.0), ("v_half", 2, 0.75), ("v_min", 2, 0.5),
])
def test_no_uncapped_schedule_exceeds_its_papers_memory(method, chunks, times):
    """Peak at most the paper's multiple of 1F1B's (V-Half's and V-Min's 1/2 and 1/3 are large-p
    limits; at p = 4 their building blocks hold 0.75 and 0.5)."""
    for m in (8, 16, 32):
        base = toy(4, m, None)
        v = replace(base, chunks=chunks, placement="vshape" if chunks == 2 else "interleaved")
        assert peak(v, schedules.HEURISTICS[method](v)) <= times * peak(base, schedules.one_f_one_b(base)) + 1e-6


def test_zb_h2_falls_back_to_zb_h1_at_1f1b_memory():
    """On 0-p3m4-cap6 ZB-H1 (14) beats ZB-H2's own list schedule (15): ZB-H2 falls back to it."""
    instance = load(INSTANCES / "0-p3m4-cap6.toml").instance
    assert schedules.zb_h2(instance)["objective"] <= schedules.zb_h1(instance)["objective"] + 1e-9


def test_zb_auto_is_a_baseline_within_the_cap():
    instance = toy(4, 8, 5.0)
    solution = schedules.zb_auto(instance)
    assert pm.check(instance, solution) == []
    assert peak(instance, solution) <= 5.0 * pm.GB + 1e-6


def test_pipeoffload_rule_needs_three_round_trips_of_slack():
    """With copies of 0.1 s, a stage-0 item of 1F1B on I1 (F ends at 1, B starts at 7 + ...)
    passes; with copies of 2 s none does."""
    fast = replace(toy(4, 8, None, off=True), d2h_s=(0.1,) * 4, h2d_s=(0.1,) * 4)
    timed, _ = pm.parse(fast, schedules.zb_h1(fast))
    assert schedules.offload_valid(fast, timed, (0, 0))
    slow = replace(fast, d2h_s=(2.0,) * 4, h2d_s=(2.0,) * 4)
    assert not any(schedules.offload_valid(slow, timed, (k, j)) for k in range(4) for j in range(8))


def test_slot_train_copies_never_overlap_and_pass_the_checker():
    fast = replace(toy(4, 8, 6.0, off=True, v=2, placement="vshape"), d2h_s=(0.1,) * 4, h2d_s=(0.1,) * 4)
    solution = schedules.pipeoffload(fast)
    assert pm.check(fast, solution) == []
    for d in range(4):
        copies = sorted(
            (t, t + 0.1 / 2)
            for c in solution["offload"] if fast.device(c["stage"]) == d
            for t in (c["d2h_start"], c["h2d_start"])
        )
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(copies, copies[1:], strict=False))


def test_portfolio_is_never_worse_than_its_members():
    instance = toy(4, 8, 6.0)
    best = schedules.portfolio(instance)["objective"]
    for name in schedules.PORTFOLIO:
        try:
            assert best <= schedules.HEURISTICS[name](instance)["objective"] + 1e-9
        except NoSolution:
            continue


def test_local_search_never_worse_than_its_start_and_feasible():
    instance = load(INSTANCES / "0-p3m4-recompute.toml").instance
    solution = schedules.local_search(instance)
    assert pm.check(instance, solution) == []
    assert solution["objective"] <= schedules.portfolio(instance)["objective"] + 1e-9
    optimum = run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9, time_limit=60)).objective
    assert solution["objective"] >= optimum - 1e-9


# --------------------------------------------------------------------------------------------
# v_auto: the building-block search for any memory budget (Qi et al., NeurIPS 2024)
# --------------------------------------------------------------------------------------------
def two_chunks(instance: pm.Instance, cap_gb: float | None = None) -> pm.Instance:
    caps = None if cap_gb is None else (cap_gb * pm.GB,) * instance.stages
    return replace(instance, chunks=2, placement="vshape", memory_cap_bytes=caps)


def test_block_search_alone_reaches_zb_v_span_at_zb_v_budget():
    """On 1-p4m8-stage-span with two chunks (cap 8 GB = 1F1B's p a), the blocks alone (without
    ZB-V among the candidates) reach span 24 = m (T_F + T_B + T_W), the MILP's bound."""
    v = two_chunks(load(INSTANCES / "1-p4m8-stage-span.toml").instance, 8.0)
    found, _ = blocks._block_search(v)
    assert found is not None and pm.check(v, found) == []
    assert found["objective"] == pytest.approx(24.0)
    assert schedules.v_auto(v)["objective"] == pytest.approx(schedules.zb_v(v)["objective"])


@pytest.mark.parametrize("ratio", [(1.0, 1.0, 1.0), (1.0, 1.04, 0.96), (1.0, 2.0, 1.0)])
def test_block_search_fits_v_min_budget_and_is_no_worse(ratio):
    """At V-Min's own peak as the cap, the blocks alone fit and match or beat V-Min."""
    f, b, w = ratio
    v = two_chunks(replace(toy(4, 16, None), forward_s=(f,) * 4, backward_s=(b,) * 4, weight_s=(w,) * 4))
    lean = schedules.v_min(v)
    capped = replace(v, memory_cap_bytes=(peak(v, lean),) * 4)
    found, _ = blocks._block_search(capped)
    assert found is not None and pm.check(capped, found) == []
    assert found["objective"] <= lean["objective"] + 1e-9


@pytest.mark.parametrize("cap_gb", [4.0, 4.5, 5.0, 6.0, 7.0, 8.0])
def test_v_auto_never_exceeds_the_cap_and_gets_no_worse_with_more_memory(cap_gb):
    v = two_chunks(toy(4, 8, None), cap_gb)
    solution = schedules.v_auto(v)
    assert pm.check(v, solution) == []
    assert peak(v, solution) <= cap_gb * pm.GB + 1e-6
    for name in ("zb_v", "v_half", "v_min"):
        try:
            other = schedules.HEURISTICS[name](v)
        except NoSolution:
            continue
        assert solution["objective"] <= other["objective"] + 1e-9


def test_v_auto_declines_clearly():
    """No block holds fewer than p chunk activations (4 x 1 GB at p = 4): a 3 GB cap has none;
    one chunk per device is not a V."""
    with pytest.raises(NoSolution, match="no building block fits the cap"):
        schedules.v_auto(two_chunks(toy(4, 8, None), 3.0))
    with pytest.raises(NoSolution, match="chunks = 2, placement 'vshape'"):
        schedules.v_auto(toy(4, 8, None))


def test_v_auto_never_beats_the_proven_optimum():
    """0-p3m4-v2-cap6 (two chunks in a V, cap 6 GB): the exact model proves 13; v_auto fits and
    is not below it (here it reaches it)."""
    instance = load(INSTANCES / "0-p3m4-v2-cap6.toml").instance
    optimum = run(PROBLEM, instance, "exact", SolveOptions(gap=1e-9, time_limit=60))
    assert optimum.status == "optimal"
    solution = schedules.v_auto(instance)
    assert pm.check(instance, solution) == []
    assert solution["objective"] >= optimum.objective - 1e-9
