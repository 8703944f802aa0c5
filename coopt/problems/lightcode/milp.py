"""The exact MILP of LightCode (symbols as in :mod:`coopt.problems.lightcode`).

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
(critical path plus device-load bounds), a lower bound for benchmarks.

Time windows and big-M (no optimum is cut off). ``ES_v`` is the longest path from the source to
``v`` with every operator and transfer at its fastest realization, a lower bound on ``S_v`` in any
schedule; ``tail_v`` the same from ``v``'s finish to the end. ``H`` is an upper bound on the
optimal value: the serial length of the slowest assignment, or less, the value of one feasible
schedule (every operator on its fastest device, started as early as the data allow; used only
where that assignment meets the side constraints; a power cap stretches it to ``E / P``). Every
optimal schedule has span at most ``H``, so ``S_v <= LS_v = H - t_v,min - tail_v`` holds in each of
them, and the window ``ES_v <= S_v <= LS_v`` keeps all of them. In that box ``S_u + t_ud - S_v <=
LS_u + t_ud - ES_v =: M_uvd``, the smallest valid big-M of the pair's two rows. Small ``M`` matters
beyond the LP bound: HiGHS accepts a binary within 1e-6 of an integer, and each such row then
leaks ``1e-6 M`` of overlap into the reported makespan.

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
devices, a submodular labeling that a min cut solves: see
:func:`coopt.problems.lightcode.heuristics.min_cut`).
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.lightcode.data import MICRO, SIDE_TOL, Instance
from coopt.problems.lightcode.graph import StackedGraph, stacked_graph
from coopt.problems.lightcode.model import earliest_starts, energy, makespan, side_violations

#: Objectives and start times are O(RESOLUTION) in model units (see :func:`_units`).
RESOLUTION = 1000.0


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
    """Model units of energy (uJ) and time (us): 1/:data:`RESOLUTION` of the cheapest realization
    of each operator, summed, so that objectives and start times are O(RESOLUTION). HiGHS'
    tolerances are absolute (dual feasibility 1e-7 on reduced costs, primal 1e-7 on each row): at
    O(1) they let a proven optimum miss a better assignment by 2e-7 of the objective, and a chain
    of precedence rows shave 1e-6 off a makespan; at O(1e3) both stay below 1e-9."""
    e = sum(min(r.energy for r in s.values()) for s in graph.stacks) * MICRO
    t = sum(min(r.latency for r in s.values()) for s in graph.stacks) * MICRO
    return max(e, 1e-12) / RESOLUTION, max(t, 1e-12) / RESOLUTION


def assignment_model(instance: Instance, graph: StackedGraph) -> tuple[pyo.ConcreteModel, Any, Any]:
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


def add_schedule(m: pyo.ConcreteModel, graph: StackedGraph, disjunctive: bool, horizon: float) -> None:
    """Start times, makespan ``m.span``, precedence with transfer delays, device loads, disjunctions,
    in the model's time unit. ``horizon`` (s) bounds the optimal span (:func:`schedule_horizon`); it
    sets the time windows and the big-Ms."""
    a, t_unit = m.a, m.time_unit
    n = len(graph.ops)

    def p(v: int) -> Any:
        return sum(r.latency * MICRO / t_unit * a(v, d) for d, r in sorted(graph.stacks[v].items()))

    def tau(k: int) -> Any:
        table = graph.transfer_latency[k]
        if (k, *next(iter(table))) in m.y:
            return sum(table[du, dv] * MICRO / t_unit * m.y[k, du, dv] for du, dv in sorted(table))
        return next(iter(table.values())) * MICRO / t_unit

    early, late = time_windows(graph, horizon)
    m.start = pyo.Var(range(n), bounds=lambda m, v: (early[v] * MICRO / t_unit, late[v] * MICRO / t_unit))
    m.span = pyo.Var(bounds=(0, None))  # the makespan; unbounded above: a power cap may stretch it
    m.precedence = pyo.Constraint(
        range(len(graph.edges)),
        rule=lambda m, k: (
            m.start[graph.edges[k].dst] >= m.start[graph.edges[k].src] + p(graph.edges[k].src) + tau(k)
        ),
    )
    sinks = [v for v in range(n) if not graph.succs[v]]
    m.finish = pyo.Constraint(sinks, rule=lambda m, v: m.span >= m.start[v] + p(v))
    devices = sorted({d for s in graph.stacks for d in s})
    m.device_load = pyo.Constraint(
        devices,
        rule=lambda m, d: (
            m.span
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

    def big_m(u: int, v: int, d: str) -> float:
        """The largest S_u + t_ud - S_v in the windows (row units)."""
        return max(0.0, late[u] + graph.stacks[u][d].latency - early[v]) * MICRO / t_unit

    def both_on(u: int, v: int, d: str, gap: float) -> Any:
        return gap * (2 - a(u, d) - a(v, d))

    m.u_first = pyo.Constraint(
        triples,
        rule=lambda m, u, v, d: (
            m.start[v]
            >= m.start[u]
            + graph.stacks[u][d].latency * MICRO / t_unit
            - big_m(u, v, d) * (1 - m.order[u, v])
            - both_on(u, v, d, big_m(u, v, d))
        ),
    )
    m.v_first = pyo.Constraint(
        triples,
        rule=lambda m, u, v, d: (
            m.start[u]
            >= m.start[v]
            + graph.stacks[v][d].latency * MICRO / t_unit
            - big_m(v, u, d) * m.order[u, v]
            - both_on(u, v, d, big_m(v, u, d))
        ),
    )


def time_windows(graph: StackedGraph, horizon: float) -> tuple[list[float], list[float]]:
    """``(ES_v, LS_v)`` in seconds: the earliest start over any schedule, and the latest start of
    any schedule of span at most ``horizon`` (see the module docstring)."""
    n = len(graph.ops)
    fastest = [min(r.latency for r in s.values()) for s in graph.stacks]
    hop = [min(t.values()) for t in graph.transfer_latency]
    early, tail = [0.0] * n, [0.0] * n
    for v in range(n):  # operators are in topological order
        for k in graph.in_edges[v]:
            u = graph.edges[k].src
            early[v] = max(early[v], early[u] + fastest[u] + hop[k])
    for u in reversed(range(n)):
        for k in graph.out_edges[u]:
            w = graph.edges[k].dst
            tail[u] = max(tail[u], hop[k] + fastest[w] + tail[w])
    late = [max(early[v], horizon * (1 + 1e-9) - fastest[v] - tail[v]) for v in range(n)]
    return early, late


def schedule_horizon(graph: StackedGraph, instance: Instance | None = None) -> float:
    """An upper bound (s) on the optimal makespan: the serial length of the slowest assignment, or
    the value of the schedule of the fastest devices when that assignment meets ``instance``'s side
    constraints (a power cap stretches it to E / P); without ``instance``, no side constraints."""
    serial = sum(max(r.latency for r in s.values()) for s in graph.stacks)
    serial += sum(max(table.values()) for table in graph.transfer_latency)
    assign = [min(sorted(s), key=lambda d, s=s: s[d].latency) for s in graph.stacks]
    start = earliest_starts(graph, assign, [float(v) for v in range(len(graph.ops))])
    span = makespan(graph, assign, start)
    if instance is not None:
        if instance.limits.power_cap > 0:
            span = max(span, energy(graph, assign) / instance.limits.power_cap)
        if side_violations(instance, graph, assign, span):
            return serial
    return min(serial, span)


def _add_side_constraints(
    m: pyo.ConcreteModel, instance: Instance, graph: StackedGraph, energy_expr: Any, span_expr: Any
) -> None:
    a = m.a
    b = instance.memory.bytes_per_element
    slack = 1 + SIDE_TOL  # the checker's bound (coopt.problems.lightcode.model.side_violations)
    caps = [d for d in instance.devices if d.photonic and d.weight_capacity > 0]
    m.capacity = pyo.Constraint(
        [d.name for d in caps],
        rule=lambda m, name: (
            sum(
                op.weights * b * a(v, name)
                for v, op in enumerate(graph.ops)
                if name in graph.stacks[v] and op.weights
            )
            <= instance.device(name).weight_capacity * slack
        ),
    )
    lim = instance.limits
    photonic = {d.name for d in instance.devices if d.photonic}
    if lim.max_conversion_elements > 0:
        crossing = 0
        for k, e in enumerate(graph.edges):
            for du, dv in sorted(graph.transfer_energy[k]):
                if (du in photonic) != (dv in photonic):
                    coupled = (k, du, dv) in m.y  # else both ends are fixed on this pair
                    crossing += e.elements * (m.y[k, du, dv] if coupled else 1)
        m.conversion = pyo.Constraint(expr=crossing <= lim.max_conversion_elements * slack)
    if lim.energy_budget > 0:
        budget = lim.energy_budget * MICRO / m.energy_unit * slack
        m.energy_budget = pyo.Constraint(expr=energy_expr <= budget)
    if lim.power_cap > 0:  # Energy [uJ] <= P [W] * span [us]
        m.power_cap = pyo.Constraint(
            expr=energy_expr * m.energy_unit <= lim.power_cap * span_expr * m.time_unit * slack
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
    m, energy_expr, latency_expr = assignment_model(instance, graph)
    if objective == "makespan":
        add_schedule(m, graph, disjunctive, schedule_horizon(graph, instance))
        span = m.span
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
        if instance.limits.power_cap > 0:
            # a binding power cap stretches the schedule (E <= P T): the last operator waits
            stretch = energy(graph, assign) / instance.limits.power_cap - makespan(graph, assign, start)
            start[-1] += max(0.0, stretch)
        solution["start"] = {op.name: s for op, s in zip(graph.ops, start, strict=True)}
    return solution
