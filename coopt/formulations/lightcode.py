"""LightCode: assign every operator of an LLM prefill to a GPU, CPU or photonic tensor unit (PTU)
to minimise energy, serial latency or the makespan of the resulting schedule.

Source: R. Tomich et al., "LightCode: compiling LLM inference for photonic-electronic systems",
arXiv 2509.16443 (2025), and the authors' code (``RyanTomich/LightCode``). The data model, the
Stacked Graph and the cost model are in :mod:`coopt.formulations.lightcode_graph`.

The repo selects realizations with a best-first ("rolling Dijkstra") search and schedules
afterwards; the MILP below is our exact counterpart (the paper's own solver was not verified).

MILP (symbols as in the research notes, section 1(b)), over operators ``v`` in ``V``, devices
``d`` in ``R_v`` (the realization stack of ``v``) and data edges ``(u, v)`` in ``E``:

    x_vd in {0, 1}                       sum_d x_vd = 1                       (one realization)
    y_uv^{dd'} in [0, 1]                 sum_{d'} y_uv^{dd'} = x_ud,  sum_d y_uv^{dd'} = x_vd'
                                         (transportation form: the only feasible y for one-hot x
                                          is the outer product, so y stays continuous)
    Energy  = sum_vd e_vd x_vd + sum_uv sum_dd' eps_uv^{dd'} y_uv^{dd'}
    Latency = sum_vd t_vd x_vd + sum_uv sum_dd' tau_uv^{dd'} y_uv^{dd'}

``objective = "energy"`` minimises Energy, ``"latency_sum"`` minimises Latency (serial execution,
what the repo's path-sum search minimises). ``"makespan"`` minimises ``T`` of a schedule in which
every device runs one operator at a time (an operator's latency is the whole device's time) and an
operator starts once its inputs have arrived:

    S_v >= S_u + p_u + sum_dd' tau_uv^{dd'} y_uv^{dd'}      for (u, v) in E,  p_u = sum_d t_ud x_ud
    T >= S_v + p_v                                          for every v
    T >= sum_v t_vd x_vd                                    for every device d (device load)
    S_v >= S_u + t_ud - M (1 - o_uv) - M (2 - x_ud - x_vd)  } for every pair u || v that no path
    S_u >= S_v + t_vd - M o_uv       - M (2 - x_ud - x_vd)  } orders, and every shared device d

The disjunctions make the model exact. Pairs ordered by a path need none (precedence already
keeps them apart), and transformer graphs are chains of blocks joined at residual adds, so the
incomparable pairs stay inside one block. :func:`makespan_relaxation` drops the disjunctions
(critical path plus device-load bounds), a lower bound for benchmarks. ``M`` is the serial length
of the slowest assignment.

Methods: ``milp`` is the model above on the whole graph. ``exact`` (:func:`exact`) decomposes at
the articulation operators (the residual adds): each segment is solved exactly (the disjunctive
model of one block for the makespan, a frontier DP for the sums) once per distinct segment and
pair of cut devices, and a DP chains them. It solves Llama-2-7B prefill makespan in under a second
where the one-piece MILP keeps a 7% gap after two minutes; with side constraints, which couple the
segments, it hands over to the one-piece MILP.

Side constraints (all optional):
  PTU weight capacity   sum_v b w_v x_v,PTU <= Cap_PTU
  conversion            sum_uv s_uv (y^{d d'} with exactly one photonic end) <= X_max
  energy budget         Energy <= E_max
  power cap             Energy <= P_max * span  (span = T, or Latency for the sum objectives;
                        a schedule may idle to meet it: T is then Energy / P_max)
  uniform blocks        x_vd = x_phi(v)d, phi(v) = the operator with v's role in block 0

Why the authors' transfer model is easy: with ``transfer_model = "sram_hop"`` every hop passes
through SRAM, so ``eps_uv^{dd'} = s_uv (E_out(d) + E_in(d'))`` is a sum of a producer and a consumer
term and energy separates per operator (likewise latency-sum); greedy per operator, with edge
costs attributed to their endpoints, is then optimal. ``"realistic"`` adds a link cost only to
cross-device edges, a Potts-like interaction that makes the problem combinatorial (and, for two
devices, a submodular labeling that a min cut solves: see ``coopt.solvers.lightcode.min_cut``).

Objectives are reported in microjoules (energy) or microseconds (latency), so values are O(1) and
larger; schedule start times in a solution are in seconds.
"""

from __future__ import annotations

import math
import random
from itertools import pairwise
from typing import Any

import pyomo.environ as pyo

from coopt.formulations.lightcode_graph import (
    MICRO,
    Edge,
    Electronic,
    Instance,
    Limits,
    Memory,
    Photonic,
    StackedGraph,
    TransformerModel,
    as_solution,
    dump,
    earliest_starts,
    energy,
    latency_sum,
    load,
    makespan,
    read_assignment,
    side_violations,
    stacked_graph,
)
from coopt.problem import ExactOutcome, Problem, Solution, SolveOptions, Violation
from coopt.solvers.highs import solve_model
from coopt.solvers.lightcode import HEURISTICS, articulation_operators, segment_dp


# ------------------------------------------------------------------------------------------------
# Formulation
# ------------------------------------------------------------------------------------------------
def incomparable_pairs(graph: StackedGraph) -> list[tuple[int, int]]:
    """Pairs (u, v), u < v, with no path between them (they may overlap in time)."""
    n = len(graph.ops)
    ancestors = [0] * n
    for v in range(n):  # operators are in topological order
        for u in graph.preds[v]:
            ancestors[v] |= ancestors[u] | (1 << u)
    return [(u, v) for v in range(n) for u in range(v) if not (ancestors[v] >> u) & 1]


def _units(graph: StackedGraph) -> tuple[float, float]:
    """Reference energy (uJ) and time (us): the cheapest realization of each operator, summed."""
    e = sum(min(r.energy for r in s.values()) for s in graph.stacks) * MICRO
    t = sum(min(r.latency for r in s.values()) for s in graph.stacks) * MICRO
    return max(e, 1e-12), max(t, 1e-12)


def _assignment_model(instance: Instance, graph: StackedGraph) -> tuple[pyo.ConcreteModel, Any, Any]:
    """Assignment binaries, transportation edges, the energy and latency-sum expressions (scaled)."""
    m = pyo.ConcreteModel(name=f"lightcode_{instance.objective}")
    e_unit, t_unit = _units(graph)
    m.energy_unit, m.time_unit = e_unit, t_unit
    free = set(graph.free)
    m.x = pyo.Var([(v, d) for v in sorted(free) for d in sorted(graph.stacks[v])], domain=pyo.Binary)
    m.one_realization = pyo.Constraint(
        sorted(free), rule=lambda m, v: sum(m.x[v, d] for d in graph.stacks[v]) == 1
    )

    def a(v: int, d: str) -> Any:
        if v in free:
            return m.x[v, d]
        return 1 if d in graph.stacks[v] else 0

    m.a = a
    coupled = [k for k, e in enumerate(graph.edges) if e.src in free or e.dst in free]
    m.y = pyo.Var(
        [(k, du, dv) for k in coupled for du, dv in sorted(graph.transfer_energy[k])], bounds=(0, 1)
    )
    m.out_flow = pyo.Constraint(
        [(k, du) for k in coupled for du in sorted(graph.stacks[graph.edges[k].src])],
        rule=lambda m, k, du: (
            sum(m.y[k, du, dv] for dv in graph.stacks[graph.edges[k].dst]) == a(graph.edges[k].src, du)
        ),
    )
    m.in_flow = pyo.Constraint(
        [(k, dv) for k in coupled for dv in sorted(graph.stacks[graph.edges[k].dst])],
        rule=lambda m, k, dv: (
            sum(m.y[k, du, dv] for du in graph.stacks[graph.edges[k].src]) == a(graph.edges[k].dst, dv)
        ),
    )
    fixed = [k for k in range(len(graph.edges)) if k not in set(coupled)]

    def total(own: str, tables: list[dict], unit: float) -> Any:
        ops = sum(
            getattr(r, own) * MICRO / unit * a(v, d)
            for v in sorted(free)
            for d, r in sorted(graph.stacks[v].items())
        )
        edges = sum(
            tables[k][du, dv] * MICRO / unit * m.y[k, du, dv] for k in coupled for du, dv in sorted(tables[k])
        )
        constant = sum(
            getattr(next(iter(graph.stacks[v].values())), own) for v in range(len(graph.ops)) if v not in free
        )
        constant += sum(next(iter(tables[k].values())) for k in fixed)
        return ops + edges, constant * MICRO / unit

    # constants sit in a fixed-bound variable so that LP/MPS writers keep them in the objective
    energy_var, energy_const = total("energy", graph.transfer_energy, e_unit)
    latency_var, latency_const = total("latency", graph.transfer_latency, t_unit)
    m.energy_fixed = pyo.Var(bounds=(energy_const, energy_const))
    m.latency_fixed = pyo.Var(bounds=(latency_const, latency_const))
    return m, energy_var + m.energy_fixed, latency_var + m.latency_fixed


def _add_schedule(m: pyo.ConcreteModel, graph: StackedGraph, disjunctive: bool) -> None:
    """Start times, makespan, precedence with transfer delays, device loads, disjunctions."""
    a, t_unit = m.a, m.time_unit
    n = len(graph.ops)

    def p(v: int) -> Any:
        return sum(r.latency * MICRO / t_unit * a(v, d) for d, r in sorted(graph.stacks[v].items()))

    def tau(k: int) -> Any:
        table = graph.transfer_latency[k]
        if (k, *next(iter(table))) in m.y:
            return sum(table[du, dv] * MICRO / t_unit * m.y[k, du, dv] for du, dv in sorted(table))
        return next(iter(table.values())) * MICRO / t_unit

    horizon = sum(max(r.latency for r in s.values()) for s in graph.stacks)
    horizon += sum(max(table.values()) for table in graph.transfer_latency)
    big_m = horizon * MICRO / t_unit
    m.start = pyo.Var(range(n), bounds=(0, big_m))
    m.makespan = pyo.Var(bounds=(0, None))  # unbounded above: a power cap may stretch it
    m.precedence = pyo.Constraint(
        range(len(graph.edges)),
        rule=lambda m, k: (
            m.start[graph.edges[k].dst] >= m.start[graph.edges[k].src] + p(graph.edges[k].src) + tau(k)
        ),
    )
    sinks = [v for v in range(n) if not graph.succs[v]]
    m.finish = pyo.Constraint(sinks, rule=lambda m, v: m.makespan >= m.start[v] + p(v))
    devices = sorted({d for s in graph.stacks for d in s})
    m.device_load = pyo.Constraint(
        devices,
        rule=lambda m, d: (
            m.makespan
            >= sum(s[d].latency * MICRO / t_unit * a(v, d) for v, s in enumerate(graph.stacks) if d in s)
        ),
    )
    if not disjunctive:
        return
    free = set(graph.free)
    triples = []
    for u, v in incomparable_pairs(graph):
        for d in sorted(set(graph.stacks[u]) & set(graph.stacks[v])):
            if u in free or v in free or (len(graph.stacks[u]) == 1 and len(graph.stacks[v]) == 1):
                triples.append((u, v, d))
    m.order = pyo.Var(sorted({(u, v) for u, v, _ in triples}), domain=pyo.Binary)

    def both_on(u: int, v: int, d: str) -> Any:
        return big_m * (2 - a(u, d) - a(v, d))

    m.u_first = pyo.Constraint(
        triples,
        rule=lambda m, u, v, d: (
            m.start[v]
            >= m.start[u]
            + graph.stacks[u][d].latency * MICRO / t_unit
            - big_m * (1 - m.order[u, v])
            - both_on(u, v, d)
        ),
    )
    m.v_first = pyo.Constraint(
        triples,
        rule=lambda m, u, v, d: (
            m.start[u]
            >= m.start[v]
            + graph.stacks[v][d].latency * MICRO / t_unit
            - big_m * m.order[u, v]
            - both_on(u, v, d)
        ),
    )


def _add_side_constraints(
    m: pyo.ConcreteModel, instance: Instance, graph: StackedGraph, energy_expr: Any, span_expr: Any
) -> None:
    a = m.a
    b = instance.memory.bytes_per_element
    caps = [d for d in instance.devices if d.kind == "photonic" and d.weight_capacity_mb > 0]
    m.capacity = pyo.Constraint(
        [d.name for d in caps],
        rule=lambda m, name: (
            sum(
                op.weights * b * a(v, name)
                for v, op in enumerate(graph.ops)
                if name in graph.stacks[v] and op.weights
            )
            <= instance.device(name).weight_capacity_mb * 1e6
        ),
    )
    lim = instance.limits
    photonic = {d.name for d in instance.devices if d.kind == "photonic"}
    if lim.max_conversion_elements > 0:
        crossing = 0
        for k, e in enumerate(graph.edges):
            for du, dv in sorted(graph.transfer_energy[k]):
                if (du in photonic) != (dv in photonic):
                    coupled = (k, du, dv) in m.y  # else both ends are fixed on this pair
                    crossing += e.elements * (m.y[k, du, dv] if coupled else 1)
        m.conversion = pyo.Constraint(expr=crossing <= lim.max_conversion_elements)
    if lim.energy_budget_mj > 0:
        m.energy_budget = pyo.Constraint(expr=energy_expr <= lim.energy_budget_mj * 1e3 / m.energy_unit)
    if lim.power_cap_w > 0:  # Energy [uJ] <= P [W] * span [us]
        m.power_cap = pyo.Constraint(
            expr=energy_expr * m.energy_unit <= lim.power_cap_w * span_expr * m.time_unit
        )
    if instance.uniform_blocks:
        first: dict[str, int] = {}
        links = []
        for v in graph.free:
            op = graph.ops[v]
            if op.block >= 0:
                head = first.setdefault(op.role, v)
                if head != v:
                    links.extend((v, head, d) for d in sorted(graph.stacks[v]))
        m.uniform = pyo.Constraint(links, rule=lambda m, v, head, d: m.x[v, d] == m.x[head, d])


def build(instance: Instance) -> pyo.ConcreteModel:
    """The exact MILP for the instance's objective (see the module docstring)."""
    return _build(instance, disjunctive=True)


def makespan_relaxation(instance: Instance) -> pyo.ConcreteModel:
    """Critical path plus device-load bounds without disjunctions: a lower bound on the makespan."""
    return _build(instance, disjunctive=False, objective="makespan")


def _build(instance: Instance, disjunctive: bool, objective: str | None = None) -> pyo.ConcreteModel:
    graph = stacked_graph(instance)
    objective = objective or instance.objective
    m, energy_expr, latency_expr = _assignment_model(instance, graph)
    if objective == "makespan":
        _add_schedule(m, graph, disjunctive)
        span = m.makespan
    else:
        span = latency_expr
    _add_side_constraints(m, instance, graph, energy_expr, span)
    if objective == "energy":
        m.cost = pyo.Objective(expr=energy_expr, sense=pyo.minimize)
        m.objective_unit = m.energy_unit
    else:
        m.cost = pyo.Objective(expr=span, sense=pyo.minimize)
        m.objective_unit = m.time_unit
    return m


# ------------------------------------------------------------------------------------------------
# Extraction
# ------------------------------------------------------------------------------------------------
def extract(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    graph = stacked_graph(instance)
    assign = []
    for v, stack in enumerate(graph.stacks):
        if len(stack) == 1:
            assign.append(next(iter(stack)))
        else:
            assign.append(max(sorted(stack), key=lambda d: pyo.value(model.x[v, d])))
    solution = {"assignment": {op.name: d for op, d in zip(graph.ops, assign, strict=True)}}
    if instance.objective == "makespan":
        # keep the MILP's order on each device (by mid-point) and start every operator as early
        # as that order and the data allow: exact times, no solver tolerance left in them
        mid = [
            pyo.value(model.start[v]) + 0.5 * graph.stacks[v][assign[v]].latency * MICRO / model.time_unit
            for v in range(len(graph.ops))
        ]
        start = earliest_starts(graph, assign, mid)
        if instance.limits.power_cap_w > 0:
            # a binding power cap stretches the schedule (E <= P T): the last operator waits
            stretch = energy(graph, assign) / instance.limits.power_cap_w - makespan(graph, assign, start)
            start[-1] += max(0.0, stretch)
        solution["start"] = {op.name: s for op, s in zip(graph.ops, start, strict=True)}
    return solution


# ------------------------------------------------------------------------------------------------
# The natural exact method: decomposition at articulation operators
# ------------------------------------------------------------------------------------------------
def _coupled(instance: Instance) -> bool:
    """Side constraints that tie segments together (the decomposition then does not apply)."""
    lim = instance.limits
    capacity = any(d.kind == "photonic" and d.weight_capacity_mb > 0 for d in instance.devices)
    limits = lim.energy_budget_mj or lim.power_cap_w or lim.max_conversion_elements
    return bool(instance.uniform_blocks or capacity or limits)


def _segment(graph: StackedGraph, a: int, b: int, first: str, last: str) -> StackedGraph:
    """Operators a..b with a pinned on ``first`` and b on ``last``, and the edges among them."""
    keep = [k for k, e in enumerate(graph.edges) if a <= e.src and e.dst <= b]
    stacks = [dict(s) for s in graph.stacks[a : b + 1]]
    stacks[0], stacks[-1] = {first: stacks[0][first]}, {last: stacks[-1][last]}

    def table(source: dict, k: int) -> dict:
        e = graph.edges[k]
        return {
            (du, dv): x
            for (du, dv), x in source.items()
            if du in stacks[e.src - a] and dv in stacks[e.dst - a]
        }

    return StackedGraph(
        graph.ops[a : b + 1],
        [Edge(graph.edges[k].src - a, graph.edges[k].dst - a, graph.edges[k].elements) for k in keep],
        stacks,
        [table(graph.transfer_energy[k], k) for k in keep],
        [table(graph.transfer_latency[k], k) for k in keep],
    )


def _segment_makespan(instance: Instance, part: StackedGraph, options: SolveOptions) -> tuple[Any, str]:
    """Solve one segment's disjunctive makespan model; (assignment, start times in s) and status."""
    m, _, _ = _assignment_model(instance, part)
    _add_schedule(m, part, disjunctive=True)
    m.cost = pyo.Objective(expr=m.makespan, sense=pyo.minimize)
    result = solve_model(m, options)
    if result.objective is None:
        return None, result.status
    assign = [
        next(iter(s)) if len(s) == 1 else max(sorted(s), key=lambda d, v=v: pyo.value(m.x[v, d]))
        for v, s in enumerate(part.stacks)
    ]
    start = [pyo.value(m.start[v]) * m.time_unit / MICRO for v in range(len(part.ops))]
    return (assign, start), result.status


def exact(instance: Instance, options: SolveOptions) -> ExactOutcome:
    """Exact by decomposition. Every source-to-sink path passes each articulation operator, so
    operators of different segments never overlap in time and both the sum objectives and the
    makespan add up over segments: the makespan is ``sum_j (S_{c_j+1} - S_{c_j}) + p_last``. Each
    segment is solved exactly for every pair of devices of its two cut operators (frontier DP for
    sums, the disjunctive MILP for the makespan), once per distinct segment (repeated blocks are
    solved once), then a DP over the cut devices chains them. Side constraints couple the
    segments: such instances go to the full MILP."""
    if _coupled(instance):
        model = build(instance)
        result = solve_model(model, options)
        if result.objective is None:
            return ExactOutcome(None, result.status, result.bound)
        solution = extract(model, instance)
        solution["objective"] = result.objective
        return ExactOutcome(solution, result.status, result.bound)
    if instance.objective != "makespan":
        solution = segment_dp(instance)
        return ExactOutcome(solution, "optimal", solution["objective"])
    graph = stacked_graph(instance)
    cuts = articulation_operators(graph)
    memo: dict[Any, tuple[Any, str]] = {}
    status = "optimal"
    # best[d] = (length up to the start of the current cut on d, [(cut a, cut b, segment solution)])
    best: dict[str, tuple[float, list]] = {d: (0.0, []) for d in sorted(graph.stacks[cuts[0]])}
    for a, b in pairwise(cuts):
        step: dict[str, tuple[float, list]] = {}
        for first, (length, trail) in best.items():
            for last in sorted(graph.stacks[b]):
                part = _segment(graph, a, b, first, last)
                key = (part.ops[0].role, part.ops[-1].role, first, last, _signature(part))
                if key not in memo:
                    memo[key] = _segment_makespan(instance, part, options)
                found, part_status = memo[key]
                if found is None:
                    continue
                if part_status != "optimal":
                    status = "feasible"
                total = length + found[1][-1] - found[1][0]
                if last not in step or total < step[last][0]:
                    step[last] = (total, [*trail, (a, found)])
        if not step:
            return ExactOutcome(None, "infeasible" if status == "optimal" else "time_limit")
        best = step
    last_cut = cuts[-1]
    _, trail = min(best.items(), key=lambda item: item[1][0] + graph.stacks[last_cut][item[0]].latency)[1]
    assign = [""] * len(graph.ops)
    rank = [0.0] * len(graph.ops)
    offset = 0.0
    for a, (part_assign, part_start) in trail:
        for i, (d, s) in enumerate(zip(part_assign, part_start, strict=True)):
            assign[a + i] = d
            rank[a + i] = offset + s - part_start[0] + 0.5 * graph.stacks[a + i][d].latency
        offset += part_start[-1] - part_start[0]
    start = earliest_starts(graph, assign, rank)
    solution = as_solution(graph, assign, start)
    solution["objective"] = makespan(graph, assign, start) * MICRO
    return ExactOutcome(solution, status, solution["objective"] if status == "optimal" else None)


def _signature(part: StackedGraph) -> tuple:
    """Everything a segment's optimum depends on, so that repeated blocks share one solve."""
    return (
        tuple(tuple(sorted((d, r.latency) for d, r in s.items())) for s in part.stacks),
        tuple(
            (e.src, e.dst, tuple(sorted(t.items())))
            for e, t in zip(part.edges, part.transfer_latency, strict=True)
        ),
    )


# ------------------------------------------------------------------------------------------------
# Checker and objective
# ------------------------------------------------------------------------------------------------
def _read_start(graph: StackedGraph, solution: Solution) -> tuple[list[float] | None, str]:
    raw = solution.get("start")
    if not isinstance(raw, dict):
        return None, "expected 'start': a table operator -> start time in seconds"
    start = []
    for op in graph.ops:
        s = raw.get(op.name)
        if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or s < 0:
            return None, f"{op.name}: expected a start time >= 0, got {s!r}"
        start.append(float(s))
    return start, ""


def schedule_violations(graph: StackedGraph, assign: list[str], start: list[float]) -> list[Violation]:
    """Precedence with transfer delays, and one operator at a time on every device."""
    out = []
    tol = 1e-9 * max(1e-12, makespan(graph, assign, start))
    for k, e in enumerate(graph.edges):
        ready = (
            start[e.src]
            + graph.stacks[e.src][assign[e.src]].latency
            + graph.transfer_latency[k][assign[e.src], assign[e.dst]]
        )
        if start[e.dst] < ready - tol:
            out.append(
                Violation(
                    "precedence",
                    f"{graph.ops[e.dst].name} starts at {start[e.dst]:.9g} s before "
                    f"its input from {graph.ops[e.src].name} arrives at {ready:.9g} s",
                )
            )
    by_device: dict[str, list[int]] = {}
    for v in sorted(range(len(assign)), key=lambda v: (start[v], v)):
        by_device.setdefault(assign[v], []).append(v)
    for d, order in by_device.items():
        for u, v in pairwise(order):
            if start[v] < start[u] + graph.stacks[u][d].latency - tol:
                out.append(
                    Violation(
                        "device_exclusive", f"{graph.ops[u].name} and {graph.ops[v].name} overlap on {d}"
                    )
                )
    return out


def check(instance: Instance, solution: Solution) -> list[Violation]:
    graph = stacked_graph(instance)
    assign, why = read_assignment(graph, solution)
    if assign is None:
        return [Violation("assignment", why)]
    out: list[Violation] = []
    if instance.objective == "makespan":
        start, why = _read_start(graph, solution)
        if start is None:
            return [Violation("schedule", why)]
        out += schedule_violations(graph, assign, start)
        span = makespan(graph, assign, start)
    else:
        span = latency_sum(graph, assign)
    for text in side_violations(instance, graph, assign, span):
        family, detail = text.split(": ", 1)
        out.append(Violation(family, detail))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """Energy in microjoules, or latency (serial sum or makespan) in microseconds."""
    graph = stacked_graph(instance)
    assign, why = read_assignment(graph, solution)
    if assign is None:
        raise ValueError(why)
    if instance.objective == "energy":
        return energy(graph, assign) * MICRO
    if instance.objective == "latency_sum":
        return latency_sum(graph, assign) * MICRO
    start, why = _read_start(graph, solution)
    if start is None:
        raise ValueError(why)
    return makespan(graph, assign, start) * MICRO


# ------------------------------------------------------------------------------------------------
# Hardware presets and the seeded generator
# ------------------------------------------------------------------------------------------------
def h100(name: str = "gpu") -> Electronic:
    """H100-SXM-like GPU (repo docs: 494.7 TFLOP/s TF32, 144 SMs x 128 lanes x 1.98 GHz; MAC 0.07 pJ;
    HBM 3.35 TB/s from NVIDIA's public spec; launch latency and elementwise energy assumed)."""
    return Electronic(
        name,
        peak_tflops=494.7,
        elementwise_tops=36.5,
        memory_bandwidth_tbps=3.35,
        launch_latency_us=2.0,
        mac_energy_pj=0.07,
        op_energy_pj=0.1,
        local_energy_pj=24.0,
    )


def ptu(name: str = "ptu", *, cores: int = 1, wavelengths: int = 20, spatial: int = 1) -> Photonic:
    """The repo's PHU: 9.7 GHz, multiplex 20, MAC 0.04 pJ, DAC 3.18 pJ, ADC 1.6 pJ, 10 ns conversion."""
    return Photonic(
        name,
        clock_ghz=9.7,
        cores=cores,
        wavelengths=wavelengths,
        spatial=spatial,
        fan_in=1,
        mac_energy_pj=0.04,
        dac_energy_pj=3.18,
        adc_energy_pj=1.6,
        conversion_latency_ns=10.0,
        laser_power_w=0.0,
        local_energy_pj=24.0,
        weight_capacity_mb=0.0,
    )


def repo_memory() -> Memory:
    """Repo hop constants (SRAM 12, HBM 40, DRAM 160 pJ per element, port 1 + 1 pJ, f_mem 6 GHz, 32-bit
    numbers); the link is an NVLink-C2C-like assumption (1.3 pJ/bit, 900 GB/s, 0.5 us)."""
    return Memory(
        clock_ghz=6.0,
        sram_energy_pj=12.0,
        hbm_energy_pj=40.0,
        dram_energy_pj=160.0,
        port_energy_pj=2.0,
        bytes_per_element=4,
        link_energy_pj_per_bit=1.3,
        link_bandwidth_gbps=900.0,
        link_latency_ns=500.0,
    )


def generate(seed: int, size: int) -> Instance:
    """A small random transformer (``size`` blocks) on a GPU and a PTU with perturbed parameters."""
    rng = random.Random(seed)
    family = rng.choice(("gpt2", "llama"))
    heads = rng.choice((1, 2, 4))
    d_model = heads * rng.choice((8, 16, 32))
    model = TransformerModel(
        family,
        size,
        d_model,
        heads,
        rng.choice((2, 3, 4)) * d_model,
        rng.choice((64, 128, 256)),
        rng.choice((4, 16, 64, 256)),
    )

    def jitter(x: float) -> float:
        return round(x * math.exp(rng.uniform(-1.0, 1.0)), 6)

    gpu = h100()
    gpu = Electronic(
        "gpu",
        jitter(gpu.peak_tflops / 1000),
        jitter(gpu.elementwise_tops / 1000),
        jitter(gpu.memory_bandwidth_tbps / 100),
        jitter(gpu.launch_latency_us / 100),
        jitter(gpu.mac_energy_pj),
        jitter(gpu.op_energy_pj),
        jitter(gpu.local_energy_pj),
    )
    photonic = ptu(wavelengths=rng.choice((4, 16, 64)), spatial=rng.choice((1, 4)), cores=rng.choice((1, 2)))
    photonic = Photonic(
        "ptu",
        jitter(photonic.clock_ghz),
        photonic.cores,
        photonic.wavelengths,
        photonic.spatial,
        1,
        jitter(photonic.mac_energy_pj),
        jitter(photonic.dac_energy_pj),
        jitter(photonic.adc_energy_pj),
        jitter(photonic.conversion_latency_ns) / 100,
        0.0,
        jitter(photonic.local_energy_pj),
        0.0,
    )
    return Instance(
        objective=rng.choice(("energy", "latency_sum", "makespan")),
        transfer_model=rng.choice(("sram_hop", "realistic")),
        graph="block",
        uniform_blocks=rng.random() < 0.25,
        model=model,
        devices=(gpu, photonic),
        memory=repo_memory(),
        limits=Limits(),
    )


PROBLEM = Problem(
    name="lightcode",
    summary="Assign LLM prefill operators to GPU/CPU/photonic tensor units: min energy, latency or makespan",
    source="Tomich et al., LightCode, arXiv 2509.16443 (2025); github.com/RyanTomich/LightCode",
    sense="min",
    load=load,
    dump=dump,
    check=check,
    objective=objective,
    generate=generate,
    build=build,
    extract=extract,
    heuristics=HEURISTICS,
    exact=exact,
    sizes=(1, 2, 4),
    size_doc="transformer blocks",
)
