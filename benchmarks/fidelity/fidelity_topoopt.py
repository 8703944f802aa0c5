"""TopoOpt's headline claim for docs/fidelity.md (interface: benchmarks/fidelity/fidelity.py).

The paper (Wang et al., NSDI 2023) reports TopoOpt up to 3.4x faster than a similar-cost fat-tree.
Ours: the six models as the authors' scripts configure them (coopt.problems.topoopt.workloads, with
FlexFlow's measured operator times), n = 128, d = 4 and 8 ports of 100 Gbit/s, the alternating search
with the authors' TopologyFinder, AllReduce overlapped with the backward pass, against the fat-tree of
the same cost under the two NIC readings of the cost: a NIC per optical port (the MixNet calculator)
and one NIC per server split into its d ports (the prototype's 4 x 25 G NIC).
"""

from __future__ import annotations

import dataclasses

from fidelity import Claim, Ours

from coopt.problems.topoopt import heuristics as H
from coopt.problems.topoopt.model import DEFAULT_PRICES

PAPER = 3.4
N, GBPS, DEGREES = 128, 100, (4, 8)
STEPS_PER_OP = 12


def best_ratio(ports_per_nic: str) -> tuple[float, str]:
    """The largest fat-tree / TopoOpt iteration-time ratio over the models and degrees, and where."""
    best, where = 0.0, ""
    for d in DEGREES:
        prices = dataclasses.replace(DEFAULT_PRICES, ports_per_nic=1 if ports_per_nic == "port" else d)
        rate = H.similar_cost_fattree_gbps(N, d, GBPS, prices)
        for name, workload in H.WORKLOADS.items():
            budget = max(100, STEPS_PER_OP * len(workload.ops))
            topo = H.alternating_search(workload, N, d, GBPS, budget=budget, finder="topoopt_authors")
            fat = H.alternating_search(workload, N, d, GBPS, budget=budget, switch_gbps=rate)
            ratio = fat.iteration_time / topo.iteration_time
            if ratio > best:
                best, where = ratio, f"{name}, d = {d}, fat-tree {rate:.0f} G"
    return best, where


def speedup() -> Ours:
    per_port, where_port = best_ratio("port")
    per_server, where_server = best_ratio("server")
    value = f"{per_port:.2f}x ({where_port}); {per_server:.2f}x with one NIC per server ({where_server})"
    if abs(per_port - PAPER) <= 0.1 * PAPER:
        why = "a NIC per optical port prices the fabrics as the MixNet calculator does"
        return Ours(value, "reproduced", why)
    rates = [H.similar_cost_fattree_gbps(N, 4, GBPS, dataclasses.replace(DEFAULT_PRICES, ports_per_nic=p))
             for p in (1, 4)]
    return Ours(
        value,
        "explained",
        f"the cost equivalence decides it: with a NIC per port a 4 x 100 G TopoOpt buys a {rates[0]:.0f} G "
        f"fat-tree, with one NIC per server only a {rates[1]:.0f} G one, which moves the ratio from "
        f"{per_port:.2f}x to {per_server:.2f}x (docs/topoopt.md has the sweep)",
    )


CLAIMS = [
    Claim(
        topic="topoopt",
        paper="TopoOpt (NSDI 2023)",
        claim="training up to 3.4x faster than a similar-cost fat-tree",
        paper_value="3.4x",
        command="python benchmarks/fidelity/fidelity.py --only topoopt",
        compute=speedup,
    ),
]
