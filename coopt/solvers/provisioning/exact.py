"""The exact route of both provisioning problems: a lexicographic (two-stage) solve of the channel
MILP (:mod:`coopt.formulations.provisioning.milp`) and of Model C
(:mod:`coopt.formulations.provisioning.grooming_milp`).

Why two stages. The objective W - Q orders solutions by served weight W first (integer class
weights), then by the tie-break Q (weighted degradation eps P, plus eps2 L lightpaths in Model C).
Inside one weighted sum the tie-break is about 1e-8 of the objective: below HiGHS' relative gap
(1e-6) and, once the objective is scaled, its coefficients fall below the dual feasibility
tolerance (1e-7), so HiGHS stops on solutions that degrade a request for nothing and reports a
bound that a feasible solution beats (issue 13). Here every stage has its own objective, and
every term of it is well above the tolerances:

    stage 1   max W / w_max                      coefficients w_p / w_max in [1e-6, 1]
    stage 2   min Q / q_unit  s.t.  W >= W1 - 1/2  (W integer: W = W1 exactly)
              Model A/B: Q = eps P, q_unit = eps w_max: coefficients w_p (1 - rho) / w_max
              Model C:   Q = eps1 P + eps2 L, q_unit = eps2: coefficients 1 (a lightpath) and
                         (eps1 / eps2) w_p (a served fraction), >= 1e-4 on the shipped sizes

No warm start: with HiGHS 1.16.0 a start given through ``setSolution`` (``model.warm_start``)
loses the objective offset of the columns presolve fixes ("MIP start solution is feasible:
objective value is 1.41667 ... in the reduced space: objective value is 0.41667"), and the solve
then stops at the start as ``optimal`` although a better solution exists (seen on stage 2 of
``brute.tiny_grooming(1)``; with presolve off the answer is right). A warm start from the best
heuristic is therefore not used until that is fixed.

Tolerances of the route (HiGHS through :func:`coopt.solvers.highs.solve_model`): relative MIP gap
``options.gap`` (1e-6 by default), absolute MIP gap 1e-9, MIP feasibility 1e-6, primal and dual
feasibility 1e-7 (HiGHS' defaults).

What ``optimal`` means, and the bound. Let U1 be stage 1's dual bound. No feasible W exceeds
W_cap = floor(U1 + 1e-6 max(1, U1)) (W is an integer; the slack absorbs HiGHS' rounding of a bound
such as 1019.9999999). Let L2 be stage 2's dual bound on Q over the solutions with W >= W1. Every
feasible solution has value <= W_cap - L2: with W >= W1 its Q is at least L2; with W < W1 its
value is below W1 - 1/2, and Q, L2 < 1/2. So the reported bound is W_cap - L2, and the status is
``optimal`` when both stages are and W_cap = W1: then the value is exact to stage 2's gap on Q,
about 1e-6 Q, that is below 1e-6 in absolute terms.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import pyomo.environ as pyo

from coopt.formulations.provisioning import grooming as G
from coopt.formulations.provisioning import grooming_milp, milp
from coopt.formulations.provisioning import model as P
from coopt.problem import ExactOutcome, Solution, SolveOptions
from coopt.solvers.highs import MilpResult, solve_model


def _stage_options(options: SolveOptions, deadline: float | None) -> SolveOptions | None:
    """The options of the next stage: what is left of the time limit (None: no time left)."""
    if deadline is None:
        return options
    left = deadline - time.perf_counter()
    if left <= 0:
        return None
    return SolveOptions(time_limit=left, gap=options.gap, threads=options.threads, seed=options.seed)


def served_weight_cap(bound: float | None) -> float:
    """The largest integer served weight a stage-1 dual bound allows (inf: no bound)."""
    if bound is None or not math.isfinite(bound):
        return math.inf
    return float(math.floor(bound + 1e-6 * max(1.0, abs(bound))))


def lexicographic(
    model: pyo.ConcreteModel,
    options: SolveOptions,
    *,
    weight_unit: float,
    tie_break: Any,
    tie_unit: float,
    read: Callable[[pyo.ConcreteModel], Solution],
    served: Callable[[Solution], float],
) -> ExactOutcome:
    """Stage 1 max ``model.served_weight / weight_unit``; stage 2 min ``tie_break / tie_unit`` at
    that served weight. ``read`` turns the solved model into a solution, ``served`` gives a
    solution's served weight. Variable values set on ``model`` before the call are a warm start."""
    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    model.stage1 = pyo.Objective(expr=model.served_weight / weight_unit, sense=pyo.maximize)
    model.objective_unit = weight_unit
    first = solve_model(model, options)
    if first.objective is None:
        return ExactOutcome(None, first.status, None)
    solution = read(model)
    cap = served_weight_cap(first.bound)
    stage = _stage_options(options, deadline)
    if stage is None or first.status != "optimal":
        return ExactOutcome(solution, "feasible", cap)
    model.stage1.deactivate()
    model.keep_served = pyo.Constraint(expr=model.served_weight >= served(solution) - 0.5)
    model.stage2 = pyo.Objective(expr=tie_break / tie_unit, sense=pyo.minimize)
    model.objective_unit = tie_unit
    second: MilpResult = solve_model(model, stage)
    if second.objective is not None:
        solution = read(model)
    tie_bound = max(0.0, second.bound) if second.bound is not None else 0.0
    proved = second.status == "optimal" and cap == round(served(solution))
    return ExactOutcome(solution, "optimal" if proved else "feasible", cap - tie_bound)


def provisioning_exact(instance: P.Instance, options: SolveOptions) -> ExactOutcome:
    """Models A and B, solved lexicographically (module docstring)."""
    model = milp.channel_model(instance)
    if not model.candidates:
        return ExactOutcome(P.solution_from(instance, []), "optimal", 0.0)
    w_max = max(c.weight for c in instance.classes)
    eps = P.epsilon(instance)
    return lexicographic(
        model, options, weight_unit=float(w_max), tie_break=eps * model.degradation, tie_unit=eps * w_max,
        read=lambda m: milp.extract(m, instance),
        served=lambda s: sum(instance.classes[instance.requests[c["request"]].priority - 1].weight
                             for c in s["connections"]),
    )


def grooming_exact(instance: G.Instance, options: SolveOptions) -> ExactOutcome:
    """Model C, solved lexicographically (module docstring)."""
    model = grooming_milp.grooming_model(instance)
    eps1, eps2 = G.epsilons(instance)
    w_max = max(c.weight for c in instance.classes)
    return lexicographic(
        model, options, weight_unit=float(w_max),
        tie_break=eps1 * model.degradation + eps2 * model.lightpath_count, tie_unit=eps2,
        read=lambda m: grooming_milp.extract(m, instance),
        served=lambda s: sum(G.served_weight(instance, c["request"]) for c in s["connections"]),
    )
