"""Per-layer recompute: a virtual stage holds L layers (``recompute_layers``) and an item
may recompute r of them. Loader, checker, the hand-computed instance where r = 1 of 2 beats both
keep and whole-item recompute, the oracle's L = 2 instances, and the schedules that use it."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import tomli_w

from coopt.instance import load, to_toml
from coopt.problem import NoSolution, SolveOptions
from coopt.problems.pipeline import PROBLEM, brute
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.run import run
from tests import _pipeline_shared
from tests.known.test_pipeline_known import toy

OPTIONS = SolveOptions(gap=1e-9, time_limit=60)
INSTANCES = Path(__file__).resolve().parents[1] / "instances" / "pipeline"
LAYERS = INSTANCES / "0-p2m2-layers.toml"


def _instance() -> pm.Instance:
    return load(LAYERS).instance


def _without_layers(instance: pm.Instance) -> pm.Instance:
    return replace(instance, recompute_layers=())


def _keep_only(instance: pm.Instance) -> pm.Instance:
    return replace(instance, recompute_layers=(), allow_recompute=False, recompute_s=(), checkpoint_bytes=())


def _hand_schedule(recompute=(), recompute_layers=()) -> dict:
    """The schedule worked out by hand on ``0-p2m2-layers`` (p = 2, m = 2, T_F = 1, T_B = 2,
    T_R = 2 for the stage's two layers, a = 2 GB, a_c = 0, cap 3 GB on device 0): device 0 runs
    F(0,0) [0,1], F(0,1) [1,2], B(0,0) [4,6], B(0,1) [7,..]; device 1 runs F(1,0) [1,2],
    B(1,0) [2,4], F(1,1) [4,5], B(1,1) [5,7]."""
    starts = {("F", 0, 0): 0, ("F", 0, 1): 1, ("F", 1, 0): 1, ("B", 1, 0): 2, ("F", 1, 1): 4,
              ("B", 1, 1): 5, ("B", 0, 0): 4, ("B", 0, 1): 7}
    return {
        "objective": 0.0,
        "passes": [{"kind": x, "stage": k, "microbatch": j, "start": float(t)} for (x, k, j), t in starts.items()],
        "recompute": [list(i) for i in recompute],
        "recompute_layers": [list(i) for i in recompute_layers],
        "offload": [],
    }


# -- the hand-computed instance ------------------------------------------------------------------
def test_hand_schedule_memory_and_makespan_by_hand():
    """With F(0,1) while micro-batch 0 is still held, device 0 holds 2 + a_1 GB at t = 1: keep
    (a_1 = 2) is 4 GB > 3; one layer of two recomputed (a_1 = 2 - 1) is exactly 3 GB, and B(0,1)
    is longer by T_R / 2 = 1: it ends at 7 + 2 + 1 = 10; whole-item recompute (a_1 = 0) ends at
    7 + 2 + 2 = 11."""
    instance = _instance()
    partial = _hand_schedule(recompute_layers=[(0, 1, 1)])
    assert pm.check(instance, partial) == []
    assert pm.objective(instance, partial) == 10.0
    full = _hand_schedule(recompute=[(0, 1)])
    assert pm.check(instance, full) == []
    assert pm.objective(instance, full) == 11.0
    keep = _hand_schedule()
    assert [v.constraint for v in pm.check(instance, keep)] == ["memory"]
    timed, _ = pm.parse(instance, partial)
    events = sorted(pm.memory_events(instance, timed)[0])
    # F(0,0) +2, F(0,1) +1 (one of two layers kept), B(0,0) releases 2 at 6, B(0,1) +1 at 7, -2 at 10
    assert events == [(0.0, 2e9), (1.0, 1e9), (6.0, -2e9), (7.0, 1e9), (10.0, -2e9)]


def test_partial_recompute_beats_keep_and_whole_item_recompute():
    """The exact model proves 10 (one layer of micro-batch 1 recomputed), the brute-force
    enumeration and Model T agree; whole items only: 11; keep only: 12."""
    instance = _instance()
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.status == "optimal" and report.check["feasible"]
    assert report.objective == pytest.approx(10.0)
    assert report.solution["recompute_layers"] and all(0 < r < 2 for _, _, r in report.solution["recompute_layers"])
    assert brute.enumerate_optimum(instance) == pytest.approx(10.0)
    assert brute.time_indexed_optimum(instance) == pytest.approx(10.0)
    whole = run(PROBLEM, _without_layers(instance), "exact", OPTIONS)
    assert whole.status == "optimal" and whole.objective == pytest.approx(11.0)
    assert brute.enumerate_optimum(_without_layers(instance)) == pytest.approx(11.0)
    keep = run(PROBLEM, _keep_only(instance), "exact", OPTIONS)
    assert keep.status == "optimal" and keep.objective == pytest.approx(12.0)


# -- loader (bad values: tests/test_pipeline.py::test_loader_names_the_bad_field) ----------------
def test_default_layers_is_the_old_instance_and_round_trips(tmp_path):
    """``recompute_layers = [1, 1]`` is the instance without the field (same meaning, no schema
    bump), and an instance with L > 1 round-trips through its file."""
    data = tomllib.loads(LAYERS.read_text())
    path = tmp_path / "ones.toml"
    path.write_text(tomli_w.dumps({**data, "recompute_layers": [1, 1]}))
    assert load(path).instance == _without_layers(_instance())
    path.write_text(to_toml(PROBLEM, _instance()))
    assert load(path).instance == _instance()


# -- checker -------------------------------------------------------------------------------------
def _violations(instance, solution) -> list[str]:
    return [v.constraint for v in pm.check(instance, solution)]


@pytest.mark.parametrize(
    ("entry", "constraint"),
    [
        ([0, 1, 3], "mode"),  # more layers than the stage has
        ([0, 1, -1], "mode"),
        ([0, 1, 1.5], "mode"),  # not an integer count
        ([0, 1, 1.0], "mode"),  # a float is not a count either
        ([0, 1, True], "format"),
        ([0, 1, "1"], "format"),
        ([0, 1, float("nan")], "format"),
        ([0, 1], "format"),
        ([0, 5, 1], "format"),
    ],
)
def test_checker_rejects_bad_layer_counts(entry, constraint):
    solution = _hand_schedule()
    solution["recompute_layers"] = [entry]
    assert constraint in _violations(_instance(), solution)


def test_checker_rejects_an_item_listed_twice():
    solution = _hand_schedule(recompute=[(0, 1)], recompute_layers=[(0, 1, 1)])
    assert "mode" in _violations(_instance(), solution)


def test_checker_rejects_partial_recompute_where_not_allowed_or_offloaded():
    off = toy(2, 2, 3.0, rec=True, off=True)
    off = replace(off, recompute_layers=(2, 2))
    solution = schedules.one_f_one_b(replace(off, memory_cap_bytes=None))
    f_end = next(x["start"] for x in solution["passes"] if (x["kind"], x["stage"], x["microbatch"]) == ("F", 0, 0))
    b_start = next(x["start"] for x in solution["passes"] if (x["kind"], x["stage"], x["microbatch"]) == ("B", 0, 0))
    offloaded = {**solution, "offload": [{"stage": 0, "microbatch": 0, "d2h_start": f_end + 1, "h2d_start": b_start}],
                 "recompute_layers": [[0, 0, 1]]}
    assert any(v.constraint == "mode" and "both" in v.detail for v in pm.check(off, offloaded))
    zero = {**offloaded, "recompute_layers": [[0, 0, 0]]}  # r = 0 is keep: may be offloaded
    assert not any(v.constraint == "mode" for v in pm.check(off, zero))
    keep_only = toy(2, 2, None)
    plain = schedules.one_f_one_b(keep_only)
    assert pm.check(keep_only, plain) == []
    assert "mode" in _violations(keep_only, {**plain, "recompute_layers": [[0, 0, 1]]})
    assert pm.check(keep_only, {**plain, "recompute_layers": [[0, 0, 0]]}) == []


def test_checker_recomputes_duration_and_memory_from_the_count():
    """A claimed start that ignores the longer B of a partial recompute is a precedence
    violation; r = L is whole-item recompute, r = 0 is keep."""
    instance = _instance()
    # B(1,1) recomputing one layer runs [5, 8], so B(0,1) at 7 starts before it ends
    assert _violations(instance, _hand_schedule(recompute_layers=[(0, 1, 1), (1, 1, 1)])) == ["precedence"]
    # one layer of micro-batch 0 on device 0: F(0,0) keeps 1 GB, F(0,1) 2 GB, then B(0,0) brings
    # the recomputed layer back at t = 4: 1 + 2 + 1 = 4 GB > 3
    assert _violations(instance, _hand_schedule(recompute_layers=[(0, 0, 1)])) == ["memory"]
    full = _hand_schedule(recompute_layers=[(0, 1, 2)])
    assert pm.check(instance, full) == [] and pm.objective(instance, full) == 11.0
    assert _violations(instance, _hand_schedule(recompute_layers=[(0, 1, 0)])) == ["memory"]


def test_old_solution_files_still_check():
    """A solution written before ``recompute_layers`` existed (no such key) keeps its verdict and
    objective, on an instance of the old format."""
    instance = load(INSTANCES / "0-p3m4-recompute.toml").instance
    for name in ("megatron_full", "megatron_selective", "chronos_recomp"):
        solution = schedules.HEURISTICS[name](instance)
        assert solution["recompute_layers"] == []  # L = 1: whole items, listed as before
        old = {key: value for key, value in solution.items() if key != "recompute_layers"}
        assert pm.check(instance, old) == []
        assert pm.objective(instance, old) == pytest.approx(solution["objective"])


# -- the oracle covers L = 2 ---------------------------------------------------------------------
LAYERED_SEEDS = [seed for seed in range(200) if brute.tiny(seed).recompute_layers][:6]


def test_oracle_draws_layered_instances():
    assert len(LAYERED_SEEDS) == 6
    assert all(brute.tiny(seed).layers(0) == 2 for seed in LAYERED_SEEDS)


@pytest.mark.parametrize("seed", LAYERED_SEEDS)
def test_exact_equals_brute_force_with_two_layers(seed):
    instance = brute.tiny(seed)
    want = _pipeline_shared.optimum(instance)
    report = run(PROBLEM, instance, "exact", OPTIONS)
    if want is None:
        assert report.status == "infeasible"
    else:
        assert report.status == "optimal" and report.objective == pytest.approx(want, rel=1e-6)
        assert report.check["feasible"]


def test_enumeration_and_model_t_agree_on_partial_recompute():
    for seed in LAYERED_SEEDS[:3]:
        instance = brute.tiny(seed)
        if instance.allow_offload:
            continue
        assert brute.time_indexed_optimum(instance) == pytest.approx(_pipeline_shared.enumerate_optimum(instance))


# -- schedules -----------------------------------------------------------------------------------
def test_chronos_recomp_recomputes_only_the_layers_the_cap_needs():
    instance = _instance()
    solution = schedules.chronos_recomp(instance)
    assert pm.check(instance, solution) == []
    assert solution["objective"] == pytest.approx(10.0)
    assert solution["recompute"] == [] and solution["recompute_layers"] == [[0, 1, 1]]
    whole = schedules.chronos_recomp(_without_layers(instance))
    assert whole["objective"] == pytest.approx(11.0)


def test_local_search_is_never_worse_than_the_per_layer_schedule():
    """The search's own modes are whole items (11 at best here); with per-layer recompute it also
    weighs chronos_recomp's schedule and so reaches the hand-proved optimum 10."""
    instance = _instance()
    solution = schedules.local_search(instance)
    assert pm.check(instance, solution) == []
    assert solution["objective"] == pytest.approx(10.0)
    assert schedules.local_search(_without_layers(instance))["objective"] == pytest.approx(11.0)


def test_megatron_block_takes_the_least_layer_count_that_fits():
    """Megatron's block method: one n for every stage and micro-batch. n = 0 does not fit
    (1F1B holds two micro-batches on device 0), n = 1 does."""
    instance = _instance()
    solution = schedules.megatron_block(instance)
    assert pm.check(instance, solution) == []
    assert solution["recompute_num_layers"] == 1
    assert all(r == 1 for _, _, r in solution["recompute_layers"]) and len(solution["recompute_layers"]) == 4
    full = schedules.megatron_full(instance)
    assert solution["objective"] < full["objective"]
    assert schedules.megatron_block(_without_layers(instance))["objective"] == pytest.approx(full["objective"])
    with pytest.raises(NoSolution):
        schedules.megatron_block(_keep_only(instance))
