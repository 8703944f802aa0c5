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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


@dataclass
class _Slots:
    """Model T under construction: its variables, the modes, the slots and the durations in slots."""

    instance: Instance
    model: Any
    modes: list[str]
    T: range
    H: int
    tf: dict[int, int]
    tw: dict[int, int]
    tb: dict[tuple[int, str], int]
    td: dict[int, int]
    tu: dict[int, int]
    lag: int

    def add(self, row: Any) -> None:
        self.model.cons.add(row)

    def S(self, kind: str, i: tuple[int, int]) -> Any:
        """The start slot of pass ``kind`` of item i (linear in the start binaries)."""
        if kind == "W":
            return sum(t * self.model.w[i, t] for t in self.T)
        var = self.model.f if kind == "F" else self.model.b
        return sum(t * var[i, mu, t] for mu in self.modes for t in self.T)

    def E(self, kind: str, i: tuple[int, int]) -> Any:
        """The end slot of pass ``kind`` of item i (B's duration depends on the mode)."""
        k = i[0]
        if kind == "F":
            return self.S("F", i) + self.tf[k]
        if kind == "W":
            return self.S("W", i) + self.tw[k]
        return sum((t + self.tb[k, mu]) * self.model.b[i, mu, t] for mu in self.modes for t in self.T)


def _covering(var_start: Callable[[int], Any], duration: int, t: int) -> Any:
    """The starts of a pass of ``duration`` slots that cover slot t."""
    return sum(var_start(t0) for t0 in range(max(0, t - duration + 1), t + 1))


def build_time_indexed(instance: Instance, horizon: int, fifo: bool = False) -> pyo.ConcreteModel:
    """Model T over slots 0..horizon-1 (horizon must bound the optimal makespan)."""
    slots = _slots(instance, int(horizon))
    items = [(k, j) for k in range(instance.virtual_stages) for j in range(instance.microbatches)]
    for i in items:
        _item_rows(slots, i, fifo)
    for dev in range(instance.stages):
        on = [(k, j) for k in instance.stages_on(dev) for j in range(instance.microbatches)]
        _exclusivity_rows(slots, on)
        if instance.memory_cap_bytes is not None:
            _memory_rows(slots, on, dev)
    slots.model.objective = pyo.Objective(expr=slots.model.C, sense=pyo.minimize)
    return slots.model


def _slots(instance: Instance, H: int) -> _Slots:
    """The modes, the durations in slots (integers, else ValueError) and the variables."""
    K, m = instance.virtual_stages, instance.microbatches
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
    return _Slots(instance, model, modes, T, H, tf, tw, tb, td, tu, lag)


def _item_rows(x: _Slots, i: tuple[int, int], fifo: bool) -> None:
    """Item i: one mode, its passes once in that mode, precedence (FIFO under ``fifo``), C after
    every end, and its copies where it is offloaded."""
    instance, model, T, modes = x.instance, x.model, x.T, x.modes
    k, j = i
    x.add(sum(model.y[i, mu] for mu in modes) == 1)
    for mu in modes:
        x.add(sum(model.f[i, mu, t] for t in T) == model.y[i, mu])
        x.add(sum(model.b[i, mu, t] for t in T) == model.y[i, mu])
    if instance.split_backward:
        x.add(sum(model.w[i, t] for t in T) == 1)
    for kind in instance.kinds:
        for (qkind, qk, qj), q_lag in instance.predecessors((kind, k, j)):
            x.add(x.S(kind, i) >= x.E(qkind, (qk, qj)) + (x.lag if q_lag else 0))
        if fifo and j > 0:
            x.add(x.S(kind, i) >= x.E(kind, (k, j - 1)))
        x.add(x.E(kind, i) <= model.C)
    if instance.allow_offload:
        y = model.y[i, OFFLOAD]
        D = sum(t * model.d[i, t] for t in T)
        U = sum(t * model.u[i, t] for t in T)
        x.add(sum(model.d[i, t] for t in T) == y)
        x.add(sum(model.u[i, t] for t in T) == y)
        x.add(x.E("F", i) - x.H * (1 - y) <= D)
        x.add(D + x.td[k] * y <= U)
        x.add(x.S("B", i) >= U + x.tu[k] * y - x.H * (1 - y))


def _exclusivity_rows(x: _Slots, on: list[tuple[int, int]]) -> None:
    """One compute pass per device, and one copy per engine, in every slot."""
    model = x.model
    for t in x.T:
        busy = 0
        for i in on:
            k = i[0]
            for mu in x.modes:
                busy += _covering(lambda t0, i=i, mu=mu: model.f[i, mu, t0], x.tf[k], t)
                busy += _covering(lambda t0, i=i, mu=mu: model.b[i, mu, t0], x.tb[k, mu], t)
            if x.instance.split_backward:
                busy += _covering(lambda t0, i=i: model.w[i, t0], x.tw[k], t)
        x.add(busy <= 1)
        if x.instance.allow_offload:
            x.add(sum(_covering(lambda t0, i=i: model.d[i, t0], x.td[i[0]], t) for i in on) <= 1)
            x.add(sum(_covering(lambda t0, i=i: model.u[i, t0], x.tu[i[0]], t) for i in on) <= 1)


def _memory_rows(x: _Slots, on: list[tuple[int, int]], dev: int) -> None:
    """The level at every slot: cumulative allocations minus cumulative releases within the cap."""
    instance, model = x.instance, x.model
    for t in x.T:
        level = 0
        for i in on:
            k = i[0]
            a, a_w = instance.a(k), instance.a_w(k)
            for mu in x.modes:
                alloc, remat = instance.resident(k, _effective(instance, k, mu))
                level += alloc * sum(model.f[i, mu, t0] for t0 in range(t + 1))
                if remat:
                    level += remat * sum(model.b[i, mu, t0] for t0 in range(t + 1))
                level -= (a - a_w) * sum(model.b[i, mu, t0] for t0 in range(t + 1 - x.tb[k, mu]))
            if instance.split_backward:
                level -= a_w * sum(model.w[i, t0] for t0 in range(t + 1 - x.tw[k]))
            if instance.allow_offload:
                level -= instance.a_o(k) * sum(model.d[i, t0] for t0 in range(t + 1 - x.td[k]))
                level += instance.a_o(k) * sum(model.u[i, t0] for t0 in range(t + 1))
        x.add(level <= instance.cap(dev))


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
