"""PipeOffload (Wan et al., ICML 2025; the authors' ``scheduler/offloading.py`` read and
rewritten): the validity rule of an offloaded activation (:func:`offload_valid`), the shared copy
slot train that places the copies in the gaps of a timed schedule (:func:`slot_train`), the greedy
that adds items to it until a device fits (:func:`_offload_until_fit`) and the chunk-level policy on
the uncapped base schedule of the instance's placement (:func:`pipeoffload`).

Guarantee: copies only fill gaps, so pass times stay the base schedule's; every copy passes the
validity rule and the slot train's order; the result fits every cap or raises ``NoSolution``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from coopt.problem import NoSolution, Solution
from coopt.problems.pipeline.heuristics.classic import interleaved_one_f_one_b, one_f_one_b, zb_h1
from coopt.problems.pipeline.heuristics.timing import _finish, _over_cap, interleaved_placement, v_placement
from coopt.problems.pipeline.heuristics.zero_bubble import zb_v
from coopt.problems.pipeline.model import (
    KEEP,
    OFFLOAD,
    Instance,
    Item,
    Timed,
    parse,
    peaks,
)

#: The base schedules of PipeOffload, by the placement they serve.
_BASES = {"zb_v": zb_v, "interleaved_1f1b": interleaved_one_f_one_b, "zb_h1": zb_h1, "1f1b": one_f_one_b}


def offload_valid(instance: Instance, timed: Timed, item: Item) -> bool:
    """PipeOffload's validity rule (``scheduler/offloading.py`` ``add_send_recv``, line 128):
    offload item (k, j) only if ``B.start - T_B - F.end > 3 (tau_d + tau_u)``: the backward's own
    length is kept as a buffer before it, and the round trip must fit three times in the rest."""
    k, j = item
    f_end = timed.start[("F", k, j)] + instance.t_f(k)
    b_start = timed.start[("B", k, j)]
    b_length = instance.duration(("B", k, j), timed.modes.get(item, KEEP))
    return b_start - b_length - f_end > 3 * (instance.tau_d(k) + instance.tau_u(k))


def slot_train(instance: Instance, timed: Timed, items: list[Item]) -> Timed:
    """``timed`` with the valid ``items`` offloaded on PipeOffload's copy slot train
    (``scheduler/offloading.py`` ``add_send_recv``, lines 114-165, and ``add_offload_passes``,
    lines 331-336): device d's copies run in slots of length ``tau_d + tau_u`` from
    ``(d mod 2) tau_d`` on (the two devices of a pair alternate on their shared link), a D2H at
    a slot's start, an H2D right after it. Sends take the first free slot after their F ends, in
    F order; receives, from the last B back, the latest free slot that ends by
    ``B.start - T_B``; an item whose receive would not start after its send ends is dropped, as
    PipeOffload's assertion forbids it. Pass times are unchanged (copies only fill gaps).
    O(n log n)."""
    by_device: dict[int, list[Item]] = {}
    for item in items:
        if timed.modes.get(item, KEEP) == KEEP and offload_valid(instance, timed, item):
            by_device.setdefault(instance.device(item[0]), []).append(item)
    modes, d2h, h2d = dict(timed.modes), {}, {}
    for d, chosen in by_device.items():
        k0 = chosen[0][0]
        tau_d, tau_u = instance.tau_d(k0), instance.tau_u(k0)
        period, origin = tau_d + tau_u, (d % 2) * tau_d
        sends: dict[Item, int] = {}
        slot = 0
        for item in sorted(chosen, key=lambda i: timed.start[("F", *i)]):
            f_end = timed.start[("F", *item)] + instance.t_f(item[0])
            slot = max(slot, math.ceil((f_end - origin) / period - 1e-9))
            sends[item] = slot
            slot += 1
        receives: dict[Item, int] = {}
        slot = math.inf
        for item in sorted(chosen, key=lambda i: -timed.start[("B", *i)]):
            b_start = timed.start[("B", *item)]
            latest_end = b_start - instance.duration(("B", *item), KEEP)
            last = math.floor((latest_end - origin - tau_d - tau_u) / period + 1e-9)
            slot = min(slot - 1, last)
            if origin + slot * period + tau_d <= origin + sends[item] * period + tau_d + 1e-9:
                continue  # the receive would not start after the send ends: not offloaded
            receives[item] = slot
        for item, r in receives.items():
            modes[item] = OFFLOAD
            d2h[item] = origin + sends[item] * period
            h2d[item] = origin + r * period + tau_d
    return Timed(start=dict(timed.start), modes=modes, d2h=d2h, h2d=h2d)


def _offload_until_fit(instance: Instance, base: Timed) -> Timed | None:
    """Add items to the slot train, longest F-end -> B-start gap times offloaded bytes first on a
    device over its cap, as many per round as the excess certainly needs, until every device fits
    (None when the valid items run out)."""
    chosen: list[Item] = []
    timed = base
    while True:
        over = _over_cap(instance, timed)
        if not over:
            return timed
        d = over[0]
        left = [
            (k, j)
            for k in instance.stages_on(d)
            for j in range(instance.microbatches)
            if (k, j) not in chosen and offload_valid(instance, base, (k, j))
        ]
        if not left:
            return None

        def value(item: Item) -> float:
            k, j = item
            return (base.start[("B", k, j)] - base.start[("F", k, j)]) * instance.a_o(k)

        excess = peaks(instance, timed)[d] - instance.cap(d)
        count = max(1, int(excess / max(instance.a_o(k) for k, _ in left)))
        chosen += sorted(left, key=lambda x: (-value(x), x[1], x[0]))[:count]
        timed = slot_train(instance, base, chosen)


def pipeoffload(instance: Instance, seed: int = 0) -> Solution:
    """PipeOffload (Wan et al., ICML 2025; ``scheduler/offloading.py`` ``add_offload``, lines
    383-404, on the authors' interleaved / V schedules): take the uncapped base schedule of the
    instance's placement (ZB-V for a V of two chunks, interleaved 1F1B for round-robin chunks,
    ZB-H1 or 1F1B for one chunk), and offload whole chunks: the first n chunks of every device
    (the longest-lived activations), n = 1, 2, ... (``--offload-chunk-num``), every valid item of
    them (:func:`offload_valid`) on the shared slot train (:func:`slot_train`); the first n that
    fits every cap wins.

    Guarantee: the base schedule's timing (copies only fill gaps), or NoSolution. O(v n log n).
    """
    if not instance.allow_offload:
        raise NoSolution("pipeoffload needs allow_offload = true")
    base_name, base = _base(instance)
    if base is None:
        raise NoSolution(f"pipeoffload: the base schedule {base_name} does not apply")
    for n in range(1, instance.chunks + 1):
        items = [
            (k, j)
            for d in range(instance.stages)
            for k in instance.stages_on(d)[:n]
            for j in range(instance.microbatches)
        ]
        timed = slot_train(instance, base, items)
        if not _over_cap(instance, timed):
            return _finish(instance, timed, base=base_name, offloaded_chunks=n)
    raise NoSolution("pipeoffload: offloading every valid item of every chunk does not fit the cap")


def _base_name(instance: Instance) -> str:
    """PipeOffload's base schedule for the instance's placement: ZB-V for a V of two chunks,
    interleaved 1F1B for round-robin chunks, ZB-H1 or 1F1B for one chunk."""
    return (
        "zb_v" if instance.chunks == 2 and instance.placement == "vshape"
        else "interleaved_1f1b" if instance.chunks > 1
        else "zb_h1" if instance.split_backward else "1f1b"
    )


def _base(instance: Instance) -> tuple[str, Timed | None]:
    """The name and timing of the uncapped base schedule (None where its solution does not parse)."""
    base_name = _base_name(instance)
    base, _ = parse(instance, _BASES[base_name](replace(instance, memory_cap_bytes=None)))
    return base_name, base


def admits_offload(instance: Instance, base: Timed) -> bool:
    """Some activation of the timed schedule ``base`` passes the validity rule (:func:`offload_valid`)."""
    return any(
        offload_valid(instance, base, (k, j))
        for k in range(instance.virtual_stages)
        for j in range(instance.microbatches)
    )


def pipeoffload_applies(instance: Instance) -> bool:
    """Offload allowed, a base schedule for the placement, and either some activation of the
    uncapped base schedule that the validity rule admits, or a base schedule that fits the caps as
    it is (then it is the answer, nothing offloaded). Elsewhere nothing can be offloaded and the
    base does not fit."""
    if not instance.allow_offload:
        return False
    base_name = _base_name(instance)
    if (base_name == "zb_v" and not v_placement(instance)
            or base_name == "interleaved_1f1b" and not interleaved_placement(instance)):
        return False
    try:
        _, base = _base(instance)
    except NoSolution:  # ZB-V's construction stops within its own memory limit of p micro-batches
        return False
    return base is not None and (admits_offload(instance, base) or not _over_cap(instance, base))
