"""P3: b-matching with diminishing returns, the exact counterpart of TopoOpt's repeated
max-weight matching."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyomo.environ as pyo


def build_bmatching(weights: np.ndarray, rounds: int, perfect: bool = True) -> pyo.ConcreteModel:
    """P3: ``max sum_{i<j} sum_c (w_ij + w_ji) / c * u_ijc`` with ``u_ijc <= u_ij(c-1)``, each
    server in ``rounds`` links (``== rounds`` when ``perfect``), ``u`` binary. The exact counterpart
    of ``rounds`` rounds of damped max-weight matching; an optimal ``perfect`` solution is a
    ``rounds``-regular multigraph, i.e. ``rounds`` perfect matchings by Koenig's theorem when the
    graph is bipartite (checked after the solve, not assumed, since the pair graph is not)."""
    n = len(weights)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    model = pyo.ConcreteModel(name="topoopt_P3")
    model.P = pyo.Set(initialize=pairs, dimen=2)
    model.C = pyo.RangeSet(1, rounds)
    model.use = pyo.Var(model.P, model.C, domain=pyo.Binary)
    model.order = pyo.Constraint(
        model.P,
        model.C,
        rule=lambda m, i, j, c: pyo.Constraint.Skip if c == 1 else m.use[i, j, c] <= m.use[i, j, c - 1],
    )

    def degree(m: pyo.ConcreteModel, v: int) -> Any:
        used = sum(m.use[i, j, c] for i, j in m.P if v in (i, j) for c in m.C)
        return used == rounds if perfect else used <= rounds

    model.degree = pyo.Constraint(range(n), rule=degree)
    model.obj = pyo.Objective(
        expr=sum((weights[i][j] + weights[j][i]) / c * model.use[i, j, c] for i, j in pairs for c in model.C),
        sense=pyo.maximize,
    )
    return model


def bmatching_value(weights: np.ndarray, counts: dict[tuple[int, int], int]) -> float:
    """P3 objective of a link multiset ``{(i, j) i<j: count}``: sum of ``(w_ij + w_ji) * H(count)``."""
    return float(
        sum(
            (weights[i][j] + weights[j][i]) * sum(1 / c for c in range(1, k + 1))
            for (i, j), k in counts.items()
        )
    )
