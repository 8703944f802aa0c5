"""chase's energetic bound (coopt.problems.chase.energetic): values worked out by hand, never above a
proven optimum (the enumeration oracle, the MILP on the generator's small sizes and the small
shipped files), never below the bounds it joins, and in force inside the constraint program."""

from __future__ import annotations

import pytest

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.chase import PROBLEM, bound, brute, cpsat, energetic
from coopt.problems.chase.energetic import energetic_bound, energetic_heads_tails, speed_weights, window_test
from coopt.problems.chase.hardware import Device, DeviceType, Hardware, Link, Switch
from coopt.problems.chase.mapping import local_search
from coopt.problems.chase.model import Instance
from coopt.problems.chase.schedule import critical_path_bound, heads, serial_bound, tails
from coopt.problems.chase.workloads import Edge, Task, Workload
from coopt.run import run
from tests._chase_shared import OPTIONS, generated_report, shipped_report


def star(times: list[tuple[float, ...]], edges: tuple[Edge, ...] = (), kinds: int = 1) -> Instance:
    """Tasks with explicit run times on ``len(times[0])`` devices of one switch (fast links)."""
    devices = tuple(Device(f"d{p}", f"k{p % kinds}") for p in range(len(times[0])))
    hardware = Hardware(tuple(DeviceType(f"k{k}") for k in range(kinds)), devices, (Switch("sw", 8),),
                        tuple(Link((d.name, "sw"), 1e12, 0.0) for d in devices))
    tasks = tuple(Task(f"t{v}", times=t) for v, t in enumerate(times))
    return Instance(hardware, Workload(tasks, edges))


def test_five_unit_tasks_on_two_identical_devices_need_two_and_a_half():
    """Work 5 on 2 devices: no schedule ends before 2.5 (the optimum is 3); the critical path
    says 1."""
    inst = star([(1.0, 1.0)] * 5)
    tab = inst.tables
    assert critical_path_bound(tab) == 1.0
    value = energetic_bound(tab, serial_bound(tab))
    assert 2.5 - 1e-6 <= value <= 2.5 + 1e-9


def test_a_slow_device_counts_at_its_speed():
    """Four tasks of 2 s on a fast device (4 s on the slow one): the pool does 1.5 fast-seconds of
    work per second, so 8 / 1.5 = 16/3 s at least; counting each device as one (ones weights)
    gives only 4 s. The optimum is 6 (three on the fast device, one on the slow)."""
    inst = star([(2.0, 4.0)] * 4, kinds=2)
    tab = inst.tables
    assert speed_weights(tab) == [1.0, 0.5]
    assert energetic_bound(tab, 8.0, weight_sets=[[1.0, 1.0]]) == pytest.approx(4.0, abs=1e-6)
    assert energetic_bound(tab, 8.0) == pytest.approx(16 / 3, abs=1e-6)
    assert brute.enumerate_optimum(inst) == pytest.approx(6.0)


def test_the_work_before_a_task_raises_its_head():
    """Four independent unit tasks feed a fifth on two identical devices: the fifth starts at
    2 at the earliest (work 4 on 2 devices), where the routed head says 1."""
    inst = star([(1.0, 1.0)] * 5, edges=tuple(Edge(f"t{v}", "t4") for v in range(4)))
    tab = inst.tables
    head, tail = energetic_heads_tails(tab, [1.0, 1.0])
    assert heads(tab)[4] == [1.0, 1.0] and head[4] == [2.0, 2.0]
    assert tails(tab)[0] == [1.0, 1.0] and tail[0] == [1.0, 1.0]
    assert window_test(tab, head, tail, [1.0, 1.0], 3.0)
    assert not window_test(tab, head, tail, [1.0, 1.0], 2.9)


@pytest.mark.parametrize("seed", range(40))
def test_never_above_the_enumerated_optimum(seed):
    inst = brute.tiny(seed)
    tab = inst.tables
    truth = brute.enumerate_optimum(inst)
    value = energetic_bound(tab, serial_bound(tab))
    assert critical_path_bound(tab) <= value <= truth * (1 + 1e-9)


@pytest.mark.parametrize("size,seed", [(size, seed) for size in (1, 2, 3) for seed in range(4)])
def test_never_above_the_milps_proven_optimum_on_the_generator(size, seed):
    inst = PROBLEM.generate(seed, size)
    report = generated_report(seed, size, "milp")  # run(PROBLEM, inst, "milp", OPTIONS), shared
    assert report.status == "optimal"
    value = energetic_bound(inst.tables, float(local_search(inst)["objective"]))
    assert value <= report.objective * (1 + 1e-9)


def test_it_is_stronger_than_the_critical_path_on_the_generators_light_communication():
    """Two GPUs and two NPUs, little communication (generator seed 0): the critical path leaves
    most of the devices' work out."""
    inst = PROBLEM.generate(0, 6)
    tab = inst.tables
    assert energetic_bound(tab, float(local_search(inst)["objective"])) > 1.1 * critical_path_bound(tab)


@pytest.mark.parametrize("name", ["0-mapreduce-4m2r-servers", "0-spmv-b3-mixed", "0-topcuoglu-10x3",
                                  "0-random-n10-identical"])
def test_the_bound_method_is_valid_and_no_weaker_than_before(name, monkeypatch):
    """``--method bound`` stays under the proven optimum and at least at the critical path and
    the MILP's LP relaxation it had before."""
    inst = load(f"chase/{name}").instance
    optimum = shipped_report(name, "exact")  # run(PROBLEM, inst, "exact", OPTIONS), shared
    assert optimum.status == "optimal"
    value = bound.mapping_bound(inst, SolveOptions())
    assert value <= optimum.objective * (1 + 1e-9)
    monkeypatch.setattr(bound, "energetic_bound", lambda tab, upper, lower: lower)
    assert value >= bound.mapping_bound(inst, SolveOptions()) >= critical_path_bound(inst.tables)


def test_the_bound_method_gains_on_the_generators_light_communication(monkeypatch):
    """Generator seed 0 at 16 tasks (two GPUs, two NPUs, CCR 0.1): strictly above the LP
    relaxation and the critical path it had before, and below the proven optimum."""
    inst = PROBLEM.generate(0, 6)
    value = bound.mapping_bound(inst, SolveOptions())
    optimum = run(PROBLEM, inst, "exact", OPTIONS)
    assert optimum.status == "optimal" and value <= optimum.objective * (1 + 1e-9)
    monkeypatch.setattr(bound, "energetic_bound", lambda tab, upper, lower: lower)
    assert value > 1.01 * bound.mapping_bound(inst, SolveOptions())


def test_the_constraint_program_starts_from_the_energetic_bound():
    """The model's makespan variable starts at the floor of the energetic bound, and the route's
    bound is never below it."""
    inst = PROBLEM.generate(0, 6)
    tab = inst.tables
    upper = float(local_search(inst)["objective"])
    lower = energetic_bound(tab, upper)
    built = cpsat.build(inst, upper, lower=lower)
    assert built is not None
    low = built.model.proto.variables[built.makespan.index].domain[0]
    assert low == int(lower // built.unit) and low > 0
    outcome = cpsat.solve(inst, OPTIONS, incumbent=local_search(inst))
    assert outcome.status == "optimal" and outcome.bound >= lower * (1 - 1e-12)


def slow_pair(edges: tuple[Edge, ...]) -> Instance:
    """Three unit tasks on two identical devices whose transfers take 10 s (latency 5 s a hop)."""
    devices = (Device("d0", "k"), Device("d1", "k"))
    hardware = Hardware((DeviceType("k"),), devices, (Switch("sw", 8),),
                        tuple(Link((d.name, "sw"), 1e12, 5.0) for d in devices))
    return Instance(hardware, Workload(tuple(Task(f"t{v}", times=(1.0, 1.0)) for v in range(3)), edges))


def test_a_join_pays_either_the_transfer_or_the_shared_device():
    """t0 and t1 feed t2: on one device they run one after the other (t2 starts at 2), on two one
    of them sends over 10 s (t2 starts at 11), so t2 starts at 2 at the earliest; the routed head
    (each predecessor alone on t2's device) and the work before it (2 on 2 devices) say 1."""
    inst = slow_pair((Edge("t0", "t2"), Edge("t1", "t2")))
    tab = inst.tables
    head, _ = energetic_heads_tails(tab, [1.0, 1.0])
    assert heads(tab)[2] == [1.0, 1.0] and head[2] == [2.0, 2.0]
    assert brute.enumerate_optimum(inst) == pytest.approx(3.0)


def test_a_fork_pays_either_the_transfer_or_the_shared_device():
    """t0 feeds t1 and t2: after t0 ends, the two run one after the other on one device (2 s) or
    one of them waits 10 s for its input, so the tail of t0 is 2 where the routed tail says 1."""
    inst = slow_pair((Edge("t0", "t1"), Edge("t0", "t2")))
    tab = inst.tables
    _, tail = energetic_heads_tails(tab, [1.0, 1.0])
    assert tails(tab)[0] == [1.0, 1.0] and tail[0] == [2.0, 2.0]
    assert energetic_bound(tab, serial_bound(tab)) == pytest.approx(3.0)
    assert brute.enumerate_optimum(inst) == pytest.approx(3.0)


@pytest.mark.parametrize("size,seed", [(2, 1), (3, 5)])
def test_joins_and_forks_raise_the_heads_on_the_servers_platform(size, seed, monkeypatch):
    """On two servers (CCR 1) the shared-device bound raises some head or tail, none falls, and
    the bound stays under the MILP's proven optimum."""
    inst = PROBLEM.generate(seed, size)
    tab = inst.tables
    weights = speed_weights(tab)
    head, tail = energetic_heads_tails(tab, weights)
    monkeypatch.setattr(energetic, "SHARED_CHOICES", 0)  # the bound without joins and forks
    head0, tail0 = energetic_heads_tails(tab, weights)
    pairs = [(v, p) for v in range(tab.n) for p in tab.compatible[v]]
    assert all(head[v][p] >= head0[v][p] and tail[v][p] >= tail0[v][p] for v, p in pairs)
    assert any(head[v][p] > head0[v][p] + 1e-12 or tail[v][p] > tail0[v][p] + 1e-12 for v, p in pairs)
    report = generated_report(seed, size, "milp")  # run(PROBLEM, inst, "milp", OPTIONS), shared
    assert report.status == "optimal"
    assert critical_path_bound(tab, head, tail) <= report.objective * (1 + 1e-9)


def test_seven_tasks_between_two_barriers_need_four_rounds_on_two_devices(monkeypatch):
    """t0 feeds seven unit tasks that all feed t8, on two identical devices with free transfers:
    some device runs four of the seven, so t8 starts at 1 + 4 = 5 at the earliest and nothing ends
    before 6 (a schedule of 6 exists: the optimum). The counting bound sees it; the energetic
    windows alone see 1 + 7 / 2 + 1 = 5.5."""
    middle = [f"t{v}" for v in range(1, 8)]
    edges = tuple(Edge("t0", m) for m in middle) + tuple(Edge(m, "t8") for m in middle)
    inst = star([(1.0, 1.0)] * 9, edges=edges)
    tab = inst.tables
    head, _ = energetic_heads_tails(tab, [1.0, 1.0])
    assert head[8] == [5.0, 5.0]
    assert energetic_bound(tab, serial_bound(tab)) == pytest.approx(6.0, abs=1e-6)
    monkeypatch.setattr(energetic, "_counted", lambda jobs: 0.0)
    assert energetic_bound(tab, serial_bound(tab)) == pytest.approx(5.5, abs=1e-6)


def test_gauss_elimination_is_certified_by_the_counting_bound():
    """Gauss elimination on 8 devices: each step's eliminations sit between two pivots, more of
    them than fast devices; counting them puts the bound within 0.1 % of the local search's
    schedule (a checked makespan, so the bound may not pass it). It was 29 % below before."""
    inst = load("chase/2-gauss-elim-10-2x4").instance
    found = float(local_search(inst)["objective"])
    value = energetic_bound(inst.tables, found)
    assert found * 0.999 <= value <= found
