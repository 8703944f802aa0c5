"""The provisioning simulator: Erlang-B, Little's law, invariants after every event, reductions."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problems import provisioning
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning.simulation import (
    POLICIES,
    SINGLE_LAYER,
    ProvisioningSimulator,
    RunControl,
    Traffic,
    batch_means,
    erlang_b,
    simulate,
)
from coopt.problems.provisioning.simulation.multilayer import MultiLayerSimulator
from coopt.problems.provisioning.simulation.statistics import t_quantile_975

ROOT = Path(__file__).resolve().parent.parent / "instances" / "provisioning"


def one_link(slots: int) -> P.Instance:
    """One link, requests of exactly one slot (100 Gb/s on a 100 Gb/s-per-slot format, no guard)."""
    return P.Instance(("a", "b"), (P.Link("a", "b", 100e3),), False, slots, 12.5e9, 0, 1,
                      (P.Modulation("one", 100e9, 1e6),), (P.PriorityClass("only", 1.0, 0.0),), (1.0,),
                      False, "time_expanded", 0, ())


@pytest.fixture(scope="module")
def six_node() -> P.Instance:
    return load(ROOT / "0-six-node-static.toml", registry_get=lambda name: provisioning.PROBLEM).instance


def test_erlang_b_recursion_matches_the_closed_form() -> None:
    for servers, load_erlang in ((1, 0.5), (4, 2.0), (10, 7.5)):
        terms = [load_erlang**i / math.factorial(i) for i in range(servers + 1)]
        assert math.isclose(erlang_b(servers, load_erlang), terms[-1] / sum(terms), rel_tol=1e-12)


@pytest.mark.parametrize(("slots", "load_erlang", "seed"), [(5, 3.0, 1), (10, 7.0, 2)])
def test_single_link_reproduces_erlang_b(slots: int, load_erlang: float, seed: int) -> None:
    result = simulate(one_link(slots), Traffic(load_erlang, bandwidths_gbit_per_s=(100.0,)), "ksp_first_fit",
                      RunControl(arrivals=8000, warmup=1000, batches=10, seed=seed))
    assert result.blocking.covers(erlang_b(slots, load_erlang)), (result.blocking, erlang_b(slots, load_erlang))
    assert result.blocking.half_width < 0.03
    # Little's law: connections in service = lambda (1 - B) E[t] (no prolongation without degradation)
    expected = result.arrival_rate * (1 - result.blocking.mean)
    assert math.isclose(result.mean_active, expected, rel_tol=0.06)
    assert math.isclose(result.utilization, result.mean_active / slots, rel_tol=1e-9)


def test_blocking_grows_with_load_on_one_link() -> None:
    runs = [simulate(one_link(6), Traffic(a, bandwidths_gbit_per_s=(100.0,)), "ksp_first_fit",
                     RunControl(arrivals=4000, warmup=500, seed=3)).blocking for a in (2.0, 5.0, 9.0)]
    assert runs[0].high < runs[1].low and runs[1].high < runs[2].low


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_state_passes_the_checker(six_node: P.Instance, policy: str) -> None:
    spec = POLICIES[policy]
    kind = MultiLayerSimulator if spec.multilayer else ProvisioningSimulator
    sim = kind(six_node, Traffic(12.0), spec, RunControl(arrivals=250, warmup=50, seed=4, validate=True))
    result = sim.run()
    assert sim.violations == []
    assert sum(c.blocked for c in result.classes) > 0  # congested enough to exercise degradation
    if spec.degrade_electrical or (spec.degrade_arrivals and not spec.multilayer):
        assert sum(c.degraded for c in result.classes) > 0
    if POLICIES[policy].degrade_in_service:
        assert result.in_service_degradations > 0
    sim._depart_until(math.inf)
    assert sim.active == {} and sim.used_slots == 0 and not any(sim.state.masks)
    assert sim.violations == []  # data volume preserved across every rate segment


def test_the_checker_sees_a_corrupted_state(six_node: P.Instance) -> None:
    sim = ProvisioningSimulator(six_node, Traffic(12.0), POLICIES["qos_assured"], RunControl(arrivals=60, warmup=0))
    sim.run()
    first, second = list(sim.active.values())[:2]
    second.route, second.first_slot = first.route, first.first_slot  # two connections on one channel
    second.request = dataclasses.replace(second.request, source=first.request.source, target=first.request.target)
    instance, solution = sim.snapshot(sim.clock)
    assert "non_overlap" in {v.constraint for v in P.check(instance, solution)}


def test_prolongation_respects_class_bounds(six_node: P.Instance) -> None:
    result = simulate(six_node, Traffic(10.0), "qos_assured_preemptive", RunControl(arrivals=800, warmup=100, seed=5))
    for cls, spec in zip(result.classes, six_node.classes, strict=True):
        if not math.isnan(cls.max_prolongation):
            assert 1.0 <= cls.mean_prolongation <= cls.max_prolongation <= 1 / (1 - spec.max_degradation) + 1e-9


def test_degraded_policy_reduces_to_baseline_without_degradation_room(six_node: P.Instance) -> None:
    rigid = dataclasses.replace(six_node, classes=tuple(dataclasses.replace(c, max_degradation=0.0)
                                                        for c in six_node.classes))
    control = RunControl(arrivals=600, warmup=100, seed=6)
    base = simulate(rigid, Traffic(10.0), "ksp_first_fit", control)
    for policy in ("qos_assured", "qos_assured_preemptive", "preemptive_only"):
        other = simulate(rigid, Traffic(10.0), policy, control)
        assert [c.blocked for c in other.classes] == [c.blocked for c in base.classes]
        assert other.utilization == base.utilization
    groomed = simulate(rigid, Traffic(10.0), "grooming", control)
    for policy in ("grooming_optical", "grooming_electrical", "grooming_degraded"):
        other = simulate(rigid, Traffic(10.0), policy, control)
        assert dataclasses.replace(other, policy="", wall_s=0) == dataclasses.replace(groomed, policy="", wall_s=0)


def test_grooming_carries_more_than_one_request_per_lightpath(six_node: P.Instance) -> None:
    seen = {"sharing": 0, "two_hops": 0}

    class Watched(MultiLayerSimulator):
        def _admit(self, cid, request, choice, measured):
            super()._admit(cid, request, choice, measured)
            seen["sharing"] = max(seen["sharing"], max(self.grooming.users.values()))
            seen["two_hops"] += len(self.active[cid].hops) == 2

    Watched(six_node, Traffic(8.0), POLICIES["grooming"], RunControl(arrivals=300, warmup=0)).run()
    assert seen["sharing"] > 1 and seen["two_hops"] > 0  # groomed, also through intermediate nodes


def test_same_seed_same_run(six_node: P.Instance) -> None:
    control = RunControl(arrivals=400, warmup=50, seed=7)
    a = simulate(six_node, Traffic(9.0), "qos_assured", control)
    b = simulate(six_node, Traffic(9.0), "qos_assured", control)
    assert dataclasses.replace(a, wall_s=0.0) == dataclasses.replace(b, wall_s=0.0)
    c = simulate(six_node, Traffic(9.0), "qos_assured", dataclasses.replace(control, seed=8))
    assert dataclasses.replace(c, wall_s=0.0) != dataclasses.replace(a, wall_s=0.0)


def test_batch_means_interval() -> None:
    estimate = batch_means([1.0, 2.0, 3.0])
    assert estimate.mean == 2.0
    assert math.isclose(estimate.half_width, 4.303 * 1.0 / math.sqrt(3))
    assert t_quantile_975(100) == 1.96
    assert batch_means([0.5]).half_width == math.inf


def test_bad_traffic_is_rejected(six_node: P.Instance) -> None:
    with pytest.raises(ValueError, match="class shares"):
        simulate(six_node, Traffic(5.0, class_shares=(1.0,)), "qos_assured")
    with pytest.raises(ValueError, match="load"):
        simulate(six_node, Traffic(0.0), "qos_assured")


def test_simulate_command_writes_table_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from coopt.cli import main

    png, js = tmp_path / "bp.png", tmp_path / "bp.json"
    status = main(["simulate", str(ROOT / "0-six-node-static.toml"), "--loads", "6,10", "--arrivals", "300",
                   "--warmup", "50", "--seeds", "2", "--plot", str(png), "--json", str(js)])
    assert status == 0
    text = capsys.readouterr()
    assert "service failure ratio" in text.out and "gold" in text.out
    assert "[16/16]" in text.err  # progress: 2 loads x 4 policies x 2 seeds
    assert png.stat().st_size > 1000
    import json

    rows = json.loads(js.read_text())
    assert {(r["load_erlang"], r["policy"]) for r in rows} == {(a, p) for a in (6.0, 10.0) for p in SINGLE_LAYER}
    assert all(r["seeds"] == [0, 1] for r in rows)


@pytest.mark.parametrize("args", [["--loads", "0"], ["--loads", "5", "--policies", "magic"],
                                  ["--loads", "5", "--shares", "1,1"], ["--loads", "5", "--batches", "1"]])
def test_simulate_command_rejects_bad_options(args: list[str], capsys: pytest.CaptureFixture) -> None:
    from coopt.cli import main

    assert main(["simulate", str(ROOT / "0-six-node-static.toml"), *args]) == 2
    assert "coopt: error: --" in capsys.readouterr().err


def test_kaufman_roberts_reduces_to_erlang_b_and_bounds_first_fit() -> None:
    from coopt.problems.provisioning.simulation import kaufman_roberts

    assert math.isclose(kaufman_roberts(8, [(5.0, 1)])[0], erlang_b(8, 5.0), rel_tol=1e-12)
    one, three = kaufman_roberts(12, [(3.0, 1), (3.0, 3)])
    assert one < three  # wider requests block more
    # contiguous first fit on one link can only lose to complete sharing (soft, with the CI)
    result = simulate(one_link(12), Traffic(6.0, bandwidths_gbit_per_s=(100.0, 300.0)), "ksp_first_fit",
                      RunControl(arrivals=8000, warmup=1000, seed=9))
    assert result.blocking.high >= (one + three) / 2


# -- the paper's QoS-assured policy ----------------------------------------------------------------------


def test_qos_assured_degrades_only_when_no_path_fits_at_full_rate(six_node: P.Instance) -> None:
    """Rule 1: degradation answers a block; rules 2-4 are checked by the validated runs above."""
    from coopt.problems.provisioning.rmsa import ksp_first_fit_choice

    degraded = []

    class Watched(ProvisioningSimulator):
        def _admit(self, cid, request, choice, measured):
            if choice.retained < 1.0:
                full = dataclasses.replace(self.arrivals, degradation=False)
                assert ksp_first_fit_choice(full, self.state, request, self.routes[(request.source, request.target)]) \
                    is None
                degraded.append(choice.retained)
            super()._admit(cid, request, choice, measured)

    Watched(six_node, Traffic(12.0), POLICIES["qos_assured"], RunControl(arrivals=1500, warmup=100, seed=2)).run()
    assert degraded  # the run was congested enough to degrade


@pytest.mark.parametrize(("bounds", "gold_first"), [((0.75, 0.5, 0.25), True), ((0.25, 0.5, 0.75), False)])
def test_the_highest_class_gains_most_when_it_may_be_degraded_most(six_node: P.Instance, bounds, gold_first) -> None:
    """'Significant blocking reduction, especially for requests with higher priorities' holds under
    qos_assured when delta_p falls with priority (degradation as a grade of service); with delta_p
    rising with priority the order flips (docs/provisioning.md, benchmarks/fidelity/fidelity_provisioning.py)."""
    from coopt.commands.simulate import with_max_degradation

    network = with_max_degradation(six_node, bounds)
    control = RunControl(arrivals=4000, warmup=500, seed=1)
    base = simulate(network, Traffic(11.0), "ksp_first_fit", control)
    qos = simulate(network, Traffic(11.0), "qos_assured", control)
    gains = [1 - q.blocked * b.arrivals / (b.blocked * q.arrivals) for b, q in zip(base.classes, qos.classes, strict=True)]
    assert qos.blocking.mean < base.blocking.mean
    assert gains == sorted(gains, reverse=gold_first), gains


def test_simulate_plot_draws_a_measured_zero_on_the_axis_not_at_a_floor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read back from the figure `coopt simulate --plot` draws: at a light load the gold class blocks
    nothing, and that zero is an open marker on the x axis (axes coordinate y = 0) beside a "0", not
    a data point at 1e-5 as the old plot drew it (``max(mean, 1e-5)``) as if measured there."""
    from coopt.cli import main
    from coopt.commands import simulate as command

    drawn = []
    real = command.figure
    monkeypatch.setattr(command, "figure", lambda points: drawn.append((points, real(points))) or drawn[-1][1])
    status = main(["simulate", str(ROOT / "0-six-node-static.toml"), "--loads", "0.5,12", "--arrivals", "300",
                   "--warmup", "50", "--policies", "qos_assured", "--plot", str(tmp_path / "bp.png"), "--quiet"])
    assert status == 0
    (points, fig), = drawn
    zero_loads = {p.load_erlang for p in points if p.blocking[0].mean == 0}
    assert zero_loads  # the case this test is about
    ax = fig.axes[0]
    on_axis = [line for line in ax.get_lines() if line.get_gid() == "measured-zero"]
    assert {float(x) for line in on_axis for x in line.get_xdata()} == zero_loads
    assert all(list(line.get_ydata()) == [0.0] * len(line.get_xdata()) for line in on_axis)
    assert all(line.get_transform() == ax.get_xaxis_transform() for line in on_axis)
    measured = [y for line in ax.get_lines() if line.get_gid() != "measured-zero" for y in line.get_ydata()]
    assert measured and all(y > 0 and y != 1e-5 for y in measured)
    assert "0" in [t.get_text() for t in ax.texts]
