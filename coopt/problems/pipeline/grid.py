"""The time grid of the pipeline's integer instances: the unit ``q`` every pass duration and the
lag are multiples of (:func:`time_unit`; the generator's integer seconds), and why an exact model
may put every start on it.

*Integer starts.* On a keep-only instance with a grid, some optimal FIFO schedule starts every
pass at an integer multiple of ``q``. Order all the events of an optimal FIFO schedule (pass
starts and ends) by time, releases before allocations at equal times, ties otherwise arbitrary,
and keep only that weak order (``e_i <= e_{i+1}``) together with precedence and device
exclusivity in that order. Every such row is a difference constraint with a right-hand side that
is a sum of durations and lags, integer in units of ``q``; so is ``C >= E_x``. Minimising C over
this system is a network LP with an integral optimum no later than the schedule's, and any time
assignment that keeps the weak order keeps the memory profile's levels: a group of events at one
instant is a contiguous block of the old order, so the level after it (the checker's level,
releases first) is a prefix level of the old order, within the cap. FIFO order survives (two
starts of a lane never tie: durations are >= q). Model S (:mod:`.cpsat`) and the pair table of
:mod:`.crossing` rely on it.
"""

from __future__ import annotations

import math
from fractions import Fraction

from coopt.problems.pipeline.model import Instance


def time_unit(instance: Instance) -> float | None:
    """The largest q such that every pass duration and the lag are integer multiples of q, or
    None when the durations have no common unit with a denominator below 10^6."""
    values = [instance.duration((x, k, 0)) for x in instance.kinds for k in range(instance.virtual_stages)]
    values.append(instance.lag_s)
    fractions = []
    for value in values:
        fraction = Fraction(value).limit_denominator(10**6)
        if abs(float(fraction) - value) > 1e-12 * max(1.0, abs(value)):
            return None
        if fraction:
            fractions.append(fraction)
    numerator, denominator = 0, 1
    for fraction in fractions:
        numerator = math.gcd(numerator, fraction.numerator)
        denominator = denominator * fraction.denominator // math.gcd(denominator, fraction.denominator)
    return numerator / denominator


def time_values(instance: Instance) -> list[float]:
    """Every duration a makespan can be made of, modes included: the passes, the lag, the
    recompute time of one layer and the copy times where the instance allows them. Their common
    unit (:func:`coopt.problem.grid_of`) is the grid of Model M (:mod:`.cpmodes`) and of the
    objective (``objective_grid`` in the package)."""
    values = [instance.lag_s]
    for k in range(instance.virtual_stages):
        values += [instance.duration((x, k, 0)) for x in instance.kinds]
        if instance.allow_recompute:
            values.append(instance.t_r(k) / instance.layers(k))
        if instance.allow_offload:
            values += [instance.tau_d(k), instance.tau_u(k)]
    return values
