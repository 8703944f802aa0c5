"""TopoOpt's alternating search, iteration-time model, ECMP routing map and cost baselines."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from coopt.errors import InstanceError
from coopt.instance import load, to_toml
from coopt.problems import topoopt
from coopt.problems.topoopt import heuristics as H
from coopt.problems.topoopt import model as T
from coopt.problems.topoopt.ecmp import hop_matrix
from coopt.registry import closed_form as get

SMALL_DLRM = dataclasses.replace(H.dlrm(tables=8), batch_per_server=64)
FINDERS = ("topology_finder", "topology_finder_lp", "topoopt_authors")


@pytest.mark.parametrize("seed", range(4))
def test_ecmp_routing_map_prices_like_the_checker(seed):
    rng = np.random.default_rng(seed)
    instance = T.random_instance(rng, int(rng.choice([8, 12, 16])), int(rng.integers(2, 5)), 100.0)
    solution = H.topology_finder(instance)
    shares = [[(int(q), v) for q, v in g] for g in solution["ring_share"]]
    demand = T.demand_matrix(instance, shares)
    rate = H.EcmpRouting(np.array(solution["links"])).rate(demand, instance.port_rate)
    assert rate == pytest.approx(T.objective(instance, solution), rel=1e-5)


def _random_links(rng: np.random.Generator, n: int, d: int, symmetric: bool) -> np.ndarray:
    """A union of ``d`` random permutations (self-loops dropped), made duplex when asked: often
    disconnected for small ``d``, and a multigraph where two permutations agree."""
    links = np.zeros((n, n), dtype=int)
    for _ in range(d):
        links[np.arange(n), rng.permutation(n)] += 1
    np.fill_diagonal(links, 0)
    return links + links.T if symmetric else links


@pytest.mark.parametrize("seed", range(6))
def test_hop_counts_are_networkx_shortest_path_lengths(seed):
    import networkx as nx

    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(2, 40))
    links = _random_links(rng, n, int(rng.integers(1, 4)), symmetric=seed % 2 == 0)
    expected = np.full((n, n), np.inf)
    lengths = nx.all_pairs_shortest_path_length(nx.from_numpy_array(links > 0, create_using=nx.DiGraph))
    for s, reached in lengths:
        for t, hops in reached.items():
            expected[s, t] = hops
    assert np.array_equal(hop_matrix(links), expected)


@pytest.mark.parametrize("seed", range(6))
def test_ecmp_loads_split_each_pair_over_its_shortest_paths_in_proportion_to_link_counts(seed):
    """The map's arc loads and flows against a pair-by-pair recomputation in plain Python: walking back
    from ``t``, what arrives at a server from ``s`` came over its in-arcs on ``s``'s shortest-path DAG
    in proportion to their link counts."""
    rng = np.random.default_rng(400 + seed)
    n = int(rng.integers(3, 14))
    links = _random_links(rng, n, int(rng.integers(1, 4)), symmetric=seed % 2 == 0)
    demand = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(demand, 0.0)
    hops = hop_matrix(links)
    demand[~np.isfinite(hops)] = 0.0
    expected = np.zeros((n, n))
    for s, t in zip(*np.nonzero(demand), strict=True):
        arriving = np.zeros(n)
        arriving[t] = demand[s, t]
        for v in sorted(np.flatnonzero(hops[s] <= hops[s, t]), key=lambda v: -hops[s, v]):
            preds = [u for u in range(n) if links[u, v] and hops[s, u] + 1 == hops[s, v]]
            for u in preds:
                share = arriving[v] * links[u, v] / sum(links[w, v] for w in preds)
                expected[u, v] += share
                arriving[u] += share
    routing = H.EcmpRouting(links)
    loads = np.zeros((n, n))
    loads[routing.tails, routing.heads] = routing.loads(demand)
    assert np.allclose(loads, expected, rtol=1e-12, atol=1e-12)
    per_source = np.zeros((n, n))
    for s, i, j, b in routing.flows(demand):
        per_source[i, j] += b
        assert hops[s, i] + 1 == hops[s, j]  # every flow runs down its source's shortest-path DAG
    assert np.allclose(per_source, expected, rtol=1e-12, atol=1e-12)


def test_ecmp_routing_map_sees_unreachable_demand():
    links = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])
    demand = np.zeros((4, 4))
    demand[0, 2] = 1.0
    assert H.EcmpRouting(links).rate(demand, 1.0) == 0.0


@pytest.mark.parametrize(("switch", "finder"), [(None, f) for f in FINDERS] + [(150.0, "topology_finder")])
def test_search_never_worsens_and_is_seeded(switch, finder):
    kwargs = {"budget": 40, "switch_gbps": switch, "finder": finder}
    result = H.alternating_search(SMALL_DLRM, 16, 4, 100, seed=3, **kwargs)
    assert all(b <= a for a, b in zip(result.history, result.history[1:], strict=False))
    assert result.iteration_time <= result.start_time
    assert result.history[0] == result.start_time and result.history[-1] == result.iteration_time
    again = H.alternating_search(SMALL_DLRM, 16, 4, 100, seed=3, **kwargs)
    assert again.strategy == result.strategy and again.iteration_time == result.iteration_time
    # the reported time is the strategy priced on the fabric returned with it
    allreduce, per_pair = H.strategy_traffic(SMALL_DLRM, result.strategy, 16)
    if switch is None:
        comm = result.fabric.comm_time(allreduce, per_pair)
    else:
        comm = H.switch_comm_time(allreduce, per_pair, switch * 1e9 / 8)
    assert H.iteration_time(SMALL_DLRM, *comm) == pytest.approx(result.iteration_time, rel=1e-6)


def test_search_moves_big_embeddings_off_data_parallel():
    result = H.alternating_search(SMALL_DLRM, 16, 4, 100, budget=120)
    tables = [
        m for op, m in zip(SMALL_DLRM.ops, result.strategy, strict=True) if op.name.startswith("embedding")
    ]
    assert result.iteration_time < 0.5 * result.start_time
    assert sum(m > 1 for m in tables) >= len(tables) // 2


def test_data_parallel_on_an_ideal_switch_is_the_ring_closed_form():
    workload = H.resnet50()
    n, per_server = 32, 400e9 / 8
    allreduce, per_pair = H.strategy_traffic(workload, (1,) * len(workload.ops), n)
    assert list(allreduce) == [n] and not per_pair
    ring = get("topoopt.ring_allreduce_time").evaluate(
        {"k": n, "S": allreduce[n], "r": 1, "B": per_server, "a": 0}
    )
    assert H.switch_comm_time(allreduce, per_pair, per_server) == pytest.approx((ring, 0.0), rel=1e-12)


def test_phase_prices_on_a_fabric_match_the_checker():
    """A phase priced by the search equals 1/theta of the same traffic as a TopoOpt instance."""
    fabric = H.Fabric.for_strategy(SMALL_DLRM, (1,) * len(SMALL_DLRM.ops), 16, 4, 100)
    ops = len(SMALL_DLRM.ops)
    for strategy in [(1,) * ops, (1,) * 7 + (16,) * 8 + (1,) * (ops - 15), (4,) * ops]:
        allreduce, per_pair = H.strategy_traffic(SMALL_DLRM, strategy, 16)
        for k, b in allreduce.items():
            instance = T.Instance(16, 4, 100e9, (T.AllReduceGroup(k, b),), ())
            shares = [H.ring_shares_on(16, [k], fabric.strides)[k]]
            flows = H.ecmp_flows(fabric.links, T.demand_matrix(instance, shares))
            solution = {
                "links": fabric.links.tolist(),
                "ring_share": [[list(e) for e in shares[0]]],
                "flows": flows,
            }
            assert T.check(instance, solution) == []
            assert fabric.comm_time({k: b}, {}) == pytest.approx(
                (1 / T.objective(instance, solution), 0.0), rel=1e-5
            )
        for m, b in per_pair.items():
            instance = T.Instance(16, 4, 100e9, (), (), (T.ModelParallelGroup(m, b),))
            flows = H.ecmp_flows(fabric.links, T.mp_matrix(instance))
            solution = {"links": fabric.links.tolist(), "ring_share": [], "flows": flows}
            assert T.check(instance, solution) == []
            assert fabric.comm_time({}, {m: b}) == pytest.approx(
                (0.0, 1 / T.objective(instance, solution)), rel=1e-5
            )


def test_strategy_traffic_and_instance_agree():
    strategy = tuple(int(m) for m in np.random.default_rng(0).choice([1, 2, 4, 16], len(SMALL_DLRM.ops)))
    allreduce, per_pair = H.strategy_traffic(SMALL_DLRM, strategy, 16)
    instance = H.workload_instance(SMALL_DLRM, strategy, 16, 4, 100)
    mp = sum(b * T.block_pairs(16, m) for m, b in per_pair.items())
    assert np.allclose(T.mp_matrix(instance), mp)
    assert {g.size: g.bytes for g in instance.allreduce} == pytest.approx(allreduce)
    expected = sum(op.params / m for op, m in zip(SMALL_DLRM.ops, strategy, strict=True) if m < 16)
    assert sum(allreduce.values()) == pytest.approx(expected)


def test_model_parallel_groups_round_trip(tmp_path):
    ops = len(SMALL_DLRM.ops)
    instance = H.workload_instance(SMALL_DLRM, (1,) * 7 + (16,) * 8 + (1,) * (ops - 15), 16, 4, 100)
    path = tmp_path / "dlrm.toml"
    path.write_text(to_toml(topoopt.PROBLEM, instance))
    assert load(path).instance == instance
    solution = H.topology_finder(instance)
    assert T.check(instance, solution) == []


# -- cost: the notes' table (MixNet calculator formulas, 128 servers x 8 NICs, US$ M) ----------

NOTES_COST = {100: (3.071, 1.032), 200: (5.654, 1.606), 400: (13.493, 2.466), 800: (21.469, 3.991)}


@pytest.mark.parametrize("gbps", sorted(NOTES_COST))
def test_cost_formulas_match_the_notes(gbps):
    fattree, topoopt = NOTES_COST[gbps]
    assert H.fattree_cost(128 * 8, gbps) / 1e6 == pytest.approx(fattree, abs=5e-4)
    assert H.topoopt_cost(128, 8, gbps) / 1e6 == pytest.approx(topoopt, abs=5e-4)


def test_similar_cost_fattree_spends_the_same():
    rates = [t.rate / 1e9 for t in T.DEFAULT_PRICES.tiers]
    for d in (4, 6, 8):
        rate = H.similar_cost_fattree_gbps(128, d, 100)
        budget = H.topoopt_cost(128, d, 100)
        below = max(r for r in rates if r <= rate)
        above = min(r for r in rates if r >= rate)
        assert H.fattree_cost(128, below) <= budget <= H.fattree_cost(128, above)
        assert H.fattree_cost(128, rate) == pytest.approx(budget, rel=1e-12)


# -- prices as instance data ---------------------------------------------------------------------

#: Research notes section 2(e), the MixNet calculator's unit prices (US$) per rate (Gbps), typed in
#: from the notes: transceiver, NIC, EPS port, patch-panel port; fibre 0.3 $/m, 500 m (section 2(d)).
NOTES_PRICES = {
    100: (99, 659, 187, 100),
    200: (239, 1079, 374, 100),
    400: (659, 1499, 1090, 100),
    800: (1399, 2248, 1400, 100),
}
HEAD = 'problem = "topoopt"\nschema_version = 2\nservers = 128\ndegree = 4\nbandwidth_gbit_per_s = 100\n'
TRAFFIC = "[[allreduce]]\nsize = 128\nbytes = 1e8\n"


def prices_toml(fibre_usd_per_m=0.3, **bump) -> str:
    """A [prices] table equal to the notes' table, with ``bump[item]`` US$ added at every rate."""
    rows = []
    for gbps, (tr, nic, eps, pp) in NOTES_PRICES.items():
        values = {"transceiver_usd": tr, "nic_usd": nic, "switch_port_usd": eps, "patch_panel_port_usd": pp}
        cells = ", ".join(f"{k} = {v + bump.get(k, 0)}" for k, v in values.items())
        rows.append(f"  {{ gbit_per_s = {gbps}, {cells} }},")
    return f"[prices]\nfibre_usd_per_m = {fibre_usd_per_m}\nfibre_length_m = 500\ntier = [\n" + "\n".join(rows) + "\n]\n"


def read(tmp_path, body: str, degree: int = 4) -> T.Instance:
    path = tmp_path / "prices.toml"
    path.write_text(HEAD.replace("degree = 4", f"degree = {degree}") + body + TRAFFIC)
    return load(path).instance


def test_default_prices_are_the_notes_values(tmp_path):
    assert [(t.rate, t.transceiver, t.nic, t.switch_port, t.patch_panel_port) for t in T.DEFAULT_PRICES.tiers] == [
        (g * 1e9, *p) for g, p in NOTES_PRICES.items()
    ]
    assert (T.DEFAULT_PRICES.fibre_per_m, T.DEFAULT_PRICES.fibre_length) == (0.3, 500)
    assert read(tmp_path, "").prices == T.DEFAULT_PRICES == read(tmp_path, prices_toml()).prices


def test_similar_cost_rate_is_the_closed_form(tmp_path):
    """Between 100 and 200 Gbps the fat-tree cost is linear, so the rate solves a linear equation."""
    instance = read(tmp_path, prices_toml(patch_panel_port_usd=40))
    per_server = {g: nic + 7 * tr + 6 * eps for g, (tr, nic, eps, _) in NOTES_PRICES.items()}
    fibres = 0.3 * 500 * math.ceil(7 * 128 / 2)
    tr, nic, _, pp = NOTES_PRICES[100]
    budget = 128 * 4 * (nic + tr + pp + 40 + 0.3 * 500)
    low, high = (128 * per_server[g] + fibres for g in (100, 200))
    assert low < budget < high
    assert H.similar_cost_fattree(instance) == pytest.approx(100 + 100 * (budget - low) / (high - low), rel=1e-12)


@pytest.mark.parametrize(
    ("degree", "change", "direction"),
    [
        # TopoOpt pays d patch-panel ports per server, the fat-tree none: its budget rises.
        (4, {"patch_panel_port_usd": 50}, +1),
        # the fat-tree pays 6 switch ports per server, TopoOpt none.
        (4, {"switch_port_usd": 50}, -1),
        # d transceivers per server against the fat-tree's 7: the fat-tree's cost rises faster for d < 7.
        (4, {"transceiver_usd": 50}, -1),
        # d fibres per server against the fat-tree's 3.5: the sign flips between d = 3 and d = 4.
        (4, {"fibre_usd_per_m": 0.6}, +1),
        (3, {"fibre_usd_per_m": 0.6}, -1),
    ],
)
def test_price_changes_move_the_similar_cost_fattree_as_the_closed_form_says(tmp_path, degree, change, direction):
    base = H.similar_cost_fattree(read(tmp_path, prices_toml(), degree))
    changed = H.similar_cost_fattree(read(tmp_path, prices_toml(**change), degree))
    assert (changed - base) * direction > 1e-3


def test_prices_round_trip(tmp_path):
    instance = read(tmp_path, prices_toml(fibre_usd_per_m=1.25, nic_usd=7))
    assert instance.prices != T.DEFAULT_PRICES
    copy = tmp_path / "copy.toml"
    copy.write_text(to_toml(topoopt.PROBLEM, instance))
    assert load(copy).instance == instance


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (prices_toml().replace("transceiver_usd = 99", "transceiver_usd = -99"), "prices.tier[0].transceiver_usd"),
        (prices_toml().replace("nic_usd = 1079", 'nic_usd = "cheap"'), "prices.tier[1].nic_usd"),
        (prices_toml().replace("gbit_per_s = 400", "gbit_per_s = 150"), "prices.tier[2].gbit_per_s"),
        (  # 200 G fat-tree cheaper per server than 100 G
            prices_toml().replace("switch_port_usd = 374", "switch_port_usd = 0").replace("1079", "100"),
            "prices.tier[1]",
        ),
        (prices_toml(fibre_usd_per_m=-0.3), "prices.fibre_usd_per_m"),
        (prices_toml().replace("fibre_length_m", "fiber_length_m"), "prices.fiber_length_m"),
        ("[prices]\ntier = [{ gbit_per_s = 100, nic_usd = 1, transceiver_usd = 1, switch_port_usd = 1, "
         "patch_panel_port_usd = 1 }]\n", "prices.tier"),
        ("prices = 3\n", "prices"),
    ],
)
def test_bad_prices_name_the_field(tmp_path, body, field):
    with pytest.raises(InstanceError) as err:
        read(tmp_path, body)
    assert field in {e.field for e in err.value.errors}


# -- NIC sharing, overlap and the scripts' workloads -------------------------------------------


def test_one_nic_per_server_is_the_issues_2055_dollars_and_moves_the_fattree_below_100g():
    """Issue 18: d = 4 ports of 100 G with one NIC per server costs $2,055 per server (not $4,032);
    below the lowest tier every price falls with the rate, so the similar-cost fat-tree solves
    (2055 - 525) = 2474 r / 100 (fibres 0.3 $/m x 500 m x 3.5 per server stay): r = 61.8 G."""
    shared = dataclasses.replace(T.DEFAULT_PRICES, ports_per_nic=4)
    assert H.topoopt_cost(1, 4, 100) == pytest.approx(4032)
    assert H.topoopt_cost(1, 4, 100, shared) == pytest.approx(2055)
    assert H.similar_cost_fattree_gbps(128, 4, 100, shared) == pytest.approx(100 * 1530 / 2474, rel=1e-9)
    rates = [H.similar_cost_fattree_gbps(128, 4, 100, dataclasses.replace(T.DEFAULT_PRICES, ports_per_nic=p))
             for p in (1, 2, 4)]
    assert rates[0] > rates[1] > rates[2]


def test_overlap_hides_allreduce_behind_the_backward_pass():
    w = H.bert()
    assert H.iteration_time(w, 0.0, 0.0) == pytest.approx(w.forward + w.backward)
    assert H.iteration_time(w, 0.5 * w.backward, 0.0) == pytest.approx(w.forward + w.backward)
    over = H.iteration_time(w, 2 * w.backward, 1e-3)
    assert over == pytest.approx(w.forward + 2 * w.backward + 1e-3)
    assert over < H.iteration_time(w, 2 * w.backward, 1e-3, overlap=False)


def test_bert_is_the_scripts_transformer_with_the_measured_times():
    """bert128_dc.sh: 12 encoder-decoder layers of hidden 1024 (3 attentions of 4 h^2, 4 dense of h^2 + h,
    3 adds), a final dense to 1; FlexFlow's measures/transformer128.json at the 128-way split:
    attention 0.301261 + 0.602522 ms, add 0.007168 + 0.0136192, dense 0.146534 + 0.279142, final
    dense 0.0108544 + 0.0468992."""
    w = H.bert()
    per_layer = 3 * (0.301261 + 0.602522) + 3 * (0.007168 + 0.0136192) + 4 * (0.146534 + 0.279142)
    assert (w.forward + w.backward) * 1e3 == pytest.approx(12 * per_layer + 0.0108544 + 0.0468992, rel=1e-12)
    h = 1024
    assert sum(op.params for op in w.ops) == 4 * (12 * (3 * 4 * h * h + 4 * (h * h + h)) + h + 1)
    assert w.batch_per_server == 4 * 16


def test_dlrm_is_the_scripts_model():
    """dlrm128_dc.sh: 64 tables of 1e7 x 128 (an Embed op measured for the whole batch on one device:
    4.30858 + 8.61716 ms, a server's share 1/128), 7 bottom dense layers, top 10240 -> 4096 and 14
    x 4096 -> 4096, out; 128 per GPU."""
    w = H.dlrm()
    tables = [op for op in w.ops if op.name.startswith("embedding")]
    assert len(tables) == 64 and tables[0].params == 1e7 * 128 * 4
    assert tables[0].forward + tables[0].backward == pytest.approx((4.30858 + 8.61716) * 1e-3 / 128)
    assert sum(op.name.startswith("top") for op in w.ops) == 15 and w.batch_per_server == 512
