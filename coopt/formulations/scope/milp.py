"""The interval MILP of the ``scope`` problem (symbols as in :mod:`coopt.formulations.scope`).

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

import pyomo.environ as pyo

from coopt.formulations.scope.model import (
    Instance,
    cluster_options,
    cut_time,
    make_solution,
    segment_candidate,
    segment_overhead,
    segment_weight_bytes,
)
from coopt.problem import Solution


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
