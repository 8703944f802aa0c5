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

Exact methods. ``exact`` is the dynamic program of :func:`coopt.solvers.scope.dynamic_program`
(segments x clusters x chiplet counts x partitions). ``milp`` is the interval MILP below; the
single-segment MILP with a fixed cluster count (:func:`build_segment`, the notes' k-sweep) is
the building block it generalises, and tests check it against the DP per segment and per ``k``.

Interval MILP. Candidates: clusters ``c = [i..j]`` (``j-i+1 <= Lambda``), each with the Pareto
front of its options ``(a, p)`` (busy time ``beta_{c,a} = max(t_comp, t_nop)`` strictly
decreasing in ``a``, SRAM-feasible; a dominated option is never needed because idle chiplets
are allowed); segments ``s = [i..j]`` with ``sum_s W <= M S`` (a valid bound: every cluster
holds its weights in ``a_c S`` bytes) and within DRAM capacity. Variables: ``x_{c,a}`` binary
(cluster ``c`` runs on ``a`` chiplets), ``z_s`` binary (segment ``s`` is used), ``w_{s,c,a} in
[0,1]`` (cluster ``c`` on ``a`` chiplets, placed in segment ``s``), ``tau_s >= 0`` (bottleneck),
``v_{s,c} >= 0`` (the bubble share of cluster ``c``). With ``tau_{s,c,a} = beta_{c,a} +
t_cut(c) [last(c) != last(s)]``::

    min  sum_s (b - 1) tau_s + sum_{s, c in s} v_{s,c} + sum_s (load_s + spill_s) z_s
    s.t. sum_{c ni l} sum_a x_{c,a} = 1                   for every layer l     (exact cover)
         sum_{s ni l} z_s = 1                             for every layer l     (exact cover)
         sum_{s contains c} w_{s,c,a} = x_{c,a},   sum_a w_{s,c,a} <= z_s
         sum_{c in s} sum_a a w_{s,c,a} <= M z_s                                 (chiplet budget)
         tau_s >= sum_a tau_{s,c,a} w_{s,c,a}                  for c in s         (min-max)
         M tau_s >= sum_{c in s} sum_a a tau_{s,c,a} w_{s,c,a}                    (area, valid cut)
         v_{s,c} >= tau_s - taubar_s (1 - sum_a w_{s,c,a})      for c in s         (bubbles)

The pipeline term ``(b + k_s - 1) tau_s`` is split as ``(b - 1) tau_s`` (linear) plus one
``tau_s`` per cluster of ``s`` (``sum_c v_{s,c} = k_s tau_s`` at the optimum), linearised with
``taubar_s``, the largest stage time of a cluster inside ``s``; so the cluster count ``k`` of
the notes' k-sweep is implicit. With ``x, z`` binary, ``w`` is integral (a cluster's home is the
one active segment containing it), so the budget and bottleneck rows carry no big-M. The area
row (a cluster on ``a`` chiplets keeps them busy ``<= tau_s``) only tightens the relaxation.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pyomo.environ as pyo

from coopt.formulations.scope_model import (
    PARTITIONS,
    Instance,
    Layer,
    cluster_options,
    cut_time,
    dump,
    evaluate,
    load,
    make_solution,
    module_instance,
    segment_candidate,
    segment_dram_need,
    segment_overhead,
    segment_weight_bytes,
    sram_need,
)
from coopt.formulations.scope_workloads import resnet, synthetic_chain
from coopt.problem import TOL, Problem, Solution, Violation
from coopt.solvers import scope as solvers


def parse(solution: Solution) -> tuple[list[list[tuple[int, int, int, str]]] | None, list[Violation]]:
    """The mapping in a solution, or the reason it is malformed."""
    segments = solution.get("segments") if isinstance(solution, dict) else None
    if not isinstance(segments, list) or not segments:
        return None, [Violation("solution", "expected 'segments': a non-empty list of cluster lists")]
    out = []
    for s, seg in enumerate(segments):
        if not isinstance(seg, list) or not seg:
            return None, [Violation("solution", f"segments[{s}] is not a non-empty list of clusters")]
        clusters = []
        for c, cl in enumerate(seg):
            where = f"segments[{s}][{c}]"
            if not isinstance(cl, dict):
                return None, [Violation("solution", f"{where} is not a table")]
            values = [cl.get(key) for key in ("first", "last", "chiplets")]
            if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
                return None, [Violation("solution", f"{where} needs integer first, last, chiplets")]
            if not isinstance(cl.get("partition"), str):
                return None, [Violation("solution", f"{where} needs a partition string")]
            clusters.append((*values, cl["partition"]))
        out.append(clusters)
    return out, []


def check(inst: Instance, solution: Solution) -> list[Violation]:
    segments, violations = parse(solution)
    if segments is None:
        return violations
    expected = 0
    for s, clusters in enumerate(segments):
        for c, (first, last, a, p) in enumerate(clusters):
            where = f"segment {s} cluster {c} [{first}..{last}]"
            if first != expected or last < first or last >= inst.n_layers:
                violations.append(Violation(
                    "layer_cover", f"{where}: expected a cluster starting at layer {expected} "
                    f"and ending by layer {inst.n_layers - 1}"))
                return violations
            expected = last + 1
            if last - first + 1 > inst.max_cluster_layers:
                violations.append(Violation(
                    "cluster_length", f"{where}: {last - first + 1} layers > {inst.max_cluster_layers}"))
            if p not in inst.partitions:
                violations.append(Violation("partition", f"{where}: {p!r} not in {inst.partitions}"))
                continue
            if not 1 <= a <= inst.chiplets:
                violations.append(Violation(
                    "chiplets", f"{where}: {a} chiplets, expected 1..{inst.chiplets}"))
                continue
            need = sram_need(inst, first, last, a, p)
            if need > inst.sram_bytes * (1 + TOL):
                violations.append(Violation("sram", f"{where}: needs {need:.0f} B > {inst.sram_bytes:.0f} B"))
        used = sum(a for _, _, a, _ in clusters)
        if used > inst.chiplets:
            violations.append(Violation("chiplet_budget", f"segment {s}: {used} chiplets > {inst.chiplets}"))
        first, last = clusters[0][0], clusters[-1][1]
        need = segment_dram_need(inst, first, last)
        if need > inst.dram_bytes * (1 + TOL):
            violations.append(Violation("dram", f"segment {s}: needs {need:.0f} B > {inst.dram_bytes:.0f} B"))
    if expected != inst.n_layers:
        violations.append(Violation("layer_cover", f"layers {expected}..{inst.n_layers - 1} are not mapped"))
    if violations:
        return violations
    claimed = solution.get("objective")
    if not isinstance(claimed, int | float) or not math.isclose(
            claimed, evaluate(inst, segments), rel_tol=TOL, abs_tol=0.0):
        violations.append(Violation(
            "objective", f"claimed {claimed!r}, recomputed {evaluate(inst, segments)!r} (batch seconds)"))
    return violations


def objective(inst: Instance, solution: Solution) -> float:
    segments, violations = parse(solution)
    if segments is None:
        raise ValueError(str(violations[0]))
    return evaluate(inst, segments)


# -- interval MILP -------------------------------------------------------------------------------


def _time_unit(inst: Instance) -> float:
    """Ideal batch compute time b * sum MAC / (M R): the model's objective unit."""
    return inst.batch * sum(layer.macs for layer in inst.layers) / (inst.chiplets * inst.mac_rate)


def _cluster_candidates(inst: Instance, first: int = 0, last: int | None = None):
    """(first, last) -> Pareto options, for clusters inside [first..last]."""
    last = inst.n_layers - 1 if last is None else last
    out = {}
    for i in range(first, last + 1):
        for j in range(i, min(last, i + inst.max_cluster_layers - 1) + 1):
            if segment_weight_bytes(inst, i, j) > inst.chiplets * inst.sram_bytes:
                break
            options = cluster_options(inst, i, j)
            if options:
                out[(i, j)] = options
    return out


def build(inst: Instance) -> pyo.ConcreteModel:
    """The interval MILP of the module docstring (whole chain: segments, clusters, bubbles)."""
    unit = _time_unit(inst)
    L, M, b = inst.n_layers, inst.chiplets, inst.batch
    options = _cluster_candidates(inst)
    segments = [(i, j) for i in range(L) for j in range(i, L) if segment_candidate(inst, i, j)]
    inner = {s: [c for c in options if s[0] <= c[0] and c[1] <= s[1]] for s in segments}
    homes = {c: [s for s in segments if s[0] <= c[0] and c[1] <= s[1]] for c in options}
    busy = {(i, j, a): t / unit for (i, j), opts in options.items() for a, _, t in opts}

    def stage(s, c, a):
        return busy[c[0], c[1], a] + (cut_time(inst, c[1]) / unit if c[1] != s[1] else 0.0)

    m = pyo.ConcreteModel(name="scope")
    m.objective_unit = unit
    m.options = options
    m.X = pyo.Set(initialize=[(i, j, a) for (i, j), opts in sorted(options.items()) for a, _, _ in opts],
                  dimen=3)
    m.S = pyo.Set(initialize=segments, dimen=2)
    m.SC = pyo.Set(initialize=[(*s, *c) for s in segments for c in inner[s]], dimen=4)
    m.W = pyo.Set(initialize=[(*s, *c, a) for s in segments for c in inner[s] for a, _, _ in options[c]],
                  dimen=5)
    m.x = pyo.Var(m.X, domain=pyo.Binary)
    m.z = pyo.Var(m.S, domain=pyo.Binary)
    m.w = pyo.Var(m.W, bounds=(0, 1))
    m.tau = pyo.Var(m.S, domain=pyo.NonNegativeReals)
    m.bubble = pyo.Var(m.SC, domain=pyo.NonNegativeReals)

    def placed(si, sj, ci, cj):
        return sum(m.w[si, sj, ci, cj, a] for a, _, _ in options[(ci, cj)])

    m.cover_layer = pyo.Constraint(range(L), rule=lambda m, layer: sum(
        m.x[i, j, a] for i, j, a in m.X if i <= layer <= j) == 1)
    m.cover_segment = pyo.Constraint(range(L), rule=lambda m, layer: sum(
        m.z[i, j] for i, j in segments if i <= layer <= j) == 1)
    m.home = pyo.Constraint(m.X, rule=lambda m, i, j, a: sum(
        m.w[si, sj, i, j, a] for si, sj in homes[(i, j)]) == m.x[i, j, a])
    m.inside = pyo.Constraint(m.SC, rule=lambda m, si, sj, ci, cj: placed(si, sj, ci, cj) <= m.z[si, sj])
    m.budget = pyo.Constraint(m.S, rule=lambda m, i, j: sum(
        a * m.w[i, j, c[0], c[1], a] for c in inner[(i, j)] for a, _, _ in options[c]) <= M * m.z[i, j])
    m.bottleneck = pyo.Constraint(m.SC, rule=lambda m, si, sj, ci, cj: m.tau[si, sj] >= sum(
        stage((si, sj), (ci, cj), a) * m.w[si, sj, ci, cj, a] for a, _, _ in options[(ci, cj)]))
    m.area = pyo.Constraint(m.S, rule=lambda m, i, j: M * m.tau[i, j] >= sum(
        a * stage((i, j), c, a) * m.w[i, j, c[0], c[1], a]
        for c in inner[(i, j)] for a, _, _ in options[c]))
    taubar = {s: max([stage(s, c, a) for c in inner[s] for a, _, _ in options[c]], default=0.0)
              for s in segments}
    m.pipeline = pyo.Constraint(m.SC, rule=lambda m, si, sj, ci, cj: m.bubble[si, sj, ci, cj]
                                >= m.tau[si, sj] - taubar[(si, sj)] * (1 - placed(si, sj, ci, cj)))
    m.obj = pyo.Objective(
        expr=sum((b - 1) * m.tau[s] for s in m.S) + sum(m.bubble[sc] for sc in m.SC)
        + sum(segment_overhead(inst, i, j) / unit * m.z[i, j] for i, j in segments),
        sense=pyo.minimize)
    return m


def extract(model: pyo.ConcreteModel, inst: Instance) -> Solution:
    picked = {}
    for i, j, a in model.X:
        if pyo.value(model.x[i, j, a]) > 0.5:
            partition = next(p for aa, p, _ in model.options[(i, j)] if aa == a)
            picked[i] = (i, j, a, partition)
    bounds = sorted((i, j) for i, j in model.S if pyo.value(model.z[i, j]) > 0.5)
    segments = []
    for first, last in bounds:
        clusters, at = [], first
        while at <= last and at in picked:
            clusters.append(picked[at])
            at = picked[at][1] + 1
        segments.append(clusters)
    return make_solution(inst, segments)


def build_segment(inst: Instance, first: int, last: int, clusters: int) -> pyo.ConcreteModel:
    """The single-segment MILP for a fixed cluster count k (the notes' k-sweep step)::

        min tau  s.t.  sum_{c ni l} sum_a x_{c,a} = 1 (l in [first..last]),  sum x = k,
                       sum a x <= M,  tau >= (beta_{c,a} + t_cut(c) [last(c) != last]) x_{c,a}

    ``model.objective_unit`` turns tau back into seconds per sample."""
    unit = _time_unit(inst) / inst.batch
    options = _cluster_candidates(inst, first, last)
    m = pyo.ConcreteModel(name=f"scope_segment_{first}_{last}_k{clusters}")
    m.objective_unit = unit
    m.X = pyo.Set(initialize=[(i, j, a) for (i, j), opts in sorted(options.items()) for a, _, _ in opts],
                  dimen=3)
    m.x = pyo.Var(m.X, domain=pyo.Binary)
    m.tau = pyo.Var(domain=pyo.NonNegativeReals)
    m.cover = pyo.Constraint(range(first, last + 1), rule=lambda m, layer: sum(
        m.x[i, j, a] for i, j, a in m.X if i <= layer <= j) == 1)
    m.count = pyo.Constraint(expr=sum(m.x[ija] for ija in m.X) == clusters)
    m.budget = pyo.Constraint(expr=sum(a * m.x[i, j, a] for i, j, a in m.X) <= inst.chiplets)
    tau = {(i, j, a): (t + (cut_time(inst, j) if j != last else 0.0)) / unit
           for (i, j), opts in options.items() for a, _, t in opts}
    m.bottleneck = pyo.Constraint(m.X, rule=lambda m, i, j, a: m.tau >= tau[i, j, a] * m.x[i, j, a])
    m.obj = pyo.Objective(expr=m.tau, sense=pyo.minimize)
    return m


# -- instances -----------------------------------------------------------------------------------


def generate(seed: int, size: int) -> Instance:
    """A seeded synthetic CNN chain of 2 + 2*size layers on min(64, 2 + 2*size) chiplets.

    SRAM is drawn so that the chain's weights need one to three segments but the largest layer
    fits on the module. Sizes 1-2 enumerate in under a second; size 3 (8 layers, 8 chiplets) can
    reach 10^8-10^9 mappings."""
    rng = random.Random(seed)
    length = 2 + 2 * size
    chiplets = min(64, 2 + 2 * size)
    layers = synthetic_chain(rng, length)
    total = sum(layer.weight_bytes for layer in layers)
    probe = module_instance(layers, chiplets, sram_kib=1e9)
    # The largest single layer must fit on the whole module under some partition.
    floor = max(min(sram_need(probe, i, i, chiplets, p) for p in PARTITIONS) for i in range(length))
    sram = max(total / (chiplets * rng.uniform(0.5, 1.5)), 1.05 * floor)
    return module_instance(
        layers, chiplets,
        mac_rate_gmac_per_s=float(rng.choice((256, 512, 1024))),
        sram_kib=round(sram / 1024.0, 3) + 1.0,
        nop_bandwidth_gb_per_s=float(rng.choice((4, 8, 16, 32))),
        dram_bandwidth_gb_per_s=float(rng.choice((8, 16, 32, 64))),
        batch=rng.choice((1, 8, 32, 64)),
        max_cluster_layers=rng.choice((3, 4, length)),
    )


def resnet_instance(depth: int, chiplets: int, **module: Any) -> Instance:
    """ResNet-``depth`` on an MCM of ``chiplets`` chiplets (see :func:`module_instance`)."""
    return module_instance(resnet(depth), chiplets, **module)


PROBLEM = Problem(
    name="scope",
    summary="Merged-pipeline mapping of a CNN layer chain onto a multi-chip module (min batch time)",
    source="Huang, Jia, Zou, Liu, Scope, arXiv 2602.14393 (2026); cost model reconstructed [R]",
    sense="min",
    load=load,
    dump=dump,
    check=check,
    objective=objective,
    generate=generate,
    build=build,
    extract=extract,
    heuristics=solvers.HEURISTICS,
    exact=solvers.exact,
    sizes=(1, 2, 3),
    size_doc="layers = 2 + 2*size, chiplets = min(64, 2 + 2*size)",
)

__all__ = ["PARTITIONS", "PROBLEM", "Instance", "Layer", "build", "build_segment", "check", "dump",
           "generate", "load", "module_instance", "objective", "resnet_instance"]
