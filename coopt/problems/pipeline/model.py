"""Pipeline-parallel training schedules under activation-memory limits: data model, event
simulator and checker (shared by the MILP, the time-indexed model and every heuristic).

Sources: ChronosPipe / TPipe (Lin et al., arXiv 2503.03182), Zero Bubble (Qi et al., ICLR 2024,
arXiv 2401.10241) for the B/W split, Megatron interleaving (Narayanan et al., SC 2021), controllable
memory V-shape schedules (Qi et al., NeurIPS 2024, arXiv 2405.15362); notes in
research-pipeline-memory.md.

The model
---------
``p`` devices run a model cut into ``K = p*v`` consecutive *virtual stages* (``v`` chunks per
device; ``v = 1`` is the classic pipeline). Virtual stage ``k`` runs on device ``dev(k)``:
``interleaved`` placement ``dev(k) = k mod p``; ``vshape`` (wave, zig-zag) placement: chunk
``q = k div p`` runs left to right when ``q`` is even and right to left when odd. A device's
per-pass times and memory are given for *all* its layers; each of its ``v`` chunks takes ``1/v``.

Each micro-batch ``j`` needs, on every virtual stage ``k``, a forward ``F(k,j)``, a backward
``B(k,j)`` (gradient w.r.t. the stage input) and, when ``split_backward`` is on, a weight-gradient
pass ``W(k,j)`` (Zero Bubble's split); otherwise B is the full backward. Precedence:
``F(k,j) >= end F(k-1,j) + c``, ``B(K-1,j) >= end F(K-1,j)``, ``B(k,j) >= end B(k+1,j) + c``,
``W(k,j) >= end B(k,j)``, with the lag ``c`` only between different devices. A device runs one
compute pass at a time.

Memory modes per (k, j): *keep*; *recompute* (only the checkpoint ``a_c`` is kept after F, B is
longer by ``T_R`` and re-materialises ``a - a_c`` at its start); *partial recompute* of ``r`` of
the virtual stage's ``L`` layers (``recompute_layers``, per chunk; default 1, which is the
whole-item recompute above): with the fraction ``q = r / L``, F allocates ``a - q (a - a_c)``, B
re-materialises ``q (a - a_c)`` at its start and is longer by ``q T_R`` (layers of one stage are
alike: each holds ``1/L`` of the activations, checkpoint and recompute time); *offload* (a copy engine moves
``a_o`` to the host after F (D2H, duration ``tau_d``) and back before B (H2D, ``tau_u``); one D2H
and one H2D engine per device, full duplex). Memory events (alloc at the start, release at the end
of an event, releases first at equal times):

==========  ===================================  ==============
event       delta                                when
==========  ===================================  ==============
F(k,j)      ``+a`` (keep, offload), ``+a_c``     start
            (recompute), ``+a - q (a - a_c)``
            (partial)
B(k,j)      ``+(a - a_c)`` (recompute),          start
            ``+q (a - a_c)`` (partial)
B(k,j)      ``-(a - a_W)`` (split) / ``-a``      end
W(k,j)      ``-a_W``                             end
D2H(k,j)    ``-a_o``                             end
H2D(k,j)    ``+a_o``                             start
==========  ===================================  ==============

A schedule is feasible when every device's activation level stays within its cap. The objective
is the makespan (iteration time) ``C = max end``, or with ``objective = "stage_span"`` Zero Bubble's
per-stage span ``max_d (last end on d - first start on d)``: the steady-state iteration time when
consecutive iterations overlap (it needs ZB's optimizer post-validation to be realised).

Memory is in bytes inside the code (the files give GB, converted once at load); times are in
seconds. The declared fields are :data:`SCHEMA` (``coopt schema pipeline``).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from coopt.errors import UsageError
from coopt.problem import Solution, Violation
from coopt.schema import Field, Schema

PLACEMENTS = ("interleaved", "vshape")
OBJECTIVES = ("makespan", "stage_span")
KEEP, RECOMPUTE, OFFLOAD = "keep", "recompute", "offload"
#: Prefix of a partial-recompute mode, ``"recompute:r"``: r of the virtual stage's L layers.
PARTIAL = RECOMPUTE + ":"

PassKey = tuple[str, int, int]  # (kind "F" | "B" | "W", virtual stage k, micro-batch j)
Item = tuple[int, int]  # (virtual stage k, micro-batch j)


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Instance:
    """One pipeline: devices, micro-batches, chunking, per-device times (s) and memory (bytes)."""

    stages: int
    microbatches: int
    forward_s: tuple[float, ...]
    backward_s: tuple[float, ...]
    weight_s: tuple[float, ...]
    activation_bytes: tuple[float, ...]
    weight_grad_bytes: tuple[float, ...]
    memory_cap_bytes: tuple[float, ...] | None = None
    split_backward: bool = True
    chunks: int = 1
    placement: str = "interleaved"
    lag_s: float = 0.0
    allow_recompute: bool = False
    recompute_s: tuple[float, ...] = ()
    checkpoint_bytes: tuple[float, ...] = ()
    allow_offload: bool = False
    objective: str = "makespan"
    offload_bytes: tuple[float, ...] = ()
    d2h_s: tuple[float, ...] = ()
    h2d_s: tuple[float, ...] = ()
    recompute_layers: tuple[int, ...] = ()  #: layers L per virtual stage of each device (empty: 1)

    # -- virtual stages --------------------------------------------------------------------
    @property
    def virtual_stages(self) -> int:
        return self.stages * self.chunks

    @cached_property
    def _devices(self) -> tuple[int, ...]:
        out = []
        for k in range(self.virtual_stages):
            q, r = divmod(k, self.stages)
            out.append(self.stages - 1 - r if self.placement == "vshape" and q % 2 == 1 else r)
        return tuple(out)

    def device(self, k: int) -> int:
        """Device that runs virtual stage ``k``."""
        return self._devices[k]

    def stages_on(self, d: int) -> list[int]:
        return [k for k in range(self.virtual_stages) if self.device(k) == d]

    def lag(self, k_from: int, k_to: int) -> float:
        return self.lag_s if self.device(k_from) != self.device(k_to) else 0.0

    # -- per-virtual-stage quantities (a device's value divided by its chunks) ----------------
    def _per(self, values: tuple[float, ...], k: int) -> float:
        return values[self.device(k)] / self.chunks if values else 0.0

    def t_f(self, k: int) -> float:
        return self._per(self.forward_s, k)

    def t_b(self, k: int) -> float:
        return self._per(self.backward_s, k)

    def t_w(self, k: int) -> float:
        return self._per(self.weight_s, k)

    def t_r(self, k: int) -> float:
        return self._per(self.recompute_s, k)

    def tau_d(self, k: int) -> float:
        return self._per(self.d2h_s, k)

    def tau_u(self, k: int) -> float:
        return self._per(self.h2d_s, k)

    def a(self, k: int) -> float:
        return self._per(self.activation_bytes, k)

    def a_w(self, k: int) -> float:
        return self._per(self.weight_grad_bytes, k) if self.split_backward else 0.0

    def a_c(self, k: int) -> float:
        return self._per(self.checkpoint_bytes, k)

    def a_o(self, k: int) -> float:
        return self._per(self.offload_bytes, k)

    def layers(self, k: int) -> int:
        """Layers L of virtual stage ``k``: the granularity of recompute (1: the whole item)."""
        return self.recompute_layers[self.device(k)] if self.recompute_layers else 1

    @property
    def partial_recompute(self) -> bool:
        """Items may recompute some of their layers (recompute allowed, some L > 1)."""
        return self.allow_recompute and any(x > 1 for x in self.recompute_layers)

    def recomputed(self, k: int, mode: str) -> int:
        """How many of virtual stage ``k``'s layers an item in ``mode`` recomputes (0..L)."""
        if mode == RECOMPUTE:
            return self.layers(k)
        return int(mode[len(PARTIAL):]) if mode.startswith(PARTIAL) else 0

    def recompute_mode(self, k: int, layers: int) -> str:
        """The mode that recomputes ``layers`` of virtual stage ``k``'s layers: KEEP for 0,
        RECOMPUTE for all L, ``"recompute:r"`` in between (one spelling per choice)."""
        if layers <= 0:
            return KEEP
        return RECOMPUTE if layers >= self.layers(k) else f"{PARTIAL}{layers}"

    def resident(self, k: int, mode: str) -> tuple[float, float]:
        """(bytes F allocates, bytes B re-materialises at its start) of an item in ``mode``:
        ``(a, 0)`` kept or offloaded, ``(a_c, a - a_c)`` recomputed, and with ``q = r / L``
        ``(a - q (a - a_c), q (a - a_c))`` partially recomputed."""
        if mode in (KEEP, OFFLOAD):
            return self.a(k), 0.0
        a, a_c = self.a(k), self.a_c(k)
        if mode == RECOMPUTE:
            return a_c, a - a_c
        saved = self.recomputed(k, mode) / self.layers(k) * (a - a_c)
        return a - saved, saved

    def cap(self, d: int) -> float:
        return float("inf") if self.memory_cap_bytes is None else self.memory_cap_bytes[d]

    def cap_room(self, d: int) -> float:
        """The most device ``d`` may hold as the checker judges it: the cap and its tolerance."""
        cap = self.cap(d)
        return cap + 1e-6 * max(1.0, cap)

    @property
    def kinds(self) -> tuple[str, ...]:
        return ("F", "B", "W") if self.split_backward else ("F", "B")

    def passes(self) -> list[PassKey]:
        """Every compute pass, sorted (kind, k, j)."""
        return [
            (x, k, j)
            for x in self.kinds
            for k in range(self.virtual_stages)
            for j in range(self.microbatches)
        ]

    def duration(self, key: PassKey, mode: str = KEEP) -> float:
        kind, k, _ = key
        if kind == "F":
            return self.t_f(k)
        if kind == "B":
            if mode in (KEEP, OFFLOAD):
                return self.t_b(k)
            if mode == RECOMPUTE:
                return self.t_b(k) + self.t_r(k)
            return self.t_b(k) + self.t_r(k) * self.recomputed(k, mode) / self.layers(k)
        return self.t_w(k)

    def predecessors(self, key: PassKey) -> list[tuple[PassKey, float]]:
        """Data-flow predecessors of a pass, each with the lag after its end."""
        kind, k, j = key
        last = self.virtual_stages - 1
        if kind == "F":
            return [(("F", k - 1, j), self.lag(k - 1, k))] if k > 0 else []
        if kind == "B":
            return [(("F", k, j), 0.0)] if k == last else [(("B", k + 1, j), self.lag(k + 1, k))]
        return [(("B", k, j), 0.0)]

    @cached_property
    def time_scale(self) -> float:
        """Sum of all keep-mode pass durations: a schedule-independent time scale."""
        return sum(self.duration(x) for x in self.passes())


def serial_bound(instance: Instance) -> float:
    """Every pass (recompute-long), lag and copy one after another: no tight chain is longer."""
    mode = RECOMPUTE if instance.allow_recompute else KEEP
    total = sum(instance.duration(x, mode) for x in instance.passes())
    total += 2 * instance.microbatches * instance.virtual_stages * instance.lag_s
    copies = sum(instance.tau_d(k) + instance.tau_u(k) for k in range(instance.virtual_stages))
    return total + copies * instance.microbatches


# --------------------------------------------------------------------------------------------
# TOML in and out
# --------------------------------------------------------------------------------------------
GB = 1e9  #: bytes per GB: files give memory in GB (``_gb``), the code holds bytes (SI)
#: The generator's largest size: p <= 64 stages, the loader's limit.
MAX_SIZE = 64


def _per_device(name: str, doc: str, unit: str, *, si: float = 1.0, **kw: Any) -> Field:
    return Field(name, "floats", doc, unit=unit, si=si, length="stages", **kw)


SCHEMA = Schema(
    [
        Field("stages", "int", "pipeline devices p", min=1, max=64, example=3),
        Field("microbatches", "int", "micro-batches m per iteration", min=1, max=512, example=4),
        Field("chunks", "int", "model chunks (virtual stages) per device v", default=1, min=1, max=16),
        Field("placement", "str", "virtual stage k on device k mod p (interleaved) or in a V / wave "
              "(vshape)", default="interleaved", choices=PLACEMENTS),
        Field("split_backward", "bool", "B (input gradient) and W (weight gradient) are separate passes "
              "(Zero Bubble); false: B is the full backward", default=True),
        _per_device("forward_s", "forward time of one micro-batch over all of a device's layers", "s",
                    positive=True, max=1e6),
        _per_device("backward_s", "input-gradient backward time (the full backward when not split)", "s",
                    positive=True, max=1e6),
        _per_device("weight_s", "weight-gradient time (0 when split_backward is false)", "s",
                    default=0.0, min=0.0, max=1e6, required_if="split_backward", example=[1.0, 1.0, 1.0]),
        _per_device("activation_gb", "activations one micro-batch keeps from F until its backward", "GB",
                    si=GB, positive=True, max=1e6),
        _per_device("weight_grad_gb", "share of the activations kept from B until W", "GB", si=GB,
                    default=0.0, min=0.0, max=1e6),
        _per_device("memory_cap_gb", "activation-memory cap of each device (absent: none)", "GB", si=GB,
                    default=None, positive=True, max=1e6),
        Field("lag_s", "float", "point-to-point lag between devices", unit="s", default=0.0, min=0.0,
              max=1e6),
        Field("allow_recompute", "bool", "an item may keep only a checkpoint and recompute in B",
              default=False),
        _per_device("recompute_s", "extra backward time of a recomputed item", "s", positive=True, max=1e6,
                    only_if="allow_recompute"),
        _per_device("checkpoint_gb", "memory a recomputed item keeps from F to B", "GB", si=GB, min=0.0,
                    max=1e6, only_if="allow_recompute"),
        Field("recompute_layers", "ints", "layers L of each virtual stage (chunk) of the device: an item "
              "may recompute r of them, 0..L, each saving 1/L of activation_gb - checkpoint_gb for 1/L of "
              "recompute_s (1: whole items only)", default=1, min=1, max=1024, length="stages",
              only_if="allow_recompute"),
        Field("allow_offload", "bool", "an item's activations may go to host memory between F and B",
              default=False),
        _per_device("offload_gb", "bytes an offloaded item moves each way", "GB", si=GB, positive=True,
                    max=1e6, only_if="allow_offload"),
        _per_device("d2h_s", "device-to-host copy time of one offloaded item", "s", positive=True, max=1e6,
                    only_if="allow_offload"),
        _per_device("h2d_s", "host-to-device copy time of one offloaded item", "s", positive=True, max=1e6,
                    only_if="allow_offload"),
        Field("objective", "str", "makespan (iteration time) or stage_span (largest per-device busy "
              "window, Zero Bubble's steady state)", default="makespan", choices=OBJECTIVES),
    ]
)


def load(fields: Any) -> Instance:
    v = SCHEMA.read(fields)
    split = v.split_backward
    t_w = v.weight_s
    if split and any(x <= 0 for x in t_w):
        fields.fail("weight_s", "expected every entry > 0 when split_backward is true")
    if not split and (any(t_w) or any(v.weight_grad_gb)):
        fields.fail("split_backward", "weight_s and weight_grad_gb must be 0 when split_backward is false")
    a = v.activation_gb
    for name in ("weight_grad_gb", "checkpoint_gb", "offload_gb"):
        values = v[name] or ()
        for d in range(len(values)):
            if values[d] > a[d]:
                fields.fail(name, f"expected <= activation_gb on device {d}, got {values[d] / GB:g} > "
                            f"{a[d] / GB:g}")
    return Instance(
        stages=v.stages,
        microbatches=v.microbatches,
        chunks=v.chunks,
        placement=v.placement,
        split_backward=split,
        forward_s=v.forward_s,
        backward_s=v.backward_s,
        weight_s=t_w,
        activation_bytes=a,
        weight_grad_bytes=v.weight_grad_gb,
        memory_cap_bytes=v.memory_cap_gb,
        lag_s=v.lag_s,
        allow_recompute=v.allow_recompute,
        recompute_s=v.recompute_s or (),
        checkpoint_bytes=v.checkpoint_gb or (),
        recompute_layers=v.recompute_layers if v.recompute_layers and any(x > 1 for x in v.recompute_layers)
        else (),
        allow_offload=v.allow_offload,
        objective=v.objective,
        offload_bytes=v.offload_gb or (),
        d2h_s=v.d2h_s or (),
        h2d_s=v.h2d_s or (),
    )


def _gb(values: tuple[float, ...]) -> list[float]:
    return [x / GB for x in values]


def dump(instance: Instance) -> dict[str, Any]:
    out: dict[str, Any] = {
        "stages": instance.stages,
        "microbatches": instance.microbatches,
        "chunks": instance.chunks,
        "placement": instance.placement,
        "split_backward": instance.split_backward,
        "forward_s": list(instance.forward_s),
        "backward_s": list(instance.backward_s),
        "weight_s": list(instance.weight_s),
        "activation_gb": _gb(instance.activation_bytes),
        "weight_grad_gb": _gb(instance.weight_grad_bytes),
        "lag_s": instance.lag_s,
        "allow_recompute": instance.allow_recompute,
        "allow_offload": instance.allow_offload,
        "objective": instance.objective,
    }
    if instance.memory_cap_bytes is not None:
        out["memory_cap_gb"] = _gb(instance.memory_cap_bytes)
    if instance.allow_recompute:
        out["recompute_s"] = list(instance.recompute_s)
        out["checkpoint_gb"] = _gb(instance.checkpoint_bytes)
        if instance.recompute_layers:
            out["recompute_layers"] = list(instance.recompute_layers)
    if instance.allow_offload:
        out["offload_gb"] = _gb(instance.offload_bytes)
        out["d2h_s"] = list(instance.d2h_s)
        out["h2d_s"] = list(instance.h2d_s)
    return out


def generate(seed: int, size: int) -> Instance:
    """``size`` = p devices (1..64) with m = 2p micro-batches, integer F/B/W times in 1..3, split
    backward, keep-only, a memory cap between one micro-batch's activations and 1F1B's stage-0
    peak."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"pipeline's generator takes --size 1..{MAX_SIZE} (p stages, the loader's limit), "
                         f"got {size}")
    rng = random.Random(seed)
    p = int(size)
    m = 2 * p
    t_f = tuple(float(rng.randint(1, 3)) for _ in range(p))
    t_b = tuple(float(rng.randint(1, 3)) for _ in range(p))
    t_w = tuple(float(rng.randint(1, 2)) for _ in range(p))
    a = tuple(float(rng.choice((2, 4))) * GB for _ in range(p))
    a_w = tuple(x / 2 for x in a)
    cap = tuple(x * rng.randint(1, p) for x in a)
    return Instance(
        stages=p,
        microbatches=m,
        forward_s=t_f,
        backward_s=t_b,
        weight_s=t_w,
        activation_bytes=a,
        weight_grad_bytes=a_w,
        memory_cap_bytes=cap,
    )


#: The memory modes :func:`generate_modes` adds to the generator's instances.
MODE_FAMILIES = ("recompute", "offload", "both")


def generate_modes(seed: int, size: int, family: str) -> Instance:
    """The generator's instance ``generate(seed, size)`` with ``family``'s modes allowed (the
    recompute / offload families of the exact benchmark): recompute re-runs the forward
    (``T_R = T_F``) and keeps a checkpoint of a quarter of ``a``; offload copies all of ``a``, each
    way in 1..3 s (integer, drawn per device from ``seed``); ``both`` allows the two."""
    if family not in MODE_FAMILIES:
        raise UsageError(f"pipeline mode family: expected one of {', '.join(MODE_FAMILIES)}, got {family!r}")
    base = generate(seed, size)
    rng = random.Random(f"{seed}/{size}/modes")
    tau = tuple(float(rng.randint(1, 3)) for _ in range(base.stages))
    fields: dict[str, Any] = {}
    if family in ("recompute", "both"):
        fields.update(allow_recompute=True, recompute_s=base.forward_s,
                      checkpoint_bytes=tuple(x / 4 for x in base.activation_bytes))
    if family in ("offload", "both"):
        fields.update(allow_offload=True, offload_bytes=base.activation_bytes, d2h_s=tau, h2d_s=tau)
    return replace(base, **fields)


# --------------------------------------------------------------------------------------------
# Event simulator: per-device orders -> timed schedule (ASAP), and timed schedule -> memory
# --------------------------------------------------------------------------------------------
@dataclass
class Timed:
    """A timed schedule: pass starts, modes, and copy starts of offloaded items."""

    start: dict[PassKey, float]
    modes: dict[Item, str]
    d2h: dict[Item, float]
    h2d: dict[Item, float]

    def makespan(self, instance: Instance) -> float:
        return max(
            (t + instance.duration(x, self.modes.get(x[1:], KEEP)) for x, t in self.start.items()),
            default=0.0,
        )

    def stage_span(self, instance: Instance) -> float:
        """Largest per-device busy window: last end minus first start on the device."""
        first: dict[int, float] = {}
        last: dict[int, float] = {}
        for x, t in self.start.items():
            d = instance.device(x[1])
            e = t + instance.duration(x, self.modes.get(x[1:], KEEP))
            first[d] = min(first.get(d, t), t)
            last[d] = max(last.get(d, e), e)
        return max((last[d] - first[d] for d in first), default=0.0)

    def value(self, instance: Instance) -> float:
        """The instance's objective: makespan, or the largest per-stage span."""
        return self.stage_span(instance) if instance.objective == "stage_span" else self.makespan(instance)


class Deadlock(Exception):
    """The per-device orders cannot be executed (a pass waits for one that is queued behind it)."""


def simulate(
    instance: Instance,
    orders: Mapping[int, list[PassKey]],
    modes: Mapping[Item, str] | None = None,
    waits: Mapping[PassKey, list[tuple[PassKey, float]]] | None = None,
) -> Timed:
    """Earliest start of every pass given each device's order (list scheduling). ``waits`` adds
    edges beyond the data flow (pass -> [(pass it waits for, lag after its end)]), e.g. a runtime
    that sends the input gradient only after the fused B + W.

    Offloaded items: D2H starts as soon as F ends and the D2H engine is free (engines serve copies
    in the device's F order); H2D starts when the device starts the pass just before B (one-pass
    prefetch), but not before the D2H ended or the H2D engine is free; B waits for the H2D.

    A device runs down its order until its next pass waits for a pass not yet timed, and is woken
    when that pass is; a pass's times depend on its device's previous pass and its predecessors
    only, so the order in which devices advance does not change them. O(n) for n passes; raises
    :class:`Deadlock` when passes remain and no device can advance.
    """
    modes = dict(modes or {})
    start: dict[PassKey, float] = {}
    end: dict[PassKey, float] = {}
    d2h: dict[Item, float] = {}
    h2d: dict[Item, float] = {}
    free = dict.fromkeys(orders, 0.0)
    d2h_free = dict.fromkeys(orders, 0.0)
    h2d_free = dict.fromkeys(orders, 0.0)
    position = dict.fromkeys(orders, 0)
    remaining = sum(len(o) for o in orders.values())
    waiting: dict[PassKey, list[int]] = {}  # untimed pass -> the devices whose next pass needs it
    awake = deque(orders)
    while awake:
        d = awake.popleft()
        order = orders[d]
        while position[d] < len(order):
            key = order[position[d]]
            preds = instance.predecessors(key) + (waits.get(key, []) if waits else [])
            missing = next((q for q, _ in preds if q not in end), None)
            if missing is not None:
                waiting.setdefault(missing, []).append(d)
                break
            kind, k, j = key
            mode = modes.get((k, j), KEEP)
            t = max([free[d]] + [end[q] + lag for q, lag in preds])
            if kind == "B" and mode == OFFLOAD:
                prev_start = start[order[position[d] - 1]] if position[d] > 0 else 0.0
                u = max(prev_start, d2h[(k, j)] + instance.tau_d(k), h2d_free[d])
                h2d[(k, j)] = u
                h2d_free[d] = u + instance.tau_u(k)
                t = max(t, h2d_free[d])
            start[key] = t
            end[key] = t + instance.duration(key, mode)
            free[d] = end[key]
            if kind == "F" and mode == OFFLOAD:
                d2h[(k, j)] = max(end[key], d2h_free[d])
                d2h_free[d] = d2h[(k, j)] + instance.tau_d(k)
            position[d] += 1
            remaining -= 1
            awake.extend(waiting.pop(key, ()))
    if remaining:
        raise Deadlock("the per-device orders deadlock")
    return Timed(start=start, modes=modes, d2h=d2h, h2d=h2d)


def memory_events(instance: Instance, timed: Timed) -> dict[int, list[tuple[float, float]]]:
    """Per device, the (time, delta bytes) events of a timed schedule (no ordering applied)."""
    events: dict[int, list[tuple[float, float]]] = {d: [] for d in range(instance.stages)}
    for key, t in timed.start.items():
        kind, k, j = key
        mode = timed.modes.get((k, j), KEEP)
        d = instance.device(k)
        a, a_w = instance.a(k), instance.a_w(k)
        end = t + instance.duration(key, mode)
        if kind == "F":
            events[d].append((t, instance.resident(k, mode)[0]))
        elif kind == "B":
            if mode != KEEP and mode != OFFLOAD:
                events[d].append((t, instance.resident(k, mode)[1]))
            events[d].append((end, -(a - a_w)))
        else:
            events[d].append((end, -a_w))
    for (k, _j), t in timed.d2h.items():
        events[instance.device(k)].append((t + instance.tau_d(k), -instance.a_o(k)))
    for (k, _j), t in timed.h2d.items():
        events[instance.device(k)].append((t, instance.a_o(k)))
    return events


def memory_profile(events: Iterable[tuple[float, float]], tol: float = 0.0) -> list[tuple[float, float]]:
    """Step profile [(time, level after the events at that time)]: events closer than ``tol`` are
    one instant, releases applied before allocations (the suite's tie rule)."""
    ordered = sorted(events)
    profile: list[tuple[float, float]] = []
    level = 0.0
    i = 0
    while i < len(ordered):
        t0 = ordered[i][0]
        group = []
        while i < len(ordered) and ordered[i][0] <= t0 + tol:
            group.append(ordered[i][1])
            i += 1
        level += sum(x for x in group if x < 0)
        level += sum(x for x in group if x > 0)
        profile.append((t0, level))
    return profile


def peaks(instance: Instance, timed: Timed,
          extra: Mapping[int, list[tuple[float, float]]] | None = None) -> list[float]:
    """Peak activation memory (bytes) of every device, with ``extra`` (time, delta) events per
    device counted beside the schedule's own (memory the model keeps static, say)."""
    tol = 1e-9 * max(1.0, instance.time_scale)
    extra = extra or {}
    return [
        max((lvl for _, lvl in memory_profile(ev + extra.get(d, []), tol)), default=0.0)
        for d, ev in sorted(memory_events(instance, timed).items())
    ]


def to_solution(instance: Instance, timed: Timed, **extra: Any) -> Solution:
    """The JSON form of a timed schedule (objective = its makespan)."""
    passes = [
        {"kind": kind, "stage": k, "microbatch": j, "start": timed.start[(kind, k, j)]}
        for (kind, k, j) in sorted(timed.start, key=lambda x: (timed.start[x], x))
    ]
    recompute = sorted([k, j] for (k, j), mode in timed.modes.items() if mode == RECOMPUTE)
    partial = sorted(
        [k, j, instance.recomputed(k, mode)]
        for (k, j), mode in timed.modes.items()
        if mode.startswith(PARTIAL)
    )
    offload = [
        {"stage": k, "microbatch": j, "d2h_start": timed.d2h[(k, j)], "h2d_start": timed.h2d[(k, j)]}
        for (k, j) in sorted(timed.d2h)
    ]
    return {
        "objective": timed.value(instance),
        "passes": passes,
        "recompute": recompute,
        "recompute_layers": partial,
        "offload": offload,
        **extra,
    }


# --------------------------------------------------------------------------------------------
# Checker
# --------------------------------------------------------------------------------------------
def _tolerance(instance: Instance) -> float:
    return 1e-6 * max(1.0, instance.time_scale)


def _index(value: Any, upper: int) -> int | None:
    """``value`` if it is an int (not a bool) in 0..upper-1, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < upper else None


def _number(value: Any) -> float | None:
    """A finite number (inf and NaN are malformed)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _listed(solution: Mapping, key: str, bad: list[Violation], required: bool = False) -> list:
    """``solution[key]`` (default empty unless ``required``: then a missing key is a format
    violation, so that a solution cannot drop its modes); a non-list is a format violation and
    reads as empty."""
    if required and key not in solution:
        bad.append(Violation("format", f"missing list '{key}' ([] when nothing is recomputed)"))
        return []
    value = solution.get(key, [])
    if not isinstance(value, list):
        bad.append(Violation("format", f"'{key}' is not a list"))
        return []
    return value


def parse(instance: Instance, solution: Any) -> tuple[Timed | None, list[Violation]]:
    """Read a solution dict into a Timed schedule; every malformed part is a violation."""
    if not isinstance(solution, Mapping):
        return None, [Violation("format", "solution is not a table")]
    passes = solution.get("passes")
    if not isinstance(passes, list):
        return None, [Violation("format", "missing list 'passes'")]
    bad: list[Violation] = []
    start = _parse_passes(instance, passes, bad)
    modes: dict[Item, str] = {}
    _parse_recompute(instance, _listed(solution, "recompute", bad, required=True), modes, bad)
    _parse_layers(instance, _listed(solution, "recompute_layers", bad), modes, bad)
    d2h, h2d = _parse_offload(instance, _listed(solution, "offload", bad), modes, bad)
    if bad and any(v.constraint in ("format", "completeness") for v in bad):
        return None, bad
    return Timed(start=start, modes=modes, d2h=d2h, h2d=h2d), bad


def _parse_passes(instance: Instance, passes: list, bad: list[Violation]) -> dict[PassKey, float]:
    """The start of every listed pass; malformed, repeated, negative and missing passes are
    violations."""
    K, m = instance.virtual_stages, instance.microbatches
    start: dict[PassKey, float] = {}
    for n, item in enumerate(passes):
        if not isinstance(item, Mapping):
            bad.append(Violation("format", f"passes[{n}] is not a table"))
            continue
        kind, k, j, t = (
            item.get("kind"),
            _index(item.get("stage"), K),
            _index(item.get("microbatch"), m),
            _number(item.get("start")),
        )
        if kind not in instance.kinds or k is None or j is None or t is None:
            bad.append(Violation("format", f"passes[{n}] = {dict(item)} is not a valid pass"))
            continue
        if (kind, k, j) in start:
            bad.append(Violation("completeness", f"pass {kind}({k},{j}) appears twice"))
        if t < -_tolerance(instance):
            bad.append(Violation("time", f"pass {kind}({k},{j}) starts at {t} < 0"))
        start[(kind, k, j)] = t
    for key in instance.passes():
        if key not in start:
            bad.append(Violation("completeness", f"pass {key[0]}({key[1]},{key[2]}) is missing"))
    return start


def _parse_recompute(instance: Instance, recompute: list, modes: dict[Item, str],
                     bad: list[Violation]) -> None:
    """Whole-item recompute entries ``[stage, microbatch]`` into ``modes``."""
    K, m = instance.virtual_stages, instance.microbatches
    for n, item in enumerate(recompute):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or _index(item[0], K) is None
            or _index(item[1], m) is None
        ):
            bad.append(Violation("format", f"recompute[{n}] = {item!r} is not [stage, microbatch]"))
            continue
        if not instance.allow_recompute:
            bad.append(Violation("mode", f"recompute of {tuple(item)} but the instance does not allow it"))
        modes[(item[0], item[1])] = RECOMPUTE


def _parse_layers(instance: Instance, partial: list, modes: dict[Item, str], bad: list[Violation]) -> None:
    """Per-layer recompute entries ``[stage, microbatch, layers]`` into ``modes``."""
    K, m = instance.virtual_stages, instance.microbatches
    for n, item in enumerate(partial):
        if (
            not isinstance(item, list)
            or len(item) != 3
            or _index(item[0], K) is None
            or _index(item[1], m) is None
            or _number(item[2]) is None
        ):
            bad.append(Violation(
                "format", f"recompute_layers[{n}] = {item!r} is not [stage, microbatch, layers]"))
            continue
        k, j, r = item
        if (k, j) in modes:
            bad.append(Violation("mode", f"{(k, j)} is listed twice in 'recompute' / 'recompute_layers'"))
            continue
        L = instance.layers(k)
        if not isinstance(r, int) or not 0 <= r <= L:
            bad.append(Violation("mode", f"recompute_layers[{n}]: {r!r} layers of {(k, j)}, expected an "
                                 f"integer in 0..{L}"))
            continue
        if r and not instance.allow_recompute:
            bad.append(Violation(
                "mode", f"recompute of {r} layers of {(k, j)} but the instance does not allow it"))
        modes[(k, j)] = instance.recompute_mode(k, r)


def _parse_offload(instance: Instance, offload: list, modes: dict[Item, str], bad: list[Violation]
                   ) -> tuple[dict[Item, float], dict[Item, float]]:
    """Offload copy pairs into ``modes``; returns their D2H and H2D starts."""
    K, m = instance.virtual_stages, instance.microbatches
    d2h: dict[Item, float] = {}
    h2d: dict[Item, float] = {}
    for n, item in enumerate(offload):
        if not isinstance(item, Mapping):
            bad.append(Violation("format", f"offload[{n}] is not a table"))
            continue
        k, j = _index(item.get("stage"), K), _index(item.get("microbatch"), m)
        td, tu = _number(item.get("d2h_start")), _number(item.get("h2d_start"))
        if k is None or j is None or td is None or tu is None:
            bad.append(Violation("format", f"offload[{n}] = {dict(item)} is not a valid copy pair"))
            continue
        if not instance.allow_offload:
            bad.append(Violation("mode", f"offload of {(k, j)} but the instance does not allow it"))
        if modes.get((k, j), KEEP) != KEEP:
            bad.append(Violation("mode", f"{(k, j)} is both recomputed and offloaded"))
        modes[(k, j)] = OFFLOAD
        d2h[(k, j)], h2d[(k, j)] = td, tu
    return d2h, h2d


def check(instance: Instance, solution: Solution) -> list[Violation]:
    """Completeness, modes, precedence, exclusivity (compute and copy engines), memory caps."""
    timed, bad = parse(instance, solution)
    if timed is None:
        return bad
    tol = _tolerance(instance)
    start, modes = timed.start, timed.modes

    def end(key: PassKey) -> float:
        return start[key] + instance.duration(key, modes.get(key[1:], KEEP))

    for key in instance.passes():
        for pred, lag in instance.predecessors(key):
            if start[key] < end(pred) + lag - tol:
                bad.append(
                    Violation(
                        "precedence",
                        f"{key} starts at {start[key]:g} before {pred} ends + lag ({end(pred) + lag:g})",
                    )
                )
    for (k, j), td in timed.d2h.items():
        tu = timed.h2d[(k, j)]
        if td < end(("F", k, j)) - tol:
            bad.append(Violation("offload", f"D2H of {(k, j)} starts at {td:g} before F ends"))
        if tu < td + instance.tau_d(k) - tol:
            bad.append(Violation("offload", f"H2D of {(k, j)} starts at {tu:g} before its D2H ends"))
        if start[("B", k, j)] < tu + instance.tau_u(k) - tol:
            bad.append(
                Violation("offload", f"B of {(k, j)} starts at {start[('B', k, j)]:g} before its H2D ends")
            )
    for d in range(instance.stages):
        on = [k for k in instance.stages_on(d)]
        lanes = {
            "compute": sorted((start[x], end(x), x) for x in start if x[1] in on),
            "D2H engine": sorted(
                (t, t + instance.tau_d(k), (k, j)) for (k, j), t in timed.d2h.items() if k in on
            ),
            "H2D engine": sorted(
                (t, t + instance.tau_u(k), (k, j)) for (k, j), t in timed.h2d.items() if k in on
            ),
        }
        for lane, spans in lanes.items():
            for (_, e0, x0), (s1, _, x1) in zip(spans, spans[1:], strict=False):
                if s1 < e0 - tol:
                    bad.append(
                        Violation(
                            "exclusivity",
                            f"device {d} {lane}: {x1} starts at {s1:g} while {x0} runs until {e0:g}",
                        )
                    )
    events = memory_events(instance, timed)
    for d in range(instance.stages):
        profile = memory_profile(events[d], tol)
        cap, room = instance.cap(d), instance.cap_room(d)
        for t, level in profile:
            if level > room:
                bad.append(Violation(
                    "memory", f"device {d} holds {level / GB:g} GB at t={t:g} > cap {cap / GB:g} GB"))
                break
        if profile and abs(profile[-1][1]) > 1e-6 * max(1.0, sum(instance.activation_bytes)):
            bad.append(Violation("memory", f"device {d} ends holding {profile[-1][1] / GB:g} GB"))
    return bad


def objective(instance: Instance, solution: Solution) -> float:
    """Makespan (or largest per-stage span) recomputed from the pass starts and modes."""
    timed, _ = parse(instance, solution)
    if timed is None:
        raise ValueError("malformed schedule")
    return timed.value(instance)
