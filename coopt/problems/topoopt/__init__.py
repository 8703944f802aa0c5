"""TopoOpt: a degree-d direct-connect topology, its routing and the AllReduce ring layout.

Source: W. Wang, M. Khazraee, Z. Zhong, M. Ghobadi, Z. Jia, D. Mudigere, Y. Zhang, A. Kewitsch,
"TopoOpt: Co-optimizing Network Topology and Parallelization Strategy for Distributed Training
Jobs", NSDI 2023 (arXiv 2202.00433); research notes section 1; the authors' TopologyFinder and
simulator, hipersys-team/FlexFlow at b1526834 (``src/runtime/network.cc``, class ``SpMulMat``).

Layout: the data model, the declared fields, the checker and the generator are in :mod:`.model`;
the registered exact model P1 (topology + routing + ring split) in :mod:`.milp`, built cold or from
the incumbent the runner hands in (the warm start :func:`.heuristics.warm_start`); the routing LP
on fixed links and P1's LP relaxation in matrix form in :mod:`.routing`; the dual bounds in
:mod:`.bound`; the brute force (the oracle) in :mod:`.brute`; the paper's restricted search space
P2 (stride rings + matchings) in :mod:`.rings_milp` (outer loop :mod:`.p2`); the b-matching P3 in
:mod:`.matching`; the stride selection P4 in :mod:`.strides`; the heuristics table in
:mod:`.heuristics`, the heuristics by family in :mod:`.authors` (the authors' TopologyFinder),
:mod:`.finder` and :mod:`.swap` (ours), on the building blocks of :mod:`.fabric`, :mod:`.ecmp` and
:mod:`.screening`; the parallelization search and the fat-tree baseline in :mod:`.search`,
:mod:`.workloads` and :mod:`.cost`; the closed forms in :mod:`.closed_forms`.

What was reconstructed: the paper states no single model. P1 is the notes' proposal with the ring
split as a decision (so every heuristic's multi-ring AllReduce lies inside its space), and
``link_symmetry`` (default symmetric, the authors' duplex fabric) is ours; see :mod:`.model`.

The related models of the paper's search space are library functions:

* P2 ``rings_milp.build_p2`` / ``coopt.problems.topoopt.heuristics.solve_p2``: TopoOpt's own search space
  (stride rings from the totient candidates plus matching links, AllReduce split evenly over
  ``r`` rings) as a minimum-time MILP, the capacity x time product linearised exactly (binary
  expansion + McCormick); ``r`` in an outer loop.
* P3 ``matching.build_bmatching``: b-matching with diminishing returns, the exact counterpart of the
  repeated max-weight matching (marginal value of the ``c``-th link between ``i, j`` is
  ``(M_ij + M_ji) / c``).
* P4 ``strides.select_strides_exact``: choose ``d`` strides from ``C_n`` minimising the demand-weighted
  mean circulant hop count; exact by enumeration over ``C(phi(n), d)`` subsets.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields, model_fields
from coopt.problems.topoopt import brute, heuristics, milp, model, plot
from coopt.problems.topoopt.bound import dual_bound
from coopt.problems.topoopt.model import MAX_SIZE

PROBLEM = Problem(
    name="topoopt",
    summary="degree-d direct-connect topology, routing and AllReduce ring split (max concurrent flow)",
    source="Wang et al., TopoOpt, NSDI 2023 (arXiv 2202.00433)",
    sense="max",
    **model_fields(model),
    **exact_fields(milp),
    warm_start=heuristics.warm_start,
    heuristics=heuristics.HEURISTICS,
    sizes=(1, 2, 3),
    max_size=MAX_SIZE,
    size_doc="n = 2 size + 4 servers",
    showcase="0-exact-n6-d2.toml",
    objective_name="communication rate theta",
    objective_unit="iterations/s",
    bound=dual_bound,
    oracle=Oracle(generate=brute.tiny, solve=brute.solve),
    plot=plot.draw,
)
