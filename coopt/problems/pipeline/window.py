"""The window relaxation bound: a few stages kept exactly, the rest relaxed.

Applies where the memory rule of :mod:`.bound` does (keep-only, one chunk per device, a cap,
makespan objective), so that FIFO per lane is lossless (Model P's (P2)): some optimal schedule
``sigma*`` is FIFO, and the release times ``r_x`` and tails ``q_x`` of :mod:`.bound` hold for it.

**The relaxation R(s, e)** for stages ``s <= e`` (the window): every F, B and W pass of the
window's stages, with

* (W1) ``r_x <= S_x`` and ``S_x + q_x <= C`` for every window pass (the bound's release times
  stand for the stages before s, its tails for everything after B(s, j) / W(k, j));
* (W2) inside the window the data flow of the original, with its lags:
  ``S_F(k,j) >= E_F(k-1,j) + c`` (s < k <= e), ``S_B(k,j) >= E_B(k+1,j) + c`` (s <= k < e),
  ``S_W(k,j) >= E_B(k,j)``, FIFO per lane ``S_X(k,j) >= E_X(k,j-1)``;
* (W3) the stages after e as a pure delay with unlimited capacity:
  ``S_B(e,j) >= E_F(e,j) + D_e``, ``D_e`` the shortest F(e+1, j) ... B(e+1, j) round trip with
  its lags (0 when e is the last stage, where B follows F directly);
* (W4) one pass at a time per window device, order binaries ``P`` for the pairs whose order
  FIFO and (W2)-(W3) leave open: (F(k,i), B(k,j)), (F(k,i), W(k,j)), (B(k,i), W(k,j)) with
  i > j (for i <= j the first runs first in every FIFO schedule, through the lane and the chain);
* (W5) the cap of every window stage at every forward start: with FIFO and one pass at a time,
  micro-batch j < i still holds ``a`` at F(k,i)'s start iff F(k,i) precedes B(k,j), and ``a_W``
  iff B(k,j) precedes it but F(k,i) precedes W(k,j) (releases first at equal times), so
  ``a + sum_{j<i} (a - a_W) P_{F_i,B_j} + a_W P_{F_i,W_j} <= cap``; later micro-batches hold
  nothing yet (FIFO). The same rows as Model P's (P4), for the window's stages only;
* (W6) valid FIFO consequences on the binaries: ``P_{F_i,B_j} <= P_{F_i,B_{j+1}}``,
  ``P_{F_{i+1},B_j} <= P_{F_i,B_j}`` (same for W), ``P_{F_i,B_j} <= P_{F_i,W_j}``;
* ``C <= H (1 + 1e-6)``, H the makespan of a schedule the checker accepts (the caller's).

**Validity.** Restrict ``sigma*`` (FIFO, makespan ``OPT <= H``) to the window's passes. (W1)
holds because ``r`` and ``q`` bound every FIFO schedule (:mod:`.bound`); (W2) and (W4)-(W6) are
rows of the original that ``sigma*`` meets (W6 follows from FIFO and exclusivity); (W3) holds
because in ``sigma*`` B(e, j) follows the chain F(e+1, j) ... B(e+1, j) with its lags, whatever
waits the downstream devices add. So the restriction is feasible for R(s, e) with ``C = OPT``,
and the optimum of R(s, e), and every dual bound HiGHS proves for it (after any time limit),
is at most OPT. Nothing of the relaxation enters the checker: it only bounds.

What the window sees that :func:`.bound.releases` does not: several micro-batches in flight at
once on the window's devices, whose forwards and backwards cross there (the generator's size 16
seed 0: stage 2 holds three micro-batches whose round trips lengthen where they cross
downstream). Model P's cut (P9) takes the one-stage windows R(s, s) of :func:`lower_bound`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.problems.pipeline.bound import _fill, _head, _room, _tail, memory_rule_applies, releases, tails
from coopt.problems.pipeline.model import Instance, PassKey
from coopt.solvers.highs import solve_model


def applies(instance: Instance) -> bool:
    """The window relaxation is valid: the memory rule's conditions and the makespan objective."""
    return memory_rule_applies(instance) and instance.objective == "makespan"


def _delay(instance: Instance, e: int) -> float:
    """D_e: F(e, j)'s end to B(e, j)'s start through the stages after e, nothing waiting."""
    K = instance.virtual_stages
    if e == K - 1:
        return 0.0
    trip = sum(instance.t_f(k) + instance.t_b(k) for k in range(e + 1, K))
    lags = sum(instance.lag(k, k + 1) + instance.lag(k + 1, k) for k in range(e, K - 1))
    return trip + lags


@dataclass
class _Window:
    """R(s, e) under construction: the window's stages and passes, the time unit ``u``, the
    start windows ``lo``/``hi`` and the model."""

    instance: Instance
    stages: range
    passes: list[PassKey]
    u: float
    lo: dict[PassKey, float]
    hi: dict[PassKey, float]
    model: Any

    def d(self, x: PassKey) -> float:
        return self.instance.duration(x) / self.u

    def E(self, x: PassKey) -> Any:
        return self.model.S[x] + self.d(x)


def build_window(instance: Instance, s: int, e: int, upper: float) -> pyo.ConcreteModel:
    """R(s, e) of the module docstring, in time units of the longest pass, ``C <= upper``."""
    m = instance.microbatches
    stages = range(s, e + 1)
    passes = [(x, k, j) for k in stages for x in instance.kinds for j in range(m)]
    u = max(instance.duration(x) for x in passes)
    release, tail = releases(instance), tails(instance)
    M = upper / u * (1 + 1e-6)  # the checker's tolerance on the schedule that gave ``upper``
    lo = {x: release[x] / u for x in passes}
    hi = {x: max(lo[x], M - tail[x] / u) for x in passes}

    model = pyo.ConcreteModel(name="pipeline-window")
    model.objective_unit = u
    model.S = pyo.Var(passes, bounds=lambda _, *x: (lo[x], hi[x]))
    model.C = pyo.Var(bounds=(0, M))
    model.cons = pyo.ConstraintList()
    w = _Window(instance, stages, passes, u, lo, hi, model)
    _flow(w, tail, s, e)
    order = _order(w)
    _memory(w, order)
    model.objective = pyo.Objective(expr=model.C, sense=pyo.minimize)
    return model


def _flow(w: _Window, tail: dict[PassKey, float], s: int, e: int) -> None:
    """(W1) tails; (W2) data flow inside the window and FIFO; (W3) the stages after the window
    as a pure delay."""
    instance, model, add, u = w.instance, w.model, w.model.cons.add, w.u
    for x in w.passes:
        kind, k, j = x
        add(model.S[x] + tail[x] / u <= model.C)
        if j > 0:
            add(model.S[x] >= w.E((kind, k, j - 1)))
        if kind == "F" and k > s:
            add(model.S[x] >= w.E(("F", k - 1, j)) + instance.lag(k - 1, k) / u)
        if kind == "B" and k < e:
            add(model.S[x] >= w.E(("B", k + 1, j)) + instance.lag(k + 1, k) / u)
        if kind == "W":
            add(model.S[x] >= w.E(("B", k, j)))
    for j in range(instance.microbatches):
        add(model.S[("B", e, j)] >= w.E(("F", e, j)) + _delay(instance, e) / u)


def _second(instance: Instance) -> tuple[str, ...]:
    """The kinds that run after a later micro-batch's forward is ordered against them."""
    return ("B", "W") if instance.split_backward else ("B",)


def _order(w: _Window) -> dict[tuple[PassKey, PassKey], Any]:
    """(W4) exclusivity: P[x, y] = 1 iff x runs first; a constant where the windows decide it."""
    model, add, lo, hi = w.model, w.model.cons.add, w.lo, w.hi
    order: dict[tuple[PassKey, PassKey], Any] = {}
    free = []
    for k in w.stages:
        for i in range(w.instance.microbatches):
            for j in range(i):
                for y_kind in _second(w.instance):
                    for x_kind in ("F", "B") if y_kind == "W" else ("F",):
                        x, y = (x_kind, k, i), (y_kind, k, j)
                        if hi[x] + w.d(x) <= lo[y]:
                            order[x, y] = 1
                        elif hi[y] + w.d(y) <= lo[x]:
                            order[x, y] = 0
                        else:
                            free.append((x, y))
    model.P = pyo.Var(free, domain=pyo.Binary)
    for x, y in free:
        order[x, y] = model.P[x, y]
        add(model.S[y] >= w.E(x) - (hi[x] + w.d(x) - lo[y]) * (1 - model.P[x, y]))
        add(model.S[x] >= w.E(y) - (hi[y] + w.d(y) - lo[x]) * model.P[x, y])
    return order


def _memory(w: _Window, order: dict[tuple[PassKey, PassKey], Any]) -> None:
    """(W5) the cap at every forward start; (W6) FIFO consequences on the binaries."""
    instance, model, add, m = w.instance, w.model, w.model.cons.add, w.instance.microbatches
    for k in w.stages:
        a, a_w = instance.a(k), instance.a_w(k)
        g = max(a, 1.0)
        room = instance.cap_room(k) / g
        for i in range(1, m):
            level = a / g
            for j in range(i):
                level = level + (a - a_w) / g * order[("F", k, i), ("B", k, j)]
                if a_w:
                    level = level + a_w / g * order[("F", k, i), ("W", k, j)]
            if not isinstance(level, float):
                add(level <= room)
            elif level > room:
                add(model.C <= -1)  # cannot happen for a FIFO schedule's restriction
        for kind in _second(instance):
            for i in range(m):
                for j in range(i):
                    here = order[("F", k, i), (kind, k, j)]
                    if j + 1 < i:
                        _at_most(add, here, order[("F", k, i), (kind, k, j + 1)])
                    if i + 1 < m:
                        _at_most(add, order[("F", k, i + 1), (kind, k, j)], here)
                    if kind == "W":
                        _at_most(add, order[("F", k, i), ("B", k, j)], here)


def _at_most(add, x, y) -> None:
    """x <= y for binaries or their constant values (rows between two constants are implied
    by the windows, which every FIFO schedule with C <= H meets)."""
    if not (isinstance(x, int) and isinstance(y, int)):
        add(x <= y)


def window_bound(instance: Instance, s: int, e: int, upper: float, time_limit: float = 5.0
                 ) -> tuple[float, float | None, str]:
    """(HiGHS' dual bound on R(s, e) in seconds, the relaxation's best value found, status);
    a valid lower bound on the optimum (module docstring) whatever the time limit."""
    model = build_window(instance, s, e, upper)
    result = solve_model(model, SolveOptions(time_limit=time_limit, gap=1e-9, threads=1))
    if result.status == "infeasible":
        return math.inf, None, result.status
    bound = 0.0 if result.bound is None else result.bound * (1 - 1e-6)
    return bound, result.objective, result.status


def lower_bound(instance: Instance, upper: float, stages: int = 2, time_limit: float = 2.0) -> float:
    """The largest dual bound of the one-stage windows R(s, s) on the ``stages`` stages with the
    largest memory fill (:func:`.bound._fill` with head and tail), each solved for at most
    ``time_limit`` seconds; 0 where the relaxation does not apply or no cap binds. ``upper`` is
    the makespan of a schedule the checker accepts (or another upper bound on the optimum)."""
    if not applies(instance):
        return 0.0
    fill = {s: _fill(instance, s) for s in range(instance.virtual_stages)}
    binding = [s for s, f in fill.items() if f is not None and math.isfinite(f)
               and _room(instance, s) < instance.microbatches]
    binding.sort(key=lambda s: -(_head(instance, s) + fill[s] + _tail(instance, s)))
    # capped at ``upper``: a feasible makespan, which no valid bound exceeds (an infeasible
    # window could only come from the tolerance on the schedule that gave it)
    return max((min(window_bound(instance, s, s, upper, time_limit)[0], upper)
                for s in binding[:stages]), default=0.0)
