"""TopoOpt: a degree-d direct-connect topology, its routing and the AllReduce ring layout.

Source: W. Wang, M. Khazraee, Z. Zhong, M. Ghobadi, Z. Jia, D. Mudigere, Y. Zhang, A. Kewitsch,
"TopoOpt: Co-optimizing Network Topology and Parallelization Strategy for Distributed Training
Jobs", NSDI 2023 (arXiv 2202.00433); research notes section 1.

Layout: the data model, the checker and the generator are in :mod:`.model`; the registered exact
model P1 (topology + routing + ring split) in :mod:`.milp`; the paper's restricted search space P2
(stride rings + matchings) in :mod:`.rings_milp`; the b-matching P3 in :mod:`.matching`; the stride
selection P4 in :mod:`.strides`; the heuristics, the P2 outer loop (``solve_p2``), the
parallelization search and the fat-tree baseline in :mod:`coopt.solvers.topoopt`; the closed forms in
:mod:`coopt.analysis.bounds.topoopt`.

The related models of the paper's search space are library functions:

* P2 ``rings_milp.build_p2`` / ``coopt.solvers.topoopt.solve_p2``: TopoOpt's own search space
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

from coopt.formulations.topoopt.milp import build, extract
from coopt.formulations.topoopt.model import check, dump, generate, load, objective
from coopt.problem import HeuristicsOf, Problem

PROBLEM = Problem(
    name="topoopt",
    summary="degree-d direct-connect topology, routing and AllReduce ring split (max concurrent flow)",
    source="Wang et al., TopoOpt, NSDI 2023 (arXiv 2202.00433)",
    sense="max",
    load=load,
    dump=dump,
    check=check,
    objective=objective,
    generate=generate,
    build=build,
    extract=extract,
    heuristics=HeuristicsOf("coopt.solvers.topoopt"),
    sizes=(1, 2, 3),
    size_doc="n = 2 size + 4 servers",
)
