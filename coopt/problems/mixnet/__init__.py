"""MixNet: regional optical circuits for the expert all-to-all of MoE training.

Source: Liao, Sun, Tian, Wan, Jin, Wang, Ren, Huang, Li, Tse, Zhong, Liu, Zhang, Ye, Zhang, Chen,
"MixNet: A Runtime Reconfigurable Optical-Electrical Fabric for Distributed Mixture-of-Experts
Training", ACM SIGCOMM 2025 (arXiv 2501.03905; v1/v2 titled mFabric). Only the abstract and the
authors' public code could be read: the simulator fork Gabriel-Yoon/mixnet-htsim (the greedy, the
measured expert traffic matrices), mixnet-project/mixnet-project.github.io (the cost calculator and
its normalized iteration times) and mixnet-project/mixnet-sim (the Mixtral-8x22B set-up). The
formulations are the research notes' proposals (``research-topoopt-mixnet-configtuner.md``
section 2), made precise here.

Each server has ``N`` NICs; ``alpha`` of them are ports of its region's optical circuit switch,
the rest reach an electrical packet-switched fabric. Before an MoE layer's all-to-all the region's
controller sets the circuits from the layer's traffic matrix; pairs with circuits talk over them,
the rest over the electrical fabric.

Two problems, one package:

* ``mixnet`` (:mod:`.model`, :mod:`.milp`, exactly by region in :mod:`.exact`, heuristics in
  :mod:`.circuits`): M1, the circuits of one layer. Integer circuits per
  server pair inside a region, at most ``alpha`` per server, OCS and EPS rates per ordered pair,
  hose-model EPS; maximise the concurrent throughput ``theta`` (the all-to-all takes
  ``1 / theta``). Several regions, and several traffic matrices per region, give the worst case:
  the slowest region, and the robust allocation over scenario matrices (beyond the paper) is
  the same model with more than one matrix, so it is not a problem of its own.
* ``mixnet_plan`` (:mod:`.plan_model`, :mod:`.plan_milp`, the exact DP in :mod:`.plan_exact`,
  heuristics in :mod:`.plan_heuristics` and the exact polish in :mod:`.plan_polish`, the dual
  bound in :mod:`.plan_bound`): the cross-layer
  reconfiguration plan. The layers of one iteration in order, a reconfiguration delay and the
  compute that hides part of it: where to re-plan and which circuits each stretch of layers
  keeps, minimising the iteration's all-to-all time plus the exposed reconfiguration. It reads
  M1's fabric and evaluates M1's closed-form throughput layer by layer.

They are separate registered problems because they have different decisions, objectives and
checkers (circuits and a throughput; segments and a time), and both deserve the contract suite,
the bench and the oracle; a library function would have had none of these.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields, model_fields
from coopt.problems.mixnet import (
    brute,
    circuits,
    exact,
    milp,
    model,
    plan_bound,
    plan_exact,
    plan_heuristics,
    plan_milp,
    plan_polish,
    plan_search,
)
from coopt.problems.mixnet import plan_model as plan
from coopt.problems.mixnet import plot as drawing

PROBLEM = Problem(
    name="mixnet",
    summary="Regional optical circuits for an MoE all-to-all (max worst-case concurrent throughput)",
    source="Liao et al., MixNet, SIGCOMM 2025 (arXiv 2501.03905); M1 of the research notes, s. 2(b)",
    sense="max",
    **model_fields(model),
    **exact_fields(milp),
    warm_start=circuits.fill_and_swap,
    heuristics=circuits.HEURISTICS,
    exact=exact.exact,
    sizes=(1, 2, 3),
    max_size=model.MAX_SIZE,
    size_doc="regions (4 to 16 servers each)",
    objective_name="worst-case all-to-all throughput (1 / all-to-all time)",
    objective_unit="1/s",
    bound=exact.optimum_or_lp,
    oracle=Oracle(generate=model.generate_tiny, solve=brute.optimum),
    showcase="0-sample-8x8-alpha6.toml",
    plot=drawing.draw,
)

PLAN = Problem(
    name="mixnet_plan",
    summary="Where to reconfigure a region's circuits across an iteration's MoE layers (min time)",
    source="Liao et al., MixNet, SIGCOMM 2025 (arXiv 2501.03905); cross-layer reconfiguration plan (ours)",
    sense="min",
    **model_fields(plan),
    **exact_fields(plan_milp),
    warm_start=plan_heuristics.segment_dp,
    heuristics={**plan_heuristics.HEURISTICS, "segment_dp_exact": plan_polish.segment_dp_exact,
                "segment_pool": plan_search.segment_pool},
    exact=plan_exact.exact,
    sizes=(1, 2, 3),
    max_size=plan.MAX_SIZE,
    size_doc="MoE layers (forward then backward: 2 x size plan layers) on 4 to 8 servers",
    objective_name="all-to-all plus exposed reconfiguration time per iteration",
    objective_unit="s",
    bound=plan_bound.segment_bound,
    oracle=Oracle(generate=plan.generate_tiny, solve=brute.plan_optimum),
    showcase="0-moe-2layers-4servers-25ms.toml",
    plot=drawing.draw_plan,
)

PROBLEMS = (PROBLEM, PLAN)
