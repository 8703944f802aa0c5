"""chase_arch: every row of the feasibility model is a checker violation, the minimal network, the
hardware graph of a design (it passes the mapping problem's deployment rules), the heuristics."""

from __future__ import annotations

import itertools

import pytest

from coopt.cli import main
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.chase import ARCH, brute
from coopt.problems.chase import arch_heuristics as heuristics
from coopt.problems.chase.arch_model import (
    Design,
    capability,
    check,
    design_solution,
    hardware_of,
    minimal_network,
    violations,
)
from coopt.problems.chase.hardware import deployment_errors
from coopt.run import run

OPTIONS = SolveOptions(time_limit=60, gap=1e-9, threads=1)


@pytest.fixture(scope="module")
def space():
    return load("chase_arch/0-two-racks-gpu-npu").instance


@pytest.fixture(scope="module")
def optimum(space):
    report = run(ARCH, space, "exact", OPTIONS)
    assert report.status == "optimal"
    return report


def test_the_optimum_meets_every_row_and_brute_force(space, optimum):
    assert check(space, optimum.solution) == []
    assert optimum.objective == pytest.approx(brute.arch_optimum(space), rel=1e-9)


@pytest.mark.parametrize("edit, row", [
    (lambda d: Design(((4, 4), (0, 0)), d.tors, d.uplinks, d.spines), "rack_power"),
    (lambda d: Design(d.counts, (0,) + d.tors[1:], d.uplinks, d.spines), "tor_radix"),
    (lambda d: Design(d.counts, d.tors, (0,) + d.uplinks[1:], d.spines), "oversubscription"),
    (lambda d: Design(d.counts, d.tors, d.uplinks, 0), "spine_radix"),
    (lambda d: Design(d.counts, (d.uplinks[0] + 1,) + d.tors[1:], d.uplinks, d.spines), "tor_uplinks"),
    (lambda d: Design(((3, 0), (1, 0)), d.tors, d.uplinks, d.spines + 20), "budget"),
    (lambda d: Design(((4, 0), (1, 0)), d.tors, d.uplinks, d.spines), "count"),
])
def test_each_row_has_its_violation(space, optimum, edit, row):
    from coopt.problems.chase.arch_model import parse

    design, _ = parse(space, optimum.solution)
    broken = {v.constraint for v in violations(space, edit(design))}
    assert row in broken, broken


def test_memory_space_and_the_network_rack_are_checked(space):
    from dataclasses import replace

    design = minimal_network(space, ((1, 1), (0, 0)))
    assert violations(space, design) == []
    assert {v.constraint for v in violations(replace(space, memory_required=1e15), design)} == {"memory"}
    assert "rack_space" in {v.constraint for v in violations(replace(space, rack_units=1), design)}
    assert "network_rack" in {v.constraint for v in violations(replace(space, switch_units=50.0), design)}


def test_a_malformed_design_is_a_violation_not_a_crash(space, optimum):
    for bad in ({"racks": "x"}, {"racks": [{"devices": {"tpu": 1}, "tors": 1, "uplinks": 1}], "spines": 1},
                {"racks": [{"devices": {"gpu": -1}, "tors": 1, "uplinks": 1}], "spines": 1},
                {**optimum.solution, "spines": 1.5}):
        assert [v.constraint for v in check(space, bad)] == ["design"]


def test_the_minimal_network_is_the_least_that_passes():
    for seed in range(20):
        inst = brute.tiny_arch(seed)
        for counts in itertools.product(range(3), repeat=len(inst.types)):
            rows = (tuple(counts),) + ((0,) * len(inst.types),) * (inst.racks - 1)
            design = minimal_network(inst, rows)
            network_rows = {"tor_radix", "tor_uplinks", "spine_radix", "oversubscription"}
            assert not network_rows & {v.constraint for v in violations(inst, design)}
            for smaller in (Design(rows, tuple(max(0, t - 1) for t in design.tors), design.uplinks, design.spines),
                            Design(rows, design.tors, design.uplinks, max(0, design.spines - 1))):
                if smaller != design:
                    assert network_rows & {v.constraint for v in violations(inst, smaller)}


def test_the_hardware_of_a_feasible_design_passes_the_deployment_rules():
    for seed in range(30):
        inst = brute.tiny_arch(seed)
        for counts in itertools.product(range(3), repeat=len(inst.types)):
            rows = (tuple(counts),) + ((0,) * len(inst.types),) * (inst.racks - 1)
            design = minimal_network(inst, rows)
            if violations(inst, design) or not any(counts):
                continue
            hw = hardware_of(inst, design)
            assert deployment_errors(hw) == [], (seed, counts)
            assert len(hw.devices) == sum(counts)
            racks = {r.name: r for r in hw.racks}
            for r in range(inst.racks):
                drawn = sum(t.power for t, d in zip(hw.type_of, hw.devices, strict=True) if d.rack == f"rack{r}")
                drawn += sum(s.power for s in hw.switches if s.rack == f"rack{r}")
                assert drawn <= racks[f"rack{r}"].power


def test_islands_join_their_devices_faster_than_the_nics():
    space = load("chase_arch/1-pod-4-racks").instance
    design = minimal_network(space, ((8, 0, 0, 0),) + ((0, 0, 0, 0),) * 3)
    hw = hardware_of(space, design)
    routes = hw.routes
    assert routes.bandwidth[0][1] == space.types[0].island_bandwidth
    assert deployment_errors(hw) == []


@pytest.mark.parametrize("method", sorted(heuristics.HEURISTICS))
def test_heuristics_are_feasible_and_never_above_the_optimum(method):
    for seed in range(12):
        inst = brute.tiny_arch(seed)
        truth = brute.arch_optimum(inst)
        report = run(ARCH, inst, method, OPTIONS)
        if report.status == "no_solution":
            continue
        assert report.check["feasible"], report.check["violations"]
        assert truth is not None and report.objective <= truth * (1 + 1e-9)


def test_lp_rounding_is_at_least_the_greedy_on_generated_spaces():
    for seed, size in itertools.product(range(4), (1, 2, 4)):
        inst = ARCH.generate(seed, size)
        greedy = run(ARCH, inst, "greedy_density", OPTIONS)
        rounded = run(ARCH, inst, "lp_rounding", OPTIONS)
        if greedy.objective is not None and rounded.objective is not None:
            assert rounded.objective >= greedy.objective * (1 - 0.05)


def test_capability_and_cost_are_recomputed(space, optimum):
    from coopt.problems.chase.arch_model import parse

    design, _ = parse(space, optimum.solution)
    solution = design_solution(space, design)
    assert solution["objective"] == capability(space, design)
    lie = {**solution, "objective": solution["objective"] + 100.0, "cost_usd": 0.0}
    assert ARCH.objective(space, lie) == capability(space, design)


def test_a_type_declared_twice_is_one_line(tmp_path, capsys):
    from pathlib import Path

    shipped = Path(load("chase_arch/0-two-racks-gpu-npu").path)
    source = shipped.read_text(encoding="utf-8").replace('name = "npu"', 'name = "gpu"')
    path = tmp_path / "bad.toml"
    path.write_text(source)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'device_types[1].name': 'gpu' is declared twice" in err[0]
