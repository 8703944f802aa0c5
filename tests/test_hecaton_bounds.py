"""Hecaton's closed forms: the weak-scaling regression table of the research notes, the SymPy
limits, and agreement with the per-option volumes the formulation charges."""

from __future__ import annotations

import math

import pytest
import sympy as sp

from coopt.problems.hecaton import closed_forms as H
from coopt.problems.hecaton.model import SCHEMES, Instance, Model, Option, Package, cost

BOUNDS = {b.name: b for b in H.BOUNDS}


def at(name: str, values: dict) -> float:
    """Evaluate a bound at the values among ``values`` that it takes."""
    bound = BOUNDS[name]
    return float(bound.evaluate({k: v for k, v in values.items() if k in bound.symbols}))
LLAMA_405B = {"g": 1 / 16, "phi": 3.25}

# research-chiplet-chase-moesd.md 1.d: R at T = 4096, B_eff/F = 1, h0 = 16384 at N0 = 256, beta = 2
WEAK_SCALING_TABLE = {
    16: (1532, 1021, 1216, 876),
    64: (1313, 875, 579, 526),
    256: (1226, 817, 286, 307),
    1024: (1186, 791, 143, 170),
}


@pytest.mark.parametrize("n", sorted(WEAK_SCALING_TABLE))
def test_weak_scaling_table_of_the_notes(n):
    common = {"N": n, "T": 4096, "h0": 16384, "N0": 256, "beta": 2, "B_over_F": 1, **LLAMA_405B}
    got = (
        BOUNDS["hecaton.ratio_agrs_weak"].evaluate({**common, "kappa_b": 2}),
        BOUNDS["hecaton.ratio_agrs_weak"].evaluate({**common, "kappa_b": 3}),
        at("hecaton.ratio_1d_weak", common),
        at("hecaton.ratio_summa_weak", common),
    )
    for value, expected in zip(got, WEAK_SCALING_TABLE[n], strict=True):
        assert abs(float(value) - expected) <= 0.5, (n, got)


def test_agrs_ratio_is_nearly_constant_from_256_to_1024():
    common = {"T": 4096, "h0": 16384, "N0": 256, "beta": 2, "B_over_F": 1, "kappa_b": 2, **LLAMA_405B}
    weak = BOUNDS["hecaton.ratio_agrs_weak"]
    ratio = weak.evaluate({**common, "N": 256}) / weak.evaluate({**common, "N": 1024})
    assert round(float(ratio), 3) == 1.033


def test_weak_scaling_limits():
    n = H.N.symbol
    agrs = sp.limit(BOUNDS["hecaton.ratio_agrs_weak"].expr, n, sp.oo)
    assert sp.simplify(agrs - BOUNDS["hecaton.ratio_agrs_weak_limit"].expr) == 0
    assert agrs.is_positive
    assert sp.limit(BOUNDS["hecaton.ratio_1d_weak"].expr, n, sp.oo) == 0
    assert sp.limit(BOUNDS["hecaton.ratio_summa_weak"].expr, n, sp.oo) == 0
    # 1D vanishes like N^(-1/2): sqrt(N) R_1D tends to a positive constant
    assert sp.limit(sp.sqrt(n) * BOUNDS["hecaton.ratio_1d_weak"].expr, n, sp.oo).is_positive


def test_volume_identities():
    n = H.N.symbol
    v_1d = BOUNDS["hecaton.nop_volume_1d"].expr
    v_summa = BOUNDS["hecaton.nop_volume_summa"].expr
    v_agrs = BOUNDS["hecaton.nop_volume_agrs"].expr
    w_blk = H.h.symbol**2 * (2 + 2 * H.g.symbol + 3 * H.phi.symbol)
    assert sp.simplify(v_agrs.subs(H.kappa_b.symbol, 2) - (v_summa - 2 * (sp.sqrt(n) - 1) / n * w_blk)) == 0
    for v in (v_1d, v_summa, v_agrs):
        assert sp.simplify(v.subs(n, 1)) == 0
    assert sp.limit(v_1d, n, sp.oo) == 8 * H.T.symbol * H.h.symbol
    assert sp.simplify(sp.diff(v_agrs * n / (sp.sqrt(n) - 1), n)) == 0


def test_dram_bandwidth_models_decide_weak_scaling():
    ratio = BOUNDS["hecaton.compute_to_dram_ratio"].expr
    n = H.N.symbol
    distributed = ratio.subs(H.dram_per_die.symbol, BOUNDS["hecaton.dram_bandwidth_distributed"].expr)
    edge = ratio.subs(H.dram_per_die.symbol, BOUNDS["hecaton.dram_bandwidth_edge"].expr)
    assert n not in distributed.free_symbols
    assert sp.limit(edge, n, sp.oo) == 0
    assert sp.limit(sp.sqrt(n) * edge, n, sp.oo).is_positive


def _block(dies: int, sequences: int = 4) -> Instance:
    model = Model(16384, 128, 8, 4096, sequences, True, 2, (1,), (53248,))
    package = Package(dies, 100e12, 1e6 * 2**20, 256e9, 2, 20e-9, "distributed", 64e9, 1e18, 12.0, 16.0, 0.3e-12,
                      0.5e-12, 5e-12, 0.0)
    return Instance(model, package, SCHEMES, (1,), (False, True), "time", "full", False)


@pytest.mark.parametrize("q", [2, 4, 8, 16, 32])
def test_formulation_moves_the_closed_form_volumes(q):
    """Square mesh, one micro-batch, sequences divisible by q (attention local)."""
    n = q * q
    instance = _block(n, sequences=q)
    values = {"N": n, "T": q * 4096, "h": 16384, **LLAMA_405B}
    beta = 2
    pairs = [
        (Option("1d", 1, n, 1, False), at("hecaton.nop_volume_1d", values)),
        (Option("summa", q, q, 1, False), at("hecaton.nop_volume_summa", values)),
        (Option("agrs", q, q, 1, False), at("hecaton.nop_volume_agrs", {**values, "kappa_b": 2})),
        (Option("agrs", q, q, 1, True), at("hecaton.nop_volume_agrs", {**values, "kappa_b": 3})),
        (Option("agrs", q, q, 1, False, regather=True), at("hecaton.nop_volume_agrs_regather", values)),
    ]
    for option, elements in pairs:
        assert cost(instance, 53248, option).nop_bytes == pytest.approx(beta * elements, rel=1e-12), option


@pytest.mark.parametrize("kappa", [2, 3])
def test_crossover_splits_the_formulation_on_both_sides(kappa):
    """AG-RS (kappa_b = 2 without recompute, 3 with) moves fewer bytes than 1D exactly above N*."""
    star = float(BOUNDS["hecaton.crossover_agrs_1d"].evaluate({**LLAMA_405B, "kappa_b": kappa}))
    assert star == pytest.approx(8.8 if kappa == 2 else 24.5, abs=0.05)
    rho = kappa == 3
    below = above = 0
    for q in (2, 3, 4, 5, 6, 8):
        n = q * q
        instance = _block(n, sequences=q)
        agrs = cost(instance, 53248, Option("agrs", q, q, 1, rho)).nop_bytes
        one_d = cost(instance, 53248, Option("1d", 1, n, 1, rho)).nop_bytes * (8 if rho else 1) / (12 if rho else 1)
        assert (agrs < one_d) == (n > star), (n, agrs, one_d)
        below, above = below + (n < star), above + (n > star)
    assert below and above


def test_edge_dram_bandwidth_matches_the_package_model():
    for q in (4, 8, 16, 32):
        package = _block(q * q).package
        edge = Package(**{**{f: getattr(package, f) for f in package.__dataclass_fields__}, "dram_placement": "edge"})
        formula = BOUNDS["hecaton.dram_bandwidth_edge"].evaluate({"N": q * q, "B_port": 64e9})
        assert math.isclose(edge.dram_bandwidth_per_die, float(formula), rel_tol=1e-12)


def test_coopt_bound_reproduces_the_table(tmp_path, capsys):
    """The same table through the command line: `coopt bound NAME --set T=4096 --sweep N=16:1024:4:log`."""
    import json

    from coopt.cli import main

    columns = [("hecaton.ratio_agrs_weak", ["kappa_b=2"]), ("hecaton.ratio_agrs_weak", ["kappa_b=3"]),
               ("hecaton.ratio_1d_weak", []), ("hecaton.ratio_summa_weak", [])]
    for column, (name, extra) in enumerate(columns):
        out = tmp_path / f"{column}.json"
        sets = [arg for value in ["T=4096", *extra] for arg in ("--set", value)]
        assert main(["bound", name, *sets, "--sweep", "N=16:1024:4:log", "--json", str(out)]) == 0
        result = json.loads(out.read_text())["result"]
        expected = [WEAK_SCALING_TABLE[n][column] for n in sorted(WEAK_SCALING_TABLE)]
        assert [round(v) for v in result] == expected, (name, extra, result)
    capsys.readouterr()
