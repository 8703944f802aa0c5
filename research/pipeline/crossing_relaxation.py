"""The crossing relaxation X(S): the memory slots of a few token stages, and the exact crossing
of two micro-batches in flight together on the stages after each (the pair table of
:mod:`coopt.problems.pipeline.crossing`), as a MILP whose dual bound is at most the optimum.

Applies where the pair table does (:func:`coopt.problems.pipeline.crossing.applies`).

**The relaxation X(S)** for a set S of token stages: for every s in S, variables ``f_j`` (start
of F(s, j), integer in units of q), ``b_j`` (end of B(s, j)), ``w_j`` (end of W(s, j)), rows
(X1)-(X6); (X7) links two consecutive tokens; one ``C``:

* (X1) ``b_j >= f_j + R_s`` (the chain F(s..K-1, j), B(K-1..s, j) with its lags),
  ``w_j >= b_j + T_W``;
* (X2) FIFO per lane: ``f_j >= f_{j-1} + T_F``, ``b_j >= b_{j-1} + T_B``, ``w_j >= w_{j-1} + T_W``;
* (X3) release times and tails of :mod:`.bound`: ``f_j >= r_F(s,j)``, ``b_j - T_B >= r_B(s,j)``,
  ``w_j - T_W >= r_W(s,j)``; ``C >= f_j + q_F(s,j)``, ``C >= b_j - T_B + q_B(s,j)``,
  ``C >= w_j - T_W + q_W(s,j)``;
* (X4) stage s's memory rule (:func:`.bound._memory_rule`, exact for a FIFO schedule): F(s, j)
  starts after ``b_{j-x-1}`` and ``w_{j-y-1}`` for one (x, y) that fits the cap (a binary per
  option, one chosen);
* (X5) for every pair ``i < k < i + n_s`` (``n_s = floor(cap / a)``; for ``k >= i + n_s`` FIFO and
  the cap put F(s, k) after B(s, i), so the pair is apart): either ``f_k - f_i >= R_s``, or
  ``f_k - f_i = delta`` for one ``delta`` of the table and ``(b_i - f_i, b_k - f_k) >= (A, B)`` for
  one of its Pareto pairs (binaries per option, one chosen);
* (X6) device s runs one pass at a time: W(s, i) before or after F(s, k) and B(s, k), a binary
  each, for ``i < k <= i + y_max`` (y_max the largest y of (X4); with ``a_W > 0`` later forwards
  start after ``w_i`` by (X4), with ``a_W = 0`` the range ``k < i + n_s`` is a choice: any subset
  of these rows is still a relaxation); for ``k < i`` the lanes and chains order them, and F(s, k)
  against B(s, i) is the pair table's ``sigma = s`` or not;
* (X7) for consecutive tokens ``s < t`` of S, the chains between them (superscripts name the
  token): ``f^t_j >= f^s_j + sum_{s <= k < t} (T_F(k) + c)``,
  ``b^s_j >= b^t_j + sum_{s <= k < t} (T_B(k) + c)``;
* ``C <= H``, H the makespan of a schedule the checker accepts.

**Validity.** The values of ``sigma*`` (``C = OPT <= H``) meet every row: (X1)-(X2) are its
chains and lanes, (X3) holds because r and q bound every FIFO schedule, (X4) is the cap on stage
s at F(s, j)'s start (the argument of :mod:`.bound`), (X6) is its device s, (X7) its data flow,
and (X5) because the restriction of
``sigma*`` to two micro-batches' F and B passes on stages s..K-1 is a FIFO schedule of the pair
problem (grid offsets, so ``delta`` is in the table or at least ``R_s``). So the optimum of X(S),
and every dual bound HiGHS proves for it after any time limit, is at most OPT. Nothing here
enters the checker: it only bounds.

**What it measured** (docs/notes/pipeline.md, "The crossing relaxation"): on the generator's size 16
seed 0 HiGHS proves the optimum of X({2}), 667, in about 41 CPU s with the horizon 692 (the
route's bound there is 662), and of X({2, 10}), 669, in about 2 CPU minutes with the horizon
682; but a schedule of 682 exists. Pair crossings on a few token stages cannot certify it, and
the solves take the route's 60 s or more, so X(S) is benchmarked
(``python -m research.pipeline.bench --crossing``), not part of Model P's cut.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.problems.pipeline.bound import _room, releases, tails
from coopt.problems.pipeline.crossing import applies, crossing_table, round_trip
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.model import Instance, PassKey
from coopt.solvers.highs import solve_model

__all__ = ["applies", "build_crossing", "crossing_bound"]


def build_crossing(instance: Instance, stages: Sequence[int], upper: float) -> pyo.ConcreteModel:
    """X(S) of the module docstring for the token stages ``stages``, in units of q, ``C <= upper``
    (seconds)."""
    q = time_unit(instance)
    # the checker's tolerance on the schedule that gave ``upper``, up to the next grid point: an
    # integer horizon keeps every big-M integer (HiGHS 1.16 with seed 0 claimed 62 as optimal on
    # seed 16 of the tests' Model N family with H = 63.000063, where 61 is feasible)
    H = float(math.ceil(upper / q * (1 + 1e-6)))
    model = pyo.ConcreteModel(name="pipeline-crossing")
    model.objective_unit = q
    model.C = pyo.Var(bounds=(0, H))
    model.cons = pyo.ConstraintList()
    release, tail = releases(instance), tails(instance)
    stages = sorted(set(stages))
    ends = {s: _token(model, instance, s, H, release, tail) for s in stages}
    for s, t in zip(stages, stages[1:], strict=False):  # (X7) the chains between two tokens
        ahead = sum(instance.t_f(k) + instance.lag(k, k + 1) for k in range(s, t)) / q
        back = sum(instance.t_b(k) + instance.lag(k + 1, k) for k in range(s, t)) / q
        for j in range(instance.microbatches):
            model.cons.add(ends[t][0][j] >= ends[s][0][j] + ahead)
            model.cons.add(ends[s][1][j] >= ends[t][1][j] + back)
    model.objective = pyo.Objective(expr=model.C, sense=pyo.minimize)
    return model


def _token(model: pyo.ConcreteModel, instance: Instance, s: int, H: float,
           release: dict[PassKey, float], tail: dict[PassKey, float]) -> tuple[Any, Any]:
    """Rows (X1)-(X6) of token stage s on ``model`` (components named after s); returns its
    (F(s, j) starts, B(s, j) ends)."""
    q = time_unit(instance)
    m = instance.microbatches
    R = round(round_trip(instance, s) / q)
    T_F, T_B, T_W = (round(instance.duration((x, s, 0)) / q) if x in instance.kinds else 0
                     for x in ("F", "B", "W"))
    J = range(m)
    first = {j: math.ceil(release[("F", s, j)] / q - 1e-9) for j in J}  # on the grid
    f = _new(model, f"f{s}", pyo.Var(J, domain=pyo.Integers, bounds=lambda _, j: (first[j], H)))
    b = _new(model, f"b{s}", pyo.Var(J, bounds=(0, H)))
    w = _new(model, f"w{s}", pyo.Var(J, bounds=(0, H)))
    C, add = model.C, model.cons.add
    split = instance.split_backward
    for j in J:  # (X1) - (X3)
        add(b[j] >= f[j] + R)
        add(w[j] >= b[j] + T_W)
        add(b[j] - T_B >= release[("B", s, j)] / q)
        add(f[j] + tail[("F", s, j)] / q <= C)
        add(b[j] - T_B + tail[("B", s, j)] / q <= C)
        if split:
            add(w[j] - T_W >= release[("W", s, j)] / q)
            add(w[j] - T_W + tail[("W", s, j)] / q <= C)
        if j:
            add(f[j] >= f[j - 1] + T_F)
            add(b[j] >= b[j - 1] + T_B)
            add(w[j] >= w[j - 1] + T_W)

    # (X4) the memory rule of stage s: one (x, y) that fits, as in bound._memory_rule
    room, a, a_w = instance.cap_room(s), instance.a(s), instance.a_w(s)
    options = []
    x = 0
    while (x + 1) * a <= room and x < m:
        options.append((x, m if a_w == 0 else x + math.floor((room - (x + 1) * a) / a_w)))
        x += 1
    o = _new(model, f"o{s}", pyo.Var(J, range(len(options)), domain=pyo.Binary))
    for j in J:
        add(sum(o[j, n] for n in range(len(options))) == 1)
        for n, (x, y) in enumerate(options):
            if j - x - 1 >= 0:
                add(f[j] >= b[j - x - 1] - H * (1 - o[j, n]))
            if a_w and j - y - 1 >= 0:
                add(f[j] >= w[j - y - 1] - H * (1 - o[j, n]))

    # (X6) W(s, i) and the later forwards and backwards on device s, one at a time
    if split:
        reach = max(y for _, y in options) if a_w else _room(instance, s) - 1
        later = [(i, k, kind) for i in J for k in range(i + 1, min(m, i + reach + 1)) for kind in "FB"]
        v = _new(model, f"v{s}", pyo.Var(later, domain=pyo.Binary))  # 1: W(s, i) runs first
        for i, k, kind in later:
            begin, end = (f[k], f[k] + T_F) if kind == "F" else (b[k] - T_B, b[k])
            add(begin >= w[i] - H * (1 - v[i, k, kind]))
            add(w[i] - T_W >= end - H * v[i, k, kind])

    # (X5) the pairs in flight together
    table = crossing_table(instance, s)
    pairs = [(i, i + g) for i in J for g in range(1, _room(instance, s)) if i + g < m]
    keys = [(i, k, d, n) for i, k in pairs for d, points in table.items() for n in range(len(points))]
    y = _new(model, f"y{s}", pyo.Var(keys, domain=pyo.Binary))
    apart = _new(model, f"apart{s}", pyo.Var(pairs, domain=pyo.Binary))
    by_pair: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i, k, d, n in keys:
        by_pair.setdefault((i, k), []).append((d, n))
    for i, k in pairs:
        chosen = by_pair.get((i, k), [])
        add(sum(y[i, k, d, n] for d, n in chosen) + apart[i, k] == 1)
        offset = sum(d * y[i, k, d, n] for d, n in chosen)
        add(f[k] - f[i] >= offset + R * apart[i, k])
        add(f[k] - f[i] <= offset + H * apart[i, k])
        add(b[i] - f[i] >= sum(table[d][n][0] * y[i, k, d, n] for d, n in chosen) + R * apart[i, k])
        add(b[k] - f[k] >= sum(table[d][n][1] * y[i, k, d, n] for d, n in chosen) + R * apart[i, k])
    return f, b


def _new(model: pyo.ConcreteModel, name: str, component: Any) -> Any:
    model.add_component(name, component)
    return component


def crossing_bound(instance: Instance, stages: Sequence[int], upper: float, time_limit: float = 60.0
                   ) -> tuple[float, float | None, str]:
    """(HiGHS' dual bound on X(S) for the token stages ``stages`` in seconds, capped at ``upper``;
    the relaxation's best value found; status): a valid lower bound on the optimum (module
    docstring) after any time limit."""
    model = build_crossing(instance, stages, upper)
    result = solve_model(model, SolveOptions(time_limit=time_limit, gap=1e-9, threads=1))
    if result.status == "infeasible":
        return upper, None, result.status  # only the tolerance on ``upper``'s schedule can do this
    bound = 0.0 if result.bound is None else result.bound * (1 - 1e-6)
    return min(bound, upper), result.objective, result.status
