"""The TopoOpt heuristics table (``HEURISTICS``), the warm start of P1 (:func:`warm_start`), and the
library's heuristic-side names in one place (the parallelization search and the fat-tree baseline).

The heuristics live by family:

* :mod:`.authors`: ``topoopt_authors`` and ``topoopt_authors_prefinal``, the released TopologyFinder
  (hipersys-team/FlexFlow ``src/runtime/network.cc``) transcribed with line citations: the paper's
  baseline. Declared for even degrees with an AllReduce group (and, pre-final, a degree split the
  released code accepts), where the released code does not abort.
* :mod:`.finder`: ours. ``topology_finder`` (the paper's degree split as the paper describes it),
  ``rings_only``, ``matching_only``, ``topology_finder_lp`` (every ring/matching split of our
  construction, routed by the optimal LP) and ``guided_swap_search`` (the load-guided link-swap
  search, one routing LP per move).
* :mod:`.swap`: ours, ``link_swap_search``: link swaps screened by the routing LPs' dual cuts
  (:mod:`.screening`), only the promising ones routed.
* :mod:`.expander`: ours, ``expander_search``: low-distance regular graphs (expanders) annealed on
  the demand-weighted hop count, routed by the routing LP (by column generation above 64 servers): the
  candidates for all-to-all and mixed
  traffic, where rings and matchings have long paths.
* :mod:`.rerouted`: ours, ``topology_finder_cg``: ``topology_finder_lp``'s best topology re-routed by
  the column generation of :mod:`.concurrent_flow`, above the size where the routing LP is used.
* :mod:`.fabric`, :mod:`.ecmp`, :mod:`.routing`, :mod:`.concurrent_flow`: rings, matchings, the ECMP
  map with its best ring split, the routing LPs, and the routing by column generation at scale.
* :mod:`.search`, :mod:`.workloads`, :mod:`.cost`: the alternating search over strategies and
  topologies with its iteration-time model, the six models of the paper's simulations with FlexFlow's
  measured compute times, and the similar-cost fat-tree.
* :mod:`.p2`: the outer loop of P2 (TopoOpt's search space, exact).

Every ``HEURISTICS`` entry returns a solution of :mod:`coopt.problems.topoopt` whose
``objective`` is the checker's concurrent-flow rate.
"""

from __future__ import annotations

from coopt.problem import Heuristic, NoSolution, Solution
from coopt.problems.topoopt.authors import (
    prefinal_applies,
    released_applies,
    topoopt_authors,
    topoopt_authors_prefinal,
)
from coopt.problems.topoopt.cost import (
    fattree_cost,
    similar_cost_fattree,
    similar_cost_fattree_gbps,
    tier_at,
    topoopt_cost,
)
from coopt.problems.topoopt.ecmp import EcmpRouting
from coopt.problems.topoopt.expander import expander_search
from coopt.problems.topoopt.fabric import (
    LP_SERVERS,
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
from coopt.problems.topoopt.milp import MAX_P1_SERVERS
from coopt.problems.topoopt.model import Instance
from coopt.problems.topoopt.p2 import solve_p2
from coopt.problems.topoopt.rerouted import applies as rerouted_applies
from coopt.problems.topoopt.rerouted import topology_finder_cg
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
from coopt.problems.topoopt.swap import deep_applies, link_swap_deep, link_swap_search
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
    "topoopt_authors": Heuristic(
        topoopt_authors, applies=released_applies,
        scope="even degrees with an AllReduce group (the released code asserts otherwise)"),
    "topoopt_authors_prefinal": Heuristic(
        topoopt_authors_prefinal, applies=prefinal_applies,
        scope="even degrees with an AllReduce group whose pre-final degree split the released code accepts"),
    "topology_finder_lp": topology_finder_lp,
    "link_swap_search": link_swap_search,
    "link_swap_deep": Heuristic(
        link_swap_deep, applies=deep_applies,
        scope=f"up to {LP_SERVERS} servers (above, link_swap_search's guided search)"),
    "expander_search": expander_search,
    "topology_finder_cg": Heuristic(
        topology_finder_cg, applies=rerouted_applies,
        scope=f"above {LP_SERVERS} servers (below, topology_finder_lp routes by the LP)"),
}

__all__ = [
    "HEURISTICS", "WORKLOADS", "EcmpRouting", "Fabric", "Op", "Workload", "alternating_search", "bert",
    "candle_uno", "circulant_mean_hops", "degrees", "dlrm", "ecmp_flows", "expander_search", "fattree_cost",
    "find_topology", "guided_swap_search", "iteration_time", "link_swap_deep", "link_swap_search",
    "lp_solution", "matching_only", "ncf", "repeated_matching", "resnet50", "ring_shares_on", "rings_only",
    "select_permutations", "similar_cost_fattree", "similar_cost_fattree_gbps", "solve_p2",
    "strategy_traffic", "switch_comm_time", "tier_at", "topoopt_authors", "topoopt_authors_prefinal",
    "topoopt_cost", "topology_finder", "topology_finder_cg", "topology_finder_lp", "vgg16", "warm_start",
    "workload_instance",
]


#: Up to this many servers the warm start runs the link-swap search; above, the LP-routed portfolio
#: alone. The search stops after ``40 + 2 n`` routing LPs, at the port/Moore bound, or after
#: :data:`WARM_SEARCH_SECONDS`, whichever comes first (at n = 28 a routing LP takes 0.05-0.3 s).
WARM_SEARCH_SERVERS = 28
WARM_SEARCH_SECONDS = 20.0


def warm_start(instance: Instance) -> Solution | None:
    """The solution P1 starts from (the problem's warm start, run by the runner): ``link_swap_search``
    with ``40 + 2 n`` routing LPs and no early stop before them (it restarts from every swap-local
    optimum; at most :data:`WARM_SEARCH_SECONDS`) up to :data:`WARM_SEARCH_SERVERS` servers,
    ``topology_finder_lp`` above; None where neither finds a solution, or where P1 is not built
    (more than ``MAX_P1_SERVERS`` servers). Only the start depends on the time cap, never the
    optimum."""
    if instance.servers > MAX_P1_SERVERS:
        return None
    try:
        if instance.servers <= WARM_SEARCH_SERVERS:
            budget = 40 + 2 * instance.servers
            return link_swap_search(instance, max_evaluations=budget, patience=budget, kicks=budget,
                                    time_limit=WARM_SEARCH_SECONDS)
        return topology_finder_lp(instance)
    except NoSolution:
        return None
