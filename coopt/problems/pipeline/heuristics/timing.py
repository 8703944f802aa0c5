"""Shared machinery of the pipeline schedules: per-device pass orders (``Orders``), the fused
backward's extra edges (:func:`fused_waits`), timing an order with the event simulator of
:mod:`coopt.problems.pipeline.model` and judging it against the caps (:func:`_run`, :func:`_fits`),
the as-late-as-possible shift for the per-stage span (:func:`alap`) and the solution form
(:func:`_finish`), and the structural tests the heuristics declare their applicability with.

Guarantee: a schedule that leaves here went through the same simulator and the same peak rule as the
checker; one that does not fit raises ``NoSolution`` naming the device and its peak.
"""

from __future__ import annotations

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.model import (
    GB,
    KEEP,
    Deadlock,
    Instance,
    Item,
    PassKey,
    Timed,
    peaks,
    simulate,
    to_solution,
)

Orders = dict[int, list[PassKey]]


# -- structure the heuristics are built for (their declared applicability) ----------------------
def one_chunk_split(instance: Instance) -> bool:
    """One chunk per device and separate W passes (the Zero Bubble one-chunk schedules)."""
    return instance.chunks == 1 and instance.split_backward


def v_placement(instance: Instance) -> bool:
    """Two chunks per device in a V and separate W passes (the V schedules)."""
    return instance.chunks == 2 and instance.placement == "vshape" and instance.split_backward


def interleaved_placement(instance: Instance) -> bool:
    """Two or more chunks placed round-robin, p dividing m (Megatron's interleaved schedule)."""
    return (instance.chunks >= 2 and instance.placement == "interleaved"
            and instance.microbatches % instance.stages == 0)


def megatron_placement(instance: Instance) -> bool:
    """One chunk per device, or Megatron's interleaved placement (Megatron's schedules)."""
    return instance.chunks == 1 or interleaved_placement(instance)


def holds(instance: Instance, d: int, level: float) -> bool:
    """Device ``d``'s cap holds ``level`` bytes (the tolerance of :func:`_fits`)."""
    return level <= instance.cap(d) * (1 + 1e-9)


def _backward(instance: Instance, k: int, j: int) -> list[PassKey]:
    """B, followed at once by W when the backward is split (a fused full backward)."""
    return [("B", k, j), ("W", k, j)] if instance.split_backward else [("B", k, j)]


def _need_single_chunk(instance: Instance, name: str) -> None:
    if instance.chunks != 1:
        raise NoSolution(f"{name} runs one chunk per device; the instance has chunks = {instance.chunks}")


def _need_split(instance: Instance, name: str) -> None:
    if not instance.split_backward:
        raise NoSolution(f"{name} needs split_backward = true (separate W passes)")


Waits = dict[PassKey, list[tuple[PassKey, float]]]


def fused_waits(instance: Instance) -> Waits:
    """The edges of a fused backward (Megatron, GPipe, 1F1B): stage k sends its input gradient
    upstream only after its whole backward, B and W, so B(k-1, j) waits for W(k, j). Empty when
    the instance has no W passes. Zero Bubble's authors model 1F1B the same way
    (``scheduler/basic1f1b.py`` lines 13-17 emit one ``BW`` node per micro-batch)."""
    if not instance.split_backward:
        return {}
    return {
        ("B", k - 1, j): [(("W", k, j), instance.lag(k, k - 1))]
        for k in range(1, instance.virtual_stages)
        for j in range(instance.microbatches)
    }


def alap(instance: Instance, timed: Timed, waits: Waits | None = None) -> Timed:
    """The same per-device orders and modes, every pass as late as possible without delaying the
    makespan (reverse list scheduling). Memory is unchanged: on a device the events keep their
    order (copies are left as they are, so offloaded schedules are returned unchanged). O(n log n).
    """
    if timed.d2h:
        return timed
    modes = timed.modes

    def duration(x: PassKey) -> float:
        return instance.duration(x, modes.get(x[1:], KEEP))

    end_of = {x: t + duration(x) for x, t in timed.start.items()}
    horizon = max(end_of.values(), default=0.0)
    successors: dict[PassKey, list[tuple[PassKey, float]]] = {x: [] for x in timed.start}
    for x in timed.start:
        for q, lag in instance.predecessors(x) + (waits.get(x, []) if waits else []):
            successors[q].append((x, lag))
    order = sorted(timed.start, key=lambda x: (timed.start[x], x))
    nxt: dict[PassKey, PassKey] = {}
    last_on: dict[int, PassKey] = {}
    for x in reversed(order):
        d = instance.device(x[1])
        if d in last_on:
            nxt[x] = last_on[d]
        last_on[d] = x
    latest: dict[PassKey, float] = {}
    for x in reversed(order):
        finish = horizon
        for y, lag in successors[x]:
            finish = min(finish, latest[y] - lag)
        if x in nxt:
            finish = min(finish, latest[nxt[x]])
        latest[x] = finish - duration(x)
    return Timed(start=latest, modes=dict(modes), d2h={}, h2d={})


def _finish(instance: Instance, timed: Timed, waits: Waits | None = None, **extra) -> Solution:
    """The solution of a timed schedule under the instance's objective: for the per-stage span the
    better of the ASAP timing and its :func:`alap` shift (Zero Bubble's span timing); the
    makespan and the span of the chosen timing are reported beside the objective."""
    if instance.objective == "stage_span":
        shifted = alap(instance, timed, waits)
        if shifted.stage_span(instance) < timed.stage_span(instance) - 1e-12:
            timed = shifted
    return to_solution(
        instance, timed, makespan=timed.makespan(instance), stage_span=timed.stage_span(instance), **extra
    )


def _fits(instance: Instance, timed: Timed, name: str) -> Timed:
    over = [(d, peak) for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]
    if over:
        d, peak = over[0]
        raise NoSolution(f"{name}: device {d} needs {peak / GB:g} GB > cap {instance.cap(d) / GB:g} GB")
    return timed


def _run(
    instance: Instance,
    orders: Orders,
    name: str,
    modes: dict[Item, str] | None = None,
    waits: Waits | None = None,
) -> Timed:
    try:
        timed = simulate(instance, orders, modes, waits)
    except Deadlock as exc:
        raise NoSolution(f"{name}: {exc}") from None
    return _fits(instance, timed, name)


def _over_cap(instance: Instance, timed: Timed) -> list[int]:
    return [d for d, peak in enumerate(peaks(instance, timed)) if peak > instance.cap(d) * (1 + 1e-9)]
