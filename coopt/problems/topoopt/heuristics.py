"""TopoOpt heuristics, the authors' TopologyFinder, the parallelization search and the fat-tree baseline.

* :mod:`.authors`: ``topoopt_authors`` and ``topoopt_authors_prefinal``, the released TopologyFinder
  (hipersys-team/FlexFlow ``src/runtime/network.cc``) transcribed with line citations: the paper's
  baseline.
* :mod:`.finder`: ours. ``topology_finder`` (the paper's degree split as the paper describes it),
  ``rings_only``, ``matching_only``, ``topology_finder_lp`` (every ring/matching split of our
  construction, routed by the optimal LP) and ``guided_swap_search`` (the load-guided link-swap
  search, one routing LP per move).
* :mod:`.swap`: ours, ``link_swap_search``: link swaps screened by the routing LPs' dual cuts, only
  the promising ones routed.
* :mod:`.fabric`: rings, matchings and routing (ECMP as a linear map, the routing LP).
* :mod:`.search`, :mod:`.workloads`, :mod:`.cost`: the alternating search over strategies and
  topologies with its iteration-time model, the six models of the paper's simulations with FlexFlow's
  measured compute times, and the similar-cost fat-tree.
* :mod:`.p2`: the outer loop of P2 (TopoOpt's search space, exact).

Every ``HEURISTICS`` entry returns a solution of :mod:`coopt.problems.topoopt` whose
``objective`` is the checker's concurrent-flow rate.
"""

from __future__ import annotations

from coopt.problems.topoopt.authors import topoopt_authors, topoopt_authors_prefinal
from coopt.problems.topoopt.cost import (
    fattree_cost,
    similar_cost_fattree,
    similar_cost_fattree_gbps,
    tier_at,
    topoopt_cost,
)
from coopt.problems.topoopt.fabric import (
    EcmpRouting,
    circulant_mean_hops,
    ecmp_flows,
    lp_solution,
    repeated_matching,
    select_permutations,
)
from coopt.problems.topoopt.finder import (
    find_topology,
    guided_swap_search,
    matching_only,
    rings_only,
    topology_finder,
    topology_finder_lp,
)
from coopt.problems.topoopt.p2 import solve_p2
from coopt.problems.topoopt.search import (
    Fabric,
    alternating_search,
    degrees,
    iteration_time,
    ring_shares_on,
    strategy_traffic,
    switch_comm_time,
    workload_instance,
)
from coopt.problems.topoopt.swap import link_swap_search
from coopt.problems.topoopt.workloads import (
    WORKLOADS,
    Op,
    Workload,
    bert,
    candle_uno,
    dlrm,
    ncf,
    resnet50,
    vgg16,
)

HEURISTICS = {
    "topology_finder": topology_finder,
    "rings_only": rings_only,
    "matching_only": matching_only,
    "topoopt_authors": topoopt_authors,
    "topoopt_authors_prefinal": topoopt_authors_prefinal,
    "topology_finder_lp": topology_finder_lp,
    "link_swap_search": link_swap_search,
}

__all__ = [
    "HEURISTICS", "WORKLOADS", "EcmpRouting", "Fabric", "Op", "Workload", "alternating_search", "bert",
    "candle_uno", "circulant_mean_hops", "degrees", "dlrm", "ecmp_flows", "fattree_cost",
    "find_topology", "guided_swap_search", "iteration_time", "link_swap_search", "lp_solution",
    "matching_only", "ncf", "repeated_matching", "resnet50", "ring_shares_on", "rings_only",
    "select_permutations", "similar_cost_fattree", "similar_cost_fattree_gbps", "solve_p2",
    "strategy_traffic", "switch_comm_time", "tier_at", "topoopt_authors", "topoopt_authors_prefinal",
    "topoopt_cost", "topology_finder", "topology_finder_lp", "vgg16", "workload_instance",
]
