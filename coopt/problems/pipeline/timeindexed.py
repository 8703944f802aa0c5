"""Model T: a time-indexed MILP for pipeline schedules, the independent cross-check of Model P on
tiny instances with integer durations (research-pipeline-memory.md b.2).

Unit slots ``t = 0..H-1``; binaries ``f[i,mu,t]`` / ``b[i,mu,t]`` (F / B of item i = (k, j) in
mode mu starts at t), ``w[i,t]`` (W starts at t), ``d[i,t]`` / ``u[i,t]`` (D2H / H2D start at t),
``y[i,mu]`` (mode choice among keep, recompute of r = 1..L-1 of the virtual stage's L layers
(per-layer recompute), full recompute and offload):

* each item picks one mode, its F and B start once in that mode, W once; copies exist iff offload;
* precedence on the linear start/end expressions ``S = sum t x``, ``E = sum (t + d_mu) x``;
  offload links ``D >= E_F``, ``U >= D + tau_d``, ``S_B >= U + tau_u`` relaxed by M(1 - y_off);
* one compute pass per device and one copy per engine in every slot;
* memory is linear at every slot: cumulative allocations (F starts, recompute B starts, H2D
  starts) minus cumulative releases (B, W, D2H ends) up to and including t stay within the cap.

No FIFO restriction unless ``fifo=True``, so Model P (which imposes FIFO) can be tested against it.
Size about (2|modes| + 1) p v m H binaries: only for p m <= ~12.
"""

from __future__ import annotations

import pyomo.environ as pyo

from coopt.problem import Solution
from coopt.problems.pipeline.model import (
    KEEP,
    OFFLOAD,
    PARTIAL,
    RECOMPUTE,
    Instance,
    Timed,
    to_solution,
)


def _integer(value: float, what: str) -> int:
    if abs(value - round(value)) > 1e-9:
        raise ValueError(f"the time-indexed model needs integer durations; {what} = {value}")
    return int(round(value))


def _effective(instance: Instance, k: int, mu: str) -> str:
    """Mode mu on virtual stage k (a partial count at or above k's layers is full recompute)."""
    return mu if mu in (KEEP, OFFLOAD) else instance.recompute_mode(k, instance.recomputed(k, mu))


def build_time_indexed(instance: Instance, horizon: int, fifo: bool = False) -> pyo.ConcreteModel:
    """Model T over slots 0..horizon-1 (horizon must bound the optimal makespan)."""
    K, m, H = instance.virtual_stages, instance.microbatches, int(horizon)
    items = [(k, j) for k in range(K) for j in range(m)]
    layers = max((instance.layers(k) for k in range(K)), default=1)
    modes = (
        [KEEP]
        + ([f"{PARTIAL}{r}" for r in range(1, layers)] + [RECOMPUTE] if instance.allow_recompute else [])
        + ([OFFLOAD] if instance.allow_offload else [])
    )
    T = range(H)
    tf = {k: _integer(instance.t_f(k), "T_F") for k in range(K)}
    tw = {k: _integer(instance.t_w(k), "T_W") for k in range(K)}
    tb = {
        (k, mu): _integer(instance.duration(("B", k, 0), _effective(instance, k, mu)), "T_B")
        for k in range(K)
        for mu in modes
    }
    td = {k: _integer(instance.tau_d(k), "tau_d") for k in range(K)} if instance.allow_offload else {}
    tu = {k: _integer(instance.tau_u(k), "tau_u") for k in range(K)} if instance.allow_offload else {}
    lag = _integer(instance.lag_s, "lag")

    model = pyo.ConcreteModel(name="pipeline_time_indexed")
    model.y = pyo.Var(items, modes, domain=pyo.Binary)
    model.f = pyo.Var(items, modes, T, domain=pyo.Binary)
    model.b = pyo.Var(items, modes, T, domain=pyo.Binary)
    if instance.split_backward:
        model.w = pyo.Var(items, T, domain=pyo.Binary)
    if instance.allow_offload:
        model.d = pyo.Var(items, T, domain=pyo.Binary)
        model.u = pyo.Var(items, T, domain=pyo.Binary)
    model.C = pyo.Var(bounds=(0, H))
    model.cons = pyo.ConstraintList()
    add = model.cons.add

    def S(kind, i):
        if kind == "W":
            return sum(t * model.w[i, t] for t in T)
        var = model.f if kind == "F" else model.b
        return sum(t * var[i, mu, t] for mu in modes for t in T)

    def E(kind, i):
        k = i[0]
        if kind == "F":
            return S("F", i) + tf[k]
        if kind == "W":
            return S("W", i) + tw[k]
        return sum((t + tb[k, mu]) * model.b[i, mu, t] for mu in modes for t in T)

    for i in items:
        k, j = i
        add(sum(model.y[i, mu] for mu in modes) == 1)
        for mu in modes:
            add(sum(model.f[i, mu, t] for t in T) == model.y[i, mu])
            add(sum(model.b[i, mu, t] for t in T) == model.y[i, mu])
        if instance.split_backward:
            add(sum(model.w[i, t] for t in T) == 1)
        for kind in instance.kinds:
            for (qkind, qk, qj), q_lag in instance.predecessors((kind, k, j)):
                add(S(kind, i) >= E(qkind, (qk, qj)) + (lag if q_lag else 0))
            if fifo and j > 0:
                add(S(kind, i) >= E(kind, (k, j - 1)))
            add(E(kind, i) <= model.C)
        if instance.allow_offload:
            y = model.y[i, OFFLOAD]
            D = sum(t * model.d[i, t] for t in T)
            U = sum(t * model.u[i, t] for t in T)
            add(sum(model.d[i, t] for t in T) == y)
            add(sum(model.u[i, t] for t in T) == y)
            add(E("F", i) - H * (1 - y) <= D)
            add(D + td[k] * y <= U)
            add(S("B", i) >= U + tu[k] * y - H * (1 - y))

    def covering(var_start, duration, t):
        return sum(var_start(t0) for t0 in range(max(0, t - duration + 1), t + 1))

    for dev in range(instance.stages):
        on = [(k, j) for k in instance.stages_on(dev) for j in range(m)]
        for t in T:
            busy = 0
            for i in on:
                k = i[0]
                for mu in modes:
                    busy += covering(lambda t0, i=i, mu=mu: model.f[i, mu, t0], tf[k], t)
                    busy += covering(lambda t0, i=i, mu=mu: model.b[i, mu, t0], tb[k, mu], t)
                if instance.split_backward:
                    busy += covering(lambda t0, i=i: model.w[i, t0], tw[k], t)
            add(busy <= 1)
            if instance.allow_offload:
                add(sum(covering(lambda t0, i=i: model.d[i, t0], td[i[0]], t) for i in on) <= 1)
                add(sum(covering(lambda t0, i=i: model.u[i, t0], tu[i[0]], t) for i in on) <= 1)
        if instance.memory_cap_bytes is None:
            continue
        for t in T:
            level = 0
            for i in on:
                k = i[0]
                a, a_w = instance.a(k), instance.a_w(k)
                for mu in modes:
                    alloc, remat = instance.resident(k, _effective(instance, k, mu))
                    level += alloc * sum(model.f[i, mu, t0] for t0 in range(t + 1))
                    if remat:
                        level += remat * sum(model.b[i, mu, t0] for t0 in range(t + 1))
                    level -= (a - a_w) * sum(model.b[i, mu, t0] for t0 in range(t + 1 - tb[k, mu]))
                if instance.split_backward:
                    level -= a_w * sum(model.w[i, t0] for t0 in range(t + 1 - tw[k]))
                if instance.allow_offload:
                    level -= instance.a_o(k) * sum(model.d[i, t0] for t0 in range(t + 1 - td[k]))
                    level += instance.a_o(k) * sum(model.u[i, t0] for t0 in range(t + 1))
            add(level <= instance.cap(dev))
    model.objective = pyo.Objective(expr=model.C, sense=pyo.minimize)
    return model


def extract_time_indexed(model: pyo.ConcreteModel, instance: Instance) -> Solution:
    """The timed schedule of a solved Model T."""
    K, m = instance.virtual_stages, instance.microbatches
    H = len(list(model.C.bounds and range(int(model.C.ub))))
    start, modes, d2h, h2d = {}, {}, {}, {}

    def when(var, *index) -> float:
        return float(next(t for t in range(H) if pyo.value(var[(*index, t)]) > 0.5))

    for k in range(K):
        for j in range(m):
            i = (k, j)
            mu = next(mu for (*item, mu) in model.y if tuple(item) == i and pyo.value(model.y[i, mu]) > 0.5)
            if mu != KEEP:
                modes[i] = _effective(instance, k, mu)
            start[("F", k, j)] = when(model.f, k, j, mu)
            start[("B", k, j)] = when(model.b, k, j, mu)
            if instance.split_backward:
                start[("W", k, j)] = when(model.w, k, j)
            if mu == OFFLOAD:
                d2h[i], h2d[i] = when(model.d, k, j), when(model.u, k, j)
    return to_solution(instance, Timed(start=start, modes=modes, d2h=d2h, h2d=h2d))
