"""C1 exactly: the enumeration of the configuration space, the problem's ``exact`` method and its
dual bound. The space is exactly the configurations the checker accepts
(:mod:`coopt.problems.configtuner.model`), priced in one vectorised call of the analytic model.
"""

from __future__ import annotations

import numpy as np

from coopt.limits import timed_out
from coopt.problem import ExactOutcome, NoSolution, Solution, SolveOptions, Termination
from coopt.problems.configtuner.model import Instance, Space, evaluate, priced, space


def best_of(instance: Instance, configs: Space, evaluated: int | None = None) -> Solution | None:
    """The fastest memory-feasible configuration of ``configs`` (first on ties), or None; one
    pricing call."""
    if not len(configs):
        return None
    out = evaluate(instance, configs)
    times = np.where(out["memory"] <= instance.gpu_memory, out["time"], np.inf)
    index = int(np.argmin(times))
    if not np.isfinite(times[index]):
        return None
    return priced(configs, out, index, len(configs) if evaluated is None else evaluated)


def exact(instance: Instance, options: SolveOptions) -> ExactOutcome:
    """C1 by enumeration: every configuration of the space priced in one vectorised call.

    Guarantee: optimal (the space is exactly the configurations the checker accepts, see
    :mod:`coopt.problems.configtuner.model`). Running time O(|S|); past the time limit it stops
    (status ``time_limit``, no solution)."""
    stopped, solution = timed_out(lambda: best_of(instance, space(instance)), options.time_limit,
                                  "the enumeration")
    if stopped:
        return ExactOutcome(None, Termination.LIMIT, None)
    if solution is None:
        return ExactOutcome(None, Termination.INFEASIBLE, None)
    return ExactOutcome(solution, Termination.OPTIMAL, solution["objective"])


def bound(instance: Instance, options: SolveOptions) -> float:
    """Dual bound at any size: the enumeration's optimum. The space grows like the divisor
    triples of N times a few dozen flag settings (at most 18 000 configurations on the shipped
    instances, up to 10^6 GPUs in the generator), so it is priced whole in milliseconds at every
    size; no relaxation is needed, and this equals the LP relaxation of the MILP (integral)."""
    solution = best_of(instance, space(instance))
    if solution is None:
        raise NoSolution("no configuration fits in memory")
    return solution["objective"]
