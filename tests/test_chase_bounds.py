"""The closed forms of coopt/problems/chase/closed_forms.py against the models they stand for."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from coopt.problem import SolveOptions
from coopt.problems.chase import PROBLEM, brute
from coopt.problems.chase.arch_model import rack_network
from coopt.problems.chase.hardware import Device, DeviceType, Hardware, Link, Switch
from coopt.problems.chase.model import Instance
from coopt.problems.chase.simulator import simulate
from coopt.problems.chase.workloads import Edge, Task, Workload, roofline_time
from coopt.registry import closed_form as get
from coopt.run import run


def test_roofline_closed_form_is_the_models_run_time():
    bound = get("chase.roofline_time")
    rng = random.Random(1)
    for _ in range(50):
        kind = DeviceType("x", rng.uniform(1e12, 1e15), rng.uniform(1e11, 5e12), 0.0, rng.uniform(0.3, 1),
                          rng.uniform(0.3, 1), rng.uniform(0, 1e-5))
        task = Task("t", flops=rng.uniform(0, 1e13), traffic=rng.uniform(0, 1e11))
        value = bound.evaluate({"F": task.flops, "Q": task.traffic, "P": kind.peak_flops, "BW": kind.memory_bandwidth,
                                "eta_c": kind.compute_efficiency, "eta_m": kind.memory_efficiency, "t_0": kind.launch})
        assert float(value) == pytest.approx(roofline_time(task, kind), rel=1e-12)


def test_cut_through_is_the_routed_transfer_time_and_store_and_forward_bounds_it():
    for hops in (1, 2, 3, 5):
        names = ["d0"] + [f"s{k}" for k in range(hops - 1)] + ["d1"]
        links = tuple(Link((a, b), 40e9, 3e-6) for a, b in itertools.pairwise(names))
        hw = Hardware((DeviceType("x"),), (Device("d0", "x"), Device("d1", "x")),
                      tuple(Switch(n, 4) for n in names[1:-1]), links)
        values = {"d": 1e8, "h": hops, "alpha": 3e-6, "B": 40e9}
        cut = float(get("chase.transfer_cut_through").evaluate(values))
        assert hw.transfer_time(0, 1, 1e8) == pytest.approx(cut, rel=1e-12)
        assert float(get("chase.transfer_store_and_forward").evaluate(values)) >= cut * (1 - 1e-12)


@pytest.mark.parametrize("m", [2, 3, 4, 6])
def test_ring_allreduce_closed_form_equals_the_simulated_ring(m):
    data, bandwidth, latency, tiny = 6e8, 25e9, 2e-6, 1e-12
    devices = tuple(Device(f"d{i}", "x") for i in range(m))
    links = tuple(Link((f"d{i}", f"d{(i + 1) % m}"), bandwidth, latency) for i in range(m if m > 2 else 1))
    hw = Hardware((DeviceType("x", launch=tiny),), devices, (), links)
    steps = 2 * (m - 1)
    tasks = tuple(Task(f"s{k}.{i}", times=tuple([tiny] * m)) for k in range(steps + 1) for i in range(m))
    edges = []
    for k, i in itertools.product(range(1, steps + 1), range(m)):
        edges.append(Edge(f"s{k - 1}.{i}", f"s{k}.{i}"))
        edges.append(Edge(f"s{k - 1}.{(i - 1) % m}", f"s{k}.{i}", data / m))
    inst = Instance(hw, Workload(tasks, tuple(edges)))
    assignment = [v % m for v in range(inst.n_tasks)]
    telemetry = simulate(inst, assignment, list(range(inst.n_tasks)))
    expected = float(get("chase.ring_allreduce").evaluate({"d": data, "m": m, "alpha": latency, "B": bandwidth}))
    assert telemetry.makespan == pytest.approx(expected + (steps + 1) * tiny, rel=1e-9)


def test_the_list_bound_never_cuts_off_the_optimum():
    bound = get("chase.list_bound")
    for seed in range(12):
        inst = brute.tiny(seed)
        tab = inst.tables
        fastest = [min(tab.time[v][p] for p in tab.compatible[v]) for v in range(tab.n)]
        longest = [0.0] * tab.n
        for v in tab.topo:
            longest[v] = fastest[v] + max((longest[u] for u, _ in tab.preds[v]), default=0.0)
        value = float(bound.evaluate({"CP": max(longest), "W": sum(fastest), "D": tab.devices}))
        report = run(PROBLEM, inst, "exact", SolveOptions(gap=1e-9))
        assert value <= report.objective * (1 + 1e-9)
        assert run(PROBLEM, inst, "bound", SolveOptions()).bound >= value * (1 - 1e-9)


def test_rack_uplinks_is_the_oversubscription_row():
    space = brute.tiny_arch(2)
    bound = get("chase.rack_uplinks")
    for ports in range(0, 40, 3):
        tors, ups = rack_network(space, ports, ports * 25e9)
        u = float(bound.evaluate({"k": ports, "B_dev": 25e9, "B_up": space.uplink_bandwidth,
                                  "omega": space.oversubscription}))
        assert ups == max(math.ceil(u - 1e-9), tors)
