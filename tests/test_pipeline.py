"""Pipeline schedules: loader, checker, simulator, schedules and the exact model on small instances."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from coopt.errors import InstanceError
from coopt.instance import load, to_toml
from coopt.problem import NoSolution, SolveOptions, close
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.milp import build, extract
from coopt.run import run
from coopt.solvers.highs import solve_model
from tests.known.test_pipeline_known import toy

OPTIONS = SolveOptions(gap=1e-9, time_limit=60)
INSTANCES = Path(__file__).resolve().parents[1] / "instances" / "pipeline"


# -- loader ------------------------------------------------------------------------------------
def test_dump_load_round_trip(tmp_path):
    for instance in (
        toy(3, 4, 4.0, rec=True, off=True),
        toy(2, 4, None, v=2, placement="vshape"),
        toy(2, 2, 3.0, split=False),
        replace(toy(2, 3, 3.0), objective="stage_span"),
        PROBLEM.generate(7, 3),
    ):
        path = tmp_path / "x.toml"
        path.write_text(to_toml(PROBLEM, instance))
        assert load(path).instance == instance


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"forward_s": [1.0]}, "forward_s"),
        ({"weight_grad_gb": [3.0, 3.0]}, "weight_grad_gb"),
        ({"placement": "zigzag"}, "placement"),
        ({"memory_cap_gb": [0.0, 1.0]}, "memory_cap_gb"),
        ({"split_backward": False}, "split_backward"),
        ({"allow_recompute": True}, "recompute_s"),
        *(({"allow_recompute": True, "recompute_s": [1.0, 1.0], "checkpoint_gb": [0.5, 0.5],
            "recompute_layers": layers}, "recompute_layers") for layers in ([0, 2], [2], [2.5, 2])),
        ({"recompute_layers": [2, 2]}, "recompute_layers"),  # read only with allow_recompute
        ({"bandwidth": 3}, "bandwidth"),
    ],
)
def test_loader_names_the_bad_field(tmp_path, patch, field):
    text = to_toml(PROBLEM, toy(2, 2, 3.0))
    import tomllib

    import tomli_w

    data = {**tomllib.loads(text), **patch}
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(data))
    with pytest.raises(InstanceError) as err:
        load(path)
    assert err.value.field is not None and field in err.value.field
    assert str(path) in str(err.value)


# -- checker -----------------------------------------------------------------------------------
def _solution(instance):
    return schedules.one_f_one_b(instance)


def _move(solution, kind, k, j, start):
    out = {**solution, "passes": [dict(x) for x in solution["passes"]]}
    for x in out["passes"]:
        if (x["kind"], x["stage"], x["microbatch"]) == (kind, k, j):
            x["start"] = start
    return out


def test_checker_accepts_1f1b_and_recomputes_its_makespan():
    instance = toy(3, 4, None)
    solution = _solution(instance)
    assert pm.check(instance, solution) == []
    assert close(pm.objective(instance, solution), solution["objective"])


@pytest.mark.parametrize(
    ("mutate", "family"),
    [
        (lambda s: _move(s, "F", 1, 0, 0.0), "precedence"),  # before F(0,0) ends
        (lambda s: _move(s, "W", 2, 3, 0.5 + max(x["start"] for x in s["passes"])), None),  # late: fine
        (lambda s: {**s, "passes": s["passes"][1:]}, "completeness"),
        (lambda s: {**s, "passes": s["passes"] + s["passes"][:1]}, "completeness"),
        (lambda s: {**s, "recompute": [[0, 0]]}, "mode"),
        (lambda s: {**s, "passes": "nonsense"}, "format"),
        (lambda s: {**s, "passes": [{"kind": "X"}] + s["passes"]}, "format"),
        (lambda s: {k: v for k, v in s.items() if k != "passes"}, "format"),
        (lambda s: [], "format"),
    ],
)
def test_checker_finds_each_violation_and_never_raises(mutate, family):
    instance = toy(3, 4, None)
    found = {v.constraint for v in pm.check(instance, mutate(_solution(instance)))}
    assert (family in found) if family else not found


def test_checker_finds_overlap_and_memory_excess():
    instance = toy(2, 4, None)
    solution = _solution(instance)
    b0 = next(
        x["start"] for x in solution["passes"] if (x["kind"], x["stage"], x["microbatch"]) == ("B", 0, 0)
    )
    late = _move(solution, "F", 0, 3, b0 + 0.5)  # lands on B(0,0)
    assert "exclusivity" in {v.constraint for v in pm.check(instance, late)}
    capped = replace(instance, memory_cap_bytes=(3.9 * pm.GB, 3.9 * pm.GB))  # 1F1B keeps 2 micro-batches (4 GB) on stage 0
    assert [v.constraint for v in pm.check(capped, solution)] == ["memory"]


def test_checker_rejects_offload_copies_that_do_not_fit_the_gap():
    instance = toy(2, 2, None, off=True)
    solution = _solution(instance)
    f_end = 1.0
    b_start = next(
        x["start"] for x in solution["passes"] if (x["kind"], x["stage"], x["microbatch"]) == ("B", 0, 0)
    )
    bad = {
        **solution,
        "offload": [{"stage": 0, "microbatch": 0, "d2h_start": f_end, "h2d_start": f_end + 2.0}],
    }
    assert b_start < f_end + 4.0  # the 4 s round trip does not fit this 1F1B gap
    assert "offload" in {v.constraint for v in pm.check(instance, bad)}


# -- simulator and schedules -------------------------------------------------------------------
def test_simulator_memory_returns_to_zero_and_respects_tie_rule():
    instance = toy(1, 3, 2.0)  # one stage: F B W per micro-batch back to back
    solution = schedules.one_f_one_b(instance)
    timed, _ = pm.parse(instance, solution)
    profile = pm.memory_profile(pm.memory_events(instance, timed)[0])
    assert profile[-1][1] == 0.0
    # F(0,1) starts exactly when W(0,0) ends: the release a_W = 1 is applied first, so the peak is
    # a = 2 (allocation first would give a + a_W = 3)
    assert pm.peaks(instance, timed) == [2.0 * pm.GB]
    assert pm.check(instance, solution) == []


def test_deadlocking_order_is_reported():
    instance = toy(2, 1, None)
    orders = {0: [("B", 0, 0), ("F", 0, 0), ("W", 0, 0)], 1: [("F", 1, 0), ("B", 1, 0), ("W", 1, 0)]}
    with pytest.raises(pm.Deadlock):
        pm.simulate(instance, orders)


GENERATED = [PROBLEM.generate(seed, size) for seed in range(4) for size in (2, 3)]
VARIANTS = [
    toy(4, 8, None),
    toy(4, 8, 5.0, rec=True, off=True),
    toy(4, 8, None, v=2),
    toy(4, 8, 7.0, v=2, placement="vshape"),
    toy(4, 8, None, v=2, placement="vshape"),
    toy(3, 6, None, split=False),
    toy(4, 8, 4.0, v=2, rec=True),
    replace(toy(4, 8, 6.0, off=True), d2h_s=(0.5,) * 4, h2d_s=(0.5,) * 4),
    replace(toy(4, 8, 4.0, off=True, v=2), d2h_s=(0.1,) * 4, h2d_s=(0.1,) * 4),  # PipeOffload's copies
]


@pytest.mark.parametrize("name", sorted(schedules.HEURISTICS))
def test_every_schedule_passes_the_checker_or_says_no(name):
    fn = schedules.HEURISTICS[name]
    produced = 0
    for instance in GENERATED + VARIANTS:
        try:
            solution = fn(instance)
        except NoSolution:
            continue
        produced += 1
        assert pm.check(instance, solution) == [], (name, instance)
        assert close(pm.objective(instance, solution), solution["objective"])
        assert fn(instance) == solution  # deterministic
    assert produced > 0


def test_schedules_say_no_on_a_cap_below_one_micro_batch():
    instance = toy(3, 4, 1.9, rec=False)
    for name, fn in schedules.HEURISTICS.items():
        with pytest.raises(NoSolution):
            fn(instance)
        del name


# -- exact model -------------------------------------------------------------------------------
@cache
def _exact(instance):
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.status in ("optimal", "infeasible"), report.status
    if report.status == "optimal":
        assert report.check["feasible"], report.check["violations"]
    return report


def test_uncapped_optimum_is_zb_h1_and_the_fill_bound():
    """Research family I1 (unit F/B/W), p=3, m=6: 20 = ZB-H1 = (p-1)T_F + m(T_F+T_B+T_W)."""
    instance = toy(3, 6, None)
    assert close(_exact(instance).objective, 20.0)
    assert close(schedules.zb_h1(instance)["objective"], 20.0)


def test_fused_backward_optimum_is_1f1b():
    """With B and W fused (T_Bf = 2 T_F) and no cap, no schedule beats 1F1B's (m+p-1)(T_F+T_Bf)."""
    instance = toy(3, 5, None, split=False)
    assert close(_exact(instance).objective, (5 + 3 - 1) * 3.0)
    assert close(schedules.one_f_one_b(instance)["objective"], (5 + 3 - 1) * 3.0)


def test_optimum_is_monotone_in_cap_and_modes():
    caps = (2.0, 2.5, 3.0, 4.0)
    keep = [_exact(toy(2, 3, cap)).objective for cap in caps]
    rec = [_exact(toy(2, 3, cap, rec=True)).objective for cap in caps]
    assert all(a >= b - 1e-6 for a, b in zip(keep, keep[1:], strict=False))
    assert all(a >= b - 1e-6 for a, b in zip(rec, rec[1:], strict=False))
    assert all(r <= k + 1e-6 for r, k in zip(rec, keep, strict=True))
    assert rec[1] < keep[1] - 0.5  # recompute buys time under a tight cap (2.5 GB)


def test_infeasible_just_below_one_micro_batch():
    """Every mode needs a whole micro-batch's activations at some instant (research g.9)."""
    assert _exact(toy(2, 3, 1.99, rec=True)).status == "infeasible"
    assert _exact(toy(2, 3, 2.0, rec=True)).status == "optimal"


def test_resimulating_the_milp_order_keeps_feasibility_and_makespan():
    """Invariant g.5: ASAP timing of the MILP's per-device order is no later than the MILP."""
    instance = toy(2, 4, 3.0, rec=True)
    model = build(instance)
    result = solve_model(model, OPTIONS)
    solution = extract(model, instance)
    timed, _ = pm.parse(instance, solution)
    orders = {d: [] for d in range(instance.stages)}
    for key in sorted(timed.start, key=lambda x: (timed.start[x], x)):
        orders[instance.device(key[1])].append(key)
    again = pm.simulate(instance, orders, timed.modes)
    assert again.makespan(instance) <= result.objective + 1e-6
    assert close(again.makespan(instance), result.objective)
    assert all(pk <= instance.cap(d) + 1e-9 for d, pk in enumerate(pm.peaks(instance, again)))


def test_scaling_times_scales_the_optimum():
    base = toy(2, 3, 3.0, rec=True)
    scaled = toy(2, 3, 3.0, rec=True, t=0.25)
    assert close(_exact(scaled).objective, 0.25 * _exact(base).objective)


def test_lp_relaxation_is_a_lower_bound():
    import pyomo.environ as pyo

    instance = toy(2, 4, 3.0, rec=True)
    model = build(instance)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
    relaxed = solve_model(model, OPTIONS).objective
    assert relaxed <= _exact(instance).objective + 1e-6


def test_stage_span_objective_reaches_zero_bubble():
    """Zero Bubble's per-stage span: with memory for 2p - 1 micro-batches the optimum span is the
    stage load m(T_F + T_B + T_W) (no bubble), below the makespan optimum, and ZB-H2 attains it."""
    makespan = toy(3, 6, None)
    span = replace(makespan, objective="stage_span")
    best_span = _exact(span).objective
    assert close(best_span, 6 * 3.0)
    assert best_span < _exact(makespan).objective - 1
    solution = schedules.zb_h2(span)
    assert close(solution["objective"], 18.0)
    assert close(pm.objective(span, solution), 18.0)
    assert pm.objective(makespan, solution) > 18.0  # the same schedule judged by its makespan


def test_stage_span_never_exceeds_makespan_optimum_under_caps():
    for instance in (toy(3, 4, 4.0), toy(2, 3, 3.0, rec=True)):
        span = replace(instance, objective="stage_span")
        assert _exact(span).objective <= _exact(instance).objective + 1e-6


def test_offload_never_shortens_a_fixed_order():
    """Research g.15: for a fixed compute order, offloading adds copy waits but no compute, so the
    simulated makespan never drops; a short round trip inside the first micro-batch's long F -> B
    gap on stage 0 changes nothing."""
    for tau in (0.25, 2.0):
        instance = replace(toy(3, 4, None, off=True), d2h_s=(tau,) * 3, h2d_s=(tau,) * 3)
        orders = schedules._one_f_one_b_orders(instance)
        keep = pm.simulate(instance, orders).makespan(instance)
        items = [(k, j) for k in range(3) for j in range(4)]
        for n in range(len(items) + 1):
            timed = pm.simulate(instance, orders, dict.fromkeys(items[:n], pm.OFFLOAD))
            assert timed.makespan(instance) >= keep - 1e-9
            assert pm.check(instance, pm.to_solution(instance, timed)) == []
            if tau == 0.25 and n == 1:
                assert close(timed.makespan(instance), keep)


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_checker_rejects_non_finite_times(bad):
    instance = toy(2, 2, None, off=True)
    solution = schedules.one_f_one_b(instance)
    assert pm.check(instance, solution) == []
    assert pm.check(instance, _move(solution, "F", 0, 0, bad))
    offloaded = {**solution, "offload": [{"stage": 0, "microbatch": 0, "d2h_start": bad, "h2d_start": 5.0}]}
    assert any(v.constraint == "format" for v in pm.check(instance, offloaded))


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("0-*.toml")), ids=lambda p: p.stem)
def test_dual_bound_is_at_least_the_lp_relaxation(path):
    """A larger lower bound is a tighter one: the registered bound is never below Model P's LP
    relaxation (that it never exceeds the optimum is the contract suite's test)."""
    from coopt.solvers.highs import lp_relaxation

    instance = load(path).instance
    assert PROBLEM.bound(instance, OPTIONS) >= lp_relaxation(PROBLEM, instance, OPTIONS) * (1 - 1e-9)


def test_memory_fill_bound_by_hand():
    """p = 2, m = 4, T_F = 1, fused T_B = 2, cap = one micro-batch: every micro-batch's
    F(0) -> B(0) interval (round trip 1 + 1 + 2 + 2 = 6) runs alone, so C >= 4 * 6 = 24, and one
    micro-batch after another attains it. With the split backward (a_W = 1 held until W) the
    optimum is 20: the memory fill, which counts F -> B only, gives 16, and the release times,
    which hold each forward until the W before it ends (round trip 5), give the optimum."""
    fused = toy(2, 4, 2.0, split=False)
    assert PROBLEM.bound(fused, OPTIONS) == pytest.approx(24.0)
    assert run(PROBLEM, fused, "exact", OPTIONS).objective == pytest.approx(24.0)
    split = toy(2, 4, 2.0)
    assert PROBLEM.bound(split, OPTIONS) == pytest.approx(20.0)
    assert run(PROBLEM, split, "exact", OPTIONS).objective == pytest.approx(20.0)


def test_generator_never_writes_a_file_its_loader_rejects(tmp_path):
    from coopt.errors import UsageError

    for size in (1, 64):
        path = tmp_path / f"g{size}.toml"
        path.write_text(to_toml(PROBLEM, PROBLEM.generate(0, size)))
        assert load(path).instance.stages == size
    with pytest.raises(UsageError, match="1..64"):
        PROBLEM.generate(0, 1000)


def test_memory_is_bytes_inside_and_gb_in_the_file(tmp_path):
    instance = toy(2, 2, 3.0)
    assert instance.memory_cap_bytes == (3e9, 3e9)
    text = to_toml(PROBLEM, instance)
    assert "memory_cap_gb = [\n    3.0," in text or "memory_cap_gb = [3.0, 3.0]" in text
