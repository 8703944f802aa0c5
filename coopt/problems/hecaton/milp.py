"""The multiple-choice MILP of Hecaton: choose, for every block of an LLM, how to split its
training step over a chiplet package (scheme, mesh r x c, micro-batches, recompute) so that SRAM
and DRAM hold and the iteration time (or energy) is least, re-layouts between differently split
blocks included.

Source: Huang et al., "Hecaton: Training Large Language Models with Scalable Waferscale Chiplet
Systems", arXiv 2407.05784 (the 1D-TP vs 2D AG-RS comparison: 5.29x time, 3.46x energy on
Llama-3.1-405B). Costs come from the closed forms of :mod:`coopt.problems.hecaton.model`;
the model is the multiple-choice MILP of research-chiplet-chase-moesd.md section 1.b.

Sets: blocks l = 1..Lambda in execution order; options o in O_l (SRAM-feasible, dominated ones
removed: see ``candidates``); layouts a (scheme, r, c) with O_la the options of layout a.

Variables: x_lo in {0,1} (block l runs option o); y_laa' in [0,1] the layout flow from block l
(layout a) to block l+1 (layout a'), a = a' included; u_s in {0,1} the scheme used everywhere
(``one_scheme`` only). With z_la = sum_{o in O_la} x_lo:

    min   sum_l sum_o c_lo x_lo + sum_l sum_{a != a'} tau_aa' y_laa'
    s.t.  sum_o x_lo = 1                                          for every block l
          sum_a' y_laa' = z_la,   sum_a y_laa' = z_{l+1}a'        (layout flow, l < Lambda)
          sum_l sum_o m^D_lo x_lo <= D_cap                        (DRAM stash row, bytes per die)
          sum_{o in O_l, scheme(o) = s} x_lo <= u_s,  sum_s u_s = 1   (one scheme everywhere)

c_lo is the option's time max(t^C, t^N, t^D) (full overlap; t^C + t^N + t^D without overlap) or
its energy e_lo + P_static N time_lo; tau the re-layout time or energy. Because x is one-hot per
block, this "collapsed" cost equals the notes' epigraph form t_l >= sum_o t^C_lo x_lo,
t_l >= sum_o t^N_lo x_lo, t_l >= sum_o t^D_lo x_lo, which ``build(..., epigraph=True)`` keeps (a
test checks both give one optimum). The flow rows replace the notes' y >= x + x' - 1: same
integer points, but without the DRAM row the LP is the shortest-path polytope of the layered DP
and is integral: on the 80-block Llama-2-70B instance HiGHS had not finished after several minutes
with y >= x + x' - 1 and now solves it in under one second.

m^S_lo > S_sram screens options out before the build (the SRAM row). The stash row is written in
units of the gcd of its coefficients (integers, so HiGHS' 1e-6 feasibility tolerance cannot
admit an overflow) and the objective is divided by ``objective_unit`` (the sum of the blocks'
cheapest costs), so HiGHS works on O(1) numbers.

The solution lists one option per block: ``{"ops": [{"scheme", "rows", "cols",
"microbatches", "recompute", "regather"}, ...], "objective": ...}``.

The checker (:func:`coopt.problems.hecaton.model.check`) judges exactly this model's problem;
each row has its counterpart there, and each violation its row here:

    model row                                           checker violation
    x_lo defined over the instance's options only        option: scheme in ``schemes``, r c = N,
      (``valid_option``)                                    1d has r = 1, summa r = c, mu in
                                                            ``microbatches``, rho as ``recompute``
                                                            allows, gamma for agrs without rho
    sum_o x_lo = 1                                       option: exactly one readable op per block
    m^S_lo > S_sram screened out before the build        sram
    DRAM stash row (integer bytes, floor(D/N - R))       dram
    one-scheme rows (``one_scheme = true``)              one_scheme
    objective: block costs + tau on the layout flow      objective: the claim against ``total``
      (y is the product of consecutive layout picks)        (relative 1e-6); every number finite

Dominance pruning (``candidates``) is the only restriction of the search that has no checker
counterpart, because it loses nothing: an option enters the objective through its own cost, the
re-layout terms through its layout only, the DRAM row through its stash only and the one-scheme
rows through its scheme (part of the layout); of two options with one layout and one stash, the
cheaper one is at least as good in every solution that uses the other.
"""

from __future__ import annotations

import math
from functools import reduce

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.hecaton.model import (
    Cost,
    Instance,
    Option,
    candidates,
    cost,
    transition,
)


# -- formulation -----------------------------------------------------------------------------
def build(instance: Instance, incumbent: Solution | None = None, epigraph: bool = False) -> pyo.ConcreteModel:
    """The MILP above; ``epigraph`` keeps t_l and its rows instead of the collapsed block costs.

    ``incumbent`` (the runner's warm start) is accepted and not used: without the DRAM row the
    LP is integral, and HiGHS finds its own first incumbent at once; a start could only change
    which of several tied optima is reported."""
    del incumbent
    ffn = instance.model.block_ffn
    table = [candidates(instance, f) for f in ffn]
    costs = [[cost(instance, f, o) for o in row] for f, row in zip(ffn, table, strict=True)]
    floor = [min((c.time_s for c in row), default=1.0) for row in costs]
    m = pyo.ConcreteModel(name="hecaton")
    m.objective_unit = max(sum(min((c.objective for c in row), default=1.0) for row in costs), 1e-30)
    m.time_unit = max(sum(floor) / max(len(floor), 1), 1e-30)
    m.pick = pyo.Set(initialize=[(b, i) for b in range(len(table)) for i in range(len(table[b]))], dimen=2)
    m.x = pyo.Var(m.pick, domain=pyo.Binary)
    m.one_option = pyo.Constraint(
        [b for b in range(len(table)) if table[b]],
        rule=lambda m, b: sum(m.x[b, i] for i in range(len(table[b]))) == 1,
    )
    if not all(table):  # a block without an SRAM-feasible option: state the infeasibility to HiGHS
        m.unplaced = pyo.Var(bounds=(0, 0))
        m.every_block_placed = pyo.Constraint(expr=m.unplaced >= 1)
    pairs = _add_layout_flow(m, table)
    _add_dram_row(m, instance, costs)
    if instance.one_scheme:
        _add_one_scheme(m, instance, table)
    times = _block_times(m, instance, costs, epigraph)
    if instance.objective == "time":
        blocks_cost = sum(times)
    else:
        static = instance.package.static_power * instance.package.dies
        dynamic = sum((costs[b][i].energy_j - static * costs[b][i].time_s) * m.x[b, i] for b, i in m.pick)
        blocks_cost = dynamic + static * sum(times)
    relayout_cost = sum(
        transition(instance, pairs[k][1], pairs[k][2]) * m.y[k]
        for k in m.relayout_index
        if pairs[k][1] != pairs[k][2]
    )
    m.cost = pyo.Objective(expr=(blocks_cost + relayout_cost) / m.objective_unit, sense=pyo.minimize)
    m.table = table
    return m


def _add_layout_flow(m: pyo.ConcreteModel, table: list[tuple[Option, ...]]) -> list[tuple]:
    """The layout flow between consecutive blocks, y[b, a, a2] = z[b, a] z[b+1, a2] (a = a2
    included); returns the (block, layout, next layout) of each y."""
    layouts = [sorted({o.layout for o in row}) for row in table]

    def z(b: int, layout: tuple) -> pyo.Expression:
        return sum(m.x[b, i] for i, o in enumerate(table[b]) if o.layout == layout)

    pairs = [(b, a, a2) for b in range(len(table) - 1) for a in layouts[b] for a2 in layouts[b + 1]]
    m.relayout_index = pyo.Set(initialize=range(len(pairs)))
    m.y = pyo.Var(m.relayout_index, bounds=(0, 1))
    leaving: dict[tuple, list[int]] = {}
    entering: dict[tuple, list[int]] = {}
    for j, (b, a, a2) in enumerate(pairs):
        leaving.setdefault((b, a), []).append(j)
        entering.setdefault((b + 1, a2), []).append(j)
    out_keys, in_keys = list(leaving), list(entering)
    m.flow_out = pyo.Constraint(
        range(len(out_keys)), rule=lambda m, k: sum(m.y[j] for j in leaving[out_keys[k]]) == z(*out_keys[k])
    )
    m.flow_in = pyo.Constraint(
        range(len(in_keys)), rule=lambda m, k: sum(m.y[j] for j in entering[in_keys[k]]) == z(*in_keys[k])
    )
    return pairs


def _add_dram_row(m: pyo.ConcreteModel, instance: Instance, costs: list[list[Cost]]) -> None:
    """The DRAM stash row in units of the gcd of its coefficients, where it can bind."""
    stash = [[c.stash_bytes for c in row] for row in costs]
    quantum = reduce(math.gcd, (s for row in stash for s in row if s > 0), 0) or 1
    m.stash_quantum = quantum
    if stash_total_max(stash) > instance.stash_capacity:
        m.dram = pyo.Constraint(
            expr=sum(stash[b][i] // quantum * m.x[b, i] for b, i in m.pick)
            <= instance.stash_capacity // quantum
        )


def _add_one_scheme(m: pyo.ConcreteModel, instance: Instance, table: list[tuple[Option, ...]]) -> None:
    m.u = pyo.Var(list(instance.schemes), domain=pyo.Binary)
    m.one_scheme_pick = pyo.Constraint(expr=sum(m.u[s] for s in instance.schemes) == 1)
    m.one_scheme = pyo.Constraint(
        [(b, s) for b in range(len(table)) for s in instance.schemes],
        rule=lambda m, b, s: sum(m.x[b, i] for i, o in enumerate(table[b]) if o.scheme == s) <= m.u[s],
    )


def _block_times(
    m: pyo.ConcreteModel, instance: Instance, costs: list[list[Cost]], epigraph: bool
) -> list[pyo.Expression]:
    """Each block's time: the collapsed option cost, or t_l with its epigraph rows."""
    blocks = range(len(costs))
    if not epigraph:
        return [sum(costs[b][i].time_s * m.x[b, i] for i in range(len(costs[b]))) for b in blocks]
    m.t = pyo.Var(blocks, domain=pyo.NonNegativeReals)
    parts = ("compute_s", "nop_s", "dram_s") if instance.overlap == "full" else ("time_s",)
    m.epigraph = pyo.Constraint(
        [(b, p) for b in blocks for p in range(len(parts))],
        rule=lambda m, b, p: m.t[b]
        >= sum(getattr(costs[b][i], parts[p]) / m.time_unit * m.x[b, i] for i in range(len(costs[b]))),
    )
    return [m.time_unit * m.t[b] for b in blocks]


def stash_total_max(stash: list[list[int]]) -> int:
    """The largest stash any choice can reach: the DRAM row is only built when it can bind."""
    return sum(max(row, default=0) for row in stash)


# -- extraction ------------------------------------------------------------------------------
def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    chosen: list[Option] = []
    for b, row in enumerate(model.table):
        values = [pyo.value(model.x[b, i]) for i in range(len(row))]
        chosen.append(row[max(range(len(row)), key=lambda i: values[i])])
    return {"ops": [o.to_json() for o in chosen]}
