"""A dual bound for the pipeline problem at any size, without the MILP (``--method bound``).

The bound is the largest of three valid lower bounds; each holds for every schedule the checker
accepts, so none can cut off an optimum.

* **Critical path**: the longest path through the precedence graph (P1) plus the lossless
  symmetry-breaking edges of Model P (P2: FIFO on keep-only instances, the F(0, j) chain
  otherwise; both keep some optimum, see :mod:`.milp`), with keep-mode durations (a mode only
  lengthens a pass) and lags. Model P's LP relaxation contains the same edges, so this part
  alone is what the LP gets from precedence.
* **Device load**: device d cannot start before the forwards of the stages in front of its
  first chunk have run (``head_d``), then runs its whole load, and on a fused backward the
  upstream backwards of the micro-batch it finishes last still follow (``tail_d``). This is
  Model P's load cut (P7) with the tail added.
* **Memory fill** (keep-only, one chunk per device): on stage s every micro-batch holds at least
  ``a_s`` from its F's start to its B's end, an interval no shorter than the round trip
  ``R_s = sum_{k >= s} (T_F + T_B) + 2 (p - 1 - s) c``. At most ``n_s = floor(cap_s / a_s)`` such
  intervals overlap (releases come first at equal times), so by colouring the interval graph
  with ``n_s`` colours some colour holds ``ceil(m / n_s)`` disjoint intervals:
  ``C >= head_s + ceil(m / n_s) R_s + tail_s`` and ``span >= ceil(m / n_s) R_s``.

For the per-stage span objective the bound is the largest of the device loads, the memory fill
and the chain from a device's first forward to its last pass. O(n + edges) for n passes.
"""

from __future__ import annotations

import math
from typing import Any

from coopt.formulations.pipeline.milp import fifo_is_lossless, successors, topological_order
from coopt.formulations.pipeline.model import Instance, PassKey


def _lag(instance: Instance, x: PassKey, y: PassKey) -> float:
    """The lag on edge x -> y (only data-flow edges between devices carry one)."""
    for q, lag in instance.predecessors(y):
        if q == x:
            return lag
    return 0.0


def _longest_paths(instance: Instance, sources: list[PassKey] | None = None) -> dict[PassKey, float]:
    """Earliest end of every pass in the precedence graph with the lossless edges (from time 0,
    or, with ``sources``, from the start of the first of them that reaches it; unreached passes
    are absent)."""
    succ = successors(instance)
    order = topological_order(succ)
    start: dict[PassKey, float] = {x: 0.0 for x in (sources if sources is not None else order)}
    end: dict[PassKey, float] = {}
    for x in order:
        if x not in start:
            continue
        end[x] = start[x] + instance.duration(x)
        for y in succ[x]:
            start[y] = max(start.get(y, 0.0), end[x] + _lag(instance, x, y))
    return end


def _head(instance: Instance, d: int) -> float:
    first = min(instance.stages_on(d))
    return sum(instance.t_f(k) + instance.lag(k, k + 1) for k in range(first))


def _tail(instance: Instance, d: int) -> float:
    """Time after device d's last pass: none when it may be a W; on a fused backward the last
    pass is some B(k, j) of d, after which B(k-1, j) ... B(0, j) follow."""
    if instance.split_backward:
        return 0.0
    first = min(instance.stages_on(d))
    return sum(instance.t_b(k) + instance.lag(k + 1, k) for k in range(first))


def _fill(instance: Instance, s: int) -> float | None:
    """ceil(m / n_s) R_s, the memory fill of stage s (keep-only, one chunk; else None)."""
    if instance.allow_recompute or instance.allow_offload or instance.chunks != 1:
        return None
    cap = instance.cap(s)
    if math.isinf(cap):
        return None
    room = math.floor(cap / instance.a(s) * (1 + 1e-12))
    if room < 1:
        return math.inf  # not even one micro-batch fits: infeasible
    trip = sum(instance.t_f(k) + instance.t_b(k) for k in range(s, instance.stages))
    trip += 2 * (instance.stages - 1 - s) * instance.lag_s
    return math.ceil(instance.microbatches / room) * trip


def lower_bound(instance: Instance, options: Any = None) -> float:
    """The dual bound (see the module docstring) in the instance's objective."""
    load = {d: sum(instance.duration(x) for x in instance.passes() if instance.device(x[1]) == d)
            for d in range(instance.stages)}
    fills = {d: _fill(instance, d) for d in range(instance.stages)}
    if instance.objective == "stage_span":
        best = max(load.values())
        for d in range(instance.stages):
            if fills[d] is not None:
                best = max(best, fills[d])
            on = [x for x in instance.passes() if instance.device(x[1]) == d]
            first = min(instance.stages_on(d))
            heads = [("F", first, j) for j in range(instance.microbatches)]
            if fifo_is_lossless(instance) or (first, d) == (0, 0):
                heads = heads[:1]  # FIFO (or the F(0) chain) makes F(first, 0) the first pass
            chain = min(max(_longest_paths(instance, [h]).get(x, 0.0) for x in on) for h in heads)
            best = max(best, chain)
        return best
    best = max(_longest_paths(instance).values())
    for d in range(instance.stages):
        best = max(best, _head(instance, d) + load[d] + _tail(instance, d))
        if fills[d] is not None:
            best = max(best, _head(instance, d) + fills[d] + _tail(instance, d))
    return best
