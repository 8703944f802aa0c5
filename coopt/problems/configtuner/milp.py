"""C1, exact configuration selection as a MILP: one binary ``z_c`` per configuration ``c`` of
:func:`coopt.problems.configtuner.model.space` that fits in memory, ``sum_c z_c = 1``, and
``min sum_c (T_c / T_ref) z_c`` with ``T_c`` the analytic iteration time. Divisibility and memory
are data (the space holds the divisible configurations, memory drops the others), so no row can be
violated within a tolerance; the objective is scaled by ``T_ref`` (the fastest configuration's
time), so it is O(1) and two configurations closer than HiGHS' 1e-9 relative gap are the same
number. The LP relaxation is integral (one simplex row). ``objective_unit = T_ref``.

With no feasible configuration the model holds one fixed variable and the row ``y = 1``, which
HiGHS proves infeasible."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo

from coopt.problems.configtuner.model import Instance, Space, evaluate, solution_of, space


def feasible_space(instance: Instance) -> tuple[Space, np.ndarray, np.ndarray]:
    """(the whole space, the indices of its memory-feasible configurations, their times)."""
    configs = space(instance)
    out = evaluate(instance, configs)
    fits = np.flatnonzero(out["memory"] <= instance.gpu_memory)
    return configs, fits, out["time"][fits]


def build(instance: Instance) -> pyo.ConcreteModel:
    configs, fits, times = feasible_space(instance)
    m = pyo.ConcreteModel()
    m.configs, m.fits = configs, fits
    m.C = pyo.RangeSet(0, len(fits) - 1) if len(fits) else pyo.Set(initialize=[])
    m.z = pyo.Var(m.C, domain=pyo.Binary)
    if len(fits):
        scale = float(np.min(times))
        m.one = pyo.Constraint(expr=sum(m.z[c] for c in m.C) == 1)
        m.time = pyo.Objective(expr=sum(float(times[c] / scale) * m.z[c] for c in m.C), sense=pyo.minimize)
        m.objective_unit = scale
    else:
        m.y = pyo.Var(bounds=(0, 0))
        m.one = pyo.Constraint(expr=m.y == 1)
        m.time = pyo.Objective(expr=m.y, sense=pyo.minimize)
    return m


def extract(model: pyo.ConcreteModel, instance: Instance) -> dict:
    chosen = [c for c in model.C if (pyo.value(model.z[c]) or 0) > 0.5]
    config = model.configs.config(int(model.fits[chosen[0]]))
    return solution_of(instance, config, len(model.configs))
