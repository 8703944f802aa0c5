"""chase: the paper baselines on Topcuoglu's example, the loader's deployment rules (through the
CLI, exit 2), the checker's rejections, the routing table, symmetry classes, the workload
generators, the simulator's relation to the contention-free makespan, and the heuristics."""

from __future__ import annotations

import itertools
import math
import random

import networkx as nx
import pytest

from coopt.cli import main
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.chase import PROBLEM, brute, mapping, milp
from coopt.problems.chase.hardware import Device, DeviceType, Hardware, Link, Switch
from coopt.problems.chase.model import Instance, check, generate, make_solution, platform, tasks_of_size
from coopt.problems.chase.schedule import (
    device_classes,
    heads,
    replay_order,
    semi_active,
    serial_bound,
    tails,
)
from coopt.problems.chase.simulator import simulate
from coopt.problems.chase.workloads import (
    Edge,
    Task,
    Workload,
    random_layered,
    roofline_time,
    sparse_kernel,
    transformer_step,
)
from coopt.run import run
from coopt.solvers.highs import solve_model

TOPCUOGLU = "chase/0-topcuoglu-10x3"
OPTIONS = SolveOptions(time_limit=60, gap=1e-9, threads=1)


@pytest.fixture(scope="module")
def topcuoglu() -> Instance:
    return load(TOPCUOGLU).instance


# -- the papers' baselines on Topcuoglu et al.'s example -------------------------------------------


def test_heft_gives_80_with_the_published_schedule(topcuoglu):
    solution = mapping.heft(topcuoglu)
    assert solution["objective"] == 80.0
    # mackncheesiest/heft heft/test/test_heft.py (commit 591508e), test_canonical_graph
    expected = {0: (2, 0), 1: (0, 27), 2: (2, 9), 3: (1, 18), 4: (2, 28), 5: (1, 26), 6: (2, 38),
                7: (0, 57), 8: (1, 56), 9: (1, 73)}
    for task, (device, start) in expected.items():
        assert solution["assignment"][f"T{task}"] == f"P{device}"
        assert solution["start_s"][f"T{task}"] == start
    assert check(topcuoglu, solution) == []


def test_upward_ranks_are_the_papers(topcuoglu):
    tab = topcuoglu.tables
    ranks = mapping.upward_ranks(tab, mapping.mean_edge_costs(tab), mapping.mean_times(tab))
    # Topcuoglu et al. 2002, Table 2 (and mackncheesiest/heft test_mean_ranku)
    published = [108, 77, 80, 80, 69, 63.333, 42.667, 35.667, 44.333, 14.667]
    assert ranks == pytest.approx(published, abs=1e-3)


def test_cpop_gives_86_on_the_papers_example(topcuoglu):
    # Topcuoglu et al. 2002, Fig. 4(b): CPOP's schedule length is 86
    solution = mapping.cpop(topcuoglu)
    assert solution["objective"] == 86.0
    # its critical path n1 n2 n9 n10 runs on P2 (index 1), the device that runs it fastest (54)
    for task in ("T0", "T1", "T8", "T9"):
        assert solution["assignment"][task] == "P1"


def test_peft_table_on_a_hand_computed_chain():
    # a -> b on two devices: OCT(a, p) = min_q (OCT(b, q) + w(b, q) + [q != p] c_bar), OCT(b) = 0
    devices = (Device("p0", "x"), Device("p1", "x"))
    hw = Hardware((DeviceType("x"),), devices, (), (Link(("p0", "p1"), 1e6),))
    tasks = (Task("a", times=(2.0, 3.0)), Task("b", times=(5.0, 1.0)))
    inst = Instance(hw, Workload(tasks, (Edge("a", "b", 4e6),)))
    table = mapping.optimistic_cost_table(inst.tables, mapping.mean_edge_costs(inst.tables))
    assert table[1] == [0.0, 0.0]
    assert table[0] == [min(5.0, 1.0 + 4.0), min(5.0 + 4.0, 1.0)]


# -- loading: the deployment rules, each one line and exit 2 ---------------------------------------

GOOD = """problem = "chase"
schema_version = 1

[[device_types]]
name = "gpu"
peak_tflops = 100.0
memory_bandwidth_tbyte_per_s = 1.0
memory_gb = 80.0
power_w = 700.0

[[racks]]
name = "r0"
power_w = 3000.0
units = 42

[[devices]]
name = "g0"
type = "gpu"
rack = "r0"

[[devices]]
name = "g1"
type = "gpu"
rack = "r0"

[[switches]]
name = "sw"
radix = 4
rack = "r0"
power_w = 500.0

[[links]]
ends = ["g0", "sw"]
bandwidth_gbyte_per_s = 50.0

[[links]]
ends = ["g1", "sw"]
bandwidth_gbyte_per_s = 50.0

[[tasks]]
name = "a"
gflop = 100.0

[[tasks]]
name = "b"
gflop = 200.0
traffic_mb = 10.0

[[tasks]]
name = "c"
gflop = 50.0

[[edges]]
from = "a"
to = "b"
data_mb = 100.0

[[edges]]
from = "b"
to = "c"
data_mb = 10.0
"""

BAD_GRAPHS = {
    "link to a missing device": (GOOD.replace('ends = ["g1", "sw"]', 'ends = ["g9", "sw"]'),
                                 "field 'links[1].ends': link 1 names 'g9', which is not a device or switch"),
    "rack over its power": (GOOD.replace('power_w = 3000.0', 'power_w = 1500.0'),
                            "field 'racks[0].power_w': rack 'r0' holds devices and switches drawing 1900 W, "
                            "more than its 1500 W"),
    "task with no compatible device": (GOOD.replace('name = "c"\ngflop = 50.0', 'name = "c"\ngflop = 50.0\n'
                                                    'footprint_gb = 100.0'),
                                       "field 'tasks[2]': task 'c' has no compatible device"),
    "cycle in the DAG": (GOOD + '\n[[edges]]\nfrom = "c"\nto = "a"\n',
                         "field 'edges': the task graph has a cycle: a -> b -> c -> a"),
    "switch over its radix": (GOOD.replace("radix = 4", "radix = 1"),
                              "field 'switches[0].radix': switch 'sw' has 2 links, more than its radix 1"),
    "unknown device type": (GOOD.replace('name = "g1"\ntype = "gpu"', 'name = "g1"\ntype = "tpu"'),
                            "field 'devices[1].type': device 'g1' has type 'tpu'"),
    "unreachable device": (GOOD.replace('[[links]]\nends = ["g1", "sw"]\nbandwidth_gbyte_per_s = 50.0\n', ''),
                           "field 'links': device 'g0' cannot reach device 'g1'"),
    "edge to a missing task": (GOOD.replace('from = "b"\nto = "c"', 'from = "b"\nto = "z"'),
                               "field 'edges[1].to': edge 1 names task 'z', which is not declared"),
    "times and roofline": (GOOD.replace('name = "a"\ngflop = 100.0', 'name = "a"\ngflop = 100.0\n'
                                        'time_s = [1.0, 1.0]'),
                           "field 'tasks[0].time_s': task 'a' gives both time_s and a roofline"),
    "cost matrix of the wrong width": (GOOD.replace('name = "a"\ngflop = 100.0', 'name = "a"\ntime_s = [1.0]'),
                                       "field 'tasks[0].time_s': expected 2 entries, got 1"),
}


@pytest.mark.parametrize("case", sorted(BAD_GRAPHS))
def test_a_bad_hardware_graph_is_one_line_and_exit_2(case, tmp_path, capsys):
    text, expected = BAD_GRAPHS[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    code = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0] and expected in lines[0], lines[0]
    assert "Traceback" not in err


def test_the_good_file_loads(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text(GOOD)
    inst = load(path).instance
    assert inst.n_tasks == 3 and inst.n_devices == 2
    assert inst.tables.time[1][0] == pytest.approx(roofline_time(inst.workload.tasks[1], inst.hardware.device_types[0]))


# -- the checker -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def heft_solution(topcuoglu):
    return mapping.heft(topcuoglu)


def tampered(solution, **changes):
    copy = {k: (dict(v) if isinstance(v, dict) else v) for k, v in solution.items()}
    for key, (task, value) in changes.items():
        copy[key][task] = value
    return copy


@pytest.mark.parametrize("changes, violation", [
    ({"assignment": ("T9", "P7")}, "assignment"),
    ({"start_s": ("T9", 70.0)}, "precedence"),
    ({"start_s": ("T4", 27.0)}, "overlap"),
    ({"start_s": ("T0", -1.0)}, "start"),
    ({"start_s": ("T3", math.nan)}, "start"),
    ({"start_s": ("T3", "soon")}, "start"),
])
def test_the_checker_names_the_broken_rule(topcuoglu, heft_solution, changes, violation):
    found = check(topcuoglu, tampered(heft_solution, **changes))
    assert found and found[0].constraint == violation, found


def test_the_checker_rejects_an_incompatible_device():
    inst = Instance(platform("mixed"), Workload((Task("t", flops=1e12, types=("gpu",)),)))
    good = make_solution(inst, [0], [0.0])
    assert check(inst, good) == []
    bad = dict(good, assignment={"t": "cpu3"})
    assert [v.constraint for v in check(inst, bad)] == ["compatible"]


def test_the_checker_recomputes_the_simulated_makespan(topcuoglu, heft_solution):
    assert check(topcuoglu, heft_solution) == []
    claim = dict(heft_solution, simulated_makespan_s=heft_solution["objective"])  # contention ignored
    assert [v.constraint for v in check(topcuoglu, claim)] == ["simulated_makespan"]


def test_a_missing_or_extra_task_is_a_violation(topcuoglu, heft_solution):
    missing = {**heft_solution, "assignment": {k: v for k, v in heft_solution["assignment"].items() if k != "T0"}}
    assert check(topcuoglu, missing)[0].constraint == "assignment"
    extra = {**heft_solution, "start_s": {**heft_solution["start_s"], "T99": 0.0}}
    assert check(topcuoglu, extra)[0].constraint == "start_s"
    assert check(topcuoglu, {"objective": 1.0})[0].constraint == "solution"


# -- routing and symmetry -----------------------------------------------------------------------------


def test_routes_are_least_cost_paths_with_bottleneck_and_latency():
    rng = random.Random(3)
    for _ in range(20):
        count = rng.randint(3, 6)
        devices = tuple(Device(f"d{p}", "x") for p in range(count))
        switches = (Switch("s0", 16), Switch("s1", 16))
        links = [Link((f"d{p}", rng.choice(("s0", "s1"))), rng.uniform(1e9, 1e11), rng.uniform(0, 1e-5))
                 for p in range(count)]
        links.append(Link(("s0", "s1"), rng.uniform(1e9, 1e11), rng.uniform(0, 1e-5)))
        links += [Link((f"d{p}", f"d{q}"), rng.uniform(1e9, 1e11), rng.uniform(0, 1e-5))
                  for p, q in itertools.combinations(range(count), 2) if rng.random() < 0.3]
        hw = Hardware((DeviceType("x"),), devices, switches, tuple(links))
        graph = nx.Graph()
        for link in links:  # the routing cost of the module docstring; keep the cheapest parallel link
            cost = link.latency + 1e6 / link.bandwidth
            if not graph.has_edge(*link.ends) or graph.edges[link.ends]["cost"] > cost:
                graph.add_edge(*link.ends, cost=cost, link=link)
        for p, q in itertools.permutations(range(count), 2):
            path = nx.dijkstra_path(graph, f"d{p}", f"d{q}", weight="cost")
            hops = [graph.edges[a, b]["link"] for a, b in itertools.pairwise(path)]
            assert hw.routes.latency[p][q] == pytest.approx(sum(h.latency for h in hops), rel=1e-12)
            assert hw.routes.bandwidth[p][q] == pytest.approx(min(h.bandwidth for h in hops), rel=1e-12)


@pytest.mark.parametrize("kind, classes", [
    ("identical", [[0, 1, 2, 3]]), ("switch", [[0, 1], [2, 3]]), ("servers", []), ("mixed", []),
])
def test_identical_devices_form_classes(kind, classes):
    inst = Instance(platform(kind), random_layered(random.Random(1), 6))
    assert device_classes(inst) == classes


def test_explicit_times_split_a_class():
    hw = platform("identical")
    tasks = (Task("a", times=(1.0, 1.0, 2.0, 1.0)), Task("b", times=(1.0, 1.0, 1.0, 1.0)))
    assert device_classes(Instance(hw, Workload(tasks))) == [[0, 1, 3]]


# -- workloads ---------------------------------------------------------------------------------------------


def test_transformer_step_counts_and_flops():
    layers, tp, h, s = 2, 4, 1024, 512
    wl = transformer_step(layers=layers, tp=tp, pp=2, hidden=h, sequence=s, train=True)
    assert len(wl.tasks) == layers * 2 * tp * 2  # attention and MLP, forward and backward, per shard
    forward = sum(t.flops for t in wl.tasks if ".bwd" not in t.name)
    # per layer: QKV + output 8 h^2 T, scores and values 4 s h T, MLP 16 h^2 T (f = 4h), T = s tokens
    assert forward == pytest.approx(layers * (24 * h * h * s + 4 * s * h * s))
    backward = sum(t.flops for t in wl.tasks if ".bwd" in t.name)
    assert backward == pytest.approx(2 * forward)
    graph = nx.DiGraph((e.source, e.target) for e in wl.edges)
    assert nx.is_directed_acyclic_graph(graph)


def test_sparse_kernel_is_memory_bound_with_halos():
    wl = sparse_kernel(random.Random(0), blocks=4, iterations=2)
    assert len(wl.tasks) == 4 + 8 + 3
    spmv = [t for t in wl.tasks if t.name.startswith("spmv")]
    assert all(t.flops / t.traffic < 1.0 for t in spmv)
    into = {t.name: [e for e in wl.edges if e.target == t.name] for t in spmv}
    assert len(into["spmv1.1"]) == 3 and len(into["spmv1.0"]) == 2  # own slice and the neighbours' halos


def test_generated_instances_have_the_documented_size():
    for seed, size in itertools.product(range(4), (1, 3)):
        inst = generate(seed, size)
        assert inst.n_tasks == tasks_of_size(size) and inst.n_devices == 4
        assert nx.is_directed_acyclic_graph(nx.DiGraph(zip(inst.tables.source, inst.tables.target, strict=True)))


# -- the simulator and the contention-free makespan ---------------------------------------------------------


def random_mapping(inst: Instance, rng: random.Random) -> tuple[list[int], list[int]]:
    tab = inst.tables
    assignment = [rng.choice(tab.compatible[v]) for v in range(tab.n)]
    return assignment, replay_order(tab, assignment, [rng.random() for _ in range(tab.n)])


def test_simulated_makespan_is_never_below_the_contention_free_one():
    rng = random.Random(0)
    for seed in range(30):
        inst = generate(seed, 3)
        assignment, order = random_mapping(inst, rng)
        _, free = semi_active(inst.tables, assignment, order)
        assert simulate(inst, assignment, order).makespan >= free * (1 - 1e-12)
        assert simulate(inst, assignment, order, contention=False).makespan == free


def test_the_simulator_equals_the_contention_free_schedule_when_no_link_is_shared():
    # a chain across the devices: one transfer at a time, so no two flows meet on a link
    inst = Instance(platform("switch"), Workload(
        tuple(Task(f"t{k}", flops=1e12) for k in range(6)),
        tuple(Edge(f"t{k}", f"t{k + 1}", 2e8) for k in range(5))))
    assignment = [k % 4 for k in range(6)]
    order = list(range(6))
    _, free = semi_active(inst.tables, assignment, order)
    assert simulate(inst, assignment, order).makespan == pytest.approx(free, rel=1e-12)


def test_contention_delays_two_transfers_that_share_a_link():
    # two 1 GB transfers from gpu0 to gpu1 at once share gpu0's NIC: each takes twice as long
    inst = Instance(platform("switch"), Workload(
        (Task("a", flops=1e12), Task("b", flops=1e12), Task("c", flops=1e12)),
        (Edge("a", "c", 1e9), Edge("b", "c", 1e9))))
    tab = inst.tables
    assignment, order = [0, 0, 1], [0, 1, 2]
    start, free = semi_active(tab, assignment, order)
    sim = simulate(inst, assignment, order)
    link = inst.hardware.links[0].bandwidth
    # b ends one run time after a; a's flow runs alone until then, then they share the NIC
    assert sim.makespan > free
    ends = (tab.time[0][0], 2 * tab.time[1][0])
    alone = ends[1] - ends[0]
    done = ends[1] + 2 * (1e9 - alone * link) / link + 1e9 / link - (1e9 - alone * link) / link
    assert sim.start[2] == pytest.approx(done + tab.latency[0][1], rel=1e-9)


def test_telemetry_is_conserved():
    rng = random.Random(5)
    for seed in range(10):
        inst = generate(seed, 4)
        assignment, order = random_mapping(inst, rng)
        tel = simulate(inst, assignment, order)
        tab = inst.tables
        for p in range(tab.devices):
            assert tel.device_busy[p] == pytest.approx(sum(tab.time[v][p] for v in range(tab.n) if assignment[v] == p))
        crossed = [0.0] * len(inst.hardware.links)
        for e, (u, v) in enumerate(zip(tab.source, tab.target, strict=True)):
            for link, _ in inst.hardware.routes.path[assignment[u]][assignment[v]] or ():
                crossed[link] += tab.data[e]
        for link in range(len(crossed)):
            assert tel.link_bytes_total(link) == pytest.approx(crossed[link])
        compute = sum(s for (kind, _), s in tel.blame.items() if kind == "compute")
        assert 0 < compute <= tel.makespan * (1 + 1e-9)


def test_jitter_only_lengthens_and_is_seeded():
    inst = generate(2, 3)
    assignment, order = random_mapping(inst, random.Random(0))
    base = simulate(inst, assignment, order).makespan
    a = simulate(inst, assignment, order, jitter=0.2, seed=4).makespan
    assert a == simulate(inst, assignment, order, jitter=0.2, seed=4).makespan
    assert a != simulate(inst, assignment, order, jitter=0.2, seed=5).makespan
    assert a >= base


# -- heuristics and bounds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("search", [mapping.local_search, mapping.fast_local_search])
def test_local_search_is_never_worse_than_its_list_schedulers(search):
    for seed in range(12):
        inst = generate(seed, 3)
        best = min(fn(inst)["objective"] for fn in (mapping.heft, mapping.peft, mapping.cpop, mapping.chase_mapper))
        assert search(inst, seed=seed)["objective"] <= best * (1 + 1e-12)


def test_heads_and_tails_bound_every_schedule():
    for seed in range(10):
        inst = generate(seed, 3)
        tab = inst.tables
        head, tail = heads(tab), tails(tab)
        solution = mapping.local_search(inst)
        device = {name: p for p, name in enumerate(tab.device_names)}
        for v, name in enumerate(tab.task_names):
            p = device[solution["assignment"][name]]
            start = solution["start_s"][name]
            assert start >= head[v][p] * (1 - 1e-12)
            assert start + tab.time[v][p] + tail[v][p] <= solution["objective"] * (1 + 1e-12)


def test_the_dual_bound_is_below_the_proven_optimum_on_tiny_instances():
    for seed in range(6):
        inst = brute.tiny(seed)
        truth = brute.enumerate_optimum(inst)
        assert run(PROBLEM, inst, "bound", OPTIONS).bound <= truth * (1 + 1e-9)


def test_every_heuristic_is_feasible_on_heterogeneous_shipped_files():
    for name in ("0-spmv-b3-mixed", "0-transformer-l1-tp2-servers"):
        inst = load(f"chase/{name}").instance
        for fn in mapping.HEURISTICS.values():
            assert check(inst, fn(inst)) == []


def test_the_milp_warm_start_respects_the_symmetry_rows():
    inst = generate(3, 3)  # platform "identical": one class of four GPUs
    model = milp.build(inst, incumbent=PROBLEM.warm_start(inst))
    assert model.warm_start
    assert model.tables["classes"] == [[0, 1, 2, 3]]
    violated = [c for c in model.symmetry.values() if c.body() > c.upper + 1e-9]
    assert not violated


@pytest.mark.parametrize("seed", range(6))
def test_the_local_searchs_suffix_decode_equals_the_full_decode_and_the_checker(seed):
    """Every move of the local search's neighbourhood, valued by :meth:`mapping.Decoder.trial`
    (the suffix after the first changed position, from the current state's snapshots), has the
    makespan and sum of finishes of a full semi-active decode, and that makespan is the one the
    checker recomputes; a trial abandoned at the cutoff is one whose makespan exceeds it."""
    inst = generate(seed, 1 + seed % 3)
    tab = inst.tables
    rng = random.Random(seed)
    decoder = mapping.Decoder(tab)
    assignment, order = mapping.heft_mapping(tab)
    checked = 0
    for _ in range(5):
        decoder.load(assignment, order)
        for move in mapping._moves(tab, decoder):
            moved, moved_order, k = mapping._apply(decoder, move)
            start, span = semi_active(tab, moved, moved_order)
            total = sum(start[v] + tab.time[v][moved[v]] for v in range(tab.n))
            cutoff = decoder.value[0] * rng.choice([0.9, 1.0, 1.5, math.inf])
            value = decoder.trial(moved, moved_order, k, cutoff)
            if value is None:
                assert span > cutoff
                continue
            assert value[0] == pytest.approx(span, rel=1e-12)
            assert value[1] == pytest.approx(total, rel=1e-12)
            solution = make_solution(inst, moved, start)
            assert not check(inst, solution)
            assert solution["objective"] == pytest.approx(span, rel=1e-9)
            checked += 1
        assignment = [rng.choice(tab.compatible[v]) for v in range(tab.n)]
    assert checked > 10


@pytest.mark.parametrize("seed", range(6))
def test_a_local_optimum_met_again_ends_the_descent_as_its_scan_would(seed):
    """:func:`mapping._descend` skips the scan of a local optimum it has scanned before: it must
    count the trials the scan spends and draw the same random numbers, so the search after it
    is the one a real rescan gives (the memo's only effect is time). Checked against a decoder
    whose memo is cleared, at a full budget and at a budget that stops the scan part way."""
    inst = generate(seed, 1 + seed % 4)
    tab = inst.tables
    decoder = mapping.Decoder(tab)
    decoder.load(*mapping.heft_mapping(tab))
    mapping._descend(tab, decoder, random.Random(seed), 10**6)  # to a local optimum, recorded
    state = (list(decoder.assignment), list(decoder.order))
    assert decoder.optima
    size = len(mapping._moves(tab, decoder))
    for budget in (10**6, max(1, size // 2)):
        outcomes = []
        for remembered in (True, False):
            if not remembered:
                decoder.optima.clear()
            decoder.load(*state)
            rng = random.Random(seed + 1)
            spent = mapping._descend(tab, decoder, rng, budget)
            outcomes.append((spent, rng.random(), decoder.assignment, decoder.order))
        assert outcomes[0] == outcomes[1]
        assert outcomes[0][0] == min(size, budget)


@pytest.mark.parametrize("seed", range(4))
def test_the_cold_milp_proves_the_brute_force_optimum(seed):
    """Without an incumbent the MILP's horizon is the serial bound (no heuristic runs): it is a
    makespan some schedule reaches, and the model still proves the enumerated optimum (the
    solver's value within the suite's tolerance: its big-M rows are wider than with an incumbent's
    horizon; the extracted schedule's exactly)."""
    inst = brute.tiny(seed)
    truth = brute.enumerate_optimum(inst)
    assert serial_bound(inst.tables) >= truth
    model = milp.build(inst)
    assert not model.warm_start
    result = solve_model(model, OPTIONS)
    assert result.status == "optimal" and result.objective == pytest.approx(truth, rel=1e-6)
    assert result.bound <= truth * (1 + 1e-9)
    assert milp.extract(model, inst)["objective"] == pytest.approx(truth, rel=1e-9)
