"""Scope: merged-pipeline mapping of a CNN layer chain onto a multi-chip module (MCM).

Source: Huang, Jia, Zou, Liu, "Scope: A Scalable Merged Pipeline Framework for Multi-Chip-Module
NN Accelerators", arXiv 2602.14393 (2026). Only the abstract was readable; the cost model below
is the reconstruction of ``research-chiplet-chase-moesd.md`` section 2.b ([R]), made precise
here. Where these notes leave a term open, the choice is stated.

The user: an architect mapping CNN inference (a batch of ``b`` images) onto ``M`` identical
chiplets, each with MAC rate ``R``, SRAM ``S``, a NoP link of bandwidth ``B_l``; the package
has DRAM bandwidth ``B_D`` and DRAM capacity ``D``. Chiplets are numbered in a snake order of
the mesh, so a run of consecutive indices is a connected region and consecutive clusters share
one boundary.

Decisions (all four of Scope's dimensions):

1. **segmentation** of layers ``0..L-1`` into contiguous segments run one after another; each
   segment loads its weights from DRAM once per batch and reads/writes its boundary
   activations from/to DRAM;
2. **clustering** of each segment into contiguous clusters of at most ``Lambda`` layers
   (``max_cluster_layers``); the clusters of a segment form a pipeline over the batch;
3. **allocation** of ``a_c >= 1`` chiplets to each cluster, ``sum_c a_c <= M`` per segment;
4. **partition** ``p_c`` of each cluster: ``IS`` (input-shared: output channels split over the
   ``a`` chiplets, every chiplet sees the whole input) or ``WS`` (weight-shared: output rows
   split, every chiplet holds all the cluster's weights).

Cost model, per sample (layer ``l`` has ``MAC_l``, weights ``W_l``, input ``I_l``, output
``O_l``, shortcut bytes ``K_l`` alive across a cut right after ``l``, ``C_l`` output channels,
``H_l`` output rows, halo bytes ``h_l``)::

    t_comp(c,a,IS) = sum_l MAC_l * ceil(C_l/a) / (C_l R)      (fragmentation of the channel split)
    t_comp(c,a,WS) = sum_l MAC_l * ceil(H_l/a) / (H_l R)      (fragmentation of the row split)
    t_nop(c,a,IS)  = (a-1)/a * sum_{l in c, l != first} I_l / B_l   (all-gather of inner inputs)
    t_nop(c,a,WS)  = [a > 1] * sum_{l in c} h_l / B_l              (halo exchange)
    t_cut(c)       = (O_last + K_last) / B_l   if c is not the last cluster of its segment, else 0
    tau(c,a,p)     = max(t_comp, t_nop) + t_cut(c)

SRAM per chiplet (must be ``<= S``), with ``f = ceil(C_l/a)/C_l`` (IS) or ``ceil(H_l/a)/H_l`` (WS)::

    IS: sum_l W_l f_l + max_l (I_l + (O_l + K_l) f_l)
    WS: sum_l W_l     + max_l ((I_l + O_l + K_l) f_l + [a > 1] h_l)

A segment ``s = [i..j]`` with ``k`` clusters and bottleneck ``tau_s = max_c tau_c`` takes::

    T_s = (b + k - 1) tau_s + sum_{l in s} W_l / B_D + b (I_i + K_{i-1} + O_j + K_j) / B_D

(pipeline fill and drain, weight load, boundary spill), and needs DRAM
``sum_l W_l + b (I_i + K_{i-1} + O_j + K_j) <= D`` (all weights plus the spilled activations of
the running segment). The objective is the batch time ``sum_s T_s`` in seconds (minimise);
throughput is ``b / sum_s T_s``.

Exact methods. ``exact`` is the dynamic program of :func:`.dp.dynamic_program` (segments x
clusters x chiplet counts x partitions). ``milp`` is the segment-by-count MILP of :mod:`.milp`
(the registered ``build``), bounded by the value of the ``search`` heuristic, the problem's
``warm_start`` that the runner runs, checks and hands in; without it the model is unpruned. The
single-segment MILP with a fixed cluster count (:func:`.milp.build_segment`, the notes' k-sweep)
is tested against the DP per segment and per ``k``. ``bound`` (:func:`.bound.optimum_or_relaxation`) is a
dual bound at any size: the DP's optimum where the DP ends within the time limit, else the
relaxation :func:`.bound.bound`; the oracle is the full enumeration of :mod:`.brute`.

Layout: the declared fields, data model, cost model and checker are in :mod:`.model`, the
workloads (ResNet chains, synthetic chains) in :mod:`.workloads`, the memoised Pareto fronts in
:mod:`.fronts`, the DP in :mod:`.dp`, the heuristics in :mod:`.heuristics`, the MILP in
:mod:`.milp`, the dual bound in :mod:`.bound`, the enumeration in :mod:`.brute`.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields, model_fields
from coopt.problems.scope import bound, brute, dp, heuristics, milp, model, plot

PROBLEM = Problem(
    name="scope",
    summary="Merged-pipeline mapping of a CNN layer chain onto a multi-chip module (min batch time)",
    source="Huang, Jia, Zou, Liu, Scope, arXiv 2602.14393 (2026); cost model reconstructed [R]",
    sense="min",
    **model_fields(model),
    **exact_fields(milp),
    heuristics=heuristics.HEURISTICS,
    warm_start=heuristics.search,
    exact=dp.exact,
    sizes=(1, 2, 4),
    max_size=model.MAX_SIZE,
    size_doc="layers = 2 + 2*size, chiplets = min(64, 2 + 2*size)",
    objective_name="batch time",
    objective_unit="s",
    oracle=Oracle(generate=brute.tiny, solve=brute.solve),
    bound=bound.optimum_or_relaxation,
    plot=plot.draw,
)
