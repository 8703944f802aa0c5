"""Fidelity rows of the pipeline problem: ChronosPipe's headline claims and the schedule claims of
Zero Bubble, Controllable Memory and PipeOffload it builds on. Each compute() runs our
schedules; the slowest (the layer counts) takes a few minutes on an idle 2-core machine.

    python benchmarks/fidelity/fidelity.py --only pipeline
"""

from __future__ import annotations

from functools import cache

from fidelity import Claim, Ours
from pipeline import calibrated_hbm, llama, max_layers, stage_layers
from pipeline_schedules import instance as uniform
from pipeline_schedules import measure
from pipeline_weights import max_hierarchical

from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline.model import parse

CHRONOS = "ChronosPipe (arXiv 2503.03182)"
ZB = "Zero Bubble (ICLR 2024)"
CM = "Controllable Memory (NeurIPS 2024)"
PO = "PipeOffload (ICML 2025)"
#: (method, chunks, placement, per-layer recompute): Chronos-Recomp both with whole-item
#: recompute (per virtual stage and micro-batch) and per layer (L = the virtual stage's layers).
CHRONOS_ROWS = (
    ("chronos_pipe", 2, "vshape", False),
    ("chronos_recomp", 2, "vshape", False),
    ("chronos_recomp", 2, "vshape", True),
    ("chronos_offload", 2, "vshape", False),
)


def _status(ours: float, paper: float) -> str:
    return "reproduced" if abs(ours / paper - 1) <= 0.10 else "explained"


@cache
def _layers() -> tuple[float, int, int, int, str]:
    """(device memory GB where 1F1B tops out at 20 layers, 1F1B's, 1F1B + full recompute's and
    the best Chronos schedule's largest layer count there, any throughput, and which Chronos
    schedule reached it first in CHRONOS_ROWS, with Chronos-Recomp's counts at both recompute
    granularities)."""
    hbm = calibrated_hbm()
    base = max_layers("1f1b", 1, "interleaved", hbm)
    recompute = max_layers("megatron_full", 1, "interleaved", hbm)
    found = [(max_layers(name, v, placement, hbm, per_layer=layered), name, v, layered)
             for name, v, placement, layered in CHRONOS_ROWS]
    chronos = max(n for n, *_ in found)
    best = next(name for n, name, _, _ in found if n == chronos)
    (whole, _), (layered, v) = (
        next((n, v) for n, name, v, per in found if name == "chronos_recomp" and per == flag)
        for flag in (False, True)
    )
    how = (f"first reached by {best}; chronos_recomp {whole} with whole-item recompute, {layered} with "
           f"per-layer recompute (L = {stage_layers(layered, v)} layers per virtual stage)")
    return hbm, base, recompute, chronos, how


def chronos_vs_1f1b() -> Ours:
    hbm, base, _, chronos, how = _layers()
    ratio = chronos / base
    offloaded, _ = max_hierarchical("chronos_pipe", 2, "vshape", hbm)
    return Ours(
        f"{ratio:.2f}x ({chronos} / {base} layers at {hbm:g} GB; {how}); {offloaded} layers with the "
        "weights and optimizer state offloaded as a time line",
        _status(ratio, 2.4),
        "the paper's reading (largest trainable layer count, 1F1B at 20) at the device memory where our "
        "1F1B tops out at 20 layers; our Chronos schedules are reconstructions (the paper's ordering "
        "rule is not public), Chronos-Recomp taken with whole-item and with per-layer recompute; sweep in "
        "benchmarks/figures/pipeline.py Part B, hierarchical offload in "
        "benchmarks/figures/pipeline_weights.py",
    )


def chronos_vs_recompute() -> Ours:
    hbm, _, recompute, chronos, how = _layers()
    ratio = chronos / recompute
    return Ours(
        f"{ratio:.2f}x ({chronos} / {recompute} layers at {hbm:g} GB; {how}; 1F1B + full recompute "
        "whole-item)",
        _status(ratio, 1.5),
        "1F1B + full recompute keeps only a 2 s h / t checkpoint per layer, so it fits more layers than "
        "the paper's 32 at the budget where 1F1B fits 20; the ratio depends on the checkpoint size",
    )


def _bubble_and_memory(method: str, chunks: int) -> tuple[float, float]:
    """(span bubble, peak) as fractions of 1F1B's, p = 8, m = 32, unit F = B = W."""
    b0, m0 = measure("1f1b", uniform(8, 32, (1.0, 1.0, 1.0), 1))
    b, mem = measure(method, uniform(8, 32, (1.0, 1.0, 1.0), chunks))
    return max(b / b0, 0.0), mem / m0


def _schedule_claim(method: str, chunks: int, bubble: float, memory: float, why: str) -> Ours:
    got_b, got_m = _bubble_and_memory(method, chunks)
    close = abs(got_b - bubble) <= 0.10 and abs(got_m / memory - 1) <= 0.10
    return Ours(f"bubble {got_b:.2f} B, memory {got_m:.2f}x (p=8, m=32)",
                "reproduced" if close else "explained", why)


def pipeoffload_share() -> Ours:
    """Share of the activations that PipeOffload's validity rule and slot train offload from the
    uncapped ZB-V schedule of the LLaMA instance (48 layers, two chunks in a V), timing unchanged."""
    instance = llama(48, 2, "vshape", hbm=1e6)
    base, _ = parse(instance, schedules.zb_v(instance))
    items = [(k, j) for k in range(instance.virtual_stages) for j in range(instance.microbatches)]
    share = len(schedules.slot_train(instance, base, items).d2h) / len(items)
    return Ours(f"{share:.0%} of activations offloadable at no slowdown (ZB-V, 2 chunks, 48 layers)",
                "reproduced" if share >= 0.5 else "explained",
                "PipeOffload's validity rule and slot train on our LLaMA timing with its copy size "
                "(20 h bytes per token and layer over 15 GB/s)")


CLAIMS = [
    Claim("pipeline", CHRONOS, "trainable model size vs 1F1B at comparable throughput", "2.4x",
          "python benchmarks/figures/pipeline.py (Part B)", chronos_vs_1f1b),
    Claim("pipeline", CHRONOS, "trainable model size vs 1F1B + recomputation", "1.5x",
          "python benchmarks/figures/pipeline.py (Part B)", chronos_vs_recompute),
    Claim("pipeline", ZB, "ZB-H1: a third of 1F1B's bubble at 1F1B's memory", "B/3, 1x",
          "python benchmarks/figures/pipeline_schedules.py",
          lambda: _schedule_claim("zb_h1", 1, 1 / 3, 1.0, "our ZB-H1 matches the authors' schedule")),
    Claim("pipeline", ZB, "ZB-H2: zero bubble at twice 1F1B's memory", "0, 2x",
          "python benchmarks/figures/pipeline_schedules.py",
          lambda: _schedule_claim("zb_h2", 1, 0.0, 2.0, "per-stage span with ALAP span timing")),
    Claim("pipeline", CM, "ZB-V: zero bubble at 1F1B's memory", "0, 1x",
          "python benchmarks/figures/pipeline_schedules.py",
          lambda: _schedule_claim("zb_v", 2, 0.0, 1.0, "the authors' try_v_schedule, rewritten")),
    Claim("pipeline", CM, "V-Half: half the bubble at half the memory", "B/2, 1/2x",
          "python benchmarks/figures/pipeline_schedules.py",
          lambda: _schedule_claim("v_half", 2, 0.5, 0.5,
                                  "memory tends to 1/2 as p grows (0.75 at p=4, 0.56 at p=16): the claim "
                                  "is asymptotic; W keeps half of the activations here (a_W = a)")),
    Claim("pipeline", CM, "V-Min: a third of the memory at 2/3 of the bubble", "2B/3, 1/3x",
          "python benchmarks/figures/pipeline_schedules.py",
          lambda: _schedule_claim("v_min", 2, 2 / 3, 1 / 3,
                                  "memory 0.5x at p <= 16 in our accounting (activations held until W); "
                                  "the paper's 1/3 is the large-p limit of its building block")),
    Claim("pipeline", PO, "interleaved schedules offload at least half of the activations for free",
          ">= 50 %", "python benchmarks/fidelity/fidelity.py --only pipeline", pipeoffload_share),
]
