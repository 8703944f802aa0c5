"""The exact MILP of the ``scope`` problem (symbols as in :mod:`coopt.problems.scope`).

Segment-by-count MILP. Candidates: segments ``s = [i..j]`` that can hold their weights and fit
DRAM (``segment_candidate``), cluster counts ``k = 1..min(M, |s|)``, clusters ``c = [ci..cj]``
(``|c| <= Lambda``) with the Pareto front of their options ``(a, p)`` (busy time ``beta_{c,a} =
max(t_comp, t_nop)`` strictly decreasing in ``a``, SRAM-feasible). The stage time of ``c`` in
``s`` is ``tau_{s,c,a} = beta_{c,a} + t_cut(c) [cj != j]``. Variables: ``z_{s,k}`` binary (segment
``s`` runs with exactly ``k`` clusters), ``x_{c,a}`` binary (cluster ``c`` runs on ``a``
chiplets), ``w_{s,k,c,a} in [0, 1]`` (it does so inside ``(s, k)``), ``theta_{s,k} >= 0`` (the
bottleneck of ``(s, k)``, 0 when unused)::

    min  sum_{s,k} (b + k - 1) theta_{s,k} + (load_s + spill_s) z_{s,k}
    s.t. sum_{s ni l} sum_k z_{s,k} = 1                       for every layer l      (segments cover)
         sum_{c ni l, c in s} sum_a w_{s,k,c,a} = z_{s,k}     for every (s, k), l in s (clusters tile s)
         sum_{c,a} w_{s,k,c,a} = k z_{s,k}                    (exactly k clusters)
         sum_{c,a} a w_{s,k,c,a} <= M z_{s,k}                 (chiplet budget)
         sum_{s,k} w_{s,k,c,a} = x_{c,a}                      (one option per cluster, one home)
         sum_{c ni l} sum_a x_{c,a} = 1                       for every layer l      (implied; kept)
         theta_{s,k} >= sum_a tau_{s,c,a} w_{s,k,c,a}         for every (s, k), c in s (min-max)
         theta_{s,k} >= tau_{s,c,a} w_{s,k,c,a}               for every option (implied; see build)
         M theta_{s,k} >= sum_{c,a} a tau_{s,c,a} w_{s,k,c,a}  (area: valid, tightens the LP)

Why this form. The pipeline term ``(b + k_s - 1) tau_s`` multiplies the cluster count with the
bottleneck; indexing the segment by its count makes it linear with no big-M (the interval MILP
before it linearised one ``tau_s`` per cluster with ``tau_s - taubar_s (1 - placed)``, whose LP
was 60-97 % of the optimum and whose big-M let HiGHS report optima 1e-6 below the true value;
docs/notes/scope.md has the before/after table). With ``z`` and ``x`` binary, ``w`` is integral: a
chosen cluster lies in exactly one chosen segment, whose one ``k`` carries it. ``theta_{s,k}`` is
then the largest stage time of ``s``'s clusters, ``(b + k - 1) theta + load + spill`` is ``T_s``.

Restrictions of the search, each with the proof that it loses nothing:

* Pareto fronts: an option dominated by one with no more chiplets and no larger busy time is never
  needed, since idle chiplets are allowed and SRAM feasibility is per option.
* Counting: in ``(s, k)`` a cluster is at most ``|s| - k + 1`` long and leaves room for the other
  ``k - 1`` clusters: at least ``ceil(left / Lambda) + ceil(right / Lambda)`` of them cover the
  layers on its two sides, and each needs at least the fewest chiplets any cluster of ``s`` can
  run on; ``k = 1`` means the segment is one cluster.
* Incumbent bound (only with ``incumbent``, a checker-accepted mapping of value ``U``): a
  ``(s, k)`` or an option is dropped when every mapping using it costs more than ``U``. A mapping
  using ``(s, k, c, a)`` costs at least ``(b + k - 1) max(tau_{s,c,a}, lo_s) + load_s + spill_s``
  plus the least cost of covering the layers outside ``s``, where ``lo_s`` (:func:`bottleneck_floor`)
  bounds every bottleneck of ``s`` from below and the outside cost is a shortest path over the
  segments' floors (:func:`segment_floor`). The optimum costs at most ``U``, so none of its
  choices is dropped. The incumbent only bounds the search: it is not handed to HiGHS as a start
  (one such start once led HiGHS 1.16 to claim a false optimum; ``tests/test_scope.py``).

The checker judges exactly this problem; each model row has its counterpart there and back:

    model row                                           checker violation
    z, x over candidate segments / clusters only         layer_cover (contiguous, every layer),
                                                         cluster_length, partition, chiplets
    segments cover; clusters tile s                      layer_cover
    SRAM screen of the options                           sram (same ``sram_need``, no tolerance)
    segment_candidate: DRAM need of the segment          dram (same ``segment_dram_need``)
    chiplet budget                                       chiplet_budget
    objective (b + k - 1) theta + load + spill           objective (the claim against
                                                         ``evaluate``, relative 1e-6)

:func:`build_segment` is the notes' single-segment MILP with a fixed cluster count (the k-sweep
step); tests check it against the inner DP for every ``k``.
"""

from __future__ import annotations

import math

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.scope.model import (
    Instance,
    cluster_options,
    cut_time,
    make_solution,
    segment_candidate,
    segment_overhead,
    segment_weight_bytes,
)


def _time_unit(inst: Instance) -> float:
    """Ideal batch compute time b * sum MAC / (M R): the model's objective unit."""
    return inst.batch * sum(layer.macs for layer in inst.layers) / (inst.chiplets * inst.mac_rate)


#: theta and the stage times in its rows are in units of ideal per-sample compute / STAGE_SCALE:
#: bottlenecks are then hundreds to thousands of units, so HiGHS' absolute primal feasibility
#: tolerance (1e-7 on a row) is 1e-10 of a stage and cannot shave the objective measurably.
STAGE_SCALE = 1e3


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


# -- lower bounds (pruning, and the problem's dual bound) ------------------------------------------


def bottleneck_floor(inst: Instance, first: int, last: int) -> float:
    """A lower bound on the bottleneck of every clustering of the segment [first..last] (seconds
    per sample): the area bound sum MAC / (M R) (a cluster on ``a`` chiplets is busy at least its
    MACs / (a R), and the clusters share M chiplets), and the least compute time of its heaviest
    layer on all M chiplets (its cluster is busy at least that long)."""
    layers = inst.layers[first:last + 1]
    area = sum(layer.macs for layer in layers) / (inst.chiplets * inst.mac_rate)
    heaviest = 0.0
    for layer in layers:
        least = min(
            layer.macs * math.ceil(extent / inst.chiplets) / (extent * inst.mac_rate)
            for extent in (layer.out_channels if p == "IS" else layer.out_rows for p in inst.partitions)
        )
        heaviest = max(heaviest, least)
    return max(area, heaviest)


def segment_floor(inst: Instance, first: int, last: int) -> float:
    """A lower bound on the time T_s of the segment [first..last] under any clustering: at least
    ceil(|s| / Lambda) clusters, each bottleneck above :func:`bottleneck_floor`."""
    clusters = -(-(last - first + 1) // inst.max_cluster_layers)
    return ((inst.batch + clusters - 1) * bottleneck_floor(inst, first, last)
            + segment_overhead(inst, first, last))


def covering_floors(inst: Instance, segments: list[tuple[int, int]]) -> tuple[list[float], list[float]]:
    """Shortest paths over the segments' floors: ``before[i]`` bounds the cost of layers 0..i-1,
    ``after[j]`` of layers j..L-1 (inf where no candidate segments cover them)."""
    L = inst.n_layers
    floor = {s: segment_floor(inst, *s) for s in segments}
    before = [0.0] + [math.inf] * L
    for j in range(1, L + 1):
        before[j] = min((before[i] + floor[(i, j - 1)] for i in range(j) if (i, j - 1) in floor),
                        default=math.inf)
    after = [math.inf] * L + [0.0]
    for i in range(L - 1, -1, -1):
        after[i] = min((floor[(i, j)] + after[j + 1] for j in range(i, L) if (i, j) in floor),
                       default=math.inf)
    return before, after


# -- the model -------------------------------------------------------------------------------------


def build(inst: Instance, incumbent: Solution | None = None) -> pyo.ConcreteModel:
    """The segment-by-count MILP of the module docstring; with ``incumbent`` (a mapping the
    checker accepts) the search is bounded by its value. It never runs a heuristic itself."""
    unit = _time_unit(inst)
    stage_unit = unit / (inst.batch * STAGE_SCALE)
    options = _cluster_candidates(inst)
    cap = math.inf if incumbent is None else float(incumbent["objective"]) * (1 + 1e-9)
    rows = _option_rows(inst, options, cap, stage_unit)
    return _model(inst, options, rows, unit, stage_unit)


Rows = dict[tuple[int, int, int], list[tuple[int, int, int, float]]]  # (s, k) -> (c, a, tau)


def _option_rows(inst: Instance, options: dict, cap: float, stage_unit: float) -> Rows:
    """The candidate ``(s, k)`` and, for each, its options ``(c, a)`` with their stage times in
    units of ``stage_unit``: those the counting and the incumbent bound (``cap``) keep."""
    L, M, b = inst.n_layers, inst.chiplets, inst.batch
    segments = [(i, j) for i in range(L) for j in range(i, L) if segment_candidate(inst, i, j)]
    before, after = covering_floors(inst, segments)
    rows: Rows = {}
    for i, j in segments:
        inner = [(c, opts) for c, opts in options.items() if i <= c[0] and c[1] <= j]
        if not inner:
            continue
        low, fixed = bottleneck_floor(inst, i, j), segment_overhead(inst, i, j)
        outside = before[i] + after[j + 1]
        fewest = min(opts[0][0] for _, opts in inner)
        for k in range(1, min(M, j - i + 1) + 1):
            if (b + k - 1) * low + fixed + outside > cap:
                continue
            found = _count_rows(inst, (i, j, k), inner, (low, fixed, outside, fewest), cap, stage_unit)
            if found:
                rows[(i, j, k)] = found
    return rows


def _count_rows(inst: Instance, sk: tuple[int, int, int], inner: list,
                floors: tuple[float, float, float, int], cap: float,
                stage_unit: float) -> list[tuple[int, int, int, float]]:
    """The options of ``(s, k)`` (``s = [i..j]``) the counting and the incumbent bound keep;
    ``floors`` holds the segment's bottleneck floor, its fixed cost, the least cost outside it,
    and the fewest chiplets any of its clusters runs on."""
    i, j, k = sk
    low, fixed, outside, fewest = floors
    M, b, lam = inst.chiplets, inst.batch, inst.max_cluster_layers
    found = []
    for (ci, cj), opts in inner:
        if k == 1 and (ci, cj) != (i, j):
            continue
        if cj - ci > j - i - (k - 1) or -(-(ci - i) // lam) - (-(j - cj) // lam) > k - 1:
            continue
        cut = cut_time(inst, cj) if cj != j else 0.0
        for a, _, busy in opts:
            tau = busy + cut
            if a <= M - (k - 1) * fewest and (b + k - 1) * max(tau, low) + fixed + outside <= cap:
                found.append((ci, cj, a, tau / stage_unit))
    return found


def _model(inst: Instance, options: dict, rows: Rows, unit: float, stage_unit: float) -> pyo.ConcreteModel:
    """The Pyomo model over the kept rows."""
    L, M, b = inst.n_layers, inst.chiplets, inst.batch
    m = pyo.ConcreteModel(name="scope")
    m.objective_unit = unit
    m.options = options
    keys = sorted(rows)
    m.SK = pyo.Set(initialize=keys, dimen=3)
    m.W = pyo.Set(initialize=[(*sk, ci, cj, a) for sk in keys for ci, cj, a, _ in rows[sk]], dimen=6)
    m.X = pyo.Set(initialize=sorted({(ci, cj, a) for sk in keys for ci, cj, a, _ in rows[sk]}), dimen=3)
    m.z = pyo.Var(m.SK, domain=pyo.Binary)
    m.x = pyo.Var(m.X, domain=pyo.Binary)
    m.w = pyo.Var(m.W, bounds=(0, 1))
    m.theta = pyo.Var(m.SK, domain=pyo.NonNegativeReals)
    # a layer no candidate can hold makes the instance infeasible: say so to HiGHS through a slack
    # fixed at 0 in the cover rows, rather than an empty row Pyomo refuses
    m.unplaced = pyo.Var(bounds=(0, 0))

    homes: dict[tuple[int, int, int], list] = {}
    for sk in keys:
        for ci, cj, a, _ in rows[sk]:
            homes.setdefault((ci, cj, a), []).append(m.w[(*sk, ci, cj, a)])
    m.cover = pyo.Constraint(range(L), rule=lambda m, layer: m.unplaced + sum(
        m.z[sk] for sk in keys if sk[0] <= layer <= sk[1]) == 1)
    m.cover_clusters = pyo.Constraint(range(L), rule=lambda m, layer: m.unplaced + sum(
        m.x[c] for c in m.X if c[0] <= layer <= c[1]) == 1)
    m.tile = pyo.Constraint([(*sk, layer) for sk in keys for layer in range(sk[0], sk[1] + 1)],
                            rule=lambda m, i, j, k, layer: sum(
                                m.w[i, j, k, ci, cj, a] for ci, cj, a, _ in rows[(i, j, k)]
                                if ci <= layer <= cj) == m.z[i, j, k])
    m.count = pyo.Constraint(m.SK, rule=lambda m, i, j, k: sum(
        m.w[i, j, k, ci, cj, a] for ci, cj, a, _ in rows[(i, j, k)]) == k * m.z[i, j, k])
    m.budget = pyo.Constraint(m.SK, rule=lambda m, i, j, k: sum(
        a * m.w[i, j, k, ci, cj, a] for ci, cj, a, _ in rows[(i, j, k)]) <= M * m.z[i, j, k])
    m.home = pyo.Constraint(m.X, rule=lambda m, ci, cj, a: sum(homes[(ci, cj, a)]) == m.x[ci, cj, a])
    clusters = sorted({(*sk, ci, cj) for sk in keys for ci, cj, _, _ in rows[sk]})
    stage = {(*sk, ci, cj, a): tau for sk in keys for ci, cj, a, tau in rows[sk]}
    m.bottleneck = pyo.Constraint(clusters, rule=lambda m, i, j, k, ci, cj: m.theta[i, j, k] >= sum(
        tau * m.w[i, j, k, ci, cj, a] for c0, c1, a, tau in rows[(i, j, k)] if (c0, c1) == (ci, cj)))
    # one row per option as well: the summed row above is the stronger in the LP, but a cluster's
    # unchosen options, left a hair below 0 by HiGHS' integrality tolerance, could shave it
    m.stage = pyo.Constraint(m.W, rule=lambda m, *key: m.theta[key[:3]] >= stage[key] * m.w[key])
    m.area = pyo.Constraint(m.SK, rule=lambda m, i, j, k: M * m.theta[i, j, k] >= sum(
        a * tau * m.w[i, j, k, ci, cj, a] for ci, cj, a, tau in rows[(i, j, k)]))
    m.obj = pyo.Objective(
        expr=sum((b + k - 1) * stage_unit / unit * m.theta[i, j, k]
                 + segment_overhead(inst, i, j) / unit * m.z[i, j, k] for i, j, k in keys),
        sense=pyo.minimize)
    return m


def extract(model: pyo.ConcreteModel, inst: Instance) -> Solution:
    picked = {}
    for ci, cj, a in model.X:
        if pyo.value(model.x[ci, cj, a]) > 0.5:
            partition = next(p for aa, p, _ in model.options[(ci, cj)] if aa == a)
            picked[ci] = (ci, cj, a, partition)
    segments = []
    for first, last, _ in sorted(key for key in model.SK if pyo.value(model.z[key]) > 0.5):
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
