"""configtuner: the space is exactly the checker's rule set, each rule has its violation, the loader
names bad fields, calibration recovers known curves, C2's DP = MILP = brute force <= uniform, and
the model moves the way the physics says (the contract suite covers the rest)."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from coopt.errors import InstanceError
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.configtuner import analytic, model, partition
from coopt.problems.configtuner import exact as exact_c1
from coopt.problems.configtuner import heuristics as solvers
from coopt.problems.configtuner.model import GIB, RECOMPUTE, ZERO_STAGES
from coopt.problems.configtuner.partition import stage_data, stage_memory, uniform_partition
from coopt.run import judge, run
from coopt.shipped import shipped

PROBLEM = __import__("coopt.registry", fromlist=["get"]).get("configtuner")


def shipped_instance(stem: str):
    return load(next(p for p in shipped("configtuner") if p.stem == stem)).instance


def base_config(**changes):
    config = {"tp": 2, "pp": 2, "dp": 4, "ep": 1, "microbatch": 1, "interleave": 1, "recompute": "selective",
              "sequence_parallel": True, "zero": 1}
    return {**config, **changes}


def gpt_small(**changes) -> model.Instance:
    return replace(model.generate(0, 2), layers=24, hidden=2048, ffn_hidden=8192, heads=16, kv_heads=16,
                   global_batch=64, **changes)


# -- the space and the checker ------------------------------------------------------------------

def every_config(instance):
    n = instance.gpus
    for t, p, d in itertools.product(range(1, n + 1), repeat=3):
        if t * p * d != n:
            continue
        for e, b, v, r, q, z in itertools.product(range(1, instance.experts + 1),
                                                  range(1, instance.max_microbatch + 1),
                                                  range(1, instance.max_interleave + 1), RECOMPUTE,
                                                  (False, True), ZERO_STAGES):
            yield {"tp": t, "pp": p, "dp": d, "ep": e, "microbatch": b, "interleave": v, "recompute": r,
                   "sequence_parallel": q, "zero": z}


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_space_holds_exactly_the_configurations_the_rules_admit(seed):
    instance = model.generate_tiny(seed)
    configs = model.space(instance)
    enumerated = {tuple(configs.config(i).values()) for i in range(len(configs))}
    admitted = {tuple(c.values()) for c in every_config(instance) if not model.rule_violations(instance, c)}
    assert enumerated == admitted
    assert len(enumerated) == len(configs)  # no configuration twice


@pytest.mark.parametrize("change, rule, instance_change", [
    ({"tp": 4}, "product", {}),
    ({"tp": 3, "dp": 1, "pp": 1}, "product", {}),
    ({"tp": 1, "pp": 16, "dp": 1}, "divisibility", {}),  # 24 layers on 16 stages
    ({"tp": 16, "pp": 1, "dp": 1}, "divisibility", {"heads": 24, "kv_heads": 24}),
    ({"tp": 4, "pp": 1, "dp": 4}, "divisibility", {"heads": 16, "kv_heads": 2}),
    ({"microbatch": 5}, "divisibility", {}),  # 5 x 4 does not divide 48
    ({"ep": 2}, "divisibility", {}),  # a dense model has one expert
    ({"ep": 3}, "divisibility", {"experts": 6}),  # 3 does not divide dp 4
    ({"interleave": 2, "pp": 1, "dp": 8}, "interleave", {}),
    ({"interleave": 5}, "interleave", {}),  # 12 layers per stage
    ({"interleave": 2, "pp": 4, "dp": 2, "microbatch": 4}, "interleave", {}),  # 6 micro-batches, 4 stages
    ({"microbatch": 16, "dp": 1, "pp": 8}, "search_space", {}),
    ({"zero": 3}, "search_space", {}),
    ({"recompute": "none"}, "search_space", {"recompute": ("full",)}),
    ({"sequence_parallel": True}, "search_space", {"sequence_parallel": False}),
])
def test_each_rule_has_its_violation(change, rule, instance_change):
    instance = replace(gpt_small(), global_batch=48, zero_stages=(0, 1), max_microbatch=8, **instance_change)
    config = base_config(**change)
    found = {v.constraint for v in model.check(instance, {"config": config})}
    assert rule in found, (config, found)


def test_a_valid_configuration_is_accepted_and_memory_is_judged():
    instance = gpt_small()
    assert model.check(instance, {"config": base_config()}) == []
    small = replace(instance, gpu_memory=1.0 * GIB)
    assert [v.constraint for v in model.check(small, {"config": base_config()})] == ["memory"]


@pytest.mark.parametrize("solution", [
    {}, {"config": None}, {"config": {"tp": 2}}, {"config": base_config(tp=True)},
    {"config": base_config(tp=2.0)}, {"config": base_config(recompute="some")},
    {"config": base_config(sequence_parallel=1)},
])
def test_the_checker_never_raises_on_a_malformed_solution(solution):
    violations = model.check(gpt_small(), solution)
    assert violations and violations[0].constraint == "config"
    assert math.isnan(model.objective(gpt_small(), solution))


def test_a_claimed_objective_that_is_not_the_configurations_time_is_a_violation():
    instance = gpt_small()
    true = model.objective(instance, {"config": base_config()})
    assert model.check(instance, {"config": base_config(), "objective": true * (1 + 1e-9)}) == []
    wrong = model.check(instance, {"config": base_config(), "objective": true * 0.99})
    assert [v.constraint for v in wrong] == ["objective"]
    verdict = judge(PROBLEM, instance, {"config": base_config(), "objective": float("nan")})
    assert not verdict["feasible"]


# -- the loader ---------------------------------------------------------------------------------

GOOD = """problem = "configtuner"
schema_version = 1
[model]
layers = 4
hidden = 256
ffn_hidden = 1024
heads = 4
vocab = 1000
seq_length = 128
{model}
[cluster]
gpus = 8
{cluster}
[training]
global_batch = 16
{rest}
"""


def write(tmp_path, model_extra="", cluster="", rest=""):
    path = tmp_path / "i.toml"
    path.write_text(GOOD.format(model=model_extra, cluster=cluster, rest=rest))
    return path


@pytest.mark.parametrize("extra, field", [
    ({"model_extra": "kv_heads = 3"}, "model.kv_heads"),
    ({"model_extra": "top_k = 2"}, "model.top_k"),
    ({"rest": "[search]\nrecompute = ['everything']"}, "search.recompute"),
    ({"cluster": "peak_tflops = -1.0"}, "cluster.peak_tflops"),
    ({"cluster": "nic_gbps = 100.0"}, "cluster.nic_gbps"),
    ({"rest": "[[calibration]]\nkind = 'nic'\nsize = 1e6\ntime_us = 50.0\n"
              "[[calibration]]\nkind = 'nic'\nsize = 1e8\ntime_us = 50.0"}, "calibration"),
])
def test_bad_input_names_the_field(tmp_path, extra, field):
    with pytest.raises(InstanceError) as error:
        load(write(tmp_path, **extra))
    assert any(e.field == field for e in error.value.errors), str(error.value)


def test_an_unknown_key_suggests_the_declared_one(tmp_path):
    with pytest.raises(InstanceError) as error:
        load(write(tmp_path, cluster="gpus_per_nod = 4"))
    assert "did you mean 'cluster.gpus_per_node'" in str(error.value)


def test_calibration_points_replace_the_curves_by_their_l1_fit(tmp_path):
    alpha, bandwidth = 7e-6, 40e9  # latency, B/s
    u_max, w_half, peak = 0.7, 3e9, 312e12
    links = "".join(f"[[calibration]]\nkind = 'nic'\nsize = {m:.1f}\ntime_us = {(alpha + m / bandwidth) * 1e6!r}\n"
                    for m in (1e5, 1e6, 1e7, 1e8))
    gemms = "".join(f"[[calibration]]\nkind = 'gemm'\nsize = {f:.1f}\n"
                    f"time_us = {(f + w_half) / (u_max * peak) * 1e6!r}\n" for f in (1e9, 1e10, 1e11))
    outlier = "[[calibration]]\nkind = 'nic'\nsize = 5e6\ntime_us = 5000.0\n"  # L1 ignores one outlier
    instance = load(write(tmp_path, rest=links + outlier + gemms)).instance
    fitted_alpha, fitted_bandwidth = instance.curve("nic")
    assert fitted_alpha == pytest.approx(alpha, rel=1e-6) and fitted_bandwidth == pytest.approx(bandwidth, rel=1e-6)
    fitted_u, fitted_w = instance.curve("gemm")
    assert fitted_u == pytest.approx(u_max, rel=1e-6) and fitted_w == pytest.approx(w_half, rel=1e-6)
    assert instance.curve("nvlink") == (instance.nvlink_latency, instance.nvlink_bandwidth)  # none given


# -- C1: methods ----------------------------------------------------------------------------------

def test_the_milp_and_the_enumeration_pick_the_same_time_on_a_medium_instance():
    instance = shipped_instance("1-gpt13b-64xa100")
    options = SolveOptions(gap=1e-9)
    milp, exact = run(PROBLEM, instance, "milp", options), run(PROBLEM, instance, "exact", options)
    assert milp.status == exact.status == "optimal"
    assert milp.objective == pytest.approx(exact.objective, rel=1e-9)


def test_the_rule_of_thumb_takes_the_smallest_fitting_tp_then_the_fewest_stages():
    instance = shipped_instance("1-korthikanti-1t-512xa100")
    config = solvers.megatron(instance)["config"]
    assert config["tp"] == 8 and config["microbatch"] == 1 and config["interleave"] == 1
    fewer = [p for p in model.divisors(instance.gpus // 8) if p < config["pp"] and instance.layers % p == 0]
    assert config["recompute"] == "selective" and fewer
    for p in fewer:  # every shallower pipeline at t = 8 overflows memory with the same choices
        trial = {**config, "pp": p, "dp": instance.gpus // (8 * p)}
        assert "memory" in {v.constraint for v in model.check(instance, {"config": trial})}
    small = shipped_instance("0-gpt1.3b-16xa100")
    assert solvers.megatron(small)["config"]["tp"] == 1  # it fits on one GPU: no tensor parallelism


@pytest.mark.parametrize("stem", ["0-mixtral-8x7b-16xh100", "1-korthikanti-175b-64xa100", "2-gpt3-175b-1024xa100"])
def test_configtuners_memory_first_rules_lose_nothing_inside_their_space(stem):
    instance = shipped_instance(stem)
    rows = model.structures(instance, tp_within_node=True, ep_within_node=True)
    best = exact_c1.best_of(instance, model.space(instance, rows))
    pruned = solvers.configtuner(instance)
    assert pruned["objective"] == pytest.approx(best["objective"], rel=1e-12)
    assert pruned["memory_checked"] == len(model.space(instance, rows))
    assert pruned["evaluated"] * len(instance.recompute) <= pruned["memory_checked"]  # one mode priced


def test_every_search_reports_how_many_configurations_it_priced():
    instance = shipped_instance("0-mixtral-8x7b-16xh100")
    full = len(model.space(instance))
    counts = {name: fn(instance)["evaluated"] for name, fn in solvers.HEURISTICS.items()}
    assert counts["megatron"] < min(counts["two_phase"], counts["configtuner"])
    assert max(counts["two_phase"], counts["configtuner"], counts["calculon"]) < full  # calculon: no EP


def test_the_breakdown_adds_up_to_the_iteration_time():
    for stem in ("0-mixtral-8x7b-16xh100", "1-korthikanti-175b-64xa100", "2-llama2-70b-1024xh100"):
        solution = exact_c1.exact(shipped_instance(stem), SolveOptions()).solution
        assert sum(solution["breakdown"].values()) == pytest.approx(solution["objective"], rel=1e-12)
        assert min(solution["breakdown"].values()) >= -1e-12


# -- the model moves the way it should ------------------------------------------------------------

def optimum(instance) -> float:
    return exact_c1.exact(instance, SolveOptions()).solution["objective"]


def test_a_faster_network_never_slows_the_best_configuration_and_topology_matters():
    instance = shipped_instance("1-llama2-13b-128xh100")
    base = optimum(instance)
    faster = optimum(replace(instance, nic_bandwidth=2 * instance.nic_bandwidth))
    slower = optimum(replace(instance, nic_bandwidth=instance.nic_bandwidth / 4))
    assert faster <= base <= slower and slower > base * 1.01
    gpt = shipped_instance("1-gpt13b-64xa100")
    assert optimum(replace(gpt, gpus_per_node=16)) < optimum(gpt)  # a larger NVLink domain pays here


def test_more_memory_never_hurts_and_too_little_admits_nothing():
    instance = shipped_instance("1-gpt13b-64xa100")
    assert optimum(replace(instance, gpu_memory=160 * GIB)) <= optimum(instance)
    assert exact_c1.exact(replace(instance, gpu_memory=0.5 * GIB), SolveOptions()).status == "infeasible"


def test_sequence_parallel_adds_one_all_gather_per_layer_in_backward_and_saves_memory():
    instance = gpt_small()
    off, on = (model.evaluate(instance, model.space_of(base_config(sequence_parallel=q))) for q in (False, True))
    assert on["tp"][0] / off["tp"][0] == pytest.approx(5 / 4)  # 4 all-reduce volumes + the re-gather
    assert on["memory"][0] < off["memory"][0]


def test_expert_parallelism_splits_the_experts_and_pays_an_all_to_all():
    instance = shipped_instance("0-mixtral-8x7b-16xh100")
    one, two = (model.evaluate(instance, model.space_of(base_config(tp=2, pp=1, dp=8, ep=e, zero=0)))
                for e in (1, 2))
    assert two["memory"][0] < one["memory"][0]
    assert one["ep"][0] == 0 and two["ep"][0] > 0


def test_recompute_trades_time_for_memory():
    instance = gpt_small()
    out = {r: model.evaluate(instance, model.space_of(base_config(recompute=r))) for r in RECOMPUTE}
    assert out["none"]["time"][0] < out["selective"]["time"][0] < out["full"]["time"][0]
    assert out["none"]["memory"][0] > out["selective"]["memory"][0] > out["full"]["memory"][0]
    assert out["full"]["hfu"][0] > out["full"]["mfu"][0] and out["none"]["hfu"][0] == out["none"]["mfu"][0]


def test_the_generator_respects_its_own_loader_at_every_size(tmp_path):
    from coopt.instance import to_toml

    for size in (1, 2, 4, 8, 16):
        instance = model.generate(3, size)
        path = tmp_path / f"g{size}.toml"
        path.write_text(to_toml(PROBLEM, instance))
        assert load(path).instance == instance
        assert exact_c1.exact(instance, SolveOptions()).status == "optimal"


# -- C2: the layer-to-stage partition ----------------------------------------------------------------

PARTITION_CASES = [
    ("0-gpt1.3b-16xa100", {"tp": 2, "pp": 4, "dp": 2}),
    ("0-llama2-7b-32xa100", {"tp": 4, "pp": 8, "dp": 1}),
    ("1-korthikanti-175b-64xa100", {"tp": 8, "pp": 8, "dp": 1}),
]


def partition_config(**layout):
    return base_config(**{"microbatch": 1, "interleave": 1, "recompute": "selective", "zero": 1, **layout})


@pytest.mark.parametrize("stem, layout", PARTITION_CASES)
def test_partition_dp_equals_the_milp_and_never_loses_to_the_uniform_split(stem, layout):
    instance = shipped_instance(stem)
    config = partition_config(**layout)
    data = stage_data(instance, config)
    counts, value = partition.partition_dp(instance, config)
    milp_counts, milp_value = partition.partition_milp(instance, config)
    assert milp_value == pytest.approx(value, rel=1e-9)
    uniform = uniform_partition(instance, config)
    from coopt.problems.configtuner.partition import partition_feasible, pipeline_time

    assert partition_feasible(instance, data, counts)
    if partition_feasible(instance, data, uniform):
        assert value <= pipeline_time(data, uniform) * (1 + 1e-12)


@pytest.mark.parametrize("layers, stages", [(7, 3), (9, 4), (8, 2), (12, 5)])
def test_partition_dp_and_milp_equal_brute_force_when_layers_do_not_divide(layers, stages):
    instance = replace(gpt_small(), layers=layers, gpus=2 * stages, global_batch=16)
    config = partition_config(tp=2, pp=stages, dp=1)
    truth = partition.partition_brute(instance, config)
    assert truth is not None
    assert partition.partition_dp(instance, config)[1] == pytest.approx(truth, rel=1e-12)
    assert partition.partition_milp(instance, config)[1] == pytest.approx(truth, rel=1e-9)


def test_the_partition_moves_layers_off_the_stage_that_holds_the_most_activations():
    instance = shipped_instance("1-korthikanti-175b-64xa100")
    config = partition_config(tp=8, pp=8, dp=1, recompute="none", sequence_parallel=True)
    data = stage_data(instance, config)
    uniform = uniform_partition(instance, config)
    first = stage_memory(instance, data, 0, 8, uniform[0])
    tight = replace(instance, gpu_memory=first * 0.97)  # the uniform split's first stage no longer fits
    counts, _ = partition.partition_dp(tight, config)
    assert counts[0] < uniform[0] and sum(counts) == instance.layers
    assert partition.partition_milp(tight, config)[0] is not None


def test_the_partition_refuses_what_it_does_not_model():
    instance = gpt_small()
    with pytest.raises(ValueError):
        stage_data(instance, partition_config(tp=2, pp=1, dp=8))
    with pytest.raises(ValueError):
        stage_data(instance, {**partition_config(tp=2, pp=2, dp=4), "interleave": 2})


def test_the_model_is_one_set_of_expressions():
    exprs = analytic.expressions()
    assert set(analytic.OUTPUTS) <= set(exprs)
    free = set().union(*(e.free_symbols for e in exprs.values()))
    assert {str(s) for s in free} <= set(analytic.ARGUMENTS)
    values = {n: np.array([1.0, 2.0]) for n in analytic.ARGUMENTS}
    assert analytic.evaluate(values)["time"].shape == (2,)


def test_the_generator_refuses_a_size_or_seed_it_cannot_make():
    from coopt.errors import UsageError

    for seed, size in ((0, 0), (0, 125_001), (-1, 2)):
        with pytest.raises(UsageError):
            model.generate(seed, size)


@pytest.mark.parametrize("path", shipped("configtuner"), ids=lambda p: p.stem)
def test_on_every_shipped_instance_the_bound_is_the_optimum_and_ours_stay_within_one_percent(path):
    instance = load(path).instance
    best = exact_c1.exact(instance, SolveOptions()).solution["objective"]
    assert exact_c1.bound(instance, SolveOptions()) == best
    for name, fn in solvers.HEURISTICS.items():
        value = fn(instance)["objective"]
        assert value >= best * (1 - 1e-12), name
        if name in ("configtuner", "two_phase"):
            assert value <= best * 1.01, (name, value / best)
