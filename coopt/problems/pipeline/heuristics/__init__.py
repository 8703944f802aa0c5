"""Pipeline schedules as explicit timed schedules, one module per family:

* :mod:`.classic`: fixed-order schedules of the literature (GPipe, 1F1B, interleaved 1F1B, ZB-H1);
* :mod:`.list_schedule`: memory-capped list schedules (ZB-H2, Chronos-Pipe);
* :mod:`.guarded`: our arrival-guarded list schedule (Zero Bubble's W fill under a tight cap);
* :mod:`.zero_bubble`: Zero Bubble's automatic scheduler and ZB-V;
* :mod:`.v_memory` and :mod:`.blocks`: the controllable-memory V schedules (V-Half, V-Min) and the
  building-block search ``v_auto``;
* :mod:`.megatron`, :mod:`.offload` and :mod:`.lifespan`: recompute and offload policies (Megatron,
  PipeOffload, Chronos-Recomp, Chronos-Offload);
* :mod:`.evaluator`, :mod:`.warmup` and :mod:`.search`: our local search on a compiled simulator;
* :mod:`.polish`: Model S (CP-SAT) on the keep-only restriction for a fixed budget (``cp_polish``);
* :mod:`.combined`: the schedules by name, the best of several, and the portfolio of the cheap ones;
* :mod:`.timing`: what they share (timing an order, judging it against the caps, structure tests).

Every heuristic builds per-device pass orders (or dispatches passes greedily in time), times them
with the shared event simulator of :mod:`coopt.problems.pipeline.model`, and raises
``NoSolution`` when the schedule does not fit the instance (wrong placement, or a device's
activation memory above its cap). All are deterministic; only ``local_search`` uses the seed.

``HEURISTICS`` registers each with its declared applicability (:class:`coopt.problem.Heuristic`): the
structure it is built for (chunks, placement, split backward, recompute or offload allowed) and,
for the fixed-order schedules whose activation peak is a closed form of the structure, the caps that
hold that peak. Elsewhere the runner declines it without running it.
"""

from __future__ import annotations

from coopt.problem import Heuristic, NoSolution
from coopt.problems.pipeline.heuristics.blocks import building_blocks, v_auto
from coopt.problems.pipeline.heuristics.classic import (
    _one_f_one_b_orders,
    gpipe,
    gpipe_fits,
    interleaved_fits,
    interleaved_one_f_one_b,
    one_f_one_b,
    one_f_one_b_fits,
    one_f_one_b_split,
    one_f_one_b_split_fits,
    zb_h1,
    zb_h1_fits,
)
from coopt.problems.pipeline.heuristics.combined import PORTFOLIO, SCHEDULES, portfolio
from coopt.problems.pipeline.heuristics.evaluator import Evaluator
from coopt.problems.pipeline.heuristics.guarded import guarded_list
from coopt.problems.pipeline.heuristics.lifespan import (
    chronos_offload,
    chronos_offload_applies,
    chronos_recomp,
)
from coopt.problems.pipeline.heuristics.list_schedule import WARMUP_SLACK, _chronos_timed, chronos_pipe, zb_h2
from coopt.problems.pipeline.heuristics.megatron import megatron_block, megatron_full, megatron_selective
from coopt.problems.pipeline.heuristics.offload import (
    offload_valid,
    pipeoffload,
    pipeoffload_applies,
    slot_train,
)
from coopt.problems.pipeline.heuristics.polish import cp_polish, polish_applies
from coopt.problems.pipeline.heuristics.search import SEARCH_STARTS, SEARCH_WARMUP_RANK, local_search
from coopt.problems.pipeline.heuristics.timing import (
    Orders,
    alap,
    fused_waits,
    megatron_placement,
    one_chunk_split,
    v_placement,
)
from coopt.problems.pipeline.heuristics.v_memory import v_half, v_min
from coopt.problems.pipeline.heuristics.zero_bubble import zb_auto, zb_v
from coopt.problems.pipeline.model import Instance

__all__ = [
    "COMBINED", "HEURISTICS", "PORTFOLIO", "SCHEDULES", "SEARCH_STARTS", "SEARCH_WARMUP_RANK", "WARMUP_SLACK",
    "WARM_SKIP",
    "Evaluator", "NoSolution", "Orders", "alap", "building_blocks", "chronos_offload", "chronos_pipe",
    "chronos_recomp", "cp_polish", "fused_waits", "gpipe", "guarded_list", "interleaved_one_f_one_b",
    "local_search", "megatron_block", "megatron_full", "megatron_selective", "offload_valid", "one_f_one_b",
    "one_f_one_b_split", "pipeoffload", "portfolio", "slot_train", "v_auto", "v_half", "v_min", "zb_auto",
    "zb_h1", "zb_h2", "zb_v",
    # the orders of 1F1B and the Chronos-Pipe list schedule, read by the exact side's tests and bench
    "_chronos_timed", "_one_f_one_b_orders",
]


_MEGATRON = "recompute allowed, one chunk per device or chunks placed round-robin with p dividing m"
_V = "two chunks per device in a V, split backward"
_ZB = "one chunk per device and split backward"
_SPLIT = "split backward (W passes of their own), any chunks and placement"
_OFFLOAD = "offload allowed, copies short enough for PipeOffload's validity rule on the uncapped base"


def _recompute(instance: Instance) -> bool:
    return instance.allow_recompute


def _split(instance: Instance) -> bool:
    return instance.split_backward


def _megatron(instance: Instance) -> bool:
    return instance.allow_recompute and megatron_placement(instance)


#: The heuristics that only return the best of others (skipped where every schedule is run anyway).
COMBINED = ("portfolio",)
#: What the exact routes' warm start (:mod:`..warm`) does not run: the combinations, and ``cp_polish``,
#: itself a CP-SAT search on a budget, whose work the exact route's own search does.
WARM_SKIP = (*COMBINED, "cp_polish")

HEURISTICS = {
    "gpipe": Heuristic(gpipe, gpipe_fits, "caps that hold m micro-batches of activations"),
    "1f1b": Heuristic(one_f_one_b, one_f_one_b_fits,
                      "one chunk per device, caps that hold min(p - s, m) micro-batches on stage s"),
    "interleaved_1f1b": Heuristic(interleaved_one_f_one_b, interleaved_fits,
                                  "chunks >= 2 placed round-robin, p dividing m, caps that hold the warm-up"),
    "zb_h1": Heuristic(zb_h1, zb_h1_fits,
                       "one chunk per device, split backward, caps that hold 1F1B's peak and s W passes"),
    "zb_h2": Heuristic(zb_h2, one_chunk_split, _ZB),
    "zb_auto": Heuristic(zb_auto, one_chunk_split, _ZB),
    "1f1b_split": Heuristic(one_f_one_b_split, one_f_one_b_split_fits,
                            "one chunk per device, split backward, caps that hold 1F1B's peak"),
    "zb_v": Heuristic(zb_v, v_placement, _V),
    "v_half": Heuristic(v_half, v_placement, _V),
    "v_min": Heuristic(v_min, v_placement, _V),
    "v_auto": Heuristic(v_auto, v_placement, _V),
    "portfolio": portfolio,
    "local_search": local_search,
    "chronos_pipe": chronos_pipe,
    "chronos_recomp": Heuristic(chronos_recomp, _recompute, "recompute allowed"),
    "chronos_offload": Heuristic(chronos_offload, chronos_offload_applies, _OFFLOAD),
    "megatron_full": Heuristic(megatron_full, _megatron, _MEGATRON),
    "pipeoffload": Heuristic(pipeoffload, pipeoffload_applies,
                             _OFFLOAD + ", or a base schedule that fits the caps as it is"),
    "megatron_selective": Heuristic(megatron_selective, _megatron, _MEGATRON),
    "megatron_block": Heuristic(megatron_block, _megatron, _MEGATRON),
    "guarded_list": Heuristic(guarded_list, _split, _SPLIT),
    "cp_polish": Heuristic(cp_polish, polish_applies,
                           "recompute or offload allowed, one chunk per device, times on a grid"),
}
