"""Hecaton: loader, checker, the cost model's invariants, exact methods against each other and the
heuristics against the proven optimum."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from coopt.errors import InstanceError
from coopt.instance import load, to_toml
from coopt.problem import NoSolution, SolveOptions, close
from coopt.problems import hecaton
from coopt.problems.hecaton import dp as methods
from coopt.problems.hecaton import milp as hecaton_milp
from coopt.problems.hecaton import model as hecaton_model
from coopt.problems.hecaton.model import (
    SCHEMES,
    Instance,
    Model,
    Option,
    Package,
    cost,
    stash_total,
    to_solution,
    total,
)
from coopt.run import run

P = hecaton.PROBLEM
OPTIONS = SolveOptions(gap=1e-9)
SHIPPED = Path(__file__).resolve().parent.parent / "instances" / "hecaton"


def read(path: Path) -> Instance:
    return load(path, registry_get=lambda name: P).instance


def llama_block(dies: int, hidden: int = 4096, ffn: int = 11008, heads: int = 32, kv: int = 8,
                tokens: tuple[int, int] = (4, 2048), microbatches=(1, 4, 16)) -> Instance:
    """One Llama-style block on ``dies`` dies with roomy DRAM and SRAM (for invariants)."""
    model = Model(hidden, heads, kv, tokens[1], tokens[0], True, 2, (1,), (ffn,))
    package = Package(dies, 100e12, 1024.0 * 2**20, 256e9, 2, 20e-9, "distributed", 64e9, 1e16, 12.0, 16.0, 0.3e-12,
                      0.5e-12, 5e-12, 2.0)
    return Instance(model, package, SCHEMES, tuple(microbatches), (False, True), "time", "full", False)


# -- instance files ----------------------------------------------------------------------------
def test_shipped_instances_round_trip(tmp_path):
    for path in sorted(SHIPPED.glob("*.toml")):
        instance = read(path)
        copy = tmp_path / path.name
        copy.write_text(to_toml(P, instance))
        assert read(copy) == instance, path.name


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("[package]\ndies = 4", "[package]\ndies = 0"), "package.dies"),
        (("kv_heads = 32", "kv_heads = 5"), "model.kv_heads"),
        (("microbatches = [\n    1,", "microbatches = [\n    3,"), "microbatches[0]"),
        (('recompute = "choose"', 'recompute = "sometimes"'), "recompute"),
        (("segment_ffn = [\n    11008,\n]", "segment_ffn = [\n    11008,\n    11008,\n]"), "model.segment_ffn"),
        (("[package]\n", "[package]\nwafer = true\n"), "package.wafer"),
    ],
)
def test_loader_names_the_file_and_the_field(tmp_path, edit, field):
    text = (SHIPPED / "0-llama2-7b-slice-n4.toml").read_text()
    assert edit[0] in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(InstanceError) as err:
        read(bad)
    assert err.value.path == str(bad) and err.value.field == field


def test_a_version_1_file_is_refused_with_the_renamed_fields(tmp_path):
    text = (SHIPPED / "0-llama2-7b-slice-n4.toml").read_text()
    old = tmp_path / "old.toml"
    old.write_text(text.replace("schema_version = 2", "schema_version = 1")
                   .replace("link_gbyte_per_s", "link_gb_per_s"))
    with pytest.raises(InstanceError) as err:
        read(old)
    assert err.value.field == "schema_version" and "link_gbyte_per_s" in str(err.value)


def test_magnitudes_beyond_physics_are_refused(tmp_path):
    text = (SHIPPED / "0-llama2-7b-slice-n4.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("hidden = 4096", "hidden = 1000000000000"))
    with pytest.raises(InstanceError) as err:
        read(bad)
    assert err.value.field == "model.hidden"


def test_the_generator_writes_files_its_loader_reads_up_to_its_limit(tmp_path):
    from coopt.errors import UsageError

    big = tmp_path / "big.toml"
    big.write_text(to_toml(P, hecaton_model.generate(3, 300_000)))
    assert read(big).blocks == 300_000
    with pytest.raises(UsageError):
        hecaton_model.generate(3, hecaton_model.MAX_BLOCKS + 1)


# -- checker -----------------------------------------------------------------------------------
def test_checker_rejects_malformed_and_infeasible_solutions():
    instance = read(SHIPPED / "0-llama2-7b-slice-n4.toml")
    good = run(P, instance, "exact", OPTIONS).solution
    assert hecaton_model.check(instance, good) == []
    assert hecaton_model.check(instance, {"objective": 1.0})
    assert hecaton_model.check(instance, {"ops": good["ops"][:-1]})
    assert hecaton_model.check(instance, {"ops": [{"scheme": "agrs"}] * instance.blocks})
    assert math.isnan(hecaton_model.objective(instance, {"ops": "no"}))
    wrong = [dict(op) for op in good["ops"]]
    wrong[0] = {**wrong[0], "scheme": "summa", "rows": 1, "cols": 4}
    assert any(v.constraint == "option" for v in hecaton_model.check(instance, {"ops": wrong}))
    wrong[0] = {**wrong[0], "scheme": "agrs", "rows": 3, "cols": 2}
    assert any(v.constraint == "option" for v in hecaton_model.check(instance, {"ops": wrong}))
    # the stash row binds here: everyone keeping activations overflows DRAM
    keep = [{**op, "recompute": False} for op in good["ops"]]
    assert any(v.constraint == "dram" for v in hecaton_model.check(instance, {"ops": keep}))
    # one micro-batch on 4 dies holds a whole T x h tile per die: over 64 MiB of SRAM
    big = [Option("1d", 1, 4, 1, True).to_json()] * instance.blocks
    assert any(v.constraint == "sram" for v in hecaton_model.check(instance, {"ops": big}))


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, 1e300, "4", None, True])
def test_checker_rejects_non_finite_and_non_integer_decisions_without_raising(bad):
    instance = read(SHIPPED / "0-llama2-7b-slice-n4.toml")
    good = run(P, instance, "exact", OPTIONS).solution
    for key in ("rows", "microbatches"):
        ops = [dict(op) for op in good["ops"]]
        ops[1][key] = bad
        assert any(v.constraint == "option" for v in hecaton_model.check(instance, {**good, "ops": ops}))


@pytest.mark.parametrize("claim", [math.nan, math.inf, None, "1.0", 0.0])
def test_checker_rejects_a_false_or_non_finite_objective(claim):
    instance = read(SHIPPED / "0-llama2-7b-slice-n4.toml")
    good = run(P, instance, "exact", OPTIONS).solution
    assert not hecaton_model.check(instance, good)
    violations = hecaton_model.check(instance, {**good, "objective": claim})
    assert [v.constraint for v in violations] == ["objective"]


def test_checker_enforces_one_scheme():
    instance = read(SHIPPED / "0-llama2-7b-slice-n16-one-scheme.toml")
    ops = run(P, instance, "exact", OPTIONS).solution["ops"]
    other = next(s for s in SCHEMES if s != ops[0]["scheme"])
    rows = 1 if other == "1d" else 4
    mixed = [*ops[:-1], {**ops[-1], "scheme": other, "rows": rows, "cols": 16 // rows}]
    assert any(v.constraint == "one_scheme" for v in hecaton_model.check(instance, {"ops": mixed}))


# -- exact methods -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["0-llama2-7b-slice-n4", "0-mixed-ffn-n16-energy", "1-llama2-7b-n16"])
def test_milp_equals_dp_and_heuristics_never_beat_it(name):
    instance = read(SHIPPED / f"{name}.toml")
    exact = run(P, instance, "exact", OPTIONS)
    milp = run(P, instance, "milp", OPTIONS)
    assert exact.status == milp.status == "optimal"
    assert close(exact.objective, milp.objective), (exact.objective, milp.objective)
    for method in P.heuristics:
        report = run(P, instance, method, OPTIONS)
        assert report.check["feasible"], (method, report.check["violations"])
        assert not P.better(report.objective, exact.objective), (method, report.objective, exact.objective)


@pytest.mark.parametrize("seed", range(8))
def test_generated_instances_milp_equals_dp(seed):
    instance = hecaton_model.generate(seed, 6)
    exact = run(P, instance, "exact", OPTIONS)
    milp = run(P, instance, "milp", OPTIONS)
    assert exact.status == milp.status
    if exact.status == "optimal":
        assert close(exact.objective, milp.objective), (exact.objective, milp.objective)
        assert exact.check["feasible"] and milp.check["feasible"]
        for method, fn in P.heuristics.items():
            try:
                value = P.objective(instance, fn(instance))
            except NoSolution:
                continue
            assert not P.better(value, exact.objective), method


def test_mixed_optimum_is_no_worse_than_any_uniform_one():
    instance = read(SHIPPED / "1-llama2-7b-n16.toml")
    mixed = methods.exact(instance, OPTIONS)
    uniform = methods.exact(replace(instance, one_scheme=True), OPTIONS)
    assert not P.better(uniform.solution["objective"], mixed.solution["objective"])
    per_scheme = []
    for scheme in SCHEMES:
        only = methods.exact(replace(instance, schemes=(scheme,)), OPTIONS)
        if only.solution is not None:
            per_scheme.append(only.solution["objective"])
            assert not P.better(only.solution["objective"], mixed.solution["objective"])
    assert close(min(per_scheme), uniform.solution["objective"])


def test_capacity_dp_fixes_what_the_layered_dp_overflows():
    instance = read(SHIPPED / "1-llama2-7b-n16.toml")
    free = methods.layered_dp(instance)
    assert stash_total(instance, free) > instance.stash_capacity
    fixed = methods.capacity_dp(instance)
    assert hecaton_model.check(instance, to_solution(instance, fixed)) == []
    assert total(instance, fixed) >= total(instance, free)


def test_infeasible_instance_is_reported_not_crashed():
    instance = read(SHIPPED / "0-llama2-7b-slice-n4.toml")
    tiny_sram = replace(instance, package=replace(instance.package, sram_bytes=2.0**20))
    assert run(P, tiny_sram, "exact", OPTIONS).status == "infeasible"
    assert run(P, tiny_sram, "milp", OPTIONS).status == "infeasible"
    assert run(P, tiny_sram, "greedy", OPTIONS).status == "no_solution"


# -- cost-model invariants (notes section 1.g) ---------------------------------------------------
def test_flops_are_conserved_across_schemes():
    """With attention spread over every die, every scheme computes the same FLOPs per die."""
    instance = llama_block(16)
    times = {cost(instance, 11008, Option(s, r, c, 1, False)).compute_s
             for s, r, c in (("1d", 1, 16), ("summa", 4, 4), ("agrs", 4, 4), ("agrs", 2, 8))}
    assert max(times) == pytest.approx(min(times), rel=1e-12)


def test_agrs_sram_falls_with_n_while_1d_activations_stay():
    agrs = [cost(llama_block(q * q), 11008, Option("agrs", q, q, 4, False)).sram_bytes for q in (2, 4, 8, 16)]
    assert all(a > b for a, b in zip(agrs, agrs[1:], strict=False))
    tile = 4 * 2048 / 4 * 4096 * 2  # the replicated T_mu x h input of a column-parallel linear
    one_d = [cost(llama_block(n), 11008, Option("1d", 1, n, 4, False)).sram_bytes for n in (4, 16, 64, 256)]
    assert all(s >= tile for s in one_d)


def test_more_microbatches_never_raise_sram_nor_change_weight_traffic():
    instance = llama_block(16, microbatches=(1, 2, 4, 8, 16))
    for scheme, r, c in (("1d", 1, 16), ("summa", 4, 4), ("agrs", 2, 8)):
        for rho in (False, True):
            costs = [cost(instance, 11008, Option(scheme, r, c, mu, rho)) for mu in (1, 2, 4, 8, 16)]
            assert all(a.sram_bytes >= b.sram_bytes for a, b in zip(costs, costs[1:], strict=False))
            assert len({c.dram_bytes for c in costs}) == 1


def test_hecaton_beats_megatron_from_64_dies_and_the_gap_grows_under_weak_scaling():
    """Validation target 1.f: the AG-RS-everywhere optimum over the 1D-everywhere optimum is > 1 for
    N >= 64 and grows with N when h grows like sqrt N (one block, roomy DRAM)."""
    speedups = []
    for n, hidden in ((64, 4096), (256, 8192), (1024, 16384)):
        instance = llama_block(n, hidden=hidden, ffn=hidden * 13 // 4, heads=hidden // 128,
                               tokens=(4, 4096), microbatches=(1, 4, 16, 64))
        best = {}
        for scheme in ("1d", "agrs"):
            chosen = methods.layered_dp(instance, lambda layout, s=scheme: layout[0] == s)
            best[scheme] = total(instance, chosen)
        speedups.append(best["1d"] / best["agrs"])
    assert all(s > 1 for s in speedups)
    assert speedups == sorted(speedups)


@pytest.mark.parametrize("name", ["0-mixed-ffn-n16-energy", "0-llama2-7b-slice-n4"])
def test_epigraph_and_collapsed_forms_agree(name):
    """t_l >= each of t^C, t^N, t^D (epigraph) and t_l = sum_o max(...) x_lo (collapsed) give one optimum."""
    from coopt.solvers.highs import solve_model

    instance = read(SHIPPED / f"{name}.toml")
    values = []
    for epigraph in (False, True):
        result = solve_model(hecaton_milp.build(instance, epigraph=epigraph), OPTIONS)
        assert result.status == "optimal"
        values.append(result.objective)
    assert close(*values), values


# -- the dual bound and the pruned capacity DP ---------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_lagrangian_bound_is_the_lp_relaxation_and_below_the_optimum(seed):
    """The DRAM row dualised over the integral flow polytope: Geoffrion's theorem says its dual
    equals the LP relaxation of the MILP (with the row's right-hand side in stash quanta)."""
    from coopt.solvers.highs import lp_relaxation

    instance = hecaton_model.generate(seed, 6)
    exact = run(P, instance, "exact", OPTIONS)
    bound = run(P, instance, "bound", OPTIONS)
    if exact.status != "optimal":
        assert bound.status == "no_solution"
        return
    relaxed = lp_relaxation(P, instance, OPTIONS)
    assert bound.bound == pytest.approx(relaxed, rel=1e-7)
    assert bound.bound <= exact.objective * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_pruned_capacity_dp_equals_the_unpruned_one(seed):
    instance = hecaton_model.generate(seed, 8)
    free = methods.layered_dp(instance)
    if free is None or stash_total(instance, free) <= instance.stash_capacity:
        pytest.skip("the DRAM row does not bind here")
    plain = methods.capacity_dp(instance)
    dual = methods.lagrangian(instance)
    upper = total(instance, dual.feasible)
    pruned = methods.capacity_dp(instance, upper=upper, dual=dual)
    assert (plain is None) == (pruned is None)
    if plain is not None:
        assert close(total(instance, plain), total(instance, pruned), rel=1e-12)
        assert dual.value <= total(instance, pruned) * (1 + 1e-12) <= upper * (1 + 1e-12)


def test_bound_of_an_instance_nothing_fits_is_no_solution():
    instance = read(SHIPPED / "0-llama2-7b-slice-n4.toml")
    tiny_sram = replace(instance, package=replace(instance.package, sram_bytes=2.0**20))
    assert run(P, tiny_sram, "bound", OPTIONS).status == "no_solution"
