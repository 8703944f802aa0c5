"""MixNet closed forms: the calculator's fabric costs against the totals the research notes derived
from its formulas, the all-to-all bounds against the solved M1, the exposed delay against the plan
model, and the iteration model's ordering of the fabrics; the registered dual bound of M1 against
the exact optimum and the LP relaxation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from coopt.instance import load
from coopt.problem import BoundOutcome, SolveOptions
from coopt.problems.mixnet import PROBLEM as MIXNET
from coopt.problems.mixnet import exact as mixnet_exact
from coopt.problems.mixnet import iteration, model
from coopt.problems.mixnet.plan_model import Instance as PlanInstance
from coopt.problems.topoopt.model import DEFAULT_PRICES
from coopt.registry import closed_form as get
from coopt.run import run
from coopt.shipped import shipped

#: Research notes 2(f) [derived]: the calculator's totals at 128 servers, US$M, by rate.
NOTES = {
    100e9: {"fattree": 3.071, "rail_only": 2.332, "topoopt": 1.032, "mixnet": 1.691},
    200e9: {"fattree": 5.654, "rail_only": 4.244, "topoopt": 1.606, "mixnet": 2.480},
    400e9: {"fattree": 13.493, "rail_only": 9.758, "topoopt": 2.466, "mixnet": 3.985},
    800e9: {"fattree": 21.469, "rail_only": 15.583, "topoopt": 3.991, "mixnet": 6.646},
}


def prices(tier) -> dict[str, float]:
    return {"c_nic": tier.nic, "c_tr": tier.transceiver, "c_eps": tier.switch_port, "c_pp": tier.patch_panel_port}


@pytest.mark.parametrize("tier", DEFAULT_PRICES.tiers, ids=lambda t: f"{t.rate / 1e9:g}G")
def test_fabric_costs_match_the_calculator_totals(tier):
    p = prices(tier)
    for fabric, expected in NOTES[tier.rate].items():
        bound = get(f"mixnet.{fabric}_cost")
        values = {k: v for k, v in p.items() if k in bound.symbols}
        assert bound.evaluate(values) / 1e6 == pytest.approx(expected, abs=5e-4), fabric


def test_mixnet_cost_with_the_ports_that_exist():
    # 128 servers, 100 Gbit/s: 768 OCS ports instead of 1024, plus 1536 electrical switch ports
    calculator = get("mixnet.mixnet_cost").evaluate({})
    physical = get("mixnet.mixnet_cost").evaluate({"q": 6, "k": 1})
    assert physical - calculator == pytest.approx(-256 * 520 + 1536 * 187)


def test_perf_per_dollar_reproduces_a_calculator_ratio():
    # Mixtral 8x22B at 100 Gbit/s: normalized times 1.4542 (MixNet) and 1.3743 (fat-tree),
    # data/normalized_performance.csv; the calculator divides by the fat-tree's perf per dollar
    ppd = get("mixnet.perf_per_dollar")
    mixnet = ppd.evaluate({"t": 1.4541709245236023, "C": 1691136.0})
    fattree = ppd.evaluate({"t": 1.3743484582184033, "C": 3070976.0})
    assert mixnet / fattree == pytest.approx(1.3743484582184033 / 1.4541709245236023 * 3070976 / 1691136)
    assert 1.43 <= mixnet / fattree <= 1.76  # the research notes' range of the calculator's ratios


@pytest.mark.parametrize("path", [p for p in shipped("mixnet") if p.name.startswith("0-")], ids=lambda p: p.stem)
def test_all_to_all_bounds_bracket_the_solved_time(path):
    instance = load(path).instance
    f = instance.fabric
    optimum = mixnet_exact.exact(instance, SolveOptions(gap=1e-9)).solution["objective"]
    for t in instance.traffic:
        busiest = model.busiest(t.bits()) / 8
        values = {"D_max": busiest, "alpha": f.alpha, "N": f.nics, "B": f.nic_rate, "o": f.eps_oversubscription}
        lower = get("mixnet.all_to_all_lower_bound").evaluate(values)
        eps = get("mixnet.electrical_only_time").evaluate(values)
        single = alone(instance, t)
        assert lower <= 1 / mixnet_exact.exact(single, SolveOptions(gap=1e-9)).solution["objective"] * (1 + 1e-9)
        assert eps == pytest.approx(1 / model.electrical_only(single), rel=1e-12)
    assert 1 / optimum <= 1 / model.electrical_only(instance) * (1 + 1e-12)


def alone(instance: model.Instance, traffic: model.Traffic) -> model.Instance:
    """One matrix of an instance as an instance of its own."""
    return model.Instance(instance.fabric, (model.Traffic(traffic.name, 0, traffic.demand),))


def test_exposed_reconfiguration_is_the_plan_models():
    bound = get("mixnet.exposed_reconfiguration")
    layer = load(shipped("mixnet_plan")[0]).instance.layers[0]
    for delay in (0.0, 1e-3, 5.9e-3, 25e-3):
        instance = PlanInstance(model.Fabric(2, 8, 100e9), delay, (layer,))
        assert bound.evaluate({"delta": delay, "w": layer.overlap}) == pytest.approx(instance.exposed(0), abs=1e-15)


def test_the_iteration_model_orders_the_fabrics():
    measured = load(Path(shipped("mixnet")[0]).parent / "0-wm-ep8-alpha4-400g.toml").instance
    shares = np.array(measured.traffic[0].demand) / (32768 * 12288)  # tokens / 32768 per row
    setup = iteration.MIXNET_SIM
    for model_ in iteration.MODELS.values():
        demand = iteration.region_traffic(model_, setup, shares)
        times = []
        for rate in (100e9, 800e9):
            fat = iteration.FabricRates(iteration.fattree_all_to_all(demand, 8, rate), rate)
            topo = iteration.FabricRates(iteration.topoopt_all_to_all(demand, rate), rate / 8)
            times.append((iteration.iteration_time(model_, setup, fat), iteration.iteration_time(model_, setup, topo)))
        (fat100, topo100), (fat800, topo800) = times
        assert fat800 < fat100 and topo800 < topo100  # faster NICs never slow the step
        assert fat100 < topo100  # a static circuit per pair is the bottleneck of skewed traffic


@pytest.mark.parametrize("seed,size", [(s, n) for n in (1, 2) for s in range(3)])
def test_the_registered_bound_is_the_optimum_and_never_weaker_than_the_lp(seed, size):
    instance = model.generate(seed, size)
    optimum = mixnet_exact.exact(instance, SolveOptions(gap=1e-9)).solution["objective"]
    outcome = mixnet_exact.optimum_or_lp(instance, SolveOptions(time_limit=60, gap=1e-9))
    assert isinstance(outcome, BoundOutcome) and outcome.optimal  # every region's MILP ended
    registered = outcome.value
    assert registered >= optimum * (1 - 1e-7)  # an upper bound on a maximum: never below it
    assert registered == pytest.approx(optimum, rel=1e-6)
    assert registered <= mixnet_exact.lp_bound(instance, SolveOptions()) * (1 + 1e-9)


def test_the_bound_route_reports_the_optimum_when_the_milps_end():
    instance = model.generate(2, 2)
    optimum = run(MIXNET, instance, "exact", SolveOptions(time_limit=60, gap=1e-9))
    report = run(MIXNET, instance, "bound", SolveOptions(time_limit=60, gap=1e-9))
    assert optimum.status == "optimal" and report.status == "bound"
    assert report.solver["bound"].startswith("the optimum (M1 MILP per region)")
    assert report.bound == pytest.approx(optimum.objective, rel=1e-6)


def test_the_registered_bound_falls_back_to_the_lp_without_a_milp_bound(monkeypatch):
    instance = model.generate(1, 2)
    lp = mixnet_exact.lp_bound(instance, SolveOptions())
    monkeypatch.setattr(mixnet_exact, "exact", lambda *args, **kwargs: mixnet_exact.ExactOutcome(
        None, mixnet_exact.Termination.LIMIT))
    fallback = mixnet_exact.optimum_or_lp(instance, SolveOptions(time_limit=60))
    assert not isinstance(fallback, BoundOutcome) and fallback == lp  # a bound, not the optimum
