"""The oracle of the pipeline problem: tiny seeded instances and their optimum found without Model P.

Three independent ways, chosen by the instance:

* **Enumeration** (no offload): every per-device order of the passes in which each item's own
  passes come F, B, W (any other order deadlocks; micro-batches of one kind may overtake each
  other), times every keep / recompute choice (with per-layer recompute, every count r = 0..L of
  recomputed layers per item), each timed by the ASAP event simulator of
  :mod:`.model` and kept when every device's peak fits its cap. For a fixed order and modes the
  memory level at every event depends on the order alone (one compute pass at a time, releases
  before allocations at equal times), so the ASAP timing is the shortest feasible one and the
  enumeration is exact for the makespan.
* **Model T** (offload allowed, one chunk: copy times are continuous decisions that an order
  enumeration cannot cover): the time-indexed MILP of :mod:`.timeindexed`, with no FIFO and as
  horizon the best checker-accepted heuristic schedule (else the serial bound). It shares no
  constraint with Model P (unit slots and cumulative memory sums against start times and pairwise
  order binaries), and it is exact on integer data: fix the order of all events of an optimal
  schedule, keep each release that came no later than an allocation no later than it; what
  remains is a system of difference constraints with integer right-hand sides, whose optimal
  vertex is integral and no longer, and every start of a tight chain from 0 is a sum of durations
  and lags, so it lies within the serial bound.
* **Model O** (offload allowed, two or more chunks, where Model T's LP relaxation is weak and it
  takes minutes): the order-encoded time-indexed constraint program of :mod:`.oracle_ti` over the
  same horizon, its least makespan (exact on the grid by the same argument, given in its
  docstring). It shares no constraint with Model T, Model S, Model M or Model P.

The generator draws integer times (so that Model T applies), a lag of 0 or 1, caps from below one
micro-batch's activation (infeasible) to a few, half of the recompute instances with L = 2 layers
per virtual stage (per-layer recompute, with even recompute times so that a half stays integral
for Model T), and sizes whose enumeration stays within about
20,000 timed schedules (with offload, at most four items, so that Model T stays within
seconds). The objective is the makespan (ASAP timing is not optimal for the
per-stage span).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

from coopt.problem import SolveOptions
from coopt.problems.pipeline import oracle_ti
from coopt.problems.pipeline.model import (
    GB,
    Deadlock,
    Instance,
    PassKey,
    peaks,
    simulate,
)
from coopt.problems.pipeline.timeindexed import build_time_indexed
from coopt.problems.pipeline.warm import incumbent
from coopt.solvers.highs import solve_model

#: (stages, micro-batches, chunks, placement, split backward) of the tiny instances.
SHAPES = (
    (2, 2, 1, "interleaved", True),
    (2, 2, 1, "interleaved", False),
    (3, 1, 1, "interleaved", True),
    (3, 2, 1, "interleaved", False),
    (2, 3, 1, "interleaved", False),
    (1, 3, 1, "interleaved", False),
    (2, 1, 2, "vshape", True),
    (2, 1, 2, "interleaved", False),
)
#: The shapes with offload, whose Model T stays within seconds (at most 4 items).
OFFLOAD_SHAPES = tuple(shape for shape in SHAPES if shape[0] * shape[1] * shape[2] <= 4)
#: Enumeration budget: orders times mode choices.
BUDGET = 20_000


def device_orders(instance: Instance, d: int) -> list[list[PassKey]]:
    """Every order of device d's passes in which each item's own passes come F, B, W."""
    chains = [
        [(x, k, j) for x in instance.kinds]
        for k in instance.stages_on(d)
        for j in range(instance.microbatches)
    ]
    total = sum(len(c) for c in chains)
    found: list[list[PassKey]] = []
    order: list[PassKey] = []
    heads = [0] * len(chains)

    def place() -> None:
        if len(order) == total:
            found.append(list(order))
            return
        for n, chain in enumerate(chains):
            if heads[n] < len(chain):
                order.append(chain[heads[n]])
                heads[n] += 1
                place()
                heads[n] -= 1
                order.pop()

    place()
    return found


def enumeration_size(instance: Instance) -> int:
    """How many timed schedules :func:`enumerate_optimum` tries."""
    per_device = 1
    for d in range(instance.stages):
        chains = len(instance.stages_on(d)) * instance.microbatches
        length = len(instance.kinds)
        per_device *= math.factorial(chains * length) // math.factorial(length) ** chains
    if not instance.allow_recompute:
        return per_device
    return per_device * math.prod(
        instance.layers(k) + 1 for k in range(instance.virtual_stages) for _ in range(instance.microbatches)
    )


def enumerate_optimum(instance: Instance) -> float | None:
    """Least makespan over every order combination and recompute choice (how many of its layers
    each item recomputes) that fits the caps (None when nothing fits). Refuses offload instances,
    which it cannot cover."""
    if instance.allow_offload:
        raise ValueError("enumeration does not cover offload (continuous copy times); use Model T")
    per_device = [device_orders(instance, d) for d in range(instance.stages)]
    items = [(k, j) for k in range(instance.virtual_stages) for j in range(instance.microbatches)]
    choices: list[dict] = [{}]
    if instance.allow_recompute:
        counts = itertools.product(*(range(instance.layers(k) + 1) for k, _ in items))
        choices = [
            {i: instance.recompute_mode(i[0], r) for i, r in zip(items, chosen, strict=True) if r}
            for chosen in counts
        ]
    best = math.inf
    for combo in itertools.product(*per_device):
        orders = dict(enumerate(combo))
        for chosen in choices:
            try:
                timed = simulate(instance, orders, chosen)
            except Deadlock:
                continue
            if all(pk <= instance.cap(d) * (1 + 1e-9) for d, pk in enumerate(peaks(instance, timed))):
                best = min(best, timed.makespan(instance))
    return None if best == math.inf else best


def horizon(instance: Instance) -> int:
    """A horizon no shorter than the optimum: the best schedule among the heuristics' that the
    checker accepts, else the serial bound (:func:`.warm.incumbent`)."""
    return int(math.floor(incumbent(instance)[0] + 1e-9))


def time_indexed_optimum(instance: Instance) -> float | None:
    """Model T's optimum over :func:`horizon` slots (integer data only). With one chunk per
    device, a cap below a stage's activation is infeasible whatever the modes (every item holds
    ``a`` at its F start, or at its recomputing B start), and any cap at or above it is feasible
    (one micro-batch at a time): that case needs no model."""
    too_small = any(instance.a(k) > instance.cap(k) * (1 + 1e-9) for k in range(instance.stages))
    if instance.chunks == 1 and too_small:
        return None
    model = build_time_indexed(instance, horizon(instance))
    result = solve_model(model, SolveOptions(time_limit=300, gap=1e-9))
    if result.status == "infeasible":
        return None
    if result.status != "optimal":
        raise RuntimeError(f"Model T did not prove optimality ({result.status})")
    return result.objective


def order_encoded_optimum(instance: Instance) -> float | None:
    """Model O's least makespan within :func:`horizon` (None: no schedule fits)."""
    answer = oracle_ti.least_makespan(instance, horizon(instance), time_limit=300)
    if answer.status == "infeasible":
        return None
    if answer.status != "optimal":
        raise RuntimeError(f"Model O did not prove optimality ({answer.status})")
    return answer.makespan


def optimum(instance: Instance) -> float | None:
    """The oracle: enumeration without offload; with it, Model T on one chunk, Model O on more."""
    if not instance.allow_offload:
        return enumerate_optimum(instance)
    return time_indexed_optimum(instance) if instance.chunks == 1 else order_encoded_optimum(instance)


def tiny(seed: int) -> Instance:
    """A seeded tiny instance (see the module docstring)."""
    rng = random.Random(seed)
    mode = rng.choice(("keep", "keep", "recompute", "offload", "both"))
    rec = mode in ("recompute", "both")
    off = mode in ("offload", "both")
    p, m, v, placement, split = rng.choice(OFFLOAD_SHAPES if off else SHAPES)

    def ints(lo: int, hi: int) -> tuple[float, ...]:
        return tuple(float(rng.randint(lo, hi)) for _ in range(p))

    a = tuple(x * GB for x in ints(1, 4))
    instance = Instance(
        stages=p,
        microbatches=m,
        chunks=v,
        placement=placement,
        split_backward=split,
        forward_s=tuple(x * v for x in ints(1, 3)),
        backward_s=tuple(x * v for x in ints(1, 3)),
        weight_s=tuple(x * v for x in ints(1, 2)) if split else (0.0,) * p,
        activation_bytes=tuple(x * v for x in a),
        weight_grad_bytes=tuple(x * v * rng.choice((0.0, 0.5)) for x in a) if split else (0.0,) * p,
        memory_cap_bytes=tuple(x * v * rng.choice((0.75, 1.0, 1.0, 1.5, 1.5, 2.0, 3.0)) for x in a),
        lag_s=float(rng.choice((0, 0, 1))),
        allow_recompute=rec,
        recompute_s=tuple(x * v for x in ints(1, 2)) if rec else (),
        checkpoint_bytes=tuple(x * v * rng.choice((0.0, 0.25, 0.5)) for x in a) if rec else (),
        allow_offload=off,
        offload_bytes=tuple(x * v * rng.choice((0.5, 1.0)) for x in a) if off else (),
        d2h_s=tuple(x * v for x in ints(1, 2)) if off else (),
        h2d_s=tuple(x * v for x in ints(1, 2)) if off else (),
    )
    if rec and rng.random() < 0.5:
        layered = replace(instance, recompute_layers=(2,) * p,
                          recompute_s=tuple(2 * x for x in instance.recompute_s))
        if off or enumeration_size(layered) <= BUDGET:
            instance = layered
    if not off and enumeration_size(instance) > BUDGET:
        instance = replace(instance, allow_recompute=False, recompute_s=(), checkpoint_bytes=())
    return instance
