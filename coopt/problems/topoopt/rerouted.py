"""``topology_finder_cg``: the best topology of :func:`.finder.topology_finder_lp`'s portfolio,
re-routed by column generation at the sizes where that heuristic prices its candidates by ECMP.

Why: above ``LP_SERVERS`` servers ``topology_finder_lp`` routes each construction by ECMP (with the
LP-best ring split), because the routing LP is too slow there; ECMP splits every pair's bytes
evenly over its shortest paths, and on the large tier's mixed traffic (a heavy ring AllReduce plus
all-to-all exchanges) it leaves much of the topology's capacity unused. The column generation of
:mod:`.concurrent_flow` routes the same links close to their best routing in seconds.

Guarantee: never below ``topology_finder_lp`` (its solution is returned when the re-routing is not
better), a checker-feasible ``d``-regular topology; no optimality claim. Declared above
``LP_SERVERS`` servers (below, ``topology_finder_lp`` already routes optimally). Cost:
``topology_finder_lp`` plus at most :data:`ROUTING_SECONDS` of column generation. Deterministic
up to that wall-clock guard. Source: ours.
"""

from __future__ import annotations

import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.concurrent_flow import route
from coopt.problems.topoopt.fabric import LP_SERVERS
from coopt.problems.topoopt.finder import topology_finder_lp
from coopt.problems.topoopt.model import Instance

#: Wall-clock budget of the column generation, seconds (the large tier's n = 128 files converge to
#: 1-15 % of their graph bound in it on the loaded 2-core bench machine).
ROUTING_SECONDS = 30.0


def applies(instance: Instance) -> bool:
    """Where :func:`topology_finder_cg` is declared: above ``LP_SERVERS`` servers."""
    return instance.servers > LP_SERVERS


def topology_finder_cg(instance: Instance, seed: int = 0, time_limit: float = ROUTING_SECONDS) -> Solution:
    """``topology_finder_lp``'s solution, its links re-routed by column generation; the better of the
    two (module docstring)."""
    start = topology_finder_lp(instance, seed)
    try:
        rerouted = route(instance, np.array(start["links"]), time_limit=time_limit).solution
    except NoSolution:  # the column generation found no usable split: keep the ECMP routing
        return start
    return rerouted if rerouted["objective"] > start["objective"] else start
