"""The exact route of both provisioning problems: a lexicographic (two-stage) solve of the channel
MILP (:mod:`coopt.problems.provisioning.milp`) and of Model C
(:mod:`coopt.problems.provisioning.grooming_milp`).

Why two stages. The objective W - Q orders solutions by served weight W first (integer class
weights), then by the tie-break Q (weighted degradation eps P, plus eps2 L lightpaths in Model C),
Q < 1/2. Inside one weighted sum the tie-break is about 1e-8 of the objective: below HiGHS'
relative gap (1e-6) and, once the objective is scaled, its coefficients fall below the dual
feasibility tolerance (1e-7), so HiGHS stops on solutions that degrade a request for nothing and
reports a bound that a feasible solution beats. Here every stage has its own
objective, and every term of it is well above the tolerances:

    stage 1   max W / w_max  s.t.  W >= W0 + 1/2         coefficients w_p / w_max in [1e-6, 1]
    stage 2   min Q / q_unit s.t.  W >= W* - 1/2, Q <= Q0 - delta
              Model A/B: Q = eps P, q_unit = eps w_max: coefficients w_p (1 - rho) / w_max
              Model C:   Q = eps1 P + eps2 L, q_unit = eps2: coefficients 1 (a lightpath) and
                         (eps1 / eps2) w_p (a served fraction)

W0 is the served weight of the start: the problem's warm start (the best fixed-for-life
heuristic's solution), which :mod:`coopt.run` runs, checks and hands in as ``incumbent``, or the
plan that serves nothing (W0 = 0) without one; the optimum does not depend on it, only the time to
prove it. Q0 is the tie-break of the best solution known at W* (stage 1's, improved in place by
:func:`coopt.problems.provisioning.rmsa.upgrade` or
:func:`coopt.problems.provisioning.grooming_heuristics.reoptimize_rates`, local improvements of
a given plan, not heuristic runs). The two cutoff rows do what a warm start does for the proof
(prune every node that cannot beat the incumbent), without handing HiGHS a start: with HiGHS
1.16.0 a start given through ``setSolution`` (``model.warm_start``) loses the objective offset of
the columns presolve fixes ("MIP start solution is feasible: objective value is 1.41667 ... in
the reduced space: objective value is 0.41667"), and the solve then stops at the start as
``optimal`` although a better solution exists (stage 2 of ``brute.tiny_grooming(1)``;
right with presolve off). A stage that comes back infeasible proves its incumbent optimal.

Stage 1 drops what cannot matter to max W (with proofs in the model modules): in the static
model every channel but the narrowest per request and path (``channel_model(narrowest=True)``);
in Model C every served rate above its class floor (``grooming_model(lowest_rates=True)``),
which leaves a pure 0-1 model.

Stage 2 of Model A (static) is restricted to its solutions (``Lexicographic.reduce``,
:func:`coopt.problems.provisioning.milp.restrict_to_weight`, proofs there): once stage 1 has
proved W* = W_cap, a solution of stage 2 has W = W*, so (i) reduced-cost fixing with the duals of
max W's LP against W >= W* fixes channels and forces requests to be served, and (ii) the class
counts n_p of served requests obey sum_p w_p n_p = W*, whose integer solutions often fix every
n_p (generated size 6, seed 0: 20 gold, 10 silver, 6 bronze). The LP had neither: it met
W >= W* with fractions of every class, its stage-2 bound stayed at 0.88 after 15486 nodes and
600 s while the optimum is 1.435 (units of q_unit); with the rows the same stage is proved in
about 300 nodes (docs/notes/provisioning.md, "Stage 2 restricted to W*").

Tolerances of the route (HiGHS through :func:`coopt.solvers.highs.solve_model`): relative MIP gap
``options.gap`` (1e-6 by default), absolute MIP gap 1e-9, MIP feasibility 1e-6, primal and dual
feasibility 1e-7 (HiGHS' defaults). delta = max(gap Q0, min(1e-5 q_unit, 5e-7 (W* - Q0))) keeps
the cutoff above the primal tolerance in model units (delta / q_unit >= 5e-7, five times it:
q_unit <= 1/2 and W* - Q0 >= 1/2 whenever anything is served; a plan HiGHS accepts within its
tolerance is returned with its own Q, so a smaller margin costs speed, never correctness), and
keeps the reported bound within 5e-7 relative of the value, inside the allowance of
:func:`coopt.run.run` (gap + 1e-6): 1e-5 q_unit alone is 1.7e-6 relative on the oracle's seed 114
(3 requests, value 0.99583), where the route would claim ``optimal`` and the run, rightly, say
``feasible``.

What ``optimal`` means, and the bound. Let U1 be stage 1's dual bound. No feasible W exceeds
W_cap = max(W0, floor(U1 + 1e-6 max(1, U1))) (W is an integer; the slack absorbs HiGHS' rounding
of a bound such as 1019.9999999). Let L2 = min(stage 2's dual bound, Q0 - delta): every solution
with W >= W* has Q >= L2. Every feasible solution has value <= W_cap - L2: with W >= W* its Q is
at least L2; with W < W* its value is below W* - 1/2 while Q, L2 < 1/2. So the reported bound is
W_cap - L2, and the status is ``optimal`` when both stages are proved and W_cap = W*: the value is
then exact to delta on Q, at most 5e-7 (or the gap) of the objective.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pyomo.environ as pyo

from coopt.problem import ExactOutcome, Solution, SolveOptions, Termination
from coopt.problems.provisioning import grooming_milp, milp
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning import model as P
from coopt.solvers.highs import MilpResult, solve_model


@dataclass(frozen=True)
class Lexicographic:
    """One problem's two stages: model builders, readers, the two objective parts and the units
    that bring each stage's objective to O(1)."""

    first: Callable[[], pyo.ConcreteModel]  # has served_weight
    second: Callable[[], pyo.ConcreteModel]  # has served_weight
    tie_expr: Callable[[pyo.ConcreteModel], Any]  # Q of a stage-2 model, problem units
    read: Callable[[pyo.ConcreteModel], Solution]
    weight: Callable[[Solution], int]
    tie: Callable[[Solution], float]
    improve: Callable[[Solution], Solution]  # lower Q at the same W (a heuristic)
    weight_unit: float
    tie_unit: float
    #: restricts a stage-2 model to (a superset of) its solutions with W in [W*, W_cap]
    reduce: Callable[[pyo.ConcreteModel, int, int], Any] | None = None


def _left(options: SolveOptions, deadline: float | None) -> SolveOptions | None:
    """The options of the next stage: what is left of the time limit (None: no time left)."""
    if deadline is None:
        return options
    left = deadline - time.perf_counter()
    if left <= 0:
        return None
    return replace(options, time_limit=left)


def served_weight_cap(bound: float | None) -> float:
    """The largest integer served weight a stage-1 dual bound allows (inf: no bound)."""
    if bound is None or not math.isfinite(bound):
        return math.inf
    return float(math.floor(bound + 1e-6 * max(1.0, abs(bound))))


@dataclass(frozen=True)
class Stage:
    """One HiGHS solve of the route, as :func:`solve` records it for benchmarks: the stage (1 or
    2), the model solved (its variables hold the incumbent) and HiGHS' answer."""

    stage: int
    model: pyo.ConcreteModel
    result: MilpResult


def solve(spec: Lexicographic, start: Solution, options: SolveOptions,
          stages: list[Stage] | None = None) -> ExactOutcome:
    """The two stages of the module docstring from the feasible solution ``start``; each HiGHS
    solve is appended to ``stages`` if given."""
    log = stages if stages is not None else []
    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    best, w0 = start, spec.weight(start)
    first = spec.first()
    if first.nvariables() == 0:  # nothing can be served
        return ExactOutcome(best, "optimal", float(w0))
    first.cutoff = pyo.Constraint(expr=first.served_weight >= w0 + 0.5)
    first.stage = pyo.Objective(expr=first.served_weight / spec.weight_unit, sense=pyo.maximize)
    first.objective_unit = spec.weight_unit
    one = solve_model(first, options)
    log.append(Stage(1, first, one))
    if one.status == "infeasible":
        cap = float(w0)
    else:
        cap = max(float(w0), served_weight_cap(one.bound))
        if one.objective is not None:
            best = spec.read(first)
    stage = _left(options, deadline)
    if (one.status not in ("optimal", "infeasible")) or cap != spec.weight(best) or stage is None:
        return ExactOutcome(best, Termination.LIMIT, cap)
    best = spec.improve(best)
    q0 = spec.tie(best)
    if q0 <= 0.0:
        return ExactOutcome(best, "optimal", cap)
    delta = max(options.gap * q0, min(1e-5 * spec.tie_unit, 5e-7 * (spec.weight(best) - q0)))
    cutoff: float | None = q0 - delta
    second = _second_stage(spec, spec.weight(best), int(cap), cutoff)
    two = solve_model(second, stage)
    log.append(Stage(2, second, two))
    if two.status == "error" and (stage := _left(options, deadline)) is not None:
        # HiGHS 1.16.0 reports some infeasible cutoff models as "Solve error" (seen when presolve
        # leaves a model whose repair LP fails); solve again without the cutoff row
        cutoff, second = None, _second_stage(spec, spec.weight(best), int(cap), None)
        two = solve_model(second, stage)
        log.append(Stage(2, second, two))
    # a lower bound on Q over the solutions with W = W*: the cutoff region's (HiGHS' bound, or
    # none at all if the region is empty), and outside it Q > cutoff
    if two.status == "infeasible" and cutoff is not None:
        tie_bound = cutoff
    elif two.bound is not None:
        tie_bound = min(two.bound, math.inf if cutoff is None else cutoff)
    else:
        tie_bound = 0.0
    if two.objective is not None:
        best = spec.read(second)
    proved = two.status == "optimal" or (two.status == "infeasible" and cutoff is not None)
    tie_bound = min(max(0.0, tie_bound), spec.tie(best))
    return ExactOutcome(best, Termination.OPTIMAL if proved else Termination.LIMIT, cap - tie_bound)


def _second_stage(spec: Lexicographic, weight: int, cap: int, cutoff: float | None) -> pyo.ConcreteModel:
    """Stage 2: min Q at served weight ``weight`` (no solution serves more than ``cap``), below
    ``cutoff`` (None: no cutoff row)."""
    second = spec.second()
    if spec.reduce is not None:
        spec.reduce(second, weight, cap)
    second.keep = pyo.Constraint(expr=second.served_weight >= weight - 0.5)
    if cutoff is not None:
        second.cutoff = pyo.Constraint(expr=spec.tie_expr(second) / spec.tie_unit <= cutoff / spec.tie_unit)
    second.stage = pyo.Objective(expr=spec.tie_expr(second) / spec.tie_unit, sense=pyo.minimize)
    second.objective_unit = spec.tie_unit
    return second


def provisioning_exact(instance: P.Instance, options: SolveOptions,
                       incumbent: Solution | None = None) -> ExactOutcome:
    """Models A and B, solved lexicographically (module docstring), from ``incumbent`` (the
    problem's warm start, :func:`coopt.problems.provisioning.rmsa.best_heuristic_solution`, which
    the runner runs and checks) or, without one, from the plan that serves nothing."""
    # Model B's stage 2 is slower restricted (size 3, seed 1, both at the root: 4.2 -> 10.7 s),
    # and its size-6 bottleneck is stage 1; the restriction is on for the static model only
    restrict = instance.model == "static"
    start = incumbent if incumbent is not None else P.solution_from(instance, [])
    return solve(provisioning_spec(instance, restrict), start, options)


def provisioning_spec(instance: P.Instance, restrict: bool = True) -> Lexicographic:
    """The two stages of Models A and B; ``restrict``: stage 2 gets
    :func:`~coopt.problems.provisioning.milp.restrict_to_weight` (off only to measure it)."""
    from coopt.problems.provisioning.rmsa import upgrade

    w_max = max(c.weight for c in instance.classes)
    eps = P.epsilon(instance)
    return Lexicographic(
        first=lambda: milp.channel_model(instance, narrowest=instance.model == "static"),
        second=lambda: milp.channel_model(instance),
        tie_expr=lambda m: eps * m.degradation,
        read=lambda m: milp.extract(m, instance),
        weight=lambda s: sum(instance.classes[instance.requests[c["request"]].priority - 1].weight
                             for c in s["connections"]),
        tie=lambda s: eps * sum(instance.classes[instance.requests[c["request"]].priority - 1].weight
                                * (1.0 - c["retained"]) for c in s["connections"]),
        improve=lambda s: upgrade(instance, s),
        weight_unit=float(w_max),
        tie_unit=eps * w_max,
        reduce=(lambda m, low, cap: milp.restrict_to_weight(m, instance, low, cap)) if restrict else None,
    )


def grooming_exact(instance: G.Instance, options: SolveOptions,
                   incumbent: Solution | None = None) -> ExactOutcome:
    """Model C, solved lexicographically (module docstring), from ``incumbent`` (the problem's
    warm start, :func:`coopt.problems.provisioning.grooming_heuristics.best_heuristic_solution`,
    which the runner runs and checks) or, without one, from the plan that serves nothing."""
    from coopt.problems.provisioning.grooming_heuristics import reoptimize_rates

    eps1, eps2 = G.epsilons(instance)
    w_max = max(c.weight for c in instance.classes)

    def tie(solution: Solution) -> float:
        lost = sum(G.served_weight(instance, c["request"])
                   * (1.0 - c["rate_gbit_per_s"] * G.GBPS / instance.requests[c["request"]].bandwidth_bps)
                   for c in solution["connections"])
        return eps1 * lost + eps2 * len(solution["lightpaths"])

    spec = Lexicographic(
        first=lambda: grooming_milp.grooming_model(instance, lowest_rates=True),
        second=lambda: grooming_milp.grooming_model(instance),
        tie_expr=lambda m: eps1 * m.degradation + eps2 * m.lightpath_count,
        read=lambda m: grooming_milp.extract(m, instance),
        weight=lambda s: sum(G.served_weight(instance, c["request"]) for c in s["connections"]),
        tie=tie,
        improve=lambda s: reoptimize_rates(instance, s),
        weight_unit=float(w_max),
        tie_unit=eps2,
    )
    start = incumbent if incumbent is not None else G.solution_from(instance, [], [])
    return solve(spec, start, options)
