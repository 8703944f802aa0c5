"""coopt bound configtuner.*: the printed expressions are the search's own, and the textbook forms
agree with the full model where they overlap."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import sympy as sp

from coopt.problems.configtuner import analytic, model
from coopt.problems.configtuner import closed_forms as closed
from coopt.registry import closed_form as get


def point(instance, config) -> dict[str, float]:
    values = model.symbol_values(instance, model.space_of(config))
    return {k: float(np.asarray(v).ravel()[0]) for k, v in values.items()}


CONFIG = {"tp": 4, "pp": 4, "dp": 2, "ep": 1, "microbatch": 2, "interleave": 2, "recompute": "selective",
          "sequence_parallel": True, "zero": 1}


def test_iteration_time_and_its_breakdown_are_the_searchs_expressions():
    instance = replace(model.generate(2, 4), global_batch=256)
    values = point(instance, CONFIG)
    expected = model.evaluate(instance, model.space_of(CONFIG))
    bound = get("configtuner.iteration_time")
    names = {q.name for q in bound.inputs}
    assert float(bound.evaluate({k: v for k, v in values.items() if k in names})) == pytest.approx(
        expected["time"][0], rel=1e-12)
    parts = 0.0
    for term in analytic.BREAKDOWN:
        entry = get(f"configtuner.time.{term}")
        parts += float(entry.evaluate({q.name: values[q.name] for q in entry.inputs}))
    assert parts == pytest.approx(expected["time"][0], rel=1e-12)


def test_model_flops_reduce_to_narayanans_formula_for_gpt_shapes():
    S = analytic.S
    gpt = {S["h_f"]: 4 * S["h"], S["h_kv"]: S["h"], S["n_mlp"]: 2, S["k"]: 1}
    ours = analytic.expressions()["model_flops"].subs(gpt)
    assert sp.simplify(ours - get("configtuner.model_flops_gpt").expr) == 0


def test_bubble_share_of_equal_stages_is_the_closed_form():
    S = analytic.S
    exprs = analytic.expressions()
    # no communication, no head or embedding: every stage is n layers
    zero = {S["alpha_pp"]: 0, S["V"]: 0, S["kappa"]: 0}
    share = (exprs["bubble"] / (exprs["time"] - exprs["dp"] - exprs["optimizer"])).subs(zero)
    closed_form = get("configtuner.bubble_fraction").expr
    m = S["B_g"] / (S["b"] * S["d"])
    values = {S["p"]: 8, S["v"]: 3, S["B_g"]: 96, S["b"]: 1, S["d"]: 2}
    ours = float(share.subs(values).subs({s: 1 for s in share.free_symbols - set(values)}))
    assert ours == pytest.approx(float(closed_form.subs({sp.Symbol("p", positive=True, integer=True): 8,
                                                         sp.Symbol("v", positive=True, integer=True): 3,
                                                         sp.Symbol("m", positive=True, integer=True): m.subs(values)})),
                                 rel=1e-12)


def test_effective_bandwidth_is_half_at_alpha_times_bandwidth():
    bound = get("configtuner.effective_bandwidth")
    value = bound.evaluate({"alpha_tp": 1e-5, "B_tp": 2e11, "M": 1e-5 * 2e11})
    assert float(value) == pytest.approx(1e11, rel=1e-12)


@pytest.mark.parametrize("gpus", [1, 2, 12, 64, 96, 360, 1024, 3072])
def test_the_triple_count_is_the_number_the_space_enumerates(gpus):
    instance = replace(model.generate(0, 1), gpus=gpus, heads=gpus, kv_heads=gpus, layers=gpus)
    assert len(model.triples(instance)) == closed.triples(gpus)
