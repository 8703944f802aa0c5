"""LightCode: the Stacked Graph, the checker, the exact models against each other, the heuristics'
guarantees, and the closed-form crossovers against the sequence-length scan."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import sympy as sp

from coopt.errors import InstanceError
from coopt.instance import load
from coopt.problem import SolveOptions, close
from coopt.problems.lightcode import PROBLEM, decomposition, heuristics, schedule
from coopt.problems.lightcode.closed_forms import ROLE_BOUND
from coopt.problems.lightcode.data import Limits
from coopt.problems.lightcode.graph import ptu_cycles, stacked_graph
from coopt.problems.lightcode.milp import incomparable_pairs, makespan_relaxation
from coopt.problems.lightcode.model import check, energy, makespan, objective
from coopt.registry import closed_forms as bounds
from coopt.run import run
from coopt.solvers.highs import solve_model

SHIPPED = Path(__file__).parents[1] / "instances" / "lightcode"
EXACT = SolveOptions(gap=1e-9)


def shipped(name: str):
    return load(SHIPPED / name).instance


def resized(instance, **model):
    return replace(instance, model=replace(instance.model, **model))


def optimum(instance) -> dict:
    report = run(PROBLEM, instance, "exact", EXACT)
    assert report.status == "optimal" and report.check["feasible"], report.check["violations"]
    return report.solution


def devices_of(instance, solution) -> list[str]:
    return [solution["assignment"][op.name] for op in stacked_graph(instance).ops]


# -- the Stacked Graph and the cost model -------------------------------------------------------
@pytest.mark.parametrize(
    "family, layers, d, heads, ffn, vocab, photonic_stacks",
    [("gpt2", 12, 768, 12, 3072, 50257, 73), ("llama", 32, 4096, 32, 11008, 32000, 289)],
)
@pytest.mark.parametrize("graph", ["block", "full"])
def test_operator_lists_match_the_models(family, layers, d, heads, ffn, vocab, photonic_stacks, graph):
    """73 PTU-capable stacks for GPT-2 (the repo's count), 289 for Llama-2-7B, and the MACs of a
    prefill counted by hand: per block 4 d^2 L (+ 2 d ffn L, or 3 d ffn L for SwiGLU) + 2 d L^2."""
    base = shipped("1-gpt2-L128-energy.toml" if family == "gpt2" else "1-llama-L512-energy.toml")
    for length in (1, 50, 333):
        instance = replace(base, graph=graph, model=replace(base.model, sequence_length=length))
        g = stacked_graph(instance)
        assert sum("ptu" in s for s in g.stacks) == photonic_stacks
        mlp = (2 if family == "gpt2" else 3) * d * ffn
        per_block = (4 * d * d + mlp) * length + 2 * d * length * length
        assert sum(op.macs for op in g.ops) == layers * per_block + d * vocab * length
    assert (layers, d, heads, ffn, vocab) == (
        base.model.layers,
        base.model.d_model,
        base.model.heads,
        base.model.d_ff,
        base.model.vocab,
    )


def test_graph_is_topologically_ordered_with_one_source_and_one_sink():
    for name in ("1-gpt2-L128-energy.toml", "1-llama-L512-energy.toml"):
        for graph_kind in ("block", "full"):
            g = stacked_graph(replace(shipped(name), graph=graph_kind))
            assert all(e.src < e.dst for e in g.edges)
            assert [v for v in range(len(g.ops)) if not g.preds[v]] == [0]
            assert [v for v in range(len(g.ops)) if not g.succs[v]] == [len(g.ops) - 1]


def test_sram_hop_transfers_reproduce_the_repo_hop_energies():
    """Repo: CPU->CPU 28, PTU->PTU 32.78, CPU->PTU 31.18, PTU->CPU 29.6 pJ per element."""
    instance = replace(shipped("0-llama-tiny-makespan.toml"), transfer_model="sram_hop")
    g = stacked_graph(instance)
    k = next(k for k, e in enumerate(g.edges) if g.ops[e.src].role == "q" and g.ops[e.dst].role == "rope_q")
    e = g.edges[k]
    assert g.ops[e.src].kind == "dense"
    per_element = {pair: value / e.elements / 1e-12 for pair, value in g.transfer_energy[k].items()}
    assert per_element[("cpu", "cpu")] == pytest.approx(28.0)
    q = next(k for k, e in enumerate(g.edges) if g.ops[e.src].role == "v" and g.ops[e.dst].role == "av")
    both = {pair: value / g.edges[q].elements / 1e-12 for pair, value in g.transfer_energy[q].items()}
    assert both[("ptu", "ptu")] == pytest.approx(32.78)
    assert both[("cpu", "ptu")] == pytest.approx(31.18)
    assert both[("ptu", "cpu")] == pytest.approx(29.6)


def test_more_multiplexing_never_slows_the_ptu():
    instance = shipped("1-gpt2-L128-makespan.toml")
    ptu = instance.device("ptu")
    ops = [op for op in stacked_graph(instance).ops if op.kind != "elementwise"]
    for op in ops:
        cycles = [
            ptu_cycles(op, replace(ptu, cores=1, spatial=1, wavelengths=m)) for m in (1, 2, 3, 8, 64, 1000)
        ]
        assert cycles == sorted(cycles, reverse=True)
        assert cycles[0] == op.outputs * op.inner  # one lane: one MAC per cycle


# -- loader -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "old, new, field",
    [
        ("heads = 4", "heads = 3", "model.heads"),
        ('objective = "makespan"', 'objective = "throughput"', "objective"),
        ("clock_ghz = 9.7", "clock_ghz = -9.7", "device[1].clock_ghz"),
        ("bytes_per_element = 4", "bytes_per_element = 4\nbogus = 1", "memory.bogus"),
    ],
)
def test_loader_names_the_field(tmp_path, old, new, field):
    text = (SHIPPED / "0-gpt2-small-makespan.toml").read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(InstanceError) as error:
        load(path)
    assert error.value.field == field and str(path) in str(error.value)


MINIMAL = """
problem = "lightcode"
schema_version = 2
objective = "energy"
transfer_model = "sram_hop"
[constants]
preset = "authors-paper-sweep"
[model]
family = "llama"
layers = 1
d_model = 64
heads = 2
d_ff = 172
vocab = 512
sequence_length = 16
[[device]]
name = "gpu"
kind = "gpu"
[[device]]
name = "ptu"
kind = "ptu"
"""


def test_a_preset_fills_every_constant_the_file_leaves_out(tmp_path):
    path = tmp_path / "preset.toml"
    path.write_text(MINIMAL)
    instance = load(path).instance
    assert instance.memory.sram_energy == pytest.approx(2.4e-12)
    assert instance.memory.dram_energy == pytest.approx(8e-12) and instance.memory.bytes_per_element == 1
    assert instance.device("gpu").mac_energy == pytest.approx(0.1e-12)
    assert instance.photonic_legs == "free"
    path.write_text(MINIMAL.replace('kind = "gpu"', 'kind = "gpu"\nmac_energy_pj = 0.07')
                    + "[memory]\nlink_bandwidth_gbyte_per_s = 450.0\n")
    instance = load(path).instance
    assert instance.device("gpu").mac_energy == pytest.approx(0.07e-12)
    assert instance.memory.link_bandwidth == pytest.approx(450e9)  # GB/s to B/s, once


def test_loader_refuses_constants_of_another_kind_and_old_files(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(MINIMAL.replace('kind = "gpu"', 'kind = "gpu"\nclock_ghz = 2.0'))
    with pytest.raises(InstanceError) as error:
        load(path)
    assert error.value.field == "device[0].clock_ghz"
    path.write_text(MINIMAL.replace("schema_version = 2", "schema_version = 1"))
    with pytest.raises(InstanceError, match="link_bandwidth_gbyte_per_s"):
        load(path)
    path.write_text(MINIMAL.replace('transfer_model = "sram_hop"',
                                    'transfer_model = "realistic"\nphotonic_legs = "free"'))
    with pytest.raises(InstanceError, match="photonic_legs"):
        load(path)


def test_loader_needs_an_electronic_device(tmp_path):
    text = (SHIPPED / "0-gpt2-small-makespan.toml").read_text()
    head, rest = text.split("[[device]]", 1)
    path = tmp_path / "bad.toml"
    path.write_text(head + "[[device]]" + rest.split("[[device]]", 1)[1])
    with pytest.raises(InstanceError, match="electronic"):
        load(path)


# -- checker ------------------------------------------------------------------------------------
def test_checker_rejects_malformed_and_infeasible_solutions():
    instance = shipped("0-llama-tiny-makespan.toml")
    good = optimum(instance)
    assert check(instance, good) == []
    g = stacked_graph(instance)
    softmax = next(op.name for op in g.ops if op.role == "softmax")
    cases = {
        "no assignment": {"start": good["start"]},
        "wrong device": {**good, "assignment": {**good["assignment"], softmax: "ptu"}},
        "unknown op": {**good, "assignment": {**good["assignment"], "ghost": "gpu"}},
        "no start": {"assignment": good["assignment"]},
        "negative start": {**good, "start": {**good["start"], softmax: -1.0}},
        "bad start": {**good, "start": {**good["start"], softmax: "soon"}},
        "infinite start": {**good, "start": {**good["start"], softmax: math.inf}},
        "NaN start": {**good, "start": {**good["start"], softmax: math.nan}},
        "list as device": {**good, "assignment": {**good["assignment"], softmax: ["gpu"]}},
        "number as device": {**good, "assignment": {**good["assignment"], softmax: 3}},
        "assignment as list": {**good, "assignment": list(good["assignment"])},
        "NaN objective": {**good, "objective": math.nan},
    }
    for why, solution in cases.items():
        assert check(instance, solution), why  # a violation, never an exception
    assert check(instance, [good]), "a list is no solution"
    late = g.ops[-1].name
    early = {**good, "start": {**good["start"], late: 0.0}}
    assert any(v.constraint == "precedence" for v in check(instance, early))


def test_checker_and_milp_share_the_side_constraint_slack():
    """A budget just below the fastest assignment's energy, inside the slack both sides allow:
    the checker accepts that assignment, so the exact optimum must be it (a checker more lenient
    than the model would let a heuristic beat a proven optimum)."""
    from coopt.problems.lightcode.data import SIDE_TOL

    base = replace(shipped("0-gpt2-small-makespan.toml"), objective="latency_sum")
    g = stacked_graph(base)
    fastest = optimum(base)
    budget = energy(g, devices_of(base, fastest)) / (1 + SIDE_TOL / 2)
    instance = replace(base, limits=Limits(energy_budget=budget))
    assert check(instance, fastest) == []
    assert close(objective(instance, optimum(instance)), objective(base, fastest))
    assert check(replace(base, limits=Limits(energy_budget=budget / (1 + 2 * SIDE_TOL))), fastest)


def test_exact_reports_a_bound_that_the_brute_force_respects():
    from coopt.problems.lightcode import brute

    for seed in (5, 9, 30):  # Llama makespan instances: the decomposition's segment MILPs
        instance = brute.tiny(seed)
        outcome = decomposition.exact(instance, EXACT)
        truth = brute.optimum(instance)
        assert outcome.status == "optimal" and outcome.bound is not None
        assert outcome.bound <= truth * (1 + 1e-9) and outcome.bound >= truth * (1 - 1e-8)
        assert close(objective(instance, outcome.solution), truth, rel=1e-9)


def test_checker_catches_two_operators_on_one_device_at_once():
    instance = shipped("0-llama-tiny-makespan.toml")
    g = stacked_graph(instance)
    assign = ["gpu"] * len(g.ops)
    start = schedule.list_schedule(g, assign)
    q, k = (next(v for v, op in enumerate(g.ops) if op.role == r) for r in ("q", "k"))
    assert (min(q, k), max(q, k)) in incomparable_pairs(g)
    start[k] = start[q]  # both inputs are ready then, but the GPU is busy with q
    solution = {
        "assignment": {op.name: d for op, d in zip(g.ops, assign, strict=True)},
        "start": {op.name: s for op, s in zip(g.ops, start, strict=True)},
    }
    assert [v.constraint for v in check(instance, solution)] == ["device_exclusive"]


def test_checker_flags_uniform_blocks_and_capacity():
    instance = shipped("0-gpt2-small-latency-limits.toml")
    g = stacked_graph(instance)
    all_ptu = {op.name: ("ptu" if "ptu" in s else "gpu") for op, s in zip(g.ops, g.stacks, strict=True)}
    found = {v.constraint for v in check(instance, {"assignment": all_ptu})}
    assert "capacity" in found
    mixed = dict.fromkeys(all_ptu, "gpu") | {"b0.qk": "ptu"}
    assert "uniform_blocks" in {v.constraint for v in check(instance, {"assignment": mixed})}


# -- exact models -------------------------------------------------------------------------------
def realistic_two_device(objective_name: str, length: int, layers: int = 2):
    base = shipped("0-gpt2-small-makespan.toml")
    return replace(resized(base, sequence_length=length, layers=layers), objective=objective_name)


@pytest.mark.parametrize("objective_name", ["energy", "latency_sum"])
@pytest.mark.parametrize("length", [16, 200, 512])
def test_milp_equals_min_cut_on_two_device_sum_instances(objective_name, length):
    instance = realistic_two_device(objective_name, length)
    milp = optimum(instance)
    cut = heuristics.min_cut(instance)
    assert check(instance, cut) == []
    assert close(cut["objective"], milp["objective"] if "objective" in milp else objective(instance, milp))
    assert close(objective(instance, cut), objective(instance, milp))


def test_min_cut_refuses_what_it_cannot_solve():
    with pytest.raises(ValueError):
        heuristics.min_cut(shipped("0-gpt2-small-makespan.toml"))
    with pytest.raises(ValueError):
        heuristics.min_cut(shipped("0-gpt2-small-latency-limits.toml"))


def test_relaxation_lower_bounds_the_makespan_and_the_list_schedule_upper_bounds_it():
    for name in ("0-llama-tiny-makespan.toml", "0-gpt2-small-makespan.toml"):
        instance = shipped(name)
        best = objective(instance, optimum(instance))
        relaxed = solve_model(makespan_relaxation(instance), EXACT)
        assert relaxed.status == "optimal" and relaxed.objective <= best * (1 + 1e-7)
        g = stacked_graph(instance)
        for method in PROBLEM.heuristics:
            solution = PROBLEM.heuristics[method](instance)
            assign = devices_of(instance, solution)
            start = schedule.list_schedule(g, assign)
            load_bound = max(
                sum(g.stacks[v][d].latency for v in range(len(g.ops)) if assign[v] == d) for d in set(assign)
            )
            assert makespan(g, assign, start) >= load_bound * (1 - 1e-12)
            assert makespan(g, assign, start) * 1e6 >= best * (1 - 1e-7)


def test_energy_and_latency_optima_differ_and_trade_off():
    """The paper's third claim: the two objectives give different mappings."""
    llama = resized(shipped("1-llama-L512-energy.toml"), layers=2)
    for base in (llama, shipped("0-gpt2-small-makespan.toml")):
        frugal, fast = replace(base, objective="energy"), replace(base, objective="makespan")
        g = stacked_graph(base)
        a_frugal, a_fast = devices_of(frugal, optimum(frugal)), devices_of(fast, optimum(fast))
        assert a_frugal != a_fast
        assert energy(g, a_frugal) < energy(g, a_fast)
        fastest = objective(fast, optimum(fast)) / 1e6
        assert fastest < makespan(g, a_frugal, schedule.list_schedule(g, a_frugal))


def test_without_a_ptu_the_optimum_is_the_all_gpu_baseline():
    for objective_name in ("energy", "latency_sum", "makespan"):
        base = replace(shipped("0-gpt2-small-makespan.toml"), objective=objective_name)
        gpu_only = replace(base, devices=base.devices[:1])
        solution = optimum(gpu_only)
        assert set(solution["assignment"].values()) == {"gpu"}
        with_ptu = objective(base, optimum(base))
        assert with_ptu <= objective(gpu_only, solution) * (1 + 1e-9)


def test_energy_budget_sweep_gives_a_monotone_front():
    base = replace(shipped("0-gpt2-small-makespan.toml"), objective="latency_sum")
    g = stacked_graph(base)
    frugal = devices_of(base, optimum(replace(base, objective="energy")))
    fast = devices_of(base, optimum(base))
    low, high = energy(g, frugal), energy(g, fast)
    assert high > low
    front = []
    for share in (0.0, 0.25, 0.5, 0.75, 1.0):
        budget = (low + share * (high - low)) * (1 + 1e-9)
        instance = replace(base, limits=Limits(energy_budget=budget))
        front.append(objective(instance, optimum(instance)))
    assert front == sorted(front, reverse=True) and front[0] > front[-1]


# -- heuristics ---------------------------------------------------------------------------------
SUM_EXACT = ("segment_dp", "best_first")


@pytest.mark.parametrize("seed", range(8))
def test_heuristics_are_feasible_and_never_beat_the_milp(seed):
    instance = PROBLEM.generate(seed, 2)
    best = objective(instance, optimum(instance))
    for method, heuristic in PROBLEM.heuristics.items():
        solution = heuristic(instance, seed=seed)
        assert check(instance, solution) == [], method
        assert close(objective(instance, solution), solution["objective"]), method
        assert solution["objective"] >= best * (1 - 1e-7), method
        if instance.objective != "makespan" and method in SUM_EXACT and not instance.uniform_blocks:
            assert close(solution["objective"], best), method


@pytest.mark.parametrize(
    "name", ["1-gpt2-L1024-energy.toml", "1-gpt2-L128-energy.toml", "1-llama-L512-energy.toml"]
)
def test_segment_dp_and_best_first_are_exact_for_sum_objectives(name):
    for objective_name in ("energy", "latency_sum"):
        instance = replace(shipped(name), objective=objective_name)
        best = objective(instance, optimum(instance))
        for method in SUM_EXACT:
            assert close(PROBLEM.heuristics[method](instance)["objective"], best), (objective_name, method)


def test_greedy_per_operator_is_exact_under_the_authors_transfers():
    """With every hop through SRAM, energy and latency-sum separate per operator."""
    for name in ("1-gpt2-L1024-energy-sram.toml", "0-gpt2-small-energy-sram.toml"):
        for objective_name in ("energy", "latency_sum"):
            instance = replace(shipped(name), objective=objective_name)
            greedy = heuristics.greedy_per_operator(instance)
            assert close(greedy["objective"], objective(instance, optimum(instance)))


def test_articulation_operators_cut_every_path():
    g = stacked_graph(shipped("1-llama-L512-energy.toml"))
    cuts = schedule.articulation_operators(g)
    assert cuts[0] == 0 and cuts[-1] == len(g.ops) - 1
    assert {g.ops[v].role for v in cuts[1:-1]} == {"add1", "add2", "rms_f"}
    for v in cuts:
        assert not any(e.src < v < e.dst for e in g.edges)


def test_best_first_beam_still_returns_a_feasible_solution():
    instance = shipped("0-llama-tiny-makespan.toml")
    solution = heuristics.best_first(instance, beam=1)
    assert check(instance, solution) == []


def test_local_search_never_worsens_its_start():
    for name in ("0-llama-tiny-makespan.toml", "0-gpt2-small-makespan.toml"):
        instance = shipped(name)
        start = heuristics.greedy_per_operator(instance)["objective"]
        assert heuristics.local_search(instance)["objective"] <= start


# -- closed forms against the sequence-length scan ----------------------------------------------
def test_dense_crossover_balances_saving_and_conversion():
    bound = bounds()["lightcode.energy_crossover_dense"]
    q = bound.symbols
    length = sp.Symbol("L", positive=True)
    k, n = q["K"].symbol, q["N"].symbol
    saving = (q["e"].symbol - q["e_PTU"].symbol) * length * k * n
    cost = q["E_DAC"].symbol * (length * k + k * n) + q["E_ADC"].symbol * length * n
    assert sp.simplify((saving - cost).subs(length, bound.expr)) == 0


def first_integer_above(value: float) -> int:
    return math.floor(value + 1e-9) + 1


@pytest.mark.parametrize(
    "family, name", [("gpt2", "1-gpt2-L1024-energy-sram.toml"), ("llama", "1-llama-L512-energy.toml")]
)
def test_energy_crossover_matches_the_sequence_length_scan(family, name):
    """Under the authors' transfers, the first L whose energy optimum moves an operator to the PTU
    is the first integer above the closed-form L*; a non-positive L* means it never moves."""
    instance = replace(resized(shipped(name), layers=1), transfer_model="sram_hop", objective="energy")
    ptu = instance.device("ptu")
    gpu = instance.device(instance.baseline)
    values = {
        "e": gpu.mac_energy,
        "e_PTU": ptu.mac_energy,
        "E_DAC": ptu.dac_energy,
        "E_ADC": ptu.adc_energy,
    }
    g = stacked_graph(instance)
    for op in g.ops:
        if op.kind == "elementwise" or op.role not in ROLE_BOUND:
            continue
        bound = bounds()[ROLE_BOUND[op.role]]
        shape = (
            {"K": op.inner, "N": op.outputs // instance.model.sequence_length}
            if op.kind == "dense"
            else {"d_h": instance.model.d_head}
        )
        predicted = float(bound.evaluate(values | shape))
        if predicted <= 0:
            assert decomposition.photonic_lengths(instance, op.role, [64, 1024, 4096]) == []
            continue
        first = first_integer_above(predicted)
        window = list(range(max(1, first - 2), first + 3))
        scanned = decomposition.photonic_lengths(instance, op.role, window)
        assert scanned == [length for length in window if length >= first], (op.role, predicted)


def test_latency_crossover_matches_a_multiplexing_scan():
    """The PTU overtakes a compute-bound GPU matmul once m c exceeds Phi / (2 f_PTU)."""
    instance = shipped("1-gpt2-L1024-makespan.toml")
    gpu, ptu = instance.device("gpu"), instance.device("ptu")
    predicted = float(
        bounds()["lightcode.latency_crossover_lanes"].evaluate(
            {"Phi": gpu.peak_flops, "f_PTU": ptu.clock}
        )
    )
    assert predicted == pytest.approx(25500, rel=1e-3)
    op = next(op for op in stacked_graph(instance).ops if op.role == "fc1")
    gpu_time = 2 * op.macs / gpu.peak_flops  # compute-bound, launch excluded

    def ptu_faster(lanes: int) -> bool:
        return (
            ptu_cycles(op, replace(ptu, cores=1, spatial=1, wavelengths=lanes)) / ptu.clock
            < gpu_time
        )

    first = next(m for m in range(20000, 30000) if ptu_faster(m))
    # the ceiling ceil(D / m) delays the crossover by at most one cycle row: D / m_first >= D / m* - 1
    assert predicted < first <= op.outputs / (op.outputs / predicted - 1) + 1


def test_decomposition_matches_the_full_milp_on_makespan():
    """The natural exact method (segments between articulation operators, solved once per
    distinct segment) against the one-piece disjunctive MILP."""
    for instance in (
        shipped("1-gpt2-L128-makespan.toml"),
        resized(shipped("1-llama-L512-makespan.toml"), layers=2),
    ):
        whole, parts = run(PROBLEM, instance, "milp", EXACT), run(PROBLEM, instance, "exact", EXACT)
        assert whole.status == parts.status == "optimal"
        assert parts.check["feasible"] and close(parts.check["objective_recomputed"], parts.objective)
        assert close(whole.objective, parts.objective)


def test_chain_dp_is_exact_on_a_chain(monkeypatch):
    """On a path every edge joins consecutive operators: the chain DP equals enumeration."""
    import itertools
    import random

    from coopt.problems.lightcode.graph import Edge, Operator, Realization, StackedGraph

    rng = random.Random(5)
    devices = ("gpu", "ptu")
    n = 7
    ops = [Operator(f"op{i}", "dense", f"op{i}", -1, 1) for i in range(n)]
    stacks = [{d: Realization(d, rng.uniform(1, 2), rng.uniform(1, 5)) for d in devices} for _ in range(n)]
    edges = [Edge(i, i + 1, 1) for i in range(n - 1)]
    tables = [{(a, b): rng.uniform(0, 3) for a in devices for b in devices} for _ in edges]
    chain = StackedGraph(ops, edges, stacks, tables, [dict.fromkeys(t, 0.0) for t in tables])
    monkeypatch.setattr(heuristics, "stacked_graph", lambda instance: chain)
    instance = replace(shipped("0-gpt2-small-energy-sram.toml"), objective="energy")
    best = min(energy(chain, list(a)) for a in itertools.product(devices, repeat=n))
    assert heuristics.chain_dp(instance)["objective"] == pytest.approx(best * 1e6, rel=1e-12)
    assert heuristics.greedy_topological(instance)["objective"] >= best * 1e6 * (1 - 1e-12)


def test_segment_spans_add_up_to_the_global_list_schedule():
    import random

    rng = random.Random(3)
    for instance in (
        resized(shipped("1-llama-L512-makespan.toml"), layers=3),
        shipped("0-llama-tiny-makespan.toml"),
    ):
        g = stacked_graph(instance)
        for _ in range(5):
            assign = [rng.choice(sorted(s)) for s in g.stacks]
            spans = schedule.SegmentSpans(g, assign)
            whole = makespan(g, assign, schedule.list_schedule(g, assign))
            assert spans.makespan(assign)[0] == pytest.approx(whole, rel=1e-12)
            moved = rng.choice(g.free)
            trial = list(assign)
            trial[moved] = next(d for d in sorted(g.stacks[moved]) if d != assign[moved])
            incremental, _ = spans.makespan(trial, [moved])
            assert incremental == pytest.approx(
                makespan(g, trial, schedule.list_schedule(g, trial)), rel=1e-12
            )


def test_dearer_conversions_never_move_the_energy_crossover_earlier():
    base = replace(resized(shipped("1-gpt2-L1024-energy-sram.toml"), layers=1), objective="energy")
    lengths = [100, 120, 140, 170, 200, 260]
    firsts = []
    for dac, adc in ((3.18, 1.6), (3.6, 1.6), (3.6, 2.4), (4.5, 3.0)):
        devices = tuple(
            replace(d, dac_energy=dac * 1e-12, adc_energy=adc * 1e-12) if d.photonic else d
            for d in base.devices
        )
        found = decomposition.photonic_lengths(replace(base, devices=devices), "qkv", lengths)
        firsts.append(found[0] if found else math.inf)
    assert firsts == sorted(firsts) and firsts[0] < firsts[-1]


# -- presets and the readings of the authors' cost model -----------------------------------------
def test_photonic_legs_readings_charge_what_they_say():
    """every_operand: each operand and the weights pay SRAM -> PTU (SRAM + port + DAC);
    first_operand (a424e5e): only the first operand; free (237609f): no energy on PTU legs."""
    base = replace(shipped("0-llama-tiny-makespan.toml"), transfer_model="sram_hop")
    mem, ptu = base.memory, base.device("ptu")
    leg_in = mem.sram_energy + mem.port_energy + ptu.dac_energy
    leg_out = mem.sram_energy + mem.port_energy + ptu.adc_energy
    gpu_leg = mem.sram_energy + mem.port_energy
    fetch = mem.dram_energy + 2 * mem.hbm_energy + mem.sram_energy
    for legs, first, second, weight, out in (
        ("every_operand", leg_in, leg_in, leg_in, leg_out),
        ("first_operand", leg_in, 0.0, 0.0, leg_out),
        ("free", 0.0, 0.0, 0.0, 0.0),
    ):
        g = stacked_graph(replace(base, photonic_legs=legs))
        qk = next(v for v, op in enumerate(g.ops) if op.role == "qk")
        q_edge, k_edge = sorted(g.in_edges[qk], key=lambda k: -g.edges[k].leading)
        for k, per in ((q_edge, first), (k_edge, second)):
            assert g.transfer_energy[k]["gpu", "ptu"] == pytest.approx(g.edges[k].elements * (gpu_leg + per))
            assert g.transfer_energy[k]["gpu", "gpu"] == pytest.approx(g.edges[k].elements * 2 * gpu_leg)
        scores = g.out_edges[qk][0]  # qk -> softmax
        assert g.transfer_energy[scores]["ptu", "gpu"] == pytest.approx(g.edges[scores].elements * (out + gpu_leg))
        q = next(v for v, op in enumerate(g.ops) if op.role == "q")
        own = g.ops[q].macs * ptu.mac_energy
        assert g.stacks[q]["ptu"].energy == pytest.approx(own + g.ops[q].weights * (fetch + weight))


def test_the_cpu_large_dense_fit_times_only_wide_products():
    tiny = shipped("0-llama-tiny-makespan.toml")
    assert tiny.transfer_model == "realistic"
    base = replace(tiny, devices=(tiny.device("cpu"),))
    cpu = base.device("cpu")
    fitted = replace(cpu, large_dense_min_dim=256, large_dense_s_per_mac=3.5e-10, large_dense_intercept=-1e-6)
    g0, g1 = stacked_graph(base), stacked_graph(replace(base, devices=(fitted,)))
    for v, op in enumerate(g1.ops):
        if op.kind != "elementwise" and op.widest > 256:  # the lm_head: vocab 512
            # realistic transfers, the CPU the only device: no weight or output latency on top
            assert g1.stacks[v]["cpu"].latency == pytest.approx(max(0.0, 3.5e-10 * op.macs - 1e-6))
        else:
            assert g1.stacks[v]["cpu"].latency == g0.stacks[v]["cpu"].latency
    negative = replace(fitted, large_dense_intercept=-1.0)  # a fit below zero is clamped, never negative
    assert all(s["cpu"].latency >= 0 for s in stacked_graph(replace(base, devices=(negative,))).stacks)


def test_every_preset_ships_a_llama_and_a_gpt2_instance():
    from coopt.problems.lightcode.presets import NAMES

    found = {(p.instance.preset, p.instance.model.family) for p in (load(f) for f in SHIPPED.glob("*.toml"))}
    assert {(name, family) for name in NAMES for family in ("llama", "gpt2")} <= found


def test_the_paper_sweep_constants_reproduce_the_authors_energy_saving():
    """Llama-2-7B, L = 3900, full graph, GPU + PTU: the authors' data give 46.8 %."""
    instance = shipped("1-llama-full-L3900-energy-paper-sweep.toml")
    g = stacked_graph(instance)
    frugal = decomposition.segment_dp(instance)["objective"]
    fast = energy(g, devices_of(instance, decomposition.segment_dp(replace(instance, objective="latency_sum"))))
    assert abs(100 * (1 - frugal / (fast * 1e6)) - 46.8) <= 3


# -- the dual bound -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(p.name for p in SHIPPED.glob("0-*.toml")))
def test_the_dual_bound_is_valid_and_at_least_the_lp_relaxation(name):
    from coopt.solvers.highs import lp_relaxation

    instance = shipped(name)
    bound = decomposition.dual_bound(instance, EXACT)
    best = objective(instance, optimum(instance))
    assert math.isfinite(bound) and bound <= best * (1 + 1e-9)
    relaxed = lp_relaxation(PROBLEM, instance, EXACT)
    assert relaxed is not None and bound >= relaxed * (1 - 1e-9)


def test_the_dual_bound_never_cuts_off_the_brute_force_optimum():
    from coopt.problems.lightcode import brute

    for seed in range(24):
        instance = brute.tiny(seed)
        truth = brute.optimum(instance)
        if truth is not None:
            assert decomposition.dual_bound(instance, EXACT) <= truth * (1 + 1e-9), seed


def test_the_generator_writes_only_what_its_loader_reads(tmp_path):
    from coopt.errors import UsageError
    from coopt.instance import to_toml
    from coopt.problems.lightcode.data import MAX_LAYERS

    path = tmp_path / "largest.toml"
    path.write_text(to_toml(PROBLEM, PROBLEM.generate(0, MAX_LAYERS)))
    assert load(path).instance.model.layers == MAX_LAYERS
    with pytest.raises(UsageError, match="--size"):
        PROBLEM.generate(0, MAX_LAYERS + 1)
